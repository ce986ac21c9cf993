"""`ckpt stats` on real stores: totals equal what plain SQL counts in the rows, channel
sizes equal LangGraph's own serialization of each value, growth matches a thread whose
sizes are known, planted orphans are found, and the JSON follows its schema."""

from __future__ import annotations

import io
import json
import operator
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import ormsgpack
import psycopg
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

import ckpt
from ckpt.cli import app
from ckpt.decoders.spans import body_layout, value_layout
from ckpt.scan.stats import store_stats
from ckpt.stores.sqlite import SqliteStore
from pg import url_of
from store_files import folder_hashes, unexpected_changes

DOCS = Path(__file__).parent.parent / "docs"
runner = CliRunner()


def stats_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["stats", *args, "--json", "--top", "0"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def found(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The health section's findings (those of `ckpt check`) by code."""
    return {f["code"]: f for f in record["health"]["findings"]}


def ro(path: Path) -> sqlite3.Connection:
    """The oracle's own read-only connection; immutable for the checked-in samples, which
    must get no side files (a copy a test changed may have pages in its WAL)."""
    sample = path.resolve().parent == Path(__file__).parent.joinpath("data").resolve()
    return sqlite3.connect(f"file:{path}?mode=ro{'&immutable=1' if sample else ''}", uri=True)


def sqlite_totals(path: Path) -> dict[str, int]:
    """What the rows hold, counted with plain SQL."""
    with ro(path) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        cps, cp_bytes, meta = conn.execute(
            "SELECT count(*), sum(length(checkpoint) + length(metadata)), sum(length(metadata)) "
            "FROM checkpoints"
        ).fetchone()
        writes, write_bytes = (
            conn.execute("SELECT count(*), coalesce(sum(length(value)), 0) FROM writes").fetchone()
            if "writes" in tables
            else (0, 0)
        )
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
    return {
        "threads": threads,
        "checkpoints": cps,
        "checkpoint_bytes": cp_bytes,
        "metadata_bytes": meta,
        "writes": writes,
        "write_bytes": write_bytes,
        "bytes": cp_bytes + write_bytes,
    }


def check_parts(record: dict[str, Any]) -> None:
    """The breakdowns add up to the totals, each its own way."""
    totals = record["totals"]
    assert (
        totals["bytes"] == totals["checkpoint_bytes"] + totals["blob_bytes"] + totals["write_bytes"]
    )
    assert totals["checkpoint_bytes"] == (
        totals["body_bytes"] + totals["inline_value_bytes"] + totals["metadata_bytes"]
    )
    assert sum(c["bytes"] for c in record["channels"]) == totals["value_bytes"]
    assert sum(w["bytes"] for w in record["write_channels"]) == totals["write_bytes"]
    assert sum(w["writes"] for w in record["write_channels"]) == totals["writes"]
    assert sum(t["bytes"] for t in record["threads"]) == totals["bytes"]
    assert sum(t["checkpoints"] for t in record["threads"]) == totals["checkpoints"]
    assert sum(n["bytes"] for n in record["namespaces"]) == totals["bytes"]
    assert sum(n["checkpoints"] for n in record["namespaces"]) == totals["checkpoints"]
    for estimate in record["prune"].values():
        assert 0 <= estimate["bytes"] <= totals["bytes"]
    keep_latest, keep_last = record["prune"]["keep_latest"], record["prune"]["keep_last"]
    assert keep_last["bytes"] <= keep_latest["bytes"]


def threads_sizes(*args: str) -> dict[str, int]:
    result = runner.invoke(app, ["threads", *args, "--size", "--json"])
    assert result.exit_code == 0, result.output
    return {t["thread_id"]: t["size"] for t in json.loads(result.stdout)}


# -- totals -------------------------------------------------------------------------------------


SQLITE_SAMPLES = [
    "sqlite_checkpoints.db",
    "sqlite_delta.db",
    "legacy_lg0.1.19_sqlite.db",
    "legacy_lg0.2.16_cp1.0.9_sqlite.db",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db",
]


@pytest.mark.parametrize("name", SQLITE_SAMPLES)
def test_sqlite_totals_are_the_bytes_in_the_rows(samples: Path, name: str) -> None:
    path = samples / name
    record = stats_json(str(path))
    expected = sqlite_totals(path)
    assert {k: record["totals"][k] for k in expected} == expected
    check_parts(record)
    assert record["totals"]["unmeasured_bodies"]["checkpoints"] == 0
    assert {t["thread_id"]: t["bytes"] for t in record["threads"]} == threads_sizes(str(path))


def test_fixture_stores_add_up(sqlite_store: Path, dev_folder: Path, memory_pkl: Path) -> None:
    record = stats_json(str(sqlite_store))
    expected = sqlite_totals(sqlite_store)
    assert {k: record["totals"][k] for k in expected} == expected
    for store in (sqlite_store, dev_folder, memory_pkl):
        record = stats_json(str(store))
        check_parts(record)
        assert {t["thread_id"]: t["bytes"] for t in record["threads"]} == threads_sizes(str(store))
    # The dev folder keeps values apart: blobs, each one stored value of a channel.
    dev = stats_json(str(dev_folder))
    assert dev["totals"]["blobs"] > 0 and dev["totals"]["inline_value_bytes"] == 0
    assert sum(c["stored"] for c in dev["channels"]) == dev["totals"]["blobs"]


@pytest.mark.postgres
def test_postgres_totals_are_the_bytes_in_the_rows(pg_store: Any) -> None:
    with psycopg.connect(pg_store.dsn) as conn:
        cps, cp_bytes = conn.execute(
            "SELECT count(*), sum(pg_column_size(checkpoint) + pg_column_size(metadata)) "
            "FROM checkpoints"
        ).fetchone()
        blobs, blob_bytes = conn.execute(
            "SELECT count(*), sum(octet_length(blob)) FROM checkpoint_blobs"
        ).fetchone()
        writes, write_bytes = conn.execute(
            "SELECT count(*), sum(octet_length(blob)) FROM checkpoint_writes"
        ).fetchone()
        tables = dict(
            conn.execute(
                "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
                "('checkpoints', 'checkpoint_blobs', 'checkpoint_writes') AND relkind = 'r'"
            ).fetchall()
        )
    url = url_of(pg_store.dsn)
    record = stats_json(url)
    totals = record["totals"]
    assert (totals["checkpoints"], totals["checkpoint_bytes"]) == (cps, cp_bytes)
    assert (totals["blobs"], totals["blob_bytes"]) == (blobs, blob_bytes)
    assert (totals["writes"], totals["write_bytes"]) == (writes, write_bytes)
    check_parts(record)
    assert sum(c["stored"] for c in record["channels"]) == blobs
    assert {t["table"]: t["total_bytes"] for t in record["storage"]["tables"]} == tables
    assert {t["thread_id"]: t["bytes"] for t in record["threads"]} == threads_sizes(url)
    assert "orphan-blobs" not in found(record) and record["health"]["summary"]["error"] == 0
    Draft202012Validator(json.loads((DOCS / "stats.schema.json").read_text())).validate(record)


# -- channel sizes against LangGraph's serializer ---------------------------------------------


def test_channel_spans_are_the_size_langgraph_serialized(sqlite_store: Path) -> None:
    """Each inline value's span is exactly the bytes ormsgpack (LangGraph's serializer)
    writes for that value; a list's elements likewise."""
    with ro(sqlite_store) as conn:
        rows = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()
    checked = 0
    for tag, body in rows:
        layout = body_layout(tag, body)
        assert layout is not None
        decoded = ormsgpack.unpackb(body, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
        for channel, value in decoded["channel_values"].items():
            packed = ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)
            assert layout.values[channel].size == len(packed), channel
            if isinstance(value, list):
                elements = [
                    len(ormsgpack.packb(v, option=ormsgpack.OPT_NON_STR_KEYS)) for v in value
                ]
                assert layout.values[channel].elements == elements
            checked += 1
        assert layout.versions == decoded["channel_versions"]
    assert checked > 20


def test_spans_refuse_lying_lengths() -> None:
    body = ormsgpack.packb({"channel_values": {"messages": ["a" * 40, "b"]}})
    assert body_layout("msgpack", body) is not None
    for cut in range(1, len(body)):
        assert body_layout("msgpack", body[:cut]) is None  # truncated anywhere: no layout
    lying = bytearray(body)
    lying[lying.index(0xD9)] = 0xDB  # str 8 -> str 32: the length now runs past the end
    assert body_layout("msgpack", bytes(lying)) is None
    assert value_layout("msgpack", b"\xdd\xff\xff\xff\xff").size == 5  # no hang, no error


def test_a_list_longer_than_spans_track_is_one_value() -> None:
    # A hostile value of millions of tiny elements: measured whole, not an entry per element
    # (`ckpt stats` held 395 MB for 2 million fixext values before).
    from ckpt.decoders.spans import LIST_ELEMENTS

    for count, tracked in ((LIST_ELEMENTS, True), (LIST_ELEMENTS + 1, False)):
        packed = ormsgpack.packb([0] * count)
        layout = value_layout("msgpack", packed)
        assert layout.size == len(packed)
        assert (layout.elements == [1] * count) if tracked else layout.elements is None
        text = json.dumps([0] * count).encode()
        layout = value_layout("json", text)
        assert layout.size == len(text)
        assert (layout.elements is not None) is tracked
        body = body_layout("json", json.dumps({"channel_values": {"m": [0] * count}}).encode())
        assert body is not None
        assert (body.values["m"].elements is not None) is tracked


# -- growth on a thread whose sizes are known --------------------------------------------------


class Growing(TypedDict):
    items: Annotated[list[str], operator.add]
    turn: int


ITEM = "x" * 1000  # msgpack: 3 header bytes + 1000
STEPS = 24  # root checkpoints: over stats.GROWTH_SAMPLE, so a verdict is given


def grow(state: Growing) -> dict[str, Any]:
    return {"items": [ITEM], "turn": state["turn"] + 1}


@pytest.fixture(scope="module")
def growing_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    path = tmp_path_factory.mktemp("growth") / "growth.sqlite"
    builder = StateGraph(Growing)
    builder.add_node("grow", grow)
    builder.add_edge(START, "grow")
    builder.add_conditional_edges("grow", lambda s: END if s["turn"] >= STEPS else "grow")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"items": [], "turn": 0}, {"configurable": {"thread_id": "grow-1"}})
    return path


