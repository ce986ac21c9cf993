"""`ckpt migrate` on a LangGraph.js store (SqliteSaver's layout; bodies and values are JSON,
task ids uuid5, writes have no task_path): fixtures/js/migrate_graphs.mjs's v1 graph writes
the store through LangGraph.js's own SqliteSaver, and LangGraph.js under v2 is the judge, as
tests/test_migrate.py does with Python LangGraph. Without migrate v2 loses the renamed key
and resuming runs nothing; after it, v2's state and history of every checkpoint are v1's
renamed, the raw rows hold no old name, and the interrupted threads resume (one by its
interrupt's id) to the state a from-scratch v2 run reaches, running no node twice.

The same for LangGraph.js's PostgresSaver (every value a JSON blob, none inline). Two node
processes per store kind: one writes v1, one reads and resumes under v2."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fixtures.js_stores import node_dsn, run_js_migrate_graphs
from psycopg.conninfo import conninfo_to_dict

import ckpt
from ckpt.errors import Unsafe
from invoke import ckpt as run_ckpt

# v2 has no `priority`: the added value is only loaded, which shows LangGraph.js reads how
# it is stored (a JSON value in the body, a JSON blob in Postgres).
STEPS = ["--rename-channel", "notes=findings", "--drop-channel", "scratch",
         "--rename-node", "review=approve",
         "--add-channel", 'priority={"level": "normal"}']  # fmt: skip
STEP_NAMES = ["rename_channel:notes=findings", "drop_channel:scratch",
              "rename_node:review=approve", "add_channel:priority"]  # fmt: skip
RENAMED_CHANNELS = {"notes": "findings"}
RENAMED_NODES = {"review": "approve"}
GONE = {"notes", "scratch", "review", "branch:to:review"}
THREADS = ("done-1", "done-by-id", "waiting-1", "waiting-2")
WAITING = ("waiting-1", "waiting-2")


@dataclass(frozen=True)
class JsRun:
    kind: str  # "sqlite" or "postgres"
    v1_history: dict[str, list[dict[str, Any]]]
    record: dict[str, Any]  # migrate --apply --json
    v1_rows: RawRows  # the store as v1 left it
    migrated_rows: RawRows  # and once migrated, before v2 touched it
    check_after_migrate: Any  # `ckpt check` of the migrated store, before v2
    unmigrated: dict[str, Any]  # v2 on a copy of v1: {"history", "resumed"}
    after: dict[str, Any]  # v2 on the migrated store: {"history", "resumed"}
    fresh: dict[str, Any]  # v2 from scratch: {"resumed"}


@dataclass(frozen=True)
class RawRows:
    """A store's rows as stored: each checkpoint's body (a Postgres one has no values:
    LangGraph.js keeps every value as a blob) and metadata, the blobs and the writes."""

    bodies: dict[str, dict[str, Any]]  # checkpoint id -> body
    metadata: dict[str, dict[str, Any]]  # checkpoint id -> metadata
    blobs: list[tuple[str, str, bytes | None]]  # channel, serde tag, value
    writes: list[tuple[str, str, str, bytes]]  # task id, channel, serde tag, value


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def migrate_json(*args: str) -> dict[str, Any]:
    result = run_ckpt("migrate", *args, "--json")
    assert result.exit_code == 0, result.output
    record: dict[str, Any] = json.loads(result.stdout)
    return record


def raw_rows(kind: str, store: str) -> RawRows:
    if kind == "sqlite":
        with closing(sqlite3.connect(store)) as conn:
            checkpoints = [
                (cid, tag, json.loads(body), json.loads(meta))
                for cid, tag, body, meta in conn.execute(
                    "SELECT checkpoint_id, type, checkpoint, metadata FROM checkpoints"
                )
            ]
            assert {tag for _, tag, _, _ in checkpoints} == {"json"}
            writes = list(conn.execute("SELECT task_id, channel, type, value FROM writes"))
        blobs: list[tuple[str, str, bytes | None]] = []
    else:
        with psycopg.connect(store) as conn:
            checkpoints = [
                (cid, "json", body, meta)
                for cid, body, meta in conn.execute(
                    "SELECT checkpoint_id, checkpoint, metadata FROM checkpoints"
                )
            ]
            blobs = [
                (channel, tag, bytes(value) if value is not None else None)
                for channel, tag, value in conn.execute(
                    "SELECT channel, type, blob FROM checkpoint_blobs"
                )
            ]
            writes = [
                (task_id, channel, tag, bytes(value))
                for task_id, channel, tag, value in conn.execute(
                    "SELECT task_id, channel, type, blob FROM checkpoint_writes"
                )
            ]
    # Every value is LangGraph.js's JSON (an "empty" blob: a channel with no value).
    assert {tag for _, _, tag, _ in writes} | {tag for _, tag, _ in blobs} <= {"json", "empty"}
    return RawRows(
        {cid: body for cid, _, body, _ in checkpoints},
        {cid: meta for cid, _, _, meta in checkpoints},
        blobs,
        writes,
    )


def raw_names(rows: RawRows) -> set[str]:
    """Every name the rows hold where LangGraph.js looks names up: the channel values (in
    the body or as blobs) and the input's keys under `__start__`, versions,
    versions_seen keys and inner keys, updated_channels, write channels."""
    names: set[str] = set()
    inputs = [v for c, _, v in rows.blobs if c == "__start__" and v]
    for body in rows.bodies.values():
        values = body.get("channel_values", {})
        names.update(values)
        names.update(values.get("__start__") or ())
        names.update(body["channel_versions"])
        names.update(body.get("updated_channels") or ())
        for node, seen in body["versions_seen"].items():
            names.add(node)
            names.update(seen)
    names.update(channel for channel, _, _ in rows.blobs)
    for value in inputs:
        names.update(json.loads(value))
    names.update(channel for _, channel, _, _ in rows.writes)
    return names


def interrupt_ids(rows: RawRows) -> tuple[set[str], set[str]]:
    """The ids of the interrupts the `__interrupt__` writes hold, and the task ids of the
    `__resume__` writes that are interrupt ids (32 hex digits): LangGraph.js saves
    `Command({resume: {interruptId: value}})` that way."""
    asked: set[str] = set()
    answered: set[str] = set()
    for task_id, channel, _, value in rows.writes:
        if channel == "__interrupt__":
            asked.update(interrupt["id"] for interrupt in json.loads(value))
        elif channel == "__resume__" and len(task_id) == 32:
            answered.add(task_id)
    return asked, answered


@pytest.fixture(scope="module")
def v1_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """v1's threads written by LangGraph.js's SqliteSaver, and v1's history of each."""
    path = tmp_path_factory.mktemp("migrate-js") / "v1.sqlite"
    return path, run_js_migrate_graphs("v1", str(path))["history"]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def js(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> JsRun:
    """v1's store migrated; v2 (one node process) on it, on an unmigrated copy, and run
    from scratch."""
    kind: str = request.param
    if kind == "sqlite":
        v1_store, history = request.getfixturevalue("v1_sqlite")
        folder = tmp_path_factory.mktemp("migrate-js")
        unmigrated, migrated = str(folder / "unmigrated.sqlite"), str(folder / "migrated.sqlite")
        shutil.copy(v1_store, unmigrated)
        shutil.copy(v1_store, migrated)
        fresh = str(folder / "fresh.sqlite")
    else:
        new_database = request.getfixturevalue("pg_new_database")
        v1_dsn = new_database()
        migrated = node_dsn(v1_dsn)  # migrated in place, once its copy is made
        history = run_js_migrate_graphs("v1", migrated)["history"]
        v1_name = conninfo_to_dict(v1_dsn)["dbname"]
        unmigrated = node_dsn(new_database(template=v1_name))
        fresh = node_dsn(new_database())
    v1_rows = raw_rows(kind, migrated)
    record = migrate_json(migrated, "--all", *STEPS, "--apply")
    migrated_rows = raw_rows(kind, migrated)
    checked = run_ckpt("check", migrated)
    v2 = run_js_migrate_graphs("v2", unmigrated, migrated, "--fresh", fresh)
    return JsRun(
        kind, history, record, v1_rows, migrated_rows, checked,
        v2["stores"][unmigrated], v2["stores"][migrated], v2["fresh"],
    )  # fmt: skip


@pytest.fixture
def store(v1_sqlite: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    copy = tmp_path / "store.sqlite"
    shutil.copy(v1_sqlite[0], copy)
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
    assert GONE <= raw_names(js.v1_rows)
    names = raw_names(js.migrated_rows)
    assert not names & GONE
    assert {"findings", "approve", "branch:to:approve", "priority"} <= names
    for metadata in js.migrated_rows.metadata.values():
        assert metadata["ckpt_migrations"] == STEP_NAMES
    checked = js.check_after_migrate  # every row still reads as it should
    assert checked.exit_code == 0 and "no errors" in checked.stdout, checked.output


def test_answers_saved_by_interrupt_id_follow_the_renamed_interrupts(js: JsRun) -> None:
    """done-by-id was answered with Command({resume: {interruptId: ...}}): the answer's
    write, kept under the interrupt's id, has the id of the renamed node's interrupt."""
    asked_v1, answered_v1 = interrupt_ids(js.v1_rows)
    asked, answered = interrupt_ids(js.migrated_rows)
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
