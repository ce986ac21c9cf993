"""The LangGraph.js fixture stores (fixtures/js_stores.py): what LangGraph.js writes, read
with sqlite3 / psycopg only, set beside what Python LangGraph writes for the same scenarios.

Each test pins one observed property of the JS format, most of them as a difference from
the Python stores built by tests/conftest.py (chat.sqlite, the PostgresSaver database), so
ckpt's JS reader has a checked statement of what it must handle.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from fixtures.js_stores import build_js_stores

from runs import NewDatabase, built_once

if TYPE_CHECKING:
    from pg import PgStore

# Every test here needs the PostgreSQL test server: `pytest -m 'not postgres'` leaves them out.
pytestmark = pytest.mark.postgres

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
CONTROL_WRITES = {"__interrupt__", "__resume__", "__error__", "__error_source_node__"}
JS_METADATA_KEYS = {"source", "step", "parents", "delta_writes_versioned"}
JS_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")  # Date.toISOString()
INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class JsBuild:
    sqlite: Path
    pg_dsn: str
    manifest: dict[str, Any]
    oracles: dict[str, dict[str, Any]]  # "sqlite" / "postgres" -> the oracle file's content
    # The files beside js.sqlite as the build left them (tests of the run read the store
    # at once, and LangGraph.js's own oracle reads open side files while they run).
    siblings: list[str]


@pytest.fixture(scope="session")
def js_build(tmp_path_factory: pytest.TempPathFactory, pg_new_database: NewDatabase) -> JsBuild:
    """The JS stores, built once per run into a folder and a database the run's test
    processes share (runs.built_once; the tests only read them)."""

    def build(outdir: Path) -> dict[str, str]:
        dsn = pg_new_database(shared=True)
        paths = build_js_stores(outdir, dsn)
        siblings = sorted(p.name for p in paths["sqlite"].parent.iterdir() if p.is_file())
        return {
            "pg_dsn": dsn,
            "siblings": json.dumps(siblings),
            **{name: str(path) for name, path in paths.items()},
        }

    built: dict[str, str] = built_once(tmp_path_factory, "js_stores", build)
    return JsBuild(
        sqlite=Path(built["sqlite"]),
        pg_dsn=built["pg_dsn"],
        siblings=json.loads(built["siblings"]),
        manifest=json.loads(Path(built["manifest"]).read_text()),
        oracles={
            "sqlite": json.loads(Path(built["oracle_sqlite"]).read_text()),
            "postgres": json.loads(Path(built["oracle_postgres"]).read_text()),
        },
    )


@contextmanager
def sqlite_ro(path: Path) -> Iterator[sqlite3.Connection]:
    # immutable=1: no locks and no -wal/-shm files (the writer checkpointed the WAL on close).
    with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as conn:
        yield conn


def sqlite_tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """table -> PRAGMA table_info rows (cid, name, type, notnull, default, pk)."""
    with sqlite_ro(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {name: conn.execute(f"PRAGMA table_info({name})").fetchall() for name in names}


def pg_rows(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql, params).fetchall()


def pg_columns(dsn: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    rows = pg_rows(
        dsn,
        "SELECT table_name, column_name, data_type, is_nullable, column_default "
        "FROM information_schema.columns WHERE table_schema = 'public'",
    )
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def js_sqlite_checkpoints(path: Path) -> list[dict[str, Any]]:
    """Every JS SQLite checkpoint row, body and metadata parsed (they are JSON text)."""
    with sqlite_ro(path) as conn:
        rows = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "typeof(checkpoint), checkpoint, typeof(metadata), metadata FROM checkpoints"
        ).fetchall()
    return [
        {
            "thread_id": r[0],
            "checkpoint_ns": r[1],
            "checkpoint_id": r[2],
            "parent_checkpoint_id": r[3],
            "type": r[4],
            "storage": (r[5], r[7]),
            "raw_metadata": r[8],
            "checkpoint": json.loads(r[6]),
            "metadata": json.loads(r[8]),
        }
        for r in rows
    ]


def js_sqlite_writes(path: Path, thread_id: str | None = None) -> list[dict[str, Any]]:
    with sqlite_ro(path) as conn:
        rows = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value "
            "FROM writes WHERE ? IS NULL OR thread_id = ?",
            (thread_id, thread_id),
        ).fetchall()
    keys = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type")
    return [{**dict(zip(keys, r[:7], strict=True)), "value": json.loads(r[7])} for r in rows]


def js_pg_writes(dsn: str, thread_id: str) -> list[dict[str, Any]]:
    rows = pg_rows(
        dsn,
        "SELECT checkpoint_id, task_id, idx, channel, type, blob FROM checkpoint_writes "
        "WHERE thread_id = %s",
        thread_id,
    )
    keys = ("checkpoint_id", "task_id", "idx", "channel", "type")
    return [{**dict(zip(keys, r[:5], strict=True)), "value": json.loads(r[5])} for r in rows]


def snapshots(build: JsBuild, store: str, mode: str | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = build.oracles[store]["snapshots"]
    return [s for s in found if mode is None or s["mode"] == mode]


# --------------------------------------------------------------------------------------
# Tables and columns.
# --------------------------------------------------------------------------------------


def test_sqlite_tables_are_pythons_minus_task_path(js_build: JsBuild, sqlite_store: Path) -> None:
    js, py = sqlite_tables(js_build.sqlite), sqlite_tables(sqlite_store)
    assert set(js) == set(py) == {"checkpoints", "writes"}
    assert js["checkpoints"] == py["checkpoints"]
    js_writes = {row[1]: row[2:] for row in js["writes"]}
    py_writes = {row[1]: row[2:] for row in py["writes"]}
    assert set(py_writes) - set(js_writes) == {"task_path"}
    assert all(py_writes[name] == spec for name, spec in js_writes.items())


def test_postgres_tables_are_pythons_minus_task_path(js_build: JsBuild, pg_store: PgStore) -> None:
    js, py = pg_columns(js_build.pg_dsn), pg_columns(pg_store.dsn)
    tables = {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"}
    assert {t for t, _ in js} == {t for t, _ in py} == tables
    assert set(py) - set(js) == {("checkpoint_writes", "task_path")}
    assert all(py[key] == spec for key, spec in js.items())  # same types, nullability, defaults
    assert js[("checkpoints", "checkpoint")][0] == "jsonb"
    assert js[("checkpoint_blobs", "version")][0] == "text"


def test_postgres_migrations_stop_early(js_build: JsBuild, pg_store: PgStore) -> None:
    """JS runs fewer MIGRATIONS than Python and so lacks Python's thread_id indexes."""
    query = "SELECT v FROM checkpoint_migrations ORDER BY v"
    js_v = [r[0] for r in pg_rows(js_build.pg_dsn, query)]
    py_v = [r[0] for r in pg_rows(pg_store.dsn, query)]
    assert js_v == list(range(len(js_v))) and len(js_v) < len(py_v)
    index_query = "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
    js_idx = {r[0] for r in pg_rows(js_build.pg_dsn, index_query)}
    py_idx = {r[0] for r in pg_rows(pg_store.dsn, index_query)}
    assert js_idx < py_idx
    assert all(name.endswith("_thread_id_idx") for name in py_idx - js_idx)


