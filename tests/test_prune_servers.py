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
from prune_checks import compare_with_langgraph
from schemas import follows_schema

# RedisSaver's JSON keeps an Enum as its bare value: copy refuses that thread into Redis.
NOT_IN_REDIS = {"custom-types"}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AgentManifest]:
    path = tmp_path_factory.mktemp("prune-servers") / "agents.sqlite"
    return path, build_sqlite(path)


# The default suite prunes a few threads of each kind (delta channels, a fork, subgraphs,
# an interrupt, a failure); `long` prunes them all.
SAMPLE = ("delta-exit", "delta-fork", "sup-interrupt", "nest-done", "fn-failed", "react-done")


def load(kind: str, source: Path, url: str, threads: tuple[str, ...] | None = None) -> None:
    """The agent threads (or `threads`) copied into a Redis or MongoDB store (ckpt copy)."""
    options = ["--renumber-versions"] if kind == "mongodb" else []
    chosen = [a for t in threads for a in ("--thread", t)] if threads else ["--all"]
    done = ckpt("copy", str(source), url, *chosen, "--apply", "--json", *options)
    refused = {t["thread_id"] for t in json.loads(done.stdout)["threads"] if t["refused"]}
    expected = NOT_IN_REDIS if kind == "redis" and not threads else set()
    assert refused == expected, done.output


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
        cases.append(pytest.param(kind, ["--keep-latest"], True, id=f"{kind}-keep-latest-sample"))
        for strategy in (["--keep-latest"], ["--keep-last", "2"]):
            cases.append(
                pytest.param(
                    kind,
                    strategy,
                    False,
                    marks=pytest.mark.long,
                    id=f"{kind}-{strategy[0].strip('-')}-all",
                )  # fmt: skip
            )
    return cases


