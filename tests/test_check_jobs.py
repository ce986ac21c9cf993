"""`ckpt check --jobs`: a check shared between processes gives, record for record, the
answer of one process, on healthy, damaged and hostile stores (ckpt.scan.split).

The batches are cut a thread each here (`one_thread_batches`), so that the small fixture
stores are shared as a 20 GB store is; a spy on the merges proves that runs were taken
from the workers (a run read again by the main process gives the same answer too)."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import ckpt
from checking import moved_and_relinked
from ckpt.cli import app
from ckpt.errors import CkptError, StoreUnreadable
from ckpt.records.model import DumpQuery, ThreadBytes
from ckpt.scan import split
from ckpt.scan.rows import rows_to_read
from ckpt.stores.sqlite.store import SqliteStore
from damage import generate, sample
from damage_stores import SqliteKind
from hostile import build, cases
from invoke import runner
from pg import url_of
from promises import bases
from store_files import sqlite_stores, with_thread_copies

CKPT = Path(sys.executable).parent / "ckpt"
SEED = 42
DAMAGES = 24  # a deterministic sample of tests/damage.py's damages of the SQLite fixture
HOSTILE_CASES = 24


@pytest.fixture
def one_thread_batches(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every thread a batch of its own; the list hears, for each run a worker read,
    whether its answer was taken (True) or the main process read the run again."""
    monkeypatch.setattr("ckpt.scan.rows.BATCH_THREADS", 1)
    monkeypatch.setattr("ckpt.scan.integrity.SETTLE", 0.0)  # nothing writes here
    taken: list[bool] = []
    merge, result = split._merge, split._Worker.result

    def merged(*args: Any) -> bool:
        taken.append(merge(*args))
        return taken[-1]

    def answer(self: split._Worker, tick: Any) -> dict[str, Any] | None:
        found = result(self, tick)
        if found is None:
            taken.append(False)  # not clean, or the worker failed
        return found

    monkeypatch.setattr(split, "_merge", merged)
    monkeypatch.setattr(split._Worker, "result", answer)
    return taken


def checked(location: str, jobs: int, **options: Any) -> dict[str, Any]:
    """What `check` gives (or the error it raises), with the notices the store said."""
    store = None
    try:
        store = ckpt.open(location, **options)
        record: dict[str, Any] = {"record": store.check(jobs=jobs)}
    except CkptError as exc:
        record = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        if store is not None:
            record["notices"] = list(store.notices)
            store.close()
    return record


def test_every_sqlite_store_checks_the_same(
    fixture_dir: Path,
    samples: Path,
    encryption_key: bytes,
    one_thread_batches: list[bool],
    no_key: None,
) -> None:
    stores = sqlite_stores(fixture_dir, samples, encryption_key)
    for name, (path, options) in stores.items():
        alone = checked(str(path), 1, **options)
        assert checked(str(path), 3, **options) == alone, name
    assert True in one_thread_batches  # runs were taken from workers


def test_a_healthy_store_is_taken_from_every_worker(
    sqlite_store: Path, one_thread_batches: list[bool]
) -> None:
    """Its findings (strict-mode values, failed and waiting threads) are added up from
    the workers' runs: nothing is read twice."""
    alone = checked(str(sqlite_store), 1)
    assert {f["code"] for f in alone["record"]["findings"]} >= {"strict-msgpack"}
    assert checked(str(sqlite_store), 3) == alone
    assert one_thread_batches == [True, True]


def test_damaged_stores_check_the_same(
    sqlite_store: Path, tmp_path: Path, one_thread_batches: list[bool]
) -> None:
    """A sample of tests/damage.py's damages (every column of every row changed, rows
    deleted, duplicated, moved between threads), each alone on the fixture store."""
    kind = SqliteKind(sqlite_store, tmp_path)
    for damage in sample(list(generate(kind, kind.rows())), DAMAGES, SEED):
        kind.reset()
        try:
            kind.apply(damage.ops)
        except Exception:  # the damage is refused by SQLite itself (tests/damage.py)
            continue
        alone = checked(kind.target(), 1)
        assert checked(kind.target(), 3) == alone, damage.name
    assert True in one_thread_batches and False in one_thread_batches


