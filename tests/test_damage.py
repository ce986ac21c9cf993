"""Generated damage on the fixture stores of every kind, LangGraph as the oracle (issue 42
§1): every thread LangGraph's own saver cannot read as before is marked with an error by
`ckpt check`, and no undamaged thread is (tests/damage.py says how, and what is out of
reach)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.oracle import quiet_serde_log
from fixtures.state_oracle import demo_graphs

from checking import check, errors
from ckpt.cli import app
from ckpt.errors import ExitCode
from damage import Kind, Tally, generate, run, sample
from damage_stores import DevFolderKind, MongoKind, PostgresKind, RedisKind, SqliteKind
from invoke import runner
from runs import NewDatabase

SAMPLE = 40  # damages per kind in the normal suite


def error_threads(target: str) -> set[str] | None:
    """The threads `ckpt check --json` marks with an error; None when it refuses the
    whole store (exit 4: one line on stderr, never a pass)."""
    result = runner.invoke(app, ["check", target, "--json", "--quiet"])
    if result.exit_code == ExitCode.UNREADABLE:
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
        return None
    return set().union(*errors(check(target)).values())


def damage_run(kind: Kind, count: int | None) -> Tally:
    every = list(generate(kind, kind.rows()))
    chosen = every if count is None else sample(every, count)
    with quiet_serde_log():
        tally = run(kind, chosen, error_threads, demo_graphs)
    print(tally.line())
    return tally


def assert_caught(tally: Tally) -> None:
    assert not tally.false_alarms, tally.false_alarms
    assert not tally.misses, "\n".join(tally.misses)


def test_sqlite_damage(sqlite_store: Path, tmp_path: Path) -> None:
    assert_caught(damage_run(SqliteKind(sqlite_store, tmp_path), SAMPLE))


def test_dev_folder_damage(dev_folder: Path, tmp_path: Path) -> None:
    assert_caught(damage_run(DevFolderKind(dev_folder, tmp_path), SAMPLE))


@pytest.mark.postgres
def test_postgres_damage(pg_new_database: NewDatabase) -> None:
    from fixtures.postgres import build_postgres

    dsn = pg_new_database()
    build_postgres(dsn)
    kind = PostgresKind(dsn)
    try:
        assert_caught(damage_run(kind, SAMPLE))
    finally:
        kind.close()


def test_redis_damage() -> None:
    from fixtures.redis_server import RedisServer
    from fixtures.redis_stores import build_redis

    with RedisServer() as server:
        build_redis(server.url)
        kind = RedisKind(server.url)
        try:
            assert_caught(damage_run(kind, SAMPLE))
        finally:
            kind.close()


def test_mongodb_damage() -> None:
    from fixtures.mongo_server import MongoServer
    from fixtures.mongo_stores import build_mongo

    with MongoServer() as server:
        build_mongo(server.url)
        kind = MongoKind(server.url)
        try:
            assert_caught(damage_run(kind, SAMPLE))
        finally:
            kind.close()
