"""DynamoDBSaver stores (issue 43): langgraph-checkpoint-aws's DynamoDBSaver writing graph runs
into moto's DynamoDB and S3 (fixtures/dynamodb_stores.py), with gzip compression, payloads
offloaded to S3 and TTLs; ckpt's answer on every checkpoint compared with the saver's own
get_state / get_state_history, every read command leaving every item and object as it
was, and one line for each bad input. Every scenario through moto is the `long` run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.dynamodb_stores import (
    DEFAULT_SCENARIOS,
    LARGE_THREAD,
    build_dynamodb,
    graphs_for,
    item_snapshot,
)
from fixtures.fidelity import build_dynamodb_cases

from ckpt.errors import ExitCode
from fidelity import compare_case
from invoke import run

READ_COMMANDS_RUN = [
    ["threads"],
    ["history", "approval-2"],
    ["show", LARGE_THREAD, "--writes", "--json"],
    ["versions", "approval-1"],
    ["diff", "approval-1"],
    ["dump", "--thread", "fanout-1"],
    ["check", "--json"],
]
# Each reads every item and S3 object again: the `long` run.
WHOLE_STORE_COMMANDS = [["threads", "--json", "--size"], ["stats", "--json"], ["types", "--json"]]


def _report(case: Any, capsys: pytest.CaptureFixture[str]) -> Any:
    report = compare_case(case)
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert set(report.differences) <= {"empty channel shown as empty"}
    return report


def test_every_checkpoint_agrees_with_langgraph_offloaded_and_compressed(
    moto_server: Any, dynamodb_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = item_snapshot(moto_server, "sample", "offload")
    objects = [o for o in before if isinstance(o, tuple)]
    assert len(objects) == 2  # the large thread's write and the checkpoint after it
    assert any('"compression", {"S": "gzip"}' in o or "'compression', {'S': 'gzip'}" in o
               for o in before if isinstance(o, str))  # fmt: skip
    graphs = graphs_for(DEFAULT_SCENARIOS, large=True)
    (case,) = build_dynamodb_cases(tmp_path, moto_server, "sample", "offload", graphs=graphs)
    report = _report(case, capsys)
    assert report.compared["checkpoints"] >= 2 * 14 and report.compared["interrupts"] > 0
    assert item_snapshot(moto_server, "sample", "offload") == before  # ckpt changed nothing


@pytest.mark.long
def test_every_scenario_agrees_with_langgraph(
    moto_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_dynamodb(moto_server, "every")
    (case,) = build_dynamodb_cases(tmp_path, moto_server, "every")
    report = _report(case, capsys)
    assert report.compared["checkpoints"] >= 2 * 79 and report.compared["tasks"] > 50


@pytest.mark.parametrize(
    "commands", [READ_COMMANDS_RUN, pytest.param(WHOLE_STORE_COMMANDS, marks=pytest.mark.long)]
)
def test_every_read_command_reads_and_changes_nothing(
    moto_server: Any, dynamodb_url: str, commands: list[list[str]]
) -> None:
    before = item_snapshot(moto_server, "sample", "offload")
    for args in commands:
        done = run(*args, "--db", dynamodb_url)
        expected = ExitCode.DIFFERENT if args[0] == "diff" else ExitCode.OK
        assert done.exit_code == expected, (args, done.output)
        assert done.stdout, args
    shown = json.loads(run("show", LARGE_THREAD, "--blobs", "--db", dynamodb_url, "--json").stdout)
    assert len(shown["channel_values"]["note"]) > 500_000  # read back from S3, gunzipped
    assert item_snapshot(moto_server, "sample", "offload") == before


def test_threads_reads_keys_and_channels_only(
    dynamodb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`threads` through the API sends only DescribeTable and Scans projecting keys and a
    write's `channel`: no payload chunk, no S3 object (botocore's requests, counted on
    their way to moto). What the keys tell agrees with the listing that reads the latest
    payloads; what they cannot tell is `unknown`, never a guess."""
    import botocore.client

    import ckpt

    sent: list[tuple[str, dict[str, Any]]] = []
    make_api_call = botocore.client.BaseClient._make_api_call

    def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
        sent.append((operation, params))
        return make_api_call(client, operation, params)

    with monkeypatch.context() as patched:
        patched.setattr(botocore.client.BaseClient, "_make_api_call", counted)
        with ckpt.open(dynamodb_url) as store:
            listed = {t["thread_id"]: t for t in store.threads(sort="thread")}
    assert {op for op, _ in sent} == {"DescribeTable", "Scan"}, sent
    for op, params in sent:
        if op == "Scan":
            assert params["ProjectionExpression"] == "PK, SK, channel", params
    with ckpt.open(dynamodb_url) as store:
        loaded = {t["thread_id"]: t for t in store.threads(sort="step")}  # reads payloads
    assert set(listed) == set(loaded) and len(listed) >= 4
    statuses = set()
    for thread_id, ours in listed.items():
        full = loaded[thread_id]
        statuses.add(full["status"])
        told = full["status"] if full["status"] in ("error", "interrupted") else "unknown"
        assert ours["status"] == told, (thread_id, ours["status"], full["status"])
        for field in ("checkpoints", "namespaces", "checkpoint_id", "pending_writes"):
            assert ours[field] == full[field], (thread_id, field)
        assert ours["step"] is None and ours["next"] is None and full["next"] is not None
    assert {"done", "error", "interrupted"} <= statuses