@pytest.mark.parametrize(("two_stores", "strategy", "sample"), _cases(), indirect=["two_stores"])
def test_pruned_threads_resume_as_before(
    agents: tuple[Path, AgentManifest],
    two_stores: tuple[str, str, str],
    strategy: list[str],
    sample: bool,
) -> None:
    source, manifest = agents
    kind, original, pruned = two_stores
    for url in (original, pruned):
        load(kind, source, url, SAMPLE if sample else None)
    kept = set(SAMPLE) if sample else set(manifest["threads"])
    if kind == "redis":
        kept -= NOT_IN_REDIS
    manifest = {**manifest, "threads": {  # type: ignore[typeddict-item]
        t: g for t, g in manifest["threads"].items() if t in kept
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


def drop_checkpoint(kind: str, url: str, thread_id: str) -> str:
    """Delete, behind the saver's back, the oldest checkpoint of a thread that has pending
    writes, leaving its writes behind (what `check` calls orphan writes); its id."""
    if kind == "mongodb":
        from pymongo import MongoClient

        with MongoClient(url) as client:
            db = client.get_default_database()
            write = db.checkpoint_writes.find_one({"thread_id": thread_id, "checkpoint_ns": ""},
                                                  sort=[("checkpoint_id", 1)])  # fmt: skip
            assert write is not None
            cid = write["checkpoint_id"]
            db.checkpoints.delete_one(
                {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": cid}
            )
            return str(cid)
    import redis

    with redis.Redis.from_url(url, decode_responses=True) as client:
        keys = sorted(client.scan_iter(f"checkpoint_write:{thread_id}:__empty__:*", count=5000))
        cid = keys[0].split(":")[3]
        client.delete(f"checkpoint:{thread_id}:__empty__:{cid}")
        return cid


def writes_of(kind: str, url: str, checkpoint_id: str) -> int:
    """The write documents (and, Redis, registries) of one checkpoint."""
    if kind == "mongodb":
        from pymongo import MongoClient

        with MongoClient(url) as client:
            db = client.get_default_database()
            return int(db.checkpoint_writes.count_documents({"checkpoint_id": checkpoint_id}))
    import redis

    with redis.Redis.from_url(url, decode_responses=True) as client:
        return sum(1 for key in client.scan_iter("*", count=5000) if checkpoint_id in key
                   and not key.startswith("checkpoint:"))  # fmt: skip


@pytest.mark.parametrize("kind", ["redis", "mongodb"])
def test_orphans_then_delete(
    agents: tuple[Path, AgentManifest],
    kind: str,
    request: pytest.FixtureRequest,
    mongo_new_database: Callable[[], str],
) -> None:
    """--orphans removes the writes of a checkpoint deleted behind the saver's back and
    nothing LangGraph reads; --delete removes whole threads, every key or document."""
    source, manifest = agents
    url = request.getfixturevalue("redis_empty") if kind == "redis" else mongo_new_database()
    threads = ["react-done", "fn-interrupt", "sup-interrupt"]
    options = ["--renumber-versions"] if kind == "mongodb" else []
    selected = [a for t in threads for a in ("--thread", t)]
    assert ckpt("copy", str(source), url, *selected, "--apply", *options).exit_code == 0
    lost = drop_checkpoint(kind, url, "react-done")
    found = json.loads(ckpt("check", url, "--json").stdout)["findings"]
    assert "orphan-writes" in {f["code"] for f in found}, found
    subset: Any = {**manifest, "threads": {t: manifest["threads"][t] for t in threads}}
    with saver(kind, url) as before_saver:
        from fixtures.agents import GRAPH_FACTORIES

        from prune_checks import live_state

        def states(s: BaseCheckpointSaver[Any]) -> list[Any]:
            return [live_state(s, GRAPH_FACTORIES[g](s), t) for t, g in subset["threads"].items()]

        before = states(before_saver)
    plan = json.loads(ckpt("prune", url, "--all", "--orphans", "--json").stdout)
    assert plan["totals"]["writes"] > 0 and plan["totals"]["checkpoints"] == 0
    done = ckpt("prune", url, "--all", "--orphans", "--apply", "--json")
    assert done.exit_code == 0, done.output
    pruned = {t["thread_id"]: t["writes"] for t in json.loads(done.stdout)["threads"]}
    assert pruned["react-done"] > 0, pruned  # the writes of checkpoint `lost`
    assert writes_of(kind, url, lost) == 0
    found = json.loads(ckpt("check", url, "--json").stdout)["findings"]
    assert "orphan-writes" not in {f["code"] for f in found}, found
    with saver(kind, url) as after_saver:
        assert states(after_saver) == before
    gone = ckpt("prune", url, "--thread", "fn-interrupt", "--delete", "--apply")
    assert gone.exit_code == 0, gone.output
    left = snapshot(kind, url)
    assert "fn-interrupt" not in repr(left)
    assert "sup-interrupt" in repr(left)


@pytest.mark.parametrize("kind", ["redis", "mongodb"])
def test_a_killed_prune_leaves_each_thread_pruned_or_untouched(
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    mongo_new_database: Callable[[], str],
) -> None:
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time
    from contextlib import closing

    from ckpt.stores.sqlite.target import SCHEMA
    from server_stores import ROOT, server_thread_sizes

    source = tmp_path / "source.sqlite"
    with closing(sqlite3.connect(source)) as conn:
        conn.executescript(SCHEMA)
        body = b"\x82\xa1v\x04\xaechannel_values\x81\xa1x\xc4\x08" + os.urandom(8)
        rows = [
            (f"t{t:03d}", "", f"{c:08d}", f"{c - 1:08d}" if c else None, "msgpack", body, b"{}")
            for t in range(20) for c in range(100)
        ]  # fmt: skip
        conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        conn.commit()
    url = request.getfixturevalue("redis_empty") if kind == "redis" else mongo_new_database()
    options = ["--renumber-versions"] if kind == "mongodb" else []
    assert ckpt("copy", str(source), url, "--all", "--apply", *options).exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ckpt", "prune", url, "--all", "--keep-latest", "--apply"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server_thread_sizes(kind, url).count(1) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    counts = server_thread_sizes(kind, url)
    assert len(counts) == 20 and set(counts) == {1, 100}, counts  # killed midway


@pytest.mark.parametrize("kind", ["redis", "mongodb"])
def test_vacuum_says_what_the_server_gives_back(
    agents: tuple[Path, AgentManifest],
    kind: str,
    request: pytest.FixtureRequest,
    mongo_new_database: Callable[[], str],
) -> None:
    """Redis: its memory and what MEMORY PURGE may return; MongoDB: its collections and
    `compact`; a dry run runs nothing, --apply runs it and reports before and after."""
    from prune_checks import vacuum_json

    source, _ = agents
    url = request.getfixturevalue("redis_empty") if kind == "redis" else mongo_new_database()
    options = ["--renumber-versions"] if kind == "mongodb" else []
    assert (
        ckpt("copy", str(source), url, "--thread", "sup-done", "--apply", *options).exit_code == 0
    )
    assert ckpt("prune", url, "--all", "--keep-latest", "--apply").exit_code == 0
    report = vacuum_json(url)
    assert not report["applied"] and report["before"] is None and report["file_bytes"] is None
    shown = ckpt("vacuum", url).stdout
    if kind == "redis":
        assert (report["reclaim"], report["statement"], report["tables"]) == (
            "memory",
            "MEMORY PURGE",
            None,
        )
        memory = report["memory"]
        assert memory["used_bytes"] > 0 and memory["rss_bytes"] > 0
        assert "memory:" in shown and "used by data" in shown
    else:
        assert report["reclaim"] == "compact" and report["memory"] is None
        assert [t["table"] for t in report["tables"]] == ["checkpoints", "checkpoint_writes"]
        assert report["statement"] == "compact checkpoints; compact checkpoint_writes"
        stats = json.loads(ckpt("stats", url, "--json").stdout)
        assert report["tables"][0]["live_rows"] == stats["totals"]["checkpoints"]
    assert f"to run (or --apply): {report['statement']};" in shown
    done = vacuum_json(url, "--apply")
    assert done["applied"] and done["before"] is not None and done["after"] is not None
    assert ckpt("vacuum", url, "--apply").stdout.startswith(("TABLE", "memory:"))
