"""`threads`, `show ID` and `history --last` read only what they show (issue 14).

What SQLite does is observed, not assumed: every statement a command runs is caught with
`set_trace_callback` and its plan asked of SQLite (EXPLAIN QUERY PLAN), so a size scan, a
scan of the checkpoint rows or a key-index scan shows up as such. The stores are written
by LangGraph's own SqliteSaver. The `langgraph dev` folder is written by the dev server's
layout of InMemorySaver (fixtures.build.DevServerSaver); there, what the listing keeps is
observed: which of the store's dicts it built, and its peak memory (tracemalloc).
"""

from __future__ import annotations

import copy
import operator
import re
import sqlite3
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from fixtures.build import DevServerSaver, fixture_warnings
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import ckpt
from ckpt.api import CheckpointStore, diff
from ckpt.records.model import CheckpointKey
from ckpt.stores.pickle import store as persistent_dict
from ckpt.stores.pickle.store import PickleStore
from ckpt.stores.sqlite import THREADS_PER_BATCH, SqliteStore
from runs import built_once, thinned

THREADS = THREADS_PER_BATCH + 50  # more than one batch of latest checkpoints
LONG = 400  # checkpoints of the long thread (about 3 per run)
DEV_THREADS = 12
DEV_RUNS = 25  # runs of each dev-folder thread: 3 checkpoints and 2 notes each


class _State(TypedDict):
    n: Annotated[int, operator.add]
    note: str


def _step(state: _State) -> dict[str, Any]:
    return {"n": 1, "note": "x" * 3000}  # bodies over a page: overflow chains


@pytest.fixture(scope="session")
def many_threads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """THREADS short threads and one long one, all through a real graph: built once per
    run (runs.built_once; the tests only read it)."""
    return Path(built_once(tmp_path_factory, "many_threads", _many_threads))


def _many_threads(folder: Path) -> str:
    path = folder / "many.sqlite"
    graph = StateGraph(_State)
    graph.add_node("step", _step)
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    with sqlite3.connect(path, check_same_thread=False) as conn:
        app = graph.compile(checkpointer=SqliteSaver(conn))
        for i in range(THREADS):
            app.invoke({"n": 1, "note": ""}, {"configurable": {"thread_id": f"t-{i:04d}"}})
        long_thread = {"configurable": {"thread_id": "long"}}
        while (
            conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 'long'").fetchone()[0]
            < LONG
        ):
            app.invoke({"n": 1, "note": ""}, long_thread)
    conn.close()
    return str(path)


@contextmanager
def statements(store: CheckpointStore) -> Iterator[list[str]]:
    """The SQL the store runs inside the block."""
    raw = store.backend
    assert isinstance(raw, SqliteStore)
    seen: list[str] = []
    raw.conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        raw.conn.set_trace_callback(None)


def plans(store: CheckpointStore, sql: list[str]) -> list[str]:
    """SQLite's plan of each SELECT (the traced text has its parameters expanded)."""
    raw = store.backend
    assert isinstance(raw, SqliteStore)
    found = []
    for text in sql:
        if not text.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        found.extend(row[3] for row in raw.conn.execute(f"EXPLAIN QUERY PLAN {text}"))
    return found


def table_scans(plan: list[str]) -> list[str]:
    """Steps that read checkpoint or write rows other than by key: a table scan, or a
    scan of a whole key index."""
    return [p for p in plan if re.match(r"SCAN (checkpoints|writes|c|w)\b", p)]


def test_threads_reads_rows_by_key_only_and_no_sizes(many_threads: Path) -> None:
    with ckpt.open(many_threads) as store:
        with statements(store) as sql:
            records = store.threads(sort="thread")
        plan = plans(store, sql)
    assert len(records) == THREADS + 1
    assert all(r["size"] is None and r["writes"] is None for r in records)
    # The one scan is of the key index (the GROUP BY floor); every row is read by key.
    scans = table_scans(plan)
    assert scans and all("COVERING INDEX" in p for p in scans), plan
    # No sizes: the only length()s are the guards on each fetched row's body and metadata
    # (SQLite reads a value's length from the row header, not its pages).
    from ckpt.stores.sqlite.store import _BODY, _METADATA

    assert not any("length(" in s.replace(_METADATA, "").replace(_BODY, "") for s in sql), sql
    assert any("USING INDEX sqlite_autoindex_checkpoints_1 (thread_id=? AND" in p for p in plan)


