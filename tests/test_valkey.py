"""ValkeySaver stores (issue 43): langgraph-checkpoint-aws's ValkeySaver writing the scenarios
into a private server (fixtures/valkey_stores.py); ckpt's answer on every checkpoint
compared with the saver's own get_state / get_state_history, every read command leaving
every key as it was, keys with TTLs, and one line for each bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.fidelity import build_valkey_cases
from fixtures.graphs import SCENARIO_STATUS
from fixtures.redis_server import RedisServer
from fixtures.valkey_stores import build_valkey, key_snapshot, valkey_url

from ckpt.errors import ExitCode
from fidelity import compare_case
from invoke import run

READ_COMMANDS_RUN = [
    ["threads"],
    ["threads", "--json", "--size"],
    ["history", "subgraph-1"],
    ["show", "approval-1", "--writes", "--json"],
    ["versions", "support-1"],
    ["diff", "approval-1"],
    ["dump", "--thread", "delta-1"],
    ["stats", "--json"],
    ["types", "--json"],
    ["check", "--json"],
]


def test_every_valkey_checkpoint_agrees_with_langgraph(
    valkey_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (case,) = build_valkey_cases(tmp_path, valkey_url)
    before = key_snapshot(valkey_url)
    report = compare_case(case)
    assert key_snapshot(valkey_url) == before  # ckpt changed nothing
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["checkpoints"] >= 2 * 79  # every checkpoint, at and history
    assert report.compared["tasks"] > 50 and report.compared["interrupts"] > 0
    assert set(report.differences) <= {"empty channel shown as empty"}


def test_encrypted_values_agree_with_langgraph(
    valkey_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ValkeySaver with EncryptedSerializer (database 1 of the same server): read with the
    key, every checkpoint agrees; without it, the values show as encrypted."""
    from fixtures.build import ENCRYPTION_KEY
    from fixtures.state_oracle import demo_graphs
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    url = valkey_url.rsplit("/", 1)[0] + "/1"
    serde = EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY)
    build_valkey(url, scenarios=("approval",), serde=serde)

    def graphs(saver: Any) -> dict[str, Any]:
        return {t: g for t, g in demo_graphs(saver).items() if t.startswith("approval")}

    (case,) = build_valkey_cases(tmp_path, url, graphs=graphs, aes_key=ENCRYPTION_KEY)
    report = compare_case(case)
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["values"] > 10 and report.compared["interrupts"] > 0
    done = run("show", "approval-1", "--blobs", "--db", url, "--json")
    assert "encrypted" in done.stdout and "Refund" not in done.stdout


def test_agentcore_checkpoints_agree_with_langgraph(
    valkey_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AgentCoreValkeySaver (database 2 of the same server; its keys found without
    `prefix`): every checkpoint of a sample agrees with the saver's own answers."""
    from fixtures.state_oracle import demo_graphs
    from fixtures.valkey_stores import build_agentcore

    url = valkey_url.rsplit("/", 1)[0] + "/2"
    build_agentcore(url, scenarios=("approval", "subgraph"))

    def graphs(saver: Any) -> dict[str, Any]:
        return {t: g for t, g in demo_graphs(saver).items() if t.split("-")[0] in
                ("approval", "subgraph")}  # fmt: skip

    (case,) = build_valkey_cases(tmp_path, url, graphs=graphs, agentcore=True)
    before = key_snapshot(url)
    report = compare_case(case)
    assert key_snapshot(url) == before
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["checkpoints"] >= 2 * 20 and report.compared["interrupts"] > 0
    done = run("threads", "--db", url, "--prefix", "agentcore", "--json")
    assert done.exit_code == 0 and len(json.loads(done.stdout)) == 4, done.output


def test_every_read_command_reads_and_changes_nothing(valkey_url: str) -> None:
    before = key_snapshot(valkey_url)
    for args in READ_COMMANDS_RUN:
        done = run(*args, "--db", valkey_url)
        expected = ExitCode.DIFFERENT if args[0] == "diff" else ExitCode.OK
        assert done.exit_code == expected, (args, done.output)
        assert done.stdout, args
    listed = json.loads(run("threads", "--json", "--db", valkey_url).stdout)
    assert {t["thread_id"]: t["status"] for t in listed} == dict(SCENARIO_STATUS)
    assert key_snapshot(valkey_url) == before


def test_ttl_keys_read_and_a_lapsed_checkpoint_is_gone() -> None:
    """A store written with `ttl`: every key expires; one checkpoint whose key lapsed
    (deleted here, as its expiry would) is left out as ValkeySaver's list() leaves it."""
    from fixtures.valkey_stores import listing_saver
    from valkey import Valkey

    with RedisServer(modules=False) as server:
        url = valkey_url(server.url)
        build_valkey(url, ttl=3600)
        snapshot = key_snapshot(url)
        assert all(expires for _, _, expires in snapshot.values())
        client = Valkey.from_url(url)
        (lapsed,) = client.lrange("thread:{approval-1}:", 2, 2)
        client.delete(f"checkpoint:{{approval-1}}::{lapsed.decode()}")
        client.close()
        saver = listing_saver(url)
        theirs = [
            t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "approval-1"}})
        ]
        done = run("history", "approval-1", "--db", url, "--json")
        assert done.exit_code == 0, done.output
        ours = [c["checkpoint_id"] for c in json.loads(done.stdout)]
        assert sorted(ours) == sorted(theirs) and lapsed.decode() not in ours


