"""ckpt agrees with LangGraph on every checkpoint of RedisSaver and ShallowRedisSaver stores
(issue 27): the comparison of tests/test_fidelity.py, against the savers' own get_state and
get_state_history on a real Redis 8.2 with RedisJSON and RediSearch. Where a saver
contradicts itself, the documented differences of tests/fidelity.py say so and count it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.fidelity import FidelityCase, build_js_server_cases, build_redis_cases
from fixtures.redis_server import RedisServer
from fixtures.redis_stores import key_snapshot

from fidelity import (
    LEGACY_MESSAGE,
    REDIS_EMPTY_NS,
    REDIS_EXCEPTION,
    REDIS_HISTORY,
    compare_case,
)

# Checkpoints each store holds at least: every one of the full saver, one per namespace of
# the shallow one.
AT_LEAST = {"demo-redis": 70, "demo-redis-shallow": 12}


@pytest.fixture(scope="module")
def redis_cases(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str, redis_shallow_url: str
) -> list[FidelityCase]:
    folder = tmp_path_factory.mktemp("fidelity-redis")
    return list(build_redis_cases(folder, redis_url, redis_shallow_url))


def test_every_redis_checkpoint_agrees_with_langgraph(
    redis_cases: list[FidelityCase], capsys: pytest.CaptureFixture[str]
) -> None:
    assert [case["name"] for case in redis_cases] == list(AT_LEAST)
    for case in redis_cases:
        report = compare_case(case)
        with capsys.disabled():
            print(f"\n{case['name']}: compared {dict(report.compared)}")
            for reason, count in sorted(report.differences.items()):
                print(f"  documented difference x{count}: {reason}")
        assert not report.mismatches, f"{case['name']}: {len(report.mismatches)} mismatches:\n" + (
            "\n".join(report.mismatches[:60])
        )
        assert report.compared["checkpoints"] >= 2 * AT_LEAST[case["name"]]  # at and history
        assert report.compared["tasks"] > 10 and report.compared["values"] > 20
        assert report.compared["interrupts"] > 0
        # lc:1 messages, as in old SQLite stores: RedisSaver writes every message so.
        known = {REDIS_HISTORY, REDIS_EXCEPTION, REDIS_EMPTY_NS, LEGACY_MESSAGE}
        known.add("empty channel shown as empty")
        assert set(report.differences) <= known, set(report.differences) - known


def test_every_js_redis_checkpoint_agrees_with_langgraph_js(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store LangGraph.js's RedisSaver wrote (its own key layout: the root namespace an
    empty segment, values apart as blobs by channel and version, has_writes a string),
    against LangGraph.js's getState / getStateHistory."""
    with RedisServer() as server:
        (case,) = build_js_server_cases(tmp_path, redis_url=server.url)
        before = key_snapshot(server.url)
        report = compare_case(case)
        assert key_snapshot(server.url) == before  # ckpt changed nothing
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
        for reason, count in sorted(report.differences.items()):
            print(f"  documented difference x{count}: {reason}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["checkpoints"] > 100 and report.compared["tasks"] > 50
    assert report.compared["interrupts"] > 0
