"""The threads, history, show and versions commands on real SqliteSaver stores of every era."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fixtures.graphs import SCENARIO_STATUS as EXPECTED_STATUS

from ckpt.errors import ExitCode
from invoke import run, run_json
from store_files import folder_hashes, unexpected_changes

LEGACY = [
    "legacy_lg0.1.19_sqlite.db",
    "legacy_lg0.2.16_cp1.0.9_sqlite.db",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db",
    "sqlite_checkpoints.db",
    "sqlite_delta.db",
]


def oracle_checkpoints(oracles: dict[str, Any], name: str = "chat") -> list[dict[str, Any]]:
    checkpoints: list[dict[str, Any]] = oracles[name]["checkpoints"]
    return checkpoints


# -- threads ------------------------------------------------------------------------------------


def test_threads_json_matches_what_langgraph_wrote(
    sqlite_store: Path, manifest: dict[str, Any], oracles: dict[str, Any]
) -> None:
    threads = run_json("threads", str(sqlite_store))
    assert sorted(t["thread_id"] for t in threads) == sorted(manifest["threads"])
    counts = Counter(c["thread_id"] for c in oracle_checkpoints(oracles))
    for thread in threads:
        assert thread["checkpoints"] == counts[thread["thread_id"]], thread["thread_id"]
        assert thread["status"] == EXPECTED_STATUS[thread["thread_id"]], thread
        assert thread["size"] is None  # not measured unless --size
    by_id = {t["thread_id"]: t for t in threads}
    assert by_id["pending-1"]["next"] == manifest["pending_next"]
    assert any("ValueError" in str(e) for e in by_id["fanout-1"]["errors"])
    assert by_id["approval-2"]["interrupts"], by_id["approval-2"]
    assert len(by_id["subgraph-1"]["namespaces"]) > 1
    assert by_id["support-1"]["metadata"]["user_id"] == "u-1"
    assert by_id["support-1"]["step"] is not None and by_id["support-1"]["source"] == "loop"


def test_threads_name_the_failed_task_and_its_input(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    """A failed thread's record carries the failed tasks as `show --json` has them, and the
    table's detail reads `worker[1]({"item": ...}): ValueError(...)`."""
    thread_id = manifest["fanout_error"]
    (thread,) = run_json("threads", str(sqlite_store), "--status", "error")
    shown = run_json("show", thread_id, "--db", str(sqlite_store))
    failed = [t for t in shown["tasks"] if t["state"] == "failed"]
    assert thread["thread_id"] == thread_id and failed
    assert thread["failed_tasks"] == failed
    assert thread["errors"] == [t["error"] for t in failed]
    (task,) = failed
    assert task["send_index"] is not None and isinstance(task["input"], dict)  # a Send's arg
    label = f"{task['name']}[{task['send_index']}]"
    wide = run("threads", str(sqlite_store), env={"COLUMNS": "200"}).stdout
    line = next(line for line in wide.splitlines() if line.startswith(thread_id))
    assert line.endswith(f"{label}({json.dumps(task['input'])}): {task['error']}")
    # Narrow: the error before the input.
    narrow = run("threads", str(sqlite_store), env={"COLUMNS": "100"}).stdout
    line = next(line for line in narrow.splitlines() if line.startswith(thread_id))
    assert f"  {label}: {task['error'][:20]}" in line
    for other in run_json("threads", str(sqlite_store)):
        assert (other["failed_tasks"] != []) == (other["status"] == "error"), other


def test_threads_latest_is_the_newest_root_checkpoint(
    sqlite_store: Path, oracles: dict[str, Any]
) -> None:
    newest: dict[str, str] = {}
    for cp in oracle_checkpoints(oracles):
        if cp["checkpoint_ns"] == "":
            newest[cp["thread_id"]] = max(newest.get(cp["thread_id"], ""), cp["checkpoint_id"])
    for thread in run_json("threads", str(sqlite_store)):
        assert thread["checkpoint_id"] == newest[thread["thread_id"]]


