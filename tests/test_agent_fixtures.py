"""The agent fixture stores (fixtures/agent_stores.py) hold what fixtures/agents.py promises.

Checked with LangGraph's own savers and graphs (`saver.list`, `get_state`,
`get_state_history`), raw SQL and the raw dev-folder dicts, never with ckpt: these stores
are the ground truth ckpt is compared against.
"""

from __future__ import annotations

import json
import pickletools
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import ormsgpack
import psycopg
import pytest
from fixtures.agent_stores import (
    build_async_postgres,
    build_async_sqlite,
    build_dev_folder,
    build_postgres,
    build_sqlite,
    dev_folder_saver,
)
from fixtures.agents import (
    GRAPH_FACTORIES,
    RAW_BYTEARRAY,
    THREADS,
    AgentManifest,
    Approval,
    Invoice,
    Priority,
    Ticket,
    run_agent_scenarios,
)
from fixtures.build import DEV_FILES, DEV_FOLDER
from fixtures.oracle import quiet_serde_log
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import StateSnapshot

from marks import postgres_marked

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
STORES = ("sqlite", "async_sqlite", "postgres", "async_postgres", "dev_folder")

CONTROL_WRITES = {"__error__", "__interrupt__"}
EXT_DELTA_SNAPSHOT = 7


# --------------------------------------------------------------------------------------
# The stores, built once per session, each with a LangGraph saver reading it.
# --------------------------------------------------------------------------------------


@dataclass
class AgentStore:
    name: str
    kind: str  # "sqlite" | "postgres" | "dev"
    location: Any  # Path of the file or project folder, or the DSN
    manifest: AgentManifest
    saver: BaseCheckpointSaver[Any]


@pytest.fixture(scope="session")
def agent_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent_stores")


def _sqlite_store(name: str, path: Path, manifest: AgentManifest) -> Iterator[AgentStore]:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield AgentStore(name, "sqlite", path, manifest, SqliteSaver(conn))
    finally:
        conn.close()


def _postgres_store(name: str, dsn: str, manifest: AgentManifest) -> Iterator[AgentStore]:
    with PostgresSaver.from_conn_string(dsn) as saver:
        yield AgentStore(name, "postgres", dsn, manifest, saver)


@pytest.fixture(scope="session")
def sqlite_agents(agent_dir: Path) -> Iterator[AgentStore]:
    path = agent_dir / "agents.sqlite"
    yield from _sqlite_store("sqlite", path, build_sqlite(path))


@pytest.fixture(scope="session")
def async_sqlite_agents(agent_dir: Path) -> Iterator[AgentStore]:
    path = agent_dir / "agents_async.sqlite"
    yield from _sqlite_store("async_sqlite", path, build_async_sqlite(path))


@pytest.fixture(scope="session")
def postgres_agents(pg_new_database: Callable[[], str]) -> Iterator[AgentStore]:
    dsn = pg_new_database()
    yield from _postgres_store("postgres", dsn, build_postgres(dsn))


@pytest.fixture(scope="session")
def async_postgres_agents(pg_new_database: Callable[[], str]) -> Iterator[AgentStore]:
    dsn = pg_new_database()
    yield from _postgres_store("async_postgres", dsn, build_async_postgres(dsn))


@pytest.fixture(scope="session")
def dev_folder_agents(agent_dir: Path) -> AgentStore:
    project = agent_dir / "dev"
    manifest = build_dev_folder(project)
    return AgentStore("dev_folder", "dev", project, manifest, dev_folder_saver(project))


@pytest.fixture(params=postgres_marked(STORES))
def store(request: pytest.FixtureRequest) -> AgentStore:
    built: AgentStore = request.getfixturevalue(f"{request.param}_agents")
    return built


# --------------------------------------------------------------------------------------
# Raw access: SQL rows and the dev folder's dicts, decoded with ormsgpack only.
# --------------------------------------------------------------------------------------


class RawWrite(NamedTuple):
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes
    task_path: str


class RawCheckpoint(NamedTuple):
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: dict[str, Any]
    channel_versions: dict[str, Any]
    stored_channels: frozenset[str]  # channels whose value is stored for this checkpoint


