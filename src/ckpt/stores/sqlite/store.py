"""Read SqliteSaver stores of every era without changing a byte of them (format.md §4)."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ckpt.errors import (
    CkptError,
    MissingDependency,
    NotACheckpointStore,
    NotFound,
    NotSupported,
    StoreUnreadable,
    Unsafe,
)
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
    WriteTotals,
)
from ckpt.records.types import StorageRecord, VacuumReport, storage_record
from ckpt.records.vocabulary import FIND_LIMIT, TOO_LARGE
from ckpt.stores.base import Store, Writer
from ckpt.stores.body import (
    checkpoint_from_body,
    decode_metadata,
    decode_value,
    sort_writes,
)
from ckpt.stores.sqlite.aggregates import bytes_of as _bytes
from ckpt.stores.sqlite.aggregates import (
    checkpoint_ids,
    key_counts,
    plain_row,
    store_health,
    thread_counts,
    write_totals,
)
from ckpt.stores.sqlite.connection import FIRST_BATCH, connect, file_pages, rows, translate
from ckpt.stores.sqlite.saver import ERAS as _ERAS
from ckpt.stores.sqlite.saver import SAVER_RELEASE as SAVER_RELEASE
from ckpt.stores.sqlite.saver import SAVERS as _SAVERS

if TYPE_CHECKING:
    from ckpt.records.migration import MigrationRows
    from ckpt.records.plans import Strategy, ThreadRows

T = TypeVar("T")
THREADS_PER_BATCH = 200  # latest checkpoints fetched per statement by `threads`
KEYS_PER_BATCH = 200  # checkpoints fetched per statement by `load_many` (3 parameters each)
PROBE_STEPS = 10000  # steps (about 2 per namespace) `find_exact` walks before it scans


# Metadata larger than this is not fetched (issue 29: a 300 MB metadata row ran a read out
# of memory): SQLite knows a value's length without reading it, and the row's metadata
# reads as a `too_large` record that says how large it is (vocabulary.TOO_LARGE, docs/json.md).
METADATA_LIMIT: Final = 16 << 20
# A checkpoint body (all of its channel values) larger than this is not fetched either: it
# reads as a `too_large` record, its thread still listed and its other checkpoints shown.
BODY_LIMIT: Final = 128 << 20
# SQLite calls the progress handler (the --timeout check) every this many VM instructions.
PROGRESS_STEPS: Final = 1_000
_BODY: Final = (
    f"CASE WHEN length(checkpoint) > {BODY_LIMIT} THEN CAST(char(0) || "
    f"'{TOO_LARGE[1:].decode()}' || length(checkpoint) AS BLOB) ELSE checkpoint END AS checkpoint"
)
# Flaws of a raw row (RawCheckpoint.flaws): a value SQLite keeps as TEXT, which sqlite3
# hands LangGraph as a str its loader cannot unpack.
_TEXT_BODY: Final = ("the body is stored as TEXT, not a BLOB",)
_TEXT_VALUE: Final = ("the value is stored as TEXT, not a BLOB",)
_METADATA: Final = (
    f"CASE WHEN length(metadata) > {METADATA_LIMIT} THEN CAST(char(0) || "
    f"'{TOO_LARGE[1:].decode()}' || length(metadata) AS BLOB) ELSE metadata END AS metadata"
)


class SqliteStore(Store):
    """A SqliteSaver file: current, 2.x (no task_path), 1.x (`json` tag) or 0.1.x (thread_ts)."""

    kind = "sqlite"
    reclaim = "file"
    values_decoded = True  # bodies and writes by `decode`, metadata by decode_metadata
    thread_orders = frozenset({"thread", "updated"})

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        aes_key: bytes | None = None,
        timeout: float | None = None,
    ) -> None:
        """`timeout`: seconds SQLite may step one statement, or fetch one batch of its rows,
        before the read stops with one line (`--timeout`; None: no limit, as a legitimate
        aggregate over a 20 GB store may take longer than any default)."""
        super().__init__(str(path), aes_key=aes_key)
        self.path = Path(path)
        self._link = connect(self.path)
        self.conn = self._link.conn
        self._reading = 0  # methods inside the open read transaction (`_snapshot`)
        self._links = 1  # connections opened (change_token)
        self._timeout = timeout
        self._told_large = False
        self._deadline = math.inf  # set while _run or _stream steps a statement
        if timeout is not None:
            self.conn.set_progress_handler(self._over_time, PROGRESS_STEPS)
        try:
            self._detect_schema()
        except BaseException:
            self._link.close()
            raise

    @property
    def era(self) -> str:
        return self._era

    @property
    def era_note(self) -> str:
        return _ERAS.get(self._era, "")

    def saver(self) -> SaverFacts:
        facts = _SAVERS[self._era]
        if self._era != "0.1" and not self.has_writes:
            facts = SaverFacts(
                facts.saver,
                facts.releases,
                (*facts.evidence, "no writes table"),
                "migrates",
                f"{SAVER_RELEASE} reads it once its setup() creates the writes table (on "
                "first use)",
            )
        return facts

    @property
    def copy_target(self) -> bool:
        return self._era != "0.1"

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction around the statements of a method, so that they all see
        the same commit while an application writes. Re-entrant; a generator holds it
        while it streams, and ends it when it is exhausted or closed."""
        began = self._reading == 0 and not self.conn.in_transaction
        if began:
            try:
                self.conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise self._error(exc) from None
        self._reading += 1
        try:
            yield
        finally:
            self._reading -= 1
            if began:
                try:
                    self.conn.execute("COMMIT")  # ends a read: nothing is written
                except sqlite3.Error:
                    pass

    def _error(self, exc: sqlite3.Error) -> CkptError:
        if self._timeout is not None and "interrupted" in str(exc):
            return StoreUnreadable(
                f"{self.location}: a read ran past the {self._timeout:g} s `timeout` (a slow "
                "schema, or a very large store); allow more with `timeout`"
            )
        if self._link.changed():
            return StoreUnreadable(
                f"{self.location}: the file changed while it was read (a writer attached to "
                "a store in a folder ckpt cannot create side files in); try again"
            )
        return translate(exc, self.location)

    # -- schema ----------------------------------------------------------------------------
    def _detect_schema(self) -> None:
        tables = {
            name for (name,) in self._run("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "checkpoints" not in tables:
            raise NotACheckpointStore(
                f"{self.location}: SQLite, but not a LangGraph checkpoint store "
                "(no `checkpoints` table)"
            )
        columns = self._columns("checkpoints")
        write_columns = self._columns("writes") if "writes" in tables else set()
        self.has_writes = "writes" in tables
        if "thread_ts" in columns:
            # langgraph <= 0.1.x: no namespace, no type column, ids in thread_ts (format.md §4.1).
            self._era = "0.1"
            self._cp_cols = (
                "thread_id, '' AS checkpoint_ns, thread_ts AS checkpoint_id, "
                f"parent_ts AS parent_checkpoint_id, NULL AS type, {_BODY}, {_METADATA}"
            )
            self._id, self._ns = "thread_ts", "''"
            self._w_id, self._w_ns = "thread_ts", "''"
            self._w_cols = "task_id, '' AS task_path, idx, channel, NULL AS type, value"
        elif {"checkpoint_id", "checkpoint_ns", "checkpoint"} <= columns:
            self._era = "current" if "task_path" in write_columns else "pre-task_path"
            self._cp_cols = (
                "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                f"{_BODY}, {_METADATA}"
            )
            self._id, self._ns = "checkpoint_id", "checkpoint_ns"
            self._w_id, self._w_ns = "checkpoint_id", "checkpoint_ns"
            task_path = "task_path" if "task_path" in write_columns else "'' AS task_path"
            self._w_cols = f"task_id, {task_path}, idx, channel, type, value"
        else:
            raise NotACheckpointStore(
                f"{self.location}: has a `checkpoints` table, but not one LangGraph wrote"
            )

    def _columns(self, table: str) -> set[str]:
        """The table's column names. A generated column (table_xinfo's hidden 2 or 3) is
        refused: LangGraph's schemas have none, and one whose expression is slow would
        make every read of the store slow (issue 29)."""
        columns = set()
        for row in self._run(f"PRAGMA table_xinfo({table})"):
            if row[6] in (2, 3):
                raise NotACheckpointStore(
                    f"{self.location}: the store's schema is not LangGraph's: "
                    f"generated column {table}.{row[1]}"
                )
            columns.add(row[1])
        return columns

    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            self._deadline = self._start()
            return list(rows(self.conn, sql, params))
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            self._deadline = math.inf

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of one statement; with a `timeout`, each fetch of them is timed, not the
        time the caller takes between rows."""
        found = rows(self.conn, sql, params)
        try:
            if self._timeout is None:  # nothing to time: the deadline stays at infinity
                yield from found
                return
            while True:
                self._deadline = self._start()
                try:
                    row = next(found)
                except StopIteration:
                    return
                self._deadline = math.inf
                yield row
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            self._deadline = math.inf
            close = getattr(found, "close", None)
            if close is not None:
                close()

    def _start(self) -> float:
        return math.inf if self._timeout is None else time.monotonic() + self._timeout

    def _over_time(self) -> int:
        """SQLite's progress handler: non-zero stops the statement (`interrupted`)."""
        return 1 if time.monotonic() > self._deadline else 0

    # -- listing ---------------------------------------------------------------------------
    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        with self._snapshot():
            yield from self._threads(sizes=sizes, order=order)

    def _threads(self, *, sizes: bool, order: str) -> Iterator[ThreadSummary]:
        # One statement: the thread, its counts, namespaces and latest root id come from
        # the primary-key index alone (SQL sorts these narrow rows when asked for the
        # newest first), and each thread's latest root checkpoint is joined to its row by
        # a primary-key search, streamed, so memory stays flat and a caller that stops
        # early (`--limit`) reads no more bodies. Whether that checkpoint has writes is
        # one more key search; the few that have are then read a batch of threads at a
        # time. Sizes and the thread's write rows (`sizes=True`) need a scan of every row,
        # and of the writes' key index (larger than the checkpoints'); `ckpt stats` is
        # where they belong.
        ns, cid = self._ns, self._id
        thread_bytes = self._size_rows(self.conn, DumpQuery()) if sizes else None
        # LIMIT -1 (none) keeps the subquery's ORDER BY, which SQLite may otherwise drop
        # in a join; the join's outer loop is the subquery, so its order is the output's.
        order_by = "latest_root DESC, thread_id DESC" if order == "updated" else "thread_id"
        w_ns = "''" if self.era == "0.1" else f"w.{self._w_ns}"  # 0.1: a literal ''
        has_writes = (
            f"EXISTS (SELECT 1 FROM writes w WHERE w.thread_id = a.thread_id "
            f"AND {w_ns} = '' AND w.{self._w_id} = a.latest_root)"
            if self.has_writes
            else "0"
        )
        latest = self._stream(
            # json_group_array, not group_concat: a namespace holds any character a node
            # name may, commas included.
            # `found`: the row factory gives a NULL thread_id as '' (ckpt.stores.columns).
            f"SELECT a.thread_id, a.n, a.namespaces, {has_writes}, "
            f"k.thread_id IS NOT NULL AS found, k.* FROM ("
            f"SELECT thread_id, count(*) AS n, json_group_array(DISTINCT {ns}) AS namespaces, "
            f"max(CASE WHEN {ns} = '' THEN {cid} END) AS latest_root "
            f"FROM checkpoints GROUP BY thread_id ORDER BY {order_by} LIMIT -1) a "
            f"LEFT JOIN (SELECT {self._cp_cols} FROM checkpoints) k "
            f"ON k.thread_id = a.thread_id AND k.checkpoint_ns = '' "
            f"AND k.checkpoint_id = a.latest_root"
        )
        previous = None
        for chunk in _batched(latest, THREADS_PER_BATCH, first=FIRST_BATCH):
            writes = self._latest_writes([(row[0], row[7]) for row in chunk if row[3]])
            for thread_id, count, namespaces, _, found, *row in chunk:
                if thread_id == previous:
                    continue  # its latest row stored twice (a store without its primary key)
                previous = thread_id
                # A thread with only subgraph checkpoints has no state of its own.
                checkpoint = None
                if found:
                    checkpoint = self._checkpoint(
                        row, sort_writes(writes.get(thread_id, [])), values=False, tolerant=True
                    )
                sized = thread_bytes.get(thread_id) if thread_bytes is not None else None
                yield ThreadSummary(
                    thread_id=thread_id,
                    namespaces=sorted(_json_list(namespaces)) or [""],
                    checkpoints=count,
                    writes=None if thread_bytes is None else (sized.writes if sized else 0),
                    size=None if thread_bytes is None else (sized.total if sized else 0),
                    latest=checkpoint,
                )

    def _latest_writes(self, keys: list[tuple[str, str]]) -> dict[str, list[PendingWrite]]:
        """The writes of the root checkpoints (thread, id) name: a join on a VALUES list,
        which SQLite serves by primary-key searches (a row-value IN would scan)."""
        writes: dict[str, list[PendingWrite]] = {}
        if not keys:
            return writes
        values = ", ".join("(?, ?)" for _ in keys)
        for row in self._run(
            f"SELECT thread_id, {self._w_cols} FROM (VALUES {values}) k CROSS JOIN writes "
            f"ON thread_id = k.column1 AND {self._w_ns} = '' AND {self._w_id} = k.column2",
            [part for key in keys for part in key],
        ):
            writes.setdefault(row[0], []).append(self._write(row[1:]))
        return writes

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        with self._snapshot():
            return self._size_rows(self.conn, query)

    def pass_sizes(self, query: DumpQuery) -> tuple[dict[str, ThreadBytes], bool]:
        # `sizes` adds up the lengths raw_checkpoints and raw_writes read: the pass counts
        # them (RowSizes) instead of a scan of every row before it, unless an id is one
        # the rows cannot be listed by (sized then, never read, as `sizes` has it).
        with self._snapshot():
            counts = thread_counts(self, query)
        return (counts, True) if counts is not None else (self.sizes(query), False)

    def _size_rows(self, conn: sqlite3.Connection, query: DumpQuery) -> dict[str, ThreadBytes]:
        # Reads every row's header (never its blob): length() takes the size from there.
        where, params = self._dump_filter(query, self._id, self._ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        found: dict[str, ThreadBytes] = {}
        timed = conn is self.conn  # the reader's own connection: under --timeout
        try:
            if timed:
                self._deadline = self._start()
            for thread_id, count, size in rows(
                conn,
                f"SELECT thread_id, count(*), sum(coalesce({_bytes('checkpoint')}, 0) "
                f"+ coalesce({_bytes('metadata')}, 0)) FROM checkpoints{clause} "
                "GROUP BY thread_id",
                params,
            ):
                found[thread_id] = ThreadBytes(checkpoints=count, checkpoint_bytes=size or 0)
            if self.has_writes:
                where, params = self._dump_filter(query, self._w_id, self._w_ns)
                clause = f" WHERE {' AND '.join(where)}" if where else ""
                for thread_id, count, size in rows(
                    conn,
                    f"SELECT thread_id, count(*), sum(coalesce({_bytes('value')}, 0)) "
                    f"FROM writes{clause} GROUP BY thread_id",
                    params,
                ):
                    sized = found.setdefault(thread_id, ThreadBytes())
                    sized.writes, sized.write_bytes = count, size or 0
        except sqlite3.Error as exc:
            raise (self._error(exc) if timed else translate(exc, self.location)) from None
        finally:
            if timed:
                self._deadline = math.inf
        return found

    def thread_exists(self, thread_id: str) -> bool:
        return bool(
            self._run("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (thread_id,))
        )

    def thread_ids(self) -> list[str]:
        rows = self._run("SELECT DISTINCT thread_id FROM checkpoints")
        return [row[0] for row in rows if isinstance(row[0], str)]

    def namespaces(self, thread_id: str) -> list[str]:
        rows = self._run(
            f"SELECT DISTINCT {self._ns} FROM checkpoints WHERE thread_id = ?", (thread_id,)
        )
        return sorted(str(row[0]) for row in rows)

    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        with self._snapshot():
            return self._thread_checkpoints(thread_id, values=values, last=last)

    def _thread_checkpoints(
        self, thread_id: str, *, values: bool, last: int | None = None
    ) -> list[Checkpoint]:
        ns, cid = self._ns, self._id
        # DISTINCT: a store that lost its primary key may hold a key twice, and each row
        # (and write) is read once, not once per copy of its key.
        if last is None:
            keys = f"SELECT DISTINCT {ns} AS kn, {cid} AS ki FROM checkpoints WHERE thread_id = ?"
        else:
            # The newest `last` keys from the thread's part of the key index; then only
            # their rows and their writes are read, by primary key.
            keys = (
                f"SELECT DISTINCT {ns} AS kn, {cid} AS ki FROM checkpoints WHERE thread_id = ? "
                f"ORDER BY {cid} DESC, {ns} DESC LIMIT {max(int(last), 0)}"
            )
        rows = self._run(
            f"SELECT {self._cp_cols} FROM ({keys}) k CROSS JOIN checkpoints "
            f"ON thread_id = ? AND {ns} = k.kn AND {cid} = k.ki ORDER BY {cid}, {ns}",
            (thread_id, thread_id),
        )
        writes: dict[tuple[str, str], list[PendingWrite]] = {}
        if self.has_writes and rows:
            grouped: dict[tuple[str, str], list[PendingWrite]] = {}
            for row in self._run(
                f"SELECT {self._w_ns}, {self._w_id}, {self._w_cols} FROM ({keys}) k "
                f"CROSS JOIN writes ON thread_id = ? AND {self._w_ns} = k.kn "
                f"AND {self._w_id} = k.ki",
                (thread_id, thread_id),
            ):
                grouped.setdefault((row[0], row[1]), []).append(self._write(row[2:]))
            writes = {k: sort_writes(v) for k, v in grouped.items()}
        return [
            self._checkpoint(row, writes.get((row[1], row[2]), []), values=values, tolerant=True)
            for row in rows
        ]

    def iter_thread(self, thread_id: str) -> Iterator[Checkpoint]:
        with self._snapshot():
            # The thread's keys (small) in (id, namespace) order, then its rows and their
            # writes a batch at a time, by primary key.
            ns, cid = self._ns, self._id
            keys = self._run(
                f"SELECT {ns}, {cid} FROM checkpoints WHERE thread_id = ? ORDER BY {cid}, {ns}",
                (thread_id,),
            )
            for chunk in _batched(keys, THREADS_PER_BATCH):
                values = ", ".join("(?, ?)" for _ in chunk)
                params = [*(part for key in chunk for part in key), thread_id]
                rows = {
                    (row[1], row[2]): row
                    for row in self._run(
                        f"SELECT {self._cp_cols} FROM (VALUES {values}) k CROSS JOIN "
                        f"checkpoints ON thread_id = ? AND {ns} = k.column1 "
                        f"AND {cid} = k.column2",
                        params,
                    )
                }
                grouped: dict[tuple[str, str], list[PendingWrite]] = {}
                if self.has_writes:
                    for row in self._run(
                        f"SELECT {self._w_ns}, {self._w_id}, {self._w_cols} FROM "
                        f"(VALUES {values}) k CROSS JOIN writes ON thread_id = ? "
                        f"AND {self._w_ns} = k.column1 AND {self._w_id} = k.column2",
                        params,
                    ):
                        grouped.setdefault((row[0], row[1]), []).append(self._write(row[2:]))
                for key in chunk:
                    row = rows.get((key[0], key[1]))
                    if row is not None:
                        writes = sort_writes(grouped.get((key[0], key[1]), []))
                        yield self._checkpoint(row, writes, values=False, tolerant=True)

    # -- finding ---------------------------------------------------------------------------
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        # A range on the id keeps a prefix search on the primary key; the suffix (short id)
        # search scans the key index only.
        escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        sql = (
            f"SELECT thread_id, {self._ns}, {self._id} FROM checkpoints "
            f"WHERE (({self._id} >= ? AND {self._id} < ?) OR {self._id} LIKE ? ESCAPE '\\')"
        )
        params: list[Any] = [fragment, fragment + "\uffff", "%" + escaped]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        return [CheckpointKey(*row) for row in self._run(f"{sql} LIMIT {FIND_LIMIT}", params)]

    def find_exact(self, checkpoint_id: str) -> list[CheckpointKey]:
        # The primary key is (thread_id, checkpoint_ns, checkpoint_id): no index serves the
        # id alone, and SQLite skips through a key's leading columns only with ANALYZE
        # statistics, which a read-only reader cannot write. So the statement does that
        # skip-scan itself: a recursive walk from one (thread, namespace) to the next (an
        # index search each), and a primary-key search for the id in every one. That
        # reads a few pages per namespace instead of the whole key index: far less on
        # long threads, but no less once namespaces are many and short, so after
        # PROBE_STEPS steps it gives up and `find` scans the key index instead.
        cid = self._id
        c_ns = "''" if self.era == "0.1" else f"c.{self._ns}"  # 0.1: a literal ''
        if self.era == "0.1":  # one namespace: (thread_id, thread_ts) is the key
            step = (
                "SELECT (SELECT thread_id FROM checkpoints WHERE thread_id > p.t "
                "ORDER BY thread_id LIMIT 1), '', "
            )
            start = "SELECT min(thread_id), '', 0 FROM checkpoints"
        else:
            # (t, NULL) enters a thread; (t, n) moves to its next namespace, or to the
            # next thread when n was its last.
            first_ns = (
                "(SELECT checkpoint_ns FROM checkpoints WHERE thread_id = p.t "
                "ORDER BY checkpoint_ns LIMIT 1)"
            )
            next_ns = (
                "(SELECT checkpoint_ns FROM checkpoints WHERE thread_id = p.t "
                "AND checkpoint_ns > p.n ORDER BY checkpoint_ns LIMIT 1)"
            )
            next_thread = (
                "(SELECT thread_id FROM checkpoints WHERE thread_id > p.t "
                "ORDER BY thread_id LIMIT 1)"
            )
            step = (
                f"SELECT CASE WHEN p.n IS NULL OR {next_ns} IS NOT NULL THEN p.t "
                f"ELSE {next_thread} END, "
                f"CASE WHEN p.n IS NULL THEN {first_ns} ELSE {next_ns} END, "
            )
            start = "SELECT min(thread_id), NULL, 0 FROM checkpoints"
        rows = self._run(
            f"WITH RECURSIVE p(t, n, k) AS ({start} UNION ALL {step}p.k + 1 FROM p "
            f"WHERE p.t IS NOT NULL AND p.k < {PROBE_STEPS}) "
            f"SELECT c.thread_id, {c_ns}, c.{cid} FROM p LEFT JOIN checkpoints c "
            f"ON c.thread_id = p.t AND {c_ns} = p.n AND c.{cid} = ? "
            f"WHERE c.thread_id IS NOT NULL OR (p.k = {PROBE_STEPS} AND p.t IS NOT NULL)",
            (checkpoint_id,),
        )
        if any(row[0] is None for row in rows):  # too many namespaces to walk
            return super().find_exact(checkpoint_id)
        return [CheckpointKey(*row) for row in rows]

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        rows = self._run(
            f"SELECT {self._id} FROM checkpoints WHERE thread_id = ? AND {self._ns} = ? "
            f"ORDER BY {self._id} DESC LIMIT 1",
            (thread_id, checkpoint_ns),
        )
        return CheckpointKey(thread_id, checkpoint_ns, rows[0][0]) if rows else None

    # -- loading ---------------------------------------------------------------------------
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        with self._snapshot():
            return self._load_one(key, values=values)

    def _load_one(self, key: CheckpointKey, *, values: bool) -> Checkpoint:
        rows = self._run(
            f"SELECT {self._cp_cols} FROM checkpoints "
            f"WHERE thread_id = ? AND {self._ns} = ? AND {self._id} = ?",
            (key.thread_id, key.checkpoint_ns, key.checkpoint_id),
        )
        if not rows:
            raise NotFound(f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}")
        writes = self._writes(key) if self.has_writes else []
        return self._checkpoint(rows[0], writes, values=values, tolerant=not values)

    def load_many(self, keys: Sequence[CheckpointKey], *, values: bool = True) -> list[Checkpoint]:
        # Joins on a VALUES list of keys, a batch at a time: primary-key searches, for the
        # rows and for their writes.
        found: dict[tuple[str, str, str], Checkpoint] = {}
        wanted = [(k.thread_id, k.checkpoint_ns, k.checkpoint_id) for k in keys]
        with self._snapshot():
            for chunk in _batched(wanted, KEYS_PER_BATCH):
                listed = "(VALUES " + ", ".join("(?, ?, ?)" for _ in chunk) + ") k"
                params = [part for key in chunk for part in key]
                writes: dict[tuple[str, str, str], list[PendingWrite]] = {}
                if self.has_writes:
                    for row in self._run(
                        f"SELECT k.column1, k.column2, k.column3, {self._w_cols} FROM {listed} "
                        f"CROSS JOIN writes ON thread_id = k.column1 AND {self._w_ns} = "
                        f"k.column2 AND {self._w_id} = k.column3",
                        params,
                    ):
                        writes.setdefault(tuple(row[:3]), []).append(self._write(row[3:]))
                for row in self._run(
                    f"SELECT k.column1, k.column2, k.column3, {self._cp_cols} FROM {listed} "
                    f"CROSS JOIN checkpoints ON thread_id = k.column1 AND {self._ns} = "
                    f"k.column2 AND {self._id} = k.column3",
                    params,
                ):
                    key = (row[0], row[1], row[2])
                    found[key] = self._checkpoint(
                        row[3:],
                        sort_writes(writes.get(key, [])),
                        values=values,
                        tolerant=not values,
                    )
        return [found[k] for k in wanted if k in found]

    def _writes(self, key: CheckpointKey) -> list[PendingWrite]:
        rows = self._run(
            f"SELECT {self._w_cols} FROM writes "
            f"WHERE thread_id = ? AND {self._w_ns} = ? AND {self._w_id} = ?",
            (key.thread_id, key.checkpoint_ns, key.checkpoint_id),
        )
        return sort_writes(self._write(row) for row in rows)

    def _write(self, row: Sequence[Any]) -> PendingWrite:
        task_id, task_path, idx, channel, tag, value = row
        blob = bytes(value) if value is not None else None
        return PendingWrite(
            task_id=task_id,
            task_path=task_path or "",
            idx=idx,
            channel=channel,
            type=tag,
            value=decode_value(tag, blob, self.aes_key, legacy_untyped=self.era == "0.1"),
            size=len(blob) if blob is not None else 0,
        )

    def _checkpoint(
        self, row: Sequence[Any], writes: list[PendingWrite], *, values: bool, tolerant: bool
    ) -> Checkpoint:
        thread_id, checkpoint_ns, checkpoint_id, parent_id, tag, body, metadata = row
        body_bytes = bytes(body) if body is not None else b""
        meta_bytes = bytes(metadata) if metadata is not None else b""
        if body_bytes.startswith(TOO_LARGE) and not self._told_large:
            self._told_large = True
            self.notices.append(
                f"checkpoint {checkpoint_id} of thread {thread_id!r} (and maybe others): its "
                f"body is {int(body_bytes[len(TOO_LARGE) :]):,} bytes, over the "
                f"{BODY_LIMIT >> 20} MB ckpt reads; shown as too_large"
            )
        return checkpoint_from_body(
            CheckpointKey(thread_id, checkpoint_ns, checkpoint_id),
            parent_id,
            tag if self.era != "0.1" else None,
            body_bytes,
            decode_metadata(meta_bytes),
            writes=writes,
            values=values,
            aes_key=self.aes_key,
            size=len(body_bytes) + len(meta_bytes),
            tolerant=tolerant,
            # The body is LangGraph's own serialization of the checkpoint: `channel_values`
            # keep the graph's channel order, which LangGraph's task order follows.
            keeps_order=True,
        )

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        with self._snapshot():
            yield from self._iter_checkpoints(query, values=values)

    def _iter_checkpoints(self, query: DumpQuery, *, values: bool) -> Iterator[Checkpoint]:
        where, params = self._dump_filter(query, self._id, self._ns)
        if query.latest_only:
            same_ns = (
                "" if self.era == "0.1" else " AND c2.checkpoint_ns = checkpoints.checkpoint_ns"
            )
            where.append(
                f"{self._id} = (SELECT max(c2.{self._id}) FROM checkpoints c2 "
                f"WHERE c2.thread_id = checkpoints.thread_id{same_ns})"
            )
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        order = f"ORDER BY thread_id, {self._ns}, {self._id}"
        rows = self._stream(f"SELECT {self._cp_cols} FROM checkpoints{clause} {order}", params)
        writes = self._stream_writes(query) if self.has_writes else iter(())
        for row, raw_writes in _merge_writes(rows, writes):
            row_writes = sort_writes(self._write(w) for w in raw_writes)
            yield self._checkpoint(row, row_writes, values=values, tolerant=False)

    def _stream_writes(self, query: DumpQuery) -> Iterator[tuple[tuple[str, str, str], Any]]:
        where, params = self._dump_filter(query, self._w_id, self._w_ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = (
            f"SELECT thread_id, {self._w_ns}, {self._w_id}, {self._w_cols} FROM writes{clause} "
            f"ORDER BY thread_id, {self._w_ns}, {self._w_id}"
        )
        for row in self._stream(sql, params):
            yield (row[0], row[1], row[2]), row[3:]

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        # From the primary-key index; inside a dump's own read transaction it counts the
        # snapshot the dump streams.
        where, params = self._dump_filter(query, self._id, self._ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT count(*) FROM checkpoints{clause}"
        if query.latest_only:
            # The newest of each (thread, ns), then the id range: as the dump filters.
            keys = DumpQuery(thread_ids=query.thread_ids, checkpoint_ns=query.checkpoint_ns)
            where, params = self._dump_filter(keys, self._id, self._ns)
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            ranges, bounds = self._dump_filter(
                DumpQuery(since_id=query.since_id, until_id=query.until_id), "m", ""
            )
            newest = (
                f"SELECT max({self._id}) AS m FROM checkpoints{clause} "
                f"GROUP BY thread_id, {self._ns}"
            )
            outer = f" WHERE {' AND '.join(ranges)}" if ranges else ""
            sql, params = f"SELECT count(*) FROM ({newest}){outer}", [*params, *bounds]
        rows = self._run(sql, params)
        return int(rows[0][0]) if rows else None

    def _dump_filter(
        self, query: DumpQuery, id_col: str, ns_col: str
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if query.thread_ids:
            where.append(f"thread_id IN ({', '.join('?' for _ in query.thread_ids)})")
            params.extend(query.thread_ids)
        if query.checkpoint_ns is not None:
            where.append(f"{ns_col} = ?")
            params.append(query.checkpoint_ns)
        bounds, bound_params = query.id_bounds(id_col, "?")
        return where + bounds, params + bound_params

    def storage(self) -> StorageRecord:
        try:
            pages = file_pages(self.path, self._pragma)
        except OSError as exc:
            raise StoreUnreadable(f"{self.location}: cannot read ({exc.strerror})") from None
        return storage_record((pages["file_bytes"] or 0) + (pages["wal_bytes"] or 0), pages=pages)

    def _pragma(self, pragma: str) -> Any:
        return self._run(pragma)[0][0]

    def write_totals(self, query: DumpQuery, keep: int) -> WriteTotals:
        with self._snapshot():
            return write_totals(self, query, keep)

    def health(self, query: DumpQuery) -> StoreHealth:
        with self._snapshot():
            return store_health(self, query)

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        where, params = self._dump_filter(query, self._id, self._ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        tag = "type" if self.era != "0.1" else "NULL"
        # length() reads a blob's size from its record header, never the blob itself.
        # Metadata over METADATA_LIMIT is not fetched (the too_large sentinel), as when
        # checkpoints are loaded: a scan of every row must not hold one 300 MB value.
        columns = (
            f"{_BODY}, {_METADATA}, {_bytes('checkpoint')}, {_bytes('metadata')}"
            if data
            else f"NULL, NULL, {_bytes('checkpoint')}, {_bytes('metadata')}"
        )
        # A body kept as TEXT reads as bytes here, and as a str LangGraph cannot unpack.
        columns += ", typeof(checkpoint) = 'text'"
        parent = "parent_ts" if self.era == "0.1" else "parent_checkpoint_id"
        plain = plain_row(
            text=("thread_id", self._ns, self._id),
            optional_text=(parent, tag),
            blobs=("checkpoint", "metadata"),
        )
        sql = (
            f"SELECT thread_id, {self._ns}, {self._id}, {parent}, {tag}, {columns}, {plain} "
            f"FROM checkpoints{clause} ORDER BY thread_id, {self._ns}, {self._id}"
        )
        for row in self._stream(sql, params):
            (thread_id, ns, checkpoint_id, parent, kind, body, metadata, body_len, meta_len, text,
             _) = row  # fmt: skip
            yield RawCheckpoint(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=parent,
                type=kind,
                body=bytes(body) if body is not None else b"",
                metadata_type="json",
                metadata=bytes(metadata) if metadata is not None else b"",
                body_size=body_len or 0,
                metadata_size=meta_len or 0,
                flaws=_TEXT_BODY if text else (),
            )

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        if not self.has_writes:
            return
        where, params = self._dump_filter(query, self._w_id, self._w_ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        tag = "type" if self.era != "0.1" else "NULL"
        value = "value" if data else "NULL"
        task_path = "task_path" if self._era == "current" else "''"
        plain = plain_row(
            text=("thread_id", self._w_ns, self._w_id, "task_id", "channel", task_path),
            optional_text=(tag,),
            blobs=("value",),
            integers=("idx",),
        )
        sql = (
            f"SELECT thread_id, {self._w_ns}, {self._w_id}, task_id, idx, channel, {tag}, "
            f"{value}, {_bytes('value')}, {task_path}, typeof(value) = 'text', {plain} "
            f"FROM writes{clause} ORDER BY thread_id, {self._w_ns}, {self._w_id}, task_id, idx"
        )
        for row in self._stream(sql, params):
            (thread_id, ns, checkpoint_id, task_id, idx, channel, kind, blob, size, path, text,
             _) = row  # fmt: skip
            yield RawWrite(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                task_id=task_id,
                idx=idx,
                channel=channel,
                type=kind,
                data=bytes(blob) if blob is not None else None,
                size=size or 0,
                task_path=path if isinstance(path, str) else "",
                flaws=_TEXT_VALUE if text else (),
            )

    # -- changing it -----------------------------------------------------------------------
    def check_copy(
        self, *, renumber_versions: bool = False, counted_versions: bool = False
    ) -> None:
        if self._era == "0.1":
            raise NotSupported(
                f"{self.location}: langgraph 0.1's tables (thread_ts, untyped values) have no "
                "form today's savers read; copy is not supported from them"
            )

    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        if self._era == "0.1":
            raise Unsafe(
                f"{self.location}: not a SqliteSaver store of langgraph 0.2 or later (its "
                "tables are langgraph 0.1's); nothing changed"
            )

    def thread_rows(self, thread_id: str) -> ThreadRows:
        from ckpt.stores.sqlite.writer import thread_rows

        with self._snapshot():
            return thread_rows(self.conn, thread_id, self.aes_key)

    def check_migrate(self) -> None:
        if not self.has_writes:
            raise Unsafe(f"{self.location}: no writes table (langgraph 0.1 store); nothing changed")

    def migration_rows(self, thread_id: str, *, latest: bool = False) -> MigrationRows:
        from ckpt.stores.sqlite.migrate import read_rows

        if not self.has_writes:
            raise Unsafe(f"{self.location}: no writes table (langgraph 0.1 store); nothing changed")
        with self._snapshot():
            task_path = "task_path" in {
                r[1] for r in self.conn.execute("PRAGMA table_info(writes)")
            }
            return read_rows(self.conn, thread_id, task_path=task_path, latest=latest)

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        from ckpt.stores.sqlite.writer import vacuum_report, vacuum_space

        try:
            space = vacuum_space(self.path, file_pages(self.path, self._pragma))
        except OSError as exc:
            raise StoreUnreadable(f"{self.location}: cannot read ({exc.strerror})") from None
        return vacuum_report(self.path, space, into)

    @contextmanager
    def langgraph_saver(self) -> Iterator[Any]:
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError:
            raise MissingDependency(
                "`graph` loads threads through LangGraph's SqliteSaver: "
                "pip install langgraph-checkpoint-sqlite"
            ) from None
        conn = sqlite3.connect(self.path, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()

    def writer(self, *, timeout: float | None) -> Writer:
        from ckpt.stores.sqlite.writer import SqliteWriter

        # This reader must not stay open beside the writer: SQLite shares one wal-index
        # mapping per file and process, and a reader that mapped it read-only would make
        # the writer's first write fail. Every read of the command is done by now.
        self.close()
        return SqliteWriter(self.path, busy_timeout=timeout or 5.0, aes_key=self.aes_key)

    def change_token(self) -> Hashable | None:
        # A commit changes the file or its -wal (size, modification time): two stat calls,
        # no lock a writer waits on. (PRAGMA data_version cannot say it: a connection that
        # maps the wal-index read-only sees its number move at every read of its own.) A
        # connection opened immutable sees no commit: once the file changes or a writer
        # attaches, it is opened again, in the mode that reads a live store
        # (stores/sqlite/connection.py).
        if self._link.changed() and not self._reading:
            self._link.close()
            self._link = connect(self.path)
            self.conn = self._link.conn
            self._links += 1
            if self._timeout is not None:
                self.conn.set_progress_handler(self._over_time, PROGRESS_STEPS)
        stamps: list[tuple[int, int, int] | None] = []
        for path in (self.path, Path(f"{self.path}-wal")):
            try:
                st = path.stat()
            except OSError:
                stamps.append(None)
            else:
                stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return (self._links, *stamps)

    def dump_threads(self) -> list[tuple[str, int]] | None:
        with self._snapshot():
            return key_counts(self, DumpQuery(), "checkpoints", self._id, self._ns)

    def reading(self) -> AbstractContextManager[None]:
        return self._snapshot()

    def shares_reading(self) -> bool:
        return True  # a snapshot of its own, a moment apart (as dump's workers read)

    def checkpoint_ids(self, query: DumpQuery) -> Iterator[Any]:
        return checkpoint_ids(self, query)

    def fork(self) -> SqliteStore:
        # Its own read-only connection: sqlite3 releases the GIL while a query runs.
        return SqliteStore(self.path, aes_key=self.aes_key, timeout=self._timeout)

    def encrypted_sample(self) -> tuple[str, bytes] | None:
        if self.era == "0.1":
            return None
        queries = ["SELECT type, checkpoint FROM checkpoints WHERE type LIKE '%+%' LIMIT 1"]
        if self.has_writes:
            queries.append("SELECT type, value FROM writes WHERE type LIKE '%+%' LIMIT 1")
        for query in queries:
            for tag, payload in self._run(query):
                if isinstance(tag, str) and payload is not None and not tag.startswith("null+"):
                    return tag, bytes(payload)
        return None

    def close(self) -> None:
        self._link.close()


def _json_list(text: str | None) -> list[str]:
    if text == '[""]':
        return [""]  # the root namespace alone: most threads of most stores
    items = json.loads(text) if text else []
    return [str(item) for item in items]


def _merge_writes(
    rows: Iterable[Any], writes: Iterator[tuple[tuple[str, str, str], Any]]
) -> Iterator[tuple[Any, list[Any]]]:
    """Pair each checkpoint row with its raw write rows; both streams share one sort order."""
    pending = next(writes, None)
    for row in rows:
        key = (row[0], row[1], row[2])
        found: list[Any] = []
        while pending is not None and pending[0] < key:
            pending = next(writes, None)
        while pending is not None and pending[0] == key:
            found.append(pending[1])
            pending = next(writes, None)
        yield row, found


def _batched(items: Iterable[T], size: int, *, first: int | None = None) -> Iterator[list[T]]:
    """Lists of `size` items; from `first` items, doubling up to `size`, if given (a
    caller that stops early has made the stream read no more than it took)."""
    batch: list[T] = []
    wanted = min(first or size, size)
    for item in items:
        batch.append(item)
        if len(batch) == wanted:
            yield batch
            batch = []
            wanted = min(wanted * 2, size)
    if batch:
        yield batch
