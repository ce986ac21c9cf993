"""`ckpt prune` and `ckpt vacuum`: dry runs change nothing, --apply keeps what resuming
needs, and LangGraph itself proves it: every pruned thread reports the same state and
carries on exactly as the unpruned one does (SQLite and Postgres)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fixtures.agent_stores import build_postgres, build_sqlite
from fixtures.agents import AgentManifest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from invoke import ckpt
from pg import url_of
from prune_checks import VACUUM_SCHEMA, compare_with_langgraph, vacuum_json
from runs import NewDatabase
from schemas import follows_schema


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def counts(path: Path) -> tuple[int, int]:
    with closing(sqlite3.connect(path)) as conn:
        (cps,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        (writes,) = conn.execute("SELECT count(*) FROM writes").fetchone()
    return cps, writes


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AgentManifest]:
    path = tmp_path_factory.mktemp("prune") / "agents.sqlite"
    return path, build_sqlite(path)


# -- SQLite -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [["--keep-latest"], ["--keep-last", "2"]])
def test_pruned_sqlite_threads_resume_as_before(
    agents: tuple[Path, AgentManifest], tmp_path: Path, strategy: list[str]
) -> None:
    source, manifest = agents
    original, pruned = tmp_path / "original.sqlite", tmp_path / "pruned.sqlite"
    shutil.copy(source, original)
    shutil.copy(source, pruned)
    before = counts(pruned)
    dry = ckpt("prune", str(pruned), "--all", *strategy, "--json")
    assert dry.exit_code == 0, dry.output
    assert digest(pruned) == digest(original)  # a dry run changes nothing
    plan = json.loads(dry.stdout)
    assert not plan["applied"] and plan["totals"]["checkpoints"] > 0
    done = ckpt("prune", str(pruned), "--all", *strategy, "--apply", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["applied"] and result["totals"] == plan["totals"]
    for record in (plan, result):  # docs/prune.schema.json, what the view needs included
        follows_schema(record, "prune.schema.json")
        assert record["reclaim"] == "file" and record["store"]["kind"] == "sqlite"
    after = counts(pruned)
    assert after[0] == before[0] - plan["totals"]["checkpoints"]
    assert after[1] == before[1] - plan["totals"]["writes"]
    reasons = {
        r for t in plan["threads"] for n in t["namespaces"] for k in n["kept"] for r in k["reasons"]
    }
    assert any(r.startswith("delta snapshot of") for r in reasons), reasons
    with (
        closing(sqlite3.connect(original, check_same_thread=False)) as a,
        closing(sqlite3.connect(pruned, check_same_thread=False)) as b,
    ):
        assert compare_with_langgraph(SqliteSaver(a), SqliteSaver(b), manifest) == len(
            manifest["threads"]
        )


def test_delete_removes_whole_threads(agents: tuple[Path, AgentManifest], tmp_path: Path) -> None:
    source, manifest = agents
    store = tmp_path / "store.sqlite"
    shutil.copy(source, store)
    thread = sorted(manifest["threads"])[0]
    result = ckpt("prune", str(store), "--thread", thread, "--delete", "--apply")
    assert result.exit_code == 0, result.output
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM writes WHERE thread_id = ?", (thread,)
        ).fetchone() == (0,)
        assert (
            conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
            == len(manifest["threads"]) - 1
        )


def test_selection_is_required_and_honoured(
    agents: tuple[Path, AgentManifest], tmp_path: Path
) -> None:
    source, manifest = agents
    store = tmp_path / "store.sqlite"
    shutil.copy(source, store)
    nothing = ckpt("prune", str(store))
    assert nothing.exit_code == 2 and "--all" in nothing.output
    failed = [t for t, s in manifest["status"].items() if s == "failed"]
    plan = json.loads(ckpt("prune", str(store), "--status", "error", "--json").stdout)
    assert sorted(t["thread_id"] for t in plan["threads"]) == sorted(failed)
    recent = json.loads(ckpt("prune", str(store), "--older-than", "30d", "--json").stdout)
    assert recent["threads"] == []  # every thread was written minutes ago
    both = ckpt("prune", str(store), "--all", "--delete", "--keep-last", "2")
    assert both.exit_code == 2 and "choose one" in both.output
    unknown = ckpt("prune", str(store), "--thread", "nosuch")
    assert unknown.exit_code == 7
    assert ckpt("prune", str(store), "--older-than", "soon").exit_code == 2


def test_a_locked_store_is_refused_and_left_whole(
    agents: tuple[Path, AgentManifest], tmp_path: Path
) -> None:
    source, _ = agents
    store = tmp_path / "store.sqlite"
    shutil.copy(source, store)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # an application in the middle of a write
    try:
        before = counts_under_lock(store)
        result = ckpt("prune", str(store), "--all", "--apply", "--timeout", "0.3")
        assert result.exit_code == 11, result.output
        assert "another connection holds the write lock" in result.output
        assert len(result.output.strip().splitlines()) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert counts(store) == before


def counts_under_lock(path: Path) -> tuple[int, int]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return (
            conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0],
            conn.execute("SELECT count(*) FROM writes").fetchone()[0],
        )


def test_backup_then_prune(agents: tuple[Path, AgentManifest], tmp_path: Path) -> None:
    source, _ = agents
    store, backup = tmp_path / "store.sqlite", tmp_path / "backup.sqlite"
    shutil.copy(source, store)
    before = counts(store)
    result = ckpt("prune", str(store), "--all", "--apply", "--backup", str(backup))
    assert result.exit_code == 0, result.output
    assert counts(backup) == before and counts(store)[0] < before[0]
    again = ckpt("prune", str(store), "--all", "--apply", "--backup", str(backup))
    assert again.exit_code == 12 and "exists" in again.output  # never overwrites


def test_vacuum_reports_then_shrinks(agents: tuple[Path, AgentManifest], tmp_path: Path) -> None:
    source, _ = agents
    store = tmp_path / "store.sqlite"
    shutil.copy(source, store)
    assert ckpt("prune", str(store), "--all", "--apply").exit_code == 0
    report = vacuum_json(str(store))
    assert not report["applied"] and report["free_pages"] > 0
    assert (report["reclaim"], report["statement"], report["tables"]) == ("file", "VACUUM", None)
    assert report["file_bytes"] == store.stat().st_size
    assert report["disk_needed_bytes"] == 2 * report["file_bytes"]
    size = store.stat().st_size
    copy = tmp_path / "compact.sqlite"
    planned = vacuum_json(str(store), "--into", str(copy))
    assert planned["into"] == str(copy) and not copy.exists()
    assert planned["statement"] == f"VACUUM INTO '{copy}'"
    into = ckpt("vacuum", str(store), "--into", str(copy), "--apply", "--json")
    assert into.exit_code == 0, into.output
    assert copy.stat().st_size < size and store.stat().st_size == size
    copied = json.loads(into.stdout)
    VACUUM_SCHEMA.validate(copied)
    assert copied["applied"] and copied["after"] is None
    assert copied["before"]["file_bytes"] == copied["file_bytes"] == size
    # A live application: its connection keeps the WAL (with a frame in it) and it is
    # in the middle of a read.
    reader = sqlite3.connect(store, isolation_level=None)
    reader.execute("DELETE FROM writes WHERE rowid = (SELECT max(rowid) FROM writes)")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM checkpoints").fetchone()
    try:
        busy = ckpt("vacuum", str(store), "--apply", "--timeout", "0.3")
        assert busy.exit_code == 11, busy.output
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    done = vacuum_json(str(store), "--apply")
    assert done["after"]["file_bytes"] < done["before"]["file_bytes"]
    assert done["after"]["free_pages"] == 0
    assert done["after"]["journal_mode"] == "wal" and done["after"]["tables"] is None
    cps, writes = counts(copy)
    assert counts(store) == (cps, writes - 1)  # the one write the application deleted


def test_a_dev_folder_is_refused(dev_folder: Path) -> None:
    result = ckpt("prune", str(dev_folder), "--all")
    assert result.exit_code == 12 and "rewrites these files" in result.output
    assert ckpt("vacuum", str(dev_folder)).exit_code == 12


def test_encrypted_stores_prune_without_the_key(
    encrypted_store: Path, encryption_key: bytes, tmp_path: Path
) -> None:
    """Without the key the plan needs no values (a DeltaChannel chain would: see the
    planner test below): the latest checkpoints and their writes read the same after."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    store = tmp_path / "encrypted.sqlite"
    shutil.copy(encrypted_store, store)
    result = ckpt("prune", str(store), "--all", "--apply", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["totals"]["checkpoints"] > 0 and record["totals"]["refused"] == 0
    serde = EncryptedSerializer.from_pycryptodome_aes(key=encryption_key)
    with (
        closing(sqlite3.connect(store, check_same_thread=False)) as a,
        closing(sqlite3.connect(encrypted_store, check_same_thread=False)) as b,
    ):
        pruned, whole = SqliteSaver(a, serde=serde), SqliteSaver(b, serde=serde)
        threads = [t for (t,) in b.execute("SELECT DISTINCT thread_id FROM checkpoints")]
        for thread_id in threads:
            config = {"configurable": {"thread_id": thread_id}}
            kept, original = pruned.get_tuple(config), whole.get_tuple(config)
            assert kept is not None and original is not None, thread_id
            # repr: the values hold numpy arrays and tuple keys, same order on both sides
            assert repr(kept.checkpoint["channel_values"]) == repr(
                original.checkpoint["channel_values"]
            )
            assert repr(kept.pending_writes) == repr(original.pending_writes)


# -- the rows nothing uses: prune --orphans, the fix ckpt check gives for them ---------------


def every_tuple(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """Everything LangGraph's saver lists (every thread, every namespace), in order."""
    return [
        repr((t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes))
        for t in saver.list(None)
    ]


def an_id_between(ids: list[str]) -> str:
    """A checkpoint id no checkpoint has, between the thread's first and newest."""
    return ids[1][:-1] + ("0" if ids[1][-1] != "0" else "1")


def check_codes(location: str) -> dict[str, Any]:
    result = ckpt("check", location, "--json", "--quiet")
    return {f["code"]: f for f in json.loads(result.stdout)["findings"]}


def test_orphans_are_pruned_and_langgraph_reads_the_same(
    agents: tuple[Path, AgentManifest], tmp_path: Path
) -> None:
    source, manifest = agents
    original, planted = tmp_path / "original.sqlite", tmp_path / "planted.sqlite"
    shutil.copy(source, original)
    shutil.copy(source, planted)
    with closing(sqlite3.connect(planted)) as conn, conn:
        (thread,) = conn.execute(
            "SELECT min(thread_id) FROM writes WHERE checkpoint_ns = '' AND checkpoint_id = "
            "(SELECT max(checkpoint_id) FROM checkpoints c WHERE c.thread_id = writes.thread_id "
            "AND c.checkpoint_ns = '') AND (SELECT count(*) FROM checkpoints c WHERE "
            "c.thread_id = writes.thread_id AND c.checkpoint_ns = '') >= 3"
        ).fetchone()
        ids = [
            i
            for (i,) in conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                "ORDER BY checkpoint_id",
                (thread,),
            )
        ]
        newest = ids[-1]
        # What a deletion leaves behind: writes of a checkpoint that is gone, in a namespace
        # that has others, and in a namespace with none left.
        for ns, checkpoint_id in (("", an_id_between(ids)), ("ghost:1", ids[0])):
            conn.execute(
                "INSERT INTO writes SELECT thread_id, ?, ?, task_id, task_path, idx, channel, "
                "type, value FROM writes WHERE thread_id = ? AND checkpoint_id = ?",
                (ns, checkpoint_id, thread, newest),
            )
        (planted_writes,) = conn.execute(
            "SELECT count(*) FROM writes WHERE thread_id = ? AND checkpoint_id = ?",
            (thread, newest),
        ).fetchone()
    found = check_codes(str(planted))
    orphans = found["orphan-writes"]
    assert (orphans["severity"], orphans["count"], orphans["threads"]) == (
        "warning",
        2 * planted_writes,
        [thread],
    )
    fix = orphans["fix"]
    assert fix["applies"] and fix["options"] == {
        "threads": [thread],
        "strategy": "orphans",
        "apply": True,
    }
    before = counts(planted)
    plan = json.loads(ckpt("prune", str(planted), "--thread", thread, "--orphans", "--json").stdout)
    follows_schema(plan, "prune.schema.json")
    assert plan["strategy"] == "orphans" and not plan["applied"]
    assert plan["totals"]["writes"] == 2 * planted_writes and plan["totals"]["checkpoints"] == 0
    assert counts(planted) == before  # the plan changed nothing
    from ckpt.cli.options import fix_line

    words = fix_line(fix).split()
    assert words[:3] == ["ckpt", "prune", str(planted)]
    done = ckpt(*words[1:], "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["totals"] == plan["totals"]
    assert counts(planted) == (before[0], before[1] - 2 * planted_writes)
    assert "orphan-writes" not in check_codes(str(planted))
    with closing(sqlite3.connect(original)) as a, closing(sqlite3.connect(planted)) as b:
        query = "SELECT * FROM writes ORDER BY 1, 2, 3, 4, 6"  # every row as it was
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
    with (
        closing(sqlite3.connect(original, check_same_thread=False)) as a,
        closing(sqlite3.connect(planted, check_same_thread=False)) as b,
    ):
        assert every_tuple(SqliteSaver(b)) == every_tuple(SqliteSaver(a))
        # Then each thread carried on (resumed, retried), on both: the same outcome.
        assert compare_with_langgraph(SqliteSaver(a), SqliteSaver(b), manifest) == len(
            manifest["threads"]
        )


def test_writes_of_a_lost_newest_checkpoint_stay(
    agents: tuple[Path, AgentManifest], tmp_path: Path
) -> None:
    """The writes of a deleted newest checkpoint are the only trace of it: check reports
    the loss (an error, restored from a backup), and prune --orphans leaves them."""
    source, manifest = agents
    path = tmp_path / "lost.sqlite"
    shutil.copy(source, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        thread, newest = conn.execute(
            "SELECT w.thread_id, max(w.checkpoint_id) FROM writes w WHERE w.checkpoint_ns = '' "
            "GROUP BY w.thread_id ORDER BY 1 LIMIT 1"
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ?",
                     (thread, newest))  # fmt: skip
        conn.execute("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
                     (thread, newest))  # fmt: skip
    found = check_codes(str(path))
    assert found["missing-checkpoint"]["threads"] == [thread]
    assert found["missing-checkpoint"]["fix"]["verb"] == "copy"
    before = counts(path)
    done = ckpt("prune", str(path), "--all", "--orphans", "--apply", "--json")
    assert done.exit_code == 0, done.output
    assert counts(path) == before and "missing-checkpoint" in check_codes(str(path))


# -- Postgres ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_agents(pg_new_database: Callable[[], str]) -> tuple[str, AgentManifest]:
    dsn = pg_new_database()
    return dsn, build_postgres(dsn)


def clone_database(new_database: NewDatabase, source: str) -> Iterator[str]:
    """A copy of `source` for one test (CREATE DATABASE ... TEMPLATE), dropped with the
    session's other databases, side by side (conftest pg_new_database)."""
    yield new_database(template=psycopg.conninfo.conninfo_to_dict(source)["dbname"])


@pytest.mark.postgres
@pytest.mark.parametrize("strategy", [["--keep-latest"], ["--keep-last", "2"]])
def test_pruned_postgres_threads_resume_as_before(
    pg_agents: tuple[str, AgentManifest], pg_new_database: NewDatabase, strategy: list[str]
) -> None:
    source, manifest = pg_agents
    for original in clone_database(pg_new_database, source):
        for pruned in clone_database(pg_new_database, source):
            url = url_of(pruned)
            plan = json.loads(ckpt("prune", url, "--all", *strategy, "--json").stdout)
            assert plan["totals"]["checkpoints"] > 0 and plan["totals"]["blobs"] > 0
            done = ckpt("prune", url, "--all", *strategy, "--apply", "--json")
            assert done.exit_code == 0, done.output
            assert json.loads(done.stdout)["totals"] == plan["totals"]
            for record in (plan, json.loads(done.stdout)):
                follows_schema(record, "prune.schema.json")
                assert record["reclaim"] == "reuse" and record["store"]["kind"] == "postgres"
            assert (
                "the space is reused after VACUUM" in ckpt("prune", url, "--all", "--apply").stdout
            )
            with psycopg.connect(pruned) as conn:
                (orphans,) = conn.execute(
                    "SELECT count(*) FROM checkpoint_writes w WHERE NOT EXISTS (SELECT 1 FROM "
                    "checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = "
                    "w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)"
                ).fetchone()
            assert orphans == 0
            stats = json.loads(ckpt("stats", url, "--json").stdout)
            assert "orphan-blobs" not in {f["code"] for f in stats["health"]["findings"]}
            with (
                PostgresSaver.from_conn_string(original) as a,
                PostgresSaver.from_conn_string(pruned) as b,
            ):
                assert compare_with_langgraph(a, b, manifest) == len(manifest["threads"])
            report = vacuum_json(url)
            assert (report["reclaim"], report["file_bytes"]) == ("reuse", None)
            assert report["before"] is None and report["after"] is None
            tables = [t["table"] for t in report["tables"]]
            shown = ckpt("vacuum", url).stdout.splitlines()
            assert shown[0].split() == ["TABLE", "SIZE", "LIVE", "ROWS", "DEAD", "ROWS", "BLOAT"]
            assert [line.split()[0] for line in shown[1:-1]] == tables
            assert shown[-1] == f"to run (or --apply): {report['statement']};"
            vacuum = vacuum_json(url, "--apply")
            assert vacuum["applied"] and "VACUUM (ANALYZE)" in vacuum["statement"]
            assert vacuum["before"]["tables"] == vacuum["tables"]
            assert [t["table"] for t in vacuum["after"]["tables"]] == tables


def test_the_planner_keeps_delta_chains_and_refuses_what_it_cannot_see() -> None:
    from ckpt.ops.prune import plan_thread
    from ckpt.records.plans import CheckpointRow, ThreadRows, WriteRow

    def row(cid: str, parent: str | None, values: set[str] | None, delta: bool = True) -> Any:
        return CheckpointRow(
            checkpoint_ns="",
            checkpoint_id=cid,
            parent_id=parent,
            v=4,
            root_id=None,
            delta_channels=frozenset({"log"}) if delta else frozenset(),
            values=frozenset(values) if values is not None else None,
            versions={},
            size=10,
        )

    chain = [
        row("1", None, {"log"}, delta=False),
        row("2", "1", {"log"}),  # the snapshot
        row("3", "2", set()),
        row("4", "3", set()),
    ]
    writes = [WriteRow("", "2", "log", 5), WriteRow("", "3", "log", 5), WriteRow("", "1", "x", 5)]
    plan = plan_thread(ThreadRows("t", chain, writes), "keep_latest")
    (ns,) = plan.namespaces
    assert ns.kept == {
        "4": ["latest"],
        "3": ["delta chain of log"],
        "2": ["delta snapshot of log"],
    }
    assert ns.deleted == ["1"] and ns.writes == 1 and ns.parents_cleared == ["2"]
    hidden = [row("1", None, None), row("2", "1", None)]
    refused = plan_thread(ThreadRows("t", hidden, []), "keep_latest")
    assert refused.refused is not None and "the AES key" in refused.refused


# -- a thread at a time ---------------------------------------------------------------------------


def test_the_streamed_plan_is_the_whole_record(agents: tuple[Path, AgentManifest]) -> None:
    """`prune --json` writes the record a thread at a time: the same text as the whole
    record written at once, and each thread is planned only when the output asks for it."""
    import ckpt
    from ckpt.records.encode import dump_document
    from ckpt.render.output import stream_json_record

    def whole(selection: dict[str, Any], strategy: Any, keep: int) -> str:
        with closing(ckpt.open(source)) as store:
            record = store.prune(**selection, strategy=strategy, keep=keep)
            return "".join(dump_document(record))

    def streamed(run: Any) -> Iterator[str]:
        return stream_json_record(run.head, "threads", run, lambda: {"totals": run.totals})

    source, _ = agents
    every: dict[str, Any] = {"all": True}
    with closing(ckpt.open(source)) as store:
        planned: list[str] = []
        run = store.iter_prune(
            **every,
            strategy="keep_last",
            keep=2,
            on_thread=lambda plan: planned.append(plan["thread_id"]),
        )
        assert planned == []  # nothing is read before the output asks
        pieces = streamed(run)
        text = ""
        while '"thread_id"' not in text:
            text += next(pieces)
        assert len(planned) == 1
        text += "".join(pieces)
    assert len(planned) == len(json.loads(text)["threads"]) > 1
    assert text == whole(every, "keep_last", 2)
    # and with no thread selected: an empty array, as json writes it
    none: dict[str, Any] = {"status": "error", "where": {"no such key": "x"}}
    with closing(ckpt.open(source)) as store:
        empty = "".join(streamed(store.iter_prune(**none, strategy="keep_latest")))
    assert empty == whole(none, "keep_latest", 1)
    assert '"threads": [],' in empty


def test_the_plan_table_lays_out_as_a_rich_table(agents: tuple[Path, AgentManifest]) -> None:
    """The plan's table is drawn by hand (a Rich table of 100,000 rows took a minute and
    335 MB): piped, it is the table Rich lays out, line for line."""
    import io

    from rich.console import Console
    from rich.table import Table

    source, _ = agents
    result = ckpt("prune", str(source), "--all", "--keep-last", "2")
    assert result.exit_code == 0, result.output
    record = json.loads(ckpt("prune", str(source), "--all", "--keep-last", "2", "--json").stdout)
    table = Table(box=None, pad_edge=False)
    for name in ("THREAD", "NAMESPACE", "CHECKPOINTS", "WRITES", "BLOBS", "FREES", "KEEPS"):
        table.add_column(
            name, justify="left" if name in {"THREAD", "NAMESPACE", "KEEPS"} else "right"
        )
    from ckpt.render.maintain_view import _kept
    from ckpt.render.text import human_size

    for thread in record["threads"]:
        for ns in thread["namespaces"]:
            if ns["checkpoints"] or ns["writes"] or ns["blobs"] or ns["kept"]:
                table.add_row(
                    thread["thread_id"],
                    ns["checkpoint_ns"] or "(root)",
                    *(f"{ns[k]:,}" for k in ("checkpoints", "writes", "blobs")),
                    human_size(ns["bytes"]),
                    _kept(ns),
                )
    console = Console(file=io.StringIO(), width=10_000, color_system=None)
    console.print(table)
    expected = [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    lines = result.stdout.splitlines()
    assert lines[: len(expected)] == expected
    assert lines[len(expected)].startswith("would delete ")


@pytest.mark.postgres
def test_postgres_orphans_are_pruned_and_langgraph_reads_the_same(
    pg_agents: tuple[str, AgentManifest], pg_new_database: NewDatabase
) -> None:
    source, manifest = pg_agents
    for original in clone_database(pg_new_database, source):
        for planted in clone_database(pg_new_database, source):
            with psycopg.connect(planted, autocommit=True) as conn:
                # Blobs no checkpoint names (old versions, as a hand-made deletion leaves
                # them), and writes of a checkpoint that is gone.
                blobs = conn.execute(
                    "INSERT INTO checkpoint_blobs SELECT thread_id, checkpoint_ns, channel, "
                    "'00000000000000000000000000000000.' || version, type, blob "
                    "FROM checkpoint_blobs WHERE type = 'msgpack'"
                ).rowcount
                writes = conn.execute(
                    "INSERT INTO checkpoint_writes SELECT thread_id, 'ghost:1', checkpoint_id, "
                    "task_id, idx, channel, type, blob, task_path FROM checkpoint_writes"
                ).rowcount
            url = url_of(planted)
            found = check_codes(url)
            assert (
                found["orphan-blobs"]["count"] == blobs
                and found["orphan-writes"]["count"] == writes
            )
            assert all(f["fix"]["applies"] for f in (found["orphan-blobs"], found["orphan-writes"]))
            done = ckpt("prune", url, "--all", "--orphans", "--apply", "--json")
            assert done.exit_code == 0, done.output
            totals = json.loads(done.stdout)["totals"]
            assert (totals["checkpoints"], totals["blobs"], totals["writes"]) == (0, blobs, writes)
            assert not {"orphan-blobs", "orphan-writes"} & set(check_codes(url))
            with (
                PostgresSaver.from_conn_string(original) as a,
                PostgresSaver.from_conn_string(planted) as b,
            ):
                assert every_tuple(b) == every_tuple(a)
                assert compare_with_langgraph(a, b, manifest) == len(manifest["threads"])