def _plain_ext(code: int, data: bytes) -> Any:
    return {"ext": code, "payload": _unpack(data)}


def _unpack(data: bytes) -> Any:
    return ormsgpack.unpackb(data, ext_hook=_plain_ext, option=ormsgpack.OPT_NON_STR_KEYS)


def ext_names(data: bytes) -> set[tuple[int, str, str]]:
    """(ext code, module, name) of every constructor ext value inside msgpack `data`."""
    found: set[tuple[int, str, str]] = set()

    def hook(code: int, payload: bytes) -> Any:
        value = ormsgpack.unpackb(payload, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        if code != EXT_DELTA_SNAPSHOT and isinstance(value, list) and len(value) >= 3:
            if isinstance(value[0], str) and isinstance(value[1], str):
                found.add((code, value[0], value[1]))
        return value

    ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    return found


def _dev(store: AgentStore) -> InMemorySaver:
    assert isinstance(store.saver, InMemorySaver)
    return store.saver


def raw_writes(store: AgentStore, thread_id: str) -> list[RawWrite]:
    if store.kind == "sqlite":
        with sqlite3.connect(store.location) as conn:
            rows = conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value,"
                " task_path FROM writes WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        return [RawWrite(*row) for row in rows]
    if store.kind == "postgres":
        with psycopg.connect(store.location) as pg:
            rows = pg.execute(
                "SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob,"
                " task_path FROM checkpoint_writes WHERE thread_id = %s",
                (thread_id,),
            ).fetchall()
        return [RawWrite(*row) for row in rows]
    return [
        RawWrite(ns, checkpoint_id, task_id, idx, channel, typed[0], bytes(typed[1]), path)
        for (thread, ns, checkpoint_id), writes in _dev(store).writes.items()
        if thread == thread_id
        for (task_id, idx), (_, channel, typed, path) in writes.items()
    ]


def raw_checkpoints(store: AgentStore, thread_id: str) -> list[RawCheckpoint]:
    if store.kind == "sqlite":
        with sqlite3.connect(store.location) as conn:
            rows = conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,"
                " metadata FROM checkpoints WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        result = []
        for ns, cid, parent, type_, body, metadata in rows:
            assert type_ == "msgpack"
            checkpoint = _unpack(body)  # channel values are inline in SQLite
            result.append(
                RawCheckpoint(
                    ns,
                    cid,
                    parent,
                    json.loads(metadata),
                    checkpoint["channel_versions"],
                    frozenset(checkpoint["channel_values"]),
                )
            )
        return result
    if store.kind == "postgres":
        with psycopg.connect(store.location) as pg:
            rows = pg.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata"
                " FROM checkpoints WHERE thread_id = %s",
                (thread_id,),
            ).fetchall()
            blobs = {
                (ns, channel, version)
                for ns, channel, version in pg.execute(
                    "SELECT checkpoint_ns, channel, version FROM checkpoint_blobs"
                    " WHERE thread_id = %s AND type <> 'empty'",
                    (thread_id,),
                ).fetchall()
            }
        result = []
        for ns, cid, parent, checkpoint, metadata in rows:
            versions = checkpoint["channel_versions"]
            inline = set(checkpoint.get("channel_values") or {})
            stored = inline | {ch for ch, v in versions.items() if (ns, ch, v) in blobs}
            result.append(RawCheckpoint(ns, cid, parent, metadata, versions, frozenset(stored)))
        return result
    saver = _dev(store)
    result = []
    for ns, by_id in saver.storage.get(thread_id, {}).items():
        for cid, (checkpoint_typed, metadata_typed, parent) in by_id.items():
            checkpoint = saver.serde.loads_typed(checkpoint_typed)
            versions = checkpoint["channel_versions"]
            stored = {
                ch
                for ch, v in versions.items()
                if saver.blobs.get((thread_id, ns, ch, v), ("empty", b""))[0] != "empty"
            }
            metadata = saver.serde.loads_typed(metadata_typed)
            result.append(RawCheckpoint(ns, cid, parent, metadata, versions, frozenset(stored)))
    return result


