"""The `langgraph dev` folder and PersistentDict files: all commands, LangGraph's view, bad data."""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import pickletools
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.build import DEV_FILES, DevServerSaver, fixture_warnings
from fixtures.graphs import SCENARIO_STATUS as EXPECTED_STATUS
from fixtures.graphs import run_scenarios
from fixtures.oracle import load_memory_saver, quiet_serde_log
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.decoders import pickle_globals
from ckpt.errors import CkptError, ExitCode, RefusedGlobal, StoreCorrupt
from ckpt.records.model import Checkpoint, CheckpointKey, DumpQuery
from ckpt.stores import discover, open_store
from ckpt.stores.pickle.index import PickleFile, StoredText, Unsupported
from ckpt.stores.pickle.lean import scan_kept
from ckpt.stores.pickle.store import PickleStore
from ckpt.stores.pickle.unpickler import load_pickle
from ckpt.stores.sqlite import SqliteStore
from hostile import tuple_bomb
from normalize import normalize
from runs import examples

runner = CliRunner()
CKPT = Path(sys.executable).with_name("ckpt")

STORAGE, WRITES, BLOBS = DEV_FILES
CP_2_0_21 = "memory_persistentdict_cp2.0.21.pkl"
CURRENT_SAMPLE = "memory_persistentdict.pkl"


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "120"})


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def assert_one_line_error(result: Any, code: ExitCode, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stderr, result.stdout)
    assert result.stderr.startswith("ckpt: error:"), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def assert_refused_value(result: Any, *fragments: str) -> None:
    """The store read, the refused value shown as such, and exit 9 with one error line."""
    assert result.exit_code == ExitCode.REFUSED, (result.exit_code, result.stderr)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("ckpt: note:")]
    assert len(errors) == 1 and errors[0].startswith("ckpt: error:"), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def notes(result: Any) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ckpt: note:")]


def view(checkpoint: Checkpoint) -> dict[str, Any]:
    """A checkpoint in the oracle's terms (fixtures.oracle.CheckpointView)."""
    return {
        "thread_id": checkpoint.thread_id,
        "checkpoint_ns": checkpoint.checkpoint_ns,
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "v": checkpoint.v,
        "ts": checkpoint.ts,
        "metadata": checkpoint.metadata,
        "channel_versions": checkpoint.channel_versions,
        "versions_seen": checkpoint.versions_seen,
        "channels": (
            sorted(checkpoint.value_channels) if checkpoint.value_channels is not None else None
        ),
        "pending_writes": (
            [[w.task_id, w.channel] for w in checkpoint.pending_writes]
            if checkpoint.pending_writes is not None
            else None
        ),
    }


def copy_dev_folder(source: Path, target: Path, names: tuple[str, ...] = DEV_FILES) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, target / name)
    return target


class Payload:
    """A hostile pickle: unpickling it runs `touch <marker>`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def hostile_store(marker: Path, protocol: int) -> bytes:
    """A storage dict with one checkpoint entry that is really a call to os.system."""
    body = ("msgpack", b"\x80")
    return pickle.dumps({"thread-1": {"": {"1f0": (body, body, Payload(marker))}}}, protocol)


# -- the dev folder: LangGraph's own view --------------------------------------------------------


def test_dev_folder_matches_what_langgraph_saved(dev_folder: Path, oracles: dict[str, Any]) -> None:
    """Ids, parents, metadata, versions, channels holding a value, writes in LangGraph's order."""
    with PickleStore(dev_folder) as store:
        assert store.kind == "pickle" and store.notices == []
        mine = [view(c) for c in store.iter_checkpoints(DumpQuery(), values=False)]
    assert mine == oracles["dev_folder"]["checkpoints"]


def test_dev_folder_values_are_what_langgraph_loads(dev_folder: Path) -> None:
    """Every channel value, write and metadata dict, against InMemorySaver reading the same
    three files (LangGraph's own unpickler, on files these fixtures wrote)."""
    saver = load_memory_saver(*(dev_folder / name for name in DEV_FILES))
    with quiet_serde_log():
        tuples = list(saver.list(None))
    assert len(tuples) > 50
    with PickleStore(dev_folder) as store:
        for tup in tuples:
            configurable = tup.config["configurable"]
            key = CheckpointKey(
                configurable["thread_id"],
                configurable["checkpoint_ns"],
                configurable["checkpoint_id"],
            )
            checkpoint = store.load(key, values=True)
            expected = {k: normalize(v) for k, v in tup.checkpoint["channel_values"].items()}
            assert checkpoint.channel_values == expected, key
            assert checkpoint.metadata == normalize(dict(tup.metadata or {})), key
            assert checkpoint.pending_writes is not None
            writes = [(w.task_id, w.channel, w.value) for w in checkpoint.pending_writes]
            assert writes == [(t, c, normalize(v)) for t, c, v in tup.pending_writes or []], key
            # Blobs: one per versioned channel that has a blob, `empty` ones included.
            assert checkpoint.blobs is not None
            assert set(checkpoint.value_channels or ()) == set(expected)
            assert {c for c, b in checkpoint.blobs.items() if b.type != "empty"} == set(expected)


def test_dev_folder_reads_like_the_same_run_in_sqlite(dev_folder: Path, sqlite_store: Path) -> None:
    """The same scenarios through SqliteSaver and through the dev server's saver: ckpt shows
    the same statuses, counts, next nodes, errors and latest values for both."""
    from ckpt.analysis.records import thread_record

    with PickleStore(dev_folder) as pickles, SqliteStore(sqlite_store) as sqlite:
        ours = {t.thread_id: thread_record(t) for t in pickles.threads()}
        theirs = {t.thread_id: thread_record(t) for t in sqlite.threads()}
        assert sorted(ours) == sorted(theirs)
        run_specific = {"checkpoint_id", "updated_at", "size", "metadata", "namespaces"}
        for thread_id, record in ours.items():
            other = theirs[thread_id]
            # Interrupt ids hash the task's namespace, whose task id is this run's own.
            for rec in (record, other):
                rec["interrupts"] = [{**i, "id": bool(i["id"])} for i in rec["interrupts"]]
                # Task ids hash the checkpoint id, this run's own too.
                rec["failed_tasks"] = [{**t, "id": bool(t["id"])} for t in rec["failed_tasks"]]
            assert record.keys() == other.keys()
            assert {k: v for k, v in record.items() if k not in run_specific} == {
                k: v for k, v in other.items() if k not in run_specific
            }, thread_id
            assert len(record["namespaces"]) == len(other["namespaces"])
            latest = pickles.latest_key(thread_id)
            other_latest = sqlite.latest_key(thread_id)
            assert latest is not None and other_latest is not None
            assert (
                pickles.load(latest).channel_values == sqlite.load(other_latest).channel_values
            ), thread_id


# -- the dev folder through the CLI ---------------------------------------------------------------


def test_threads_json(dev_folder: Path, manifest: dict[str, Any], oracles: dict[str, Any]) -> None:
    threads = run_json("threads", str(dev_folder), "--size")
    failed = run_json("show", manifest["fanout_error"], "--db", str(dev_folder))["tasks"]
    assert {t["thread_id"]: t["failed_tasks"] for t in threads}[manifest["fanout_error"]] == [
        t for t in failed if t["state"] == "failed"
    ]
    assert sorted(t["thread_id"] for t in threads) == sorted(manifest["threads"])
    counts = Counter(c["thread_id"] for c in oracles["dev_folder"]["checkpoints"])
    by_id = {t["thread_id"]: t for t in threads}
    for thread_id, thread in by_id.items():
        assert thread["checkpoints"] == counts[thread_id]
        assert thread["status"] == EXPECTED_STATUS[thread_id], thread
        assert thread["size"] > 0
        assert thread["metadata"]["thread_id"] == thread_id  # msgpack metadata, decoded
    for thread_id, metadata in manifest["chat_metadata"].items():
        # The dev server copies the run's metadata into the checkpoint's (format.md §7.3).
        assert by_id[thread_id]["metadata"]["graph_id"] == "fixtures"
        assert by_id[thread_id]["metadata"]["user_id"] == metadata["user_id"]
    assert by_id["pending-1"]["next"] == manifest["pending_next"]
    assert any("ValueError" in str(e) for e in by_id["fanout-1"]["errors"])
    assert by_id["approval-2"]["interrupts"]
    assert len(by_id["subgraph-1"]["namespaces"]) == 2
    assert by_id["support-1"]["writes"] > 0


