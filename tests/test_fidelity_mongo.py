"""ckpt agrees with LangGraph on every checkpoint of a MongoDBSaver store (issue 27): the
comparison of tests/test_fidelity.py against MongoDBSaver's own get_state and
get_state_history, on the nx-27017 test server (fixtures/mongo_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.fidelity import FidelityCase, build_js_server_cases, build_mongo_cases
from fixtures.mongo_server import MongoServer
from fixtures.mongo_stores import document_snapshot

from fidelity import compare_case


@pytest.fixture(scope="module")
def mongo_cases(tmp_path_factory: pytest.TempPathFactory, mongo_url: str) -> list[FidelityCase]:
    return list(build_mongo_cases(tmp_path_factory.mktemp("fidelity-mongo"), mongo_url))


def test_every_mongodb_checkpoint_agrees_with_langgraph(
    mongo_cases: list[FidelityCase], capsys: pytest.CaptureFixture[str]
) -> None:
    for case in mongo_cases:
        report = compare_case(case)
        with capsys.disabled():
            print(f"\n{case['name']}: compared {dict(report.compared)}")
            for reason, count in sorted(report.differences.items()):
                print(f"  documented difference x{count}: {reason}")
        assert not report.mismatches, f"{case['name']}: {len(report.mismatches)} mismatches:\n" + (
            "\n".join(report.mismatches[:60])
        )
        assert report.compared["checkpoints"] >= 2 * 79  # every checkpoint, at and history
        assert report.compared["tasks"] > 50 and report.compared["values"] > 100
        assert report.compared["interrupts"] > 0
        assert set(report.differences) <= {"empty channel shown as empty"}


def test_every_js_mongodb_checkpoint_agrees_with_langgraph_js(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store LangGraph.js's MongoDBSaver wrote (JSON text as binary, in database `test`),
    against LangGraph.js's getState / getStateHistory."""
    with MongoServer() as server:
        (case,) = build_js_server_cases(tmp_path, mongo_url=server.url)
        before = document_snapshot(server.url, "test")
        report = compare_case(case)
        assert document_snapshot(server.url, "test") == before  # ckpt changed nothing
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["checkpoints"] > 100 and report.compared["tasks"] > 50
    assert report.compared["interrupts"] > 0
