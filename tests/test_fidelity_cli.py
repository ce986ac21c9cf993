"""What the CLI says about the cases LangGraph users hit: historical `next`, answered
interrupts, DeltaChannels, node names with commas, damaged values, threads without a
root checkpoint, encrypted Postgres without or with a wrong key, a `langgraph dev` folder
with bytearray values. Stores are written by LangGraph itself (fixtures/)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fixtures import agent_stores
from fixtures.build import ENCRYPTION_KEY, fixture_warnings
from fixtures.graphs import run_scenarios
from fixtures.js_stores import node_dsn
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from ckpt.errors import ExitCode
from invoke import run, run_json

KEY = ENCRYPTION_KEY.decode()


@pytest.fixture(scope="session")
def agents_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("agents") / "agents.sqlite"
    manifest = agent_stores.build_sqlite(path)
    return path, dict(manifest)


@pytest.fixture(scope="session")
def agents_dev(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("agents-dev")
    agent_stores.build_dev_folder(project)
    return project / ".langgraph_api"


@pytest.fixture(scope="session")
def encrypted_postgres(pg_new_database: Callable[[], str]) -> str:
    """The demo scenarios through PostgresSaver with LangGraph's AES EncryptedSerializer."""
    dsn = pg_new_database()
    serde = EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY)
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.serde = serde
        saver.setup()
        run_scenarios(saver)
    return node_dsn(dsn)


# -- next at a checkpoint, and what is left for the thread -----------------------------------


def test_show_of_an_old_checkpoint_names_the_tasks_that_ran(sqlite_store: Path) -> None:
    shown = run("show", "fanout-1~1", "--db", str(sqlite_store))
    assert shown.exit_code == 0, shown.stderr
    assert "plan (done)" in shown.stdout  # not "nothing: the run is finished"
    record = run_json("show", "fanout-1~1", "--db", str(sqlite_store), "--json")
    assert record["next"] == ["plan"] and record["tasks"][0]["state"] == "done"


def test_latest_failed_step_lists_every_worker_and_what_is_left(sqlite_store: Path) -> None:
    record = run_json("show", "fanout-1", "--db", str(sqlite_store), "--json")
    assert record["next"] == ["worker", "worker", "worker"]
    states = [t["state"] for t in record["tasks"]]
    assert states.count("done") == 2 and states.count("failed") == 1
    failed = next(t for t in record["tasks"] if t["state"] == "failed")
    assert failed["input"] == {"item": "invoice-2"} and "invoice-2" in failed["error"]
    thread = next(t for t in run_json("threads", str(sqlite_store)) if t["thread_id"] == "fanout-1")
    assert thread["next"] == ["worker"] and thread["status"] == "error"
    human = run("show", "fanout-1", "--db", str(sqlite_store)).stdout
    assert "still to run: worker" in human


def test_answered_interrupts_say_so_with_their_ids(sqlite_store: Path) -> None:
    history = run_json("history", "approval-1", "--db", str(sqlite_store), "--json")
    raised = [i for record in history for i in record["interrupts"]]
    assert raised and all(i["answered"] and i["id"] for i in raised)
    tree = run("history", "approval-1", "--db", str(sqlite_store)).stdout
    assert "⏸ approve" in tree and "answered" in tree
    waiting = next(
        t for t in run_json("threads", str(sqlite_store)) if t["thread_id"] == "approval-2"
    )
    assert waiting["status"] == "interrupted"
    assert waiting["interrupts"][0]["id"] and not waiting["interrupts"][0]["answered"]
    text = run("threads", str(sqlite_store)).stdout
    assert waiting["interrupts"][0]["id"] in text


# -- DeltaChannels ------------------------------------------------------------------------------


