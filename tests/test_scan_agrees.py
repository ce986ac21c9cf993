"""`ckpt stats`, `ckpt types` and `ckpt check` read a store through one pass (ckpt.scan.rows):
on every fixture store, undamaged and damaged, stats' health section and check say the same,
and the store's own SQL shortcut (`Store.health`) counts what the scan counts. `check
--thread` reads only the threads asked for."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

import ckpt
from agreement import assert_health_agrees, assert_stats_and_check_agree
from checking import check, errors
from ckpt.records.model import DumpQuery
from ckpt.stores import open_store
from pg import PgStore, url_of

KEY = "0123456789abcdef"  # the key of the checked-in encrypted samples
SAMPLES = [
    "sqlite_checkpoints.db",
    "sqlite_delta.db",
    "sqlite_encrypted.db",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db",
    "legacy_lg0.2.16_cp1.0.9_sqlite.db",
    "legacy_lg0.1.19_sqlite.db",
    "memory_persistentdict.pkl",
    "memory_persistentdict_cp2.0.21.pkl",
]


def test_the_session_stores_agree(
    sqlite_store: Path,
    encrypted_store: Path,
    encryption_key: bytes,
    dev_folder: Path,
    memory_pkl: Path,
) -> None:
    for store in (sqlite_store, dev_folder, memory_pkl, encrypted_store):
        assert_stats_and_check_agree(str(store))
        assert_health_agrees(str(store))
    assert_stats_and_check_agree(str(encrypted_store), "--aes-key", encryption_key.decode())


@pytest.mark.parametrize("name", SAMPLES)
def test_the_samples_agree(samples: Path, name: str) -> None:
    assert_stats_and_check_agree(str(samples / name), "--aes-key", KEY)
    assert_health_agrees(str(samples / name), KEY.encode())


def test_damaged_stores_agree(sqlite_store: Path, tmp_path: Path) -> None:
    """Damage of every kind the checks know, each on its own thread of one copy."""
    path = tmp_path / "damaged.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        newest = dict(
            conn.execute(
                "SELECT thread_id, max(checkpoint_id) FROM checkpoints WHERE checkpoint_ns = '' "
                "GROUP BY thread_id"
            )
        )
        middle = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'support-1' "
            "AND checkpoint_ns = '' ORDER BY checkpoint_id LIMIT 1 OFFSET 5"
        ).fetchone()[0]
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (middle,))
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (newest["approval-2"],))
        conn.execute(
            "UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, 40) WHERE checkpoint_id = ?",
            (newest["approval-1"],),
        )
        conn.execute(
            "UPDATE checkpoints SET metadata = CAST('[]' AS BLOB) WHERE checkpoint_id = ?",
            (newest["fork-1"],),
        )
        conn.execute(
            "UPDATE writes SET type = 'empty' WHERE rowid = (SELECT min(rowid) FROM writes "
            "WHERE thread_id = 'support-2')"
        )
        conn.execute(
            "INSERT INTO writes VALUES ('support-3', '', 'gone', 'task', '', 0, 'x', 'null', NULL)"
        )
    checked = assert_stats_and_check_agree(str(path))
    assert errors(checked) == {
        "dangling-parent": {"support-1"},
        "missing-checkpoint": {"approval-2"},
        "undecodable": {"approval-1"},
        "malformed-metadata": {"fork-1"},
        # support-3's write names 'gone': no checkpoint id (a key changed), an error.
        "malformed-write": {"support-2", "support-3"},
    }
    assert {f["code"] for f in checked["findings"] if f["severity"] == "warning"} >= {
        "orphan-writes"
    }
    health = assert_health_agrees(str(path))
    assert health.orphan_writes > 1 and health.missing_parents == 1


@pytest.mark.postgres
@pytest.mark.parametrize("name", ["current", "legacy", "shallow"])
def test_postgres_eras_agree(name: str, pg_dump_loader: Callable[[str], str]) -> None:
    url = url_of(pg_dump_loader(name))
    assert_stats_and_check_agree(url, "--aes-key", KEY)
    assert_health_agrees(url, KEY.encode())


@pytest.mark.postgres
def test_a_postgres_store_agrees(pg_store: PgStore, pg_shallow_store: PgStore) -> None:
    for store in (pg_store, pg_shallow_store):
        url = url_of(store.dsn)
        assert_stats_and_check_agree(url)
        assert_health_agrees(url)


def test_redis_and_mongodb_agree(redis_url: str, mongo_url: str) -> None:
    for url in (redis_url, mongo_url):
        assert_stats_and_check_agree(url)
        assert_health_agrees(url)


# -- check --thread reads only those threads ---------------------------------------------------


def test_check_reads_only_the_threads_asked_for(sqlite_store: Path) -> None:
    with ckpt.open(sqlite_store) as store:
        backend = store.backend
        asked: list[tuple[str, ...]] = []
        listed: list[bool] = []
        for name in ("raw_checkpoints", "raw_blobs", "raw_writes"):
            original = getattr(backend, name)

            def spy(query: DumpQuery, *, data: bool = True, _read=original):  # type: ignore[no-untyped-def]
                asked.append(query.thread_ids)
                return _read(query, data=data)

            setattr(backend, name, spy)
        threads = backend.threads

        def listing(**options):  # type: ignore[no-untyped-def]
            listed.append(True)
            return threads(**options)

        backend.threads = listing  # type: ignore[method-assign]
        seen: list[int] = []
        record = store.check(threads=["support-2", "fanout-1"], progress=seen.append)
        total = store.rows_to_read(["support-2", "fanout-1"])
    assert asked and all(set(t) == {"fanout-1", "support-2"} for t in asked)
    assert listed == []  # no listing of every thread for the thread records
    assert record["scanned"]["threads"] == 2
    assert sum(seen) == total
    with open_store(str(sqlite_store)) as whole:
        sizes = whole.sizes(DumpQuery(thread_ids=("support-2", "fanout-1")))
    assert total == sum(s.checkpoints + s.blobs + s.writes for s in sizes.values())
    assert {f["code"] for f in record["findings"]} >= {"failed-thread"}


# -- a SQLite pass counts the sizes it reads ---------------------------------------------------


@pytest.mark.parametrize(
    "retyped", [None, "CAST(thread_id AS BLOB)", "CAST(thread_id || X'FF' AS TEXT)"]
)
def test_sqlite_check_sizes_the_store_as_sizes_does(
    sqlite_store: Path, tmp_path: Path, retyped: str | None
) -> None:
    """check counts each thread's bytes from the rows of its pass (Store.pass_sizes): the
    same as Store.sizes, also in a store where a thread id is a BLOB or not UTF-8 (no
    statement naming it as text finds its rows: it is sized as Store.sizes sizes it)."""
    copy = tmp_path / "store.sqlite"
    shutil.copyfile(sqlite_store, copy)
    if retyped is not None:
        with closing(sqlite3.connect(copy)) as conn:
            (thread,) = conn.execute("SELECT min(thread_id) FROM checkpoints").fetchone()
            for table in ("checkpoints", "writes"):
                conn.execute(
                    f"UPDATE {table} SET thread_id = {retyped} WHERE thread_id = ?", (thread,)
                )
            conn.commit()
    with open_store(str(copy)) as store:
        sizes = store.sizes(DumpQuery())
        counts, counted = store.pass_sizes(DumpQuery())
    assert counted == (retyped is None)
    assert set(counts) == set(sizes)
    assert [c.checkpoints for c in counts.values()] == [s.checkpoints for s in sizes.values()]
    assert check(str(copy))["scanned"]["bytes"] == sum(s.total for s in sizes.values())