# --------------------------------------------------------------------------------------
# Serializer tags and storage forms.
# --------------------------------------------------------------------------------------


def test_sqlite_everything_is_json_text_in_blobs(js_build: JsBuild, sqlite_store: Path) -> None:
    rows = js_sqlite_checkpoints(js_build.sqlite)
    assert {r["type"] for r in rows} == {"json"}
    assert {r["storage"] for r in rows} == {("blob", "blob")}
    with sqlite_ro(js_build.sqlite) as conn:
        write_types = {r[0] for r in conn.execute("SELECT DISTINCT type FROM writes")}
        write_storage = {r[0] for r in conn.execute("SELECT DISTINCT typeof(value) FROM writes")}
    assert write_types == {"json"} and write_storage == {"blob"}
    with sqlite_ro(sqlite_store) as conn:
        py_types = {r[0] for r in conn.execute("SELECT DISTINCT type FROM checkpoints")}
        py_meta = conn.execute("SELECT metadata FROM checkpoints LIMIT 1").fetchone()[0]
    assert "json" not in py_types  # Python's SqliteSaver writes msgpack bodies
    # Metadata: JS writes compact JSON (its serializer); Python json.dumps's ", " / ": ".
    for row in rows:
        compact = json.dumps(row["metadata"], separators=(",", ":"), ensure_ascii=False)
        assert row["raw_metadata"] == compact.encode()
    assert b'", "' in py_meta or b'": ' in py_meta


