"""The one interface every kind of store meets: `Store` reads it, `Writer` changes it.

A new kind of store is a package under ckpt/stores that implements these two classes and
is opened by ckpt.stores.open_store; nothing outside ckpt/stores names a kind of store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ckpt.errors import BadOption, NotFound, NotSupported
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    Part,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
    WriteTotals,
)

if TYPE_CHECKING:
    from ckpt.records.migration import MigrationRows, Rewrite
    from ckpt.records.plans import Planner, Strategy, ThreadPlan, ThreadRows
    from ckpt.records.types import Reclaim, StorageRecord, VacuumReport


class Closes(ABC):
    """What holds a connection or a file: closed by `close()`, or on leaving a `with`."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def close_quietly(*clients: Any) -> None:
    """Close each client given (None: none): closing must not fail a command, so an error
    doing it (a server already gone) is dropped."""
    for client in clients:
        try:
            if client is not None:
                client.close()
        except Exception:  # closing must not fail a command
            pass


class Store(Closes):
    """A read-only view of one checkpoint store.

    Readers never write, never run code from the data, and raise only `ckpt.errors`
    exceptions. Every method returns fully decoded records (see ckpt.records.model).
    """

    kind: ClassVar[str]  # "sqlite", "pickle", "postgres"
    location: str  # for messages; never holds a password
    # Whether the raw scans list threads in Python's string order (SQLite's BINARY
    # collation, sorted dicts); Postgres sorts by its collation, which can differ.
    rows_in_python_order: ClassVar[bool] = True
    # How VACUUM gives deleted rows' space back (ckpt.records.Reclaim); None: no vacuum.
    reclaim: ClassVar[Reclaim | None] = None
    aes_key: bytes | None
    # Which store this is whatever the spelling of its location (a server's address,
    # database and prefix), for `copy` to refuse a target that is its source; None: the
    # location says it (files are compared resolved).
    identity: str | None = None
    # Whether its saver counts channel versions 1, 2, 3 (MongoDBSaver) rather than write
    # SqliteSaver's `f"{n:032}.{random}"` strings (format.md §3.4).
    counted_versions: ClassVar[bool] = False
    # Whether every value of its checkpoints (body, metadata, writes) comes from ckpt's
    # decoders (`decode` and `decode_metadata`), JSON-ready by their contract: dump then
    # writes its small records with orjson straight away (records.encode.ndjson_line).
    # False where a driver builds values of its own (JSONB numbers, BSON types).
    values_decoded: ClassVar[bool] = False
    notices: list[str]  # said once on stderr by the CLI (e.g. "this layout holds no values")

    def __init__(self, location: str, *, aes_key: bytes | None = None) -> None:
        self.location = location
        self.aes_key = aes_key
        self.notices = []
        self.refused: list[str] = []  # globals a pickle named, shown as refused values
        # Why a thread missing from this store may be there all the same: what holds the
        # threads was refused (a pickle's top-level dict under a refused BUILD); a lookup
        # that finds nothing says so (RefusedGlobal, exit 9), not "no thread matches".
        self.threads_refused: str | None = None

    # -- what it is ------------------------------------------------------------------------
    @property
    def era(self) -> str:
        """Which saver and release wrote the schema (format.md §4.1, 5.1, 6, 7): "current",
        "pre-task_path", "0.1", "shallow", "dev-folder" ... or "unknown"."""
        return "unknown"

    @property
    def era_note(self) -> str:
        """The era in words, for `ckpt types` (empty when there is nothing to say)."""
        return ""

    def saver(self) -> SaverFacts:
        """Which saver and releases wrote the store, read from its schema, migration rows
        or layout, and whether the current release of that saver reads it (`ckpt check`)."""
        return SaverFacts(
            saver="unknown",
            releases=self.era_note or self.era,
            evidence=(),
            langgraph="unknown",
            note="nothing in the store's layout says which release wrote it",
        )

    @property
    def blob_policy(self) -> str:
        """Which channel versions of a checkpoint name a stored value apart from it, for
        `ckpt check` to look for: "every" (one per version, `empty` ones included:
        InMemorySaver, ShallowPostgresSaver), "updated" (PostgresSaver: the values it does
        not keep inline) or "none" (values inside the body, or none kept)."""
        return "none"

    @property
    def copy_target(self) -> bool:
        """Whether `ckpt copy` can write into this store (a backup's threads copied back
        over damaged ones: the fix `ckpt check` suggests)."""
        return False

    @property
    def aggregate_limit(self) -> int | None:
        """The bytes of one checkpoint's pending writes, aggregated into one JSON text,
        that the saver's own read can take (MariaDB's group_concat_max_len under the MySQL
        saver, format.md §7e); None where the saver has no such limit."""
        return None

    # Whether `raw_writes` yields writes whose checkpoint is gone; stores that find writes
    # through their checkpoints' keys count those in `health` only.
    raw_writes_complete: ClassVar[bool] = True

    # -- listing ---------------------------------------------------------------------------
    # The `order`s `threads` can stream in (besides any order the caller sorts itself).
    thread_orders: frozenset[str] = frozenset()

    @abstractmethod
    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        """Every thread, from aggregates plus its latest root checkpoint (no channel values),
        streamed. `sizes=True` measures each thread's bytes (a scan of every row; None
        otherwise). `order` is "thread" (by id) or, when in `thread_orders`, "updated"
        (newest latest root checkpoint id first, then thread id descending); other
        stores yield thread order and the caller sorts."""

    def loaded_threads(
        self, *, sizes: bool = False, order: str = "thread"
    ) -> Iterator[ThreadSummary]:
        """`threads` with every latest root checkpoint read, for a kind whose `threads`
        reads only keys (DynamoDB: `listing_reads_latest` False); the same elsewhere."""
        return self.threads(sizes=sizes, order=order)

    # Whether `threads` reads each latest root checkpoint (its step, source, next and a
    # done or pending status); False: only what its keys tell (ckpt.analysis.threads asks
    # `loaded_threads` when a filter or order needs more).
    listing_reads_latest: ClassVar[bool] = True

    @abstractmethod
    def thread_exists(self, thread_id: str) -> bool: ...

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        """How many checkpoints `iter_checkpoints(query)` yields, when a cheap query can
        say (the total of dump's progress bar); None when it cannot."""
        return None

    def thread_ids(self) -> list[str]:
        """Every thread id, for the suggestions of an error (`did you mean`); stores with a
        query that reads only an index override it."""
        return [t.thread_id for t in self.threads()]

    @abstractmethod
    def namespaces(self, thread_id: str) -> list[str]:
        """The thread's checkpoint namespaces, sorted ('' is the root)."""

    @abstractmethod
    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        """All checkpoints of a thread in every namespace, with pending writes, oldest id
        first (by id, then namespace); `last`: only the newest `last` of that order."""

    def iter_thread(self, thread_id: str) -> Iterator[Checkpoint]:
        """`checkpoints(thread_id)` streamed, same order, no values: stores that can read a
        batch at a time keep memory flat however long the thread."""
        return iter(self.checkpoints(thread_id, values=False))

    # -- finding ---------------------------------------------------------------------------
    @abstractmethod
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        """Keys whose checkpoint_id starts or ends with `fragment` (at most FIND_LIMIT).

        Tables print the last 8 characters of an id (its random part) as the short id,
        and users paste prefixes of full ids: both must resolve.
        """

    def find_exact(self, checkpoint_id: str) -> list[CheckpointKey]:
        """Keys whose checkpoint_id is exactly `checkpoint_id` (a full id pasted): stores
        whose key index starts with the thread probe it per (thread, namespace)."""
        return [k for k in self.find(checkpoint_id) if k.checkpoint_id == checkpoint_id]

    @abstractmethod
    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        """The newest checkpoint of a (thread, namespace), as LangGraph picks it (max id)."""

    def latest_problems(
        self, newest: dict[tuple[str, str], str], *, settle: float = 0.0
    ) -> list[tuple[str, str, str, str]]:
        """Stores whose saver keeps its own pointer to each namespace's newest checkpoint
        (RedisSaver's `checkpoint_latest`), which its `get_tuple` starts from: given each
        (thread, namespace) and its newest checkpoint id as read, (thread, ns, newest id,
        what the pointer says instead) where it is missing or names another checkpoint.
        A pointer one step behind a recent checkpoint is asked again after `settle`
        seconds (a run may be putting it). None elsewhere: LangGraph picks the newest by id."""
        return []

    # -- loading ---------------------------------------------------------------------------
    @abstractmethod
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        """One checkpoint with its pending writes; raises NotFound."""

    def load_many(self, keys: Sequence[CheckpointKey], *, values: bool = True) -> list[Checkpoint]:
        """Several checkpoints by key, in the order of `keys`, missing ones left out; stores
        that can read them in a few statements override this one-by-one version."""
        found: list[Checkpoint] = []
        for key in keys:
            try:
                found.append(self.load(key, values=values))
            except NotFound:
                continue
        return found

    @abstractmethod
    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        """Stream checkpoints (thread, ns, id order) with flat memory, one decoded at a time."""

    # Whether `sizes` only adds up the sizes of the raw rows (raw_checkpoints, raw_blobs,
    # raw_writes): then a pass that reads them all counts them itself (ckpt.scan.rows.RowSizes)
    # from `thread_counts`, rather than reading every row twice.
    sizes_from_rows: ClassVar[bool] = False

    def thread_counts(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        """The threads `sizes` names, with at least their checkpoint counts (a pass's
        batches), as cheaply as the store can say it; bytes may be left at zero."""
        return self.sizes(query)

    def pass_sizes(self, query: DumpQuery) -> tuple[dict[str, ThreadBytes], bool]:
        """What a pass over every row (`ckpt check`) starts from, and whether it counts
        the sizes from its rows (RowSizes): `thread_counts` where `sizes` only adds up the
        raw rows' sizes (sizes_from_rows), else `sizes`."""
        if self.sizes_from_rows:
            return self.thread_counts(query), True
        return self.sizes(query), False

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        """Rows and bytes per thread, aggregated by the store (SQL where there is SQL).
        `threads` and `stats` both count with this, so their sizes always agree. This
        default counts from the raw scans, without their bytes."""
        found: dict[str, ThreadBytes] = {}
        parts: tuple[tuple[Part, Iterator[RawCheckpoint | RawBlob | RawWrite]], ...] = (
            ("checkpoint", self.raw_checkpoints(query, data=False)),
            ("blob", self.raw_blobs(query, data=False)),
            ("write", self.raw_writes(query, data=False)),
        )
        for part, rows in parts:
            for row in rows:
                found.setdefault(row.thread_id, ThreadBytes()).add(part, 1, row.size)
        return found

    @abstractmethod
    def storage(self) -> StorageRecord:
        """What the store takes, as the backend reports it (file and free pages; table,
        index and TOAST sizes; server memory; collections; pickle files), every kind in
        one shape (ckpt.records.storage_record): docs/json.md, "ckpt stats"."""

    @abstractmethod
    def health(self, query: DumpQuery) -> StoreHealth:
        """Rows that point at rows which are gone (only `query.thread_ids` is honoured)."""

    @contextmanager
    def one_pass(self, *, measure: bool = False) -> Iterator[None]:
        """Inside: one read-only pass (ckpt.scan.rows.scan), which lists each batch of
        threads more than once (checkpoints, writes, orphans). A store may keep what it
        listed last for the next listing of the same threads; it forgets it after.
        `measure`: the pass counts `sizes` from its rows (sizes_from_rows), so a store
        that measures its rows otherwise than their length says so in their `measured`."""
        yield

    def orphan_writes(self, query: DumpQuery) -> StoreHealth:
        """`health`'s orphan writes only (its other counts may be left at zero): what a
        scan asks of stores whose raw_writes do not find them (raw_writes_complete)."""
        return self.health(query)

    def write_totals(self, query: DumpQuery, keep: int) -> WriteTotals:
        """Pending writes by channel and namespace, and those on each namespace's newest
        checkpoint and newest `keep` (for the prune estimate). SQL stores aggregate it in
        the database; this default counts from the raw scans."""
        ranked: dict[tuple[str, str], list[str]] = {}
        for row in self.raw_checkpoints(query, data=False):
            ranked.setdefault((row.thread_id, row.checkpoint_ns), []).append(row.checkpoint_id)
        totals = WriteTotals()
        latest = [0, 0]
        last = [0, 0]
        for write in self.raw_writes(query, data=False):
            n, size = totals.by_channel.get(write.channel, (0, 0))
            totals.by_channel[write.channel] = (n + 1, size + write.size)
            ns = write.checkpoint_ns
            totals.by_namespace[ns] = totals.by_namespace.get(ns, 0) + write.size
            ids = ranked.get((write.thread_id, ns), [])
            if ids and write.checkpoint_id == ids[-1]:
                latest[0] += 1
                latest[1] += write.size
            if write.checkpoint_id in ids[-keep:]:
                last[0] += 1
                last[1] += write.size
        totals.on_latest, totals.on_last = (latest[0], latest[1]), (last[0], last[1])
        return totals

    # -- raw scans (stats, types): stored bytes, nothing decoded, flat memory --------------
    @abstractmethod
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        """Every checkpoint row in (thread, ns, id) order; `data=False`: sizes only."""

    def checkpoint_ids(self, query: DumpQuery) -> Iterator[Any]:
        """The id of each row `raw_checkpoints(query)` reads (what a check shared between
        processes reads again, ckpt.scan.split): a kind may read the ids alone."""
        return (row.checkpoint_id for row in self.raw_checkpoints(query, data=False))

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        """Every stored channel value in (thread, ns, channel, version) order, for stores
        that keep values apart from the checkpoint (Postgres, the pickle folder)."""
        return iter(())

    @abstractmethod
    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        """Every pending-write row in (thread, ns, checkpoint id, task, idx) order."""

    # -- changing it (prune, vacuum): each kind says what it allows ----------------------
    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        """Refuse, before anything is read, a prune this store cannot take: the kind
        (NotSupported, Unsafe), or the strategy or a backup it has no way to honour."""
        raise NotSupported(f"{self.location}: prune is not supported on {self.kind} stores yet")

    def thread_rows(self, thread_id: str) -> ThreadRows:
        """A thread's bookkeeping for the prune planner (ckpt.ops.prune), read on this
        read-only reader: the dry run plans from it."""
        raise NotSupported(f"{self.location}: prune is not supported on {self.kind} stores yet")

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        """What VACUUM would give back, as the store's engine counts it: the fields of
        `ckpt vacuum --json` but "store" and "applied" (docs/json.md)."""
        raise NotSupported(f"{self.location}: vacuum is not supported on {self.kind} stores yet")

    def check_copy(
        self, *, renumber_versions: bool = False, counted_versions: bool = False
    ) -> None:
        """Refuse, before anything is read, a `ckpt copy` from a store whose layout ckpt
        cannot carry exactly (NotSupported, naming why); stores that can say nothing.
        `renumber_versions`: the copy rewrites channel versions into the target's format;
        `counted_versions`: the target's saver counts versions 1, 2, 3 (MongoDBSaver)."""

    # Whether `copy_checkpoint`/`copy_write` encode the values again (RedisSaver's JSON
    # into serde msgpack) rather than carry the stored bytes.
    reencodes: ClassVar[bool] = False

    def copy_checkpoint(self, row: RawCheckpoint) -> RawCheckpoint:
        """A raw checkpoint as `ckpt copy` carries it: as stored, or for a store that keeps
        values in no serde form (RedisSaver's JSON) encoded as LangGraph's serializer
        encodes what its saver reads from it. Raises CopyRefused."""
        return row

    def copy_write(self, write: RawWrite) -> RawWrite | None:
        """A raw pending write as `ckpt copy` carries it (see `copy_checkpoint`); None for
        a write the store's saver never reads back (RedisSaver's behind a has_writes
        flag that is false), which the copy leaves out."""
        return write

    def check_migrate(self) -> None:
        """Refuse, before anything is read, a `ckpt migrate` of a kind of store ckpt does
        not write (NotSupported, exit 13)."""
        raise NotSupported(
            f"{self.location}: migrate is not supported on {self.kind} stores yet "
            "(SQLite and Postgres are); nothing changed"
        )

    def migration_rows(self, thread_id: str, *, latest: bool = False) -> MigrationRows:
        """Every row of a thread in the migration form (ckpt.records.migration), read on
        this read-only reader: `ckpt migrate` plans from it without --apply. `latest`: the
        newest checkpoint of each namespace is all a store must read (with its writes)."""
        raise NotSupported(
            f"{self.location}: migrate is not supported on {self.kind} stores yet "
            "(SQLite and Postgres are); nothing changed"
        )

    def langgraph_saver(self) -> AbstractContextManager[Any]:
        """LangGraph's own saver over this store (`migrate --graph` loads migrated threads
        through the user's graph with it): SqliteSaver, PostgresSaver. MissingDependency
        without their package; NotSupported where ckpt has none to offer."""
        raise NotSupported(f"{self.location}: no LangGraph saver for {self.kind} stores here")

    def writer(self, *, timeout: float | None) -> Writer:
        """A writable connection to this same store (closing this reader where its engine
        wants no reader beside the writer, as SQLite does). NotSupported or Unsafe where
        the kind cannot be changed safely."""
        raise NotSupported(f"{self.location}: {self.kind} stores cannot be changed yet")

    def change_token(self) -> Hashable | None:
        """A value that differs between two calls whenever the store may have changed in
        between (`--follow` reads nothing while it stays the same); None when the kind
        cannot tell cheaply, and every poll reads. May reconnect a reader opened on a
        snapshot that cannot see changes."""
        return None

    def dump_threads(self) -> list[tuple[str, int]] | None:
        """Every thread in the order `iter_checkpoints` reads them, with its checkpoint
        count, from an index: how `dump` shares its work between processes. None when the
        kind cannot be read by several processes at once (then `dump` uses one)."""
        return None

    def reading(self) -> AbstractContextManager[None]:
        """One read view for every call made inside it, where the kind has one (a SQLite
        read transaction); nothing where it has not."""
        return nullcontext()

    def shares_reading(self) -> bool:
        """Inside `reading()`: whether a reader made by `fork` in a forked process reads
        what this one reads (the same snapshot, or a store without snapshots whose rows
        the fork lists as this one does), so that several processes may share one pass."""
        return False

    def keep_alive(self) -> None:
        """Tell the backend that the read open in `reading()` is still wanted (while the
        dump waits for another process); nothing where no server ends idle reads."""

    def fork(self) -> Store | None:
        """Another reader of the same store, for work on another thread (its queries then
        overlap the caller's decoding); None when the backend cannot have two."""
        return None

    def encrypted_sample(self) -> tuple[str, bytes] | None:
        """One encrypted value of the store (tag, bytes), to check a key against; None when
        the store holds none or cannot find one cheaply."""
        return None

    def close(self) -> None:
        """Release connections and file handles."""


class Writer(Closes):
    """A writable connection to one store, from `Store.writer()`. Every change is one
    thread per transaction: a thread is changed whole or not at all, and a failure rolls
    back only the thread it happened in. Nothing else in ckpt changes a store."""

    location: str
    # `backup` copies the whole store (SQLite's online backup); else migrate backs the
    # threads it changes up with `ckpt copy`.
    backs_up_whole: ClassVar[bool] = False

    @abstractmethod
    def prune(self, thread_id: str, planner: Planner) -> ThreadPlan:
        """Read the thread's rows inside its transaction, plan with `planner` (ckpt.ops.prune)
        and carry the plan out there; the plan run. Each NamespacePlan says what goes: its
        `deleted` checkpoints with their writes (or the `whole` namespace), its
        `orphan_writes` (the writes of checkpoints already gone), its `blobs`, and the
        kept checkpoints whose parent is cleared (`parents_cleared`)."""

    def migrate(
        self, thread_id: str, rewrite: Rewrite, *, latest: bool = False
    ) -> tuple[MigrationRows, MigrationRows | None]:
        """Read the thread's rows inside its transaction, give them to `rewrite`
        (ckpt.ops.migrate) and write back what it returns; then read the thread again in
        the same transaction and roll it back (MigrationMismatch) if it differs from what
        was written. The rows as they were and as written (None: unchanged)."""
        raise NotSupported(f"{self.location}: migrate is not supported here yet; nothing changed")

    def backup(self, destination: Path) -> None:
        """A consistent copy of the whole store at `destination` (a new file)."""
        raise BadOption(f"{self.location}: `backup` is for SQLite stores")

    @abstractmethod
    def vacuum(self, into: Path | None) -> VacuumReport:
        """Give the space of deleted rows back; the record's fields but "store" and
        "applied", `before` and `after` filled (docs/json.md, `ckpt vacuum`)."""


@dataclass(frozen=True, slots=True)
class Carried:
    """A checkpoint in a target's layout: the row its ThreadSink takes, the bytes it
    stores, and the blobs it names ((ns, channel, version) -> the value's bytes; the sink
    writes each version once)."""

    row: Any
    size: int
    blobs: dict[tuple[str, str, str], bytes | None]


class Target(Closes):
    """A store `ckpt copy` writes threads into, in the layout of the saver that owns it:
    "inline" (SqliteSaver, MongoDBSaver: values inside the body), "split" (PostgresSaver:
    blobs) or "json" (RedisSaver: values as JSON inside its documents).

    Opening one changes nothing: a missing store or schema is created by `setup()`, which
    only an applied copy calls. Each thread is written in one transaction (`thread`): a
    copy stopped midway leaves every thread whole or absent."""

    location: str
    layout: ClassVar[str]
    # Whether the target's saver counts channel versions 1, 2, 3 (MongoDBSaver) rather
    # than SqliteSaver's strings.
    counted_versions: ClassVar[bool] = False
    identity: str | None = None  # as Store.identity
    # What the target holds before the copy: "new" (nothing yet: setup() creates the
    # saver's schema), or "ready" (the saver's schema is there).
    state: str
    notices: list[str]

    def carry(
        self,
        row: RawCheckpoint,
        blobs: Mapping[tuple[str, str, str], Any],
        sends: Mapping[str, list[Any]],
        *,
        renumber: bool = False,
    ) -> Carried:
        """A source checkpoint row in this target's layout (ckpt.stores.transfer), with the
        stored values it needs from `blobs` ((ns, channel, version) -> (tag, bytes)) and
        `sends` (checkpoint id -> its `__pregel_tasks` writes, where Postgres keeps a
        pre-v4 checkpoint's Sends); `renumber`: integer channel versions written as the
        target's saver writes its own. Raises CopyRefused for what cannot be carried."""
        from ckpt.stores.transfer import renumbered

        return self.laid_out(renumbered(row) if renumber else row, blobs, sends)

    def laid_out(
        self,
        row: RawCheckpoint,
        blobs: Mapping[tuple[str, str, str], Any],
        sends: Mapping[str, list[Any]],
    ) -> Carried:
        """`carry`'s row, its versions renumbered when asked, in this target's layout; a
        target whose saver counts versions its own way (MongoDBSaver) overrides `carry`."""
        raise NotImplementedError(f"{type(self).__name__} overrides carry")

    def carry_write(self, write: RawWrite) -> RawWrite:
        """A source pending write as this target stores its value (most keep the bytes as
        they are; RedisSaver's JSON does not). Raises CopyRefused."""
        return write

    @abstractmethod
    def check_writable(self, *, replace: bool) -> None:
        """Refuse, in a dry run too, a target this copy could not write (read-only, a hot
        standby, missing privileges; `replace`: deleting rows too), with the line the
        applied copy would stop at. Changes nothing."""

    @abstractmethod
    def setup(self) -> None:
        """Create the store and the saver's schema where missing (an applied copy only)."""

    @abstractmethod
    def existing(self, thread_ids: Sequence[str]) -> set[str]:
        """Which of these threads the target already holds (any row of theirs)."""

    @abstractmethod
    def thread(self, thread_id: str, *, replace: bool) -> ThreadSink:
        """A transaction that writes one thread; `replace` deletes its rows first."""


class ThreadSink(ABC):
    """One thread's transaction on a Target: rows go in, `commit()` makes them visible;
    leaving it any other way (an error, a kill) leaves the target as it was."""

    @abstractmethod
    def checkpoint(self, row: Any) -> None:
        """One checkpoint, as the target's `carry` made it."""

    @abstractmethod
    def write(self, write: RawWrite) -> None:
        """One pending write, its bytes as stored."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Send what is still buffered, inside the transaction: `commit()` then only ends
        it (ckpt.ops.copy holds Ctrl-C back for that moment alone)."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...
