"""ckpt agrees with LangGraph on every checkpoint of every thread and namespace of every
fixture store: `next` in order, the tasks with their ids, errors and interrupts, the
interrupts of each step, the values (delta channels rebuilt), and what is left to run on
the latest checkpoints (tests/fidelity.py has the rules; fixtures/fidelity.py the stores).
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest
from fixtures.fidelity import FidelityCase, build_cases

from fidelity import Report, compare_case
from runs import NewDatabase, built_once

# The fixture stores include Postgres databases: every test here needs the server.
pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def fidelity_cases(
    tmp_path_factory: pytest.TempPathFactory, pg_new_database: NewDatabase
) -> list[FidelityCase]:
    """Every store (Python and LangGraph.js savers, every era) with LangGraph's answers,
    built once per run (the stores are only read)."""

    def build(folder: Path) -> list[FidelityCase]:
        return list(build_cases(folder, functools.partial(pg_new_database, shared=True)))

    cases: list[FidelityCase] = built_once(tmp_path_factory, "fidelity", build)
    return cases


def test_every_checkpoint_agrees_with_langgraph(
    fidelity_cases: list[FidelityCase], capsys: pytest.CaptureFixture[str]
) -> None:
    reports: list[Report] = [compare_case(case) for case in fidelity_cases]
    totals: Counter[str] = Counter()
    differences: Counter[str] = Counter()
    for report in reports:
        totals.update(report.compared)
        differences.update(report.differences)
    with capsys.disabled():  # what was compared, and the documented differences
        print(f"\nfidelity: {len(reports)} stores, compared {dict(totals)}")
        for reason, count in sorted(differences.items()):
            print(f"  documented difference x{count}: {reason}")
    mismatches = [line for report in reports for line in report.mismatches]
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:200])
    # Every kind of store took part, and each compared what it holds.
    names = {case["name"] for case in fidelity_cases}
    assert {"demo-sqlite", "demo-postgres", "demo-dev-folder", "js-sqlite", "js-postgres"} <= names
    assert any(name.startswith("sample-legacy") for name in names)
    assert totals["checkpoints"] > 2000 and totals["tasks"] > 1500 and totals["values"] > 3000


@pytest.mark.parametrize(
    "name",
    ["demo-sqlite", "agents-sqlite", "agents-postgres", "js-sqlite", "sample-sqlite_delta.db"],
)
def test_every_case_compares_something(fidelity_cases: list[FidelityCase], name: str) -> None:
    """No case passes by comparing nothing: checkpoints, next, tasks and values each count."""
    case = next(c for c in fidelity_cases if c["name"] == name)
    report = compare_case(case)
    assert report.compared["checkpoints"] > 10
    assert report.compared["tasks"] > 5 and report.compared["values"] > 10


def test_a_wrong_answer_is_caught(fidelity_cases: list[FidelityCase], tmp_path: Path) -> None:
    """The comparison fails when LangGraph's recorded answer is changed: a task's id, the
    order of `next`, a value, an interrupt id."""
    import json

    case = next(c for c in fidelity_cases if c["name"] == "agents-sqlite")
    oracle = json.loads(Path(case["oracle"]).read_text())
    at = [snap for snap in oracle["snapshots"] if snap["mode"] == "at"]
    ordered = next(s for s in at if len(set(s["next"])) > 1)
    ordered["next"].reverse()
    with_task = next(s for s in at if s["tasks"] and s is not ordered)
    with_task["tasks"][0]["id"] = "00000000-0000-0000-0000-00000000beef"
    with_interrupt = next(s for s in at if s["interrupts"] and s is not with_task)
    with_interrupt["interrupts"][0]["id"] = "not-the-id"
    with_value = next(
        s for s in at if isinstance(s["values"], dict) and s["values"].get("n") is not None
    )
    with_value["values"]["n"] = -1
    edits = 4
    assert edits == 4
    changed = tmp_path / "oracle.json"
    changed.write_text(json.dumps(oracle))
    report = compare_case({**case, "oracle": str(changed)})
    found = " ".join(report.mismatches)
    assert "next" in found and "beef" in found and "interrupts" in found and "value of n" in found
