"""A SqliteSaver file as the target of `ckpt copy`: created with the schema `setup()` makes,
one thread per `BEGIN IMMEDIATE` transaction."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ckpt.errors import StoreBusy, StoreUnreadable
from ckpt.records.model import RawCheckpoint, RawWrite
from ckpt.stores.base import Carried, Target, ThreadSink
from ckpt.stores.transfer import Blob, BlobKey, InlineRow, Sends, to_inline

# SqliteSaver.setup() of langgraph-checkpoint-sqlite 3.1.2 (format.md §4.1), statement for
# statement; tests compare the result with what setup() makes, column by column.
SCHEMA: Final = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
"""
_CHECKPOINT_COLUMNS: Final = frozenset(
    {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
     "checkpoint", "metadata"}
)  # fmt: skip
_WRITE_COLUMNS: Final = frozenset(
    {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"}
)


class SqliteTarget(Target):
    layout = "inline"

    def __init__(self, path: Path, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.location = str(path)
        self.busy_timeout = busy_timeout
        self.notices = []
        self.conn: sqlite3.Connection | None = None
        self.task_path = True
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            self.state = "new"
            return
        if not path.is_file():
            raise StoreUnreadable(f"{path}: not a file")
        # Read-only until setup(): a dry run never writes, not even a journal mode.
        self.conn = self._connect(f"{path.resolve().as_uri()}?mode=ro")
        self.state = self._check()

    def _connect(self, uri: str) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise StoreUnreadable(f"{self.location}: {_said(exc)}") from None
        return conn

    def _columns(self, table: str) -> set[str]:
        assert self.conn is not None
        return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    def _check(self) -> str:
        checkpoints, writes = self._columns("checkpoints"), self._columns("writes")
        if not checkpoints and not writes:
            return "new"  # a SQLite file without the saver's tables: setup() adds them
        if not _CHECKPOINT_COLUMNS <= checkpoints or not _WRITE_COLUMNS <= writes:
            raise StoreUnreadable(
                f"{self.location}: holds `checkpoints`/`writes` tables that are not "
                "SqliteSaver's (copy into a new file instead)"
            )
        if "task_path" not in writes:
            self.task_path = False
            self.notices.append(
                f"{self.location} has no writes.task_path column (checkpoint-sqlite before "
                "3.1.2): task paths are not copied"
            )
        return "ready"

    def laid_out(self, row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends) -> Carried:
        inline = to_inline(row, blobs, sends)
        return Carried(inline, len(inline.body) + len(inline.metadata), {})

    def check_writable(self, *, replace: bool) -> None:
        # SQLite writes the file, and beside it its journal (-wal, -shm): both must be
        # writable (os.access sees the immutable attribute and read-only mounts too).
        folder = self.path.resolve().parent
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise StoreUnreadable(
                f"{self.location}: the target is read-only (cannot write the file)"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StoreUnreadable(
                f"{self.location}: the target is read-only (cannot write in its folder {folder})"
            )

    def setup(self) -> None:
        if self.conn is not None:
            self.conn.close()
        try:
            self.conn = self._connect(str(self.path.resolve().as_uri()) + "?mode=rwc")
            if self.state == "new":
                self.conn.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise _error(exc, self.location) from None

    def existing(self, thread_ids: Sequence[str]) -> set[str]:
        if self.state == "new" and self.conn is None:
            return set()
        assert self.conn is not None
        if not self._columns("checkpoints"):
            return set()
        found: set[str] = set()
        ids = list(dict.fromkeys(thread_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for table in ("checkpoints", "writes"):
                found.update(
                    t
                    for (t,) in self.conn.execute(
                        f"SELECT DISTINCT thread_id FROM {table} WHERE thread_id IN ({marks})",
                        chunk,
                    )
                )
        return found

    def thread(self, thread_id: str, *, replace: bool) -> ThreadSink:
        assert self.conn is not None, "setup() first"
        return _SqliteSink(self.conn, thread_id, self.location, replace, self.task_path)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class _SqliteSink(ThreadSink):
    def __init__(
        self, conn: sqlite3.Connection, thread_id: str, location: str, replace: bool,
        task_path: bool,
    ) -> None:  # fmt: skip
        self.conn, self.thread_id, self.location = conn, thread_id, location
        self.task_path = task_path
        try:
            conn.execute("BEGIN IMMEDIATE")
            if replace:
                conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))
                conn.execute("DELETE FROM writes WHERE thread_id = ?", (thread_id,))
        except sqlite3.Error as exc:
            self.rollback()
            raise _error(exc, location) from None

    def _run(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            self.conn.execute(sql, params)
        except sqlite3.Error as exc:
            self.rollback()
            raise _error(exc, self.location) from None

    def checkpoint(self, row: InlineRow) -> None:
        self._run(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id,
             row.type, row.body, row.metadata),
        )  # fmt: skip

    def write(self, write: RawWrite) -> None:
        columns = "task_id, idx, channel, type, value" + (", task_path" if self.task_path else "")
        params: tuple[Any, ...] = (write.task_id, write.idx, write.channel, write.type, write.data)
        if self.task_path:
            params += (write.task_path,)
        marks = ", ".join("?" * (len(params) + 3))
        self._run(
            f"INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, {columns}) "
            f"VALUES ({marks})",
            (self.thread_id, write.checkpoint_ns, write.checkpoint_id, *params),
        )

    def commit(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.rollback()
            raise _error(exc, self.location) from None

    def rollback(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass


def _said(exc: sqlite3.Error) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _error(exc: sqlite3.Error, location: str) -> StoreUnreadable | StoreBusy:
    text = _said(exc)
    if "locked" in text or "busy" in text:
        return StoreBusy(f"{location}: {text} (another connection is writing); nothing changed")
    if "readonly" in text or "read-only" in text:
        return StoreUnreadable(f"{location}: the target is read-only ({text})")
    if "full" in text:
        return StoreUnreadable(f"{location}: the disk is full ({text})")
    if "UNIQUE" in text:
        return StoreUnreadable(
            f"{location}: a row of this thread appeared on the target meanwhile ({text})"
        )
    return StoreUnreadable(f"{location}: {text}")