def test_threads_size_measures_and_is_shown_only_when_asked(many_threads: Path) -> None:
    with ckpt.open(many_threads) as store:
        measured = store.threads(sizes=True)
        stats = store.stats(top=0)
    sized = {r["thread_id"]: r["size"] for r in measured}
    assert sized == {t["thread_id"]: t["bytes"] for t in stats["threads"]}
    with sqlite3.connect(f"file:{many_threads}?mode=ro", uri=True) as conn:
        writes = dict(conn.execute("SELECT thread_id, count(*) FROM writes GROUP BY thread_id"))
    conn.close()
    assert {r["thread_id"]: r["writes"] for r in measured} == writes
    assert all(isinstance(v, int) and v > 3000 for v in sized.values())


def _read_bytes() -> int:
    """What this process has read so far (read and pread calls: SQLite's page reads)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def _listing_reads(store_path: Path, limit: int | None) -> tuple[list[Any], int, list[str]]:
    with ckpt.open(store_path) as store, statements(store) as sql:
        before = _read_bytes()
        records = store.threads(limit=limit)
        return records, _read_bytes() - before, sql


def test_limit_stops_reading(many_threads: Path) -> None:
    # One statement streams the latest checkpoints; `--limit 3` stops it after a few rows,
    # so it reads the key index and a few bodies (each over a page) instead of all.
    full, read_all, sql = _listing_reads(many_threads, None)
    first, read_three, sql_three = _listing_reads(many_threads, 3)
    assert first == full[:3] and len(full) == THREADS + 1
    bodies = [s for s in sql if "LEFT JOIN (SELECT" in s]
    assert len(bodies) == 1 and [s for s in sql_three if "LEFT JOIN (SELECT" in s] == bodies
    assert read_three * 4 < read_all, (read_three, read_all)


def test_updated_order_is_the_latest_ids_order(many_threads: Path) -> None:
    with ckpt.open(many_threads) as store:
        records = store.threads()
        by_thread = store.threads(sort="thread", status="done")
    keys = [(r["checkpoint_id"] or "", r["thread_id"]) for r in records]
    assert keys == sorted(keys, reverse=True)
    assert [r["thread_id"] for r in by_thread] == sorted(r["thread_id"] for r in records)


def test_show_by_full_id_searches_the_key(many_threads: Path) -> None:
    with ckpt.open(many_threads) as store:
        history = store.history("t-0123")
        wanted = history[1]["checkpoint_id"]
        with statements(store) as sql:
            record = store.checkpoint(wanted, values=False)
        plan = plans(store, [s for s in sql if "RECURSIVE" in s])
        # A short id still resolves (the key-index scan, as before).
        short = store.checkpoint(wanted[-8:], values=False)
    assert record["thread_id"] == "t-0123" and record["checkpoint_id"] == wanted
    assert short["checkpoint_id"] == wanted
    assert not table_scans(plan), plan
    assert any("(thread_id=? AND checkpoint_ns=? AND checkpoint_id=?)" in p for p in plan)


@pytest.mark.parametrize("name", ["legacy_lg0.1.19_sqlite.db", "legacy_lg0.2.16_cp1.0.9_sqlite.db"])
def test_full_id_probe_on_old_layouts(samples: Path, name: str) -> None:
    # 0.1.x keys on (thread_id, thread_ts) with no namespace column.
    with ckpt.open(samples / name) as store:
        keys = [
            CheckpointKey(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"])
            for t in store.threads(sort="thread")
            for r in store.history(t["thread_id"])
        ]
        assert keys
        for key in keys:
            assert key in store.backend.find_exact(key.checkpoint_id)
            assert store.checkpoint(key.checkpoint_id, values=False)["thread_id"] == key.thread_id


def test_full_id_probe_agrees_with_the_scan(sqlite_store: Path) -> None:
    # The fixture store has subgraph namespaces, forks and many threads.
    with ckpt.open(sqlite_store) as store:
        raw = store.backend
        keys = [
            (r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"])
            for t in store.threads(sort="thread")
            for r in store.history(t["thread_id"])
        ]
        assert any(ns for _, ns, _ in keys)
        for thread_id, ns, checkpoint_id in keys:
            exact = raw.find_exact(checkpoint_id)
            scanned = [k for k in raw.find(checkpoint_id) if k.checkpoint_id == checkpoint_id]
            assert sorted(exact) == sorted(scanned)
            assert CheckpointKey(thread_id, ns, checkpoint_id) in exact
        assert raw.find_exact("1" * 36) == []


def test_history_last_reads_only_the_newest(many_threads: Path) -> None:
    with ckpt.open(many_threads) as store:
        full = store.history("long")
        assert len(full) >= LONG
        with statements(store) as sql:
            last = store.history("long", last=50)
        tree = store.history_tree("long", last=5)
    assert last == full[-50:]
    assert [n["checkpoint"]["checkpoint_id"] for n in tree[0]] == [
        r["checkpoint_id"] for r in full[-5:]
    ]
    rows = [s for s in sql if "CROSS JOIN checkpoints" in s]
    assert len(rows) == 1 and "LIMIT 50" in rows[0], sql


def test_threads_table_memory_is_flat(many_threads: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The human table keeps no row in memory: rows spool (here to a file, past a small
    buffer) and the second pass lays them out as they are read back."""
    from ckpt.render import plain
    from ckpt.render.output import Output

    with ckpt.open(many_threads) as store:
        records = store.threads(sort="thread")
    output = Output(width=100)
    in_memory = list(plain.threads_table(records, output))
    monkeypatch.setattr(plain, "SPOOL_BYTES", 4096)
    assert list(plain.threads_table(records, output)) == in_memory  # the same, via a file
    notes = [line for line in in_memory if line.startswith("(")]  # columns said, not shown
    assert len(in_memory) == len(records) + 1 + len(notes) and len(notes) <= 2
    repeat = 40  # about 10,000 rows: holding them would take megabytes
    tracemalloc.start()
    try:
        rows = sum(1 for _ in plain.threads_table(records * repeat, output))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows == len(records) * repeat + 1 + len(notes)
    assert peak < 1_000_000, peak


