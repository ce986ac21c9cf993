"""`ckpt migrate` on a LangGraph.js store (the layout is SqliteSaver's; bodies and values are
JSON, task ids uuid5, writes have no task_path): fixtures/js/migrate_graphs.mjs's v1 graph
writes the store through LangGraph.js's own SqliteSaver, and LangGraph.js under v2 is the
judge, as tests/test_migrate.py does with Python LangGraph. Without migrate v2 loses the
renamed key and resuming runs nothing; after it, v2's state and history of every checkpoint
are v1's renamed, the raw rows hold no old name, and the interrupted threads resume (one by
its interrupt's id) to the state a from-scratch v2 run reaches, running no node twice.

Two node processes for the whole module: one writes v1, one reads and resumes under v2."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.js_stores import run_js_migrate_graphs

import ckpt
from ckpt.errors import Unsafe
from invoke import ckpt as run_ckpt

STEPS = ["--rename-channel", "notes=findings", "--drop-channel", "scratch",
         "--rename-node", "review=approve"]  # fmt: skip
STEP_NAMES = ["rename_channel:notes=findings", "drop_channel:scratch",
              "rename_node:review=approve"]  # fmt: skip
RENAMED_CHANNELS = {"notes": "findings"}
RENAMED_NODES = {"review": "approve"}
GONE = {"notes", "scratch", "review", "branch:to:review"}
THREADS = ("done-1", "done-by-id", "waiting-1", "waiting-2")
WAITING = ("waiting-1", "waiting-2")


@dataclass(frozen=True)
class JsRun:
    v1_store: Path
    v1_history: dict[str, list[dict[str, Any]]]
    migrated: Path
    record: dict[str, Any]  # migrate --apply --json
    names_after_migrate: set[str]  # raw names in the migrated store before v2 touched it
    ids_before: tuple[set[str], set[str]]  # interrupt_ids() of v1's store
    ids_after_migrate: tuple[set[str], set[str]]  # and of the migrated store, before v2
    check_after_migrate: Any  # `ckpt check` of the migrated store, before v2
    unmigrated: dict[str, Any]  # v2 on a copy of v1: {"history", "resumed"}
    after: dict[str, Any]  # v2 on the migrated store: {"history", "resumed"}
    fresh: dict[str, Any]  # v2 from scratch: {"resumed"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def migrate_json(*args: str) -> dict[str, Any]:
    result = run_ckpt("migrate", *args, "--json")
    assert result.exit_code == 0, result.output
    record: dict[str, Any] = json.loads(result.stdout)
    return record


def raw_names(path: Path) -> set[str]:
    """Every name a raw row holds where LangGraph.js looks names up: the body's channel
    values (and the input's keys under `__start__`), versions, versions_seen keys and inner
    keys, updated_channels, write channels; every row is LangGraph.js's JSON."""
    names: set[str] = set()
    with closing(sqlite3.connect(path)) as conn:
        for tag, body in conn.execute("SELECT type, checkpoint FROM checkpoints"):
            assert tag == "json"
            document = json.loads(body)
            values = document["channel_values"]
            names.update(values)
            names.update(values.get("__start__") or ())
            names.update(document["channel_versions"])
            names.update(document.get("updated_channels") or ())
            for node, seen in document["versions_seen"].items():
                names.add(node)
                names.update(seen)
        for tag, channel in conn.execute("SELECT type, channel FROM writes"):
            assert tag == "json"
            names.add(channel)
    return names


def interrupt_ids(path: Path) -> tuple[set[str], set[str]]:
    """The ids of the interrupts the store's `__interrupt__` writes hold, and the task ids
    of its `__resume__` writes that are interrupt ids (32 hex digits): LangGraph.js saves
    `Command({resume: {interruptId: value}})` that way."""
    asked: set[str] = set()
    answered: set[str] = set()
    with closing(sqlite3.connect(path)) as conn:
        for task_id, channel, value in conn.execute("SELECT task_id, channel, value FROM writes"):
            if channel == "__interrupt__":
                asked.update(interrupt["id"] for interrupt in json.loads(value))
            elif channel == "__resume__" and len(task_id) == 32:
                answered.add(task_id)
    return asked, answered


@pytest.fixture(scope="module")
def js(tmp_path_factory: pytest.TempPathFactory) -> JsRun:
    folder = tmp_path_factory.mktemp("migrate-js")
    v1_store = folder / "v1.sqlite"
    v1 = run_js_migrate_graphs("v1", str(v1_store))
    unmigrated, migrated = folder / "unmigrated.sqlite", folder / "migrated.sqlite"
    shutil.copy(v1_store, unmigrated)
    shutil.copy(v1_store, migrated)
    record = migrate_json(str(migrated), "--all", *STEPS, "--apply")
    names = raw_names(migrated)
    ids_after = interrupt_ids(migrated)
    checked = run_ckpt("check", str(migrated))
    v2 = run_js_migrate_graphs(
        "v2", str(unmigrated), str(migrated), "--fresh", str(folder / "fresh.sqlite")
    )
    return JsRun(
        v1_store, v1["history"], migrated, record, names,
        interrupt_ids(v1_store), ids_after, checked,
        v2["stores"][str(unmigrated)], v2["stores"][str(migrated)], v2["fresh"],
    )  # fmt: skip


@pytest.fixture
def store(js: JsRun, tmp_path: Path) -> Path:
    copy = tmp_path / "store.sqlite"
    shutil.copy(js.v1_store, copy)
    return copy


def expected_v2(view: dict[str, Any]) -> dict[str, Any]:
    """A v1 snapshot view (migrate_graphs.mjs snapshotView) as v2 must show it."""
    values = {RENAMED_CHANNELS.get(k, k): v for k, v in view["values"].items() if k != "scratch"}
    return {
        **view,
        "values": values,
        "next": [RENAMED_NODES.get(n, n) for n in view["next"]],
        "tasks": [[RENAMED_NODES.get(n, n), i, e] for n, i, e in view["tasks"]],
    }


def test_v2_loses_the_renamed_key_without_migrate(js: JsRun) -> None:
    for thread_id in THREADS:
        (latest, *_) = js.unmigrated["history"][thread_id]
        assert "findings" not in latest["values"], thread_id
    for thread_id in WAITING:
        # v2 has no task for the node the thread waits in: resuming runs nothing.
        resumed = js.unmigrated["resumed"][thread_id]
        assert resumed["interrupts_before"] == 0 and resumed["ran"] == {}
        assert "draft" not in resumed["values"]


def test_the_plan_changes_nothing_and_shows_the_new_task_id(store: Path) -> None:
    before = digest(store)
    record = migrate_json(str(store), "--all", *STEPS)
    assert digest(store) == before and record["applied"] is False
    assert record["totals"]["threads"] == len(THREADS) and record["totals"]["refused"] == 0
    waiting = next(t for t in record["threads"] if t["thread_id"] == "waiting-1")
    diff = "\n".join(waiting["diff"])
    assert '-  "notes",' in diff and '+  "findings",' in diff
    assert '-   "task_id": ' in diff and '+   "task_id": ' in diff  # the review task's id


def test_every_checkpoint_reads_under_v2_as_v1_renamed(js: JsRun) -> None:
    assert js.record["applied"] and js.record["totals"]["refused"] == 0
    assert js.record["totals"]["threads"] == len(THREADS)
    for thread_id, history in js.v1_history.items():
        assert len(history) > 1
        assert js.after["history"][thread_id] == [expected_v2(v) for v in history], thread_id


def test_the_raw_rows_hold_no_old_name(js: JsRun) -> None:
    assert not js.names_after_migrate & GONE
    assert {"findings", "approve", "branch:to:approve"} <= js.names_after_migrate
    v1_ids = {v["checkpoint_id"] for history in js.v1_history.values() for v in history}
    with closing(sqlite3.connect(js.migrated)) as conn:
        for checkpoint_id, metadata in conn.execute(
            "SELECT checkpoint_id, metadata FROM checkpoints"
        ):  # v1's checkpoints, and those v2's resume added after them
            migrated = json.loads(metadata).get("ckpt_migrations")
            assert migrated == (STEP_NAMES if checkpoint_id in v1_ids else None)
    checked = js.check_after_migrate  # every row still reads as it should
    assert checked.exit_code == 0 and "no errors" in checked.stdout, checked.output


def test_answers_saved_by_interrupt_id_follow_the_renamed_interrupts(js: JsRun) -> None:
    """done-by-id was answered with Command({resume: {interruptId: ...}}): the answer's
    write, kept under the interrupt's id, has the id of the renamed node's interrupt."""
    (asked_v1, answered_v1), (asked, answered) = js.ids_before, js.ids_after_migrate
    assert len(answered_v1) == 1 and answered_v1 <= asked_v1
    assert len(answered) == 1 and answered <= asked
    assert not asked & asked_v1  # every interrupt id is the renamed node's


def test_interrupted_threads_resume_as_a_fresh_v2_run(js: JsRun) -> None:
    assert js.after["resumed"] == js.fresh["resumed"]
    for thread_id in WAITING:
        resumed = js.after["resumed"][thread_id]
        # waiting-2 was resumed by the interrupt id v2 showed: the migrated id matched.
        assert resumed["interrupts_before"] == 1 and resumed["next"] == []
        assert resumed["ran"] == {"approve": 1, "finish": 1}, thread_id  # plan not again
        assert resumed["values"]["draft"].startswith("notes on ")


def test_a_second_run_changes_nothing(store: Path) -> None:
    migrate_json(str(store), "--all", *STEPS, "--apply")
    once = digest(store)
    record = migrate_json(str(store), "--all", *STEPS, "--apply")
    assert record["totals"]["threads"] == 0 and record["totals"]["unchanged"] == len(THREADS)
    assert digest(store) == once


def test_add_channel_is_json_and_a_transform_is_refused(store: Path) -> None:
    with ckpt.open(str(store)) as checkpoints:
        record = checkpoints.migrate(
            threads=["done-1"], add_channel={"extra": {"a": [1]}}, apply=True
        )
    assert record["totals"]["threads"] == 1
    with ckpt.open(str(store)) as checkpoints:
        assert checkpoints.checkpoint("done-1")["channel_values"]["extra"] == {"a": [1]}
    with closing(sqlite3.connect(store)) as conn:
        (tag, body) = conn.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = 'done-1' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
    assert tag == "json" and json.loads(body)["channel_values"]["extra"] == {"a": [1]}
    before = digest(store)
    with ckpt.open(str(store)) as checkpoints, pytest.raises(Unsafe, match="LangGraph.js"):
        checkpoints.migrate(all=True, transform={"draft": str.upper}, apply=True)
    assert digest(store) == before