def test_postgres_tags_and_no_inline_values(js_build: JsBuild, pg_store: PgStore) -> None:
    dsn = js_build.pg_dsn
    assert pg_rows(dsn, "SELECT DISTINCT type FROM checkpoints") == [(None,)]
    assert {r[0] for r in pg_rows(dsn, "SELECT DISTINCT type FROM checkpoint_blobs")} == {
        "json",
        "empty",
    }
    assert {r[0] for r in pg_rows(dsn, "SELECT DISTINCT type FROM checkpoint_writes")} == {"json"}
    # JS drops channel_values from the JSONB entirely: every value, primitives too, is a blob.
    # Python keeps the key (primitives inline).
    has_values = "SELECT bool_or(checkpoint ? 'channel_values') FROM checkpoints"
    assert pg_rows(dsn, has_values) == [(False,)]
    assert pg_rows(pg_store.dsn, has_values) == [(True,)]


# --------------------------------------------------------------------------------------
# Checkpoint body, versions, metadata, ids.
# --------------------------------------------------------------------------------------


def test_checkpoint_fields(js_build: JsBuild, pg_store: PgStore) -> None:
    rows = js_sqlite_checkpoints(js_build.sqlite)
    py_bodies = [r[0] for r in pg_rows(pg_store.dsn, "SELECT checkpoint FROM checkpoints")]
    assert {r["checkpoint"]["v"] for r in rows} == {b["v"] for b in py_bodies} == {4}
    # No `updated_channels` (Python >= 0.6.4 writes it on loop checkpoints).
    assert {frozenset(r["checkpoint"]) for r in rows} == {
        frozenset({"v", "id", "ts", "channel_values", "channel_versions", "versions_seen"})
    }
    assert any("updated_channels" in b for b in py_bodies)
    assert all(r["checkpoint"]["id"] == r["checkpoint_id"] for r in rows)
    assert all(JS_TS.match(r["checkpoint"]["ts"]) for r in rows)
    assert all(b["ts"].endswith("+00:00") for b in py_bodies)


def test_channel_versions_are_integers(js_build: JsBuild, pg_store: PgStore) -> None:
    """JS savers use the base integer getNextVersion; Python's are "<032d>.<random>" strings."""
    bodies = [r["checkpoint"] for r in js_sqlite_checkpoints(js_build.sqlite)]
    bodies += [r[0] for r in pg_rows(js_build.pg_dsn, "SELECT checkpoint FROM checkpoints")]
    versions = [v for b in bodies for v in b["channel_versions"].values()]
    versions += [v for b in bodies for seen in b["versions_seen"].values() for v in seen.values()]
    assert versions and all(type(v) is int for v in versions)
    blob_versions = [r[0] for r in pg_rows(js_build.pg_dsn, "SELECT version FROM checkpoint_blobs")]
    assert all(re.fullmatch(r"[1-9]\d*", v) for v in blob_versions)
    py_versions = [
        v
        for (body,) in pg_rows(pg_store.dsn, "SELECT checkpoint FROM checkpoints")
        for v in body["channel_versions"].values()
    ]
    assert py_versions and all(isinstance(v, str) and v.count(".") >= 1 for v in py_versions)