SORTS = ["step", "checkpoints", "status", "size", "updated", "thread"]
# The 10,000-record memory measure: on every order in a long run, every other one in make
# test (each order's sort is checked on every run).
MEASURED_SORTS = thinned(SORTS, 2)


@pytest.mark.parametrize("sort", SORTS)
def test_other_orders_sort_in_flat_memory(
    many_threads: Path, monkeypatch: pytest.MonkeyPatch, sort: str
) -> None:
    """An order the store cannot stream (`--sort step`, ...) needs every record before the
    first: they wait in a temporary file, only their sort keys in memory, and come back
    exactly as select_threads orders them, `--limit` included. A record msgpack would
    change on the way (a tuple) stays in memory as it is."""
    from ckpt.analysis import threads

    with ckpt.open(many_threads) as store:
        records = store.threads(sort="thread")
    records[3] = {**records[3], "next": ("a", "tuple")}  # type: ignore[typeddict-item]
    expected = threads.select_threads(records, sort=sort)
    monkeypatch.setattr(threads, "_SPOOL_BYTES", 4096)  # through a file
    got = list(threads.sorted_threads(iter(records), sort=sort))
    assert got == expected
    assert [r["next"] for r in got if isinstance(r["next"], tuple)] == [("a", "tuple")]
    assert list(threads.sorted_threads(iter(records), sort=sort, limit=7)) == expected[:7]
    if sort not in MEASURED_SORTS:
        return
    repeat = 40  # about 10,000 records, each made anew: holding them would take megabytes
    fresh = (copy.deepcopy(r) for r in records * repeat)
    tracemalloc.start()
    try:
        count = sum(1 for _ in threads.sorted_threads(fresh, sort=sort))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == len(records) * repeat
    assert peak < 4_000_000, peak


def test_a_shape_learned_once_is_the_shape_of_each_checkpoint(sqlite_store: Path) -> None:
    """`threads` learns a graph's shape once for the threads that share it (own_shape):
    for every checkpoint of every scenario it is the shape that checkpoint alone gives,
    and a checkpoint with other channels, versions seen or writes gets its own."""
    from ckpt.analysis.tasks import own_shape, shape_of
    from ckpt.records.model import DumpQuery

    with SqliteStore(sqlite_store) as store:
        checkpoints = list(store.iter_checkpoints(DumpQuery(), values=False))
    assert len(checkpoints) > 50
    for checkpoint in checkpoints:
        assert own_shape(checkpoint) == shape_of([checkpoint]), checkpoint.key
    distinct = {repr(shape_of([c])) for c in checkpoints}
    assert len({id(own_shape(c)) for c in checkpoints}) >= len(distinct) > 1