def test_delta_channel_between_snapshots_is_rebuilt(sqlite_store: Path) -> None:
    shown = run("show", "delta-1~1", "-c", "log", "--db", str(sqlite_store))
    assert shown.exit_code == 0, shown.stderr
    assert "(none)" not in shown.stdout and "rebuilt from the snapshot" in shown.stdout
    record = run_json("show", "delta-1~1", "-c", "log", "--db", str(sqlite_store), "--json")
    delta = record["delta_channels"]["log"]
    assert delta["reducer"] == "concat" and delta["complete"]
    assert delta["value"] == ["seed", "entry-1", "entry-2", "entry-3", "entry-4"]
    assert delta["writes"] and delta["snapshot_checkpoint_id"]
    snapshot = run("show", "delta-1~2", "-c", "log", "--db", str(sqlite_store)).stdout
    assert "delta channel snapshot" in snapshot and "__ckpt__" not in snapshot


def test_message_delta_channels_and_exit_durability(
    agents_sqlite: tuple[Path, dict[str, Any]],
) -> None:
    path, manifest = agents_sqlite
    for thread in manifest["delta_threads"]:
        for record in run_json("dump", str(path), "--thread", thread, "--json"):
            for channel, delta in (record.get("delta_channels") or {}).items():
                assert delta["complete"], (thread, channel)
                assert "value" in delta, (thread, channel, delta["reducer"])
    history = run("history", manifest["exit_durability"][0], "--db", str(path)).stdout
    assert "exit-mode stub" in history


# -- names, damage, missing roots ---------------------------------------------------------------


def test_node_names_with_commas_and_unicode_read_as_stored(
    agents_sqlite: tuple[Path, dict[str, Any]],
) -> None:
    path, manifest = agents_sqlite
    with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as conn:
        stored = dict(
            conn.execute(
                "SELECT thread_id, json_group_array(DISTINCT checkpoint_ns) FROM checkpoints "
                "GROUP BY thread_id"
            ).fetchall()
        )
    for thread in run_json("threads", str(path)):
        assert thread["namespaces"] == sorted(json.loads(stored[thread["thread_id"]]))
    names = {
        task["name"]
        for thread in ("names-done", "names-interrupt")
        if thread in manifest["threads"]
        for record in run_json("history", thread, "--db", str(path), "--json")
        for task in record["tasks"] or []
    }
    assert any("," in name for name in names) and any(not name.isascii() for name in names)


def test_a_damaged_write_keeps_its_bytes(sqlite_store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "damaged.sqlite"
    shutil.copy(sqlite_store, copy)
    with closing(sqlite3.connect(copy)) as conn:
        conn.execute("UPDATE writes SET value = X'92c1' WHERE thread_id = 'approval-2'")
        conn.commit()
    record = run_json("show", "approval-2", "--db", str(copy), "--json")
    damaged = [
        w["value"]
        for w in record["pending_writes"]
        if isinstance(w["value"], dict) and w["value"].get("__ckpt__") == "undecodable"
    ]
    assert damaged and damaged[0]["base64"] == "ksE=" and damaged[0]["error"]


def test_a_thread_with_only_subgraph_checkpoints(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "only-sub.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        saver = SqliteSaver(conn)
        from langgraph.checkpoint.base import empty_checkpoint

        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "child:abc"}}
        saver.put(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})  # type: ignore[arg-type]
    thread = run_json("threads", str(path))[0]
    assert thread["checkpoint_id"] is None and thread["namespaces"] == ["child:abc"]
    assert thread["status"] == "unknown"
    shown = run("show", "t", "--db", str(path))
    assert shown.exit_code == ExitCode.NOT_FOUND
    assert "root namespace" in shown.stderr and "child:abc" in shown.stderr


# -- encrypted Postgres -------------------------------------------------------------------------