def raw_value_blobs(store: AgentStore, thread_id: str) -> list[bytes]:
    """The msgpack data holding the thread's channel values."""
    if store.kind == "sqlite":
        with sqlite3.connect(store.location) as conn:
            rows = conn.execute(
                "SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (thread_id,)
            ).fetchall()
        return [row[0] for row in rows]
    if store.kind == "postgres":
        with psycopg.connect(store.location) as pg:
            rows = pg.execute(
                "SELECT blob FROM checkpoint_blobs WHERE thread_id = %s AND type = 'msgpack'",
                (thread_id,),
            ).fetchall()
        return [row[0] for row in rows]
    return [
        bytes(data)
        for (thread, *_), (tag, data) in _dev(store).blobs.items()
        if thread == thread_id and tag == "msgpack"
    ]


# --------------------------------------------------------------------------------------
# LangGraph's view.
# --------------------------------------------------------------------------------------


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def graph_of(store: AgentStore, thread_id: str) -> Any:
    return GRAPH_FACTORIES[store.manifest["threads"][thread_id]](store.saver)


def state_of(store: AgentStore, thread_id: str) -> StateSnapshot:
    with quiet_serde_log():
        snapshot: StateSnapshot = graph_of(store, thread_id).get_state(
            config(thread_id), subgraphs=True
        )
    return snapshot


def history_of(store: AgentStore, thread_id: str) -> list[StateSnapshot]:
    with quiet_serde_log():
        return list(graph_of(store, thread_id).get_state_history(config(thread_id)))


def tuples(store: AgentStore, thread_id: str, ns: str | None = "") -> list[CheckpointTuple]:
    """saver.list of one namespace (or of all when ns is None), oldest first."""
    with quiet_serde_log():
        found = [
            t
            for t in store.saver.list(None)
            if t.config["configurable"]["thread_id"] == thread_id
            and (ns is None or t.config["configurable"]["checkpoint_ns"] == ns)
        ]
    return sorted(found, key=lambda t: t.config["configurable"]["checkpoint_id"])


def latest(store: AgentStore, thread_id: str) -> CheckpointTuple:
    with quiet_serde_log():
        tup = store.saver.get_tuple(config(thread_id))
    assert tup is not None, thread_id
    return tup


def write_channels(tup: CheckpointTuple) -> list[str]:
    return [channel for _, channel, _ in tup.pending_writes or []]


def ns_shape(ns: str) -> str:
    """A namespace without its task ids ("a:<id>|b:<id>" -> "a|b"); the id follows the
    last colon of each part, so node names with colons keep theirs."""
    return "|".join(part.rsplit(":", 1)[0] for part in ns.split("|")) if ns else ""


# --------------------------------------------------------------------------------------
# Every thread: present, and ending as its role promises.
# --------------------------------------------------------------------------------------


def test_manifest_names_every_thread_written(store: AgentStore) -> None:
    manifest = store.manifest
    assert set(manifest["threads"]) == {spec.thread_id for spec in THREADS}
    assert set(manifest["threads"].values()) <= set(GRAPH_FACTORIES)
    with quiet_serde_log():
        written = {t.config["configurable"]["thread_id"] for t in store.saver.list(None)}
    assert written == set(manifest["threads"])
    for spec in THREADS:
        assert manifest[spec.role] == spec.thread_id  # type: ignore[literal-required]


def test_manifests_agree_between_stores(store: AgentStore, sqlite_agents: AgentStore) -> None:
    def stable(manifest: AgentManifest) -> dict[str, Any]:
        # Fork checkpoint ids are each run's own; the metadata is the dev server's.
        return {k: v for k, v in manifest.items() if k not in ("forks", "metadata")}

    assert stable(store.manifest) == stable(sqlite_agents.manifest)
    assert set(store.manifest["forks"]) == set(sqlite_agents.manifest["forks"])


