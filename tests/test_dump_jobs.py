"""`ckpt dump --jobs`: NDJSON made by several processes is, byte for byte, the text one
process makes, with the same errors, notices and hidden values (ckpt.analysis.fanout).

Runs are cut a thread each here (`one_thread_runs`), so that the small fixture stores
are shared between processes as a 20 GB store is; a spy on the workers proves that they
did ship runs, where a fallback to one process would give the same text too.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import ckpt
from ckpt.analysis import fanout
from ckpt.errors import CkptError, StoreUnreadable
from ckpt.stores.sqlite.store import SqliteStore
from hostile import build, cases
from pg import url_of
from promises import bases
from store_files import sqlite_stores, with_thread_copies

CKPT = Path(sys.executable).parent / "ckpt"
SEED = 42
HOSTILE_CASES = 40  # a deterministic sample of the SQLite cases of tests/hostile.py


@pytest.fixture
def one_thread_runs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every thread a run of its own; the list hears, for each run a worker was asked
    for, whether it shipped it (True) or left it to the main process (False)."""
    monkeypatch.setattr(fanout, "RUN_CHECKPOINTS", (1, 1))
    shipped: list[bool] = []
    take = fanout._Worker.take

    def spy(self: fanout._Worker) -> Iterator[bytes] | None:
        block = take(self)
        shipped.append(block is not None)
        return block

    monkeypatch.setattr(fanout._Worker, "take", spy)
    return shipped


def dumped(location: str, jobs: int, **options: Any) -> dict[str, Any]:
    """What `dump_text` gives: its text (up to an error), the error, what it hid and said."""
    pieces: list[str] = []
    error = None
    store = None
    try:
        store = ckpt.open(location, hidden="keep", **options)
        for piece in store.dump_text(jobs=jobs):
            pieces.append(piece)
    except CkptError as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if store is not None:
            store.close()
    return {
        "text": "".join(pieces),
        "error": error,
        "hidden": [str(e) for e in store.hidden] if store else [],
        "notices": list(store.notices) if store else [],
        "refused": list(store.refused) if store else [],
    }


def guarded(location: str, **options: Any) -> str:
    """dump's records (up to an error) as `dumps_line` writes them, after its look at each
    record (records.encode._plain_json): what `dump_text` writes without that look on a
    store of decoded values (Store.values_decoded), where orjson must write the same."""
    from ckpt.records.encode import dumps_line

    lines: list[str] = []
    with contextlib.suppress(CkptError), ckpt.open(location, hidden="keep", **options) as store:
        for record in store.dump(read_only=True):
            lines.append(dumps_line(record) + "\n")
    return "".join(lines)


def test_every_sqlite_store_dumps_the_same_text(
    fixture_dir: Path,
    samples: Path,
    encryption_key: bytes,
    one_thread_runs: list[bool],
    no_key: None,
) -> None:
    stores = sqlite_stores(fixture_dir, samples, encryption_key)
    for name, (path, options) in stores.items():
        one_thread_runs.clear()
        alone = dumped(str(path), 1, **options)
        shared = dumped(str(path), 3, **options)
        assert shared == alone, name
        assert alone["text"] or alone["error"], name
        assert alone["text"] == guarded(str(path), **options), name
        threads = len({json.loads(line)["thread_id"] for line in alone["text"].splitlines()})
        if threads > 2 and alone["hidden"]:  # the main process shows what a worker cannot
            assert False in one_thread_runs, name
        elif threads > 2:
            assert one_thread_runs and all(one_thread_runs), f"{name}: {one_thread_runs}"


