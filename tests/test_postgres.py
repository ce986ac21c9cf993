"""PostgresStore and every command on real PostgresSaver / ShallowPostgresSaver databases.

The databases are written by LangGraph itself (fixtures/postgres.py) or loaded from the
pg_dump samples (tests/data); the oracle is what PostgresSaver itself reads back. The
server must be reachable: without it these tests fail (conftest `pg_admin`), never skip.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

import psycopg
import pytest
from fixtures.build import fixture_warnings
from fixtures.graphs import SCENARIO_STATUS as EXPECTED_STATUS
from fixtures.graphs import run_scenarios
from fixtures.oracle import quiet_serde_log
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.shallow import ShallowPostgresSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode, MissingDependency, NotACheckpointStore, StoreUnreadable
from ckpt.records.model import NOT_LOADED, TASKS, Checkpoint, CheckpointKey, DumpQuery
from ckpt.stores import open_store
from ckpt.stores.postgres import PostgresStore
from normalize import normalize
from pg import PgStore, url_of

runner = CliRunner()


class _Flag(TypedDict):
    flag: bool


def _flag_graph() -> StateGraph[_Flag]:
    """One node that sets a bool channel to True."""
    builder = StateGraph(_Flag)
    builder.add_node("raise_flag", lambda state: {"flag": True})
    builder.add_edge(START, "raise_flag")
    builder.add_edge("raise_flag", END)
    return builder


# The Postgres reader's tests need the server (test_bad_url and test_missing_psycopg, which
# do not, go along with them): `pytest -m 'not postgres'` leaves the module out.
pytestmark = pytest.mark.postgres

# The key the pg_dump samples' encrypted thread `e1` was written with (format.md §10).
SAMPLE_KEY = b"0123456789abcdef"
PASSWORD = "hunter2-Sekr1t"
# The samples' `extras` channel (and the subgraph input carrying it) holds instances of
# classes from a module named `graphdef` that is not importable here: LangGraph falls back
# to their raw kwargs (format.md §2.3), so its values are no oracle for those channels. The
# fixture database, written in this process, is compared value by value instead. Legacy
# Interrupt fields are dropped by LangGraph on load (format.md §8.9).
SAMPLE_SKIP = frozenset({"extras", "__start__"})


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "120", **(env or {})})


def run_json(*args: str, env: dict[str, str] | None = None) -> Any:
    result = run(*args, "--json", env=env)
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def saver_tuples(dsn: str, *, shallow: bool = False) -> list[CheckpointTuple]:
    """Every checkpoint as LangGraph's own saver reads it back: saver.list(None)."""
    serde = EncryptedSerializer.from_pycryptodome_aes(key=SAMPLE_KEY)  # plain rows load too
    with (
        psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn,
        fixture_warnings(),
        quiet_serde_log(),
    ):
        saver = (ShallowPostgresSaver if shallow else PostgresSaver)(conn, serde=serde)
        return list(saver.list(None))


def key_of(tup: CheckpointTuple) -> CheckpointKey:
    c = tup.config["configurable"]
    return CheckpointKey(c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])


def expected_value(value: Any) -> Any:
    """LangGraph's Python value in ckpt's representation (tests/normalize.py)."""
    return normalize(value)


class Compared(TypedDict):
    checkpoints: int
    values: int
    migrated_sends: int
    empty_blobs: int


def compare_with_saver(
    store: PostgresStore,
    tuples: list[CheckpointTuple],
    *,
    shallow: bool = False,
    skip_channels: frozenset[str] = frozenset(),
) -> Compared:
    """Assert ckpt reads each checkpoint as PostgresSaver does (format.md §5.3, 6)."""
    counts: Compared = {"checkpoints": 0, "values": 0, "migrated_sends": 0, "empty_blobs": 0}
    for tup in tuples:
        key = key_of(tup)
        cp = store.load(key)
        lg = tup.checkpoint
        parent = tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None
        assert cp.parent_checkpoint_id == parent, key
        assert (cp.v, cp.ts) == (lg["v"], lg["ts"]), key
        assert cp.versions_seen == lg["versions_seen"], key
        lg_values = dict(lg["channel_values"])
        lg_versions = dict(lg["channel_versions"])
        if lg["v"] < 4 and TASKS in lg_values and TASKS not in cp.channel_versions:
            # PostgresSaver moves a v<4 checkpoint's Sends (its parent's __pregel_tasks
            # writes) into a made-up channel; ckpt keeps them as pending_sends, as for
            # SQLite v<4 bodies, and invents no version.
            migrated = lg_values.pop(TASKS)
            lg_versions.pop(TASKS)
            assert cp.pending_sends == expected_value(migrated), key
            assert cp.pending_sends, key
            counts["migrated_sends"] += 1
        assert cp.channel_versions == lg_versions, key
        assert cp.channel_values is not None
        assert set(cp.channel_values) == set(lg_values), key
        # JSONB keeps no key order: compare the channels as a set (format.md §5.3)
        assert set(cp.value_channels or ()) == set(lg_values), key
        if "writes" not in cp.metadata:  # legacy metadata `writes` is decoded (format.md §3.2)
            assert cp.metadata == tup.metadata, key
        assert cp.pending_writes is not None
        assert [(w.task_id, w.channel) for w in cp.pending_writes] == [
            (task_id, channel) for task_id, channel, _ in tup.pending_writes or []
        ], key
        for channel, value in lg_values.items():
            if channel not in skip_channels:
                assert cp.channel_values[channel] == expected_value(value), (key, channel)
                counts["values"] += 1
        lg_writes = tup.pending_writes or []
        for write, (_, channel, value) in zip(cp.pending_writes, lg_writes, strict=True):
            if channel not in skip_channels:
                assert write.value == expected_value(value), (key, channel)
        if not shallow and lg["v"] >= 4:
            tasks = lg_values.get(TASKS)
            assert cp.pending_sends == (expected_value(tasks) if tasks else []), key
        assert cp.blobs is not None
        counts["empty_blobs"] += sum(ref.type == "empty" for ref in cp.blobs.values())
        counts["checkpoints"] += 1
    return counts