def test_growth_of_a_thread_whose_sizes_are_known(growing_store: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    record = stats_json(str(growing_store))
    (growth,) = record["growth"]
    # LangGraph's own history: how many items each checkpoint stores, oldest first.
    with sqlite3.connect(growing_store) as conn:
        history = list(SqliteSaver(conn).list({"configurable": {"thread_id": "grow-1"}}))
    history.reverse()
    stored = [
        t.checkpoint["channel_values"]["items"]
        for t in history
        if "items" in t.checkpoint["channel_values"]
    ]
    counts = [len(items) for items in stored]
    assert counts[-1] == STEPS
    # An item repeats when the checkpoint before stored it too: the list only grows.
    expected_repeated = sum(min(a, b) for a, b in zip(counts, counts[1:], strict=False)) * 1003
    (items,) = [c for c in record["channels"] if c["channel"] == "items"]
    assert items["bytes"] == sum(len(ormsgpack.packb(v)) for v in stored)
    assert items["stored"] == len(stored)
    assert items["repeated_bytes"] == expected_repeated
    assert growth["thread_id"] == "grow-1" and growth["shape"] == "growing"
    assert growth["channel"] == "items"
    assert growth["statement"] is not None and growth["statement"].startswith("items is re-stored")
    sizes = [p["bytes"] for p in growth["points"]]
    assert len(sizes) == len(history)
    with ro(growing_store) as conn:
        rows = conn.execute(
            "SELECT length(checkpoint) + length(metadata) FROM checkpoints ORDER BY checkpoint_id"
        ).fetchall()
    assert sizes == [size for (size,) in rows]
    human = runner.invoke(app, ["stats", str(growing_store)], env={"COLUMNS": "120"})
    assert "items is re-stored in full at every step" in human.stdout
    assert "grows with the square of its steps" in human.stdout


def test_runaway_growth_is_a_warning_an_ordinary_chat_is_not(
    growing_store: Path, tmp_path: Path
) -> None:
    """The growing thread above is an ordinary chat of 24 steps (under half a megabyte):
    its shape is `growing`, and that costs nothing yet, so check says nothing. The same
    graph with 200 KB per step stores 70 MB by its 26th step: runaway growth, a warning
    (docs/json.md gives the threshold: 64 MiB)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    from checking import check

    ordinary = check(str(growing_store))
    assert "quadratic-growth" not in {f["code"] for f in ordinary["findings"]}
    big = "y" * 200_000

    def heavy(state: Growing) -> dict[str, Any]:
        return {"items": [big], "turn": state["turn"] + 1}

    path = tmp_path / "runaway.sqlite"
    builder = StateGraph(Growing)
    builder.add_node("grow", heavy)
    builder.add_edge(START, "grow")
    builder.add_conditional_edges("grow", lambda s: END if s["turn"] >= 26 else "grow")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"items": [], "turn": 0}, {"configurable": {"thread_id": "runaway-1"}})
    record = check(str(path))
    (runaway,) = [f for f in record["findings"] if f["code"] == "quadratic-growth"]
    assert (runaway["severity"], runaway["threads"]) == ("warning", ["runaway-1"])
    assert runaway["bytes"] >= 64 << 20 and "64 MiB" in runaway["reason"]
    assert stats_json(str(path))["health"]["findings"] == record["findings"]


class Steady(TypedDict):
    item: str
    turn: int


def test_no_growth_verdict_on_a_short_or_a_steady_thread(
    sqlite_store: Path, tmp_path: Path
) -> None:
    """fork-1 has 10 checkpoints: too few to say; a thread of 25 checkpoints whose state is
    replaced at each step (same size) is flat, however its sizes wobble."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    short = stats_json(str(sqlite_store), "--thread", "fork-1")
    (growth,) = short["growth"]
    assert growth["checkpoints"] < 20 and growth["shape"] == "too_short"
    path = tmp_path / "steady.sqlite"
    builder = StateGraph(Steady)
    builder.add_node(
        "step", lambda s: {"item": ITEM[: 500 + 37 * (s["turn"] % 5)], "turn": s["turn"] + 1}
    )
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["turn"] >= STEPS else "step")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"item": "", "turn": 0}, {"configurable": {"thread_id": "steady-1"}})
    (steady,) = stats_json(str(path))["growth"]
    assert steady["checkpoints"] >= 20 and steady["shape"] == "flat"
    human = runner.invoke(app, ["stats", str(path)], env={"COLUMNS": "120"})
    assert "square of its steps" not in human.stdout


