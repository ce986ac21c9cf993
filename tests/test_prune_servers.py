"""`ckpt prune` on RedisSaver and MongoDBSaver stores: a dry run changes nothing, --apply
keeps what resuming needs (delta snapshots and the chain to them), and LangGraph proves it:
every pruned thread reports the same state and carries on exactly as the unpruned one.
The stores are the SQLite agent fixtures copied into servers the tests start."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.agent_stores import build_sqlite
from fixtures.agents import AgentManifest
from langgraph.checkpoint.base import BaseCheckpointSaver

from invoke import ckpt
from schemas import follows_schema
from test_prune import compare_with_langgraph

# RedisSaver's JSON keeps an Enum as its bare value: copy refuses that thread into Redis.
NOT_IN_REDIS = {"custom-types"}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AgentManifest]:
    path = tmp_path_factory.mktemp("prune-servers") / "agents.sqlite"
    return path, build_sqlite(path)


def load(kind: str, source: Path, url: str) -> None:
    """The agent threads copied into a Redis or MongoDB store (ckpt copy)."""
    options = ["--renumber-versions"] if kind == "mongodb" else []
    done = ckpt("copy", str(source), url, "--all", "--apply", "--json", *options)
    refused = {t["thread_id"] for t in json.loads(done.stdout)["threads"] if t["refused"]}
    assert refused == (NOT_IN_REDIS if kind == "redis" else set()), done.output


@contextmanager
def saver(kind: str, url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    if kind == "redis":
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(url) as redis_saver:
            redis_saver.setup()
            yield redis_saver
    else:
        from langgraph.checkpoint.mongodb import MongoDBSaver
        from pymongo import MongoClient

        with MongoClient(url) as client:
            yield MongoDBSaver(client, db_name=client.get_default_database().name)


def snapshot(kind: str, url: str) -> Any:
    """Every key and value (Redis) or document (MongoDB): what a dry run must leave."""
    if kind == "redis":
        from fixtures.redis_stores import key_snapshot

        return key_snapshot(url)
    from pymongo import MongoClient

    with MongoClient(url) as client:
        db = client.get_default_database()
        return {
            name: sorted(repr(sorted(d.items())) for d in db[name].find({}, {"_id": 0}))
            for name in sorted(db.list_collection_names())
        }


@pytest.fixture
def two_stores(
    request: pytest.FixtureRequest, mongo_new_database: Callable[[], str]
) -> Iterator[tuple[str, str, str]]:
    """(kind, original, pruned): two stores of one kind, empty."""
    kind = request.param
    if kind == "mongodb":
        yield kind, mongo_new_database(), mongo_new_database()
        return
    from fixtures.redis_server import RedisServer

    with RedisServer() as original:
        yield kind, original.url, request.getfixturevalue("redis_empty")


def _cases() -> list[Any]:
    cases = []
    for kind in ("redis", "mongodb"):
        for strategy in (["--keep-latest"], ["--keep-last", "2"]):
            marks = [pytest.mark.long] if strategy != ["--keep-latest"] else []
            cases.append(pytest.param(kind, strategy, marks=marks, id=f"{kind}-{strategy[0]}"))
    return cases


@pytest.mark.parametrize(("two_stores", "strategy"), _cases(), indirect=["two_stores"])
def test_pruned_threads_resume_as_before(
    agents: tuple[Path, AgentManifest], two_stores: tuple[str, str, str], strategy: list[str]
) -> None:
    source, manifest = agents
    kind, original, pruned = two_stores
    for url in (original, pruned):
        load(kind, source, url)
    if kind == "redis":
        manifest = {**manifest, "threads": {  # type: ignore[typeddict-item]
            t: g for t, g in manifest["threads"].items() if t not in NOT_IN_REDIS
        }}  # fmt: skip
    before = snapshot(kind, pruned)
    dry = ckpt("prune", pruned, "--all", *strategy, "--json")
    assert dry.exit_code == 0, dry.output
    assert snapshot(kind, pruned) == before  # a dry run changes nothing
    plan = json.loads(dry.stdout)
    assert not plan["applied"] and plan["totals"]["checkpoints"] > 0
    done = ckpt("prune", pruned, "--all", *strategy, "--apply", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["applied"] and result["totals"] == plan["totals"]
    for record in (plan, result):
        follows_schema(record, "prune.schema.json")
        assert record["store"]["kind"] == kind
    reasons = {
        r for t in plan["threads"] for n in t["namespaces"] for k in n["kept"] for r in k["reasons"]
    }
    assert any(r.startswith("delta snapshot of") for r in reasons), reasons
    stats = json.loads(ckpt("stats", pruned, "--json").stdout)
    assert (
        stats["totals"]["checkpoints"]
        == json.loads(ckpt("stats", original, "--json").stdout)["totals"]["checkpoints"]
        - plan["totals"]["checkpoints"]
    )
    # Nothing left behind: no write whose checkpoint is gone (check finds none).
    found = json.loads(ckpt("check", pruned, "--json").stdout)
    assert "orphan-writes" not in {f["code"] for f in found["findings"]}, found["findings"]
    with saver(kind, original) as a, saver(kind, pruned) as b:
        assert compare_with_langgraph(a, b, manifest) == len(manifest["threads"])