def test_the_thread_a_row_was_moved_from_is_named_from_a_clean_run(
    sqlite_store: Path, tmp_path: Path, one_thread_batches: list[bool]
) -> None:
    """A checkpoint moved and relinked into another thread (tests/test_check.py): the
    thread it left is whole, so a worker's run takes it as clean; its open ends come with
    the run's answer, and the main process names it as one process does."""
    path = tmp_path / "moved.sqlite"
    moved = moved_and_relinked(sqlite_store, path, "support-1", "approval-2")
    alone = checked(str(path), 1)
    assert checked(str(path), 3) == alone
    (lost,) = next(
        f["places"] for f in alone["record"]["findings"] if f["code"] == "missing-checkpoint"
    )
    assert (lost["thread_id"], lost["checkpoint_id"]) == ("support-1", moved)
    assert True in one_thread_batches


def test_a_thread_copied_into_a_later_run_is_read_again(
    sqlite_store: Path, tmp_path: Path, one_thread_batches: list[bool]
) -> None:
    """The first thread copied whole (ids, parent links and writes) as the last thread,
    read by a worker alone: nothing is wrong inside its run, but its ids were met in an
    earlier run (the ids read again), so the main process reads it again, as one process
    reads it (a look-up by id, then a shared history or a copied checkpoint)."""
    path = tmp_path / "copied.sqlite"
    with_thread_copies(sqlite_store, path, 0)
    with closing(sqlite3.connect(path)) as conn, conn:
        (first,) = conn.execute("SELECT min(thread_id) FROM checkpoints").fetchone()
        for table in ("checkpoints", "writes"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            select = ", ".join("'~copy'" if c == "thread_id" else c for c in columns)
            conn.execute(f"INSERT INTO {table} SELECT {select} FROM {table} WHERE thread_id = ?",
                         (first,))  # fmt: skip
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
    alone = checked(str(path), 1)
    assert checked(str(path), threads) == alone
    assert one_thread_batches[-1] is False and all(one_thread_batches[:-1])


def test_hostile_sqlite_stores_check_the_same(
    fixture_dir: Path, tmp_path: Path, one_thread_batches: list[bool]
) -> None:
    """A sample of tests/hostile.py's SQLite cases; on each, the ids read again for a run
    are those of the rows its pass reads (odd thread ids, odd id types)."""
    found = [case for case in cases(bases(fixture_dir)) if case.base not in ("memory", "dev")]
    for number, case in enumerate(random.Random(SEED).sample(found, HOSTILE_CASES)):
        built = build(case, bases(fixture_dir), tmp_path / str(number))
        assert checked(built.store, 3) == checked(built.store, 1), case.name
        try:
            with ckpt.open(built.store) as opened:
                store = opened.backend
                for batch in split.thread_batches(store.sizes(DumpQuery())):
                    query = DumpQuery(thread_ids=tuple(batch))
                    rows = [row.checkpoint_id for row in store.raw_checkpoints(query, data=False)]
                    assert Counter(store.checkpoint_ids(query)) == Counter(rows), case.name
        except CkptError:
            continue  # refused whole: no pass to share
    assert True in one_thread_batches


def test_progress_counts_every_row_once(
    sqlite_store: Path, tmp_path: Path, one_thread_batches: list[bool]
) -> None:
    damaged = tmp_path / "damaged.sqlite"
    with_thread_copies(sqlite_store, damaged, 3)
    with closing(sqlite3.connect(damaged)) as conn, conn:
        conn.execute("UPDATE checkpoints SET metadata = x'00' WHERE thread_id LIKE 'copy-02-%'")
    for path in (sqlite_store, damaged):
        with ckpt.open(path) as store:
            heard: list[int] = []
            store.check(jobs=3, progress=heard.append)
            total = rows_to_read(store.backend.sizes(DumpQuery()))
        assert sum(heard) == total, path
    assert one_thread_batches.count(False) >= 1


def test_a_worker_that_fails_leaves_its_run_to_the_main_process(
    sqlite_store: Path, one_thread_batches: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = checked(str(sqlite_store), 1)

    def broken(self: SqliteStore) -> SqliteStore:
        raise StoreUnreadable("the worker cannot open the store")

    monkeypatch.setattr(SqliteStore, "fork", broken)  # the workers are forked after this
    assert checked(str(sqlite_store), 3) == alone
    assert one_thread_batches == [False, False]  # no answer to take: both runs read here


def test_no_process_to_fork_leaves_the_runs_to_the_main_process(
    sqlite_store: Path, one_thread_batches: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = checked(str(sqlite_store), 1)
    before = len(os.listdir("/proc/self/fd"))

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")  # a process limit

    monkeypatch.setattr(os, "fork", refused)
    assert checked(str(sqlite_store), 3) == alone
    assert one_thread_batches == []  # no worker: every run read here
    assert len(os.listdir("/proc/self/fd")) == before  # its pipe and file closed


def test_one_process_for_a_small_store_a_filter_or_no_fork(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forks: list[int] = []
    monkeypatch.setattr(split._Worker, "__init__", lambda *a, **k: forks.append(1))
    with ckpt.open(sqlite_store) as store:
        whole = store.check()  # under AUTO_MIN_CHECKPOINTS
        thread = next(iter(store.threads()))["thread_id"]
        store.check(jobs=4, threads=[thread])
    monkeypatch.delattr("os.fork")  # as on Windows
    with ckpt.open(sqlite_store) as store:
        assert store.check(jobs=4)["findings"] == whole["findings"]
    assert forks == []


def test_runs_hold_whole_batches_in_order(samples: Path) -> None:
    with ckpt.open(samples / "sqlite_checkpoints.db") as store:
        sizes = store.backend.sizes(DumpQuery())
    batches = list(split.thread_batches(sizes))
    for jobs in (1, 2, 3, 8):
        runs = split.runs_of(sizes, jobs)
        assert 1 <= len(runs) <= min(jobs, len(batches))
        assert [t for run in runs for t in run] == [t for batch in batches for t in batch]
        assert [list(split.thread_batches(run)) for run in runs] == [
            [b for b in batches if b[0] in run] for run in runs
        ]


def test_the_cli_checks_alike(sqlite_store: Path, one_thread_batches: list[bool]) -> None:
    one = runner.invoke(app, ["check", str(sqlite_store), "--json", "-j", "1"])
    two = runner.invoke(app, ["check", str(sqlite_store), "--json", "--jobs", "2"])
    assert (one.exit_code, one.stdout) == (two.exit_code, two.stdout)
    assert two.stderr == "" and one_thread_batches == [True]
    zero = subprocess.run(
        [str(CKPT), "check", str(sqlite_store), "--jobs", "0"], capture_output=True, text=True
    )
    assert zero.returncode == 2 and "--jobs" in zero.stderr


def test_runs_are_cut_nearest_to_their_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 400, 400 and 200 threads for two processes: 400 and 600, not 800 and
    200 (the Postgres bench store, whose batches are cut by rows)."""
    monkeypatch.setattr("ckpt.scan.rows.BATCH_THREADS", 400)
    sizes = {f"t{n:04d}": ThreadBytes(checkpoints=1) for n in range(1000)}
    assert [len(run) for run in split.runs_of(sizes, 2)] == [400, 600]
    assert [len(run) for run in split.runs_of(sizes, 3)] == [400, 400, 200]
    monkeypatch.setattr("ckpt.scan.rows.BATCH_THREADS", 100)
    assert [len(run) for run in split.runs_of(sizes, 2)] == [500, 500]
    assert [len(run) for run in split.runs_of(sizes, 3)] == [300, 400, 300]
    assert [len(run) for run in split.runs_of(sizes, 20)] == [100] * 10


@pytest.mark.postgres
def test_postgres_checks_the_same(pg_store: Any, one_thread_batches: list[bool]) -> None:
    url = url_of(pg_store.dsn)
    alone = checked(url, 1)
    assert checked(url, 3) == alone
    assert True in one_thread_batches


@pytest.mark.parametrize("name", ["redis_url", "redis_shallow_url"])
def test_redis_checks_the_same(
    name: str, request: pytest.FixtureRequest, one_thread_batches: list[bool]
) -> None:
    url = request.getfixturevalue(name)
    alone = checked(url, 1)
    assert checked(url, 3) == alone
    assert one_thread_batches