@pytest.mark.parametrize("thread_id", [spec.thread_id for spec in THREADS])
def test_thread_ends_as_promised(store: AgentStore, thread_id: str) -> None:
    status = store.manifest["status"][thread_id]
    state = state_of(store, thread_id)
    last = latest(store, thread_id)
    channels = write_channels(last)
    if status == "done":
        assert state.next == ()
        assert state.interrupts == ()
        assert CONTROL_WRITES.isdisjoint(channels), channels
    elif status == "failed":
        error_class = store.manifest["errors"][thread_id]
        errors = [
            value for _, channel, value in last.pending_writes or [] if channel == "__error__"
        ]
        assert errors, channels
        # LangGraph stores the exception as its repr: "RuntimeError('...')".
        assert all(isinstance(e, str) and e.startswith(f"{error_class}(") for e in errors)
        failed = [t for t in state.tasks if t.error is not None]
        assert failed and all(str(t.error).startswith(f"{error_class}(") for t in failed)
        assert state.interrupts == ()
    else:
        assert status == "interrupted"
        assert "__interrupt__" in channels
        assert "__error__" not in channels
        assert state.interrupts, "no interrupt in get_state"
        assert state.next


def test_failed_parallel_branch_keeps_its_siblings_writes(store: AgentStore) -> None:
    thread_id = store.manifest["parallel_branch_failed"]
    writes = latest(store, thread_id).pending_writes or []
    by_task: dict[str, set[str]] = defaultdict(set)
    for task_id, channel, _ in writes:
        by_task[task_id].add(channel)
    failed = [task for task, chans in by_task.items() if "__error__" in chans]
    finished = [task for task, chans in by_task.items() if "done" in chans]
    assert len(failed) == 1
    assert len(finished) == 2  # zeta and alpha finished beside the failing worker
    state = state_of(store, thread_id)
    assert state.values["done"] == ["split", "alpha", "zeta"]  # applied in path order


def test_long_thread_has_every_superstep(store: AgentStore) -> None:
    thread_id = store.manifest["long_failed"]
    steps = [t.metadata["step"] for t in tuples(store, thread_id)]
    long_steps = store.manifest["long_steps"]
    # step -1 (input), 0 (input applied), then tick k saves step k; tick LONG_STEPS fails
    assert steps == list(range(-1, long_steps))
    assert "__error__" in write_channels(latest(store, thread_id))