def test_a_thread_copies_into_sqlite_and_resumes(valkey_url: str, tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    from fixtures.oracle import quiet_serde_log
    from fixtures.state_oracle import demo_graphs, state_oracle
    from fixtures.valkey_stores import listing_saver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from resume import resumed_demo

    target = tmp_path / "copy.sqlite"
    done = run("copy", valkey_url, str(target), "--all", "--apply")
    assert done.exit_code == 0, done.output
    with quiet_serde_log():
        saver = listing_saver(valkey_url)
        theirs = state_oracle(saver, demo_graphs(saver), store="", kind="")["snapshots"]
        with closing(sqlite3.connect(target, check_same_thread=False)) as conn:
            copy = SqliteSaver(conn)
            ours = state_oracle(copy, demo_graphs(copy), store="", kind="")["snapshots"]
            resumed = resumed_demo(copy)
    assert ours == theirs
    assert "ok" in {result for result, _ in resumed.values()}


@pytest.mark.parametrize(
    ("how", "code", "words"),
    [
        ("port", ExitCode.UNREADABLE, "cannot connect"),
        ("password", ExitCode.UNREADABLE, "cannot connect"),
        ("other-app", ExitCode.UNREADABLE, "not a ValkeySaver store"),
        ("prefix", ExitCode.UNSUPPORTED, "AgentCoreValkeySaver"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    valkey_url: str, how: str, code: ExitCode, words: str
) -> None:
    before = key_snapshot(valkey_url)
    extra: list[str] = []
    if how == "port":
        url = "valkey://127.0.0.1:1/0"
    elif how == "password":
        url = valkey_url.replace("valkey://", "valkey://:secret@")
    elif how == "other-app":
        url = valkey_url.rsplit("/", 1)[0] + "/3"
        from valkey import Valkey

        client = Valkey.from_url(url)
        client.set("session:abc", "another app's key")
        client.close()
    else:
        url, extra = valkey_url, ["--prefix", "something"]
    done = run("threads", "--db", url, *extra)
    assert done.exit_code == code, done.output
    assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "secret" not in done.stderr and "Traceback" not in done.stderr
    assert key_snapshot(valkey_url) == before


@pytest.mark.long
@pytest.mark.postgres
def test_every_thread_copies_into_postgres_and_resumes(
    valkey_url: str, pg_new_database: Any
) -> None:
    """Every scenario copied into PostgresSaver reads as ValkeySaver reads it and resumes."""
    from fixtures.oracle import quiet_serde_log
    from fixtures.state_oracle import demo_graphs, state_oracle
    from fixtures.valkey_stores import listing_saver
    from langgraph.checkpoint.postgres import PostgresSaver

    from pg import url_of
    from resume import resumed_demo

    target = pg_new_database()
    done = run("copy", valkey_url, url_of(target), "--all", "--apply")
    assert done.exit_code == 0, done.output
    with quiet_serde_log():
        saver = listing_saver(valkey_url)
        theirs = state_oracle(saver, demo_graphs(saver), store="", kind="")["snapshots"]
        with PostgresSaver.from_conn_string(target) as copy:
            ours = state_oracle(copy, demo_graphs(copy), store="", kind="")["snapshots"]
            resumed = resumed_demo(copy)
    assert ours == theirs
    assert "ok" in {result for result, _ in resumed.values()}
