"""Read SqliteSaver stores of every era without changing a byte of them (format.md §4)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import quote

from ckpt.errors import (
    CkptError,
    NotACheckpointStore,
    NotFound,
    StoreCorrupt,
    StoreNotFound,
    StoreUnreadable,
)
from ckpt.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawCheckpoint,
    RawWrite,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
    WriteTotals,
)
from ckpt.stores.base import Store
from ckpt.stores.body import checkpoint_from_body, decode_metadata, decode_value, sort_writes
from ckpt.stores.columns import typed_sqlite_row
from ckpt.vocabulary import FIND_LIMIT

SQLITE_MAGIC = b"SQLite format 3\x00"
T = TypeVar("T")
BATCH = 200  # rows fetched per round trip when streaming
FIRST_BATCH = 8  # ... at first: then twice as many each time (`--limit 3` reads about 8)
THREADS_PER_BATCH = 200  # latest checkpoints fetched per statement by `threads`
KEYS_PER_BATCH = 200  # checkpoints fetched per statement by `load_many` (3 parameters each)
PROBE_STEPS = 10000  # steps (about 2 per namespace) `find_exact` walks before it scans


_ERAS: Final[dict[str, str]] = {
    "current": "SqliteSaver tables of checkpoint-sqlite 3.1.2 or later (writes.task_path)",
    "pre-task_path": "SqliteSaver tables of checkpoint-sqlite 1.0.0 - 3.1.1 (no writes.task_path)",
    "0.1": "langgraph 0.1 tables (thread_ts ids, untyped blobs): current LangGraph reads none",
}


class SqliteStore(Store):
    """A SqliteSaver file: current, 2.x (no task_path), 1.x (`json` tag) or 0.1.x (thread_ts)."""

    kind = "sqlite"
    thread_orders = frozenset({"thread", "updated"})

    def __init__(self, path: str | os.PathLike[str], *, aes_key: bytes | None = None) -> None:
        super().__init__(str(path), aes_key=aes_key)
        self.path = Path(path)
        self._link = _connect(self.path)
        self.conn = self._link.conn
        self._reading = 0  # methods inside the open read transaction (`_snapshot`)
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
        if self._link.changed():
            return StoreUnreadable(
                f"{self.location}: the file changed while it was read (a writer attached to "
                "a store in a folder ckpt cannot create side files in); try again"
            )
        return _translate(exc, self.location)

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
        columns = {row[1] for row in self._run("PRAGMA table_info(checkpoints)")}
        write_columns = (
            {row[1] for row in self._run("PRAGMA table_info(writes)")}
            if "writes" in tables
            else set()
        )
        self.has_writes = "writes" in tables
        if "thread_ts" in columns:
            # langgraph <= 0.1.x: no namespace, no type column, ids in thread_ts (format.md §4.1).
            self._era = "0.1"
            self._cp_cols = (
                "thread_id, '' AS checkpoint_ns, thread_ts AS checkpoint_id, "
                "parent_ts AS parent_checkpoint_id, NULL AS type, checkpoint, metadata"
            )
            self._id, self._ns = "thread_ts", "''"
            self._w_id, self._w_ns = "thread_ts", "''"
            self._w_cols = "task_id, '' AS task_path, idx, channel, NULL AS type, value"
        elif {"checkpoint_id", "checkpoint_ns", "checkpoint"} <= columns:
            self._era = "current" if "task_path" in write_columns else "pre-task_path"
            self._cp_cols = (
                "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint, metadata"
            )
            self._id, self._ns = "checkpoint_id", "checkpoint_ns"
            self._w_id, self._w_ns = "checkpoint_id", "checkpoint_ns"
            task_path = "task_path" if "task_path" in write_columns else "'' AS task_path"
            self._w_cols = f"task_id, {task_path}, idx, channel, type, value"
        else:
            raise NotACheckpointStore(
                f"{self.location}: has a `checkpoints` table, but not one LangGraph wrote"
            )

    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return list(_rows(self.conn, sql, params))
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        try:
            yield from _rows(self.conn, sql, params)
        except sqlite3.Error as exc:
            raise self._error(exc) from None

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

    def _size_rows(self, conn: sqlite3.Connection, query: DumpQuery) -> dict[str, ThreadBytes]:
        # Reads every row's header (never its blob): length() takes the size from there.
        where, params = self._dump_filter(query, self._id, self._ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        found: dict[str, ThreadBytes] = {}
        try:
            for thread_id, count, size in _rows(
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
                for thread_id, count, size in _rows(
                    conn,
                    f"SELECT thread_id, count(*), sum(coalesce({_bytes('value')}, 0)) "
                    f"FROM writes{clause} GROUP BY thread_id",
                    params,
                ):
                    sized = found.setdefault(thread_id, ThreadBytes())
                    sized.writes, sized.write_bytes = count, size or 0
        except sqlite3.Error as exc:
            raise _translate(exc, self.location) from None
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
        if query.since_id is not None:
            where.append(f"{id_col} >= ?")
            params.append(query.since_id)
        if query.until_id is not None:
            where.append(f"{id_col} <= ?")
            params.append(query.until_id)
        return where, params

    def storage(self) -> dict[str, Any]:
        page_size = self._run("PRAGMA page_size")[0][0]
        pages = self._run("PRAGMA page_count")[0][0]
        free = self._run("PRAGMA freelist_count")[0][0]
        wal = Path(f"{self.path}-wal")
        try:
            file_bytes = self.path.stat().st_size
            wal_bytes = wal.stat().st_size if wal.exists() else 0
        except OSError as exc:
            raise StoreUnreadable(f"{self.location}: cannot read ({exc.strerror})") from None
        return {
            "file_bytes": file_bytes,
            "page_size": page_size,
            "pages": pages,
            "free_pages": free,
            # What VACUUM would give back: pages on the freelist (it may also repack
            # half-empty pages, which no header counts).
            "free_bytes": free * page_size,
            "wal_bytes": wal_bytes,
        }

    def write_totals(self, query: DumpQuery, keep: int) -> WriteTotals:
        with self._snapshot():
            return self._write_totals(query, keep)

    def _write_totals(self, query: DumpQuery, keep: int) -> WriteTotals:
        totals = WriteTotals()
        if not self.has_writes:
            return totals
        where, params = self._dump_filter(query, self._w_id, self._w_ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        size = _bytes("value")
        for channel, n, total in self._run(
            f"SELECT channel, count(*), sum({size}) FROM writes{clause} GROUP BY channel", params
        ):
            totals.by_channel[channel] = (n, total or 0)
        for ns, total in self._run(
            f"SELECT {self._w_ns}, sum({size}) FROM writes{clause} GROUP BY 1", params
        ):
            totals.by_namespace[ns] = total or 0
        # The newest checkpoint and the keep-th newest of each (thread, ns), by key-index
        # searches: a window over every checkpoint (row_number) kept copies of each key in
        # SQLite's heap, 200 MB for a 10 MB thread id, and was 2-4x slower.
        ns, cid, w_ns, w_id = self._ns, self._id, self._w_ns, self._w_id
        one_ns = self.era == "0.1"  # a literal '': one namespace

        def same_ns(left: str, right: str) -> str:
            return "" if one_ns else f" AND {left} = {right}"

        cp_where, cp_params = self._dump_filter(query, cid, ns)
        cp_clause = f" WHERE {' AND '.join(cp_where)}" if cp_where else ""
        cp_and = "".join(f" AND {w}" for w in cp_where)  # inside `checkpoints c` subqueries
        group_ns = "" if one_ns else f", {ns}"
        ((on_latest, latest_bytes, on_last, last_bytes),) = self._run(
            f"WITH g AS (SELECT thread_id, {ns} AS ns, max({cid}) AS latest "
            f"FROM checkpoints{cp_clause} GROUP BY thread_id{group_ns}), "
            f"k AS (SELECT g.thread_id, g.ns, g.latest, coalesce((SELECT c.{cid} "
            f"FROM checkpoints c WHERE c.thread_id = g.thread_id{same_ns(f'c.{ns}', 'g.ns')}"
            f"{cp_and} ORDER BY c.{cid} DESC LIMIT 1 OFFSET ? - 1), '') AS cutoff FROM g) "
            f"SELECT coalesce(sum(w.{w_id} = k.latest), 0), coalesce(sum(CASE WHEN "
            f"w.{w_id} = k.latest THEN {_bytes('w.value')} END), 0), count(*), "
            f"coalesce(sum({_bytes('w.value')}), 0) "
            f"FROM k JOIN writes w ON w.thread_id = k.thread_id{same_ns(f'w.{w_ns}', 'k.ns')} "
            f"AND w.{w_id} >= k.cutoff WHERE EXISTS (SELECT 1 FROM checkpoints c "
            f"WHERE c.thread_id = w.thread_id{same_ns(f'c.{ns}', f'w.{w_ns}')} "
            f"AND c.{cid} = w.{w_id}{cp_and})",
            [*cp_params, *cp_params, max(keep, 1), *cp_params],
        )
        if keep < 1:
            on_last, last_bytes = 0, 0
        totals.on_latest, totals.on_last = (on_latest, latest_bytes), (on_last, last_bytes)
        return totals

    def health(self, query: DumpQuery) -> StoreHealth:
        with self._snapshot():
            return self._health(query)

    def _health(self, query: DumpQuery) -> StoreHealth:
        health = StoreHealth()
        ns, cid = self._ns, self._id
        params: list[Any] = list(query.thread_ids)
        marks = ", ".join("?" for _ in params)
        threads = f" AND c.thread_id IN ({marks})" if params else ""
        parent = "parent_ts" if self.era == "0.1" else "parent_checkpoint_id"

        # 0.1.x rows have no namespace column: every checkpoint is in the root.
        def same_ns(left: str, right: str) -> str:
            return "" if self.era == "0.1" else f" AND {left} = {right}"

        missing = (
            f"FROM checkpoints c WHERE c.{parent} IS NOT NULL{threads} AND NOT EXISTS "
            f"(SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id"
            f"{same_ns(f'p.{ns}', f'c.{ns}')} AND p.{cid} = c.{parent})"
        )
        oldest = (
            f"c.{cid} = (SELECT min(m.{cid}) FROM checkpoints m WHERE m.thread_id = c.thread_id"
            f"{same_ns(f'm.{ns}', f'c.{ns}')})"
        )
        ((count, thread_count, at_oldest),) = self._run(
            f"SELECT count(*), count(DISTINCT c.thread_id), coalesce(sum({oldest}), 0) {missing}",
            params,
        )
        health.missing_parents, health.missing_parent_threads = count, thread_count
        health.missing_parent_oldest = at_oldest
        health.missing_parent_examples = [
            CheckpointKey(*row)
            for row in self._run(
                f"SELECT c.thread_id, {'c.' + ns if self.era != '0.1' else ns}, c.{cid} "
                f"{missing} ORDER BY 1, 2, 3 LIMIT 5",
                params,
            )
        ]
        if self.has_writes:
            w_ns, w_id = self._w_ns, self._w_id
            threads_w = threads.replace("c.thread_id", "w.thread_id")
            orphans = (
                f"FROM writes w WHERE NOT EXISTS (SELECT 1 FROM checkpoints c "
                f"WHERE c.thread_id = w.thread_id{same_ns(f'c.{ns}', f'w.{w_ns}')} "
                f"AND c.{cid} = w.{w_id}){threads_w}"
            )
            ((count, thread_count),) = self._run(
                f"SELECT count(*), count(DISTINCT w.thread_id) {orphans}", params
            )
            health.orphan_writes, health.orphan_write_threads = count, thread_count
            w_ns_col = f"w.{w_ns}" if self.era != "0.1" else "''"
            health.orphan_write_examples = [
                CheckpointKey(*row)
                for row in self._run(
                    f"SELECT DISTINCT w.thread_id, {w_ns_col}, w.{w_id} {orphans} "
                    "ORDER BY 1, 2, 3 LIMIT 5",
                    params,
                )
            ]
        ns_col = f"c.{ns}" if self.era != "0.1" else "''"
        health.namespaces = [
            (thread_id, namespace)
            for thread_id, namespace in self._run(
                f"SELECT DISTINCT c.thread_id, {ns_col} FROM checkpoints c WHERE 1{threads}",
                params,
            )
        ]
        return health

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        where, params = self._dump_filter(query, self._id, self._ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        tag = "type" if self.era != "0.1" else "NULL"
        # length() reads a blob's size from its record header, never the blob itself.
        columns = (
            f"checkpoint, metadata, {_bytes('checkpoint')}, {_bytes('metadata')}"
            if data
            else f"NULL, NULL, {_bytes('checkpoint')}, {_bytes('metadata')}"
        )
        sql = (
            f"SELECT thread_id, {self._ns}, {self._id}, "
            f"{'parent_ts' if self.era == '0.1' else 'parent_checkpoint_id'}, {tag}, {columns} "
            f"FROM checkpoints{clause} ORDER BY thread_id, {self._ns}, {self._id}"
        )
        for row in self._stream(sql, params):
            thread_id, ns, checkpoint_id, parent, kind, body, metadata, body_len, meta_len = row
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
            )

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        if not self.has_writes:
            return
        where, params = self._dump_filter(query, self._w_id, self._w_ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        tag = "type" if self.era != "0.1" else "NULL"
        value = "value" if data else "NULL"
        sql = (
            f"SELECT thread_id, {self._w_ns}, {self._w_id}, task_id, idx, channel, {tag}, "
            f"{value}, {_bytes('value')} FROM writes{clause} "
            f"ORDER BY thread_id, {self._w_ns}, {self._w_id}, task_id, idx"
        )
        for row in self._stream(sql, params):
            thread_id, ns, checkpoint_id, task_id, idx, channel, kind, blob, size = row
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
            )

    def fork(self) -> SqliteStore:
        # Its own read-only connection: sqlite3 releases the GIL while a query runs.
        return SqliteStore(self.path, aes_key=self.aes_key)

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


def _lenient_text(data: bytes) -> str:
    """TEXT that is not UTF-8 (SQLite stores whatever bytes it is given): each bad byte as
    a lone surrogate U+DC80-U+DCFF (Python's surrogateescape), so that nothing is lost;
    the JSON output writes them as \\udcXX escapes, the views as visible escapes."""
    return data.decode("utf-8", "surrogateescape")


def _bindable(params: Sequence[Any]) -> list[Any]:
    """Parameters sqlite3 can bind: text with lone surrogates (an id read with
    _lenient_text) goes as its bytes, which match no TEXT value (a lookup by a damaged
    id finds nothing instead of failing)."""
    return [
        p.encode("utf-8", "surrogateescape")
        if isinstance(p, str) and not p.isascii() and _SURROGATE.search(p)
        else p
        for p in params
    ]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
    """The rows of one statement, streamed a batch at a time (FIRST_BATCH rows, then
    twice as many each time up to BATCH, so that a caller that stops early has made SQLite
    step no further than it took). sqlite3 refuses a whole
    statement at the first TEXT value that is not UTF-8; then the connection switches to
    _lenient_text and the statement runs again, skipping the rows already given (same
    order, and the same snapshot inside a read transaction).

    A read that begins while a writer rewrites the wal-index header can be told to recover
    it (SQLITE_READONLY_RECOVERY: a read-only connection cannot) or that it is not ready
    (READONLY_CANTINIT): the writer is done within milliseconds, so the statement
    starts again, for up to `_START_PATIENCE` seconds. Once a row is read the snapshot
    is held and those errors cannot come."""
    given = 0
    waited = 0.0
    while True:
        try:
            cursor = conn.execute(sql, _bindable(params))
            skip = given
            size = FIRST_BATCH
            while batch := cursor.fetchmany(size):
                size = min(size * 2, BATCH)
                if skip >= len(batch):
                    skip -= len(batch)
                    continue
                rows = batch[skip:]
                skip = 0
                given += len(rows)
                yield from rows
            return
        except sqlite3.OperationalError as exc:
            transient = getattr(exc, "sqlite_errorname", "") in _TRANSIENT_START
            if transient and given == 0 and waited < _START_PATIENCE:
                pause = min(0.005 * 2 ** int(waited / 0.005).bit_length(), 0.1)
                time.sleep(pause)
                waited += pause
                continue
            if "Could not decode to UTF-8" not in str(exc) or conn.text_factory is _lenient_text:
                raise
            conn.text_factory = _lenient_text


# What a read that starts mid-way through a writer's commit may be told (see _rows).
_TRANSIENT_START = frozenset({"SQLITE_READONLY_RECOVERY", "SQLITE_READONLY_CANTINIT"})
_START_PATIENCE = 5.0  # seconds, as the connections' busy timeout


def has_checkpoints_table(path: Path) -> bool:
    """Whether a file is a SQLite store with a `checkpoints` table (discovery): read so
    that no side file appears beside the files of a folder it merely looks at."""
    try:
        link = _connect(path, probe=True)
    except CkptError:
        return False
    try:
        return bool(
            link.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
            ).fetchone()
        )
    except sqlite3.Error:
        return False
    finally:
        link.close()


def _bytes(column: str) -> str:
    """SQL for the stored bytes of a column. length() of a BLOB reads only the record
    header; of TEXT it counts characters, so TEXT (which LangGraph never writes, but a
    hand-made row may hold) is measured as its UTF-8 bytes."""
    return (
        f"CASE WHEN typeof({column}) = 'text' THEN length(CAST({column} AS BLOB)) "
        f"ELSE length({column}) END"
    )


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


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What the store file looked like when an immutable read began (see `_connect`)."""

    device: int
    inode: int
    size: int
    mtime_ns: int


class _Connection:
    """A read-only connection and how it was opened (docs/security.md, "Stores are never
    changed"): which files SQLite may touch depends on the mode."""

    __slots__ = ("conn", "mode", "stamp", "path", "_held")

    def __init__(
        self,
        conn: sqlite3.Connection,
        mode: str,
        path: Path,
        stamp: _Stamp | None,
        held: tuple[int, int] | None,
    ) -> None:
        self.conn, self.mode, self.path, self.stamp = conn, mode, path, stamp
        self._held = held

    def changed(self) -> bool:
        """An immutable read (a read-only folder) whose file changed under it, or that a
        writer attached to: its error is not the store's damage."""
        if self.stamp is None:
            return False
        return _stamp(self.path) != self.stamp or Path(f"{self.path}-wal").exists()

    def close(self) -> None:
        self.conn.close()
        if self._held is not None:
            _release(self._held)
            self._held = None


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return _Stamp(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _size(path: Path) -> int | None:
    """The size of a side file, None when it is not there (it may go at any moment)."""
    try:
        return path.stat().st_size
    except OSError:
        return None


# The files this process has open through SQLite: (device, inode) -> [header, connections].
# POSIX drops every fcntl lock a process holds on a file as soon as it closes *any*
# descriptor of that file, and SQLite's locks are what stop a writer from checkpointing
# into the file (and deleting its -wal) while ckpt reads it. So while a connection is
# open, ckpt never opens the file again: a second reader (`threads`' sizes, `fork`,
# `--db2` naming the same file) reuses the header read the first time.
_HELD: dict[tuple[int, int], list[Any]] = {}
_HELD_LOCK = threading.Lock()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def in_use(path: Path) -> bool:
    """Whether this process has the file open as a SQLite store right now: then nothing
    may open it outside SQLite (see _HELD)."""
    identity = _identity(path)
    with _HELD_LOCK:
        return identity is not None and identity in _HELD


def _hold(identity: tuple[int, int], header: bytes) -> None:
    with _HELD_LOCK:
        entry = _HELD.setdefault(identity, [header, 0])
        entry[1] += 1


def _release(identity: tuple[int, int]) -> None:
    with _HELD_LOCK:
        entry = _HELD.get(identity)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del _HELD[identity]


def _check_file(path: Path) -> tuple[bytes, tuple[int, int] | None]:
    """The first 100 bytes of the file, after checking that it is there and is SQLite,
    and the file's identity (None when it could not be told)."""
    if not path.exists():
        raise StoreNotFound(f"{path}: no such file")
    if path.is_dir():
        raise StoreUnreadable(f"{path}: is a folder, not a SQLite file or a .langgraph_api folder")
    identity = _identity(path)
    with _HELD_LOCK:
        held = _HELD.get(identity) if identity is not None else None
        if held is not None:
            return held[0], identity
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise StoreUnreadable(f"{path}: cannot read ({exc.strerror})") from None
    if not header:
        raise NotACheckpointStore(f"{path}: empty file, not a checkpoint store")
    if not header.startswith(SQLITE_MAGIC):
        raise StoreUnreadable(f"{path}: not a SQLite database")
    return header, identity


# SQLite's answers when a mode cannot be used here (a side file is missing, or cannot be
# created or opened): the next mode is tried.
_TRY_NEXT = frozenset(
    {"SQLITE_CANTOPEN", "SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_CANTINIT",
     "SQLITE_READONLY_RECOVERY", "SQLITE_READONLY_CANTLOCK", "SQLITE_READONLY"}
)  # fmt: skip


def _connect(path: Path, *, probe: bool = False) -> _Connection:
    """Open the store read-only, in the first of these modes that works (docs/security.md):

    * not a WAL file (rollback journal, old stores): `mode=ro`. No side file is made.
    * WAL, a `-shm` beside it: `mode=ro&readonly_shm=1`. SQLite maps the wal-index
      read-only: a writer attached keeps it current; with none, SQLite builds the index
      in its own memory from the -wal. The -shm is never written (no read marks, no
      recovery), the -wal never either; a missing -wal is created empty.
    * WAL, no `-shm`: `mode=ro`, SQLite's normal locking. It creates `-shm` (and an
      empty `-wal`), which stay: a read-only connection cannot remove them. This is
      the price of a correct read. `immutable=1` would make no file, but it tells SQLite
      the file cannot change, and a writer that attaches a moment later checkpoints its
      WAL into the file while ckpt reads it: torn pages, "database disk image is
      malformed" on a healthy store (issue 15).
    * none of those (a read-only folder, where SQLite can create no side file, so no
      WAL-mode writer can attach either): `immutable=1`, unless a non-empty -wal holds
      commits that only the -shm protocol could read.

    `probe=True` (discovery, which only asks whether a file holds a `checkpoints` table)
    reads a WAL file with no -wal as immutable: it must not leave files beside every
    *.db of the folder, and a torn read there only makes a candidate look unreadable.
    """
    header, identity = _check_file(path)
    wal_mode = len(header) > 19 and header[18] == 2
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    base = f"file:{quote(str(path.resolve()))}?mode=ro"
    modes: list[str] = []
    if not wal_mode:
        modes.append("ro")
    else:
        if probe and _size(wal) is None:
            modes.append("immutable")
        if _size(shm) is not None:
            modes.append("readonly_shm")
        modes.append("ro")
        if not _size(wal):
            modes.append("immutable")
    error: sqlite3.Error | None = None
    for mode in dict.fromkeys(modes):
        stamp = _stamp(path) if mode == "immutable" else None
        uri = (
            base + {"ro": "", "readonly_shm": "&readonly_shm=1", "immutable": "&immutable=1"}[mode]
        )
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False)
        except sqlite3.Error as exc:
            error = error or exc
            continue
        conn.row_factory = typed_sqlite_row
        try:
            conn.execute("PRAGMA query_only = 1")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            if getattr(exc, "sqlite_errorname", "") in _TRY_NEXT:
                error = error or exc
                continue
            raise _translate(exc, str(path)) from None
        if identity is not None:
            _hold(identity, header)
        return _Connection(conn, mode, path, stamp, identity)
    assert error is not None
    if wal_mode and _size(wal) and _size(shm) is None:
        raise StoreUnreadable(
            f"{path}: its -wal holds commits that SQLite can only read by creating a -shm "
            "beside it, and it cannot here (read-only folder?); copy the store and its "
            "-wal to a writable folder"
        )
    raise _translate(error, str(path)) from None


def _translate(exc: sqlite3.Error, location: str) -> CkptError:
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if name == "SQLITE_NOTADB" or "not a database" in text:
        return StoreUnreadable(f"{location}: not a SQLite database")
    if "Could not decode to UTF-8" in text:
        # A damaged text column: say so without echoing its raw bytes to the terminal.
        return StoreCorrupt(f"{location}: corrupt text in a column (not UTF-8)")
    if name == "SQLITE_CORRUPT" or "malformed" in text:
        return StoreCorrupt(f"{location}: truncated or corrupt SQLite file ({text})")
    if name in {"SQLITE_BUSY", "SQLITE_LOCKED"}:
        return StoreUnreadable(f"{location}: the store is locked by a writer; try again ({text})")
    if name == "SQLITE_CANTOPEN":
        return StoreUnreadable(f"{location}: cannot open ({text})")
    if isinstance(exc, sqlite3.OperationalError) and "no such" in text:
        return NotACheckpointStore(f"{location}: not a LangGraph checkpoint store ({text})")
    return StoreUnreadable(f"{location}: {text}")


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