def test_pregel_tasks_channel(js_build: JsBuild) -> None:
    """SQLite keeps `__pregel_tasks` in every channel_values ([] once consumed); a Send is
    stored as plain {"node", "args"} (no type marker; Python's Send has `arg`)."""
    rows = js_sqlite_checkpoints(js_build.sqlite)
    assert all("__pregel_tasks" in r["checkpoint"]["channel_values"] for r in rows)
    fanout = [r for r in rows if r["thread_id"] == js_build.manifest["fanout_error"]]
    sends = [s for r in fanout for s in r["checkpoint"]["channel_values"]["__pregel_tasks"]]
    assert sends and all(set(s) == {"node", "args"} for s in sends)
    # Postgres stores the channel only when it has a version: the fan-out step's blob.
    pg = pg_rows(
        js_build.pg_dsn,
        "SELECT thread_id, type, blob FROM checkpoint_blobs WHERE channel = '__pregel_tasks'",
    )
    assert pg and {r[0] for r in pg} == {js_build.manifest["fanout_error"]}
    assert json.loads(pg[0][2]) == sends


def test_metadata_keys(js_build: JsBuild, pg_store: PgStore) -> None:
    """JS metadata is {source, step, parents} plus delta keys; config["metadata"] is not
    copied in (Python copies primitives such as user_id)."""
    rows = js_sqlite_checkpoints(js_build.sqlite)
    keys = {k for r in rows for k in r["metadata"]}
    assert keys == JS_METADATA_KEYS | {"counters_since_delta_snapshot"}
    delta = [r for r in rows if r["thread_id"] == js_build.manifest["delta"]]
    assert delta and all(r["metadata"]["delta_writes_versioned"] is True for r in delta)
    assert all("delta_writes_versioned" not in r["metadata"] for r in rows if r not in delta)
    counters = [r["metadata"].get("counters_since_delta_snapshot") for r in delta]
    assert any(c is not None for c in counters)
    assert all(len(pair) == 2 for c in counters if c for pair in c.values())
    chat = js_build.manifest["chat"][0]
    assert all("user_id" not in r["metadata"] for r in rows if r["thread_id"] == chat)
    py_meta = pg_rows(pg_store.dsn, "SELECT metadata FROM checkpoints WHERE thread_id = %s", chat)
    assert py_meta and all("user_id" in m for (m,) in py_meta)


def test_task_ids_are_uuid5_of_the_checkpoint(js_build: JsBuild) -> None:
    """Task id = uuid5(namespace=checkpoint id, name=JSON.stringify([ns|node, step, node,
    "__pregel_pull", [trigger]] or [..., "__pregel_push", index])): derivable from the store.
    Python (v >= 2) uses xxh3-128 instead."""
    bodies = {
        (r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]): r["checkpoint"]
        for r in js_sqlite_checkpoints(js_build.sqlite)
    }
    checked = 0
    for snap in snapshots(js_build, "sqlite", "at"):
        ns = snap["checkpoint_ns"]
        body = bodies[(snap["thread_id"], ns, snap["checkpoint_id"])]
        for task in snap["tasks"]:
            name, path = task["name"], task["path"]
            prefix = [f"{ns}|{name}" if ns else name, str(snap["step"] + 1), name]
            if path[0] == "__pregel_push":
                names = [[*prefix, "__pregel_push", str(path[1])]]
            else:
                names = [[*prefix, "__pregel_pull", [ch]] for ch in body["channel_versions"]]
            namespace = uuid.UUID(snap["checkpoint_id"])
            ids = {
                str(uuid.uuid5(namespace, json.dumps(n, separators=(",", ":"), ensure_ascii=False)))
                for n in names
            }
            assert task["id"] in ids, (snap["thread_id"], snap["checkpoint_id"], name)
            assert uuid.UUID(task["id"]).version == 5
            checked += 1
    assert checked > 50


# --------------------------------------------------------------------------------------
# Messages, errors, interrupts, resumes.
# --------------------------------------------------------------------------------------