# -- health: planted orphans -------------------------------------------------------------------


def test_planted_orphans_are_found(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "planted.sqlite"
    shutil.copy(sqlite_store, store)
    clean = stats_json(str(store))
    assert clean["health"]["summary"]["error"] == 0 and "orphan-writes" not in found(clean)
    with sqlite3.connect(store) as conn:
        thread = "support-1"
        ids = [
            i
            for (i,) in conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                "ORDER BY checkpoint_id",
                (thread,),
            )
        ]
        middle = ids[len(ids) // 2]
        conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?", (thread, middle)
        )
        conn.execute(
            "INSERT INTO writes VALUES "
            "(?, '', 'no-such-checkpoint', 'task', '', 0, 'x', 'null', NULL)",
            (thread,),
        )
        subgraph = conn.execute(
            "SELECT thread_id, checkpoint_ns FROM checkpoints WHERE checkpoint_ns != '' LIMIT 1"
        ).fetchone()
        conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (subgraph[0],)
        )
    record = stats_json(str(store))
    health = found(record)
    orphans = health["orphan-writes"]
    # The planted write, and the writes of the deleted middle checkpoint.
    with ro(store) as conn:
        orphan_rows = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM writes w WHERE NOT EXISTS "
            "(SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND "
            "c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)"
        ).fetchall()
    assert orphans["count"] == len(orphan_rows) >= 1
    assert (thread, "", "no-such-checkpoint") in orphan_rows
    assert orphans["thread_count"] == len({row[0] for row in orphan_rows})
    assert {
        (p["thread_id"], p["checkpoint_ns"], p["checkpoint_id"]) for p in orphans["places"]
    } == (set(orphan_rows))
    assert health["dangling-parent"]["threads"] == [thread]
    assert health["orphan-subgraph"]["threads"] == [subgraph[0]]
    assert record["health"]["status"] == "error"


