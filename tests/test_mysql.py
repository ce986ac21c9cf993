"""MySQL saver stores (issue 43): PyMySQLSaver (langgraph-checkpoint-mysql 3.0.0) writing the
scenarios into a private MariaDB (fixtures/mysql_server.py); ckpt's answer on every
checkpoint compared with the saver's own get_state / get_state_history, every read command
leaving every row as it was, `copy` into SQLite and Postgres resuming as the source would,
one line for each bad input, and the threads MariaDB's group_concat_max_len hides from the
saver."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.fidelity import build_mysql_cases
from fixtures.graphs import SCENARIO_STATUS
from fixtures.mysql_stores import table_snapshot

from ckpt.errors import ExitCode
from fidelity import compare_case
from invoke import run

READ_COMMANDS_RUN = [
    ["threads"],
    ["threads", "--json", "--size"],
    ["history", "subgraph-1"],
    ["show", "approval-1", "--writes", "--json"],
    ["show", "rich-1", "--blobs"],
    ["versions", "support-1"],
    ["diff", "approval-1"],
    ["dump", "--thread", "delta-1"],
    ["stats", "--json"],
    ["types", "--json"],
    ["check", "--json"],
]


def test_every_mysql_checkpoint_agrees_with_langgraph(
    mysql_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (case,) = build_mysql_cases(tmp_path, mysql_url)
    before = table_snapshot(mysql_url)
    report = compare_case(case)
    assert table_snapshot(mysql_url) == before  # ckpt changed nothing
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["checkpoints"] >= 2 * 79  # every checkpoint, at and history
    assert report.compared["tasks"] > 50 and report.compared["values"] > 100
    assert report.compared["interrupts"] > 0
    assert set(report.differences) <= {"empty channel shown as empty"}


def test_encrypted_values_agree_with_langgraph(
    mariadb: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyMySQLSaver with EncryptedSerializer: blobs and writes encrypted, the JSON parts
    plain (as in Postgres); with the key every checkpoint agrees."""
    from fixtures.build import ENCRYPTION_KEY
    from fixtures.mysql_stores import build_mysql
    from fixtures.state_oracle import demo_graphs
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    url = mariadb.database("encrypted")
    serde = EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY)
    build_mysql(url, scenarios=("approval",), serde=serde)

    def graphs(saver: Any) -> dict[str, Any]:
        return {t: g for t, g in demo_graphs(saver).items() if t.startswith("approval")}

    (case,) = build_mysql_cases(tmp_path, url, graphs=graphs, aes_key=ENCRYPTION_KEY)
    report = compare_case(case)
    with capsys.disabled():
        print(f"\n{case['name']}: compared {dict(report.compared)}")
    assert not report.mismatches, "\n".join(report.mismatches[:60])
    assert report.compared["interrupts"] > 0
    types = {tag for (tag,) in mariadb.execute("SELECT DISTINCT type FROM checkpoint_writes",
                                                "encrypted")}  # fmt: skip
    assert "msgpack+aes" in types, types


def test_the_saver_writes_the_documented_layout(mysql_url: str) -> None:
    tables = table_snapshot(mysql_url)
    assert sorted(v for (v,) in tables["checkpoint_migrations"]) == list(range(22))
    from ckpt.stores import open_store

    with open_store(mysql_url) as store:
        assert store.kind == "mysql" and store.era == "mysql"
        facts = store.saver()
        assert facts.saver == "PyMySQLSaver" and facts.langgraph == "reads"
        assert "group_concat_max_len (1,048,576 bytes here)" in facts.note
        assert {t.thread_id for t in store.threads()} == set(SCENARIO_STATUS)


def test_every_read_command_reads_and_changes_nothing(mysql_url: str) -> None:
    before = table_snapshot(mysql_url)
    for args in READ_COMMANDS_RUN:
        done = run(*args, "--db", mysql_url)
        expected = ExitCode.DIFFERENT if args[0] == "diff" else ExitCode.OK
        assert done.exit_code == expected, (args, done.output)
        assert done.stdout, args
    listed = json.loads(run("threads", "--json", "--db", mysql_url).stdout)
    assert {t["thread_id"]: t["status"] for t in listed} == dict(SCENARIO_STATUS)
    assert table_snapshot(mysql_url) == before


def test_the_session_is_read_only(mysql_url: str) -> None:
    from ckpt.stores.mysql import MySQLStore

    with MySQLStore(mysql_url) as store:
        with pytest.raises(Exception, match="READ ONLY|read-only|read only"):
            store.session._execute("DELETE FROM checkpoints")
    assert table_snapshot(mysql_url)["checkpoints"]