@pytest.fixture(scope="session")
def dev_folder_of_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `langgraph dev` folder whose writes and blobs files dwarf what `threads` shows:
    every checkpoint's writes and channel values carry a 20 KB note. Built once per run
    (runs.built_once; the tests only read it)."""
    return Path(built_once(tmp_path_factory, "dev_folder_of_notes", _dev_folder_of_notes))


def _dev_folder_of_notes(parent: Path) -> str:
    folder = parent / ".langgraph_api"
    graph = StateGraph(_State)
    graph.add_node("step", lambda state: {"n": 1, "note": "x" * 20_000})
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    with fixture_warnings(), DevServerSaver(folder) as saver:
        app = graph.compile(checkpointer=saver)
        for i in range(DEV_THREADS):
            config: Any = {"configurable": {"thread_id": f"d-{i:03d}"}}
            for _ in range(DEV_RUNS):
                app.invoke({"n": 1, "note": ""}, config)
    return str(folder)


def test_dev_folder_threads_keeps_only_the_latest(
    dev_folder_of_notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`threads` on a dev folder builds none of the store's three dicts: it keeps each
    namespace's count and latest entry, and only those entries' writes and blobs
    (stores/pickle/lean.py), and lists what reading the whole dicts lists."""
    with ckpt.open(dev_folder_of_notes) as store:
        lean = store.threads(sort="thread")
        raw = store.backend
        assert isinstance(raw, PickleStore)
        assert raw._storage_dict is None, "the whole storage dict was read"
        assert raw._writes_dict is None, "the whole writes dict was read"
        assert raw._blobs_dict is None, "the whole blobs index was read"
    assert len(lean) == DEV_THREADS
    assert {r["checkpoints"] for r in lean} == {3 * DEV_RUNS}
    monkeypatch.setattr(persistent_dict, "_lean_storage", lambda path: None)
    monkeypatch.setattr(persistent_dict, "_spanned", lambda fd, role: None)
    with ckpt.open(dev_folder_of_notes) as store:
        full = store.threads(sort="thread")
        raw = store.backend
        assert isinstance(raw, PickleStore) and raw._writes_dict is not None
    assert lean == full


def test_dev_folder_threads_memory_is_below_its_writes(dev_folder_of_notes: Path) -> None:
    """Peak memory of opening the folder and listing it stays below the size of its writes
    file alone: holding the writes dict, or the index of every blob, would take more."""
    writes = (dev_folder_of_notes / ".langgraph_checkpoint.2.pckl").stat().st_size
    blobs = (dev_folder_of_notes / ".langgraph_checkpoint.3.pckl").stat().st_size
    assert writes > 5_000_000 and blobs > 5_000_000
    with ckpt.open(dev_folder_of_notes) as store:
        store.threads()  # what a first listing imports is not the listing's memory
    tracemalloc.start()
    try:
        with ckpt.open(dev_folder_of_notes) as store:
            rows = store.threads(sort="thread")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == DEV_THREADS
    assert peak < writes / 4, (peak, writes, blobs)


def test_dev_folder_whole_reads_keep_the_bytes_in_the_files(dev_folder_of_notes: Path) -> None:
    """The commands that read every checkpoint (stats, types, dump, threads --size) hold
    the storage and writes dicts with their bytes left in the files (persistent_dict
    _spanned): peak memory of sizing every thread and reading every raw row stays below
    half the writes file, where the unpickled dict alone takes more than it (1.4x)."""
    from ckpt.records.model import DumpQuery

    writes = (dev_folder_of_notes / ".langgraph_checkpoint.2.pckl").stat().st_size
    everything = DumpQuery()
    tracemalloc.start()
    try:
        with ckpt.open(dev_folder_of_notes) as store:
            raw = store.backend
            assert isinstance(raw, PickleStore)
            sized = raw.sizes(everything)
            rows = sum(1 for _ in raw.raw_checkpoints(everything))
            written = sum(w.size for w in raw.raw_writes(everything))
            spanned = raw._writes_file is not None and raw._storage_file is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows == sum(s.checkpoints for s in sized.values()) == DEV_THREADS * DEV_RUNS * 3
    assert written == sum(s.write_bytes for s in sized.values()) > DEV_THREADS * 20_000
    assert spanned, "the dicts were unpickled, their bytes held as strings"
    assert peak < writes / 2, (peak, writes)


