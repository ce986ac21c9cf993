"""ckpt as a library: open a checkpoint store and get the records the CLI prints.

    >>> import ckpt
    >>> with ckpt.open("chat.sqlite") as store:               # doctest: +SKIP
    ...     waiting = store.threads(status="interrupted")

Every method returns the typed records of ckpt.records (the same dicts `--json` prints),
raises only ckpt.errors exceptions, never prints and never writes to the store. The CLI
is built on this module, so the two never disagree. See docs/api.md.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from ckpt.errors import BadOption, EncryptedError, NotFound
from ckpt.model import Checkpoint, CheckpointKey, DumpQuery
from ckpt.records import (
    CheckpointRecord,
    CheckRecord,
    HistoryNodeRecord,
    PatchOperation,
    StatsRecord,
    ThreadRecord,
    TypesRecord,
    VersionMatrix,
    checkpoint_record,
    thread_record,
)
from ckpt.stores.base import Store
from ckpt.tasks import Task
from ckpt.vocabulary import Status, ThreadSort

if TYPE_CHECKING:
    from ckpt.census import RawRow


Hidden = Literal["raise", "keep"]


class CheckpointStore:
    """A checkpoint store, read-only, as ckpt's records. Get one with `ckpt.open`.

    Values that stay encrypted (no key, or a wrong one) are an EncryptedError once what
    can be read is read: raised, with that in its `partial` (`hidden="raise"`, the
    default), or kept in `hidden` while the records come back with those values marked
    `encrypted` (`hidden="keep"`: the CLI prints, then exits 6 with the first)."""

    def __init__(self, store: Store, *, hidden: Hidden = "raise") -> None:
        self._store = store
        self._keep_hidden = hidden == "keep"
        self.hidden: list[EncryptedError] = []

    def _hidden(self, error: EncryptedError | None, partial: Any = None) -> None:
        """Act on what encryption hid from a result (ckpt.encryption says what it is)."""
        if error is None:
            return
        if self._keep_hidden:
            self.hidden.append(error)
            return
        error.partial = partial
        raise error

    @property
    def _has_key(self) -> bool:
        return self._store.aes_key is not None

    # -- what it is ------------------------------------------------------------------------
    @property
    def location(self) -> str:
        """Where the store is (a path, or a Postgres URL without its password)."""
        return self._store.location

    @property
    def kind(self) -> str:
        """ "sqlite", "postgres" or "pickle"."""
        return self._store.kind

    @property
    def notices(self) -> list[str]:
        """What the CLI would say once on stderr (a layout without values, encrypted
        threads without a key ...); read and cleared by the caller."""
        return self._store.notices

    @property
    def refused(self) -> list[str]:
        """Globals a pickle file named that the restricted unpickler refused (the values
        are `refused` records); the CLI exits 9 when there are any."""
        return self._store.refused

    @property
    def backend(self) -> Store:
        """The store's kind underneath (a ckpt.stores.base.Store), for ckpt's own library
        modules (maintenance): the commands use this class's methods only."""
        return self._store

    def thread_exists(self, thread_id: str) -> bool:
        """Whether the store holds the thread (a key lookup, not a listing)."""
        return self._store.thread_exists(thread_id)

    # -- records ---------------------------------------------------------------------------
    def threads(
        self,
        *,
        status: Status | None = None,
        where: dict[str, str] | None = None,
        sort: ThreadSort = "updated",
        limit: int | None = None,
        sizes: bool = False,
    ) -> list[ThreadRecord]:
        """Every thread (`ckpt threads --json`), filtered on its latest metadata and its
        status, then sorted (`updated`: newest first) and cut to `limit`. `size` is None
        unless `sizes` (or `sort="size"`): measuring reads every row of the store.

        Raises EncryptedError when a key was given and does not decrypt the store.
        """
        return list(
            self.iter_threads(status=status, where=where, sort=sort, limit=limit, sizes=sizes)
        )

    def iter_threads(
        self,
        *,
        status: Status | None = None,
        where: dict[str, str] | None = None,
        sort: ThreadSort = "updated",
        limit: int | None = None,
        sizes: bool = False,
    ) -> Iterator[ThreadRecord]:
        """`threads`, streamed: where the store can give the rows in the order asked
        (SQLite: `thread`, `updated`), memory stays flat and reading stops after `limit`
        rows; otherwise the records are collected and sorted first. The encrypted-threads
        notice is added once the stream ends."""
        from ckpt.encryption import encrypted_threads_notice, hides_thread
        from ckpt.threads import matches, sorted_threads

        measure = sizes or sort == "size"
        has_key = self._store.aes_key is not None
        streams = sort in self._store.thread_orders
        hidden = seen = 0

        def kept() -> Iterator[ThreadRecord]:
            nonlocal hidden, seen
            order = sort if streams else "thread"
            for summary in self._store.threads(sizes=measure, order=order):
                seen += 1
                if hides_thread(summary):
                    hidden += 1
                    if has_key:  # a wrong key: say so before anything is shown
                        encrypted_threads_notice(hidden, seen, has_key=True)
                record = thread_record(summary)
                if matches(record, where=where, status=status):
                    yield record

        if streams:
            yield from itertools.islice(kept(), limit or None)
            self._store.notices.extend(encrypted_threads_notice(hidden, seen, has_key=has_key))
            return
        # Any other order needs every record before the first: they wait in a temporary
        # file, only their sort keys in memory (ckpt.threads.sorted_threads).
        ordered = sorted_threads(kept(), sort=sort, limit=limit)
        # The first record comes once every summary is read: the notice is known then.
        first = next(ordered, None)
        notices = encrypted_threads_notice(hidden, seen, has_key=has_key)
        if first is not None:
            yield first
            yield from ordered
        self._store.notices.extend(notices)

    def checkpoint(
        self,
        selector: str,
        *,
        ns: str | None = None,
        values: bool = True,
        channels: Sequence[str] = (),
    ) -> CheckpointRecord:
        """One checkpoint (`ckpt show SELECTOR --json --blobs`). `selector` is anything the
        CLI takes: a checkpoint id, a unique prefix, a short id, THREAD (its latest
        checkpoint) or THREAD~N (N parents back). `channels` keeps only those channels'
        values and writes. Raises NotFound or Ambiguous."""
        from ckpt.encryption import record_error

        checkpoint, tasks = self._load(selector, ns=ns, values=values, channels=channels)
        record = checkpoint_record(checkpoint, values=values, tasks=tasks)
        self._hidden(record_error(record, has_key=self._has_key), record)
        return record

    def channel_values(
        self, records: Sequence[CheckpointRecord]
    ) -> dict[str, dict[str, Any] | None]:
        """The stored channel values of several checkpoints (by their records), read in a
        few batched statements: checkpoint id -> values, or None when unreadable. Delta
        channels are not rebuilt here (`checkpoint()` rebuilds them)."""
        keys = [
            CheckpointKey(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in records
        ]
        return {c.checkpoint_id: c.values for c in self._store.load_many(keys, values=True)}

    def history(
        self, thread_id: str, *, ns: str | None = None, last: int | None = None
    ) -> list[CheckpointRecord]:
        """Every checkpoint of a thread, all namespaces (or one), oldest id first, without
        values (`ckpt history --json`); `last`: only the newest `last` (`--last N`), the
        others never read."""
        from ckpt.encryption import records_error
        from ckpt.history import thread_checkpoints, thread_tasks

        checkpoints = thread_checkpoints(self._store, thread_id, ns, last=last)
        tasks = thread_tasks(checkpoints)
        records = [
            checkpoint_record(c, values=False, tasks=tasks[(c.checkpoint_ns, c.checkpoint_id)])
            for c in checkpoints
        ]
        self._hidden(records_error(records, has_key=self._has_key), records)
        return records

    def iter_history(
        self, thread_id: str, *, ns: str | None = None, last: int | None = None
    ) -> Iterator[CheckpointRecord]:
        """`history`, streamed: a whole thread (no `ns`, no `last`) is read twice, a batch
        at a time (once to learn each graph's shape, once for the records), so memory
        stays flat however long it is; with `ns` or `last` it is `history`."""
        from ckpt.history import stream_history

        if ns is not None or last is not None:
            return iter(self.history(thread_id, ns=ns, last=last))
        return self._watched(stream_history(self._store, thread_id))

    def _watched(self, records: Iterator[CheckpointRecord]) -> Iterator[CheckpointRecord]:
        """A stream of records, then the error of those that stayed encrypted (only they
        are kept: a stream keeps no list of everything)."""
        from ckpt.encryption import records_error, watch_hidden

        hidden: list[CheckpointRecord] = []
        yield from watch_hidden(records, hidden)
        self._hidden(records_error(hidden, has_key=self._has_key), hidden)

    def history_tree(
        self, thread_id: str, *, last: int | None = None
    ) -> list[list[HistoryNodeRecord]]:
        """The thread as the tree `ckpt history` draws: chains of the root namespace, forks
        where they leave, subgraph runs under the checkpoint whose task ran them. `last`:
        the tree of the newest `last` checkpoints (a chain starts where its parent is
        older than those)."""
        from ckpt.encryption import records_error
        from ckpt.history import build_history, history_records, thread_checkpoints
        from ckpt.records import history_nodes

        checkpoints = thread_checkpoints(self._store, thread_id, last=last)
        tree = history_records(build_history(checkpoints, window=last is not None))
        records = [node["checkpoint"] for chain in tree for node in history_nodes(chain)]
        self._hidden(records_error(records, has_key=self._has_key), tree)
        return tree

    def versions(
        self, thread_id: str, *, ns: str | None = None, last: int | None = None
    ) -> VersionMatrix:
        """Which step moved each channel's version, and whose write moved it
        (`ckpt versions --json`); `last` keeps the newest N checkpoints."""
        from ckpt.encryption import bodies_error
        from ckpt.history import thread_checkpoints
        from ckpt.version_matrix import version_matrix

        checkpoints = thread_checkpoints(self._store, thread_id, ns or "")
        matrix = version_matrix(checkpoints, last=last)
        self._hidden(bodies_error(checkpoints, has_key=self._has_key), matrix)
        return matrix

    def dump(
        self,
        *,
        threads: Sequence[str] = (),
        ns: str | None = None,
        since_id: str | None = None,
        until_id: str | None = None,
        latest: bool = False,
        values: bool = True,
    ) -> Iterator[CheckpointRecord]:
        """Stream checkpoints (`ckpt dump`) in (thread, namespace, id) order, one decoded
        at a time: memory stays flat however large the store. Unknown `threads` raise
        NotFound at once, before anything streams; a namespace `ns` that holds nothing
        (outside a --since/--until window) raises it once the stream ends empty."""
        query = DumpQuery(
            thread_ids=self._known_threads(threads),
            checkpoint_ns=ns,
            since_id=since_id,
            until_id=until_id,
            latest_only=latest,
        )
        return self._dump(query, values=values)

    def dump_total(
        self,
        *,
        threads: Sequence[str] = (),
        ns: str | None = None,
        since_id: str | None = None,
        until_id: str | None = None,
        latest: bool = False,
    ) -> int | None:
        """How many records `dump` with the same filters streams, when the store can count
        them cheaply (a count over the key index; pickle files: their loaded index); None
        when the store cannot say (a Postgres count that ran out of time)."""
        query = DumpQuery(
            thread_ids=tuple(threads),
            checkpoint_ns=ns,
            since_id=since_id,
            until_id=until_id,
            latest_only=latest,
        )
        return self._store.count_checkpoints(query)

    def _dump(self, query: DumpQuery, *, values: bool) -> Iterator[CheckpointRecord]:
        from ckpt.encryption import record_error, record_hides_values
        from ckpt.reader import CheckpointReader, annotate

        reader = CheckpointReader(self._store)
        first_hidden: CheckpointRecord | None = None
        count = 0
        for checkpoint in self._store.iter_checkpoints(query, values=values):
            checkpoint, tasks = annotate(reader, checkpoint, values=values)
            record = checkpoint_record(checkpoint, values=values, tasks=tasks)
            if first_hidden is None and record_hides_values(record):
                first_hidden = record
            yield record
            count += 1
        if first_hidden is not None:
            self._hidden(record_error(first_hidden, has_key=self._has_key), first_hidden)
        if not count and query.checkpoint_ns is not None and not (query.since_id or query.until_id):
            # Like an unknown thread: a namespace that matches nothing is a mistake (often
            # `node` instead of `node:<task id>`), not an empty store.
            raise NotFound(
                f"no checkpoints in namespace {query.checkpoint_ns!r}; `ckpt threads --json` "
                "lists namespaces"
            )

    def stats(
        self,
        *,
        threads: Sequence[str] = (),
        ns: str | None = None,
        top: int = 10,
        keep: int = 10,
        progress: Callable[[int], None] | None = None,
    ) -> StatsRecord:
        """Where the store's bytes go (`ckpt stats --json`): totals, the largest threads,
        channels, subgraphs, write channels and checkpoints (`top` of each; 0 keeps all),
        how the largest threads grow, what pruning to the latest or the last `keep`
        checkpoints would free, and health. `threads` and `ns` narrow it; `progress(n)`
        hears of every n rows read. Unknown `threads` raise NotFound."""
        from ckpt.delta import COUNTERS
        from ckpt.stats import store_stats

        selected = self._known_threads(threads)

        def slim() -> Iterator[ThreadRecord]:
            # Read once the scan is done. Of each thread record, only what health reads:
            # its status, first error or interrupt, latest id and delta counters.
            for t in self.iter_threads():
                if selected and t["thread_id"] not in selected:
                    continue
                metadata = t["metadata"]
                yield {  # type: ignore[typeddict-item]
                    "thread_id": t["thread_id"],
                    "status": t["status"],
                    "checkpoint_id": t["checkpoint_id"],
                    "errors": t["errors"][:1],
                    "interrupts": t["interrupts"][:1],
                    "metadata": {COUNTERS: metadata[COUNTERS]} if COUNTERS in metadata else {},
                }

        from ckpt.encryption import stats_error

        record = store_stats(
            self._store,
            DumpQuery(thread_ids=selected, checkpoint_ns=ns),
            top=top,
            keep=keep,
            threads=slim(),
            progress=progress,
        )
        unmeasured = record["totals"]["unmeasured_bodies"]["encrypted"]
        self._hidden(stats_error(unmeasured), record)
        return record

    def stats_rows(self) -> int:
        """How many rows `stats()` reads (a progress bar's total): counted by the store."""
        from ckpt.stats import rows_to_read

        return rows_to_read(self._store)

    def types(
        self,
        *,
        threads: Sequence[str] = (),
        progress: Callable[[Iterator[RawRow]], Iterator[RawRow]] | None = None,
    ) -> TypesRecord:
        """Every (module, class) pair the stored values name (`ckpt types --json`), marked
        against LangGraph's strict-mode safe list, with the allowlist to paste, the serde
        tags and the checkpoint versions present. Nothing named is imported. `progress`
        wraps the stream of raw rows. Unknown `threads` raise NotFound."""
        from ckpt.census import census
        from ckpt.encryption import types_error

        record = census(
            self._store, DumpQuery(thread_ids=self._known_threads(threads)), progress=progress
        )
        hidden = record["encryption"]["hidden"]
        self._hidden(types_error(hidden, has_key=bool(record["encryption"]["key"])), record)
        return record

    def check(
        self,
        *,
        threads: Sequence[str] = (),
        stale: str | dt.timedelta | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> CheckRecord:
        """Whether the store is whole (`ckpt check --json`): every row read once, every
        value decoded; broken parent links, rows copied from another thread, missing and
        unused blobs, undecodable or unverified bytes, which saver wrote it and whether the
        current one reads it, strict-mode and pickle values, failed threads and those
        waiting on an interrupt (for longer than `stale`: "7d", or a timedelta). Each
        finding has a severity and, where ckpt has one, the command that fixes it; nothing
        is changed. Encrypted values without a key are counted, not raised. `progress(n)`
        hears of every n rows read (`stats_rows()` is their total). Unknown `threads`
        raise NotFound."""
        from ckpt.check import check_store
        from ckpt.threads import parse_age

        selected = self._known_threads(threads)
        age = parse_age(stale, "--stale") if isinstance(stale, str) else stale
        records = (
            t
            for t in self.iter_threads(sort="thread")
            if not selected or t["thread_id"] in selected
        )
        return check_store(
            self._store,
            DumpQuery(thread_ids=selected),
            threads=records,
            stale=age,
            progress=progress,
        )

    def _known_threads(self, threads: Sequence[str]) -> tuple[str, ...]:
        for thread_id in threads:
            if not thread_id.strip():
                raise BadOption("empty thread id in --thread")
            if not self._store.thread_exists(thread_id):
                raise NotFound(f"no thread {thread_id!r} in {self._store.location}")
        return tuple(dict.fromkeys(threads))

    def is_latest(self, record: CheckpointRecord) -> bool:
        """Whether a record is its namespace's newest checkpoint (its `next` is then also
        what the thread still has to run)."""
        key = self._store.latest_key(record["thread_id"], record["checkpoint_ns"])
        return key is not None and key.checkpoint_id == record["checkpoint_id"]

    def resolve(self, selector: str, *, ns: str | None = None) -> CheckpointKey:
        """The checkpoint a selector names (see `checkpoint`)."""
        from ckpt.selector import resolve

        return resolve(self._store, selector, checkpoint_ns=ns)

    def parent(self, record: CheckpointRecord, *, values: bool = True) -> CheckpointRecord | None:
        """The checkpoint `record` names as its parent, looked up in its own thread and
        namespace (an id need not be unique across threads); None when it names none.
        Raises NotFound when the parent is not in the store."""
        parent = record["parent_checkpoint_id"]
        if parent is None:
            return None
        from ckpt.encryption import record_error

        key = CheckpointKey(record["thread_id"], record["checkpoint_ns"], parent)
        checkpoint, tasks = self._load(key, ns=None, values=values)
        found = checkpoint_record(checkpoint, values=values, tasks=tasks)
        self._hidden(record_error(found, has_key=self._has_key), found)
        return found

    def _load(
        self,
        selector: str | CheckpointKey,
        *,
        ns: str | None,
        values: bool,
        channels: Sequence[str] = (),
    ) -> tuple[Checkpoint, list[Task] | None]:
        from ckpt.encryption import pick_channels
        from ckpt.reader import CheckpointReader, annotate

        key = selector if isinstance(selector, CheckpointKey) else self.resolve(selector, ns=ns)
        checkpoint = self._store.load(key, values=values)
        checkpoint, tasks = annotate(CheckpointReader(self._store), checkpoint, values=values)
        if channels:
            checkpoint = pick_channels(checkpoint, list(channels))
        return checkpoint, tasks

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open(  # the library's entry point, named as sqlite3.connect or open() are
    spec: str | os.PathLike[str] | None = None,
    *,
    aes_key: str | bytes | None = None,
    schema: str | None = None,
    prefix: str | None = None,
    database: str | None = None,
    timeout: float | None = None,
    hidden: Hidden = "raise",
) -> CheckpointStore:
    """Open a checkpoint store read-only: a SqliteSaver file, a `.langgraph_api` folder or
    a PersistentDict file, a project folder holding one store, or a `postgresql://` or
    RedisSaver `redis://` URL.

    `spec` None means `$CKPT_DB`, else the one store in the current folder. `aes_key` is
    the EncryptedSerializer key (16, 24 or 32 bytes; default `$LANGGRAPH_AES_KEY`); a
    wrong key raises EncryptedError. `schema` is the Postgres schema of the checkpoint
    tables, `prefix` the key prefix of a RedisSaver store (the collections of a
    MongoDBSaver one), `database` a MongoDB store's database; `timeout` the statement timeout
    in seconds: Postgres and Redis (None: 5 s) and, when given, how long SQLite may step one
    statement. `hidden`: values that
    stay encrypted raise EncryptedError ("raise", with what was read in its `partial`) or
    are kept marked in the records, the errors in `store.hidden` ("keep"). Raises
    StoreNotFound, StoreUnreadable, NotACheckpointStore, StoreCorrupt (ckpt.errors).
    """
    from ckpt.decoders import key_from_env_or_arg
    from ckpt.encryption import verify_key
    from ckpt.stores import discover, open_store

    text = os.fspath(spec) if spec is not None else os.environ.get("CKPT_DB") or discover()
    if isinstance(aes_key, bytes):
        aes_key = aes_key.decode("utf-8")
    try:
        key = key_from_env_or_arg(aes_key)
    except EncryptedError as exc:
        raise BadOption(exc.message) from None
    store = open_store(
        text, aes_key=key, schema=schema, prefix=prefix, database=database, timeout=timeout
    )
    try:
        verify_key(store)
    except BaseException:
        store.close()
        raise
    return CheckpointStore(store, hidden=hidden)


def diff(a: CheckpointRecord, b: CheckpointRecord) -> list[PatchOperation]:
    """The RFC 6902 JSON Patch that turns record `a` into record `b` (`ckpt diff --json`):
    messages matched by id, writes by (task, idx); [] when they hold the same."""
    from ckpt.changes import diff_values, json_patch
    from ckpt.records import as_json

    return json_patch(diff_values(as_json(a), as_json(b)))


def copy(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    threads: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    on_conflict: Literal["fail", "skip", "replace"] = "fail",
    redact: bool = False,
    keep_keys: Sequence[str] = (),
    keep_errors: bool = False,
    renumber_versions: bool = False,
    apply: bool = False,
    aes_key: str | bytes | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Copy threads from the store `src` into a SqliteSaver file or PostgresSaver database
    `dst` (`ckpt copy`): `threads` (None: every thread), `rename` {old: new}, `on_conflict`
    "fail", "skip" or "replace", `redact` (with `keep_keys`, `keep_errors`),
    `renumber_versions` (integer channel versions in the target's format). Without
    `apply` nothing changes and the plan is returned; with it, each thread is copied in
    its own transaction. Returns the record `ckpt copy --json` prints (docs/json.md).
    Raises Unsafe for threads already on the target (with "fail"), and, after copying the
    others, for a thread it refused (the CLI's exit 12)."""
    from ckpt import copying
    from ckpt.maintenance import Selection
    from ckpt.stores import open_target

    if on_conflict not in copying.ON_CONFLICT:
        raise BadOption(f"on_conflict={on_conflict!r}: choose fail, skip or replace")
    selection = Selection(threads=tuple(threads or ()), everything=threads is None)
    redaction = (
        copying.Redaction(keep_keys=frozenset(keep_keys), keep_errors=keep_errors)
        if redact
        else None
    )
    with (
        open(src, aes_key=aes_key, timeout=timeout, hidden="keep") as store,
        open_target(os.fspath(dst), timeout=timeout) as target,
    ):
        run = copying.copy_run(
            store,
            target,
            selection,
            on_conflict=on_conflict,
            renames=rename,
            apply=apply,
            redaction=redaction,
            renumber_versions=renumber_versions,
        )
        records = list(run)
    record = {**run.head, "threads": records, "totals": run.totals}
    if (refusal := run.refusal()) is not None:
        raise refusal
    return record
