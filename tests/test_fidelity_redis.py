"""ckpt agrees with LangGraph on every checkpoint of a RedisSaver store (issue 27): the same
comparison as tests/test_fidelity.py, against RedisSaver's own get_state and
get_state_history on a real Redis 8.2 with RedisJSON and RediSearch."""

from __future__ import annotations

import pytest
from fixtures.fidelity import FidelityCase, build_redis_cases

from fidelity import compare_case


@pytest.fixture(scope="module")
def redis_cases(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> list[FidelityCase]:
    return list(build_redis_cases(tmp_path_factory.mktemp("fidelity-redis"), redis_url))


def test_every_redis_checkpoint_agrees_with_langgraph(redis_cases: list[FidelityCase]) -> None:
    for case in redis_cases:
        report = compare_case(case)
        assert not report.mismatches, f"{case['name']}: {len(report.mismatches)} mismatches:\n" + (
            "\n".join(report.mismatches[:60])
        )
        assert report.compared["checkpoints"] > 50
        assert report.compared["tasks"] > 20 and report.compared["values"] > 50
