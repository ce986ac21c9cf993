"""Generated damage on the fixture stores of every kind, LangGraph as the oracle (issue 42
§1): every thread LangGraph's own saver cannot read as before is marked with an error by
`ckpt check`, and no undamaged thread is (tests/damage.py says how, and what is out of
reach: docs/json.md "What check cannot see").

`make test` runs a fixed sample of SAMPLE damages per kind; `make test-long` (marker
`long`) runs every damage generated (CKPT_DAMAGE_COUNT=N: a sample of N), and
bench/damage.md holds its numbers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.oracle import quiet_serde_log
from fixtures.state_oracle import demo_graphs

from checking import check, errors
from ckpt.cli import app
from ckpt.errors import ExitCode
from damage import Kind, Tally, generate, run, sample
from damage_stores import DevFolderKind, MongoKind, PostgresKind, RedisKind, SqliteKind
from invoke import runner
from marks import postgres_marked

SAMPLE = 30  # damages per kind in make test
SHARED_SAMPLE = 15  # of those, with the check shared between processes
KINDS = ("sqlite", "dev_folder", "postgres", "redis", "mongodb")
SHARED = ("sqlite", "postgres", "redis")  # the kinds several processes check together


def error_threads(target: str) -> set[str] | None:
    """The threads `ckpt check --json` marks with an error; None when it refuses the
    whole store (exit 4: one line on stderr, never a pass)."""
    result = runner.invoke(app, ["check", target, "--json", "--quiet"])
    if result.exit_code == ExitCode.UNREADABLE:
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
        return None
    return set().union(*errors(check(target)).values())


def shared_error_threads(target: str) -> set[str] | None:
    """`error_threads` of `ckpt check --jobs 3`, a thread a batch (the `shared` fixture):
    each damaged store read by three processes, which must say what one says."""
    result = runner.invoke(app, ["check", target, "--json", "--quiet", "--jobs", "3"])
    alone = runner.invoke(app, ["check", target, "--json", "--quiet", "--jobs", "1"])
    assert (result.exit_code, result.stdout) == (alone.exit_code, alone.stdout)
    if result.exit_code == ExitCode.UNREADABLE:
        return None
    return set().union(*errors(json.loads(result.stdout)).values())


@contextmanager
def damageable(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kind]:
    """The fixture store of kind `name`, in a copy, database or server of its own."""
    if name == "sqlite":
        yield SqliteKind(request.getfixturevalue("sqlite_store"), tmp_path)
    elif name == "dev_folder":
        yield DevFolderKind(request.getfixturevalue("dev_folder"), tmp_path)
    elif name == "postgres":
        from fixtures.postgres import build_postgres

        dsn = request.getfixturevalue("pg_new_database")()
        build_postgres(dsn)
        postgres = PostgresKind(dsn)
        try:
            yield postgres
        finally:
            postgres.close()
    elif name == "redis":
        from fixtures.redis_server import RedisServer
        from fixtures.redis_stores import build_redis

        with RedisServer() as server:
            build_redis(server.url)
            redis = RedisKind(server.url)
            try:
                yield redis
            finally:
                redis.close()
    else:
        from fixtures.mongo_server import MongoServer
        from fixtures.mongo_stores import build_mongo

        with MongoServer() as server:
            build_mongo(server.url)
            mongo = MongoKind(server.url)
            try:
                yield mongo
            finally:
                mongo.close()


def damage_run(kind: Kind, count: int | None, seed: int = 42, *, shared: bool = False) -> Tally:
    every = list(generate(kind, kind.rows()))
    chosen = every if count is None else sample(every, count, seed)
    with quiet_serde_log():
        tally = run(kind, chosen, shared_error_threads if shared else error_threads, demo_graphs)
    print(f"{tally.line()} (of {len(every)} generated)")
    return tally


def assert_caught(tally: Tally) -> None:
    assert tally.tried, "no damage was tried"
    assert not tally.false_alarms, tally.false_alarms
    assert not tally.misses, "\n".join(tally.misses)


@pytest.fixture(autouse=True)
def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stores were just written, so every checkpoint is recent: check asks again, for
    up to SETTLE seconds, for a recent one some writes name (a live run may be committing
    it). Nothing writes here; asked again once is enough."""
    monkeypatch.setattr("ckpt.scan.integrity.SETTLE", 0.0)


@pytest.mark.parametrize("name", postgres_marked(KINDS))
def test_every_damage_langgraph_trips_on_is_an_error_on_its_thread(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with damageable(name, request, tmp_path) as kind:
        assert_caught(damage_run(kind, SAMPLE))


@pytest.mark.parametrize("name", postgres_marked(SHARED))
def test_a_check_shared_between_processes_catches_the_same(
    name: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kinds whose check several processes share (ckpt.scan.split), a thread a batch
    so that each damaged thread is read by a worker: the same threads marked, and the
    same record, as one process gives."""
    from ckpt.scan import split

    monkeypatch.setattr("ckpt.scan.rows.BATCH_THREADS", 1)
    forked: list[int] = []
    fork = split._Worker.__init__

    def counted(self: split._Worker, *args: Any, **options: Any) -> None:
        forked.append(1)
        fork(self, *args, **options)

    monkeypatch.setattr(split._Worker, "__init__", counted)
    with damageable(name, request, tmp_path) as kind:
        assert_caught(damage_run(kind, SHARED_SAMPLE, seed=11, shared=True))
    assert forked  # the stores were shared, not read by one process


@pytest.mark.long
@pytest.mark.parametrize("name", postgres_marked(KINDS))
def test_every_generated_damage(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if "long" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a long run: -m long (make test-long)")
    count = os.environ.get("CKPT_DAMAGE_COUNT")
    with damageable(name, request, tmp_path) as kind:
        assert_caught(damage_run(kind, int(count) if count else None, seed=7))