def test_react_tool_error_becomes_an_error_tool_message(store: AgentStore) -> None:
    handled = state_of(store, store.manifest["react_tool_error"]).values["messages"]
    errors = [m for m in handled if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 1 and "no exchange rate for XYZ" in str(errors[0].content)
    assert errors[0].id == f"{errors[0].tool_call_id}-result"
    raised = latest(store, store.manifest["react_tool_raise"])
    assert write_channels(raised).count("__error__") == 1
    tools_task = next(t for t in state_of(store, store.manifest["react_tool_raise"]).tasks)
    assert tools_task.name == "tools" and tools_task.path[0] == "__pregel_push"


# --------------------------------------------------------------------------------------
# Subgraphs and interrupts.
# --------------------------------------------------------------------------------------


def _subgraph_states(snapshot: StateSnapshot) -> Iterator[StateSnapshot]:
    for task in snapshot.tasks:
        if isinstance(task.state, StateSnapshot):
            yield task.state
            yield from _subgraph_states(task.state)


def test_supervisor_hands_off_between_experts(store: AgentStore) -> None:
    thread_id = store.manifest["supervisor_done"]
    spaces = [
        ns_shape(t.config["configurable"]["checkpoint_ns"]) for t in tuples(store, thread_id, None)
    ]
    assert {"", "supervisor", "researcher", "analyst"} == set(spaces)
    names = [m.name for m in state_of(store, thread_id).values["messages"] if m.type == "ai"]
    assert names[0] == "supervisor" and names[-1] == "supervisor"
    assert {"researcher", "analyst"} <= set(names)
    # Every handoff is a Command(graph=PARENT): the expert runs next in the parent.
    nexts = [s.next for s in reversed(history_of(store, thread_id)) if s.next]
    assert ("researcher",) in nexts and ("analyst",) in nexts


@pytest.mark.parametrize(
    ("role", "depth", "last_ns"),
    [("supervisor_interrupted", 1, "analyst"), ("nested_interrupted", 2, "child|grandchild")],
)
def test_interrupt_inside_a_subgraph(
    store: AgentStore, role: str, depth: int, last_ns: str
) -> None:
    thread_id = store.manifest[role]  # type: ignore[literal-required]
    state = state_of(store, thread_id)
    nested = list(_subgraph_states(state))
    assert len(nested) == depth
    inner = nested[-1]
    assert ns_shape(inner.config["configurable"]["checkpoint_ns"]) == last_ns
    assert inner.interrupts and inner.interrupts == state.interrupts
    # The interrupt is written on the checkpoints of every level.
    ns_latest: dict[str, CheckpointTuple] = {}
    for tup in tuples(store, thread_id, None):
        ns_latest[tup.config["configurable"]["checkpoint_ns"]] = tup
    interrupted = {
        ns_shape(ns) for ns, t in ns_latest.items() if "__interrupt__" in write_channels(t)
    }
    assert last_ns in interrupted and "" in interrupted


def test_two_interrupts_in_one_node(store: AgentStore) -> None:
    thread_id = store.manifest["interrupt_double"]
    state = state_of(store, thread_id)
    (waiting,) = state.interrupts
    assert waiting.value["title"] == "Checkpoints, explained"  # the first answer
    writes = latest(store, thread_id).pending_writes or []
    # Command(resume=value) is stored under NULL_TASK_ID; the task stores the list of
    # the resume values it consumed so far.
    null = [v for task_id, ch, v in writes if ch == "__resume__" and task_id == NULL_TASK_ID]
    own = [v for task_id, ch, v in writes if ch == "__resume__" and task_id != NULL_TASK_ID]
    assert null == ["Checkpoints, explained"]
    assert own == [["Checkpoints, explained"]]


def test_interrupt_with_response_schema(store: AgentStore) -> None:
    (waiting,) = state_of(store, store.manifest["interrupt_schema"]).interrupts
    assert isinstance(waiting.response_schema, dict)
    assert {"approved", "reviewer"} <= set(waiting.response_schema["properties"])
    resumed = state_of(store, store.manifest["interrupt_schema_resumed"]).values
    assert resumed["approval"] == Approval(approved=True, reviewer="ada", note="fine")


def test_parallel_interrupts_and_resume_by_id(store: AgentStore) -> None:
    both = state_of(store, store.manifest["interrupt_parallel"])
    assert both.next == ("left_review", "right_review")
    assert len(both.interrupts) == 2 and len({i.id for i in both.interrupts}) == 2
    done = state_of(store, store.manifest["interrupt_by_id"])
    assert {"left: ok from left_review", "right: ok from right_review"} <= set(
        done.values["answers"]
    )
    partial_id = store.manifest["interrupt_by_id_partial"]
    partial = state_of(store, partial_id)
    assert partial.next == ("left_review",)  # right_review finished, left still waits
    assert partial.values["answers"] == ["fan", "right: ok from right_review"]
    # A resume map {interrupt id: value} is handed to the tasks through the config, never
    # written under NULL_TASK_ID (unlike a plain Command(resume=value)): only the task that
    # consumed it writes __resume__, a list, and keeps its __interrupt__ write beside it.
    writes = latest(store, partial_id).pending_writes or []
    resumes = [(task_id, value) for task_id, ch, value in writes if ch == "__resume__"]
    assert [value for _, value in resumes] == [["ok from right_review"]]
    assert all(task_id != NULL_TASK_ID for task_id, _ in resumes)
    (right_task,) = {task_id for task_id, _ in resumes}
    right_writes = [ch for task_id, ch, _ in writes if task_id == right_task]
    assert "__interrupt__" in right_writes and "answers" in right_writes


def test_functional_interrupt_inside_a_task(store: AgentStore) -> None:
    thread_id = store.manifest["functional_interrupted"]
    tup = latest(store, thread_id)
    interrupting = {task_id for task_id, ch, _ in tup.pending_writes or [] if ch == "__interrupt__"}
    assert len(interrupting) == 2  # the task that called interrupt() and the entrypoint
    assert state_of(store, thread_id).next == ("order_workflow",)


# --------------------------------------------------------------------------------------
# DeltaChannel and durability="exit".
# --------------------------------------------------------------------------------------


def test_delta_channels_absent_between_snapshots(store: AgentStore) -> None:
    thread_id = store.manifest["delta_sync"]
    saved = tuples(store, thread_id)
    raw = {c.checkpoint_id: c for c in raw_checkpoints(store, thread_id) if c.checkpoint_ns == ""}
    graph = graph_of(store, thread_id)
    for channel in store.manifest["delta_channels"]:
        versioned = [t for t in saved if channel in t.checkpoint["channel_versions"]]
        absent = [t for t in versioned if channel not in t.checkpoint["channel_values"]]
        snapshots = [t for t in versioned if channel in t.checkpoint["channel_values"]]
        assert absent and len(snapshots) >= 2, channel
        for tup in versioned:  # the raw rows agree with what the saver rebuilt
            checkpoint_id = tup.config["configurable"]["checkpoint_id"]
            stored = channel in raw[checkpoint_id].stored_channels
            assert stored == (channel in tup.checkpoint["channel_values"]), checkpoint_id
        for tup in absent:  # ...and LangGraph still rebuilds the value there
            with quiet_serde_log():
                values = graph.get_state(tup.config).values
            n = values.get("n", 0)
            if channel == "log":
                assert values["log"] == ["seed"] + [f"step-{i}" for i in range(1, n + 1)]
            else:
                kept = [i for i in range(2, n + 1, 2) if not (i == 2 and n >= 6)]
                expected = ["delta-sync-h1"] + [f"delta-ai-{i}" for i in kept]
                assert [m.id for m in values["messages"]] == expected


def test_exit_durability_writes_a_stub_and_synthetic_writes(store: AgentStore) -> None:
    thread_id = store.manifest["delta_exit"]
    raw = raw_checkpoints(store, thread_id)
    stubs = [c for c in raw if c.metadata.get("step") == -2]
    assert len(stubs) == 1
    (stub,) = stubs
    assert "source" not in stub.metadata and stub.parent_checkpoint_id is None
    assert stub.channel_versions == {}
    writes = raw_writes(store, thread_id)
    on_stub = [w for w in writes if w.checkpoint_id == stub.checkpoint_id]
    assert {w.channel for w in on_stub} <= set(store.manifest["delta_channels"])
    # the first superstep's writes keep their real paths under a step-numbered task id;
    # later supersteps' get ffffffff-... ids and "~~<step>" paths
    assert any(
        w.task_id.startswith("00000000-") and w.task_path.startswith("~__pregel_pull")
        for w in on_stub
    )
    late = [w for w in writes if w.task_id.startswith("ffffffff-")]
    assert late and all(w.task_path.startswith("~~") for w in late)
    assert any(w.checkpoint_id != stub.checkpoint_id for w in late)  # anchored on a real parent
    # LangGraph's history shows the stub as a checkpoint of its own
    assert any(s.metadata and s.metadata.get("step") == -2 for s in history_of(store, thread_id))
    # no thread run with the default durability has one
    for other in set(store.manifest["threads"]) - set(store.manifest["exit_durability"]):
        assert all(c.metadata.get("step") != -2 for c in raw_checkpoints(store, other)), other


def test_delta_fork_has_two_children(store: AgentStore) -> None:
    thread_id = store.manifest["delta_fork"]
    fork = store.manifest["forks"][thread_id]
    children: dict[str | None, list[CheckpointTuple]] = defaultdict(list)
    for tup in tuples(store, thread_id):
        parent = tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None
        children[parent].append(tup)
    ids = {t.config["configurable"]["checkpoint_id"] for t in children[fork["parent"]]}
    assert ids == {fork["child"], fork["original_child"]}
    (forked,) = [
        t
        for t in children[fork["parent"]]
        if t.config["configurable"]["checkpoint_id"] == fork["child"]
    ]
    assert forked.metadata["source"] == "update"
    messages = state_of(store, thread_id).values["messages"]
    assert "delta-fork-edit" in [m.id for m in messages]
    assert "delta-fork-h1" not in [m.id for m in messages]  # the fork's RemoveMessage


# --------------------------------------------------------------------------------------
# Node names, task order, custom types.
# --------------------------------------------------------------------------------------


def test_odd_node_names_are_stored_as_such(store: AgentStore) -> None:
    thread_id = store.manifest["names_done"]
    paths = {w.task_path for w in raw_writes(store, thread_id)}
    for name in ("a,b", "with space", "数据", "résumé"):
        assert f"~__pregel_pull, {name}" in paths, name
    assert "~__pregel_pull, x,y" in paths  # inside the subgraph
    spaces = {c.checkpoint_ns for c in raw_checkpoints(store, thread_id)}
    assert {ns_shape(ns) for ns in spaces} == {"", "résumé"}
    assert all(ns == "" or ns.startswith("résumé:") for ns in spaces)
    versions = tuples(store, thread_id)[-1].checkpoint["channel_versions"]
    assert "branch:to:a,b" in versions and "branch:to:with space" in versions
    assert ("résumé", "with space") in [s.next for s in history_of(store, thread_id)]


def test_colons_in_node_names(store: AgentStore) -> None:
    task_spaces = {
        c.checkpoint_ns for c in raw_checkpoints(store, store.manifest["names_colon_task"])
    }
    assert {ns_shape(ns) for ns in task_spaces} == {"", "crawl|fetch:page"}
    assert len(task_spaces) == 3  # one subgraph namespace per fetch:page task
    pregel_spaces = {
        c.checkpoint_ns for c in raw_checkpoints(store, store.manifest["names_colon_pregel"])
    }
    assert {ns_shape(ns) for ns in pregel_spaces} == {"", "load:csv"}
    paths = {w.task_path for w in raw_writes(store, store.manifest["names_colon_pregel"])}
    assert "~__pregel_pull, load:csv" in paths


def test_static_fanout_runs_in_node_order(store: AgentStore) -> None:
    thread_id = store.manifest["parallel_static"]
    fanned = [s.next for s in history_of(store, thread_id) if len(s.next) == 3]
    assert fanned == [("zeta", "worker", "alpha")]  # the order of add_node, not sorted
    assert sorted(fanned[0]) != list(fanned[0])
    mixed = store.manifest["parallel_mixed"]
    (due,) = [s for s in history_of(store, mixed) if len(s.next) == 4]
    pushes = [t.name for t in due.tasks if t.path[0] == "__pregel_push"]
    pulls = [t.name for t in due.tasks if t.path[0] == "__pregel_pull"]
    assert pushes == ["worker", "worker"] and pulls == ["zeta", "alpha"]
    assert due.next == ("worker", "worker", "zeta", "alpha")  # pushes first, then node order


def test_custom_types_are_stored_as_ext_values(store: AgentStore) -> None:
    thread_id = store.manifest["custom_types"]
    module = store.manifest["custom_module"]
    assert module == "fixtures.agents"
    in_values = set().union(*(ext_names(blob) for blob in raw_value_blobs(store, thread_id)))
    msgpack_writes = [w for w in raw_writes(store, thread_id) if w.type == "msgpack"]
    in_writes = set().union(*(ext_names(w.value) for w in msgpack_writes))
    expected = {(2, module, "Ticket"), (0, module, "Priority"), (5, module, "Invoice")}
    assert expected <= in_values
    assert expected <= in_writes
    assert (1, "langgraph.types", "Send") in in_writes  # Sends carrying a Ticket
    values = state_of(store, thread_id).values
    assert isinstance(values["ticket"], Ticket) and values["priority"] is Priority.URGENT
    assert isinstance(values["invoice"], Invoice) and values["invoice"].priority is Priority.URGENT
    schema_thread = store.manifest["interrupt_schema_resumed"]
    approvals = set().union(*(ext_names(b) for b in raw_value_blobs(store, schema_thread)))
    assert (5, module, "Approval") in approvals


def test_bytearray_in_state(store: AgentStore) -> None:
    thread_id = store.manifest["custom_types"]
    raw = state_of(store, thread_id).values["raw"]
    assert bytes(raw) == bytes(RAW_BYTEARRAY)
    # SqliteSaver keeps channel values inline in the checkpoint's msgpack, where a
    # bytearray becomes msgpack bin and loads back as bytes; the other savers store each
    # value on its own with dumps_typed's "bytearray" tag.
    assert type(raw) is (bytes if store.kind == "sqlite" else bytearray)
    (write,) = [w for w in raw_writes(store, thread_id) if w.channel == "raw"]
    assert write.type == "bytearray" and bytes(write.value) == bytes(RAW_BYTEARRAY)


def test_dev_folder_pickles_bytearray_objects(dev_folder_agents: AgentStore) -> None:
    folder = dev_folder_agents.location / DEV_FOLDER
    for name in DEV_FILES:
        data = (folder / name).read_bytes()
        globals_ = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
        if name == DEV_FILES[0]:  # storage: checkpoints and metadata only
            assert globals_ == {"collections defaultdict", "__builtin__ dict", "_codecs encode"}
        else:  # writes and blobs: ("bytearray", bytearray(...)) pairs, b"" as bytes()
            assert globals_ == {"_codecs encode", "__builtin__ bytearray", "__builtin__ bytes"}


# --------------------------------------------------------------------------------------
# The same shape in every store.
# --------------------------------------------------------------------------------------

Shape = dict[str, list[tuple[str, list[tuple[Any, Any, tuple[str, ...]]]]]]


def store_shape(store: AgentStore) -> Shape:
    """Per thread: its namespaces (without task ids), each with its checkpoints in order
    as (step, source, the channels of their writes)."""
    per_ns: dict[tuple[str, str], list[tuple[str, Any, Any, tuple[str, ...]]]] = defaultdict(list)
    with quiet_serde_log():
        for tup in store.saver.list(None):
            conf = tup.config["configurable"]
            per_ns[(conf["thread_id"], conf["checkpoint_ns"])].append(
                (
                    conf["checkpoint_id"],
                    tup.metadata.get("step"),
                    tup.metadata.get("source"),
                    tuple(sorted(write_channels(tup))),
                )
            )
    shape: Shape = defaultdict(list)
    for (thread_id, ns), rows in per_ns.items():
        shape[thread_id].append((ns_shape(ns), [row[1:] for row in sorted(rows)]))
    return {thread_id: sorted(spaces) for thread_id, spaces in shape.items()}


@pytest.mark.parametrize("other", postgres_marked(name for name in STORES if name != "sqlite"))
def test_stores_have_the_same_shape(
    request: pytest.FixtureRequest, sqlite_agents: AgentStore, other: str
) -> None:
    expected = store_shape(sqlite_agents)
    actual = store_shape(request.getfixturevalue(f"{other}_agents"))
    assert set(actual) == set(expected)
    for thread_id in expected:
        assert actual[thread_id] == expected[thread_id], thread_id


def test_only_runs_the_named_scenarios() -> None:
    saver = InMemorySaver()
    with quiet_serde_log():
        manifest = run_agent_scenarios(saver, only=("delta", "long"))
    expected = {s.thread_id for s in THREADS if s.scenario in ("delta", "long")}
    assert set(manifest["threads"]) == expected
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == expected
    with pytest.raises(ValueError, match="unknown scenario"):
        run_agent_scenarios(InMemorySaver(), only=("no-such-scenario",))


# --------------------------------------------------------------------------------------
# ckpt check, stats and Store.health on what every saver wrote: no error, one answer.
# --------------------------------------------------------------------------------------


def test_check_finds_no_error_and_stats_agrees(store: AgentStore) -> None:
    from agreement import assert_health_agrees, assert_stats_and_check_agree
    from pg import url_of

    location = url_of(store.location) if store.kind == "postgres" else str(store.location)
    checked = assert_stats_and_check_agree(location)
    assert [f for f in checked["findings"] if f["severity"] == "error"] == []
    assert_health_agrees(location)