def _one_thread(store: CheckpointStore, thread_id: str) -> Any:
    """What show, history and diff give on one thread (their JSON records)."""
    latest = store.checkpoint(thread_id)
    parent = store.parent(latest)
    return (
        latest,
        store.checkpoint(latest["checkpoint_id"], values=False),  # by id: found in every thread
        store.checkpoint(f"{thread_id}~2", values=False),
        store.history(thread_id),
        parent,
        diff(parent, latest) if parent is not None else None,
    )


def test_dev_folder_show_and_history_read_one_thread(
    dev_folder_of_notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`show`, `history` and `diff` of a thread in a dev folder, and `show` by checkpoint
    id, build none of the three dicts either: the storage pass keeps that thread's entries
    (or every thread's ids), the writes and blobs passes its keys (pickle_lean), and the
    records are those of the whole dicts."""
    thread_id = f"d-{DEV_THREADS // 2:03d}"
    with ckpt.open(dev_folder_of_notes) as store:
        lean = _one_thread(store, thread_id)
        raw = store.backend
        assert isinstance(raw, PickleStore)
        assert raw._storage_dict is None, "the whole storage dict was read"
        assert raw._writes_dict is None, "the whole writes dict was read"
        assert raw._blobs_dict is None, "the whole blobs index was read"
    assert len(lean[3]) == 3 * DEV_RUNS and lean[0]["pending_writes"] is not None
    monkeypatch.setattr(persistent_dict, "_lean_storage", lambda path: None)
    monkeypatch.setattr(persistent_dict, "_spanned", lambda fd, role: None)
    with ckpt.open(dev_folder_of_notes) as store:
        full = _one_thread(store, thread_id)
        raw = store.backend
        assert isinstance(raw, PickleStore) and raw._writes_dict is not None
    assert lean == full


def test_dev_folder_show_memory_is_below_its_writes(dev_folder_of_notes: Path) -> None:
    """Peak memory of `show --blobs` and `history` of one thread stays below half the size
    of the writes file alone (holding the writes dict takes more than the file)."""
    writes = (dev_folder_of_notes / ".langgraph_checkpoint.2.pckl").stat().st_size
    thread_id = f"d-{DEV_THREADS // 2:03d}"
    with ckpt.open(dev_folder_of_notes) as store:
        store.checkpoint(thread_id)  # what a first read imports is not the read's memory
    tracemalloc.start()
    try:
        with ckpt.open(dev_folder_of_notes) as store:
            store.checkpoint(thread_id)
            store.history(thread_id)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < writes / 2, (peak, writes)


def test_dev_folder_reads_its_index_once_past_a_few_threads(dev_folder_of_notes: Path) -> None:
    """Going from thread to thread (the browser) reads the whole index once the one-thread
    passes have read persistent_dict.LEAN_THREADS threads, and the records stay the same."""
    threads = [f"d-{i:03d}" for i in range(persistent_dict.LEAN_THREADS + 1)]
    with ckpt.open(dev_folder_of_notes) as store:
        raw = store.backend
        assert isinstance(raw, PickleStore)
        shown = []
        for thread_id in threads:
            shown.append(store.checkpoint(thread_id))
            whole = thread_id == threads[-1]
            assert (raw._storage_dict is not None) == whole, thread_id
        again = [store.checkpoint(thread_id) for thread_id in threads]
    assert again == shown


def test_stats_follows_only_the_threads_it_lists(many_threads: Path) -> None:
    """`stats` keeps state per thread only for the threads its record lists (the biggest
    `--top`) and charts, never for every thread (100,000 threads: 160 -> 83 MB), and lists
    the same threads, in the same order, as ranking them all would."""
    from ckpt.records.model import DumpQuery
    from ckpt.scan.rows import scan
    from ckpt.scan.stats import GROWTH_THREADS, sizes_visitor, store_stats

    with SqliteStore(many_threads) as store:
        sizes = store.sizes(DumpQuery())
        assert len(sizes) > THREADS_PER_BATCH
        ranked = sorted(sizes, key=lambda t: (-sizes[t].total, t))
        measured = sizes_visitor(store, DumpQuery(), sizes, top=5, keep=2)
        scan(store, sizes, [measured])
        assert list(measured.repeated) == ranked[:5]
        assert set(measured.threads) == set(ranked[:GROWTH_THREADS])
        for top in (5, 0):
            listed = store_stats(store, top=top)["threads"]
            assert [t["thread_id"] for t in listed] == (ranked[:top] if top else ranked)
        assert store_stats(store, top=0)["threads"][:5] == store_stats(store, top=5)["threads"]
