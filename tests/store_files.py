"""What a read may do to the files of a store (docs/security.md, "Stores are never changed"),
as a check the tests share: hash every file of the store's folder before and after."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def folder_hashes(folder: Path) -> dict[str, str]:
    """name -> sha256 of every file in a folder (a `.langgraph_api` folder included)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


EMPTY = hashlib.sha256(b"").hexdigest()


def wal_mode(path: Path) -> bool:
    """The file's header says WAL (format bytes 18 and 19 are 2)."""
    try:
        header = path.read_bytes()[:20]
    except OSError:
        return False
    return header.startswith(b"SQLite format 3\x00") and len(header) == 20 and header[18] == 2


def unexpected_changes(folder: Path, before: dict[str, str]) -> list[str]:
    """What a read did that docs/security.md does not allow, as readable lines (empty: none).

    Every file that was there is byte-identical. New files may only be the two SQLite
    creates for a WAL-mode database: a `-shm` when none was there, and an empty `-wal`.
    """
    after = folder_hashes(folder)
    problems = [f"{name} changed" for name in before if after.get(name) != before[name]]
    for name in sorted(set(after) - set(before)):
        if name.endswith("-shm"):
            db = name.removesuffix("-shm")
            if db in before and wal_mode(folder / db):
                continue
        if name.endswith("-wal") and after[name] == EMPTY:
            db = name.removesuffix("-wal")
            if db in before and wal_mode(folder / db):
                continue
        problems.append(f"{name} appeared")
    return problems


def with_thread_copies(source: Path, path: Path, copies: int) -> Path:
    """`source` (a SqliteSaver file) copied to `path` with every thread's checkpoints and
    writes copied `copies` times more, as threads `copy-NN-<thread>`: a bigger store of
    the same rows."""
    import shutil
    import sqlite3
    from contextlib import closing

    shutil.copy(source, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        for table in ("checkpoints", "writes"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            for n in range(copies):
                select = ", ".join(
                    f"'copy-{n:02d}-' || {c}" if c == "thread_id" else c for c in columns
                )
                conn.execute(
                    f"INSERT INTO {table} SELECT {select} FROM {table} "
                    "WHERE thread_id NOT LIKE 'copy-%'"
                )
    return path


def sqlite_stores(
    fixture_dir: Path, samples: Path, key: bytes
) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every SQLite store of the tests, by name, with the options that open it (`key`: the
    fixture's AES key): each sample, the chat fixture, the encrypted ones with and
    without their key."""
    stores: dict[str, tuple[Path, dict[str, Any]]] = {
        path.name: (path, {}) for path in sorted(samples.glob("*.db"))
    }
    return stores | {
        "chat": (fixture_dir / "chat.sqlite", {}),
        "encrypted": (fixture_dir / "encrypted.sqlite", {"aes_key": key}),
        "encrypted, no key": (fixture_dir / "encrypted.sqlite", {}),
        "sqlite_encrypted.db": (samples / "sqlite_encrypted.db", {"aes_key": "0123456789abcdef"}),
    }
