"""SQLite's side of the reader: open a store file read-only without changing a byte of it
(no side file where none is needed, never a schema or journal-mode change), keep one
connection's locks per file and process, and stream rows whatever bytes TEXT holds."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ckpt.errors import (
    CkptError,
    NotACheckpointStore,
    StoreCorrupt,
    StoreNotFound,
    StoreUnreadable,
)
from ckpt.records.types import FilePagesRecord
from ckpt.stores.columns import typed_sqlite_row

SQLITE_MAGIC = b"SQLite format 3\x00"
BATCH = 200  # rows fetched per round trip when streaming
FIRST_BATCH = 8  # ... at first: then twice as many each time (`--limit 3` reads about 8)


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


def rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
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


# What a read that starts mid-way through a writer's commit may be told (see rows).
_TRANSIENT_START = frozenset({"SQLITE_READONLY_RECOVERY", "SQLITE_READONLY_CANTINIT"})
_START_PATIENCE = 5.0  # seconds, as the connections' busy timeout


def has_checkpoints_table(path: Path) -> bool:
    """Whether a file is a SQLite store with a `checkpoints` table (discovery): read so
    that no side file appears beside the files of a folder it merely looks at."""
    try:
        link = connect(path, probe=True)
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


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What the store file looked like when an immutable read began (see `connect`)."""

    device: int
    inode: int
    size: int
    mtime_ns: int


class Link:
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


def connect(path: Path, *, probe: bool = False) -> Link:
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
            raise translate(exc, str(path)) from None
        if identity is not None:
            _hold(identity, header)
        return Link(conn, mode, path, stamp, identity)
    assert error is not None
    if wal_mode and _size(wal) and _size(shm) is None:
        raise StoreUnreadable(
            f"{path}: its -wal holds commits that SQLite can only read by creating a -shm "
            "beside it, and it cannot here (read-only folder?); copy the store and its "
            "-wal to a writable folder"
        )
    raise translate(error, str(path)) from None


def translate(exc: sqlite3.Error, location: str) -> CkptError:
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


def file_pages(path: Path, pragma: Callable[[str], Any]) -> FilePagesRecord:
    """A database file's size and pages, each `PRAGMA` asked through `pragma` (a reader's
    connection or the writer's); OSError when the file cannot be measured."""
    page_size = int(pragma("PRAGMA page_size"))
    free = int(pragma("PRAGMA freelist_count"))
    wal = Path(f"{path}-wal")
    return {
        "file_bytes": path.stat().st_size,
        "page_size": page_size,
        "pages": int(pragma("PRAGMA page_count")),
        "free_pages": free,
        # What VACUUM would give back: pages on the freelist (it may also repack
        # half-empty pages, which no header counts).
        "free_bytes": free * page_size,
        "wal_bytes": wal.stat().st_size if wal.exists() else 0,
    }
