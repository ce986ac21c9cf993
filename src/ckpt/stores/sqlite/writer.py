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
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ckpt.errors import CkptError, StoreBusy, StoreCorrupt, StoreNotFound, StoreUnreadable, Unsafe
from ckpt.pruning import NamespacePlan, Strategy, ThreadPlan, ThreadRows, WriteRow, plan_thread
from ckpt.stores.base import Writer
from ckpt.stores.prune_rows import sqlite_row

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
    return ThreadRows(thread_id, checkpoints, writes)


class SqliteWriter(Writer):
    """A read-write connection to an existing SqliteSaver file, for prune and vacuum."""

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

    # -- prune ------------------------------------------------------------------------------
    def prune(self, thread_id: str, strategy: Strategy, keep: int) -> ThreadPlan:
        """Plan and carry out one thread's prune in one transaction; the plan it ran."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreBusy(
                f"{self.path}: another connection holds the write lock ({exc}); waited "
                f"{self.busy_timeout:g} s, changed nothing in thread {thread_id!r} and after"
            ) from None
        try:
            plan = plan_thread(thread_rows(conn, thread_id, self.aes_key), strategy, keep)
            if plan.changes:
                for namespace in plan.namespaces:
                    self._apply(thread_id, namespace)
            conn.execute("COMMIT")
        except BaseException as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _translate(exc, self.path, thread_id) from None
            raise
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
    def space(self) -> dict[str, Any]:
        """What VACUUM would give back, and whether the disk has room for it."""
        page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        journal = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        wal = Path(f"{self.path}-wal")
        disk = shutil.disk_usage(self.path.parent)
        size = self.path.stat().st_size
        return {
            "file_bytes": size,
            "page_size": page_size,
            "pages": pages,
            "free_pages": free,
            "free_bytes": free * page_size,
            "wal_bytes": wal.stat().st_size if wal.exists() else 0,
            "journal_mode": journal,
            "disk_free_bytes": disk.free,
            # VACUUM writes a copy of the database (a temporary file, then the journal or
            # the WAL): up to twice the file.
            "disk_needed_bytes": 2 * size,
        }

    def vacuum(self, into: Path | None) -> dict[str, Any]:
        """VACUUM in place, or VACUUM INTO a new file: the space before and after."""
        before = self.space()
        self._vacuum(into)
        after = self.space() if into is None else None
        return {"into": str(into) if into else None, "before": before, "after": after}

    def _vacuum(self, into: Path | None) -> None:
        """VACUUM in place (refused while another connection holds the database), or
        VACUUM INTO a new file; then truncate the WAL."""
        conn = self.conn
        space = self.space()
        if into is not None:
            if into.exists():
                raise Unsafe(f"{into} exists; give a new file for `into`")
            if space["disk_free_bytes"] < space["file_bytes"]:
                raise Unsafe(f"not enough free disk for {into}; nothing changed")
            try:
                conn.execute("VACUUM INTO ?", (str(into),))
            except sqlite3.Error as exc:
                into.unlink(missing_ok=True)
                raise _translate(exc, self.path) from None
            return
        if space["disk_free_bytes"] < space["disk_needed_bytes"]:
            raise Unsafe(
                f"VACUUM needs up to {space['disk_needed_bytes']:,} bytes free beside "
                f"{self.path}; {space['disk_free_bytes']:,} are; nothing changed "
                "(`into` a file elsewhere writes the copy there)"
            )
        try:
            # An exclusive transaction first: it fails when another connection writes (or,
            # in rollback-journal mode, reads). In WAL mode readers do not block it, but a
            # reader's snapshot keeps a full checkpoint from completing: that tells.
            conn.execute("BEGIN EXCLUSIVE")
            conn.execute("COMMIT")
            if space["journal_mode"] == "wal":
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy:
                    raise sqlite3.OperationalError("a reader holds a snapshot of the database")
        except sqlite3.OperationalError as exc:
            raise StoreBusy(
                f"{self.path}: another connection holds the database ({exc}); nothing changed"
            ) from None
        try:
            conn.execute("VACUUM")
            if space["journal_mode"] == "wal":
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
