"""ckpt as a library: open a checkpoint store and get the records the CLI prints.

    >>> import ckpt
    >>> with ckpt.open("chat.sqlite") as store:               # doctest: +SKIP
    ...     waiting = store.threads(status="interrupted")

Every method returns the typed records of ckpt.records.types (the same dicts `--json` prints),
raises only ckpt.errors exceptions, never prints and never writes to the store. The CLI
is built on this module, so the two never disagree. See docs/api.md.
"""

from __future__ import annotations

import codecs
import datetime as dt
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ckpt.analysis.comparison import Comparison
from ckpt.analysis.records import checkpoint_record
from ckpt.analysis.selector import dump_query, known_threads
from ckpt.analysis.tasks import Task
from ckpt.errors import BadOption, EncryptedError, NotFound
from ckpt.ops.demo import missing_demo_packages, require_demo, write_demo
from ckpt.ops.run import Run
from ckpt.records.model import Checkpoint, CheckpointKey, DumpQuery
from ckpt.records.options import (
    CopyOptions,
    DumpFilters,
    Hidden,
    MigrateOptions,
    OnConflict,
    PruneOptions,
    Selection,
    Strategy,
    ThreadsQuery,
)
from ckpt.records.types import (
    CheckpointRecord,
    CheckRecord,
    FollowWritesRecord,
    HistoryNodeRecord,
    LineageRecord,
    PatchOperation,
    StatsRecord,
    ThreadRecord,
    TypesRecord,
    VacuumRecord,
    VersionMatrix,
)
from ckpt.records.vocabulary import Status, ThreadSort
from ckpt.records.when import When
from ckpt.stores.base import Closes, Store

if TYPE_CHECKING:
    from typing import Unpack

    from ckpt.ops.copy import CopyRun
    from ckpt.ops.maintain import PruneRun
    from ckpt.ops.migrate import MigrateRun
    from ckpt.records.migration import Step
    from ckpt.records.runs import CopyRecord, MigrateRecord, PruneRecord, ThreadPlanRecord

T = TypeVar("T")

__all__ = [
    "CheckpointStore",
    "Comparison",
    "CopyOptions",
    "DumpFilters",
    "MigrateOptions",
    "PruneOptions",
    "Run",
    "closest_thread",
    "copy",
    "diff",
    "find_store",
    "migrate",
    "missing_demo_packages",
    "open",
    "prune",
    "require_demo",
    "Selection",
    "ThreadsQuery",
    "select_threads",
    "vacuum",
    "write_demo",
]


def select_threads(
    records: Iterable[ThreadRecord],
    *,
    sort: ThreadSort = "updated",
    where: dict[str, str] | None = None,
    status: str | None = None,
) -> list[ThreadRecord]:
    """Thread records in hand, filtered and sorted as `threads` filters and sorts them
    (`--where` on the latest metadata, `--status`, `--sort`)."""
    from ckpt.analysis.threads import select_threads as select

    return select(records, sort=sort, where=where, status=status)


def closest_thread(thread_id: str, ids: Iterable[str]) -> str:
    """ "; did you mean ...?" among thread ids in hand, or ""."""
    from ckpt.analysis.selector import closest_thread as closest

    return closest(thread_id, ids)