def test_messages_are_lc1_constructor_envelopes(js_build: JsBuild) -> None:
    chat = js_build.manifest["chat"][0]
    latest = max(
        (r for r in js_sqlite_checkpoints(js_build.sqlite) if r["thread_id"] == chat),
        key=lambda r: r["checkpoint_id"],
    )
    messages = latest["checkpoint"]["channel_values"]["messages"]
    kinds = {m["id"][-1] for m in messages}
    assert kinds == {"HumanMessage", "AIMessage", "ToolMessage"}
    for message in messages:
        assert message["lc"] == 1 and message["type"] == "constructor"
        assert message["id"][:2] == ["langchain_core", "messages"]
        assert {"content", "id", "additional_kwargs", "response_metadata"} <= set(message["kwargs"])
    calls = [c for m in messages if m["id"][-1] == "AIMessage" for c in m["kwargs"]["tool_calls"]]
    assert calls and all(set(c) == {"name", "args", "id", "type"} for c in calls)
    replies = {m["kwargs"]["tool_call_id"] for m in messages if m["id"][-1] == "ToolMessage"}
    assert replies == {c["id"] for c in calls}


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_failed_thread_has_error_write(js_build: JsBuild, store: str) -> None:
    thread = js_build.manifest["fanout_error"]
    if store == "sqlite":
        writes = js_sqlite_writes(js_build.sqlite, thread)
    else:
        writes = js_pg_writes(js_build.pg_dsn, thread)
    errors = [w for w in writes if w["channel"] == "__error__"]
    assert len(errors) == 1 and errors[0]["idx"] == -1
    # The runner stores {message, name}, not the Error (Python stores repr(exc), a string).
    assert set(errors[0]["value"]) == {"message", "name"} and errors[0]["value"]["name"] == "Error"
    same_step = [w for w in writes if w["checkpoint_id"] == errors[0]["checkpoint_id"]]
    finished = {w["task_id"] for w in same_step if w["channel"] not in CONTROL_WRITES}
    assert len(finished) == 2 and errors[0]["task_id"] not in finished  # the siblings finished


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_waiting_threads_have_interrupt_writes(js_build: JsBuild, store: str) -> None:
    waiting = [
        js_build.manifest[role]
        for role in ("interrupt_waiting", "subgraph_interrupt", "functional_interrupt")
    ]
    for thread in waiting:
        if store == "sqlite":
            writes = js_sqlite_writes(js_build.sqlite, thread)
        else:
            writes = js_pg_writes(js_build.pg_dsn, thread)
        interrupts = [w for w in writes if w["channel"] == "__interrupt__"]
        assert interrupts and all(w["idx"] == -3 for w in interrupts), thread
        for write in interrupts:
            # A list of plain {id, value}: no response_schema, no type marker.
            assert all(set(i) == {"id", "value"} for i in write["value"])
            assert all(INTERRUPT_ID.match(i["id"]) for i in write["value"])


def test_resume_writes(js_build: JsBuild) -> None:
    """Command({resume}) is a NULL_TASK_ID `__resume__` write of the raw value; the task that
    consumed it stores the list of resume values, as in Python."""
    writes = js_sqlite_writes(js_build.sqlite, js_build.manifest["interrupt_resumed"])
    resumes = {w["task_id"] == NULL_TASK_ID: w for w in writes if w["channel"] == "__resume__"}
    assert set(resumes) == {True, False}
    assert resumes[True]["idx"] == resumes[False]["idx"] == -4
    assert resumes[False]["value"] == [resumes[True]["value"]]


# --------------------------------------------------------------------------------------
# The oracle files.
# --------------------------------------------------------------------------------------


