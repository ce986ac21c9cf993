"""Which files a read may touch (docs/security.md, "Stores are never changed"), each claim
proved by hashing every file of the store's folder before and after ckpt reads it."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ckpt.cli import app
from store_files import EMPTY, folder_hashes, unexpected_changes

runner = CliRunner()
THREAD = "support-1"
CKPT = str(Path(sys.executable).parent / "ckpt")


def reads(store: Path) -> list[list[str]]:
    """Every read command, human and JSON views."""
    db = ["--db", str(store)]
    return [
        ["threads", str(store)],
        ["threads", str(store), "--json"],
        ["history", THREAD, *db],
        ["history", THREAD, "--json", *db],
        ["show", THREAD, "--blobs", *db],
        ["show", THREAD, "--json", *db],
        ["versions", THREAD, *db],
        ["diff", THREAD, *db],
        ["dump", str(store), "--quiet"],
        ["stats", str(store), "--json", "--quiet"],
        ["types", str(store), "--quiet"],
        ["check", str(store), "--quiet"],
    ]


def read_all(store: Path) -> None:
    for args in reads(store):
        result = runner.invoke(app, args)
        assert result.exit_code in (0, 1), (args, result.stderr)  # diff: 1 = they differ


def thread_ids(store: Path) -> set[str]:
    result = runner.invoke(app, ["threads", str(store), "--json"])
    assert result.exit_code == 0, result.stderr
    import json

    return {t["thread_id"] for t in json.loads(result.stdout)}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    found = tmp_path / "store"
    found.mkdir()
    return found


def test_a_rollback_journal_store_gets_no_side_file(sqlite_store: Path, folder: Path) -> None:
    store = folder / "chat.sqlite"
    shutil.copy(sqlite_store, store)
    with closing(sqlite3.connect(store)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    before = folder_hashes(folder)
    read_all(store)
    assert folder_hashes(folder) == before


def test_a_wal_store_alone_gets_a_shm_and_an_empty_wal(sqlite_store: Path, folder: Path) -> None:
    store = folder / "chat.sqlite"
    shutil.copy(sqlite_store, store)
    before = folder_hashes(folder)
    assert list(before) == ["chat.sqlite"]
    read_all(store)
    after = folder_hashes(folder)
    assert after["chat.sqlite"] == before["chat.sqlite"]
    assert after["chat.sqlite-wal"] == EMPTY
    assert sorted(after) == ["chat.sqlite", "chat.sqlite-shm", "chat.sqlite-wal"]


@contextmanager
def wal_with_commits(sqlite_store: Path, folder: Path) -> Iterator[Path]:
    """A store whose -wal holds commits (a thread `wal-only`) and whose -shm indexes them,
    no writer attached: what a process that was killed leaves. Made by copying the three
    files while the writer is still open (its close would checkpoint them away)."""
    work = folder.parent / "writer"
    work.mkdir()
    source = work / "chat.sqlite"
    shutil.copy(sqlite_store, source)
    with closing(sqlite3.connect(source)) as writer:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        for thread in ("wal-only", "wal-last"):
            writer.execute(
                "INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                "WHERE thread_id = 'support-2'",
                (thread,),
            )
            writer.commit()
        for name in ("chat.sqlite", "chat.sqlite-wal", "chat.sqlite-shm"):
            shutil.copy(work / name, folder / name)
    yield folder / "chat.sqlite"


def test_side_files_of_a_store_no_writer_holds_are_never_written(
    sqlite_store: Path, folder: Path
) -> None:
    with wal_with_commits(sqlite_store, folder) as store:
        assert (folder / "chat.sqlite-wal").stat().st_size > 0
        before = folder_hashes(folder)
        read_all(store)
        assert folder_hashes(folder) == before  # the -shm too: no read marks, no recovery
        assert {"wal-only", "wal-last"} <= thread_ids(store)  # the -wal's commits are read


@pytest.mark.parametrize("damage", ["torn", "flipped"])
def test_a_damaged_wal_is_read_as_sqlite_recovers_it_and_left_alone(
    sqlite_store: Path, folder: Path, damage: str
) -> None:
    with wal_with_commits(sqlite_store, folder) as store:
        wal = folder / "chat.sqlite-wal"
        data = bytearray(wal.read_bytes())
        if damage == "torn":
            data = data[: len(data) - 100]  # the last frame cut short
        else:
            data[len(data) - 50] ^= 0x10  # a bit flipped in the last frame's page
        wal.write_bytes(bytes(data))
        # What SQLite itself recovers from the same files (on a copy: recovery writes).
        oracle = folder.parent / "oracle"
        oracle.mkdir()
        for name in ("chat.sqlite", "chat.sqlite-wal"):
            shutil.copy(folder / name, oracle / name)
        with closing(sqlite3.connect(oracle / "chat.sqlite")) as conn:
            rows = conn.execute("SELECT DISTINCT thread_id FROM checkpoints")
            expected = {row[0] for row in rows}
        assert "wal-only" in expected and "wal-last" not in expected  # the last commit is lost
        before = folder_hashes(folder)
        read_all(store)
        assert thread_ids(store) == expected
        assert folder_hashes(folder) == before


def test_a_shm_without_its_wal_is_left_alone(sqlite_store: Path, folder: Path) -> None:
    with wal_with_commits(sqlite_store, folder) as store:
        # Checkpoint the commits into the file on a copy, then keep that file and the
        # -shm only (a -wal deleted by hand).
        with closing(sqlite3.connect(folder.parent / "writer" / "chat.sqlite")) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(folder.parent / "writer" / "chat.sqlite", store)
        (folder / "chat.sqlite-wal").unlink()
        before = folder_hashes(folder)
        read_all(store)
        after = folder_hashes(folder)
        assert {k: after[k] for k in before} == before
        assert after["chat.sqlite-wal"] == EMPTY and len(after) == 3


def _without_write_rights() -> list[str]:
    """A command prefix under which this folder is really read-only: root ignores the mode
    bits unless it gives up CAP_DAC_OVERRIDE."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_a_read_only_folder_gets_no_side_file(sqlite_store: Path, folder: Path) -> None:
    store = folder / "chat.sqlite"
    shutil.copy(sqlite_store, store)
    before = folder_hashes(folder)
    prefix = _without_write_rights()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        for args in (["threads", str(store)], ["dump", str(store), "--quiet"]):
            result = subprocess.run(
                [*prefix, CKPT, *args], capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, result.stderr
            assert result.stdout
    finally:
        folder.chmod(stat.S_IRWXU)
    assert folder_hashes(folder) == before


def test_discovery_leaves_no_side_files(sqlite_store: Path, folder: Path) -> None:
    for name in ("a.sqlite", "b.db"):
        shutil.copy(sqlite_store, folder / name)
    (folder / "notes.db").write_bytes(b"not a database")
    before = folder_hashes(folder)
    result = subprocess.run([CKPT, "threads"], cwd=folder, capture_output=True, text=True)
    assert result.returncode == 3 and "several stores" in result.stderr
    assert folder_hashes(folder) == before


def test_every_read_keeps_to_what_the_docs_allow(sqlite_store: Path, folder: Path) -> None:
    """The shared check (tests/store_files.py) that the every-command test uses."""
    store = folder / "chat.sqlite"
    shutil.copy(sqlite_store, store)
    before = folder_hashes(folder)
    read_all(store)
    assert unexpected_changes(folder, before) == []
