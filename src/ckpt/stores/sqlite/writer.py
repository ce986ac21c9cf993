"""The SQLite Writer: `ckpt prune --apply` and `ckpt vacuum --apply` on a SqliteSaver file.

One thread per `BEGIN IMMEDIATE` transaction: the write lock is taken first (waiting at
most the busy timeout), then the thread's rows are read and planned inside that same
transaction, so the plan carried out is the plan of the state it deletes from. Any error
rolls the thread back; nothing is ever half done. The journal mode is left as it is.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ckpt.errors import (
    CkptError,
    MigrationMismatch,
    StoreBusy,
    StoreCorrupt,
    StoreNotFound,
    StoreUnreadable,
    Unsafe,
)
from ckpt.records.migration import MigrationRows, Rewrite
from ckpt.records.plans import (
    NamespacePlan,
    Planner,
    ThreadPlan,
    ThreadRows,
    WriteRow,
)
from ckpt.records.types import FilePagesRecord, VacuumReport, VacuumSpaceRecord, VacuumStateRecord
from ckpt.stores.base import Writer
from ckpt.stores.prune_rows import sqlite_row
from ckpt.stores.sqlite.connection import file_pages

CHUNK = 500  # ids per `IN (...)`: far below SQLite's variable limit


def thread_rows(conn: sqlite3.Connection, thread_id: str, aes_key: bytes | None) -> ThreadRows:
    """The thread's bookkeeping, read on `conn` (the reader's, or the writer's inside its
    transaction)."""
    checkpoints = [
        sqlite_row(ns, cid, parent, tag, body or b"", meta or b"", size or 0, aes_key)
        for ns, cid, parent, tag, body, meta, size in conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
            "metadata, length(checkpoint) + coalesce(length(metadata), 0) "
            "FROM checkpoints WHERE thread_id = ?",
            (thread_id,),
        )
    ]
    tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    writes = (
        [
            WriteRow(ns, cid, channel, size or 0)
            for ns, cid, channel, size in conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, channel, length(value) FROM writes "
                "WHERE thread_id = ?",
                (thread_id,),
            )
        ]
        if "writes" in tables
        else []
    )
    # The ids of the thread's writes with no checkpoint of theirs that are another thread's
    # checkpoints: one scan of the checkpoints per such id (no index holds ids alone), and
    # orphan writes are few.
    foreign = (
        frozenset(
            i
            for (i,) in conn.execute(
                "SELECT DISTINCT w.checkpoint_id FROM writes w WHERE w.thread_id = ? "
                "AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id "
                "AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id) "
                "AND EXISTS (SELECT 1 FROM checkpoints o WHERE o.checkpoint_id = w.checkpoint_id "
                "AND o.thread_id <> w.thread_id)",
                (thread_id,),
            )
        )
        if "writes" in tables
        else frozenset()
    )
    return ThreadRows(thread_id, checkpoints, writes, foreign=foreign)


# VACUUM writes a copy of the database (a temporary file, then the journal or the WAL):
# up to twice the file.
VACUUM_ROOM = 2


def vacuum_space(path: Path, pages: FilePagesRecord) -> VacuumSpaceRecord:
    """The file's pages (`file_pages`), and the disk room VACUUM needs beside it."""
    return {
        **pages,
        "disk_free_bytes": shutil.disk_usage(path.parent).free,
        "disk_needed_bytes": VACUUM_ROOM * path.stat().st_size,
        "tables": None,
        "memory": None,
    }


def vacuum_report(path: Path, space: VacuumSpaceRecord, into: Path | None) -> VacuumReport:
    """`ckpt vacuum` of a SqliteSaver file as `space` finds it: VACUUM rewrites the file
    (or writes the compacted copy `into` a new one)."""
    target = str(into) if into is not None else None
    return {
        "reclaim": "file",
        "statement": "VACUUM" if target is None else f"VACUUM INTO {sql_text(target)}",
        "into": target,
        "file_bytes": space["file_bytes"],
        "page_size": space["page_size"],
        "pages": space["pages"],
        "free_pages": space["free_pages"],
        "free_bytes": space["free_bytes"],
        "wal_bytes": space["wal_bytes"],
        "disk_free_bytes": space["disk_free_bytes"],
        "disk_needed_bytes": space["disk_needed_bytes"],
        "tables": None,
        "memory": None,
        "before": None,
        "after": None,
    }