def stored_checkpoints(build: JsBuild, store: str) -> dict[tuple[str, str, str], str | None]:
    """(thread, ns, id) -> parent id, straight from the tables."""
    query = "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints"
    if store == "sqlite":
        with sqlite_ro(build.sqlite) as conn:
            rows = conn.execute(query).fetchall()
    else:
        rows = pg_rows(build.pg_dsn, query)
    return {(r[0], r[1], r[2]): r[3] for r in rows}


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_oracle_has_a_snapshot_for_every_checkpoint(js_build: JsBuild, store: str) -> None:
    oracle = js_build.oracles[store]
    assert (oracle["store"], oracle["kind"], oracle["writer"]) == (f"js-{store}", store, "js")
    stored = stored_checkpoints(js_build, store)
    assert {s["thread_id"] for s in oracle["snapshots"]} == set(js_build.manifest["threads"])
    for mode in ("at", "history"):
        found = [
            (s["thread_id"], s["checkpoint_ns"], s["checkpoint_id"])
            for s in snapshots(js_build, store, mode)
        ]
        assert sorted(found) == sorted(stored), mode
    live = [(s["thread_id"], s["checkpoint_ns"]) for s in snapshots(js_build, store, "live")]
    assert sorted(live) == sorted({(t, ns) for t, ns, _ in stored})
    for snap in oracle["snapshots"]:
        key = (snap["thread_id"], snap["checkpoint_ns"], snap["checkpoint_id"])
        assert snap["parent_checkpoint_id"] == stored[key]
        assert snap["step"] == snap["metadata"]["step"]
    keys = [
        (s["thread_id"], s["checkpoint_ns"], s["checkpoint_id"], s["mode"])
        for s in oracle["snapshots"]
    ]
    assert keys == sorted(keys)


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_oracle_task_status(js_build: JsBuild, store: str) -> None:
    manifest = js_build.manifest
    live = {s["thread_id"]: s for s in snapshots(js_build, store, "live") if not s["checkpoint_ns"]}
    fanout = live[manifest["fanout_error"]]
    failed = [t for t in fanout["tasks"] if t["error"] is not None]
    assert len(failed) == 1 and not failed[0]["finished"]
    assert failed[0]["error"].startswith("Error: ")  # Error.prototype.toString of {name, message}
    assert all(t["finished"] for t in fanout["tasks"] if t["error"] is None)
    assert [t["path"][0] for t in fanout["tasks"]] == ["__pregel_push"] * 3
    for role in ("interrupt_waiting", "subgraph_interrupt", "functional_interrupt"):
        snap = live[manifest[role]]
        assert snap["interrupts"] and snap["next"], role
        assert not any(t["finished"] for t in snap["tasks"]), role
    pending = live[manifest["pending"]]
    assert pending["next"] == manifest["pending_next"] and not pending["interrupts"]
    assert [t["finished"] for t in pending["tasks"]] == [False]
    # Nodes due together come in declaration order (here not alphabetical) in next/tasks.
    parallel = [
        s for s in snapshots(js_build, store, "at") if s["thread_id"] == manifest["parallel"]
    ]
    declared = manifest["parallel_declared"]
    assert declared != sorted(declared)
    assert [s["next"] for s in parallel if len(s["next"]) == 2] == [declared]
    assert all(
        s["output_channels"] == "__end__"
        for s in snapshots(js_build, store)
        if s["thread_id"] == manifest["functional"]
    )


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_oracle_subgraph_task_state(js_build: JsBuild, store: str) -> None:
    """With subgraphs=True ("at", "live") a subgraph task's state is the subgraph's latest
    snapshot; getStateHistory does not recurse and leaves only {thread_id, checkpoint_ns}."""
    thread = js_build.manifest["subgraph_interrupt"]
    subgraph_namespaces = {
        s["checkpoint_ns"] for s in snapshots(js_build, store) if s["thread_id"] == thread
    } - {""}
    assert len(subgraph_namespaces) == 1
    (namespace,) = subgraph_namespaces
    latest = max(
        s["checkpoint_id"]
        for s in snapshots(js_build, store, "at")
        if s["thread_id"] == thread and s["checkpoint_ns"] == namespace
    )
    states = {
        s["mode"]: t["state"]
        for s in snapshots(js_build, store)
        if s["thread_id"] == thread and not s["checkpoint_ns"]
        for t in s["tasks"]
        if t["state"] is not None
    }
    assert set(states) == {"at", "history", "live"}
    assert states["history"] == {"checkpoint_ns": namespace, "checkpoint_id": None, "next": None}
    for mode in ("at", "live"):
        assert states[mode]["checkpoint_ns"] == namespace
        assert states[mode]["checkpoint_id"] == latest
        assert states[mode]["next"]  # waiting on the interrupt inside the subgraph