def test_a_pruned_thread_is_said_to_be_pruned(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "pruned.sqlite"
    shutil.copy(sqlite_store, store)
    with sqlite3.connect(store) as conn:
        # What keep_latest leaves: the newest checkpoint, its parent id pointing nowhere.
        conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = 'support-1' AND checkpoint_id < "
            "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'support-1')"
        )
    record = stats_json(str(store))
    pruned = found(record)["pruned-history"]
    assert (pruned["count"], pruned["severity"], pruned["threads"]) == (1, "note", ["support-1"])
    assert record["health"]["summary"]["error"] == 0


@pytest.mark.postgres
def test_planted_orphan_blobs_in_postgres(pg_new_database: Callable[[], str]) -> None:
    from fixtures.postgres import build_postgres

    dsn = pg_new_database()
    build_postgres(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO checkpoint_blobs SELECT thread_id, checkpoint_ns, channel, 'v-gone', "
            "type, blob FROM checkpoint_blobs WHERE type = 'msgpack' LIMIT 2"
        )
        (size,) = conn.execute(
            "SELECT sum(octet_length(blob)) FROM checkpoint_blobs WHERE version = 'v-gone'"
        ).fetchone()
    orphans = found(stats_json(url_of(dsn)))["orphan-blobs"]
    assert (orphans["count"], orphans["bytes"], orphans["severity"]) == (2, size, "warning")
    assert orphans["fix"]["verb"] == "prune" and orphans["fix"]["applies"]


