"""Sanity of the state oracle (fixtures/state_oracle.py) against facts LangGraph documents.

The expected facts come from the scenario definitions in ckpt.demo (what each graph does,
what it raises, what it asks) and from LangGraph's documented rules (step -1 runs
__start__, a live get_state applies finished tasks' writes, an interrupted task is not
finished), never from an earlier run of the oracle.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pytest
from fixtures.build import DEV_FILES, build_sqlite, fixture_warnings
from fixtures.graphs import FANOUT_BAD_ITEM, FANOUT_ITEMS, run_scenarios
from fixtures.legacy_graphs import (
    LEGACY_GRAPHS,
    LEGACY_KINDS,
    LEGACY_SAVERS,
    SAMPLE_DIR,
    UNREADABLE,
    postgres_saver,
    sqlite_copy_saver,
)
from fixtures.oracle import load_memory_saver, quiet_serde_log
from fixtures.state_oracle import DEMO_GRAPHS, demo_graphs, state_oracle, write_state_oracle
from langgraph._internal._config import recast_checkpoint_ns
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import ckpt.demo

if TYPE_CHECKING:
    from pg import PgStore

Snapshot = dict[str, Any]
Oracle = dict[str, Any]
PUSH = "__pregel_push"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"  # writes that belong to no task


# --------------------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------------------


def snapshots(oracle: Oracle, mode: str, thread_id: str, ns: str | None = "") -> list[Snapshot]:
    """`mode` snapshots of a thread (root namespace by default, None = all), by checkpoint id."""
    found = [
        s
        for s in oracle["snapshots"]
        if s["mode"] == mode
        and s["thread_id"] == thread_id
        and (ns is None or s["checkpoint_ns"] == ns)
    ]
    return sorted(found, key=lambda s: (s["checkpoint_ns"], s["checkpoint_id"]))


def live(oracle: Oracle, thread_id: str, ns: str = "") -> Snapshot:
    (found,) = snapshots(oracle, "live", thread_id, ns)
    return found


def at_step(oracle: Oracle, thread_id: str, step: int, ns: str = "") -> Snapshot:
    (found,) = [s for s in snapshots(oracle, "at", thread_id, ns) if s["step"] == step]
    return found


def namespaces(oracle: Oracle, thread_id: str) -> list[str]:
    return sorted({s["checkpoint_ns"] for s in oracle["snapshots"] if s["thread_id"] == thread_id})


def stored_checkpoints(saver: BaseCheckpointSaver[Any]) -> dict[tuple[str, str], list[str]]:
    with quiet_serde_log():
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        for tup in saver.list(None):
            conf = tup.config["configurable"]
            found[(conf["thread_id"], conf["checkpoint_ns"])].append(conf["checkpoint_id"])
    return {key: sorted(ids) for key, ids in found.items()}


def without_state_details(snapshot: Snapshot) -> Snapshot:
    """get_state_history does not recurse into subgraphs: LangGraph puts the subgraph's
    config in tasks[].state there, a StateSnapshot in get_state(subgraphs=True)."""
    tasks = [
        {**task, "state": task["state"] and task["state"]["checkpoint_ns"]}
        for task in snapshot["tasks"]
    ]
    return {**snapshot, "mode": None, "tasks": tasks}


def shape(oracle: Oracle) -> dict[tuple[str, str], list[Any]]:
    """Everything a run determines, minus what differs between two runs of the same
    scenarios (checkpoint and task ids, timestamps, saver-specific metadata keys)."""
    shaped: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for s in oracle["snapshots"]:
        if s["mode"] == "history":
            continue
        tasks = [
            (
                t["name"],
                t["path"],
                t["finished"],
                t["error"],
                [i["value"] for i in t["interrupts"]],
                t["result"],
                t["state"] and recast_checkpoint_ns(t["state"]["checkpoint_ns"]),
                t["state"] and t["state"]["next"],
            )
            for t in s["tasks"]
        ]
        shaped[(s["thread_id"], recast_checkpoint_ns(s["checkpoint_ns"]))].append(
            (
                s["mode"],
                s["step"],
                s["metadata"].get("source"),
                s["next"],
                s["values"],
                s["output_channels"],
                tasks,
                [i["value"] for i in s["interrupts"]],
            )
        )
    return dict(shaped)


# --------------------------------------------------------------------------------------
# The demo store (SqliteSaver, every scenario).
# --------------------------------------------------------------------------------------


class DemoStore(TypedDict):
    path: Path
    manifest: dict[str, Any]


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> DemoStore:
    path = tmp_path_factory.mktemp("state_oracle") / "demo.sqlite"
    return {"path": path, "manifest": dict(build_sqlite(path))}


@pytest.fixture(scope="module")
def demo_oracle(demo_store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    with sqlite_copy_saver(demo_store["path"], tmp_path_factory.mktemp("copy")) as saver:
        return state_oracle(saver, demo_graphs(saver), store="demo.sqlite", kind="sqlite")


def test_demo_graphs_cover_every_scenario_thread(demo_store: DemoStore) -> None:
    assert sorted(DEMO_GRAPHS) == demo_store["manifest"]["threads"]
    assert set(DEMO_GRAPHS.values()) <= set(dir(ckpt.demo))


def test_oracle_covers_every_checkpoint_once_per_mode(
    demo_store: DemoStore, demo_oracle: Oracle, tmp_path: Path
) -> None:
    with sqlite_copy_saver(demo_store["path"], tmp_path) as saver:
        stored = stored_checkpoints(saver)
    for mode in ("at", "history"):
        seen: dict[tuple[str, str], list[str]] = defaultdict(list)
        for s in demo_oracle["snapshots"]:
            if s["mode"] == mode:
                seen[(s["thread_id"], s["checkpoint_ns"])].append(s["checkpoint_id"])
        assert {key: sorted(ids) for key, ids in seen.items()} == stored, mode
    # One live snapshot per namespace: LangGraph's latest is the highest checkpoint id.
    lives = {
        (s["thread_id"], s["checkpoint_ns"]): s["checkpoint_id"]
        for s in demo_oracle["snapshots"]
        if s["mode"] == "live"
    }
    assert lives == {key: ids[-1] for key, ids in stored.items()}
    assert sum(s["mode"] == "live" for s in demo_oracle["snapshots"]) == len(stored)
    keys = [
        (s["thread_id"], s["checkpoint_ns"], s["checkpoint_id"], s["mode"])
        for s in demo_oracle["snapshots"]
    ]
    assert keys == sorted(keys)
    assert demo_oracle["writer"] == "python" and demo_oracle["kind"] == "sqlite"


def test_written_json_round_trips(demo_oracle: Oracle, tmp_path: Path) -> None:
    path = tmp_path / "oracle" / "demo.state.json"
    write_state_oracle(path, demo_oracle)
    assert json.loads(path.read_text(encoding="utf-8")) == demo_oracle


def test_at_and_history_agree_for_every_checkpoint(demo_oracle: Oracle) -> None:
    by_key: dict[tuple[str, str, str], dict[str, Snapshot]] = defaultdict(dict)
    for s in demo_oracle["snapshots"]:
        by_key[(s["thread_id"], s["checkpoint_ns"], s["checkpoint_id"])][s["mode"]] = s
    for key, modes in by_key.items():
        assert without_state_details(modes["at"]) == without_state_details(modes["history"]), key
        for task in modes["history"]["tasks"]:  # a config: no `next` without recursing
            assert task["state"] is None or task["state"]["next"] is None


def test_parent_links_and_steps(demo_oracle: Oracle) -> None:
    for thread_id in DEMO_GRAPHS:
        for ns in namespaces(demo_oracle, thread_id):
            chain = snapshots(demo_oracle, "at", thread_id, ns)
            ids = {s["checkpoint_id"] for s in chain}
            roots = [s for s in chain if s["parent_checkpoint_id"] is None]
            assert len(roots) == 1 and roots[0]["step"] == -1, (thread_id, ns)
            for s in chain:
                assert s["step"] == s["metadata"]["step"]
                assert s["parent_checkpoint_id"] is None or s["parent_checkpoint_id"] in ids


def test_fanout_failed_step(demo_oracle: Oracle) -> None:
    thread = "fanout-1"
    # Step -1 runs the input through __start__; step 0 the first node.
    assert at_step(demo_oracle, thread, -1)["next"] == ["__start__"]
    assert at_step(demo_oracle, thread, 0)["next"] == ["plan"]
    failed = at_step(demo_oracle, thread, 1)
    assert failed["next"] == ["worker"] * len(FANOUT_ITEMS)  # every Send, finished or not
    bad = FANOUT_ITEMS.index(FANOUT_BAD_ITEM)
    expected_error = repr(ValueError(f"cannot parse {FANOUT_BAD_ITEM}: missing total"))
    for index, (task, item) in enumerate(zip(failed["tasks"], FANOUT_ITEMS, strict=True)):
        assert task["name"] == "worker" and task["path"] == [PUSH, index, False]
        if index == bad:
            assert task["error"] == expected_error
            assert not task["finished"] and task["result"] is None
        else:
            assert task["error"] is None and task["finished"]
            assert task["result"] == ckpt.demo.worker({"item": item})
    assert failed["values"]["items"] == FANOUT_ITEMS
    assert failed["values"]["results"] == []
    # Live: the siblings' writes are applied, only the failed worker is still due.
    current = live(demo_oracle, thread)
    assert current["checkpoint_id"] == failed["checkpoint_id"]
    assert current["next"] == ["worker"]
    ok_items = [item for item in FANOUT_ITEMS if item != FANOUT_BAD_ITEM]
    assert current["values"]["results"] == [f"{item}: ok" for item in ok_items]
    assert [t["error"] for t in current["tasks"]].count(expected_error) == 1


def test_approval_interrupts(demo_oracle: Oracle) -> None:
    question = {"question": "Approve: refund order B-2002?", "amount": 1299.0}
    waiting = live(demo_oracle, "approval-2")
    assert waiting["next"] == ["approve"]
    (pending,) = waiting["interrupts"]
    assert isinstance(pending["id"], str) and pending["id"]
    assert pending["value"] == question
    (task,) = waiting["tasks"]
    assert task["name"] == "approve" and not task["finished"] and task["result"] is None
    assert task["interrupts"] == [pending]
    assert waiting["values"] == {
        "request": "refund order B-2002",
        "amount": 1299.0,
        "status": "drafted",
    }
    # approval-1 was resumed: the step keeps its (answered) interrupt when read at its
    # checkpoint; the thread's live state has nothing left to answer.
    asked = at_step(demo_oracle, "approval-1", 1)
    (answered,) = asked["interrupts"]
    assert answered["value"] == {"question": "Approve: refund order A-1001?", "amount": 42.5}
    (task,) = asked["tasks"]
    assert task["finished"] and task["result"] == {
        "decision": {"approved": True, "by": "alice"},
        "status": "approved",
    }
    done = live(demo_oracle, "approval-1")
    assert done["next"] == [] and done["interrupts"] == [] and done["tasks"] == []
    assert done["values"]["status"] == "done (approved)"


def test_pending_step_has_a_task_and_no_writes(demo_oracle: Oracle, demo_store: DemoStore) -> None:
    thread = demo_store["manifest"]["pending"]
    current = live(demo_oracle, thread)
    assert current["next"] == demo_store["manifest"]["pending_next"]
    assert [(t["name"], t["finished"], t["error"]) for t in current["tasks"]] == [
        ("step_b", False, None)
    ]
    assert current["values"] == {"notes": ["start", "step_a"], "count": 1}


def test_fork_branches(demo_oracle: Oracle, demo_store: DemoStore) -> None:
    manifest = demo_store["manifest"]
    thread = manifest["fork"]
    by_id = {s["checkpoint_id"]: s for s in snapshots(demo_oracle, "at", thread)}
    parent = by_id[manifest["fork_parent"]]
    assert parent["next"] == ["step_b"]
    children = [s for s in by_id.values() if s["parent_checkpoint_id"] == parent["checkpoint_id"]]
    # The original run's step_b checkpoint plus the two update_state forks.
    updates = sorted(s["checkpoint_id"] for s in children if s["metadata"]["source"] == "update")
    assert updates == sorted(manifest["fork_children"])
    continued, abandoned = (by_id[i] for i in manifest["fork_children"])
    for branch, edit in ((continued, "edit-A"), (abandoned, "edit-B")):
        # update_state infers as_node=step_a (the last writer), so step_b is due next.
        assert branch["next"] == ["step_b"]
        assert branch["values"]["notes"] == ["start", "step_a", edit]
    # Neither update checkpoint ran step_b itself: branch B superseded A as the thread's
    # latest, so invoking A first copies it (source "fork", pregel/_loop.py `forks`) and
    # the run goes on from the copy.
    assert [t["finished"] for t in continued["tasks"] + abandoned["tasks"]] == [False, False]
    (copy,) = [s for s in by_id.values() if s["parent_checkpoint_id"] == continued["checkpoint_id"]]
    assert copy["metadata"]["source"] == "fork" and copy["values"] == continued["values"]
    assert copy["next"] == ["step_b"] and [t["finished"] for t in copy["tasks"]] == [True]
    assert not [
        s for s in by_id.values() if s["parent_checkpoint_id"] == abandoned["checkpoint_id"]
    ]
    latest = live(demo_oracle, thread)
    assert latest["checkpoint_id"] == manifest["fork_latest"]
    assert latest["next"] == [] and latest["values"]["notes"][-3:] == ["edit-A", "step_b", "step_c"]


def test_subgraph_namespaces_resolve_to_the_subgraph(demo_oracle: Oracle) -> None:
    topic = "pickle safety"
    findings = (
        ckpt.demo.plan_research({"topic": topic})["findings"]
        + ckpt.demo.search({"topic": topic})["findings"]
    )
    root = live(demo_oracle, "subgraph-2")
    assert root["next"] == ["research"]
    (task,) = root["tasks"]
    (child_ns,) = [ns for ns in namespaces(demo_oracle, "subgraph-2") if ns]
    assert child_ns == f"research:{task['id']}"
    assert task["state"]["checkpoint_ns"] == child_ns
    child = live(demo_oracle, "subgraph-2", child_ns)
    assert task["state"]["checkpoint_id"] == child["checkpoint_id"]
    assert task["state"]["next"] == child["next"] == ["review"]  # a node of the subgraph
    question = {"question": "Are these findings good enough?", "findings": findings}
    assert [i["value"] for i in child["interrupts"]] == [question]
    assert [i["value"] for i in root["interrupts"]] == [question]  # surfaced by the parent
    assert at_step(demo_oracle, "subgraph-2", 0, child_ns)["next"] == ["search"]
    assert child["metadata"]["parents"] == {"": root["checkpoint_id"]}
    # subgraph-1 ran through: search -> summarize (no review), and write_report after.
    (done_ns,) = [ns for ns in namespaces(demo_oracle, "subgraph-1") if ns]
    assert [s["next"] for s in snapshots(demo_oracle, "at", "subgraph-1", done_ns)] == [
        ["__start__"],
        ["search"],
        ["summarize"],
        [],
    ]
    assert live(demo_oracle, "subgraph-1")["values"]["report"].startswith("plan: research")


def test_delta_channel_values_are_rebuilt(demo_oracle: Oracle) -> None:
    chain = [s for s in snapshots(demo_oracle, "at", "delta-1") if "n" in s["values"]]
    assert chain, "no checkpoint after the first step"
    for s in chain:
        n = s["values"]["n"]
        assert s["values"]["log"] == ["seed"] + [f"entry-{i}" for i in range(1, n + 1)]
    final = live(demo_oracle, "delta-1")
    assert final["values"]["n"] == ckpt.demo.DELTA_STEPS and final["next"] == []


def test_values_are_normalized(demo_oracle: Oracle) -> None:
    from normalize import normalize

    rich = live(demo_oracle, "rich-1")
    assert rich["values"]["payload"] == normalize(ckpt.demo.rich_payload())
    assert rich["values"]["raw"] == normalize(ckpt.demo.RAW_BYTES)
    assert rich["output_channels"] == ["label", "payload", "raw", "nothing"]
    chat = live(demo_oracle, "support-3")
    assert {m["__type__"].rsplit(".", 1)[-1] for m in chat["values"]["messages"]} == {
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    }


# --------------------------------------------------------------------------------------
# Subgraphs two levels deep: get_state resolves the innermost graph from the namespace.
# --------------------------------------------------------------------------------------


class OuterState(TypedDict, total=False):
    x: int


class MiddleState(TypedDict, total=False):
    x: int
    trace: str


class InnerState(TypedDict, total=False):
    x: int
    answer: str


def ask(state: InnerState) -> InnerState:
    return {"answer": str(interrupt("inner question"))}


def nested_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    inner = StateGraph(InnerState)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    inner.add_edge("ask", END)
    middle = StateGraph(MiddleState)
    middle.add_node("inner", inner.compile())
    middle.add_edge(START, "inner")
    middle.add_edge("inner", END)
    outer = StateGraph(OuterState)
    outer.add_node("middle", middle.compile())
    outer.add_edge(START, "middle")
    outer.add_edge("middle", END)
    return outer.compile(checkpointer=saver)


def test_nested_subgraphs_two_levels(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "nested.sqlite", check_same_thread=False)) as conn:
        saver = SqliteSaver(conn)
        graph = nested_graph(saver)
        graph.invoke({"x": 1}, {"configurable": {"thread_id": "n-1"}})
        oracle = state_oracle(saver, {"n-1": graph}, store="nested", kind="sqlite")
    root_ns, middle_ns, inner_ns = namespaces(oracle, "n-1")
    assert root_ns == "" and middle_ns.startswith("middle:")
    assert inner_ns.startswith(middle_ns + "|inner:")
    root, middle, inner = (live(oracle, "n-1", ns) for ns in (root_ns, middle_ns, inner_ns))
    # Each namespace is read with its own graph's channels and nodes.
    assert root["output_channels"] == ["x"]
    assert middle["output_channels"] == ["x", "trace"]
    assert inner["output_channels"] == ["x", "answer"]
    assert (root["next"], middle["next"], inner["next"]) == (["middle"], ["inner"], ["ask"])
    assert root["tasks"][0]["state"] == {
        "checkpoint_ns": middle_ns,
        "checkpoint_id": middle["checkpoint_id"],
        "next": ["inner"],
    }
    assert middle["tasks"][0]["state"] == {
        "checkpoint_ns": inner_ns,
        "checkpoint_id": inner["checkpoint_id"],
        "next": ["ask"],
    }
    for s in (root, middle, inner):
        assert [i["value"] for i in s["interrupts"]] == ["inner question"]
    assert at_step(oracle, "n-1", 0, inner_ns)["next"] == ["ask"]


# --------------------------------------------------------------------------------------
# The same scenarios through the other savers: the oracle reads them alike.
# --------------------------------------------------------------------------------------


def test_async_written_sqlite_reads_like_the_sync_one(demo_oracle: Oracle, tmp_path: Path) -> None:
    path = tmp_path / "async.sqlite"

    async def write() -> None:
        # The graph runs in a worker thread; every put / put_writes goes through
        # AsyncSqliteSaver's coroutines (aput, aput_writes) on this event loop.
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            with fixture_warnings():
                await asyncio.to_thread(run_scenarios, saver)

    asyncio.run(write())
    with sqlite_copy_saver(path, tmp_path / "copy") as saver:
        oracle = state_oracle(saver, demo_graphs(saver), store="async.sqlite", kind="sqlite")
    assert shape(oracle) == shape(demo_oracle)


def test_encrypted_store_reads_like_the_plain_one(
    encrypted_store: Path, encryption_key: bytes, demo_oracle: Oracle, tmp_path: Path
) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=encryption_key)
    with sqlite_copy_saver(encrypted_store, tmp_path, serde) as saver:
        oracle = state_oracle(saver, demo_graphs(saver), store="encrypted", kind="sqlite")
    assert shape(oracle) == shape(demo_oracle)


def test_dev_folder_reads_like_sqlite(dev_folder: Path, demo_oracle: Oracle) -> None:
    storage, writes, blobs = (dev_folder / name for name in DEV_FILES)
    saver = load_memory_saver(storage, writes, blobs)
    oracle = state_oracle(saver, demo_graphs(saver), store="dev_folder", kind="pickle")
    assert shape(oracle) == shape(demo_oracle)
    assert live(oracle, "approval-2")["metadata"]["graph_id"] == "fixtures"  # server keys


def test_single_file_pickle_has_no_values_to_schedule_from(memory_pkl: Path) -> None:
    # The single-file pattern keeps only `storage` (format.md §7.2): no blobs, no writes.
    # Without channel values nothing triggers a node, so LangGraph reports no next.
    saver = load_memory_saver(memory_pkl)
    oracle = state_oracle(saver, demo_graphs(saver), store="memory.pkl", kind="pickle")
    assert {s["thread_id"] for s in oracle["snapshots"]} == set(DEMO_GRAPHS)
    assert all(s["next"] == [] and s["tasks"] == [] for s in oracle["snapshots"])


@pytest.fixture(scope="module")
def pg_demo_oracle(pg_store: PgStore) -> Oracle:
    with postgres_saver(pg_store.dsn) as saver:
        return state_oracle(saver, demo_graphs(saver), store="postgres", kind="postgres")


@pytest.mark.postgres
def test_postgres_reads_like_sqlite(pg_demo_oracle: Oracle, demo_oracle: Oracle) -> None:
    assert shape(pg_demo_oracle) == shape(demo_oracle)


@pytest.mark.postgres
def test_shallow_postgres_keeps_the_latest_state(
    pg_shallow_store: PgStore, pg_demo_oracle: Oracle
) -> None:
    with postgres_saver(pg_shallow_store.dsn, shallow=True) as saver:
        stored = stored_checkpoints(saver)
        oracle = state_oracle(
            saver, demo_graphs(saver), store="postgres_shallow", kind="postgres_shallow"
        )
    assert all(len(ids) == 1 for ids in stored.values())
    full, shallow = shape(pg_demo_oracle), shape(oracle)
    assert set(shallow) == set(full)
    for key, states in shallow.items():
        assert [state[0] for state in states] == ["at", "live"], key
        (_, step, source, nxt, values, channels, tasks, _), live_state = states
        # Live, `next` keeps only the due tasks that have not finished.
        assert all(node in nxt for node in live_state[3]), key
        if key[0] == "fork-1":  # shallow forks from the latest checkpoint (graphs._Runner)
            continue
        # The latest checkpoint read at its id: same step, next, values and tasks as in the
        # full store. Not the tasks' writes, nor the live state built from them: the
        # shallow saver's put() deletes the writes of every checkpoint but the new one and
        # its parent, and LangGraph saves checkpoints in the background, so a late put()
        # can delete writes the next step already stored (seen: approval-2's and
        # subgraph-2's __interrupt__ and fanout-1's worker writes, in some runs only).
        expected = full[key][-2]
        assert expected[0] == "at"
        assert (step, source, nxt, values, channels) == expected[1:6], key
        assert [t[:2] for t in tasks] == [t[:2] for t in expected[6]], key


# --------------------------------------------------------------------------------------
# The checked-in samples.
# --------------------------------------------------------------------------------------

PG_DUMPS = {
    "postgres_current_pg_dump.sql": "current",
    "postgres_shallow_pg_dump.sql": "shallow",
    "postgres_legacy_pg_dump.sql": "legacy",
}


def _digests() -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(SAMPLE_DIR.iterdir())
    }


@pytest.fixture(scope="module")
def sample_oracles(
    pg_dump_loader: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]]]:
    """name -> (oracle, the checkpoints the saver lists) for every readable sample."""
    before = _digests()
    results: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]] = {}
    workdir = tmp_path_factory.mktemp("samples")
    for name, graphs in sorted(LEGACY_GRAPHS.items()):
        source = pg_dump_loader(PG_DUMPS[name]) if name in PG_DUMPS else SAMPLE_DIR / name
        with LEGACY_SAVERS[name](source, workdir) as saver:
            stored = stored_checkpoints(saver)
            oracle = state_oracle(saver, graphs(saver), store=name, kind=LEGACY_KINDS[name])
        results[name] = (oracle, stored)
    yield results
    assert _digests() == before, "a sample in tests/data changed"


def test_every_sample_is_either_read_or_explained() -> None:
    stores = {p.name for p in SAMPLE_DIR.iterdir() if p.name != "README.md"}
    assert set(LEGACY_GRAPHS) | set(UNREADABLE) == stores
    readme = (SAMPLE_DIR / "README.md").read_text()
    assert [name for name in sorted(stores) if f"`{name}`" not in readme] == []
    assert not set(LEGACY_GRAPHS) & set(UNREADABLE)
    assert set(LEGACY_KINDS) == set(LEGACY_SAVERS) == set(LEGACY_GRAPHS)


@pytest.mark.parametrize("name", sorted(LEGACY_GRAPHS))
@pytest.mark.postgres
def test_sample_oracle_covers_every_checkpoint(
    name: str, sample_oracles: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]]
) -> None:
    oracle, stored = sample_oracles[name]
    assert oracle["store"] == name and oracle["kind"] == LEGACY_KINDS[name]
    for mode in ("at", "history"):
        seen: dict[tuple[str, str], list[str]] = defaultdict(list)
        for s in oracle["snapshots"]:
            if s["mode"] == mode:
                seen[(s["thread_id"], s["checkpoint_ns"])].append(s["checkpoint_id"])
        assert {key: sorted(ids) for key, ids in seen.items()} == stored
    json.dumps(oracle, allow_nan=False)  # JSON-ready


@pytest.mark.parametrize("name", ["sqlite_checkpoints.db", "postgres_current_pg_dump.sql"])
@pytest.mark.postgres
def test_current_research_sample_facts(
    name: str, sample_oracles: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]]
) -> None:
    # format.md §10: a Send fan-out to 2 workers, a compiled subgraph node, interrupt()
    # resumed by Command(resume=...), a node that raises once and is retried, then
    # update_state.
    oracle, _ = sample_oracles[name]
    chain = snapshots(oracle, "at", "thread-1")
    assert [s["step"] for s in chain] == list(range(-1, len(chain) - 1))
    by_name = {t["name"]: (s, t) for s in chain for t in s["tasks"]}
    fanout = next(s for s in chain if s["next"] == ["worker", "worker"])
    assert [(t["path"], t["finished"]) for t in fanout["tasks"]] == [
        ([PUSH, 0, False], True),
        ([PUSH, 1, False], True),
    ]
    review_step, review = by_name["review"]
    assert review["finished"] and len(review["interrupts"]) == 1
    assert review_step["interrupts"] == review["interrupts"]
    _, flaky = by_name["flaky"]
    assert flaky["finished"] and flaky["error"].startswith("ValueError(")
    _, sub = by_name["subgraph"]
    child = live(oracle, "thread-1", sub["state"]["checkpoint_ns"])
    assert sub["state"]["checkpoint_id"] == child["checkpoint_id"] and child["next"] == []
    assert chain[-1]["metadata"]["source"] == "update" and chain[-1]["next"] == []


@pytest.mark.postgres
def test_samples_agree_across_savers(
    sample_oracles: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]],
) -> None:
    # The same runs stored by different savers (format.md §10) read the same.
    shapes = {name: shape(oracle) for name, (oracle, _) in sample_oracles.items()}
    pg_current = shapes["postgres_current_pg_dump.sql"]
    for name in ("sqlite_checkpoints.db", "sqlite_delta.db", "sqlite_encrypted.db"):
        for key, states in shapes[name].items():
            assert pg_current[key] == states, (name, key)
    legacy_pg, legacy_sqlite = (
        shapes["postgres_legacy_pg_dump.sql"],
        shapes["legacy_lg0.3.20_cp2.0.21_sqlite.db"],
    )
    assert legacy_pg == legacy_sqlite


def _stored_task_ids(
    name: str, source: Path | str, workdir: Path
) -> dict[tuple[str, str], set[str]]:
    with LEGACY_SAVERS[name](source, workdir) as saver, quiet_serde_log():
        return {
            (
                tup.config["configurable"]["checkpoint_ns"],
                tup.config["configurable"]["checkpoint_id"],
            ): {
                task_id
                for task_id, _, _ in tup.pending_writes or []
                if task_id != "00000000-0000-0000-0000-000000000000"
            }
            for tup in saver.list(None)
        }


@pytest.mark.parametrize(
    "name", ["legacy_lg0.3.20_cp2.0.21_sqlite.db", "postgres_legacy_pg_dump.sql"]
)
@pytest.mark.postgres
def test_v1_pull_tasks_get_new_ids(
    name: str,
    sample_oracles: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]],
    pg_dump_loader: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """A canary for a LangGraph behaviour ckpt must mirror: pull-task ids hash the node's
    triggers, and a v1 checkpoint's migrated triggers (`start:agent` -> `branch:to:agent`)
    give new ids, so the stored writes of pull tasks attach to nothing. Sends keep theirs."""
    oracle, _ = sample_oracles[name]
    source = pg_dump_loader(PG_DUMPS[name]) if name in PG_DUMPS else SAMPLE_DIR / name
    stored = _stored_task_ids(name, source, tmp_path)
    review = None
    for s in snapshots(oracle, "at", "thread-1", None):
        ids = {t["id"] for t in s["tasks"]}
        writers = stored[(s["checkpoint_ns"], s["checkpoint_id"])]
        for task in s["tasks"]:
            if task["path"][0] == PUSH or task["name"] == "__start__":
                assert task["id"] in writers and task["finished"]
            else:
                assert task["id"] not in writers and not task["finished"]
        if any(t["name"] == "review" for t in s["tasks"]):
            review = s
            assert writers and not writers & ids
    assert review is not None and review["interrupts"] == []  # the stored one is not seen


@pytest.mark.postgres
def test_lg0_2_16_sends_are_not_revived(
    sample_oracles: dict[str, tuple[Oracle, dict[tuple[str, str], list[str]]]],
) -> None:
    # checkpoint 1.0.9 stored Sends as `langgraph.constants.Send` JSON envelopes; current
    # LangGraph loads them as dicts and drops them ("Ignoring invalid packet type"), so
    # the fan-out step shows no worker tasks at all.
    oracle, _ = sample_oracles["legacy_lg0.2.16_cp1.0.9_sqlite.db"]
    step1 = at_step(oracle, "thread-1", 1)
    assert step1["next"] == [] and step1["tasks"] == []


def test_lg0_1_19_has_no_current_reader(tmp_path: Path) -> None:
    name = "legacy_lg0.1.19_sqlite.db"
    assert name in UNREADABLE
    copy = tmp_path / name
    shutil.copyfile(SAMPLE_DIR / name, copy)
    with closing(sqlite3.connect(copy, check_same_thread=False)) as conn:
        with pytest.raises(sqlite3.OperationalError, match="checkpoint_ns"):
            list(SqliteSaver(conn).list(None))