class CheckpointStore(Closes):
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
        """Act on what encryption hid from a result (ckpt.analysis.encryption says what it is)."""
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
        """The store's kind underneath (a ckpt.stores.base.Store), for tests that look at
        its statements; neither the commands nor ckpt's library modules use it."""
        return self._store

    def thread_exists(self, thread_id: str) -> bool:
        """Whether the store holds the thread (a key lookup, not a listing)."""
        return self._store.thread_exists(thread_id)

    # -- records ---------------------------------------------------------------------------
    def threads(self, **query: Unpack[ThreadsQuery]) -> list[ThreadRecord]:
        """Every thread (`ckpt threads --json`), filtered on its latest metadata and its
        status, then sorted (`updated`: newest first) and cut to `limit`. `size` is None
        unless `sizes` (or `sort="size"`): measuring reads every row of the store.

        Raises EncryptedError when a key was given and does not decrypt the store.
        """
        return list(self.iter_threads(**query))

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
        from ckpt.analysis.threads import stream_threads

        return stream_threads(
            self._store, status=status, where=where, sort=sort, limit=limit, sizes=sizes
        )

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
        from ckpt.analysis.encryption import record_error

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
        from ckpt.analysis.encryption import records_error
        from ckpt.analysis.history import history_list

        records = history_list(self._store, thread_id, ns, last=last)
        self._hidden(records_error(records, has_key=self._has_key), records)
        return records

    def iter_history(
        self, thread_id: str, *, ns: str | None = None, last: int | None = None
    ) -> Iterator[CheckpointRecord]:
        """`history`, streamed: a whole thread (no `ns`, no `last`) is read twice, a batch
        at a time (once to learn each graph's shape, once for the records), so memory
        stays flat however long it is; with `ns` or `last` it is `history`."""
        from ckpt.analysis.history import stream_history

        if ns is not None or last is not None:
            return iter(self.history(thread_id, ns=ns, last=last))
        return self._watched(stream_history(self._store, thread_id))

    def follow_history(
        self,
        thread_id: str,
        *,
        ns: str | None = None,
        last: int | None = None,
        interval: float = 1.0,
        polls: int | None = None,
    ) -> Iterator[CheckpointRecord | FollowWritesRecord]:
        """`history --follow`: the thread's checkpoints (the newest `last` of those already
        there), then each new one as it lands, oldest id first, with the writes that land
        on a checkpoint already given as `writes` events (a task's output, error or
        interrupt), polling every `interval` seconds; `polls` stops after that many (None:
        until the caller stops). A thread not there yet is waited for. Reads are short and
        read-only: a writer never waits on them (ckpt.analysis.follow)."""
        from ckpt.analysis.follow import HistoryFollower, check_interval
        from ckpt.analysis.follow import polls as ticks

        check_interval(interval)
        follower = HistoryFollower(self._store, thread_id, ns)
        for _ in ticks(self._store, interval=interval, count=polls):
            yield from follower.poll(last=last if follower.newest is None else None)

    def follow_threads(
        self,
        *,
        where: dict[str, str] | None = None,
        interval: float = 1.0,
        polls: int | None = None,
    ) -> Iterator[ThreadRecord]:
        """`threads --follow`: every thread's record, then a thread's record again whenever
        its status changes (a new thread, a run that finished, failed or stopped on an
        interrupt), polling every `interval` seconds; `polls` stops after that many."""
        from ckpt.analysis.follow import check_interval, thread_changes
        from ckpt.analysis.follow import polls as ticks

        check_interval(interval)

        def records() -> Iterator[ThreadRecord]:
            yield from self._loaded_threads(where)  # a run that finished is a change
            notices = self._store.notices
            notices[:] = list(dict.fromkeys(notices))  # said once, however many polls

        return thread_changes(records, ticks(self._store, interval=interval, count=polls))

    def _watched(self, records: Iterator[CheckpointRecord]) -> Iterator[CheckpointRecord]:
        """A stream of records, then the error of those that stayed encrypted (only they
        are kept: a stream keeps no list of everything)."""
        from ckpt.analysis.encryption import records_error, watch_hidden

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
        from ckpt.analysis.encryption import records_error
        from ckpt.analysis.history import build_history, history_records, thread_checkpoints
        from ckpt.records.types import history_nodes

        checkpoints = thread_checkpoints(self._store, thread_id, last=last)
        tree = history_records(build_history(checkpoints, window=last is not None))
        records = [node["checkpoint"] for chain in tree for node in history_nodes(chain)]
        self._hidden(records_error(records, has_key=self._has_key), tree)
        return tree

    def lineage(
        self, thread_id: str, *, last: int | None = None, updates: int = 20
    ) -> LineageRecord:
        """Everything `ckpt history` draws: the `history_tree`, the channel values of its
        newest `updates` update_state checkpoints (what each edit wrote), and, with `last`,
        how many older checkpoints were not read (when the store can count them from its
        key index; else 0)."""
        from ckpt.analysis.history import lineage_record

        chains = self.history_tree(thread_id, last=last)
        return lineage_record(self._store, thread_id, chains, last=last, updates=updates)

    def versions(
        self, thread_id: str, *, ns: str | None = None, last: int | None = None
    ) -> VersionMatrix:
        """Which step moved each channel's version, and whose write moved it
        (`ckpt versions --json`); `last` keeps the newest N checkpoints."""
        from ckpt.analysis.encryption import bodies_error
        from ckpt.analysis.history import thread_checkpoints
        from ckpt.analysis.versions import version_matrix

        checkpoints = thread_checkpoints(self._store, thread_id, ns or "")
        matrix = version_matrix(checkpoints, last=last)
        self._hidden(bodies_error(checkpoints, has_key=self._has_key), matrix)
        return matrix

    def dump(
        self, *, values: bool = True, read_only: bool = False, **filters: Unpack[DumpFilters]
    ) -> Iterator[CheckpointRecord]:
        """Stream checkpoints (`ckpt dump`) in (thread, namespace, id) order, one decoded
        at a time: memory stays flat however large the store. `since` and `until` bound
        them by time: a datetime, an age (timedelta, or text: `7d`), an ISO time, or a
        checkpoint id or thread (from, or up to, that checkpoint); `since_id`/`until_id`
        are raw checkpoint id bounds. Unknown `threads` raise NotFound at once, before
        anything streams; a namespace `ns` that holds nothing (outside a since/until
        window) raises it once the stream ends empty. `read_only=True` is for a caller that
        only reads the records (writes them out): a message the next checkpoint repeats is
        then the very object of the record before, decoded once, several times faster on a
        long chat; a caller that changes records leaves it False."""
        query = self._dump_query(**filters)
        return self._dump(query, values=values, shared=read_only)

    def dump_bytes(
        self, *, values: bool = True, jobs: int | None = None, **filters: Unpack[DumpFilters]
    ) -> Iterator[bytes]:
        """`dump`'s records as the NDJSON `ckpt dump --ndjson` prints (UTF-8), in pieces (up
        to a MB of lines), made by up to `jobs` processes where the store's kind allows
        (SQLite, Postgres, Redis; None: one per core, up to 4, on a large store; 1: this
        process alone). ckpt.analysis.fanout says how; the bytes are the same for all."""
        from ckpt.analysis.fanout import ndjson_bytes

        query = self._dump_query(**filters)
        with self._dumping() as hidden:
            yield from ndjson_bytes(self._store, query, values=values, hidden=hidden, jobs=jobs)

    def dump_text(
        self, *, values: bool = True, jobs: int | None = None, **filters: Unpack[DumpFilters]
    ) -> Iterator[str]:
        """`dump_bytes` as text, in pieces."""
        yield from codecs.iterdecode(self.dump_bytes(values=values, jobs=jobs, **filters), "utf-8")

    def dump_total(self, **filters: Unpack[DumpFilters]) -> int | None:
        """How many records `dump` with the same filters streams, when the store can count
        them cheaply (a count over the key index; pickle files: their loaded index); None
        when the store cannot say (a Postgres count that ran out of time)."""
        return self._store.count_checkpoints(self._dump_query(**filters))

    def _dump_query(self, **filters: Unpack[DumpFilters]) -> DumpQuery:
        """The store's query for `dump`'s filters, its threads checked (NotFound)."""
        query = dump_query(self._store, **filters)
        return replace(query, thread_ids=self._known_threads(query.thread_ids))

    def _dump(
        self, query: DumpQuery, *, values: bool, shared: bool = False
    ) -> Iterator[CheckpointRecord]:
        from ckpt.analysis.reader import dump_records

        with self._dumping() as hidden:
            yield from dump_records(self._store, query, values=values, hidden=hidden, shared=shared)

    @contextmanager
    def _dumping(self) -> Iterator[list[CheckpointRecord]]:
        """Around a dump: where it puts its first record with values left encrypted (acted
        on once it is over), and the collector at a scan's pace (at the default pace it
        walks the shared messages of decoders.memo over and over; forks keep the pace)."""
        from ckpt.analysis.encryption import record_error
        from ckpt.scan.rows import fewer_collections

        hidden: list[CheckpointRecord] = []
        with fewer_collections():
            yield hidden
        if hidden:
            self._hidden(record_error(hidden[0], has_key=self._has_key), hidden[0])

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
        checkpoints would free, and health: the findings of `check()`, from the same one
        pass over the rows. `threads` and `ns` narrow it; `progress(n)` hears of every n
        rows read (`rows_to_read(threads)` is their total). Unknown `threads` raise
        NotFound."""
        from ckpt.analysis.encryption import stats_error
        from ckpt.scan.stats import store_stats

        selected = self._known_threads(threads)
        record = store_stats(
            self._store,
            DumpQuery(thread_ids=selected, checkpoint_ns=ns),
            top=top,
            keep=keep,
            threads=self._thread_records(selected),
            progress=progress,
        )
        unmeasured = record["totals"]["unmeasured_bodies"]["encrypted"]
        self._hidden(stats_error(unmeasured), record)
        return record

    def rows_to_read(self, threads: Sequence[str] = ()) -> int:
        """How many rows `stats()`, `types()` and `check()` read of these threads (all of
        them when none are given): a progress bar's total, counted by the store."""
        from ckpt.scan.rows import rows_to_read

        selected = tuple(dict.fromkeys(threads))
        return rows_to_read(self._store.sizes(DumpQuery(thread_ids=selected)))

    def types(
        self,
        *,
        threads: Sequence[str] = (),
        progress: Callable[[int], None] | None = None,
    ) -> TypesRecord:
        """Every (module, class) pair the stored values name (`ckpt types --json`), marked
        against LangGraph's strict-mode safe list, with the allowlist to paste, the serde
        tags and the checkpoint versions present. Nothing named is imported. `progress(n)`
        hears of every n rows read. Unknown `threads` raise NotFound."""
        from ckpt.analysis.encryption import types_error
        from ckpt.scan.census import census

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
        stale: When | None = None,
        progress: Callable[[int], None] | None = None,
        jobs: int | None = None,
    ) -> CheckRecord:
        """Whether the store is whole (`ckpt check --json`): every row read once, every
        part checked the way LangGraph loads it (bodies, metadata, writes, blobs), parent
        chains, rows copied from another thread, missing and unused blobs and writes,
        undecodable or unverified bytes, the saver and whether the current one reads it,
        strict-mode and pickle values, failed threads and those waiting on an interrupt (a
        warning past `stale`: "7d", or a timedelta). Each finding has a severity and the
        fix ckpt has, as data; nothing is changed. Encrypted values without a key count.
        `threads`: only those; `progress(n)` hears of every n rows read (`rows_to_read`);
        `jobs` processes share a whole SQLite, Postgres or Redis store (None: one per core
        up to 4 on a large one; ckpt.scan.split). Unknown `threads` raise NotFound."""
        from ckpt.records.when import moment, parse_age
        from ckpt.scan.check import check_store

        selected = self._known_threads(threads)
        now = dt.datetime.now(dt.UTC)  # an age, or the time since which a wait is stale
        age = now - moment(parse_age(stale, "stale"), now) if stale is not None else None
        return check_store(
            self._store,
            DumpQuery(thread_ids=selected),
            threads=self._thread_records(selected),
            stale=age,
            now=now,
            progress=progress,
            jobs=jobs,
        )

    def _thread_records(self, selected: tuple[str, ...]) -> Iterator[ThreadRecord]:
        """The thread records `stats` and `check` conclude from, read once the pass is done:
        every thread's (listed in thread order), or those of the threads selected, each read
        by key."""
        from ckpt.scan.check import thread_records

        if selected:
            yield from thread_records(self._store, selected)
        else:
            yield from self._loaded_threads(None)

    def _loaded_threads(self, where: dict[str, str] | None) -> Iterator[ThreadRecord]:
        """Every thread in thread order with its newest checkpoint read, even where
        `threads` reads keys only (DynamoDB): what `--follow`, `stats` and `check` need."""
        from ckpt.analysis.threads import stream_threads

        return stream_threads(
            self._store, status=None, where=where, sort="thread", limit=None, sizes=False,
            latest=True,
        )  # fmt: skip

    def _known_threads(self, threads: Sequence[str]) -> tuple[str, ...]:
        return known_threads(self._store, threads)

    def is_latest(self, record: CheckpointRecord) -> bool:
        """Whether a record is its namespace's newest checkpoint (its `next` is then also
        what the thread still has to run)."""
        key = self._store.latest_key(record["thread_id"], record["checkpoint_ns"])
        return key is not None and key.checkpoint_id == record["checkpoint_id"]

    def resolve(self, selector: str, *, ns: str | None = None) -> CheckpointKey:
        """The checkpoint a selector names (see `checkpoint`)."""
        from ckpt.analysis.selector import resolve

        return resolve(self._store, selector, checkpoint_ns=ns)

    def parent(self, record: CheckpointRecord, *, values: bool = True) -> CheckpointRecord | None:
        """The checkpoint `record` names as its parent, looked up in its own thread and
        namespace (an id need not be unique across threads); None when it names none.
        Raises NotFound when the parent is not in the store."""
        parent = record["parent_checkpoint_id"]
        if parent is None:
            return None
        from ckpt.analysis.encryption import record_error

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
        from ckpt.analysis.reader import load_checkpoint

        key = selector if isinstance(selector, CheckpointKey) else self.resolve(selector, ns=ns)
        return load_checkpoint(self._store, key, values=values, channels=channels)

    # -- choosing threads (prune, copy) -----------------------------------------------------
    def _chooser(
        self,
        *,
        threads: Sequence[str] = (),
        older_than: When | None = None,
        since: When | None = None,
        status: Status | None = None,
        where: Mapping[str, str] | None = None,
        all: bool = False,  # the CLI's --all, by its name
    ) -> Callable[[], list[str]]:
        """The threads chosen, and the selection checked, when called (once the store has
        said it can do what is asked): their ids in thread id order. Every given condition
        must hold; the records are streamed and dropped (100,000 threads: their ids only)."""
        from ckpt.analysis.threads import chooser

        def listed() -> Iterator[ThreadRecord]:
            return self.iter_threads(status=status, where=dict(where or {}), sort="thread")

        given = bool(threads or older_than is not None or since is not None or status or where)
        return chooser(
            self._store, self._known_threads, listed, threads, older_than, since, given or all
        )

    # -- changing a store: prune, vacuum (apply=True only) --------------------------------
    def iter_prune(
        self,
        *,
        strategy: Strategy = "keep_latest",
        keep: int = 1,
        backup: str | os.PathLike[str] | None = None,
        apply: bool = False,
        timeout: float | None = None,
        on_thread: Callable[[ThreadPlanRecord], None] | None = None,
        **selection: Unpack[Selection],
    ) -> PruneRun:
        """`prune`, streamed: a PruneRun, whose iteration plans (with `apply`, prunes) one
        thread at a time and yields its record; its `head` is the rest of the record and
        its `totals` are complete once it ends. Nothing is read before the first thread
        is asked for, so memory stays flat however many threads are selected."""
        from ckpt.ops import maintain as maintenance

        choose = self._chooser(**selection)
        return maintenance.prune_run(
            self._store,
            choose,
            strategy=strategy,
            keep=keep,
            apply=apply,
            backup=Path(backup) if backup is not None else None,
            timeout=timeout,
            on_thread=on_thread,
        )

    def prune(self, **options: Unpack[PruneOptions]) -> PruneRecord:
        """Delete old checkpoints safely, keeping what resuming each thread needs (`ckpt
        prune --json`; docs/json.md). The threads: `threads`, `older_than` (an age: `30d`,
        a timedelta, or a time), `since`, `status`, `where` (every condition holds), or
        `all=True`. `strategy`: "keep_latest", "keep_last" (the last `keep`), "delete"
        (whole threads) or "orphans" (no checkpoint: only the pending writes whose
        checkpoint is gone and the blobs no checkpoint names, what `check()` reports).
        Without `apply` nothing changes and the plan is returned; with it
        each thread is pruned in its own transaction (`backup`: SQLite's online backup to
        that new file first; `timeout`: how long to wait for a lock). The one method that
        changes a store, with vacuum, and only with `apply=True`."""
        return self.iter_prune(**options).record()  # type: ignore[return-value]

    def vacuum(
        self,
        *,
        into: str | os.PathLike[str] | None = None,
        apply: bool = False,
        timeout: float | None = None,
    ) -> VacuumRecord:
        """Give the space of deleted rows back (`ckpt vacuum --json`): what VACUUM would
        free, or with `apply` run it (SQLite: VACUUM, or VACUUM INTO the new file `into`;
        Postgres: VACUUM (ANALYZE) of the checkpoint tables)."""
        from ckpt.ops import maintain as maintenance

        return maintenance.vacuum(
            self._store,
            apply=apply,
            into=Path(into) if into is not None else None,
            timeout=timeout,
        )

    # -- copying threads into another store --------------------------------------------------
    def iter_copy(
        self,
        dst: str | os.PathLike[str],
        *,
        rename: Mapping[str, str] | None = None,
        on_conflict: OnConflict = "fail",
        redact: bool = False,
        keep_keys: Sequence[str] = (),
        keep_errors: bool = False,
        renumber_versions: bool = False,
        shallow: bool = False,
        apply: bool = False,
        timeout: float | None = None,
        on_rows: Callable[[int], None] | None = None,
        **selection: Unpack[Selection],
    ) -> CopyRun:
        """`copy`, streamed: a CopyRun (a context manager that closes the target), whose
        iteration copies (or plans) one thread at a time and yields its record; `head`,
        `totals` and `notices` (what the target has to say) as PruneRun's. `on_rows`
        hears of every row moved; `shallow`: a Redis target in ShallowRedisSaver's layout
        (each namespace's newest checkpoint only)."""
        from ckpt.ops import copy as copying

        redaction = copying.Redaction.given(redact, keep_keys, keep_errors)
        choose = self._chooser(**selection)
        return copying.copy_into(
            os.fspath(dst),
            lambda target: copying.copy_run(
                self._store,
                target,
                choose,
                on_conflict=on_conflict,
                renames=rename,
                apply=apply,
                redaction=redaction,
                renumber_versions=renumber_versions,
                on_rows=on_rows,
            ),
            timeout=timeout,
            shallow=shallow,
        )

    def copy(self, dst: str | os.PathLike[str], **options: Unpack[CopyOptions]) -> CopyRecord:
        """Copy threads into a SqliteSaver file or PostgresSaver database `dst` (`ckpt
        copy`; docs/json.md): the threads as `prune` chooses them; `rename` {old: new};
        `on_conflict` "fail", "skip" or "replace"; `redact` (with `keep_keys`,
        `keep_errors`); `renumber_versions` (integer channel versions in the target's
        format). Without `apply` nothing changes and the plan is returned; with it each
        thread is copied in its own transaction. Raises Unsafe for threads already on the
        target (with "fail"), and, after copying the others, for a thread it refused (the
        CLI's exit 12); CopyInterrupted on Ctrl-C, with how many threads were copied."""
        with self.iter_copy(dst, **options) as run:
            record = run.record()
        if (refusal := run.refusal()) is not None:
            raise refusal
        return record  # type: ignore[return-value]

    # -- migrating threads to a new graph ----------------------------------------------------
    def iter_migrate(
        self,
        *,
        rename_channel: Mapping[str, str] | None = None,
        drop_channel: Sequence[str] = (),
        rename_node: Mapping[str, str] | None = None,
        add_channel: Mapping[str, Any] | None = None,
        transform: Mapping[str, Callable[[Any], Any]] | None = None,
        plan: str | os.PathLike[str] | Sequence[Step] | None = None,
        latest: bool = False,
        backup: str | os.PathLike[str] | None = None,
        apply: bool = False,
        timeout: float | None = None,
        graph: Any = None,
        **selection: Unpack[Selection],
    ) -> MigrateRun:
        """`migrate`, streamed: a MigrateRun, whose iteration plans (with `apply`,
        migrates) one thread at a time and yields its record; `head` and `totals` as
        PruneRun's. The steps: `plan` (a TOML file, or a list of ckpt.records.migration
        Step), else, in this order, `rename_channel` {old: new}, `drop_channel`,
        `rename_node` {old: new}, `add_channel` {name: JSON value} and `transform`
        {channel: function} (the function gets the decoded value as ckpt gives it and
        returns the new one, which ckpt encodes as LangGraph's serializer would). `graph`:
        the new compiled graph (or "module:attr", imported: the caller's own code), through
        which each migrated thread is loaded (MigrationMismatch names those it cannot)."""
        from ckpt.ops import migrate as migration
        from ckpt.records.migration import steps_of

        steps = steps_of(rename_channel, drop_channel, rename_node, add_channel, transform, plan)
        choose = self._chooser(**selection)
        return migration.migrate_run(
            self._store,
            choose,
            steps,
            latest=latest,
            apply=apply,
            backup=Path(backup) if backup is not None else None,
            timeout=timeout,
            graph=graph,
        )

    def migrate(self, **options: Unpack[MigrateOptions]) -> MigrateRecord:
        """Change saved threads to fit a changed graph (`ckpt migrate --json`;
        docs/migrate.md): the steps and threads as `iter_migrate` takes them. Without
        `apply` nothing changes and the plan is returned; with it each thread is migrated
        in its own transaction and read back before it commits (MigrationMismatch, exit
        14, rolls that thread back). Raises Unsafe (exit 12) when a thread cannot be
        migrated (then nothing changed), or a transform raised."""
        run = self.iter_migrate(**options)
        record = run.record()
        if (refusal := run.refusal()) is not None:
            raise refusal
        return record  # type: ignore[return-value]

    def migration_behind(
        self,
        plan: str | os.PathLike[str] | Sequence[Step],
        *,
        threads: Sequence[str] = (),
        all: bool = True,
        latest: bool = False,
    ) -> list[str]:
        """The threads a migration plan would still change (`ckpt check --plan`)."""
        from ckpt.ops import migrate as migration
        from ckpt.records.migration import steps_of

        steps = steps_of(None, (), None, None, None, plan)
        choose = self._chooser(threads=threads, all=all and not threads)
        return migration.behind(self._store, choose, steps, latest=latest)

    # -- comparing checkpoints ---------------------------------------------------------------
    def diff(
        self,
        a: str,
        b: str | None = None,
        *,
        ns: str | None = None,
        other: CheckpointStore | None = None,
    ) -> Comparison:
        """Compare two checkpoints (`ckpt diff A B`): selectors as `checkpoint` takes them.
        Without `b`, A is compared with its parent; with `other` (another store, e.g. a
        copy after a migration), B (or A again) is read there. Raises NotFound, naming
        the side, when a checkpoint is missing or A has no parent."""
        from ckpt.analysis.changes import diff_records
        from ckpt.analysis.comparison import the_parent

        if b is None and other is None:
            right = self.checkpoint(a, ns=ns)
            left = the_parent(right, self.parent(right), self.location)
        else:
            left = self.checkpoint(a, ns=ns)
            where = other or self
            try:
                right = where.checkpoint(a if b is None else b, ns=ns)
            except NotFound as exc:
                if other is None:
                    raise
                raise NotFound(f"in {other.location} (`other`): {exc.message}") from None
        return Comparison(left, right, diff_records(left, right))

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        self._store.close()


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
    statement. `hidden`: values that stay encrypted raise EncryptedError ("raise", with
    what was read in its `partial`) or are kept marked in the records, the errors in
    `store.hidden` ("keep"). Raises
    StoreNotFound, StoreUnreadable, NotACheckpointStore, StoreCorrupt (ckpt.errors).
    """
    from ckpt.analysis.encryption import opened_with_key
    from ckpt.stores import discover, open_store

    text = os.fspath(spec) if spec is not None else os.environ.get("CKPT_DB") or discover()
    store = opened_with_key(
        aes_key,
        lambda key: open_store(
            text, aes_key=key, schema=schema, prefix=prefix, database=database, timeout=timeout
        ),
    )
    return CheckpointStore(store, hidden=hidden)


StoreLike = str | os.PathLike[str] | CheckpointStore


@contextmanager
def _store(
    store: StoreLike, aes_key: str | bytes | None, timeout: float | None
) -> Iterator[CheckpointStore]:
    """A store as given: one already open (left open), or opened here (and closed)."""
    if isinstance(store, CheckpointStore):
        yield store
        return
    with open(store, aes_key=aes_key, timeout=timeout, hidden="keep") as opened:
        yield opened


def _on(
    store: StoreLike,
    aes_key: str | bytes | None,
    timeout: float | None,
    verb: Callable[[CheckpointStore], T],
) -> T:
    """`verb` called on a store as given (see _store)."""
    with _store(store, aes_key, timeout) as opened:
        return verb(opened)


@overload
def diff(a: CheckpointRecord, b: CheckpointRecord) -> list[PatchOperation]: ...


@overload
def diff(
    a: str,
    b: str | None = None,
    *,
    store: StoreLike | None = None,
    ns: str | None = None,
    other: StoreLike | None = None,
    aes_key: str | bytes | None = None,
    timeout: float | None = None,
) -> Comparison: ...


def diff(
    a: CheckpointRecord | str,
    b: CheckpointRecord | str | None = None,
    *,
    store: StoreLike | None = None,
    ns: str | None = None,
    other: StoreLike | None = None,
    aes_key: str | bytes | None = None,
    timeout: float | None = None,
) -> list[PatchOperation] | Comparison:
    """Two checkpoint records: the RFC 6902 JSON Patch that turns `a` into `b` (`ckpt diff
    --json`): messages matched by id, writes by (task, idx); [] when they hold the same.

    Two selectors, or one (compared with its parent), and the `store` they are in (an open
    CheckpointStore, or what `open` takes; None: `$CKPT_DB`, else the one store here):
    `ckpt diff A [B] [--ns NS] [--db2 OTHER]`, as a Comparison (the two records and their
    changes; `.patch`, `.differ`). `other`: B is read from that store."""
    if isinstance(a, dict):
        from ckpt.analysis.changes import diff_values, json_patch
        from ckpt.records.encode import as_json

        if not isinstance(b, dict):
            raise BadOption("diff(a, b): b must be a checkpoint record, as a is")
        return json_patch(diff_values(as_json(a), as_json(b)))
    if b is not None and not isinstance(b, str):
        raise BadOption("diff(a, b): b must be a selector, as a is")
    with _store(store if store is not None else find_store(), aes_key, timeout) as first:
        if other is None:
            return first.diff(a, b, ns=ns)
        with _store(other, aes_key, timeout) as second:
            return first.diff(a, b, ns=ns, other=second)


def copy(
    src: StoreLike,
    dst: str | os.PathLike[str],
    *,
    aes_key: str | bytes | None = None,
    **options: Unpack[CopyOptions],
) -> CopyRecord:
    """`ckpt copy SRC DST`: `CheckpointStore.copy` on `src` (an open store, or what `open`
    takes, opened with `aes_key` and the `timeout` of the options)."""
    return _on(src, aes_key, options.get("timeout"), lambda store: store.copy(dst, **options))


def migrate(
    store: StoreLike, *, aes_key: str | bytes | None = None, **options: Unpack[MigrateOptions]
) -> MigrateRecord:
    """`ckpt migrate`: `CheckpointStore.migrate` on `store` (an open store, or what `open`
    takes)."""
    return _on(store, aes_key, options.get("timeout"), lambda opened: opened.migrate(**options))


def prune(
    store: StoreLike, *, aes_key: str | bytes | None = None, **options: Unpack[PruneOptions]
) -> PruneRecord:
    """`ckpt prune`: `CheckpointStore.prune` on `store` (an open store, or what `open` takes)."""
    return _on(store, aes_key, options.get("timeout"), lambda opened: opened.prune(**options))


def vacuum(
    store: StoreLike,
    *,
    into: str | os.PathLike[str] | None = None,
    apply: bool = False,
    timeout: float | None = None,
) -> VacuumRecord:
    """`ckpt vacuum`: `CheckpointStore.vacuum` on `store` (an open store, or what `open` takes)."""
    return _on(
        store, None, timeout, lambda opened: opened.vacuum(into=into, apply=apply, timeout=timeout)
    )


def find_store(folder: str | os.PathLike[str] | None = None) -> str:
    """The store `open(None)` opens: `$CKPT_DB`, else the one store in `folder` (default:
    the current folder). Raises StoreNotFound when there is none, or several."""
    from ckpt.stores import discover

    if folder is None and os.environ.get("CKPT_DB"):
        return os.environ["CKPT_DB"]
    return discover(Path(folder) if folder is not None else None)