def test_a_worker_that_fails_leaves_its_runs_to_the_main_process(
    sqlite_store: Path, one_thread_runs: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = dumped(str(sqlite_store), 1)

    def broken(self: SqliteStore) -> SqliteStore:
        raise StoreUnreadable("the worker cannot open the store")

    monkeypatch.setattr(SqliteStore, "fork", broken)  # the workers are forked after this
    assert dumped(str(sqlite_store), 2) == alone
    assert one_thread_runs and not any(one_thread_runs)


def test_hostile_sqlite_stores_dump_the_same_text(
    fixture_dir: Path, tmp_path: Path, one_thread_runs: list[bool]
) -> None:
    """A sample of tests/hostile.py's SQLite cases, half of them a damaged or odd thread
    id in the store of many threads (ids a worker's `thread_id IN (...)` might not find)."""
    found = [case for case in cases(bases(fixture_dir)) if case.base not in ("memory", "dev")]
    odd_ids = [c for c in found if c.base == "chat" and "thread" in c.name.split("/")[3]]
    rng = random.Random(SEED)
    chosen = rng.sample(odd_ids, HOSTILE_CASES // 2) + rng.sample(found, HOSTILE_CASES // 2)
    for number, case in enumerate(chosen):
        built = build(case, bases(fixture_dir), tmp_path / str(number))
        alone = dumped(built.store, 1)
        assert dumped(built.store, 3) == alone, case.name
        assert alone["text"] == guarded(built.store), case.name
    assert True in one_thread_runs


def test_the_lines_before_an_error_are_written(fixture_dir: Path, tmp_path: Path) -> None:
    """This process joins its lines into pieces: one that fails mid-way still writes every
    line before the error, as a dump a line at a time does."""
    (case,) = [
        c
        for c in cases(bases(fixture_dir))
        if c.name == "sqlite/chat/column/checkpoints.checkpoint=null/one"
    ]
    built = build(case, bases(fixture_dir), tmp_path / "store")
    alone = dumped(built.store, 1)
    assert alone["error"] and alone["text"].count("\n") > 10
    assert alone["text"] == guarded(built.store)


def test_one_process_for_a_small_store_or_a_filter(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forks: list[int] = []
    monkeypatch.setattr(fanout._Worker, "__init__", lambda *a, **k: forks.append(1))
    with ckpt.open(sqlite_store) as store:
        assert sum(1 for _ in store.dump_text()) > 0  # under AUTO_MIN_CHECKPOINTS
        thread = next(iter(store.threads()))["thread_id"]
        assert sum(1 for _ in store.dump_text(jobs=4, threads=[thread])) > 0
        assert sum(1 for _ in store.dump_text(jobs=4, ns="")) > 0
    assert forks == []


def test_one_process_where_the_system_cannot_fork(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = dumped(str(sqlite_store), 1)
    monkeypatch.delattr(os, "fork")  # as on Windows
    monkeypatch.setattr(fanout, "RUN_CHECKPOINTS", (1, 1))
    assert dumped(str(sqlite_store), 3) == alone


def test_threads_come_in_the_order_dump_reads_them(samples: Path, tmp_path: Path) -> None:
    for path in sorted(samples.glob("*.db")):
        with ckpt.open(path, hidden="keep") as store:
            listed = store._store.dump_threads()
            assert listed is not None, path.name
            text = "".join(store.dump_text(jobs=1))
            read = [json.loads(line)["thread_id"] for line in text.splitlines()]
        assert [t for t, _ in listed] == list(dict.fromkeys(read)), path.name
        assert sum(n for _, n in listed) == len(read), path.name
    mixed = tmp_path / "mixed.db"
    shutil.copy(samples / "sqlite_checkpoints.db", mixed)
    with closing(sqlite3.connect(mixed)) as conn, conn:
        conn.execute("UPDATE checkpoints SET thread_id = x'37' WHERE rowid = 1")
    with ckpt.open(mixed) as store:
        assert store._store.dump_threads() is None  # one process: `IN (...)` misses a blob


def test_runs_hold_whole_threads_in_order() -> None:
    counts = [(f"t{n:03d}", n % 7 + 1) for n in range(500)]
    runs = fanout.thread_runs(counts, 2)
    assert [t for run in runs for t in run] == [t for t, _ in counts]
    assert len(runs) == 2 * fanout.RUNS_PER_JOB


def _ckpt_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def many_threads(tmp_path_factory: pytest.TempPathFactory, sqlite_store: Path) -> Path:
    """chat.sqlite's rows copied to 40 threads: several runs of AUTO sizes, MBs of text."""
    path = tmp_path_factory.mktemp("jobs") / "many-threads.sqlite"
    return with_thread_copies(sqlite_store, path, 40)


def test_the_cli_dumps_alike_and_head_leaves_no_worker(many_threads: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([str(CKPT), "dump", str(many_threads), *args], capture_output=True)

    one, two = cli("--ndjson", "-j", "1"), cli("--ndjson", "--jobs", "2")
    assert one.returncode == two.returncode == 0
    assert one.stdout == two.stdout and two.stderr == b""
    dumper = subprocess.Popen(
        [str(CKPT), "dump", str(many_threads), "--ndjson", "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert dumper.stdout is not None and dumper.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=dumper.stdout, capture_output=True, check=True)
    dumper.stdout.close()
    assert dumper.wait(timeout=60) == 0
    assert dumper.stderr.read() == b""
    dumper.stderr.close()
    assert head.stdout == one.stdout.split(b"\n")[0] + b"\n"
    deadline = time.monotonic() + 10
    while _ckpt_processes(str(many_threads)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ckpt_processes(str(many_threads)) == []


def test_jobs_must_be_positive(sqlite_store: Path) -> None:
    result = subprocess.run(
        [str(CKPT), "dump", str(sqlite_store), "--jobs", "0"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "--jobs" in result.stderr


def test_progress_counts_the_lines_of_each_piece(capsys: pytest.CaptureFixture[str]) -> None:
    from ckpt.cli.compare import lines_in
    from ckpt.render.progress import counting

    pieces = [b"{}\n" * 40, b"{}\n", b"{}\n" * 59]  # a worker's block, a line, a block
    with counting(
        iter(pieces), enabled=True, label="dumping", delay=0.0, total=lambda: 100, weigh=lines_in
    ) as counted:
        assert list(counted) == pieces
    assert "dumping 100 checkpoints" in capsys.readouterr().err


def test_workers_end_when_the_main_process_is_killed(many_threads: Path) -> None:
    dumper = subprocess.Popen(
        [str(CKPT), "dump", str(many_threads), "--ndjson", "-j", "3"],
        stdout=subprocess.PIPE,  # never read: the main process blocks on a full pipe
        stderr=subprocess.DEVNULL,
    )
    assert dumper.stdout is not None
    dumper.stdout.read(1)  # it has started writing, its workers are forked
    deadline = time.monotonic() + 10
    while len(_ckpt_processes(str(many_threads))) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_ckpt_processes(str(many_threads))) == 3
    dumper.kill()
    dumper.wait()
    dumper.stdout.close()
    while _ckpt_processes(str(many_threads)) and time.monotonic() < deadline + 10:
        time.sleep(0.05)
    assert _ckpt_processes(str(many_threads)) == []  # no worker waits forever


# -- Postgres: one exported snapshot for every process ----------------------------------------


@pytest.fixture
def pg_copy(pg_new_database: Callable[[], str], sqlite_store: Path) -> tuple[str, str]:
    """chat.sqlite copied into a database of its own: (its DSN, its URL)."""
    dsn = pg_new_database()
    ckpt.copy(str(sqlite_store), url_of(dsn), all=True, apply=True)
    return dsn, url_of(dsn)


def _late_workers(monkeypatch: pytest.MonkeyPatch, gate: Path) -> None:
    """Workers that begin reading only once `gate` exists."""
    work = fanout._work

    def late(*args: Any) -> None:
        while not gate.exists():
            time.sleep(0.01)
        work(*args)

    monkeypatch.setattr(fanout, "_work", late)


@pytest.mark.postgres
def test_postgres_dumps_the_same_text(pg_store: Any, one_thread_runs: list[bool]) -> None:
    url = url_of(pg_store.dsn)
    assert dumped(url, 3) == dumped(url, 1)
    assert one_thread_runs and all(one_thread_runs)


@pytest.mark.postgres
def test_postgres_workers_read_the_main_processs_snapshot(
    pg_copy: tuple[str, str],
    one_thread_runs: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Rows deleted after the dump began, before any worker read: every worker still
    reads them, as the main process does (SET TRANSACTION SNAPSHOT)."""
    import psycopg

    dsn, url = pg_copy
    before = dumped(url, 1)["text"]
    gate = tmp_path / "go"
    _late_workers(monkeypatch, gate)
    with ckpt.open(url) as store:
        pieces = store.dump_text(jobs=2)
        first = next(pieces)  # the main process's first run: the workers are forked
        with psycopg.connect(dsn, autocommit=True) as conn:
            for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
                conn.execute(f"DELETE FROM {table}")
        gate.touch()
        text = first + "".join(pieces)
    assert one_thread_runs and all(one_thread_runs)  # the workers' runs, not the main's
    assert text == before
    assert dumped(url, 1)["text"] == ""  # the rows are gone for a new read


@pytest.mark.postgres
def test_postgres_main_read_stays_open_while_it_waits(
    pg_copy: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A server ends a session idle in its transaction (PgSession sets the limit): the main
    process keeps its read open while a worker is slow."""
    from ckpt.stores.postgres import session

    _, url = pg_copy
    before = dumped(url, 1)
    monkeypatch.setattr(session, "IDLE_IN_TRANSACTION_MS", 300)
    monkeypatch.setattr(fanout, "KEEP_ALIVE_SECONDS", 0.05)
    monkeypatch.setattr(fanout, "RUN_CHECKPOINTS", (1, 1))
    gate = tmp_path / "go"
    _late_workers(monkeypatch, gate)
    opening = threading.Timer(1.0, gate.touch)  # 3 times the limit: the workers are slow
    opening.start()
    try:
        assert dumped(url, 2) == before
    finally:
        opening.cancel()


# -- Redis: the same text, the key names read once ---------------------------------------------


@pytest.mark.parametrize("name", ["redis_url", "redis_shallow_url"])
def test_redis_dumps_the_same_text(
    name: str, request: pytest.FixtureRequest, one_thread_runs: list[bool]
) -> None:
    url = request.getfixturevalue(name)
    alone = dumped(url, 1)
    assert dumped(url, 3) == alone
    # A run whose reading says something (the notice of writes RedisSaver never reads)
    # is the main process's to read, and to say.
    assert one_thread_runs and all(one_thread_runs) == (alone["notices"] == [])


@pytest.mark.postgres
def test_postgres_connection_ended_before_the_dump_is_one_error(
    pg_copy: tuple[str, str],
) -> None:
    """The server ends the session (an admin, a restart) before the dump's transaction
    begins: one StoreUnreadable, as for any statement, no psycopg error."""
    import psycopg

    dsn, url = pg_copy
    with ckpt.open(url) as store:
        pid = store._store.conn.info.backend_pid
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreUnreadable):
            "".join(store.dump_text(jobs=2))