# --------------------------------------------------------------------------------------
# Databases
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_url(pg_store: PgStore) -> str:
    return url_of(pg_store.dsn)


@pytest.fixture(scope="module")
def pg_tuples(pg_store: PgStore) -> list[CheckpointTuple]:
    return saver_tuples(pg_store.dsn)


@pytest.fixture
def store(pg_store: PgStore) -> Iterator[PostgresStore]:
    with PostgresStore(pg_store.dsn) as opened:
        yield opened


@pytest.fixture(scope="module")
def legacy_dsn(pg_dump_loader: Callable[[str], str]) -> str:
    return pg_dump_loader("legacy")


@pytest.fixture(scope="module")
def current_dsn(pg_dump_loader: Callable[[str], str]) -> str:
    return pg_dump_loader("current")


@pytest.fixture(scope="module")
def small_store(pg_new_database: Callable[[], str]) -> str:
    """A fresh database with a few scenarios, for tests that change the database around
    the tables (schemas, roles, statistics)."""
    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        run_scenarios(saver, only=("approval", "fanout", "chat"))
    return dsn


# --------------------------------------------------------------------------------------
# The reader against PostgresSaver's own reading
# --------------------------------------------------------------------------------------


def test_every_checkpoint_reads_as_postgres_saver_reads_it(
    store: PostgresStore, pg_tuples: list[CheckpointTuple]
) -> None:
    counts = compare_with_saver(store, pg_tuples)
    assert counts["checkpoints"] == len(pg_tuples) > 50
    assert counts["values"] > 150


def test_legacy_v1_database_reads_as_postgres_saver_reads_it(legacy_dsn: str) -> None:
    # checkpoint-postgres 2.0.19: no channel_values in the JSONB, `empty` blob rows, Sends
    # only as the parent's __pregel_tasks writes (format.md §5.3).
    with PostgresStore(legacy_dsn) as opened:
        counts = compare_with_saver(
            opened,
            saver_tuples(legacy_dsn),
            skip_channels=SAMPLE_SKIP | {"__interrupt__"},
        )
        assert counts["checkpoints"] == 11
        assert counts["migrated_sends"] >= 1
        assert counts["empty_blobs"] >= 1
        legacy = opened.checkpoints("thread-1", values=False)
    assert all(c.v == 1 for c in legacy)
    # without values the same Sends are found (`next` needs them)
    assert sum(bool(c.pending_sends) for c in legacy) == counts["migrated_sends"]


def test_current_dump_with_encrypted_and_delta_threads(current_dsn: str) -> None:
    with PostgresStore(current_dsn, aes_key=SAMPLE_KEY) as opened:
        counts = compare_with_saver(opened, saver_tuples(current_dsn), skip_channels=SAMPLE_SKIP)
        assert counts["checkpoints"] == 20
        latest = opened.latest_key("e1")
        assert latest is not None
        e1 = opened.load(latest)
    assert e1.blobs and any(ref.type and ref.type.endswith("+aes") for ref in e1.blobs.values())
    # Without the key, encrypted blobs stay marked and inline primitives stay readable.
    with PostgresStore(current_dsn) as opened:
        hidden = opened.load(e1.key)
    assert hidden.channel_values is not None
    encrypted = [v for v in hidden.channel_values.values() if isinstance(v, dict)]
    assert any(v.get("__ckpt__") == "encrypted" for v in encrypted)


def test_shallow_database_reads_as_shallow_saver_reads_it(pg_shallow_store: PgStore) -> None:
    tuples = saver_tuples(pg_shallow_store.dsn, shallow=True)
    with PostgresStore(pg_shallow_store.dsn) as opened:
        counts = compare_with_saver(opened, tuples, shallow=True)
        assert counts["checkpoints"] == len(tuples) > 10
        assert opened.shallow and opened.notices
        threads = {t.thread_id: t for t in opened.threads()}
        assert set(threads) == set(pg_shallow_store.manifest["threads"])
        for thread in threads.values():
            # one row per (thread, namespace), no parent links (format.md §6)
            assert thread.checkpoints == len(thread.namespaces)
            history = opened.checkpoints(thread.thread_id)
            assert all(c.parent_checkpoint_id is None for c in history)
            assert thread.latest is not None
            assert opened.latest_key(thread.thread_id) == thread.latest.key