def test_threads_ndjson_sort_limit_filters(sqlite_store: Path) -> None:
    result = run("threads", str(sqlite_store), "--ndjson", "--sort", "thread", "--limit", "3")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["thread_id"] for t in lines] == ["approval-1", "approval-2", "delta-1"]
    only = run_json("threads", str(sqlite_store), "--where", "user_id=u-1")
    assert sorted(t["thread_id"] for t in only) == ["support-1", "support-3"]
    errors = run_json("threads", str(sqlite_store), "--status", "error")
    assert [t["thread_id"] for t in errors] == ["fanout-1"]
    bad = run("threads", str(sqlite_store), "--where", "novalue")
    assert bad.exit_code == ExitCode.USAGE


def test_threads_human_table(sqlite_store: Path) -> None:
    result = run("threads", str(sqlite_store))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    for thread_id, status in EXPECTED_STATUS.items():
        line = next(line for line in result.stdout.splitlines() if line.startswith(thread_id))
        assert status in line
    assert "\x1b[" not in result.stdout  # no colour when not a terminal
    assert "┃" not in result.stdout and "━" not in result.stdout  # no boxes either


def test_store_from_db_option_env_and_discovery(
    sqlite_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("threads", "--db", str(sqlite_store), "--json").exit_code == 0
    assert run("threads", "--json", env={"CKPT_DB": str(sqlite_store)}).exit_code == 0
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(sqlite_store, folder / "graph.sqlite")
    (folder / "notes.db").write_bytes(b"")  # an empty file is not a checkpoint store
    monkeypatch.chdir(folder)
    assert run("threads", "--json").exit_code == 0
    shutil.copy(sqlite_store, folder / "second.db")
    result = run("threads", "--json")
    assert result.exit_code == ExitCode.NO_STORE
    assert "graph.sqlite" in result.stderr and "second.db" in result.stderr
    monkeypatch.chdir(tmp_path)
    result = run("threads")
    assert result.exit_code == ExitCode.NO_STORE
    assert result.stderr.count("\n") == 1


# -- history ------------------------------------------------------------------------------------


def test_history_json_follows_langgraph_parent_links(
    sqlite_store: Path, oracles: dict[str, Any]
) -> None:
    for thread_id in ("support-1", "fork-1", "subgraph-1"):
        nodes = run_json("history", thread_id, "--db", str(sqlite_store))
        expected = {
            (c["checkpoint_ns"], c["checkpoint_id"]): c["parent_checkpoint_id"]
            for c in oracle_checkpoints(oracles)
            if c["thread_id"] == thread_id
        }
        got = {(n["checkpoint_ns"], n["checkpoint_id"]): n["parent_checkpoint_id"] for n in nodes}
        assert got == expected


def test_history_tree_shows_forks_subgraphs_and_errors(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    fork = run("history", manifest["fork"], "--db", str(sqlite_store))
    assert fork.exit_code == 0, fork.stderr
    assert "fork" in fork.stdout
    for child in manifest["fork_children"]:
        assert child[-8:] in fork.stdout
    sub = run("history", manifest["subgraph"], "--db", str(sqlite_store))
    assert "subgraph " in sub.stdout
    failed = run("history", manifest["fanout_error"], "--db", str(sqlite_store))
    assert "ValueError" in failed.stdout
    waiting = run("history", manifest["interrupt_waiting"], "--db", str(sqlite_store))
    assert "⏸" in waiting.stdout


def test_history_unknown_thread(sqlite_store: Path) -> None:
    result = run("history", "no-such-thread", "--db", str(sqlite_store))
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == ""
    assert result.stderr.startswith("ckpt: error:") and result.stderr.count("\n") == 1


# -- show ---------------------------------------------------------------------------------------


def test_show_selectors(sqlite_store: Path, oracles: dict[str, Any]) -> None:
    chain = [
        c
        for c in oracle_checkpoints(oracles)
        if c["thread_id"] == "support-1" and c["checkpoint_ns"] == ""
    ]
    latest = max(chain, key=lambda c: c["checkpoint_id"])
    db = ("--db", str(sqlite_store))
    assert run_json("show", "support-1", *db)["checkpoint_id"] == latest["checkpoint_id"]
    assert (
        run_json("show", latest["checkpoint_id"], *db)["checkpoint_id"] == latest["checkpoint_id"]
    )
    assert (
        run_json("show", latest["checkpoint_id"][-8:], *db)["checkpoint_id"]
        == latest["checkpoint_id"]
    )
    parent = run_json("show", "support-1~1", *db)
    assert parent["checkpoint_id"] == latest["parent_checkpoint_id"]
    two_back = run_json("show", "support-1~2", *db)
    assert two_back["checkpoint_id"] == parent["parent_checkpoint_id"]
    assert run("show", "support-1~999", *db).exit_code == ExitCode.NOT_FOUND
    assert run("show", "ffffffff-nope", *db).exit_code == ExitCode.NOT_FOUND
    ambiguous = run("show", "1", *db)
    assert ambiguous.exit_code == ExitCode.AMBIGUOUS
    assert "matches" in ambiguous.stderr and ambiguous.stderr.count("\n") == 1


def test_show_blobs_decodes_the_conversation(sqlite_store: Path) -> None:
    record = run_json("show", "support-1", "--blobs", "--db", str(sqlite_store))
    messages = record["channel_values"]["messages"]
    kinds = [m["type"] for m in messages]
    assert {"human", "ai", "tool"} <= set(kinds)
    assert any(m.get("tool_calls") for m in messages if m["type"] == "ai")
    assert all(m["__type__"].startswith("langchain_core.messages.") for m in messages)
    human = run("show", "support-1", "--blobs", "--db", str(sqlite_store))
    assert human.exit_code == 0, human.stderr
    assert "→ lookup_order(" in human.stdout


def test_show_channel_and_writes(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    db = ("--db", str(sqlite_store))
    only = run_json("show", "support-1", "--channel", "messages", *db)
    assert list(only["channel_values"]) == ["messages"]
    missing = run("show", "support-1", "--channel", "nope", *db)
    assert missing.exit_code == ExitCode.NOT_FOUND
    failed = run_json("show", manifest["fanout_error"], "--writes", *db)
    channels = [w["channel"] for w in failed["pending_writes"]]
    assert "__error__" in channels and "results" in channels
    error = next(w for w in failed["pending_writes"] if w["channel"] == "__error__")
    assert "ValueError" in error["value"]
    waiting = run("show", manifest["interrupt_waiting"], *db)
    assert "waiting on:" in waiting.stdout


def test_show_rich_types(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    record = run_json("show", manifest["rich"], "--blobs", "--db", str(sqlite_store))
    text = json.dumps(record)
    assert "NaN" not in text.replace('"NaN"', "")  # strict JSON: NaN only as a marked string


def test_full_and_cut(sqlite_store: Path) -> None:
    cut = run("show", "support-1", "--blobs", "--db", str(sqlite_store))
    full = run("show", "support-1", "--blobs", "--full", "--db", str(sqlite_store))
    assert full.exit_code == cut.exit_code == 0
    assert len(full.stdout) >= len(cut.stdout)


# -- versions -----------------------------------------------------------------------------------


def test_versions_marks_the_steps_that_moved_messages(sqlite_store: Path) -> None:
    matrix = run_json("versions", "support-1", "--db", str(sqlite_store))
    row = next(r for r in matrix["channels"] if r["channel"] == "messages")
    moved = [c for c in row["versions"] if c and c["moved"]]
    assert moved and any("model" in c["by"] or "tools" in c["by"] for c in moved)
    human = run("versions", "support-1", "--db", str(sqlite_store))
    assert human.exit_code == 0 and "messages" in human.stdout


# -- encrypted ----------------------------------------------------------------------------------


def test_encrypted_store(encrypted_store: Path, encryption_key: bytes) -> None:
    listed = run("threads", str(encrypted_store), "--json")
    assert listed.exit_code == 0  # metadata is plain: threads list without a key
    threads = json.loads(listed.stdout)
    assert {t["thread_id"] for t in threads} >= {"support-1", "fanout-1"}
    assert "threads hold encrypted values" in listed.stderr and listed.stderr.count("\n") == 1
    assert {t["status"] for t in threads} <= {"unknown", "interrupted", "error"}
    wrong_key = run("threads", str(encrypted_store), "--aes-key", "fedcba9876543210")
    assert wrong_key.exit_code == ExitCode.ENCRYPTED and "wrong" in wrong_key.stderr
    with_key = run_json("threads", str(encrypted_store), "--aes-key", encryption_key.decode())
    assert {t["thread_id"]: t["status"] for t in with_key} == {
        t: s for t, s in EXPECTED_STATUS.items() if t in {x["thread_id"] for x in with_key}
    }
    locked = run("show", "support-1", "--blobs", "--json", "--db", str(encrypted_store))
    assert locked.exit_code == ExitCode.ENCRYPTED
    assert "encrypted" in locked.stdout and "--aes-key" in locked.stderr
    key = encryption_key.decode()
    opened = run_json(
        "show", "support-1", "--blobs", "--db", str(encrypted_store), "--aes-key", key
    )
    assert opened["channel_values"]["messages"]
    via_env = run(
        "show", "support-1", "--blobs", "--db", str(encrypted_store), env={"LANGGRAPH_AES_KEY": key}
    )
    assert via_env.exit_code == 0
    wrong = run(
        "show",
        "support-1",
        "--blobs",
        "--db",
        str(encrypted_store),
        "--aes-key",
        "fedcba9876543210",
    )
    assert wrong.exit_code == ExitCode.ENCRYPTED and "wrong" in wrong.stderr


# -- every era ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LEGACY)
def test_every_schema_era(samples: Path, name: str, tmp_path: Path) -> None:
    store = tmp_path / name
    shutil.copy(samples / name, store)
    threads = run_json("threads", str(store))
    assert threads
    for thread in threads:
        assert thread["checkpoints"] > 0
        nodes = run_json("history", thread["thread_id"], "--db", str(store))
        assert len(nodes) == thread["checkpoints"]
        record = run_json("show", thread["thread_id"], "--blobs", "--db", str(store))
        assert record["channel_versions"]
        assert isinstance(record["channel_values"], dict)


# -- never change a store -----------------------------------------------------------------------


@pytest.mark.parametrize("name", LEGACY)
def test_reading_never_changes_the_store(samples: Path, name: str, tmp_path: Path) -> None:
    store = tmp_path / name
    shutil.copy(samples / name, store)
    before = folder_hashes(tmp_path)
    threads = run_json("threads", str(store))
    for thread in threads:
        run("history", thread["thread_id"], "--db", str(store))
        run("show", thread["thread_id"], "--blobs", "--db", str(store))
        run("versions", thread["thread_id"], "--db", str(store))
    # Same bytes; SQLite made at most the -shm and an empty -wal (docs/security.md).
    assert unexpected_changes(tmp_path, before) == []
    header = store.read_bytes()[:20]
    assert (header[18], header[19]) == (2, 2)  # still in WAL mode (file format bytes)


def test_reads_while_an_application_writes(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "live.sqlite"
    shutil.copy(sqlite_store, store)
    writer = sqlite3.connect(store)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute(
        "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, "
        "metadata) SELECT 'copy', checkpoint_ns, checkpoint_id, type, checkpoint, metadata "
        "FROM checkpoints WHERE thread_id = 'support-3'"
    )
    during = run_json("threads", str(store))  # the writer holds its transaction open
    assert "copy" not in {t["thread_id"] for t in during}
    writer.commit()
    after = run_json("threads", str(store))
    assert "copy" in {t["thread_id"] for t in after}
    writer.close()


# -- bad input ----------------------------------------------------------------------------------


def _bad_inputs(samples: Path, tmp_path: Path) -> dict[str, tuple[Path, int]]:
    text = tmp_path / "text.db"
    text.write_text("not a database\n")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes((samples / "sqlite_checkpoints.db").read_bytes()[:5000])
    unrelated = tmp_path / "unrelated.db"
    with sqlite3.connect(unrelated) as conn:
        conn.execute("create table users(id integer primary key)")
    return {
        "missing": (tmp_path / "missing.sqlite", ExitCode.NO_STORE),
        "text": (text, ExitCode.UNREADABLE),
        "empty": (empty, ExitCode.UNREADABLE),
        "truncated": (truncated, ExitCode.CORRUPT),
        "unrelated": (unrelated, ExitCode.UNREADABLE),
    }


@pytest.mark.parametrize("kind", ["missing", "text", "empty", "truncated", "unrelated"])
def test_bad_input_is_one_line_and_an_exit_code(samples: Path, tmp_path: Path, kind: str) -> None:
    path, code = _bad_inputs(samples, tmp_path)[kind]
    existed = path.exists()
    for args in (["threads", str(path)], ["show", "x", "--db", str(path)]):
        result = run(*args)
        assert result.exit_code == code, (kind, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("ckpt: error:") and result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
    assert path.exists() == existed  # a missing store is never created


# -- the program ----------------------------------------------------------------------------------


def test_version_and_help() -> None:
    from ckpt import __version__

    assert run("--version").stdout.strip() == f"ckpt {__version__}"
    result = run("--help")
    assert result.exit_code == 0 and "threads" in result.stdout


# -- next and status agree with LangGraph's own StateSnapshot -------------------------------------

GRAPHS = {
    "support-1": "chat_graph",
    "approval-1": "approval_graph",
    "approval-2": "approval_graph",
    "fanout-1": "fanout_graph",
    "subgraph-1": "research_graph",
    "subgraph-2": "research_graph",
    "fork-1": "notes_graph",
    "pending-1": "notes_graph",
    "rich-1": "rich_graph",
    "delta-1": "delta_graph",
}


@pytest.mark.parametrize("thread_id", sorted(GRAPHS))
def test_next_matches_langgraph_get_state(
    sqlite_store: Path, tmp_path: Path, thread_id: str
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    import ckpt.demo

    copy = tmp_path / "copy.sqlite"  # LangGraph's saver migrates what it opens
    shutil.copy(sqlite_store, copy)
    with sqlite3.connect(copy, check_same_thread=False) as conn:
        graph = getattr(ckpt.demo, GRAPHS[thread_id])(SqliteSaver(conn))
        snapshot = graph.get_state({"configurable": {"thread_id": thread_id}})
        # get_state with the latest id: every task due there, finished or not.
        at_latest = graph.get_state(snapshot.config)
    thread = next(t for t in run_json("threads", str(sqlite_store)) if t["thread_id"] == thread_id)
    assert thread["next"] == list(snapshot.next)
    assert [i["id"] for i in thread["interrupts"]] == [i.id for i in snapshot.interrupts]
    shown = run_json("show", thread_id, "--db", str(sqlite_store))
    assert shown["next"] == list(at_latest.next)
    assert [t["id"] for t in shown["tasks"]] == [t.id for t in at_latest.tasks]


def test_versions_last(sqlite_store: Path) -> None:
    matrix = run_json("versions", "support-1", "--last", "3", "--db", str(sqlite_store))
    assert len(matrix["checkpoints"]) == 3 and matrix["earlier_checkpoints"] == 12
    assert all(len(row["versions"]) == 3 for row in matrix["channels"])
    full = run_json("versions", "support-1", "--db", str(sqlite_store))
    assert full["earlier_checkpoints"] == 0 and len(full["checkpoints"]) == 15
    assert full["checkpoints"][-3:] == matrix["checkpoints"]