# -- prune estimate ----------------------------------------------------------------------------


def test_keep_latest_estimate_is_what_deleting_would_free(sqlite_store: Path) -> None:
    record = stats_json(str(sqlite_store))
    with ro(sqlite_store) as conn:
        latest = (
            "SELECT thread_id, checkpoint_ns, max(checkpoint_id) AS id FROM checkpoints "
            "GROUP BY 1, 2"
        )
        (kept_rows,) = conn.execute(
            f"SELECT sum(length(c.checkpoint) + length(c.metadata)) FROM checkpoints c JOIN "
            f"({latest}) l ON c.thread_id = l.thread_id AND c.checkpoint_ns = l.checkpoint_ns "
            "AND c.checkpoint_id = l.id"
        ).fetchone()
        (kept_writes,) = conn.execute(
            f"SELECT coalesce(sum(length(w.value)), 0) FROM writes w JOIN ({latest}) l ON "
            "w.thread_id = l.thread_id AND w.checkpoint_ns = l.checkpoint_ns "
            "AND w.checkpoint_id = l.id"
        ).fetchone()
    estimate = record["prune"]["keep_latest"]
    assert estimate["bytes"] == record["totals"]["bytes"] - kept_rows - kept_writes
    keep_all = stats_json(str(sqlite_store), "--keep", "100000")["prune"]["keep_last"]
    assert keep_all["bytes"] == 0 and keep_all["checkpoints"] == 0


@pytest.mark.parametrize("keep", [2, 3])
def test_keep_last_estimate_is_what_deleting_would_free(sqlite_store: Path, keep: int) -> None:
    """The keep-last-N estimate against the rows themselves: every checkpoint but the
    newest N of its (thread, namespace), and every write on one of those."""
    record = stats_json(str(sqlite_store), "--keep", str(keep))
    newest: dict[tuple[str, str], list[str]] = {}
    with ro(sqlite_store) as conn:
        for thread_id, ns, checkpoint_id in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            "ORDER BY checkpoint_id DESC"
        ):
            newest.setdefault((thread_id, ns), []).append(checkpoint_id)
        kept = {(t, n, c) for (t, n), ids in newest.items() for c in ids[:keep]}
        kept_rows = sum(
            size
            for t, n, c, size in conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, "
                "length(checkpoint) + length(metadata) FROM checkpoints"
            )
            if (t, n, c) in kept
        )
        kept_writes = sum(
            size
            for t, n, c, size in conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, length(value) FROM writes"
            )
            if (t, n, c) in kept
        )
    assert kept_writes  # the fixture's newest checkpoints carry writes: the test can fail
    estimate = record["prune"]["keep_last"]
    assert estimate["bytes"] == record["totals"]["bytes"] - kept_rows - kept_writes


# -- the rest of the command -------------------------------------------------------------------


def test_encrypted_bodies_split_only_with_the_key(
    encrypted_store: Path, encryption_key: bytes
) -> None:
    result = runner.invoke(app, ["stats", str(encrypted_store), "--json"])
    assert result.exit_code == 6, result.output  # printed, then exit 6 as show and dump do
    assert "need --aes-key" in result.stderr or "needs --aes-key" in result.stderr
    without = json.loads(result.stdout)
    unmeasured = without["totals"]["unmeasured_bodies"]
    assert unmeasured["checkpoints"] == unmeasured["encrypted"] == without["totals"]["checkpoints"]
    assert without["channels"] == []
    opened = stats_json(str(encrypted_store), "--aes-key", encryption_key.decode())
    assert opened["totals"]["unmeasured_bodies"]["checkpoints"] == 0
    assert opened["channels"] and opened["totals"]["bytes"] == without["totals"]["bytes"]
    check_parts(opened)


# The parts of `storage` each kind of store has; every other part is null.
STORAGE_PARTS = {
    "sqlite": {"file_bytes", "page_size", "pages", "free_pages", "free_bytes", "wal_bytes"},
    "postgres": {"tables"},
    "redis": {"server"},
    "mongodb": {"database", "collections", "other_collections"},
    "pickle": {"files"},
}
# ...and the rows of the human summary that show them.
STORAGE_ROWS = {
    "sqlite": ["file"],
    "postgres": ["table", "table", "table"],
    "redis": ["server", "keys"],
    "mongodb": ["collection", "collection"],
    "pickle": ["file", "file", "file"],
}