def test_threads_human_table_and_what_to_open(
    dev_folder: Path, fixture_dir: Path, tmp_path: Path
) -> None:
    table = run("threads", str(dev_folder))
    assert table.exit_code == 0, table.stderr
    assert table.stderr == ""
    assert "support-1" in table.stdout and "interrupted" in table.stdout
    # The project folder, the .langgraph_api folder and each of its three files: one store.
    expected = run_json("threads", str(dev_folder))
    project = tmp_path / "project"  # a project folder whose only store is .langgraph_api
    project.mkdir()
    shutil.copytree(dev_folder, project / dev_folder.name)
    for spec in (project, *(dev_folder / name for name in DEV_FILES)):
        assert run_json("threads", str(spec)) == expected, spec
        with open_store(str(spec)) as store:
            assert isinstance(store, PickleStore)
            folder = project / dev_folder.name if spec == project else dev_folder
            assert store.location == str(folder)


def test_discovery_finds_the_dev_folder(
    dev_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    copy_dev_folder(dev_folder, project / ".langgraph_api")
    monkeypatch.chdir(project)
    assert discover() == str(project / ".langgraph_api")
    threads = run_json("threads")
    assert len(threads) == len(EXPECTED_STATUS)


def test_history_follows_the_parent_links(dev_folder: Path, oracles: dict[str, Any]) -> None:
    oracle = [c for c in oracles["dev_folder"]["checkpoints"] if c["thread_id"] == "fork-1"]
    records = run_json("history", "fork-1", "--db", str(dev_folder))
    assert {(r["checkpoint_id"], r["parent_checkpoint_id"]) for r in records} == {
        (c["checkpoint_id"], c["parent_checkpoint_id"]) for c in oracle
    }
    assert all("channel_values" not in r for r in records)
    tree = run("history", "subgraph-1", "--db", str(dev_folder))
    assert tree.exit_code == 0, tree.stderr
    assert "research:" in tree.stdout


def test_show_blobs_same_json_shape_as_sqlite(dev_folder: Path, sqlite_store: Path) -> None:
    ours = run_json("show", "support-1", "--db", str(dev_folder), "--blobs")
    theirs = run_json("show", "support-1", "--db", str(sqlite_store), "--blobs")
    assert ours.keys() == theirs.keys()
    assert ours["channel_values"] == theirs["channel_values"]
    messages = ours["channel_values"]["messages"]
    assert [m["type"] for m in messages[:4]] == ["human", "ai", "tool", "ai"]
    assert ours["pending_writes"] == [] and ours["next"] == []
    # The short id and a prefix of the full id name the same checkpoint.
    short = run_json("show", ours["checkpoint_id"][-8:], "--db", str(dev_folder))
    prefix = run_json("show", ours["checkpoint_id"][:30], "--db", str(dev_folder))
    assert short["checkpoint_id"] == prefix["checkpoint_id"] == ours["checkpoint_id"]
    waiting = run_json("show", "approval-2", "--db", str(dev_folder))
    assert [w["channel"] for w in waiting["pending_writes"]] == ["__interrupt__"]
    human = run("show", "support-1~2", "--db", str(dev_folder), "--blobs")
    assert human.exit_code == 0, human.stderr


def test_versions_show_blob_sizes(dev_folder: Path) -> None:
    matrix = run_json("versions", "support-1", "--db", str(dev_folder))
    messages = next(row for row in matrix["channels"] if row["channel"] == "messages")
    cells = [cell for cell in messages["versions"] if cell]
    assert cells and all(cell["blob"]["size"] > 0 for cell in cells)
    assert any(cell["shared_blob"] for cell in cells)


def test_diff_and_dump(dev_folder: Path, oracles: dict[str, Any]) -> None:
    diff = run("diff", "support-1~1", "support-1", "--db", str(dev_folder), "--json")
    assert diff.exit_code == ExitCode.DIFFERENT, diff.stderr
    patch = json.loads(diff.stdout)
    assert any(op["path"].startswith("/channel_values/messages") for op in patch)
    same = run("diff", "support-1", "support-1", "--db", str(dev_folder))
    assert same.exit_code == 0, same.stderr
    dumped = run("dump", str(dev_folder), "--ndjson", "--quiet")
    assert dumped.exit_code == 0, dumped.stderr
    records = [json.loads(line) for line in dumped.stdout.splitlines()]
    oracle = oracles["dev_folder"]["checkpoints"]
    assert [(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in records] == [
        (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"]) for c in oracle
    ]
    assert all(isinstance(r["channel_values"], dict) for r in records)
    latest = run_json("dump", str(dev_folder), "--latest", "--thread", "fork-1", "--quiet")
    assert [r["checkpoint_id"] for r in latest] == [
        oracles["dev_folder"]["manifest"]["fork_latest"]
    ]


def test_store_queries(dev_folder: Path, oracles: dict[str, Any]) -> None:
    oracle = oracles["dev_folder"]["checkpoints"]  # sorted by thread, namespace, id
    with PickleStore(dev_folder) as store:
        assert store.thread_exists("support-1") and not store.thread_exists("nope")
        some = oracle[5]
        key = CheckpointKey(some["thread_id"], some["checkpoint_ns"], some["checkpoint_id"])
        for fragment in (key.checkpoint_id, key.checkpoint_id[:25], key.checkpoint_id[-8:]):
            assert key in store.find(fragment)
        assert store.find("ffffffff-nope") == []
        assert len(store.find("1f")) == 50  # capped, as the interface says
        assert store.latest_key("nope") is None
        ids = sorted(c["checkpoint_id"] for c in oracle)
        window = DumpQuery(since_id=ids[10], until_id=ids[20])
        assert [c.checkpoint_id for c in store.iter_checkpoints(window, values=False)] == [
            c["checkpoint_id"] for c in oracle if ids[10] <= c["checkpoint_id"] <= ids[20]
        ]
        history = store.checkpoints("subgraph-1")
        assert [c.checkpoint_id for c in history] == sorted(c.checkpoint_id for c in history)
        assert len({c.checkpoint_ns for c in history}) == 2
        with pytest.raises(CkptError) as missing:
            store.load(CheckpointKey("support-1", "", "nope"))
        assert missing.value.exit_code == ExitCode.NOT_FOUND


@pytest.fixture(scope="module")
def encrypted_dev_folder(tmp_path_factory: pytest.TempPathFactory, encryption_key: bytes) -> Path:
    """The dev layout written through LangGraph's EncryptedSerializer (AES-EAX)."""
    folder = tmp_path_factory.mktemp("encrypted") / ".langgraph_api"
    serde = EncryptedSerializer.from_pycryptodome_aes(key=encryption_key)
    with fixture_warnings(), DevServerSaver(folder, serde=serde) as saver:
        run_scenarios(saver)
    return folder


def test_encrypted_dev_folder(encrypted_dev_folder: Path, encryption_key: bytes) -> None:
    folder = str(encrypted_dev_folder)
    locked = run("show", "support-1", "--blobs", "--json", "--db", folder)
    assert locked.exit_code == ExitCode.ENCRYPTED, locked.stderr
    assert "--aes-key" in locked.stderr
    key = encryption_key.decode()
    opened = run_json("show", "support-1", "--blobs", "--db", folder, "--aes-key", key)
    assert [m["type"] for m in opened["channel_values"]["messages"][:2]] == ["human", "ai"]
    assert opened["metadata"]["source"] == "loop"  # memory metadata is encrypted too
    threads = run_json("threads", folder, "--aes-key", key)
    assert {t["thread_id"]: t["status"] for t in threads} == EXPECTED_STATUS
    wrong = run("show", "support-1", "--blobs", "--db", folder, "--aes-key", "fedcba9876543210")
    assert wrong.exit_code == ExitCode.ENCRYPTED and "wrong" in wrong.stderr


# -- the single-file PersistentDict ---------------------------------------------------------------


def test_single_file_shows_what_it_has(memory_pkl: Path, oracles: dict[str, Any]) -> None:
    """Checkpoints and metadata as LangGraph saved them; no values, no writes (format.md §7.2)."""
    oracle = oracles["memory"]["checkpoints"]
    without = ("channels", "pending_writes")
    with PickleStore(memory_pkl) as store:
        assert len(store.notices) == 1
        assert "no channel values and no pending writes" in store.notices[0]
        checkpoints = list(store.iter_checkpoints(DumpQuery(), values=True))
        assert [{k: v for k, v in view(c).items() if k not in without} for c in checkpoints] == [
            {k: v for k, v in c.items() if k not in without} for c in oracle
        ]
        for checkpoint in checkpoints:
            assert checkpoint.channel_values is None
            assert checkpoint.value_channels is None
            assert checkpoint.pending_writes is None
            assert checkpoint.blobs is None


def test_single_file_through_the_cli(memory_pkl: Path, manifest: dict[str, Any]) -> None:
    result = run("threads", str(memory_pkl), "--size", "--json")
    assert result.exit_code == 0, result.stderr
    assert len(notes(result)) == 1 and "no channel values" in notes(result)[0]
    assert result.stderr.count("\n") == 1
    threads = json.loads(result.stdout)
    assert sorted(t["thread_id"] for t in threads) == sorted(manifest["threads"])
    assert all(t["writes"] == 0 and t["pending_writes"] == 0 for t in threads)
    # Without values nothing tells which nodes are due: the status is unknown, not guessed.
    assert {(t["status"], t["next"]) for t in threads} == {("unknown", None)}
    shown = run("show", "support-1", "--db", str(memory_pkl), "--blobs", "--json")
    assert shown.exit_code == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert record["channel_values"] is None and record["pending_writes"] is None
    assert record["channel_versions"] and record["metadata"]["step"] >= 0
    history = run("history", "fork-1", "--db", str(memory_pkl), "--json")
    assert history.exit_code == 0 and len(notes(history)) == 1


def test_current_sample_decodes_like_format_research(samples: Path) -> None:
    """tests/data/memory_persistentdict.pkl, against the values the format notes decoded
    from it (samples/memory_persistentdict_decoded.json)."""
    with PickleStore(samples / CURRENT_SAMPLE) as store:
        checkpoints = store.checkpoints("thread-1")
        assert len(checkpoints) == 11
        assert {c.checkpoint_ns for c in checkpoints} >= {""}
        first = checkpoints[0]
        assert first.metadata == {
            "source": "input",
            "step": -1,
            "parents": {},
            "purpose": "format-research",
            "user_id": "u-42",
        }
        assert first.channel_versions == {
            "__start__": "00000000000000000000000000000001.0.38097315099370466"
        }
        assert first.channel_values is None and first.pending_writes is None
        second = store.load(CheckpointKey("thread-1", "", "1f1ec733-5dab-6cf8-8000-082ec0aaed3a"))
        assert second.parent_checkpoint_id == first.checkpoint_id
        assert second.updated_channels == ["branch:to:agent", "messages"]
        assert second.versions_seen == {
            "__input__": {},
            "__start__": {"__start__": "00000000000000000000000000000001.0.38097315099370466"},
        }


def test_checkpoint_2_0_21_file_shows_its_inline_values(samples: Path) -> None:
    """Before blobs (checkpoint <= 2.0.21) values were inline in the body: they show, and
    they equal what LangGraph's own serializer makes of the same bytes."""
    path = samples / CP_2_0_21
    saver = load_memory_saver(path)  # LangGraph's own unpickler: a checked-in sample
    serde = JsonPlusSerializer()
    with PickleStore(path) as store:
        assert len(store.notices) == 1 and "no pending writes" in store.notices[0]
        assert "inline" in store.notices[0]
        count = 0
        for thread_id, namespaces in saver.storage.items():
            for ns, entries in namespaces.items():
                for checkpoint_id, (body, metadata, parent) in entries.items():
                    with quiet_serde_log():
                        expected = serde.loads_typed(body)
                        expected_metadata = serde.loads_typed(metadata)
                    mine = store.load(CheckpointKey(thread_id, ns, checkpoint_id))
                    assert mine.parent_checkpoint_id == parent
                    assert mine.v == expected["v"] == 1
                    assert mine.channel_values == normalize(expected["channel_values"])
                    sends = expected.get("pending_sends") or []  # this era's memory bodies
                    assert mine.pending_sends == normalize(sends)
                    assert mine.metadata == normalize(expected_metadata)
                    assert mine.pending_writes is None
                    count += 1
        assert count == 11
    result = run("show", "thread-1", "--db", str(path), "--blobs", "--json")
    assert result.exit_code == 0, result.stderr
    messages = json.loads(result.stdout)["channel_values"]["messages"]
    assert messages and all("__type__" in m for m in messages)


# -- a dev folder with files missing --------------------------------------------------------------


def test_folder_with_only_the_checkpoints_file(dev_folder: Path, tmp_path: Path) -> None:
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api", (STORAGE,))
    result = run("threads", str(folder), "--json")
    assert result.exit_code == 0, result.stderr
    (note,) = notes(result)
    assert WRITES in note and BLOBS in note and "pending writes" in note and "values" in note
    assert len(json.loads(result.stdout)) == len(EXPECTED_STATUS)
    shown = run_json("show", "support-1", "--db", str(folder), "--blobs")
    assert shown["channel_values"] is None and shown["pending_writes"] is None


def test_folder_without_the_writes_file(dev_folder: Path, tmp_path: Path) -> None:
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api", (STORAGE, BLOBS))
    result = run("show", "support-1", "--db", str(folder), "--blobs", "--json")
    assert result.exit_code == 0, result.stderr
    (note,) = notes(result)
    assert WRITES in note and "pending writes" in note and "values" not in note
    record = json.loads(result.stdout)
    assert record["pending_writes"] is None and record["channel_values"]["messages"]


def test_folder_without_the_blobs_file(dev_folder: Path, tmp_path: Path) -> None:
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api", (STORAGE, WRITES))
    result = run("show", "approval-2", "--db", str(folder), "--blobs", "--json")
    assert result.exit_code == 0, result.stderr
    (note,) = notes(result)
    assert BLOBS in note and "channel values" in note
    record = json.loads(result.stdout)
    assert record["channel_values"] is None and record["pending_writes"]


def test_folder_without_the_checkpoints_file(dev_folder: Path, tmp_path: Path) -> None:
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api", (WRITES, BLOBS))
    assert_one_line_error(run("threads", str(folder)), ExitCode.UNREADABLE, STORAGE, "missing")


def test_empty_folders(tmp_path: Path) -> None:
    assert_one_line_error(run("threads", str(tmp_path)), ExitCode.NO_STORE, "no checkpoint store")
    (tmp_path / ".langgraph_api").mkdir()
    assert_one_line_error(run("threads", str(tmp_path)), ExitCode.NO_STORE, ".langgraph_api")


# -- hostile and broken files ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_pickle_that_calls_os_system_is_refused_and_nothing_runs(
    tmp_path: Path, protocol: int
) -> None:
    marker = tmp_path / "pwned"
    data = hostile_store(marker, protocol)
    # The payload is live: an ordinary unpickler runs it (on a second marker).
    control = tmp_path / "control"
    pickle.Unpickler(io.BytesIO(hostile_store(control, protocol))).load()
    assert control.exists()
    path = tmp_path / "evil.pkl"
    path.write_bytes(data)
    result = run("threads", str(path))
    # One odd value does not hide the rest: the thread is listed, the value refused.
    assert_refused_value(result, "refused to load", "system", "nothing was run")
    assert "thread-1" in result.stdout
    assert not marker.exists()
    shown = run("history", "thread-1", "--db", str(path), "--json")
    assert shown.exit_code == ExitCode.REFUSED and not marker.exists()
    assert json.loads(shown.stdout)[0]["parent_checkpoint_id"] is None


@pytest.mark.parametrize("name", DEV_FILES)
def test_a_hostile_file_in_the_dev_folder_is_refused(
    dev_folder: Path, tmp_path: Path, name: str
) -> None:
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api")
    marker = tmp_path / "pwned"
    saver = load_memory_saver(*(folder / n for n in DEV_FILES))
    # Each file keeps its shape; one value in it is a call to os.system.
    storage = {t: {ns: dict(e) for ns, e in nss.items()} for t, nss in saver.storage.items()}
    ns_entries = storage["support-1"][""]
    latest = max(ns_entries)
    body, metadata, parent = ns_entries[latest]
    hostile = {
        DEV_FILES[0]: lambda: {
            **storage,
            "support-1": {"": {**ns_entries, latest: (body, ("msgpack", Payload(marker)), parent)}},
        },
        DEV_FILES[1]: lambda: {
            **dict(saver.writes),
            ("support-1", "", latest): {("t-evil", 0): ("t-evil", "messages", Payload(marker), "")},
        },
        DEV_FILES[2]: lambda: {
            **dict(saver.blobs),
            ("support-1", "", "messages", "9"): ("msgpack", Payload(marker)),
        },
    }[name]()
    (folder / name).write_bytes(pickle.dumps(hostile, 2))
    result = run("show", "support-1", "--db", str(folder), "--blobs")
    assert_refused_value(result, name, "system")
    assert "support-1" in result.stdout
    assert not marker.exists()


def test_other_globals_and_persistent_ids_are_refused(tmp_path: Path) -> None:
    cases = {
        "eval": b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1q\x00\x85R.",
        "ordered": pickle.dumps(OrderedDict(a=1), 2),
        "codec": b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00xX\x04\x00\x00\x00zlib\x86R.",
        "bytes_n": b"\x80\x02c__builtin__\nbytes\nJ\x00\xca\x9a;\x85R.",
        "persistent": b"\x80\x02X\x01\x00\x00\x00aQ.",
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(data)
        with pytest.raises(RefusedGlobal), path.open("rb") as handle:
            load_pickle(handle, source=str(path))
        assert_one_line_error(run("threads", str(path)), ExitCode.REFUSED, str(path))


def test_truncated_files_are_corrupt(dev_folder: Path, memory_pkl: Path, tmp_path: Path) -> None:
    single = tmp_path / "memory.pkl"
    single.write_bytes(memory_pkl.read_bytes()[:-100])
    assert_one_line_error(run("threads", str(single)), ExitCode.CORRUPT, "truncated")
    for name in DEV_FILES:
        folder = copy_dev_folder(dev_folder, tmp_path / name / ".langgraph_api")
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])
        result = run("show", "support-1", "--db", str(folder), "--blobs")
        assert_one_line_error(result, ExitCode.CORRUPT, name, "truncated or corrupt")
    for data in (b"", b"\x80", b"\x80\x02}q\x00(X\xff\xff\xff\x7f", b"not a pickle at all"):
        junk = tmp_path / "junk.pkl"
        junk.write_bytes(data)
        assert_one_line_error(run("threads", str(junk)), ExitCode.CORRUPT, "junk.pkl")


def test_other_pickles_are_not_checkpoint_stores(dev_folder: Path, tmp_path: Path) -> None:
    for name, value in {
        "list": [1, 2, 3],
        "ints": {1: 2},
        "flat": {"thread": "not a dict of namespaces"},
        "entry": {"thread": {"": {"1f0": ("not", "an", "entry", "tuple")}}},
    }.items():
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(pickle.dumps(value, 2))
        assert_one_line_error(run("threads", str(path)), ExitCode.UNREADABLE, str(path))
    # A blobs file given on its own (renamed): it holds values but no checkpoints.
    lone = tmp_path / "values.pckl"
    shutil.copyfile(dev_folder / BLOBS, lone)
    assert_one_line_error(run("threads", str(lone)), ExitCode.UNREADABLE, "no checkpoints")
    # The files swapped around: each is checked against the dict it should hold.
    folder = copy_dev_folder(dev_folder, tmp_path / "swapped" / ".langgraph_api")
    shutil.copyfile(dev_folder / WRITES, folder / BLOBS)
    result = run("show", "support-1", "--db", str(folder), "--blobs")
    assert_one_line_error(result, ExitCode.UNREADABLE, "channel values were expected")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the cap needs Linux")
def test_memory_bombs_fail_fast(dev_folder: Path, tmp_path: Path) -> None:
    """Ten bytes that make CPython's unpickler zero-fill a 4 GB memo, and a 1 TB length."""
    import resource

    bombs = {
        "memo": b"\x80\x02Nr\x00\x00\x00\x10.",  # LONG_BINPUT 2**28
        "length": b"\x80\x04\x8d\x00\x00\x00\x00\x00\x01\x00\x00.",  # BINUNICODE8 2**40
    }
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name, data in bombs.items():
        single = tmp_path / f"{name}.pkl"
        single.write_bytes(data)
        assert_one_line_error(run("threads", str(single)), ExitCode.CORRUPT, str(single))
        folder = copy_dev_folder(dev_folder, tmp_path / name / ".langgraph_api")
        (folder / WRITES).write_bytes(data)
        result = run("show", "support-1", "--db", str(folder))
        assert_one_line_error(result, ExitCode.CORRUPT, WRITES)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 512 * 1024


@pytest.mark.parametrize("as_key", [True, False], ids=["hash-bomb", "memo-bomb"])
@pytest.mark.parametrize("name", [*DEV_FILES, None])
def test_protocol_2_shared_reference_bombs_are_refused(
    dev_folder: Path, tmp_path: Path, name: str | None, as_key: bool
) -> None:
    """The scanners follow no memo reference to a tuple of tuples, and take no tuple of
    tuples as a key: such a file goes to the restricted unpickler, which counts its
    shared references and refuses it before building anything (exit 5)."""
    data = tuple_bomb(as_key=as_key)
    if name is None:
        store = tmp_path / "bomb.pkl"
        store.write_bytes(data)
    else:
        store = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api")
        (store / name).write_bytes(data)
    for command in (["threads", str(store), "--json"], ["show", "support-1", "--db", str(store)]):
        assert_one_line_error(run(*command), ExitCode.CORRUPT, "shared references")


def test_an_empty_dict_is_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "fresh.pkl"
    path.write_bytes(pickle.dumps({}, 2))
    result = run("threads", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == []


# -- the restricted unpickler and the blobs scanner -----------------------------------------------


def resolved(value: Any, source: PickleFile) -> Any:
    """`value` with every StoredText read back into the bytes load_pickle gives."""
    if isinstance(value, StoredText):
        return source.read(value)
    if isinstance(value, dict):
        return {k: resolved(v, source) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(resolved(v, source) for v in value)
    return value


@pytest.mark.parametrize("name", DEV_FILES)
def test_scanning_reads_what_unpickling_reads(dev_folder: Path, name: str) -> None:
    path = dev_folder / name
    with path.open("rb") as handle:
        expected = load_pickle(handle, source=str(path))
    scanned = PickleFile(str(path), source=str(path))
    try:
        assert resolved(scanned.load(), scanned) == expected
    finally:
        scanned.close()


blob_keys = st.tuples(st.text(max_size=12), st.text(max_size=40), st.text(max_size=20), st.text())
blob_values = st.tuples(st.sampled_from(["msgpack", "empty", "null", "bytes"]), st.binary())


@settings(max_examples=examples(75), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(blob_keys, blob_values, max_size=300),
    st.integers(min_value=0, max_value=3),
)
# CPython keeps one str per character: b"V" pickles through the same "V" as the key's
# version, so the key refers to the bytes' text through the memo.
@example({("", "", "", "0"): ("msgpack", b"V"), ("", "", "", "V"): ("msgpack", b"")}, 0)
def test_scanning_any_blobs_dict_matches_unpickling(
    blobs: dict[Any, Any], protocol_choice: int
) -> None:
    protocol = 2 if protocol_choice < 3 else 4  # 4 falls back to the unpickler
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / BLOBS
        path.write_bytes(pickle.dumps(blobs, protocol))
        expected = blobs  # bytes, whichever protocol stored them
        scanned = PickleFile(str(path), source=str(path))
        try:
            loaded = resolved(scanned.load(), scanned)
        finally:
            scanned.close()
        assert loaded == expected


@pytest.mark.parametrize("scan", ["blobs", "writes"])
def test_a_key_holding_long_bytes_is_read_as_bytes(tmp_path: Path, scan: str) -> None:
    """A long bytes value is left in the file where it is a value, but a key holding one
    (through the memo, or built in place) gets the bytes the restricted unpickler gives."""
    value = b"\xe9" * 100
    blobs = {("t", "", "c", value): ("msgpack", value), ("t", "", "d", "1"): ("msgpack", b"x")}
    path = tmp_path / BLOBS
    path.write_bytes(pickle.dumps(blobs, 2))
    with path.open("rb") as handle:
        expected = load_pickle(handle, source=str(path))
    assert ("t", "", "c", value) in expected
    if scan == "blobs":
        scanned = PickleFile(str(path), source=str(path))
        try:
            assert resolved(scanned.load(), scanned) == expected
        finally:
            scanned.close()
    else:
        with path.open("rb") as handle, pytest.raises(Unsupported):
            scan_kept(handle.fileno(), None, check=True)


def test_scanning_memo_numbered_out_of_order(tmp_path: Path) -> None:
    """The scanner's memo is a list (puts numbered 0, 1, 2... as pickle writes them): any
    other numbering is read by the restricted unpickler instead, with the same result."""
    # 'k' put as 1 and 'v' as 0, fetched back by 0 then 1: {'k': 'v', 'v': 'k'} (read in
    # order of appearance instead, {'k': 'v'}).
    data = b"\x80\x02}(X\x01\x00\x00\x00kq\x01X\x01\x00\x00\x00vq\x00h\x00h\x01u."
    path = tmp_path / BLOBS
    path.write_bytes(data)
    with path.open("rb") as handle:
        expected = load_pickle(handle, source=str(path))
    assert expected == {"k": "v", "v": "k"}
    scanned = PickleFile(str(path), source=str(path))
    try:
        assert scanned.load() == expected
    finally:
        scanned.close()


def test_a_memo_index_past_the_file_is_refused_before_unpickling(tmp_path: Path) -> None:
    """CPython's C unpickler sizes its memo array from the index a LONG_BINPUT names: a
    flipped byte in a 30 KB writes file asked for 252 MB (found by make fuzz). An index a
    file of that size cannot number is refused first, in the one line of a corrupt file;
    an odd but small numbering still reads (test above)."""
    path = tmp_path / "writes.pckl"
    path.write_bytes(b"\x80\x02}r\x00\x00\x00\x01.")  # {} put at 2**24
    with path.open("rb") as handle, pytest.raises(StoreCorrupt) as caught:
        load_pickle(handle, source=str(path))
    assert caught.value.message.endswith("(memo index 16,777,216 in a file of 9 bytes)")


@functools.cache
def dev_files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in DEV_FILES}


@contextmanager
def damaged_copy(
    folder: Path, name: str, cut: int | None, flips: list[tuple[int, int]]
) -> Iterator[Path]:
    """A copy of a dev folder with file `name` damaged: bytes set at `flips` (offsets
    wrapped to its size), then cut at `cut`."""
    files = dev_files(folder)
    data = bytearray(files[name])
    for where, byte in flips:
        data[where % len(data)] = byte
    if cut is not None:
        del data[cut % len(data) :]
    with tempfile.TemporaryDirectory() as work:
        target = Path(work) / ".langgraph_api"
        target.mkdir()
        for other, content in files.items():
            (target / other).write_bytes(bytes(data) if other == name else content)
        yield target


@settings(
    max_examples=examples(75, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    name=st.sampled_from(DEV_FILES),
    cut=st.none() | st.integers(min_value=0),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=4),
)
# A backslash into the writes file's first GLOBAL (`c_codecs` -> `c\codecs`): pickletools
# escape-decodes GLOBAL names, and its DeprecationWarning was raised as an error.
@example(name=WRITES, cut=None, flips=[(160, 92)])
def test_damaged_files_give_our_errors_only(
    dev_folder: Path, name: str, cut: int | None, flips: list[tuple[int, int]]
) -> None:
    """Any damage: the store either reads or fails with one of our errors, never another."""
    with damaged_copy(dev_folder, name, cut, flips) as target:
        try:
            with PickleStore(target) as store:
                for thread in store.threads():
                    for checkpoint in store.checkpoints(thread.thread_id, values=True):
                        json.dumps(checkpoint.metadata, default=str)
        except CkptError as exc:
            assert isinstance(exc, RefusedGlobal | StoreCorrupt) or exc.exit_code in {
                ExitCode.UNREADABLE,
                ExitCode.CORRUPT,
            }, exc
            assert "\n" not in exc.message


def _escape_damaged(data: bytes) -> bytes:
    """A pickle with a backslash before a letter in its first GLOBAL's module name."""
    at = data.index(b"c_codecs\nencode\n")
    return data[: at + 1] + b"\\" + data[at + 2 :]


def test_an_invalid_escape_is_damage_whatever_the_warning_filters(
    dev_folder: Path, tmp_path: Path
) -> None:
    """Decoding `\\c` warns (DeprecationWarning) in pickletools and in CPython's unpickler.
    pytest turns warnings into errors here, as PYTHONWARNINGS=error does for a user: the
    store still reads, or says it is damaged, and never reports an internal error."""
    target = tmp_path / ".langgraph_api"
    shutil.copytree(dev_folder, target)
    writes = target / WRITES
    writes.write_bytes(_escape_damaged(writes.read_bytes()))
    with PickleStore(target) as store:  # the writes file names a refused global now
        threads = list(store.threads())
        assert threads
        store.checkpoints(threads[0].thread_id, values=True)
    env = {**os.environ, "PYTHONWARNINGS": "error", "NO_COLOR": "1"}
    done = subprocess.run(
        [str(CKPT), "threads", str(target)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode in (ExitCode.OK, ExitCode.REFUSED), done.stderr
    assert "internal error" not in done.stderr and "Warning" not in done.stderr, done.stderr
    # The unpickler's own STRING opcode and the globals lister of `pickle`-tagged values.
    assert load_pickle(io.BytesIO(b"S'a\\cb'\n."), source="s", counted=True) == "a\\cb"
    assert pickle_globals(b"c\\codecs\nencode\n.") == ["\\codecs.encode"]


def test_stored_text_is_read_on_demand(dev_folder: Path) -> None:
    """Listing threads keeps no blobs index (only the latest checkpoints' entries); the
    index, built when a command needs it, holds spans of the file, read when shown."""
    with PickleStore(dev_folder) as store:
        list(store.threads())
        assert store._blobs_dict is None and store._blobs_file is None
        values = [v for v in (store._blobs or {}).values() if isinstance(v[1], StoredText)]
        assert store._blobs_file is not None
        assert values, "the blobs file was scanned, not unpickled"


def _outcome(target: Path, thread_id: str, fragment: str) -> tuple[Any, ...]:
    """What `threads`, `show` and `history` of one thread, and finding a checkpoint by a
    piece of its id (each in a store of its own) give on a store."""

    def show(store: PickleStore) -> Any:
        key = store.latest_key(thread_id)
        return store.load(key, values=True) if key else None

    return _read_each(
        target,
        lambda store: tuple(store.threads()),
        show,
        lambda store: tuple(store.checkpoints(thread_id)),
        lambda store: tuple(store.find(fragment)),
    )


def _read_each(target: Path, *reads: Callable[[PickleStore], Any]) -> tuple[Any, ...]:
    """Each read on a store of its own: what it gives, with the refused globals and the
    notices, or the error."""
    outcome: list[Any] = []
    for read in reads:
        try:
            with PickleStore(target) as store:
                got = read(store)
                outcome.append((got, sorted(set(store.refused)), tuple(store.notices)))
        except CkptError as exc:
            outcome.append((type(exc).__name__, exc.message))
    return tuple(outcome)


@settings(
    max_examples=examples(40, 200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    name=st.sampled_from(DEV_FILES),
    cut=st.none() | st.integers(min_value=0),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=3),
)
def test_threads_only_pass_lists_what_the_full_read_lists(
    dev_folder: Path, name: str, cut: int | None, flips: list[tuple[int, int]]
) -> None:
    """The threads-only pass (stores/pickle/lean.py), and the one-thread passes of show
    and history, give the same summaries, checkpoints, errors, refused globals and notices
    as reading the three dicts whole, on damaged files too."""
    with PickleStore(dev_folder) as pristine:
        thread_id = max(pristine.thread_ids())
        latest = pristine.latest_key(thread_id)
        assert latest is not None
        fragment = latest.checkpoint_id[:10]  # the checkpoints of a run share a prefix
    with damaged_copy(dev_folder, name, cut, flips) as target:
        lean = _outcome(target, thread_id, fragment)
        with full_read():
            full = _outcome(target, thread_id, fragment)
        assert lean == full


@contextmanager
def full_read() -> Iterator[None]:
    """PickleStore reading each file the full way (the restricted unpickler): neither the
    threads-only and one-thread passes nor the whole dicts with their bytes left in the
    file (stores/pickle/lean.py)."""
    import ckpt.stores.pickle.store as persistent_dict

    lean_storage, spanned = persistent_dict._lean_storage, persistent_dict._spanned
    persistent_dict._lean_storage = lambda path: None  # type: ignore[assignment]
    persistent_dict._spanned = lambda fd, role: None  # type: ignore[assignment]
    try:
        yield
    finally:
        persistent_dict._lean_storage, persistent_dict._spanned = lean_storage, spanned


def _whole_outcome(target: Path) -> tuple[Any, ...]:
    """What the commands that read every checkpoint (stats, types, dump, threads --size)
    get from a store: sizes, every checkpoint with its values, the raw rows with their
    bytes, health."""
    everything = DumpQuery()
    return _read_each(
        target,
        lambda store: (store.sizes(everything), tuple(store.threads(sizes=True))),
        lambda store: tuple(store.iter_checkpoints(everything, values=True)),
        lambda store: (
            tuple(store.raw_checkpoints(everything)),
            tuple(store.raw_writes(everything)),
            tuple(store.raw_blobs(everything)),
        ),
        lambda store: store.health(everything),
    )


@settings(
    max_examples=examples(25, 100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    name=st.sampled_from(DEV_FILES),
    cut=st.none() | st.integers(min_value=0),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=3),
)
def test_whole_dicts_with_spans_read_what_the_full_read_reads(
    dev_folder: Path, name: str, cut: int | None, flips: list[tuple[int, int]]
) -> None:
    """The storage and writes dicts with their bytes left in the file (_spanned) give the
    sizes, checkpoints, raw rows, health, errors, refused globals and notices of the
    dicts unpickled whole, on damaged files too."""
    with damaged_copy(dev_folder, name, cut, flips) as target:
        spanned = _whole_outcome(target)
        with full_read():
            full = _whole_outcome(target)
        assert spanned == full


def test_whole_dicts_keep_their_bytes_in_the_file(dev_folder: Path) -> None:
    """Read whole (stats, dump), the storage and writes dicts hold spans of their files,
    which read back to what the restricted unpickler gives and count the bytes they
    stand for, as the unpickled strings do."""
    storage_path, writes_path = (dev_folder / name for name in DEV_FILES[:2])
    with PickleStore(dev_folder) as store:
        storage, writes = store._storage, store._writes
        assert store._storage_file is not None and store._writes_file is not None
        spans = [
            pair[1]
            for namespaces in storage.values()
            for entries in namespaces.values()
            for entry in entries.values()
            for pair in entry[:2]
        ]
        assert spans and all(type(span) is StoredText for span in spans)
        with storage_path.open("rb") as handle:
            expected = load_pickle(handle, source=str(storage_path))
        assert _storage_index(resolved(storage, store._storage_file)) == _storage_index(expected)
        with writes_path.open("rb") as handle:
            expected_writes = load_pickle(handle, source=str(writes_path))
        assert writes is not None
        assert resolved(writes, store._writes_file) == expected_writes
        for span in spans:
            text = store._storage_file.read(span).decode("latin1")
            assert span.chars == len(text) and span.size == len(text.encode())


def _storage_index(loaded: dict[Any, Any]) -> dict[Any, Any]:
    """thread -> ns -> entries without empty namespaces (as the store keeps them)."""
    return {t: {ns: e for ns, e in n.items() if e} for t, n in loaded.items() if any(n.values())}


def test_stored_text_packs_its_span() -> None:
    span = StoredText.of(5_000_000_000, 300_000, 200_000)
    assert (span.start, span.size, span.chars) == (5_000_000_000, 300_000, 200_000)
    assert StoredText.of(7, 4).chars == 4  # not counted (the blobs file): its size
    assert type(span) is StoredText and type(int(span)) is int


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x05\x96" + (2**33).to_bytes(8, "little") + b"abc",
        b"\x80\x05}\x94(\x8c\x01a\x94\x96" + (2**33).to_bytes(8, "little") + b"abc",
        b"\x80\x05}\x94(\x8c\x01a\x94\x96" + (2**62).to_bytes(8, "little"),
    ],
)
def test_a_huge_bytearray_is_one_line_on_stderr(tmp_path: Path, data: bytes) -> None:
    """issue 29: BYTEARRAY8 with a huge length made CPython print `SystemError: deallocated
    bytearray object has exported buffers` before ckpt's own error."""
    path = tmp_path / "store.pkl"
    path.write_bytes(data)
    for command in (["threads", str(path)], ["dump", str(path), "-q"]):
        done = subprocess.run([str(CKPT), *command], capture_output=True, text=True, check=False)
        assert done.returncode == ExitCode.CORRUPT, done.stderr
        assert done.stderr.startswith("ckpt: error: ") and done.stderr.count("\n") == 1, done.stderr


# -- BUILD opcodes (issue 29, 6) -------------------------------------------------------------


class Built:
    """Pickles as `value` (a dict or a defaultdict, with its items) followed by BUILD with
    `state`, as CPython writes an object whose `__reduce__` returns a state. CPython's BUILD
    sets the state's names as attributes, which a dict does not have."""

    def __init__(self, value: dict[Any, Any], state: Any) -> None:
        self.value = value
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        value = self.value
        if isinstance(value, defaultdict):
            args: tuple[Any, ...] = (value.default_factory,)
            return (defaultdict, args, self.state, None, iter(value.items()))
        return (dict, (), self.state, None, iter(value.items()))


BUILD_STATES = {"slots": (None, {"x": 1}), "dict": {"x": 1}, "not-a-dict": 5}


def built_pickle(value: Any) -> bytes:
    """`value` pickled as PersistentDict does (protocol 2), with a BUILD in it."""
    data = pickle.dumps(value, 2)
    assert any(op.name == "BUILD" for op, _, _ in pickletools.genops(data))
    return data


def refused_builds(value: Any) -> list[str]:
    """The names of the refused records in a command's JSON that stand for a BUILD."""
    if isinstance(value, dict):
        if value.get("__ckpt__") == "refused" and "BUILD" in str(value.get("global")):
            return [str(value["global"])]
        return [name for part in value.values() for name in refused_builds(part)]
    if isinstance(value, list):
        return [name for part in value for name in refused_builds(part)]
    return []


def test_build_on_an_allowed_object_sets_nothing(tmp_path: Path) -> None:
    """BUILD on a defaultdict, a dict or one of the stubs: a refused value, not an error
    for the whole file, and no attribute set on anything (a stub was a bound method, whose
    `__dict__` is its function's: BUILD wrote into ckpt's own code)."""
    splice = b"ccollections\ndefaultdict\nN\x85R" + b"N}X\x01\x00\x00\x00xK\x01s\x86b"
    cases = {
        "defaultdict": b"\x80\x02}X\x01\x00\x00\x00k" + splice + b"s.",
        "empty-dict": b"\x80\x02}X\x01\x00\x00\x00k}N}X\x01\x00\x00\x00xK\x01s\x86bs.",
        "stub": b"\x80\x02}X\x01\x00\x00\x00kc_codecs\nencode\n}X\x01\x00\x00\x00xK\x01sbs.",
    }
    for name, data in cases.items():
        refused: list[str] = []
        loaded = load_pickle(io.BytesIO(data), source=name, refused=refused)
        assert list(loaded) == ["k"] and loaded["k"] == {}, name
        assert type(loaded["k"]).__name__ == "Refused", name
        assert len(refused) == 1 and "BUILD" in refused[0], refused
    assert "_codecs.encode" in refused[0]
    # The same object twice (the second a memo reference): refused both times.
    odd = Built(defaultdict(dict), (None, {"x": 1}))
    loaded = load_pickle(io.BytesIO(built_pickle({"a": odd, "b": [odd]})), source="twice")
    assert type(loaded["a"]).__name__ == "Refused" and loaded["b"][0] is loaded["a"]
    # What CPython's BUILD leaves unchanged (no state) still loads as itself.
    nothing = pickle.dumps({"k": Built(defaultdict(dict, a={}), (None, {}))}, 2)
    assert load_pickle(io.BytesIO(nothing), source="nothing") == {"k": {"a": {}}}


@pytest.mark.parametrize("state", BUILD_STATES.values(), ids=BUILD_STATES.keys())
@pytest.mark.parametrize("where", ["metadata", "body"])
def test_build_on_a_value_in_a_single_file(
    memory_pkl: Path, tmp_path: Path, where: str, state: Any
) -> None:
    """The value is refused, the thread shown (it was exit 5: the whole file corrupt)."""
    with memory_pkl.open("rb") as handle:
        storage = pickle.load(handle)  # the test's own fixture, the standard unpickler
    thread_id = next(iter(storage))
    entries = storage[thread_id][""]
    latest = max(entries)
    body, metadata, parent = entries[latest]
    odd = Built(defaultdict(dict), state)
    entries[latest] = (body, odd, parent) if where == "metadata" else (odd, metadata, parent)
    path = tmp_path / "memory.pkl"
    path.write_bytes(built_pickle(storage))
    threads = run("threads", str(path), "--json")
    assert_refused_value(threads, "BUILD")
    assert thread_id in [row["thread_id"] for row in json.loads(threads.stdout)]
    for command in (
        ("history", thread_id, "--db", str(path), "--json"),
        ("dump", str(path)),
    ):
        result = run(*command)
        assert_refused_value(result, "BUILD", "defaultdict")
        assert thread_id in result.stdout
    shown = run("show", thread_id, "--db", str(path), "--json")
    assert_refused_value(shown, "BUILD", "defaultdict")
    checkpoint = json.loads(shown.stdout)
    assert checkpoint["checkpoint_id"] == latest
    # The body is shown as `checkpoint` when it cannot be read.
    assert refused_builds(checkpoint["metadata" if where == "metadata" else "checkpoint"])


@pytest.mark.parametrize("where", ["thread", "namespace", "thread-global"])
def test_a_refused_thread_dict_is_refused_not_missing(
    memory_pkl: Path, tmp_path: Path, where: str
) -> None:
    """A refused value where a thread's or a namespace's dict goes: the file says so
    (exit 9), never "no thread or checkpoint matches" (exit 7, as a Refused is an empty
    dict, and empty threads are dropped). A BUILD on that dict sets nothing and is said
    (exit 9), and the thread is shown: the dict holds its checkpoints (issue 38); an
    object of a refused global there holds nothing that can be read."""
    with memory_pkl.open("rb") as handle:
        storage = pickle.load(handle)
    thread_id = next(iter(storage))
    marker = tmp_path / "pwned"
    if where == "thread":
        storage[thread_id] = Built(storage[thread_id], (None, {"x": 1}))
    elif where == "namespace":
        storage[thread_id][""] = Built(storage[thread_id][""], (None, {"x": 1}))
    else:
        storage[thread_id] = Payload(marker)
    path = tmp_path / "memory.pkl"
    path.write_bytes(pickle.dumps(storage, 2))
    for command in (
        ("show", thread_id, "--db", str(path)),
        ("history", thread_id, "--db", str(path)),
        ("threads", str(path)),
        ("dump", str(path)),
    ):
        result = run(*command)
        if where == "thread-global":
            assert_one_line_error(result, ExitCode.REFUSED, repr(thread_id), "nothing was run")
        else:
            assert_refused_value(result, "BUILD slot state", "nothing was run")
            assert thread_id in result.stdout
        assert "no thread" not in result.stderr
    assert not marker.exists()


class _BuiltWith:
    """Pickles as an empty dict whose BUILD state is `state` (what CPython's BUILD would
    then set on a dict, which it cannot: LangGraph's unpickler stops at the file)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (), self.state)


@pytest.mark.parametrize("where", ["single-file", "dev-folder", "with-threads"])
def test_a_refused_dict_of_threads_is_refused_not_missing(
    memory_pkl: Path, dev_folder: Path, tmp_path: Path, where: str
) -> None:
    """The dict that holds every thread under a refused BUILD (issue 46 §4): a thread not
    found is said to be possibly hidden by the refusal (exit 9), never "no thread or
    checkpoint matches" (exit 7); a thread that is there is shown."""
    marker = tmp_path / "pwned"
    shown: str | None = None
    if where == "with-threads":
        with memory_pkl.open("rb") as handle:
            storage = pickle.load(handle)
        shown = next(iter(storage))
        data = pickle.dumps(Built(storage, {"x": Payload(marker)}), 2)
    else:
        data = pickle.dumps(_BuiltWith(Payload(marker)), 2)
    if where == "dev-folder":
        path = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api")
        (path / DEV_FILES[0]).write_bytes(data)
    else:
        path = tmp_path / "memory.pkl"
        path.write_bytes(data)
    for command in ("show", "history", "diff"):
        result = run(command, "chat-1", "--db", str(path))
        assert_refused_value(result, "'chat-1'", "was refused", "BUILD state on a dict")
    dumped = run("dump", str(path), "--thread", "chat-1")
    assert_refused_value(dumped, "'chat-1'", "was refused")
    if shown is not None:
        assert_refused_value(run("show", shown, "--db", str(path)), "BUILD state on a dict")
    assert not marker.exists()
    # The refusal is the dict's, not a missing thread's: an ordinary file still says exit 7.
    plain = run("show", "chat-1", "--db", str(memory_pkl))
    assert plain.exit_code == ExitCode.NOT_FOUND, plain.stderr
    assert "no thread or checkpoint matches 'chat-1'" in plain.stderr


def _dev_with_build(dev_folder: Path, folder: Path, name: str, state: Any) -> tuple[str, str]:
    """A copy of the dev folder whose file `name` holds a BUILD where one value of
    support-1's latest checkpoint goes (its metadata, a pending write, its channel values);
    (the thread, that checkpoint's id)."""
    copy_dev_folder(dev_folder, folder)
    with (folder / STORAGE).open("rb") as handle:
        storage = pickle.load(handle)
    entries = storage["support-1"][""]
    latest = max(entries)
    odd = Built(defaultdict(dict), state)
    if name == STORAGE:
        body, _, parent = entries[latest]
        entries[latest] = (body, odd, parent)
        changed: Any = storage
    else:
        with (folder / name).open("rb") as handle:
            changed = pickle.load(handle)
        if name == WRITES:
            changed[("support-1", "", latest)] = {("t-odd", 0): ("t-odd", "messages", odd, "")}
        else:
            # Every value of the thread: as a whole (tag, bytes) pair or as its bytes.
            kept = [key for key, value in changed.items() if key[0] == "support-1"]
            for index, key in enumerate(kept):
                if changed[key][0] != "empty":
                    changed[key] = odd if index % 2 else (changed[key][0], odd)
    (folder / name).write_bytes(built_pickle(changed))
    return "support-1", latest


@pytest.mark.parametrize("state", BUILD_STATES.values(), ids=BUILD_STATES.keys())
@pytest.mark.parametrize("name", DEV_FILES)
def test_build_on_a_value_in_the_dev_folder(
    dev_folder: Path, tmp_path: Path, name: str, state: Any
) -> None:
    """Storage, writes or blobs file: the value is refused, the thread shown (exit 5 before)."""
    folder = tmp_path / ".langgraph_api"
    thread_id, latest = _dev_with_build(dev_folder, folder, name, state)
    shown = run("show", thread_id, "--db", str(folder), "--blobs", "--json")
    assert_refused_value(shown, "BUILD", name)
    checkpoint = json.loads(shown.stdout)
    assert checkpoint["thread_id"] == thread_id and checkpoint["checkpoint_id"] == latest
    assert refused_builds(checkpoint), checkpoint
    for command in (
        ("threads", str(folder), "--json"),
        ("history", thread_id, "--db", str(folder), "--json"),
        ("dump", str(folder)),
    ):
        result = run(*command)
        assert_refused_value(result, "BUILD", name)
        assert thread_id in result.stdout


def test_build_on_a_thread_in_the_dev_folder(dev_folder: Path, tmp_path: Path) -> None:
    """The thread's dict, its BUILD refused: the thread is shown, and the refusal said."""
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api")
    with (folder / STORAGE).open("rb") as handle:
        storage = pickle.load(handle)
    storage["support-1"] = Built(storage["support-1"], (None, {"default_factory": None, "x": 1}))
    (folder / STORAGE).write_bytes(built_pickle(storage))
    for command in ("show", "history"):
        result = run(command, "support-1", "--db", str(folder))
        assert_refused_value(result, "BUILD slot state on a defaultdict", STORAGE)
        assert "support-1" in result.stdout


# -- BUILD with slot state, wherever it goes (issue 38) ----------------------------------------

# (None, {"x": 1}) then BUILD: the slot state CPython's protocol 2 writes for an object of a
# class with __slots__; and (None, {"default_factory": dict}), which CPython's own BUILD
# applies to a defaultdict without a word.
SLOT_STATE = b"N}X\x01\x00\x00\x00xK\x01s\x86b"
FACTORY_STATE = b"N}X\x0f\x00\x00\x00default_factoryc__builtin__\ndict\ns\x86b"
_MEMO_PUTS = frozenset({"BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"})
Ops = list[tuple[Any, Any, int]]


def build_after(data: bytes, index: int, state: bytes = SLOT_STATE) -> bytes:
    """`data` with `state` and a BUILD right after the object the opcode at `index` makes
    (and the memo PUT that keeps it), as a pickle whose object had that state would be."""
    ops: Ops = list(pickletools.genops(data))
    after = index + 1
    if ops[after][0].name in _MEMO_PUTS:
        after += 1
    at = ops[after][2]
    return data[:at] + state + data[at:]


def _first(ops: Ops, start: int, name: str, arg: Any = None) -> int:
    """The index of the first opcode `name` (with `arg`, when given) from `start` on."""
    return next(
        i
        for i in range(start, len(ops))
        if ops[i][0].name == name and (arg is None or ops[i][1] == arg)
    )


def _element_before(ops: Ops, index: int) -> int:
    """The opcode that makes the last element of the tuple opcode `index` closes."""
    index -= 1
    while ops[index][0].name in _MEMO_PUTS:
        index -= 1
    return index


# Where in a storage file (the single file's, or the dev folder's first) a BUILD goes, as
# (thread, its latest checkpoint id) -> the opcode it follows.
Finder = Callable[[Ops, str, str], int]
STORAGE_PLACES: dict[str, Finder] = {
    "thread-id": lambda ops, t, latest: _first(ops, 0, "BINUNICODE", t),
    "thread-dict": lambda ops, t, latest: _first(ops, _first(ops, 0, "BINUNICODE", t), "REDUCE"),
    "namespace-dict": lambda ops, t, latest: _first(
        ops, _first(ops, 0, "BINUNICODE", t), "EMPTY_DICT"
    ),
    "checkpoint-id": lambda ops, t, latest: _first(ops, 0, "BINUNICODE", latest),
    "entry": lambda ops, t, latest: _first(ops, _first(ops, 0, "BINUNICODE", latest), "TUPLE3"),
    "parent-id": lambda ops, t, latest: _element_before(
        ops, _first(ops, _first(ops, 0, "BINUNICODE", latest), "TUPLE3")
    ),
    "bytes-arguments": lambda ops, t, latest: _first(ops, 0, "BINUNICODE", "latin1"),
}
# ...and in the dev folder's writes and blobs files, after the thread's first key.
KEPT_PLACES: dict[str, tuple[str, str, int]] = {
    "writes-key": (WRITES, "TUPLE3", 0),
    "writes-dict": (WRITES, "EMPTY_DICT", 0),
    "write": (WRITES, "TUPLE", 0),
    "blobs-key": (BLOBS, "TUPLE", 0),
    "blob": (BLOBS, "TUPLE2", 1),
}
# The places whose object a refused value can stand for: the checkpoint, write or channel
# value shows as refused. Elsewhere (a key, an id, a dict of checkpoints or of writes, a
# call's arguments) the object is read as it was built, and the refusal said all the same.
MARKED = frozenset({"entry", "write", "blob"})


def read_commands(store: Path, thread_id: str) -> dict[str, list[str]]:
    db = ["--db", str(store)]
    return {
        "threads": ["threads", str(store), "--json"],
        "history": ["history", thread_id, *db, "--json"],
        "show": ["show", thread_id, "--blobs", "--writes", "--json", *db],
        "show --blobs": ["show", thread_id, "--blobs", "--json", *db],
        "dump": ["dump", str(store)],
        "diff": ["diff", thread_id, *db, "--json"],
        "stats": ["stats", str(store), "--json"],
        "types": ["types", str(store), "--json"],
    }


def assert_read_with_build_refused(store: Path, thread_id: str, marked: bool) -> None:
    """Every read command reads the thread, says the refused BUILD (exit 9, one line),
    and shows a refused value where a refused value can stand."""
    for name, command in read_commands(store, thread_id).items():
        result = run(*command)
        assert_refused_value(result, "BUILD slot state", "nothing was run")
        assert "no thread" not in result.stderr, (name, result.stderr)
        if name in ("threads", "history", "show", "show --blobs", "dump"):
            assert thread_id in result.stdout, (name, result.stdout[:300])
        if name in ("show", "show --blobs"):
            assert json.loads(result.stdout)["thread_id"] == thread_id
        if name == "diff":
            assert isinstance(json.loads(result.stdout), list)
    dumped = run("dump", str(store), "--json", "--thread", thread_id)
    assert bool(refused_builds(json.loads(dumped.stdout))) == marked


def _latest(storage_file: Path, thread_id: str) -> str:
    with storage_file.open("rb") as handle:
        return max(pickle.load(handle)[thread_id][""])


@pytest.mark.parametrize("state", [SLOT_STATE, FACTORY_STATE], ids=["slots", "default_factory"])
@pytest.mark.parametrize("place", STORAGE_PLACES)
def test_slot_state_in_a_single_file(
    memory_pkl: Path, tmp_path: Path, place: str, state: bytes
) -> None:
    """issue 38: a BUILD with slot state made a thread "no thread or checkpoint matches"
    (exit 7), the file corrupt (exit 5: on a key, an id, a call's arguments), or was
    applied (exit 0: CPython's BUILD sets a defaultdict's default_factory). Wherever it
    goes, nothing of it is set, every command reads the thread and says so (exit 9)."""
    with memory_pkl.open("rb") as handle:
        thread_id = next(iter(pickle.load(handle)))
    data = memory_pkl.read_bytes()
    ops: Ops = list(pickletools.genops(data))
    index = STORAGE_PLACES[place](ops, thread_id, _latest(memory_pkl, thread_id))
    path = tmp_path / "memory.pkl"
    path.write_bytes(build_after(data, index, state))
    assert_read_with_build_refused(path, thread_id, place in MARKED)


@pytest.mark.parametrize("place", [*STORAGE_PLACES, *KEPT_PLACES])
def test_slot_state_in_each_dev_folder_file(dev_folder: Path, tmp_path: Path, place: str) -> None:
    """The same over the storage, writes and blobs files of a `langgraph dev` folder, as
    `show chat-1 --blobs --writes --json` read one (issue 38)."""
    folder = copy_dev_folder(dev_folder, tmp_path / ".langgraph_api")
    thread_id = "support-1"
    latest = _latest(folder / STORAGE, thread_id)
    if place in STORAGE_PLACES:
        name, index = STORAGE, STORAGE_PLACES[place]
        ops: Ops = list(pickletools.genops((folder / name).read_bytes()))
        at = index(ops, thread_id, latest)
    else:
        name, opcode, skip = KEPT_PLACES[place]
        ops = list(pickletools.genops((folder / name).read_bytes()))
        at = _first(ops, 0, "BINUNICODE", thread_id)
        for _ in range(skip + 1):
            at = _first(ops, at + 1, opcode)
    (folder / name).write_bytes(build_after((folder / name).read_bytes(), at))
    assert_read_with_build_refused(folder, thread_id, place in MARKED)


def test_a_defaultdict_keeps_its_factory(tmp_path: Path) -> None:
    """CPython's BUILD sets a defaultdict's default_factory from slot state; the restricted
    read refuses it, and the dict it was on keeps the factory it was built with."""
    from ckpt.stores.pickle.unpickler import build_target

    data = pickle.dumps({"t": defaultdict(dict, {"": {}})}, 2)
    ops: Ops = list(pickletools.genops(data))
    refused: list[str] = []
    loaded = load_pickle(
        io.BytesIO(build_after(data, _first(ops, 0, "REDUCE"), FACTORY_STATE)),
        source="factory",
        refused=refused,
    )
    assert refused == ["BUILD slot state on a defaultdict (in factory)"]
    assert type(loaded["t"]).__name__ == "Refused" and dict(loaded["t"]) == {"": {}}
    assert build_target(loaded["t"]).default_factory is dict


def test_diff_of_a_refused_entry_says_it_is_refused(memory_pkl: Path, tmp_path: Path) -> None:
    """A checkpoint whose whole entry is an object of a refused global has no parent id to
    read: diff says the refusal (exit 9), not "has no parent to compare with" (exit 7)."""
    with memory_pkl.open("rb") as handle:
        storage = pickle.load(handle)
    thread_id = next(iter(storage))
    entries = storage[thread_id][""]
    marker = tmp_path / "pwned"
    entries[max(entries)] = Payload(marker)
    path = tmp_path / "memory.pkl"
    path.write_bytes(pickle.dumps(storage, 2))
    result = run("diff", thread_id, "--db", str(path))
    assert_refused_value(result, "its parent cannot be read", repr(thread_id))
    assert not marker.exists()