@pytest.mark.parametrize(
    ("how", "code", "words"),
    [
        ("password", ExitCode.UNREADABLE, "Access denied"),
        ("database", ExitCode.UNREADABLE, "no database 'nowhere'"),
        ("empty", ExitCode.UNREADABLE, "not a MySQL saver database"),
        ("other-app", ExitCode.UNREADABLE, "not a MySQL saver database"),
        ("port", ExitCode.UNREADABLE, "cannot connect"),
        ("scheme", ExitCode.USAGE, "mysql://, mariadb://, valkey://"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    mariadb: Any, how: str, code: ExitCode, words: str
) -> None:
    base = mariadb.url.rstrip("/")
    if how == "password":
        url = base.replace("root@", "root:wrong@") + "/mysql"
    elif how == "database":
        url = base + "/nowhere"
    elif how == "empty":
        url = mariadb.database("empty_" + str(id(how)))
    elif how == "other-app":
        url = mariadb.database("other_app")
        mariadb.execute("CREATE TABLE checkpoints (id INT PRIMARY KEY, note TEXT)", "other_app")
    elif how == "port":
        url = "mysql://root@127.0.0.1:1/db"
    else:
        url = "mssql://root@127.0.0.1/db"
    done = run("threads", "--db", url)
    assert done.exit_code == code, done.output
    assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "wrong" not in done.stderr and "Traceback" not in done.stderr
    databases = {name for (name,) in mariadb.execute("SHOW DATABASES")}
    assert "nowhere" not in databases


def test_a_thread_copies_into_sqlite_as_ckpt_reads_it(mysql_url: str, tmp_path: Path) -> None:
    target = str(tmp_path / "copy.sqlite")
    done = run("copy", mysql_url, target, "--thread", "approval-2", "--apply")
    assert done.exit_code == 0, done.output
    for args in (["history", "approval-2"], ["show", "approval-2", "--writes"]):
        ours = json.loads(run(*args, "--db", target, "--json").stdout)
        theirs = json.loads(run(*args, "--db", mysql_url, "--json").stdout)
        assert _without_sizes(ours) == _without_sizes(theirs), args


def _without_sizes(record: Any) -> Any:
    """A record without what differs by layout alone (bytes stored, blob references)."""
    if isinstance(record, dict):
        return {k: _without_sizes(v) for k, v in record.items() if k not in ("size", "blobs")}
    if isinstance(record, list):
        return [_without_sizes(v) for v in record]
    return record


@pytest.mark.long
@pytest.mark.postgres
def test_threads_copy_into_sqlite_and_postgres_and_resume(
    mariadb: Any, tmp_path: Path, pg_new_database: Any
) -> None:
    """Every thread copied into SqliteSaver and PostgresSaver reads as PyMySQLSaver reads it,
    and resumes as it would (resumed on the copies: the source is never written)."""
    from fixtures.mysql_stores import build_mysql
    from fixtures.oracle import quiet_serde_log
    from fixtures.state_oracle import demo_graphs, state_oracle
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    from pg import url_of
    from resume import resumed_demo

    source = mariadb.database("copy_source")
    build_mysql(source)
    before = table_snapshot(source)
    targets = {"sqlite": str(tmp_path / "copy.sqlite"), "postgres": pg_new_database()}
    for kind, target in targets.items():
        spec = url_of(target) if kind == "postgres" else target
        done = run("copy", source, spec, "--all", "--apply", "--json")
        assert done.exit_code == 0, done.output
        assert not [t for t in json.loads(done.stdout)["threads"] if t["refused"]]
    assert table_snapshot(source) == before
    with PyMySQLSaver.from_conn_string(source) as saver, quiet_serde_log():
        history = state_oracle(saver, demo_graphs(saver), store="", kind="")["snapshots"]
    resumed: dict[str, Any] | None = None
    for kind, target in targets.items():
        with _saver(kind, target) as saver, quiet_serde_log():
            copied = state_oracle(saver, demo_graphs(saver), store="", kind="")["snapshots"]
            assert copied == history, kind
            outcome = resumed_demo(saver)
            assert resumed is None or outcome == resumed, kind
            resumed = outcome
    assert resumed is not None and "ok" in {result for result, _ in resumed.values()}


@contextmanager
def _saver(kind: str, spec: str) -> Iterator[Any]:
    """LangGraph's own saver on a copy (scratch: resuming writes to it)."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with closing(sqlite3.connect(spec, check_same_thread=False)) as conn:
            yield SqliteSaver(conn)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(spec) as saver:
            yield saver


def test_writes_past_group_concat_max_len_break_the_saver_not_ckpt(mariadb: Any) -> None:
    """MariaDB cuts the saver's JSON_ARRAYAGG of a checkpoint's writes at
    group_concat_max_len (1 MiB): an 800 KB write makes get_state_history raise. ckpt reads
    the thread, and `check` names it with the setting that fixes it."""
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        note: str

    def big(state: State) -> State:
        return {"note": "x" * 800_000}

    def fails(state: State) -> State:
        raise ValueError("after the big write")

    url = mariadb.database("group_concat")
    builder = StateGraph(State)
    builder.add_node("big", big)
    builder.add_node("fails", fails)
    builder.add_edge(START, "big")
    builder.add_edge(START, "fails")
    builder.add_edge("big", END)
    builder.add_edge("fails", END)
    config: Any = {"configurable": {"thread_id": "large"}}
    with PyMySQLSaver.from_conn_string(url) as saver:
        saver.setup()
        graph = builder.compile(checkpointer=saver)
        with pytest.raises(ValueError, match="after the big write"):
            graph.invoke({"note": ""}, config)
        with pytest.raises(json.JSONDecodeError):
            list(graph.get_state_history(config))
    done = run("history", "large", "--db", url, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)
    done = run("check", "--db", url, "--json")
    checked = json.loads(done.stdout)
    (finding,) = [f for f in checked["findings"] if f["code"] == "aggregate-too-long"]
    assert finding["severity"] == "warning" and finding["threads"] == ["large"]
    assert "SET GLOBAL group_concat_max_len = 2,097,152" in finding["places"][0]["detail"]