def test_shallow_dump_sample(pg_dump_loader: Callable[[str], str]) -> None:
    dsn = pg_dump_loader("shallow")
    with PostgresStore(dsn) as opened:
        counts = compare_with_saver(
            opened,
            saver_tuples(dsn, shallow=True),
            shallow=True,
            skip_channels=SAMPLE_SKIP,
        )
        assert counts["checkpoints"] == 2
        assert len(list(opened.iter_checkpoints(DumpQuery()))) == 2


def test_history_and_listing_agree_with_load(
    store: PostgresStore, pg_tuples: list[CheckpointTuple]
) -> None:
    by_thread = Counter(key_of(t).thread_id for t in pg_tuples)
    threads = list(store.threads(sizes=True))
    assert [t.thread_id for t in threads] == sorted(by_thread)
    for thread in threads:
        assert thread.checkpoints == by_thread[thread.thread_id]
        keys = [key_of(t) for t in pg_tuples if key_of(t).thread_id == thread.thread_id]
        assert thread.namespaces == sorted({k.checkpoint_ns for k in keys})
        root = max(k.checkpoint_id for k in keys if k.checkpoint_ns == "")
        assert thread.latest is not None and thread.latest.checkpoint_id == root
        assert thread.latest.channel_values is NOT_LOADED  # listings decode no values
        assert thread.size > 0
        history = store.checkpoints(thread.thread_id, values=True)
        assert [c.checkpoint_id for c in history] == sorted(k.checkpoint_id for k in keys)
        for checkpoint in history:
            loaded = store.load(checkpoint.key)
            assert _fields(checkpoint) == _fields(loaded)
        skeletons = store.checkpoints(thread.thread_id)
        for skeleton, full in zip(skeletons, history, strict=True):
            assert set(skeleton.value_channels or ()) == set(full.value_channels or ())
            assert skeleton.pending_sends == full.pending_sends
            assert skeleton.blobs == full.blobs
            assert skeleton.channel_values is NOT_LOADED
        streamed = store.iter_checkpoints(DumpQuery(thread_ids=(thread.thread_id,)))
        assert sorted(map(_fields, streamed), key=_by_key) == sorted(
            map(_fields, history), key=_by_key
        )


def _by_key(fields: dict[str, Any]) -> Any:
    return fields["key"]


def _fields(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "key": (checkpoint.checkpoint_ns, checkpoint.checkpoint_id),
        "parent": checkpoint.parent_checkpoint_id,
        "metadata": checkpoint.metadata,
        "versions": checkpoint.channel_versions,
        "values": checkpoint.channel_values,
        "value_channels": (
            sorted(checkpoint.value_channels) if checkpoint.value_channels is not None else None
        ),
        "sends": checkpoint.pending_sends,
        "writes": checkpoint.pending_writes,
        "blobs": checkpoint.blobs,
        "size": checkpoint.size,
    }


def test_values_equal_the_sqlite_readers_for_the_same_runs(
    store: PostgresStore, sqlite_store: Any
) -> None:
    # The same scenarios through SqliteSaver (values inline in one blob) and PostgresSaver
    # (inline primitives + blobs): both readers must rebuild the same values.
    from ckpt.stores.sqlite import SqliteStore

    def grouped(opened: Any) -> dict[tuple[str, str], list[Checkpoint]]:
        groups: dict[tuple[str, str], list[Checkpoint]] = {}
        for thread in opened.threads():
            for cp in opened.checkpoints(thread.thread_id, values=True):
                # namespaces hold run-specific task ids: group by the node part
                groups.setdefault((cp.thread_id, cp.checkpoint_ns.split(":")[0]), []).append(cp)
        return groups

    with SqliteStore(sqlite_store) as sqlite:
        expected = grouped(sqlite)
    got = grouped(store)
    assert got.keys() == expected.keys()
    compared = 0
    for group, checkpoints in got.items():
        assert len(checkpoints) == len(expected[group]), group
        for pg, lite in zip(checkpoints, expected[group], strict=True):
            assert (pg.step, pg.source) == (lite.step, lite.source), group
            assert _comparable(pg.channel_values) == _comparable(lite.channel_values), group
            assert set(pg.value_channels or ()) == set(lite.value_channels or ()), group
            assert _comparable(pg.pending_sends) == _comparable(lite.pending_sends), group
            compared += 1
    assert compared > 50


