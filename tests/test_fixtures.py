"""The fixture stores hold what the scenarios promise, checked with sqlite3, pickletools
and LangGraph's own APIs (never with ckpt)."""

from __future__ import annotations

import json
import math
import pickletools
import sqlite3
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
import pytest
from fixtures.build import DEV_FILES
from fixtures.graphs import FANOUT_BAD_ITEM, RAW_BYTES, rich_payload
from fixtures.oracle import load_memory_saver, quiet_serde_log, saver_view
from fixtures.postgres import postgres_view, shallow_view, table_counts
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

if TYPE_CHECKING:
    from pg import PgStore

SERDE = JsonPlusSerializer()


def _rows(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    # immutable=1: never create -wal/-shm files next to the fixture (format.md §8.15).
    with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


def _by_thread(checkpoints: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for checkpoint in checkpoints:
        grouped.setdefault(checkpoint["thread_id"], []).append(checkpoint)
    return grouped


def _latest(checkpoints: list[dict[str, Any]], thread_id: str, ns: str = "") -> dict[str, Any]:
    own = [c for c in checkpoints if c["thread_id"] == thread_id and c["checkpoint_ns"] == ns]
    return max(own, key=lambda c: c["checkpoint_id"])


def _shape(checkpoints: list[dict[str, Any]]) -> Counter[tuple[str, bool, str]]:
    """Store-independent shape: checkpoints per (thread, in a subgraph?, source)."""
    return Counter(
        (c["thread_id"], c["checkpoint_ns"] != "", c["metadata"]["source"]) for c in checkpoints
    )


def _globals(path: Path) -> set[str]:
    """The GLOBAL references of a pickle, read with pickletools (nothing is loaded)."""
    found = set()
    with path.open("rb") as f:
        for opcode, arg, _ in pickletools.genops(f):
            if opcode.name == "GLOBAL":
                found.add(str(arg))
    return found


# --------------------------------------------------------------------------------------
# chat.sqlite
# --------------------------------------------------------------------------------------


def test_sqlite_has_every_thread_of_the_manifest(sqlite_store: Path, manifest: dict[str, Any]):
    threads = {row[0] for row in _rows(sqlite_store, "SELECT DISTINCT thread_id FROM checkpoints")}
    assert threads == set(manifest["threads"])
    assert set(manifest["chat"]) == {"support-1", "support-2", "support-3"}
    assert manifest["chat_turns"]["support-1"] == 3


def test_oracle_matches_the_raw_rows(sqlite_store: Path, oracles: dict[str, Any]):
    rows = _rows(
        sqlite_store,
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints",
    )
    oracle = {
        (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"], c["parent_checkpoint_id"])
        for c in oracles["chat"]["checkpoints"]
    }
    assert set(rows) == oracle


def test_chat_messages_follow_the_tool_calling_pattern(sqlite_store: Path):
    (blob_type, blob), *_ = _rows(
        sqlite_store,
        "SELECT type, checkpoint FROM checkpoints WHERE thread_id = 'support-1' "
        "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1",
    )
    messages = SERDE.loads_typed((blob_type, blob))["channel_values"]["messages"]
    turn_1 = ["human", "ai", "tool", "ai"]
    turn_2 = ["human", "ai", "tool", "tool", "ai"]  # two parallel tool calls
    turn_3 = ["human", "ai", "tool", "ai"]
    assert [m.type for m in messages] == turn_1 + turn_2 + turn_3
    assert messages[1].tool_calls[0]["name"] == "lookup_order"
    assert messages[2].tool_call_id == messages[1].tool_calls[0]["id"]


def test_chat_metadata_comes_from_the_config(
    sqlite_store: Path, oracles: dict[str, Any], manifest: dict[str, Any]
):
    for checkpoint in oracles["chat"]["checkpoints"]:
        if checkpoint["thread_id"] in manifest["chat"]:
            expected = manifest["chat_metadata"][checkpoint["thread_id"]]
            assert checkpoint["metadata"].items() >= expected.items()
    # the filter a metadata query would run (format.md §3.2: metadata is a JSON BLOB)
    rows = _rows(
        sqlite_store,
        "SELECT DISTINCT thread_id FROM checkpoints "
        "WHERE json_extract(CAST(metadata AS TEXT), '$.user_id') = 'u-1'",
    )
    assert {row[0] for row in rows} == {"support-1", "support-3"}


def test_subgraph_threads_have_namespaced_checkpoints(sqlite_store: Path, manifest: dict[str, Any]):
    rows = _rows(
        sqlite_store,
        "SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints WHERE checkpoint_ns != ''",
    )
    namespaced = dict(rows)
    assert set(namespaced) == {manifest["subgraph"], manifest["subgraph_interrupt"]}
    assert all(ns.startswith("research:") for ns in namespaced.values())


def test_fanout_error_sits_beside_the_siblings_writes(
    sqlite_store: Path, oracles: dict[str, Any], manifest: dict[str, Any]
):
    latest = _latest(oracles["chat"]["checkpoints"], manifest["fanout_error"])
    writes = _rows(
        sqlite_store,
        "SELECT task_id, idx, channel, type, value FROM writes "
        "WHERE thread_id = ? AND checkpoint_id = ?",
        manifest["fanout_error"],
        latest["checkpoint_id"],
    )
    errors = [w for w in writes if w[2] == "__error__"]
    assert len(errors) == 1
    _, idx, _, kind, value = errors[0]
    assert idx == -1
    assert (
        SERDE.loads_typed((kind, value))
        == f"ValueError('cannot parse {FANOUT_BAD_ITEM}: missing total')"
    )
    results = {SERDE.loads_typed((w[3], w[4]))[0] for w in writes if w[2] == "results"}
    assert results == {"invoice-1: ok", "invoice-3: ok"}
    assert len({w[0] for w in writes}) == 3  # three tasks: two finished, one failed


def test_interrupts(oracles: dict[str, Any], manifest: dict[str, Any], sqlite_store: Path):
    checkpoints = oracles["chat"]["checkpoints"]
    waiting = _latest(checkpoints, manifest["interrupt_waiting"])
    assert [w[1] for w in waiting["pending_writes"]] == ["__interrupt__"]

    resumed = _by_thread(checkpoints)[manifest["interrupt_resumed"]]
    channels = [w[1] for c in resumed for w in c["pending_writes"]]
    assert "__interrupt__" in channels and "__resume__" in channels
    assert _latest(checkpoints, manifest["interrupt_resumed"])["pending_writes"] == []

    inner = {
        c["checkpoint_ns"] for c in checkpoints if c["thread_id"] == manifest["subgraph_interrupt"]
    }
    for ns in inner:
        latest = _latest(checkpoints, manifest["subgraph_interrupt"], ns)
        assert [w[1] for w in latest["pending_writes"]] == ["__interrupt__"]


def test_fork_parent_has_two_update_children(oracles: dict[str, Any], manifest: dict[str, Any]):
    checkpoints = _by_thread(oracles["chat"]["checkpoints"])[manifest["fork"]]
    children: dict[str, list[dict[str, Any]]] = {}
    for c in checkpoints:
        children.setdefault(c["parent_checkpoint_id"], []).append(c)
    updates = [c for c in children[manifest["fork_parent"]] if c["metadata"]["source"] == "update"]
    assert sorted(c["checkpoint_id"] for c in updates) == sorted(manifest["fork_children"])
    # the continued branch reaches the thread's latest checkpoint
    by_id = {c["checkpoint_id"]: c for c in checkpoints}
    node = by_id[manifest["fork_latest"]]
    while node["parent_checkpoint_id"] != manifest["fork_parent"]:
        node = by_id[node["parent_checkpoint_id"]]
    assert node["checkpoint_id"] == manifest["fork_children"][0]


def test_pending_thread_has_a_task_and_no_writes(oracles: dict[str, Any], manifest: dict[str, Any]):
    latest = _latest(oracles["chat"]["checkpoints"], manifest["pending"])
    assert latest["pending_writes"] == []
    assert [f"branch:to:{node}" for node in manifest["pending_next"]] == [
        ch for ch in latest["channels"] if ch.startswith("branch:to:")
    ]


def test_rich_channel_round_trips_through_langgraph(sqlite_store: Path, manifest: dict[str, Any]):
    (blob_type, blob), *_ = _rows(
        sqlite_store,
        "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
        "ORDER BY checkpoint_id DESC LIMIT 1",
        manifest["rich"],
    )
    with quiet_serde_log():
        values = SERDE.loads_typed((blob_type, blob))["channel_values"]
    expected = rich_payload()
    payload = values["payload"]
    assert payload.keys() == expected.keys()
    for key in ("aware_datetime", "naive_datetime", "uuid", "decimal", "set", "enum", "pydantic"):
        assert payload[key] == expected[key], key
    assert np.array_equal(payload["ndarray_float_f"], expected["ndarray_float_f"])
    assert math.isnan(payload["nan"]) and payload["inf"] == math.inf
    assert payload["tuple_keys"] == {(1, 2): "pair", (3, 4): "other"}
    assert values["raw"] == RAW_BYTES
    raw_write = _rows(
        sqlite_store,
        "SELECT type FROM writes WHERE thread_id = ? AND channel = 'raw'",
        manifest["rich"],
    )
    assert raw_write == [("bytes",)]  # top-level bytes get their own tag (format.md §2.1)


def test_delta_channel_values_are_missing_between_snapshots(
    oracles: dict[str, Any], manifest: dict[str, Any]
):
    checkpoints = _by_thread(oracles["chat"]["checkpoints"])[manifest["delta"]]
    versioned = [c for c in checkpoints if "log" in c["channel_versions"]]
    assert any("log" not in c["channels"] for c in versioned)
    assert any("log" in c["channels"] for c in versioned)
    assert any("counters_since_delta_snapshot" in c["metadata"] for c in checkpoints)


# --------------------------------------------------------------------------------------
# encrypted.sqlite, the pickle stores
# --------------------------------------------------------------------------------------


def test_encrypted_store(encrypted_store: Path, encryption_key: bytes, manifest: dict[str, Any]):
    types = {row[0] for row in _rows(encrypted_store, "SELECT type FROM checkpoints")}
    types |= {row[0] for row in _rows(encrypted_store, "SELECT type FROM writes")}
    assert types == {"msgpack+aes", "null+aes", "bytes+aes"}
    (metadata,) = _rows(encrypted_store, "SELECT metadata FROM checkpoints LIMIT 1")[0]
    assert "source" in json.loads(metadata)  # metadata stays plain JSON (format.md §2.7)
    serde = EncryptedSerializer.from_pycryptodome_aes(key=encryption_key)
    blob_type, blob = _rows(
        encrypted_store,
        "SELECT type, checkpoint FROM checkpoints WHERE thread_id = 'support-1' LIMIT 1",
    )[0]
    assert serde.loads_typed((blob_type, blob))["v"] == 4
    threads = {
        row[0] for row in _rows(encrypted_store, "SELECT DISTINCT thread_id FROM checkpoints")
    }
    assert threads == set(manifest["threads"])


def test_every_store_has_the_same_shape(oracles: dict[str, Any]):
    chat = _shape(oracles["chat"]["checkpoints"])
    assert len(oracles) == 4
    for name, oracle in oracles.items():
        assert _shape(oracle["checkpoints"]) == chat, name


def test_dev_folder_holds_storage_writes_and_blobs(dev_folder: Path, oracles: dict[str, Any]):
    assert dev_folder.name == ".langgraph_api"
    assert sorted(p.name for p in dev_folder.iterdir()) == list(DEV_FILES)
    for path in dev_folder.iterdir():
        assert path.read_bytes()[:2] == b"\x80\x02"  # pickle protocol 2
        # format.md §7.3 lists three globals; empty bytes (a `null` write) add a fourth.
        assert _globals(path) <= {
            "collections defaultdict",
            "__builtin__ dict",
            "_codecs encode",
            "__builtin__ bytes",
        }
    saver = load_memory_saver(*(dev_folder / name for name in DEV_FILES))
    assert saver_view(saver) == oracles["dev_folder"]["checkpoints"]


def test_memory_pickle_holds_only_storage(memory_pkl: Path, oracles: dict[str, Any]):
    saver = load_memory_saver(memory_pkl)
    assert set(saver.storage) == set(oracles["memory"]["manifest"]["threads"])
    assert not saver.writes and not saver.blobs
    view = saver_view(saver)
    expected = oracles["memory"]["checkpoints"]
    assert [c["checkpoint_id"] for c in view] == [c["checkpoint_id"] for c in expected]
    assert all(c["pending_writes"] == [] and c["channels"] == [] for c in view)


def test_samples_are_checked_in(samples: Path):
    names = {p.name for p in samples.iterdir()}
    assert {
        "legacy_lg0.1.19_sqlite.db",
        "legacy_lg0.2.16_cp1.0.9_sqlite.db",
        "legacy_lg0.3.20_cp2.0.21_sqlite.db",
        "sqlite_checkpoints.db",
        "sqlite_delta.db",
        "sqlite_encrypted.db",
        "memory_persistentdict.pkl",
        "memory_persistentdict_cp2.0.21.pkl",
        "postgres_current_pg_dump.sql",
        "postgres_legacy_pg_dump.sql",
        "postgres_shallow_pg_dump.sql",
    } <= names


# --------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_pg_dsn_is_an_empty_database(pg_dsn: str):
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert row == (0,)


@pytest.mark.postgres
def test_postgres_build(pg_store: PgStore, oracles: dict[str, Any]):
    view = postgres_view(pg_store.dsn)
    assert {c["thread_id"] for c in view} == set(pg_store.manifest["threads"])
    assert _shape(view) == _shape(oracles["chat"]["checkpoints"])
    assert table_counts(pg_store.dsn)["checkpoint_blobs"] > 0


@pytest.mark.postgres
def test_postgres_shallow_build(pg_shallow_store: PgStore, manifest: dict[str, Any]):
    view = shallow_view(pg_shallow_store.dsn)
    assert {c["thread_id"] for c in view} == set(manifest["threads"])
    # one checkpoint per (thread, namespace)
    keys = [(c["thread_id"], c["checkpoint_ns"]) for c in view]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("legacy", {"checkpoints": 11, "checkpoint_blobs": 31, "checkpoint_writes": 30}),
        ("current", {"checkpoints": 20, "checkpoint_blobs": 19, "checkpoint_writes": 44}),
        ("shallow", {"checkpoints": 2, "checkpoint_blobs": 15, "checkpoint_writes": 3}),
    ],
)
@pytest.mark.postgres
def test_pg_dumps_load(pg_dump_loader: Callable[[str], str], name: str, expected: dict[str, int]):
    assert table_counts(pg_dump_loader(name)) == expected