def test_without_the_bucket_offloaded_payloads_are_named(dynamodb_url: str) -> None:
    url = dynamodb_url.replace("&bucket=offload", "")
    done = run("threads", "--db", url)  # keys only: no payload, no bucket needed
    assert done.exit_code == 0 and "name the bucket" not in done.stderr, done.output
    done = run("threads", "--sort", "step", "--db", url)  # the latest payloads read
    assert done.exit_code == 0, done.output
    assert "name the bucket" in done.stderr


def test_a_thread_copies_into_sqlite_as_ckpt_reads_it(dynamodb_url: str, tmp_path: Path) -> None:
    """DynamoDBSaver counts versions 1, 2, 3: the copy renumbers them (as from MongoDB)."""
    target = str(tmp_path / "copy.sqlite")
    done = run("copy", dynamodb_url, target, "--thread", "approval-2", "--apply")
    assert done.exit_code == ExitCode.UNSUPPORTED and "renumber" in done.stderr, done.output
    done = run("copy", dynamodb_url, target, "--thread", "approval-2", "--apply",
               "--renumber-versions")  # fmt: skip
    assert done.exit_code == 0, done.output
    for args in (["history", "approval-2"], ["show", "approval-2", "--writes"]):
        ours = json.loads(run(*args, "--db", target, "--json").stdout)
        theirs = json.loads(run(*args, "--db", dynamodb_url, "--json").stdout)
        assert _without_versions(ours) == _without_versions(theirs), args


def _without_versions(record: Any) -> Any:
    """A record without what a copy changes: bytes stored, renumbered versions."""
    skipped = ("size", "blobs", "channel_versions", "versions_seen")
    if isinstance(record, dict):
        return {k: _without_versions(v) for k, v in record.items() if k not in skipped}
    if isinstance(record, list):
        return [_without_versions(v) for v in record]
    return record


BAD_INPUTS = [
    ("table", ExitCode.UNREADABLE, "no table 'nowhere'"),
    ("endpoint", ExitCode.UNREADABLE, "no answer from the endpoint"),
    ("other-app", ExitCode.UNREADABLE, "not a DynamoDBSaver table"),
    ("option", ExitCode.USAGE, "unknown option 'bukket'"),
    ("credentials", ExitCode.UNREADABLE, "no AWS credentials"),
]


def test_bad_input_is_one_line_and_writes_nothing(
    moto_server: Any, dynamodb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = item_snapshot(moto_server, "sample", "offload")
    moto_server.client("dynamodb").create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for how, code, words in BAD_INPUTS:
        url = {
            "table": moto_server.url("nowhere"),
            "endpoint": "dynamodb://sample?region=us-east-1&endpoint_url=http://127.0.0.1:1",
            "other-app": moto_server.url("orders"),
            "option": dynamodb_url + "&bukket=x",
        }.get(how, dynamodb_url)
        with monkeypatch.context() as env:
            if how == "credentials":
                for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
                    env.delenv(name, raising=False)
                env.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
                env.setenv("AWS_CONFIG_FILE", "/nonexistent")
                env.setenv("AWS_EC2_METADATA_DISABLED", "true")
            done = run("threads", "--db", url)
        assert done.exit_code == code, (how, done.output)
        assert words in done.stderr and done.stderr.count("\n") == 1, (how, done.stderr)
        assert "Traceback" not in done.stderr
    assert item_snapshot(moto_server, "sample", "offload") == before


@pytest.mark.long
@pytest.mark.postgres
def test_threads_copy_renumbered_into_sqlite_and_postgres_and_resume(
    moto_server: Any, dynamodb_url: str, tmp_path: Path, pg_new_database: Any
) -> None:
    """The sample copied with renumbered versions reads as DynamoDBSaver reads it (versions
    aside) and resumes in SqliteSaver and PostgresSaver."""
    import sqlite3
    from contextlib import closing

    from fixtures.dynamodb_stores import listing_saver
    from fixtures.oracle import quiet_serde_log
    from fixtures.state_oracle import state_oracle
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from pg import url_of
    from resume import resumed_demo

    graphs = graphs_for(DEFAULT_SCENARIOS, large=True)
    sqlite_target, pg_target = str(tmp_path / "copy.sqlite"), pg_new_database()
    for spec in (sqlite_target, url_of(pg_target)):
        done = run("copy", dynamodb_url, spec, "--all", "--apply", "--renumber-versions")
        assert done.exit_code == 0, done.output
    with quiet_serde_log():
        saver = listing_saver(moto_server, "sample", "offload")
        theirs = _without_versions(state_oracle(saver, graphs(saver), store="", kind=""))
        with closing(sqlite3.connect(sqlite_target, check_same_thread=False)) as conn:
            copy = SqliteSaver(conn)
            assert _without_versions(state_oracle(copy, graphs(copy), store="", kind="")) == theirs
            first = resumed_demo(copy, only=("approval-2", "fanout-1"))
        with PostgresSaver.from_conn_string(pg_target) as copy:
            assert _without_versions(state_oracle(copy, graphs(copy), store="", kind="")) == theirs
            assert resumed_demo(copy, only=("approval-2", "fanout-1")) == first
    assert "ok" in {result for result, _ in first.values()}