def sql_text(text: str) -> str:
    """A string literal of SQL: `'it''s'`."""
    return "'" + text.replace("'", "''") + "'"


class SqliteWriter(Writer):
    """A read-write connection to an existing SqliteSaver file, for prune and vacuum."""

    backs_up_whole = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        aes_key: bytes | None = None,
    ) -> None:
        self.path = Path(path)
        self.location = str(path)
        self.aes_key = aes_key
        if not self.path.is_file():
            raise StoreNotFound(f"{self.path}: no such file")
        self.busy_timeout = busy_timeout
        uri = f"file:{quote(str(self.path.resolve()))}?mode=rw"  # never creates the file
        try:
            # Autocommit: every transaction below is an explicit BEGIN ... COMMIT.
            self.conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)
            tables = {
                n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            columns = {row[1] for row in self.conn.execute("PRAGMA table_info(checkpoints)")}
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from None
        if "checkpoints" not in tables or "checkpoint_id" not in columns:
            self.conn.close()
            raise Unsafe(
                f"{self.path}: not a SqliteSaver store of langgraph 0.2 or later; nothing changed"
            )
        self.has_writes = "writes" in tables
        self.task_path = self.has_writes and "task_path" in {
            row[1] for row in self.conn.execute("PRAGMA table_info(writes)")
        }

    # -- migrate ----------------------------------------------------------------------------
    def migrate(
        self, thread_id: str, rewrite: Rewrite, *, latest: bool = False
    ) -> tuple[MigrationRows, MigrationRows | None]:
        """One thread's migration in one `BEGIN IMMEDIATE` transaction, read back before
        it commits (ckpt.stores.base.Writer.migrate)."""
        from ckpt.stores.sqlite.migrate import read_rows, write_rows

        conn = self.conn
        if not self.has_writes:
            raise Unsafe(f"{self.path}: no writes table (langgraph 0.1 store); nothing changed")
        with self._transaction(thread_id):
            before = read_rows(conn, thread_id, task_path=self.task_path, latest=latest)
            after = rewrite(before)
            if after is not None:
                write_rows(conn, before, after, task_path=self.task_path)
                again = read_rows(conn, thread_id, task_path=self.task_path, latest=latest)
                if again != after:
                    raise MigrationMismatch(
                        f"{self.path}: thread {thread_id!r} read back differs from what was "
                        "written; rolled back (the threads before it stay migrated)"
                    )
        return before, after

    @contextmanager
    def _transaction(self, thread_id: str) -> Iterator[None]:
        """One thread's `BEGIN IMMEDIATE` transaction: committed when the block ends,
        rolled back (and an sqlite3 error said as ckpt's) when it raises."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreBusy(
                f"{self.path}: another connection holds the write lock ({exc}); waited "
                f"{self.busy_timeout:g} s, changed nothing in thread {thread_id!r} and after"
            ) from None
        try:
            yield
            conn.execute("COMMIT")
        except BaseException as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _translate(exc, self.path, thread_id) from None
            raise

    # -- prune ------------------------------------------------------------------------------
    def prune(self, thread_id: str, planner: Planner) -> ThreadPlan:
        """Plan and carry out one thread's prune in one transaction; the plan it ran."""
        with self._transaction(thread_id):
            plan = planner(thread_rows(self.conn, thread_id, self.aes_key))
            if plan.changes:
                for namespace in plan.namespaces:
                    self._apply(thread_id, namespace)
        return plan

    def _apply(self, thread_id: str, plan: NamespacePlan) -> None:
        conn, ns = self.conn, plan.checkpoint_ns
        if plan.whole:
            conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?", (thread_id, ns)
            )
            if self.has_writes:
                conn.execute(
                    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ?", (thread_id, ns)
                )
            return
        for ids in _chunks(plan.deleted):
            marks = ", ".join("?" for _ in ids)
            if self.has_writes:
                conn.execute(
                    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? "
                    f"AND checkpoint_id IN ({marks})",
                    (thread_id, ns, *ids),
                )
            conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                f"AND checkpoint_id IN ({marks})",
                (thread_id, ns, *ids),
            )
        for ids in _chunks(plan.orphan_writes) if self.has_writes else ():
            marks = ", ".join("?" for _ in ids)
            conn.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? "
                f"AND checkpoint_id IN ({marks})",
                (thread_id, ns, *ids),
            )
        for ids in _chunks(plan.parents_cleared):
            marks = ", ".join("?" for _ in ids)
            conn.execute(
                "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ? "
                f"AND checkpoint_ns = ? AND checkpoint_id IN ({marks})",
                (thread_id, ns, *ids),
            )

    def backup(self, destination: Path) -> None:
        """Copy the store with SQLite's online backup API (a consistent copy, even of a
        store a live application writes)."""
        if destination.exists():
            raise Unsafe(f"{destination} exists; give a new file for `backup`")
        try:
            with sqlite3.connect(destination) as target:
                self.conn.backup(target)
            target.close()
        except sqlite3.Error as exc:
            destination.unlink(missing_ok=True)
            raise _translate(exc, self.path) from None

    # -- vacuum -----------------------------------------------------------------------------
    def space(self) -> VacuumStateRecord:
        """What VACUUM would give back, and whether the disk has room for it."""
        conn = self.conn
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return {
            **vacuum_space(
                self.path, file_pages(self.path, lambda p: conn.execute(p).fetchone()[0])
            ),
            "journal_mode": journal,
        }

    def vacuum(self, into: Path | None) -> VacuumReport:
        """VACUUM in place, or VACUUM INTO a new file: the space before and after."""
        before = self.space()
        self._vacuum(into)
        after = self.space() if into is None else None
        report = vacuum_report(self.path, before, into)
        return {**report, "before": before, "after": after}

    def _vacuum(self, into: Path | None) -> None:
        """VACUUM in place (refused while another connection holds the database), or
        VACUUM INTO a new file; then truncate the WAL."""
        conn = self.conn
        size = self.path.stat().st_size
        free = shutil.disk_usage(self.path.parent).free
        if into is not None:
            if into.exists():
                raise Unsafe(f"{into} exists; give a new file for `into`")
            if free < size:
                raise Unsafe(f"not enough free disk for {into}; nothing changed")
            try:
                conn.execute("VACUUM INTO ?", (str(into),))
            except sqlite3.Error as exc:
                into.unlink(missing_ok=True)
                raise _translate(exc, self.path) from None
            return
        if free < VACUUM_ROOM * size:
            raise Unsafe(
                f"VACUUM needs up to {VACUUM_ROOM * size:,} bytes free beside "
                f"{self.path}; {free:,} are; nothing changed "
                "(`into` a file elsewhere writes the copy there)"
            )
        wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        try:
            # An exclusive transaction first: it fails when another connection writes (or,
            # in rollback-journal mode, reads). In WAL mode readers do not block it, but a
            # reader's snapshot keeps a full checkpoint from completing: that tells.
            conn.execute("BEGIN EXCLUSIVE")
            conn.execute("COMMIT")
            if wal:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy:
                    raise sqlite3.OperationalError("a reader holds a snapshot of the database")
        except sqlite3.OperationalError as exc:
            raise StoreBusy(
                f"{self.path}: another connection holds the database ({exc}); nothing changed"
            ) from None
        try:
            conn.execute("VACUUM")
            if wal:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreBusy(f"{self.path}: VACUUM was refused ({exc}); nothing changed") from None
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from None

    def close(self) -> None:
        self.conn.close()


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def _translate(exc: sqlite3.Error, path: Path, thread_id: str | None = None) -> CkptError:
    text = str(exc)
    where = f" (thread {thread_id!r} rolled back)" if thread_id is not None else ""
    if "locked" in text or "busy" in text:
        return StoreBusy(f"{path}: the store is locked by another connection{where}: {text}")
    if "malformed" in text or "not a database" in text:
        return StoreCorrupt(f"{path}: {text}{where}")
    if "readonly" in text or "read-only" in text:
        return StoreUnreadable(f"{path}: cannot write ({text}){where}")
    return StoreUnreadable(f"{path}: {text}{where}")