@pytest.mark.postgres
def test_encrypted_postgres_without_a_key_says_unknown(encrypted_postgres: str) -> None:
    listed = run("threads", encrypted_postgres, "--json")
    assert listed.exit_code == 0, listed.stderr
    threads = {t["thread_id"]: t for t in json.loads(listed.stdout)}
    # The fan-out's Sends are an encrypted blob: which workers are due cannot be told.
    assert threads["fanout-1"]["next"] is None
    assert threads["fanout-1"]["status"] == "error"  # the __error__ write's channel is plain
    assert "encrypted" in listed.stderr and "--aes-key" in listed.stderr
    keyed = {t["thread_id"]: t for t in run_json("threads", encrypted_postgres, "--aes-key", KEY)}
    assert keyed["fanout-1"]["next"] == ["worker"] and keyed["pending-1"]["next"] == ["step_b"]


@pytest.mark.parametrize("command", [["threads"], ["history", "support-1", "--db"]])
@pytest.mark.postgres
def test_encrypted_postgres_with_a_wrong_key_is_exit_6(
    encrypted_postgres: str, command: list[str]
) -> None:
    result = run(*command, encrypted_postgres, "--aes-key", "fedcba9876543210")
    assert result.exit_code == ExitCode.ENCRYPTED, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "wrong" in result.stderr


def test_wrong_key_is_exit_6_on_every_store_kind(encrypted_store: Path) -> None:
    commands = (
        ["threads", str(encrypted_store)],
        ["show", "support-1", "--db", str(encrypted_store)],
    )
    for command in commands:
        result = run(*command, "--aes-key", "fedcba9876543210")
        assert result.exit_code == ExitCode.ENCRYPTED, command


# -- the langgraph dev folder ---------------------------------------------------------------------


def test_dev_folder_with_bytearray_values_reads(agents_dev: Path) -> None:
    listed = run("threads", str(agents_dev), "--json")
    assert listed.exit_code == 0, listed.stderr
    found = []
    for thread in json.loads(listed.stdout):
        for record in run_json("dump", str(agents_dev), "--thread", thread["thread_id"], "--json"):
            for value in (record.get("channel_values") or {}).values():
                if isinstance(value, dict) and value.get("__ckpt__") == "bytes":
                    found.append(value)
    assert found, "no bytearray value came back as bytes"


# -- a functional-API @task that raises -------------------------------------------------------


def _explode_flow(saver: Any) -> Any:
    from langgraph.func import entrypoint, task

    @task
    def explode(i: int) -> int:
        raise KeyError(f"no such key {i}")

    @entrypoint(checkpointer=saver)
    def flow(n: int) -> int:
        return explode(n).result()

    return flow


@pytest.mark.postgres
def test_a_failed_task_and_its_entrypoint_are_two_errors_as_langgraph_says(
    tmp_path: Path, pg_new_database: Callable[[], str]
) -> None:
    """The entrypoint fails with the @task it awaited: LangGraph's task statuses (read over
    the latest checkpoint's writes) report both, on every saver; so do ckpt's `errors`, and
    the table names both tasks on one line."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.pregel._task_status import read_task_statuses

    config: Any = {"configurable": {"thread_id": "explode-1"}}
    path = tmp_path / "explode.sqlite"
    dsn = pg_new_database()
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        stores: list[tuple[str, Any]] = [(str(path), SqliteSaver(conn))]
        with PostgresSaver.from_conn_string(dsn) as pg_saver:
            pg_saver.setup()
            stores.append((node_dsn(dsn), pg_saver))
            for spec, saver in stores:
                with pytest.raises(KeyError):
                    _explode_flow(saver).invoke(2, config)
                latest = saver.get_tuple(config)
                statuses = read_task_statuses(latest.pending_writes)
                expected = sorted(s.error for s in statuses.values() if s.error)
                assert len(expected) == 2
                (thread,) = run_json("threads", spec)
                assert thread["status"] == "error"
                assert sorted(thread["errors"]) == expected
                assert {t["id"] for t in thread["failed_tasks"]} == set(statuses)
                table = run("threads", spec).stdout
                assert "flow, flow → task #0: KeyError('no such key 2')" in table, table