@pytest.mark.parametrize(
    "fixture",
    [
        "sqlite_store",
        "growing_store",
        pytest.param("pg_store", marks=pytest.mark.postgres),
        "redis_url",
        "mongo_url",
        "dev_folder",
    ],
)
def test_json_follows_its_schema(fixture: str, request: pytest.FixtureRequest) -> None:
    """Every kind of store gives one shape (docs/stats.schema.json): its own parts of
    `storage` filled, the others null, and the human summary shows what they hold."""
    from ckpt.cli.options import fix_line
    from ckpt.render.output import Output
    from ckpt.render.stats_view import stats_view

    store = request.getfixturevalue(fixture)
    schema = json.loads((DOCS / "stats.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    record = stats_json(url_of(store.dsn) if fixture == "pg_store" else str(store))
    Draft202012Validator(schema).validate(record)
    storage, kind = record["storage"], record["store"]["kind"]
    assert {k for k, v in storage.items() if v is not None} == {"total_bytes"} | STORAGE_PARTS[kind]
    if kind == "sqlite":
        assert storage["total_bytes"] == storage["file_bytes"] + storage["wal_bytes"]
    shown = io.StringIO()
    view = stats_view(record, Output(width=200), fix_line=fix_line)
    Output(stdout=shown, width=200).show(view, crop=False)
    summary = shown.getvalue().split("\nrows ", 1)[0].splitlines()[1:]  # after "store"
    assert [line.split(" ", 1)[0] for line in summary] == STORAGE_ROWS[kind], summary


def test_selection_and_the_api(sqlite_store: Path) -> None:
    whole = stats_json(str(sqlite_store))
    one = stats_json(str(sqlite_store), "--thread", "support-1")
    assert one["totals"]["threads"] == 1
    (expected,) = [t for t in whole["threads"] if t["thread_id"] == "support-1"]
    assert one["totals"]["bytes"] == expected["bytes"]
    assert [g["thread_id"] for g in one["growth"]] == ["support-1"]
    with ckpt.open(sqlite_store) as store:
        assert store.stats(threads=["support-1"], top=0) == one
    root = stats_json(str(sqlite_store), "--ns", "")
    assert [n["namespace"] for n in root["namespaces"]] == [""]
    bad = runner.invoke(app, ["stats", str(sqlite_store), "--thread", "nosuch"])
    assert bad.exit_code == 7 and "no thread 'nosuch'" in bad.output


def test_stats_never_changes_the_store(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "copy.sqlite"
    shutil.copy(sqlite_store, store)
    before = folder_hashes(tmp_path)
    runner.invoke(app, ["stats", str(store)])
    assert unexpected_changes(tmp_path, before) == []  # same bytes; at most -wal/-shm made


def test_human_view_names_every_section(sqlite_store: Path) -> None:
    result = runner.invoke(app, ["stats", str(sqlite_store)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for heading in (
        "Threads, largest first",
        "Channel values by channel",
        "Pending writes by channel",
        "Largest checkpoints",
        "What a prune would give back",
        "Health",
    ):
        assert heading in result.stdout


@pytest.mark.postgres
@pytest.mark.parametrize("which", ["shallow", "legacy", "current"])
def test_every_postgres_era_adds_up(
    which: str, pg_shallow_store: Any, pg_dump_loader: Callable[[str], str]
) -> None:
    dsn = pg_shallow_store.dsn if which == "shallow" else pg_dump_loader(which)
    url = url_of(dsn)
    record = stats_json(url)
    check_parts(record)
    assert {t["thread_id"]: t["bytes"] for t in record["threads"]} == threads_sizes(url)
    with psycopg.connect(dsn) as conn:
        (blobs,) = conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()
    assert record["totals"]["blobs"] == blobs
    assert record["health"]["summary"]["error"] == 0, record["health"]["findings"]


def test_a_charted_thread_need_not_be_listed(sqlite_store: Path) -> None:
    """`--top 1` lists one thread but charts three: the other two charts count their
    repeated bytes as when they are listed too."""
    with SqliteStore(sqlite_store) as store:
        charted = store_stats(store, top=5)["growth"]
        assert len(charted) == 3 and all(g["repeated_bytes"] for g in charted)
        assert store_stats(store, top=1)["growth"] == charted