def test_postgres_fork_loses_the_update(js_build: JsBuild) -> None:
    """LangGraph.js's PostgresSaver keys blobs by (channel, integer version) with ON CONFLICT
    DO NOTHING: an updateState fork reuses the version the original run already stored, so
    the fork's value is dropped and reads return the original run's value (langgraphjs
    issue 1812). SQLite keeps values inline and is right. If this starts failing, upstream
    fixed the bug and ckpt's expectations for JS Postgres forks change."""
    fork = js_build.manifest["fork"]

    def fork_notes(store: str) -> list[list[str]]:
        children = js_build.manifest["stores"][store]["fork_children"]
        by_id = {
            s["checkpoint_id"]: s["values"]["notes"]
            for s in snapshots(js_build, store, "at")
            if s["thread_id"] == fork
        }
        return [by_id[child] for child in children]

    assert [notes[-1] for notes in fork_notes("sqlite")] == ["edit-A", "edit-B"]
    assert not any({"edit-A", "edit-B"} & set(notes) for notes in fork_notes("postgres"))
    children = js_build.manifest["stores"]["postgres"]["fork_children"]
    rows = pg_rows(
        js_build.pg_dsn,
        "SELECT checkpoint_id, checkpoint -> 'channel_versions' ->> 'notes', metadata ->> 'source'"
        " FROM checkpoints WHERE thread_id = %s",
        fork,
    )
    child_versions = {version for cid, version, _ in rows if cid in children}
    loop_versions = {version for _, version, source in rows if source == "loop"}
    assert len(child_versions) == 1 and child_versions <= loop_versions


def test_sqlite_store_left_clean(js_build: JsBuild) -> None:
    """The writer closes its connection (WAL checkpointed) and the oracle leaves no side
    files: what the build left (other tests read the store while this one runs)."""
    assert js_build.siblings == ["js-manifest.json", "js.sqlite"]


def test_the_values_view_shows_what_get_state_values_shows(js_build: JsBuild) -> None:
    """`__pregel_tasks` is LangGraph.js's own channel: getState().values has no such key, so
    the human view of the values leaves it out; the JSON record keeps the stored channel."""
    from typer.testing import CliRunner

    from ckpt.cli import app

    thread = js_build.manifest["chat"][0] if "chat" in js_build.manifest else None
    thread = thread or sorted(js_build.manifest["threads"])[0]
    args = ["show", thread, "--db", str(js_build.sqlite), "--blobs"]
    shown = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.stderr
    assert "channel values" in shown.stdout and "__pregel_tasks" not in shown.stdout
    record = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert "__pregel_tasks" in record["channel_values"]
    snapshot = next(
        s
        for s in js_build.oracles["sqlite"]["snapshots"]
        if s["checkpoint_id"] == record["checkpoint_id"] and s["checkpoint_ns"] == ""
    )
    assert "__pregel_tasks" not in snapshot["values"]


def test_check_finds_no_damage(js_build: JsBuild) -> None:
    """`ckpt check` on the stores LangGraph.js wrote: no error. Their schemas lack
    `writes.task_path` (and, in Postgres, the last migrations), so the Python savers read
    them only once their setup() adds it: check says so."""
    from agreement import assert_health_agrees, assert_stats_and_check_agree
    from checking import check
    from pg import url_of

    for store in (str(js_build.sqlite), url_of(js_build.pg_dsn)):
        record = check(store)
        assert record["summary"]["error"] == 0, record["findings"]
        assert record["saver"]["langgraph"] == "migrates"
        # `ckpt stats` says the same of them, and the stores' SQL counts what the scan does.
        assert_stats_and_check_agree(store)
        assert_health_agrees(store)