def _comparable(value: Any) -> Any:
    """Sets come out in the order the writing process iterated them (hash seeds differ
    between the two runs), so compare lists as multisets of their JSON."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted(json.dumps(_comparable(v), sort_keys=True) for v in value)
    return value


def test_blobs_are_shared_by_unchanged_channels(store: PostgresStore, pg_url: str) -> None:
    history = [c for c in store.checkpoints("support-1") if c.checkpoint_ns == ""]
    refs = [(c.blobs or {}).get("messages") for c in history]
    versions = [ref.version for ref in refs if ref is not None]
    assert versions and len(set(versions)) < len(versions)  # one blob, several checkpoints
    for cp, ref in zip(history, refs, strict=True):
        if ref is not None:
            assert ref.version == cp.channel_versions["messages"]
            assert ref.type == "msgpack" and ref.size > 0
    matrix = run_json("versions", "support-1", "--db", pg_url)
    cells = [cell for row in matrix["channels"] for cell in row["versions"] if cell]
    assert any(cell.get("shared_blob") for cell in cells)


def test_delta_marker_and_a_real_true(store: PostgresStore, pg_new_database: Any) -> None:
    # delta-1's JSONB holds `"log": true` at snapshot checkpoints, with the value in a blob
    # (format.md §3.8, 8.5) ...
    markers = 0
    for cp in store.checkpoints("delta-1", values=True):
        assert cp.channel_values is not None
        if "log" in (cp.blobs or {}):
            assert cp.channel_values["log"]["__ckpt__"] == "delta_snapshot"
            markers += 1
        else:
            assert "log" not in cp.channel_values  # between snapshots: no value stored
    raw = store.conn.execute(
        "SELECT count(*) FROM checkpoints WHERE thread_id = 'delta-1' "
        "AND checkpoint->'channel_values'->'log' = 'true'::jsonb"
    ).fetchone()
    assert raw is not None and raw[0] == markers > 0
    # ... while a bool channel that is really True has no blob and stays True.

    builder = _flag_graph()
    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        builder.compile(checkpointer=saver).invoke(
            {"flag": False}, {"configurable": {"thread_id": "flag"}}
        )
    with PostgresStore(dsn) as opened:
        key = opened.latest_key("flag")
        assert key is not None
        latest = opened.load(key)
    assert latest.channel_values == {"flag": True}
    assert "flag" not in (latest.blobs or {})


def test_queries_are_set_based(store: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[Any] = []
    original = PostgresStore._rows

    def counting(self: PostgresStore, query: Any, params: Any = ()) -> Any:
        statements.append(query)
        return original(self, query, params)

    monkeypatch.setattr(PostgresStore, "_rows", counting)
    dumped = list(store.iter_checkpoints(DumpQuery()))
    # one batch of 100: blob rows with their payloads (under PAYLOAD_BYTES), writes
    assert len(dumped) > 50 and len(statements) == 2
    statements.clear()
    threads = list(store.threads())
    assert len(threads) == 12 and len(statements) <= 5  # aggregates, rows, blobs, writes
    statements.clear()
    assert len(store.checkpoints("support-1")) > 10
    assert len(statements) == 3  # rows, blobs (no payloads but the Sends), writes
    statements.clear()
    latest = list(store.iter_checkpoints(DumpQuery(latest_only=True)))
    assert {(c.thread_id, c.checkpoint_ns) for c in latest} == {
        (c.thread_id, c.checkpoint_ns) for c in dumped
    }
    assert len(latest) == len({(c.thread_id, c.checkpoint_ns) for c in latest})
    # Large values split a batch: payloads are fetched and held PAYLOAD_BYTES at a time.
    monkeypatch.setattr("ckpt.stores.split.PAYLOAD_BYTES", 1)
    statements.clear()
    split = list(store.iter_checkpoints(DumpQuery()))
    assert [_fields(c) for c in split] == [_fields(c) for c in dumped]
    assert len(statements) > len(dumped) // 2


def test_full_id_probe_walks_the_primary_key(
    store: PostgresStore,
    pg_store: PgStore,
    pg_tuples: list[CheckpointTuple],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full id is found by a walk of the key (one index search per namespace), with the
    same answer as the scan of `find`, subgraph namespaces included."""
    keys = [key_of(t) for t in pg_tuples]
    assert any(k.checkpoint_ns for k in keys)
    statements: list[Any] = []
    original = PostgresStore._rows

    def recording(self: PostgresStore, query: Any, params: Any = ()) -> Any:
        statements.append((query, params))
        return original(self, query, params)

    monkeypatch.setattr(PostgresStore, "_rows", recording)
    for key in keys[:: max(1, len(keys) // 25)]:
        assert store.find_exact(key.checkpoint_id) == sorted(
            k for k in keys if k.checkpoint_id == key.checkpoint_id
        )
    assert store.find_exact(str(uuid.uuid4())) == []
    probes = [(q, p) for q, p in statements if "WITH RECURSIVE" in q.as_string(store.conn)]
    assert probes and not [q for q, _ in statements if "LIKE" in q.as_string(store.conn)]
    # The plan, with sequential scans priced out: none is left, so the walk and the probe
    # are index searches on the primary key whatever the table's size.
    query, params = probes[-1]
    with psycopg.connect(pg_store.dsn) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = json.dumps(
            conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params).fetchone()
        )
    assert "Seq Scan" not in plan and "checkpoints_pkey" in plan, plan
    # Past PROBE_STEPS namespaces it falls back to the scan, with the same answer.
    monkeypatch.setattr("ckpt.stores.postgres.store.PROBE_STEPS", 2)
    statements.clear()
    key = keys[-1]
    assert key in store.find_exact(key.checkpoint_id)
    assert any("LIKE" in q.as_string(store.conn) for q, _ in statements)


def test_dump_query_filters(store: PostgresStore, pg_tuples: list[CheckpointTuple]) -> None:
    keys = sorted(
        (key_of(t) for t in pg_tuples if key_of(t).thread_id == "support-2"),
        key=lambda k: (k.checkpoint_ns, k.checkpoint_id),
    )
    root = [k for k in keys if k.checkpoint_ns == ""]
    middle = root[len(root) // 2]
    query = DumpQuery(thread_ids=("support-2",), checkpoint_ns="", since_id=middle.checkpoint_id)
    got = [c.key for c in store.iter_checkpoints(query, values=False)]
    assert got == [k for k in root if k.checkpoint_id >= middle.checkpoint_id]
    until = DumpQuery(thread_ids=("support-2", "fork-1"), until_id=middle.checkpoint_id)
    got = [c.key for c in store.iter_checkpoints(until)]
    assert got and all(k.checkpoint_id <= middle.checkpoint_id for k in got)
    latest = list(store.iter_checkpoints(DumpQuery(thread_ids=("support-2",), latest_only=True)))
    assert [c.checkpoint_id for c in latest] == [root[-1].checkpoint_id]


# --------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------


def test_cli_threads(pg_url: str, pg_store: PgStore, pg_tuples: list[CheckpointTuple]) -> None:
    threads = run_json("threads", pg_url)
    counts = Counter(key_of(t).thread_id for t in pg_tuples)
    assert sorted(t["thread_id"] for t in threads) == pg_store.manifest["threads"]
    for thread in threads:
        assert thread["checkpoints"] == counts[thread["thread_id"]]
        assert thread["status"] == EXPECTED_STATUS[thread["thread_id"]], thread
    by_id = {t["thread_id"]: t for t in threads}
    assert by_id["pending-1"]["next"] == pg_store.manifest["pending_next"]
    assert any("ValueError" in str(e) for e in by_id["fanout-1"]["errors"])
    assert by_id["approval-2"]["interrupts"]
    assert by_id["support-1"]["metadata"]["user_id"] == "u-1"
    shown = run_json("show", "fanout-1", "--db", pg_url)["tasks"]
    assert by_id["fanout-1"]["failed_tasks"] == [t for t in shown if t["state"] == "failed"] != []
    human = run("threads", pg_url)
    assert human.exit_code == 0 and "support-1" in human.stdout


def test_cli_history_and_show(pg_url: str, pg_tuples: list[CheckpointTuple]) -> None:
    for thread in ("support-1", "subgraph-1", "fork-1", "fanout-1"):
        expected = sorted(
            (key_of(t).checkpoint_id, key_of(t).checkpoint_ns, _parent(t))
            for t in pg_tuples
            if key_of(t).thread_id == thread
        )
        history = run_json("history", thread, "--db", pg_url)
        got = [(c["checkpoint_id"], c["checkpoint_ns"], c["parent_checkpoint_id"]) for c in history]
        assert sorted(got) == expected
        assert all("channel_values" not in c for c in history)
        tree = run("history", thread, "--db", pg_url)
        assert tree.exit_code == 0 and tree.stdout.strip()
    latest = max(
        (
            t
            for t in pg_tuples
            if key_of(t).thread_id == "support-1" and not key_of(t).checkpoint_ns
        ),
        key=lambda t: key_of(t).checkpoint_id,
    )
    cid = key_of(latest).checkpoint_id
    for selector in ("support-1", cid, cid[-8:], cid[:30]):
        shown = run_json("show", selector, "--db", pg_url, "--blobs")
        assert shown["checkpoint_id"] == cid, selector
        assert shown["channel_values"]["messages"] == normalize(
            latest.checkpoint["channel_values"]["messages"]
        )
    parent = run_json("show", "support-1~1", "--db", pg_url)
    assert parent["checkpoint_id"] == _parent(latest)
    writes = run_json("show", "fanout-1", "--db", pg_url, "--writes")
    assert any(w["channel"] == "__error__" for w in writes["pending_writes"])
    missing = run("show", "no-such-thread", "--db", pg_url)
    assert missing.exit_code == ExitCode.NOT_FOUND


def _parent(tup: CheckpointTuple) -> str | None:
    return tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None


def test_cli_subgraph_checkpoint(pg_url: str, pg_tuples: list[CheckpointTuple]) -> None:
    sub = next(
        t for t in pg_tuples if key_of(t).checkpoint_ns and key_of(t).thread_id == "subgraph-1"
    )
    shown = run_json("show", key_of(sub).checkpoint_id, "--db", pg_url, "--blobs")
    assert shown["checkpoint_ns"] == key_of(sub).checkpoint_ns
    assert set(shown["channel_values"]) == set(sub.checkpoint["channel_values"])


def test_cli_diff_and_dump(pg_url: str, pg_tuples: list[CheckpointTuple]) -> None:
    same = run("diff", "support-1", "support-1", "--db", pg_url)
    assert same.exit_code == 0, same.stderr
    changed = run("diff", "support-1~2", "support-1", "--db", pg_url, "--json")
    assert changed.exit_code == ExitCode.DIFFERENT, changed.stderr
    assert json.loads(changed.stdout)
    dumped = run("dump", pg_url, "--ndjson", "--quiet")
    assert dumped.exit_code == 0, dumped.stderr
    records = [json.loads(line) for line in dumped.stdout.splitlines()]
    assert len(records) == len(pg_tuples)
    assert all("channel_values" in r for r in records)
    latest = run("dump", pg_url, "--ndjson", "--quiet", "--latest", "--no-values")
    assert latest.exit_code == 0, latest.stderr
    assert len(latest.stdout.splitlines()) == len(
        {(r["thread_id"], r["checkpoint_ns"]) for r in records}
    )


def test_cli_json_shapes_match_sqlite(pg_url: str, sqlite_store: Any) -> None:
    def shapes(db: str) -> list[Any]:
        threads = run_json("threads", db)
        history = run_json("history", "fanout-1", "--db", db)
        shown = run_json("show", "support-1", "--db", db, "--blobs")
        return [
            sorted(threads[0]),
            sorted(history[0]),
            sorted(shown),
            sorted(shown["pending_writes"][0]) if shown["pending_writes"] else [],
        ]

    assert shapes(pg_url) == shapes(str(sqlite_store))


def test_cli_url_forms_and_environment(pg_store: PgStore) -> None:
    params = conninfo_to_dict(pg_store.dsn)
    expected = sorted(pg_store.manifest["threads"])
    url = url_of(pg_store.dsn)
    for args, env in [
        (("threads", url.replace("postgresql://", "postgres://", 1)), {}),
        (("threads", "--db", url), {}),
        (("threads",), {"CKPT_DB": url}),
        (
            ("threads", "--db", "postgresql://"),
            {
                "PGHOST": str(params["host"]),
                "PGPORT": str(params.get("port", "5432")),
                "PGUSER": str(params["user"]),
                "PGDATABASE": str(params["dbname"]),
            },
        ),
    ]:
        threads = run_json(*args, env=env)
        assert sorted(t["thread_id"] for t in threads) == expected, args


def test_location_never_holds_the_password(pg_store: PgStore) -> None:
    # Trust authentication ignores the password, so the connection succeeds.
    url = url_of(pg_store.dsn, password=PASSWORD)
    with PostgresStore(url) as opened:
        assert PASSWORD not in opened.location
        assert opened.location.startswith("postgresql://")
    result = run("show", "no-such-thread", "--db", url)
    assert result.exit_code == ExitCode.NOT_FOUND
    assert PASSWORD not in result.stderr + result.stdout


def test_bare_url_takes_libpq_environment(
    pg_store: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = conninfo_to_dict(pg_store.dsn)
    monkeypatch.setenv("PGHOST", str(params["host"]))
    monkeypatch.setenv("PGPORT", str(params.get("port", "5432")))
    monkeypatch.setenv("PGUSER", str(params["user"]))
    monkeypatch.setenv("PGDATABASE", str(params["dbname"]))
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with PostgresStore("postgresql://") as opened:
        # the location says what the PG* variables chose, never the password
        assert opened.location == (
            f"postgresql://{params['user']}@{params['host']}:{params.get('port', '5432')}"
            f"/{params['dbname']}"
        )
        assert opened.thread_exists("support-1")
    result = run("show", "no-such-thread", "--db", "postgresql://")
    assert result.exit_code == ExitCode.NOT_FOUND and PASSWORD not in result.stderr


# --------------------------------------------------------------------------------------
# Read-only, timeouts, schemas
# --------------------------------------------------------------------------------------


def test_every_session_is_read_only_with_a_statement_timeout(pg_store: PgStore) -> None:
    with PostgresStore(pg_store.dsn) as opened:
        settings = dict(
            opened.conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN "
                "('default_transaction_read_only', 'statement_timeout')"
            ).fetchall()
        )
        assert settings == {"default_transaction_read_only": "on", "statement_timeout": "5000"}
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            opened.conn.execute("CREATE TABLE ckpt_must_not_exist (x int)")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            opened.conn.execute("DELETE FROM checkpoint_writes")
    with PostgresStore(pg_store.dsn, timeout=0.2) as opened:
        with pytest.raises(StoreUnreadable, match="statement timeout.*`timeout`"):
            opened._rows(sql.SQL("SELECT pg_sleep(2)"))
        assert opened.thread_exists("support-1")  # the connection is still usable
    result = run("threads", url_of(pg_store.dsn), "--timeout", "0.25", "--json")
    assert result.exit_code == 0


def test_commands_leave_the_database_untouched(small_store: str) -> None:
    url = url_of(small_store)
    before_tables = _tables(small_store)
    before = _settled_stats(small_store)
    threads = run_json("threads", url)
    for thread in threads:
        tid = thread["thread_id"]
        for args in [
            ("history", tid, "--db", url, "--json"),
            ("history", tid, "--db", url),
            ("show", tid, "--db", url, "--blobs", "--json"),
            ("show", tid, "--db", url),
            ("show", thread["checkpoint_id"][-8:], "--db", url, "--writes"),
            ("versions", tid, "--db", url, "--json"),
            ("diff", tid, "--db", url),
        ]:
            result = run(*args)
            assert result.exit_code in (0, 1), (args, result.stderr)
    for args in [
        ("threads", url),
        ("dump", url, "--ndjson", "--quiet"),
        ("dump", url, "--latest", "--no-values", "--json", "--quiet"),
    ]:
        assert run(*args).exit_code == 0, args
    after = _wait_for(lambda: _stats(small_store), lambda s: _scans(s) > _scans(before))
    # The scans moved (so the statistics did see ckpt's sessions) while no row did.
    assert _scans(after) > _scans(before)
    assert {t: s[:3] for t, s in after.items()} == {t: s[:3] for t, s in before.items()}
    assert _tables(small_store) == before_tables


def _stats(dsn: str) -> dict[str, tuple[int, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, "
            "coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
        ).fetchall()
    return {name: tuple(counts) for name, *counts in rows}


def _scans(stats: dict[str, tuple[int, ...]]) -> int:
    return sum(s[3] for s in stats.values())


def _settled_stats(dsn: str) -> dict[str, tuple[int, ...]]:
    """Statistics once the writes of the build have been flushed (backends flush on exit)."""
    previous: dict[str, tuple[int, ...]] = {}
    for _ in range(50):
        current = _stats(dsn)
        if current == previous and sum(s[0] for s in current.values()) > 0:
            return current
        previous = current
        time.sleep(0.2)
    return previous


def _wait_for(fetch: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    value = fetch()
    for _ in range(50):
        if done(value):
            break
        time.sleep(0.2)
        value = fetch()
    return value


def _tables(dsn: str) -> set[tuple[str, str, str]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT n.nspname, c.relname, c.relkind::text FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%'"
        ).fetchall()
    return {(a, b, c) for a, b, c in rows}


def test_schema_option(pg_new_database: Callable[[], str]) -> None:
    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        run_scenarios(saver, only=("approval",))
    url = url_of(dsn)
    before = run_json("threads", url)
    schema = "Agents-Prod"  # needs quoting: capitals and a dash
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        for table in (
            "checkpoints",
            "checkpoint_blobs",
            "checkpoint_writes",
            "checkpoint_migrations",
        ):
            conn.execute(
                sql.SQL("ALTER TABLE {} SET SCHEMA {}").format(
                    sql.Identifier("public", table), sql.Identifier(schema)
                )
            )
    moved = run("threads", url, "--json")
    assert moved.exit_code == ExitCode.UNREADABLE
    assert f"--schema {schema}" in moved.stderr
    after = run_json("threads", url, "--schema", schema)
    assert after == before
    shown = run_json("show", "approval-1", "--db", url, "--schema", schema, "--blobs")
    assert shown["thread_id"] == "approval-1" and shown["channel_values"]
    nosuch = run("threads", url, "--schema", "nosuch")
    assert nosuch.exit_code == ExitCode.UNREADABLE and "no schema 'nosuch'" in nosuch.stderr
    hostile = run("threads", url, "--schema", 'x"; DROP TABLE checkpoints; --')
    assert hostile.exit_code == ExitCode.UNREADABLE
    assert run_json("threads", url, "--schema", schema) == before


# --------------------------------------------------------------------------------------
# Connection problems: one line, exit code 4, no password
# --------------------------------------------------------------------------------------


@pytest.fixture
def no_access_role(small_store: str, pg_admin: str) -> Iterator[str]:
    """A role that may log in (trust) but may not read the checkpoint tables."""
    role = f"ckpt_noaccess_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        yield role
    finally:
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _assert_one_line_failure(result: Any, *needles: str) -> None:
    assert result.exit_code == ExitCode.UNREADABLE, result.stderr + result.stdout
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert PASSWORD not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_server_down(pg_store: PgStore) -> None:
    url = url_of(pg_store.dsn, password=PASSWORD, host="127.0.0.1", port="1")
    # libpq's two lines joined as sentences: "... Connection refused; Is the server ..."
    _assert_one_line_failure(
        run("threads", url), "Connection refused; Is the server", "127.0.0.1:1"
    )


def test_unknown_role_with_a_password(pg_store: PgStore) -> None:
    url = url_of(pg_store.dsn, user="ckpt_no_such_role", password=PASSWORD)
    _assert_one_line_failure(run("threads", url, "--json"), 'role "ckpt_no_such_role"')


def test_missing_database(pg_store: PgStore) -> None:
    url = url_of(pg_store.dsn, password=PASSWORD, dbname="ckpt_no_such_database")
    _assert_one_line_failure(run("history", "x", "--db", url), "ckpt_no_such_database")


def test_database_without_checkpoint_tables(pg_dsn: str) -> None:
    url = url_of(pg_dsn, password=PASSWORD)
    _assert_one_line_failure(run("threads", url), "not a LangGraph checkpoint store")
    with pytest.raises(NotACheckpointStore):
        PostgresStore(pg_dsn)


def test_permission_denied(small_store: str, no_access_role: str) -> None:
    url = url_of(small_store, user=no_access_role, password=PASSWORD)
    _assert_one_line_failure(run("threads", url), "permission denied", "checkpoints")


def test_bad_url() -> None:
    url = f"postgresql://user:{PASSWORD}@127.0.0.1:notaport/db"
    _assert_one_line_failure(run("threads", url))


def test_missing_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependency, match=r"ckpt\[postgres\]"):
        open_store("postgresql://nobody@127.0.0.1:1/none")
    result = run("threads", "postgresql://nobody@127.0.0.1:1/none")
    assert result.exit_code == ExitCode.MISSING_DEPENDENCY
    assert "langgraph-ckpt[postgres]" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_threads_stream_in_the_order_ckpt_sorts(pg_new_database: Callable[[], str]) -> None:
    """With text keys, `threads` rows come from the server already in the order
    ckpt.analysis.threads sorts records in (so memory stays flat and `--limit` stops the read):
    strings compared by code point whatever the database's collation, thread ids that a
    locale would order otherwise among them."""

    builder = _flag_graph()
    ids = ["b", "B", "a-1", "A-2", "é", "Z", "z", "_x", "ä", "10", "9"]
    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        graph = builder.compile(checkpointer=saver)
        for thread in ids:
            graph.invoke({"flag": False}, {"configurable": {"thread_id": thread}})
    url = url_of(dsn)
    by_thread = run_json("threads", url, "--sort", "thread")
    assert [t["thread_id"] for t in by_thread] == sorted(ids)
    updated = run_json("threads", url)
    assert [t["thread_id"] for t in updated] == [
        t["thread_id"]
        for t in sorted(by_thread, key=lambda t: (t["checkpoint_id"], t["thread_id"]), reverse=True)
    ]
    assert run_json("threads", url, "--limit", "3") == updated[:3]
    with PostgresStore(dsn) as opened:
        assert opened.thread_orders == {"thread", "updated"}
        streamed = [t.thread_id for t in opened.threads(order="updated")]
    assert streamed == [t["thread_id"] for t in updated]


@pytest.mark.parametrize("which", ["fixture", "shallow", "current", "legacy"])
def test_threads_latest_is_the_checkpoint_as_loaded(
    which: str,
    pg_store: PgStore,
    pg_shallow_store: PgStore,
    pg_dump_loader: Callable[[str], str],
) -> None:
    """`threads` brings each latest checkpoint's blob rows and writes flag in its own
    statement: every thread's latest is the checkpoint `load` reads by its key."""
    dsn = {"fixture": pg_store.dsn, "shallow": pg_shallow_store.dsn}.get(which)
    with PostgresStore(dsn or pg_dump_loader(which)) as opened:
        summaries = list(opened.threads())
        assert summaries
        compared = 0
        for summary in summaries:
            if summary.latest is None:
                continue
            loaded = opened.load(summary.latest.key, values=False)
            assert summary.latest == loaded, summary.thread_id
            compared += 1
        assert compared


@pytest.mark.parametrize("order", ["updated", "thread"])
def test_threads_cursor_sorts_before_its_joins(pg_store: PgStore, order: str) -> None:
    """The listing's server-side cursor sorts the narrow aggregates only: no sort above
    the joins of the latest rows and their blobs, so each FETCH does its own batch's
    joins and the statement timeout (per FETCH) never meets the whole listing's work."""
    with PostgresStore(pg_store.dsn) as opened, opened.conn.transaction():
        statement = opened.threads_statement(sizes=False, order=order)
        declare = sql.SQL("EXPLAIN DECLARE ckpt_plan CURSOR FOR ") + statement
        plan = [row[0] for row in opened.conn.execute(declare)]
    first_sort = next(i for i, line in enumerate(plan) if "Sort" in line.split("(")[0])
    first_join = next(i for i, line in enumerate(plan) if "Join" in line.split("(")[0])
    assert first_join < first_sort, "\n".join(plan)  # the sort is below the joins


def test_vacuum_counts_live_rows(pg_new_database: Callable[[], str]) -> None:
    """`vacuum` on Postgres counts the live rows: the statistics (pg_stat's n_live_tup),
    which showed 0 for tables holding rows, lag behind writes (issue 46 §3)."""
    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        run_scenarios(saver, only=("approval",))
    with psycopg.connect(dsn) as conn:
        counts = {
            table: conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()[0]  # type: ignore[index]
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        }
        conn.execute("SELECT pg_stat_reset()")  # the statistics say 0 rows, as if stale
    assert all(counts.values()), counts
    done = CliRunner().invoke(app, ["vacuum", url_of(dsn), "--json"])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    live = {t["table"]: t["live_rows"] for t in report["tables"]}
    assert {table: live[table] for table in counts} == counts
