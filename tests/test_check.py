"""`ckpt check` on real stores: a copy of the fixture store with each damage the
agent-memory-integrity study names (a row deleted from the middle, a forged row copied from
another thread, truncated and tampered bytes, swapped and reordered rows, a cycle, a lost
delta snapshot, a subgraph run whose checkpoint is gone) is found, on the right threads
and with the right severity; undamaged and pruned stores report no error; the JSON
follows its schema; exit codes, stdout and stderr; the store is never changed."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import ormsgpack
import pytest

import ckpt
from checking import DOCS, by_code, check, errors, moved_and_relinked
from ckpt.cli import app
from ckpt.scan.findings import KINDS
from invoke import runner
from store_files import folder_hashes, unexpected_changes


def ids(conn: sqlite3.Connection, thread: str, ns: str = "") -> list[str]:
    return [
        i
        for (i,) in conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id",
            (thread, ns),
        )
    ]


# -- SQLite: one copy, a damage per thread ----------------------------------------------------


def damage_sqlite(path: Path) -> dict[str, set[str]]:
    """Damage a copy of chat.sqlite, a thread per damage; the error findings expected."""
    with closing(sqlite3.connect(path)) as conn, conn:
        # Deleted rows: a checkpoint from the middle of support-1's chain.
        middle = ids(conn, "support-1")[7]
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (middle,))
        # A forged row: support-2's sixth checkpoint copied into support-3.
        conn.execute(
            "INSERT INTO checkpoints SELECT 'support-3', checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = 'support-2' AND checkpoint_id = ?",
            (ids(conn, "support-2")[5],),
        )
        # A truncated body: approval-1's newest checkpoint cut in half.
        conn.execute(
            "UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, length(checkpoint) / 2) "
            "WHERE checkpoint_id = ?",
            (ids(conn, "approval-1")[-1],),
        )
        # Tampered value bytes: a write's msgpack header turned into a reserved byte.
        (rowid, value) = conn.execute(
            "SELECT rowid, value FROM writes WHERE thread_id = 'approval-2' AND type = 'msgpack' "
            "ORDER BY rowid LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE writes SET value = ? WHERE rowid = ?", (b"\xc1" + value[1:], rowid))
        # A cycle: pending-1's first checkpoint made the child of its newest.
        first, *_, last = ids(conn, "pending-1")
        conn.execute(
            "UPDATE checkpoints SET parent_checkpoint_id = ? WHERE checkpoint_id = ?", (last, first)
        )
        # Swapped rows: two of fork-1's checkpoints hold each other's body.
        one, two = ids(conn, "fork-1")[2:4]
        bodies = dict(
            conn.execute(
                "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE checkpoint_id IN (?, ?)",
                (one, two),
            ).fetchall()
        )
        for mine, theirs in ((one, two), (two, one)):
            conn.execute(
                "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
                (bodies[theirs], mine),
            )
        # Reordered: rich-1's newest checkpoint renumbered to sort just before its parent.
        newest = ids(conn, "rich-1")[-1]
        (parent,) = conn.execute(
            "SELECT parent_checkpoint_id FROM checkpoints WHERE checkpoint_id = ?", (newest,)
        ).fetchone()
        earlier = parent[:-1] + ("0" if parent[-1] != "0" else "/")
        conn.execute(
            "UPDATE checkpoints SET checkpoint_id = ? WHERE checkpoint_id = ?", (earlier, newest)
        )
        # A subgraph run whose checkpoint is gone: subgraph-1's root checkpoint that ran it.
        (ns, ran_from) = conn.execute(
            "SELECT checkpoint_ns, json_extract(CAST(metadata AS TEXT), '$.parents.\"\"') "
            "FROM checkpoints WHERE thread_id = 'subgraph-1' AND checkpoint_ns != '' LIMIT 1"
        ).fetchone()
        assert ns and ran_from != ids(conn, "subgraph-1")[0]
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (ran_from,))
        # A removed snapshot: delta-1's newest checkpoint holds its DeltaChannel snapshot
        # (no counters in its metadata); it goes, and so does the snapshot before it, which
        # the checkpoint now newest replays from.
        snapshots = [
            i
            for (i,) in conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'delta-1' AND "
                "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') IS NULL "
                "ORDER BY checkpoint_id"
            )
        ]
        assert snapshots[-1] == ids(conn, "delta-1")[-1] and len(snapshots) >= 2
        conn.executemany(
            "DELETE FROM checkpoints WHERE checkpoint_id = ?", [(i,) for i in snapshots[-2:]]
        )
    return {
        "dangling-parent": {"support-1", "subgraph-1", "delta-1"},
        "copied-checkpoint": {"support-3"},
        "undecodable": {"approval-1", "approval-2"},
        "cycle": {"pending-1"},
        "id-mismatch": {"fork-1", "rich-1"},
        # Swapped bodies: each checkpoint's versions no longer follow from its parent's.
        "chain-mismatch": {"fork-1"},
        "out-of-order": {"rich-1"},
        "orphan-subgraph": {"subgraph-1"},
        "missing-snapshot": {"delta-1"},
    }


@pytest.fixture(scope="module")
def damaged(sqlite_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = tmp_path_factory.mktemp("damaged")
    path = folder / "damaged.sqlite"
    shutil.copy(sqlite_store, path)
    expected = damage_sqlite(path)
    before = folder_hashes(folder)
    record = check(str(path))
    assert unexpected_changes(folder, before) == []  # check never changes the store
    return path, (record, expected)


def test_every_damage_is_found_on_its_threads(damaged: tuple[Path, Any]) -> None:
    _, (record, expected) = damaged
    assert errors(record) == expected
    found = by_code(record)
    for code in expected:
        assert found[code]["severity"] == KINDS[code].severity == "error"
        assert found[code]["thread_count"] == len(expected[code])
        fix = found[code]["fix"]
        assert (fix["verb"], fix["options"]["on_conflict"], fix["applies"]) == (
            "copy",
            "replace",
            True,
        )
    assert record["status"] == "error" and record["summary"]["error"] == len(expected)


def test_findings_say_where(damaged: tuple[Path, Any]) -> None:
    path, (record, _) = damaged
    found = by_code(record)
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        support_2 = set(ids(conn, "support-2"))
        (copied,) = found["copied-checkpoint"]["places"]
        assert copied["checkpoint_id"] in support_2  # the forged row keeps its id
        assert "thread support-2" in copied["detail"]
        (cycle,) = found["cycle"]["places"]
        assert set(cycle["detail"].split(" -> ")) == set(ids(conn, "pending-1"))
        (lost,) = found["missing-snapshot"]["places"]  # where LangGraph would rebuild it
        assert (lost["checkpoint_id"], lost["channel"]) == (ids(conn, "delta-1")[-1], "log")
    swapped = {
        p["checkpoint_id"] for p in found["id-mismatch"]["places"] if p["thread_id"] == "fork-1"
    }
    assert len(swapped) == 2
    undecodable = {p["thread_id"]: p for p in found["undecodable"]["places"]}
    assert undecodable["approval-1"]["channel"] is None  # the body
    assert undecodable["approval-2"]["channel"] is not None  # a write
    # The deleted checkpoint's writes are left without it.
    assert "support-1" in found["orphan-writes"]["threads"]
    assert found["orphan-writes"]["severity"] == "warning"


def test_fixes_name_the_threads(damaged: tuple[Path, Any]) -> None:
    """A fix is data in the JSON (the API's verb, arguments and options); the CLI says it
    as the command line to paste."""
    from ckpt.cli.options import fix_line

    path, (record, _) = damaged
    fix = by_code(record)["cycle"]["fix"]
    assert fix == {
        "verb": "copy",
        "arguments": ["BACKUP", str(path)],
        "options": {"threads": ["pending-1"], "on_conflict": "replace", "apply": True},
        "placeholders": ["BACKUP"],
        "applies": True,
    }
    assert fix_line(fix) == (
        f"ckpt copy BACKUP {path} --thread pending-1 --on-conflict replace --apply"
    )


def test_human_view_by_severity(damaged: tuple[Path, Any]) -> None:
    path, (record, _) = damaged
    result = runner.invoke(app, ["check", str(path)], env={"COLUMNS": "120"})
    assert result.exit_code == 1 and result.stderr == ""
    out = result.stdout
    assert out.index("Errors (9)") < out.index("Warnings (") < out.index("Notes (")
    for finding in record["findings"]:
        assert f" {finding['code']}  " in out
    assert "fix: ckpt copy BACKUP" in out
    assert out.rstrip().endswith("notes") or "errors" in out.splitlines()[-1]


@pytest.mark.parametrize("columns", ["80", "40"])
def test_a_fix_is_one_line_at_any_width(damaged: tuple[Path, Any], columns: str) -> None:
    """Pasted, the line runs what it says: never wrapped, so `--apply` never lands on a
    line of its own."""
    from ckpt.cli.options import fix_line

    path, (record, _) = damaged
    out = runner.invoke(app, ["check", str(path)], env={"COLUMNS": columns}).stdout
    lines = [line.strip() for line in out.splitlines()]
    fixes = [line.removeprefix("fix: ") for line in lines if line.startswith("fix: ckpt ")]
    expected = {
        fix_line(f["fix"]) for f in record["findings"] if f["fix"] and f["thread_count"] <= 3
    }
    assert expected and expected <= set(fixes)
    assert all(line.endswith("--apply") for line in fixes)
    assert not any(line == "--apply" for line in lines)


def test_the_last_line_says_whether_the_run_fails(sqlite_store: Path) -> None:
    """✓ only on a run that exits 0: with --fail-on warning, warnings fail it and it says so."""
    passing = runner.invoke(app, ["check", str(sqlite_store)], env={"COLUMNS": "120"})
    assert passing.exit_code == 0 and passing.stdout.splitlines()[-1].startswith("✓ no errors")
    failing = runner.invoke(
        app, ["check", str(sqlite_store), "--fail-on", "warning"], env={"COLUMNS": "120"}
    )
    last = failing.stdout.splitlines()[-1]
    assert failing.exit_code == 1 and last.startswith("✗ no errors, but")
    assert last.endswith("--fail-on warning fails this run")


# -- no error where there is no damage --------------------------------------------------------


def test_the_fixture_store_is_whole(sqlite_store: Path, dev_folder: Path, memory_pkl: Path) -> None:
    for store in (sqlite_store, dev_folder, memory_pkl):
        record = check(str(store))
        assert record["summary"]["error"] == 0, record["findings"]
    found = by_code(check(str(sqlite_store)))
    assert found["failed-thread"]["threads"] == ["fanout-1"]
    assert found["waiting"]["threads"] == ["approval-2", "subgraph-2"]
    assert found["strict-msgpack"]["threads"] == ["rich-1"]
    saver = check(str(sqlite_store))["saver"]
    assert (saver["saver"], saver["langgraph"]) == ("SqliteSaver", "reads")


@pytest.mark.parametrize("how", [["--keep-latest"], ["--keep-last", "2"]])
def test_a_pruned_store_has_no_error(sqlite_store: Path, tmp_path: Path, how: list[str]) -> None:
    path = tmp_path / "pruned.sqlite"
    shutil.copy(sqlite_store, path)
    result = runner.invoke(app, ["prune", str(path), "--all", *how, "--apply"])
    assert result.exit_code == 0, result.output
    record = check(str(path))
    assert record["summary"]["error"] == 0, record["findings"]


def test_deleted_history_reads_as_a_prune(sqlite_store: Path, tmp_path: Path) -> None:
    """Rows deleted from the old end of a chain, as a prune by hand does: a note."""
    path = tmp_path / "by-hand.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = 'support-1' AND checkpoint_id < ?",
            (ids(conn, "support-1")[-3],),
        )
    record = check(str(path))
    assert record["summary"]["error"] == 0
    pruned = by_code(record)["pruned-history"]
    assert pruned["threads"] == ["support-1"] and pruned["severity"] == "note"
    assert by_code(record)["orphan-writes"]["threads"] == ["support-1"]


def test_a_deleted_newest_checkpoint_shows_by_its_writes(
    sqlite_store: Path, tmp_path: Path
) -> None:
    """No parent link names the newest checkpoint: once it is deleted, its pending writes,
    newer than every checkpoint left, are all that says so (looked up again first, as a
    live run's would be)."""
    path = tmp_path / "rolled-back.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        newest = ids(conn, "approval-2")[-1]
        (writes,) = conn.execute(
            "SELECT count(*) FROM writes WHERE checkpoint_id = ?", (newest,)
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (newest,))
    record = check(str(path))
    assert errors(record) == {"missing-checkpoint": {"approval-2"}}
    (lost,) = by_code(record)["missing-checkpoint"]["places"]
    assert lost["checkpoint_id"] == newest and lost["detail"].startswith(f"{writes} pending")
    assert writes >= 1 and "orphan-writes" not in by_code(record)  # not for `prune --orphans`


@pytest.mark.parametrize(
    ("source", "destination"), [("support-1", "approval-2"), ("fork-1", "fanout-1")]
)
def test_a_checkpoint_moved_and_relinked_names_the_thread_it_left(
    sqlite_store: Path, tmp_path: Path, source: str, destination: str
) -> None:
    """A thread's last checkpoint (no pending writes name it) moved into another thread
    and linked onto that thread's newest: nothing is left dangling where it was, and its
    new parent link is whole. Its versions give it away in both threads. Some changed
    without passing every version of its new parent, as a step's would (fork-1's row is
    newer than fanout-1's, with a later step). And they are the versions of the thread
    it left (with their random parts), whose newest checkpoint's step ran: LangGraph
    reads that thread's history without it."""
    path = tmp_path / "moved.sqlite"
    moved = moved_and_relinked(sqlite_store, path, source, destination)
    with closing(sqlite3.connect(path)) as conn:
        target = ids(conn, destination)[-2]  # the newest before the row came
    record = check(str(path))
    found = by_code(record)
    assert errors(record) == {
        "chain-mismatch" if moved > target else "out-of-order": {destination},
        "missing-checkpoint": {source},
    }
    (lost,) = found["missing-checkpoint"]["places"]
    assert lost["thread_id"] == source and lost["checkpoint_id"] == moved
    assert lost["detail"].endswith(f"filed under thread {destination}")


def test_a_value_with_bytes_after_it_is_an_error(sqlite_store: Path, tmp_path: Path) -> None:
    """A write's first byte flipped turns its list into a small int followed by the rest
    of its bytes. LangGraph reads the int and ignores the rest (a DeltaChannel's reducer
    then raises on it): not the value written, whose bytes were all one value."""
    path = tmp_path / "flipped.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        rowid, value = conn.execute(
            "SELECT rowid, value FROM writes WHERE thread_id = 'delta-1' AND type = 'msgpack' "
            "AND channel = 'log' ORDER BY rowid LIMIT 1"
        ).fetchone()
        flipped = bytes([value[0] ^ 0xFF]) + value[1:]
        assert ormsgpack.unpackb(flipped) == value[0] ^ 0xFF  # an int, read without a word
        conn.execute("UPDATE writes SET value = ? WHERE rowid = ?", (flipped, rowid))
    record = check(str(path))
    assert errors(record) == {"undecodable": {"delta-1"}}
    (where,) = by_code(record)["undecodable"]["places"]
    assert where["detail"].endswith(f"{len(value) - 1} bytes after its value")


def test_a_delta_snapshot_that_is_not_msgpack_is_an_error(
    sqlite_store: Path, tmp_path: Path
) -> None:
    """LangGraph's ext hook reads most ext values that do not decode as None, but not a
    DeltaChannel snapshot (ext 7): the whole body fails to load, as it does here."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "snapshot.sqlite"
    shutil.copy(sqlite_store, path)

    def hook(code: int, data: bytes) -> ormsgpack.Ext:
        return ormsgpack.Ext(code, data[:-2] if code == 7 else data)

    with closing(sqlite3.connect(path)) as conn, conn:
        rowid, body = next(
            (rowid, body)
            for rowid, body in conn.execute(
                "SELECT rowid, checkpoint FROM checkpoints WHERE thread_id = 'delta-1' "
                "ORDER BY checkpoint_id"
            )
            if b"\xc7" in body and ormsgpack.unpackb(body, ext_hook=hook) != body
        )
        cut = ormsgpack.packb(ormsgpack.unpackb(body, ext_hook=hook))
        assert cut != body
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (cut, rowid))
        checkpoint_id = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE rowid = ?", (rowid,)
        ).fetchone()[0]
    with SqliteSaver.from_conn_string(str(path)) as saver:
        config: Any = {"configurable": {"thread_id": "delta-1", "checkpoint_id": checkpoint_id}}
        with pytest.raises(ValueError):
            saver.get_tuple(config)
    record = check(str(path))
    assert errors(record) == {"undecodable": {"delta-1"}}
    (where,) = by_code(record)["undecodable"]["places"]
    assert "DeltaChannel snapshot (ext 7)" in where["detail"]


def test_stale_interrupts(sqlite_store: Path) -> None:
    waiting = by_code(check(str(sqlite_store), "--stale", "1000w"))
    assert "stale-interrupt" not in waiting and waiting["waiting"]["count"] == 2
    # The fixture's clock reads 2026-12: a day in the future is still "waiting".
    late = by_code(check(str(sqlite_store), "--stale", "0m"))
    if "stale-interrupt" in late:  # the fixture's times are in the past here
        assert late["stale-interrupt"]["threads"] == ["approval-2", "subgraph-2"]
    bad = runner.invoke(app, ["check", str(sqlite_store), "--stale", "soon"])
    assert bad.exit_code == 2 and bad.stderr.startswith("ckpt: error: --stale 'soon'")


def test_exit_codes_and_fail_on(sqlite_store: Path) -> None:
    check(str(sqlite_store), code=0)  # warnings and notes only
    result = runner.invoke(app, ["check", str(sqlite_store), "--fail-on", "warning", "--quiet"])
    assert result.exit_code == 1
    one = check(str(sqlite_store), "--thread", "support-1", "--fail-on", "warning", code=0)
    assert one["selection"]["thread_ids"] == ["support-1"] and one["scanned"]["threads"] == 1
    unknown = runner.invoke(app, ["check", str(sqlite_store), "--thread", "nosuch"])
    assert unknown.exit_code == 7 and "no thread 'nosuch'" in unknown.stderr


def test_the_api_returns_the_record(sqlite_store: Path) -> None:
    with ckpt.open(sqlite_store) as store:
        record = store.check(threads=["fanout-1"])
    assert record == check(str(sqlite_store), "--thread", "fanout-1")


# -- encryption ---------------------------------------------------------------------------------


def test_encrypted_values_are_verified_with_the_key(
    encrypted_store: Path, encryption_key: bytes, tmp_path: Path
) -> None:
    key = encryption_key.decode()
    without = check(str(encrypted_store))  # counted, not failed: exit 0
    assert by_code(without)["encrypted-unchecked"]["count"] == without["encryption"]["hidden"] > 0
    assert check(str(encrypted_store), "--aes-key", key)["summary"]["error"] == 0
    path = tmp_path / "tampered.sqlite"
    shutil.copy(encrypted_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        (rowid, value) = conn.execute(
            "SELECT rowid, value FROM writes WHERE thread_id = 'support-2' AND type = 'msgpack+aes'"
            " ORDER BY rowid LIMIT 1"
        ).fetchone()
        flipped = value[:-5] + bytes([value[-5] ^ 1]) + value[-4:]
        conn.execute("UPDATE writes SET value = ? WHERE rowid = ?", (flipped, rowid))
        # A row written without the key: plain msgpack in an encrypted store.
        conn.execute(
            "UPDATE writes SET type = 'msgpack', value = ? WHERE rowid = (SELECT rowid FROM "
            "writes WHERE thread_id = 'support-3' AND type = 'msgpack+aes' ORDER BY rowid LIMIT 1)",
            (ormsgpack.packb(["forged"]),),
        )
    found = check(str(path), "--aes-key", key)
    assert errors(found) == {"unverified": {"support-2"}, "unencrypted-row": {"support-3"}}
    # Without the key neither can be verified: the plain row is a warning, nothing fails.
    blind = by_code(check(str(path)))
    assert blind["unencrypted-row"]["severity"] == "warning"
    assert "unverified" not in blind


# -- every sample --------------------------------------------------------------------------------


SQLITE_SAMPLES = {
    "sqlite_checkpoints.db": "reads",
    "sqlite_delta.db": "reads",
    "sqlite_encrypted.db": "reads",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db": "migrates",
    "legacy_lg0.2.16_cp1.0.9_sqlite.db": "migrates",
    "legacy_lg0.1.19_sqlite.db": "cannot",
    "memory_persistentdict.pkl": "reads",
    "memory_persistentdict_cp2.0.21.pkl": "reads",
}


def columns(path: Path) -> dict[str, list[str]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}


@pytest.mark.parametrize("name", sorted(SQLITE_SAMPLES))
def test_what_langgraph_reads_is_what_check_says(samples: Path, tmp_path: Path, name: str) -> None:
    """check's `saver.langgraph`, proven with LangGraph's own saver on a copy: `reads` as it
    is, `migrates` after its setup() changed the schema, `cannot` at all."""
    from fixtures.legacy_graphs import LEGACY_SAVERS, UNREADABLE

    record = check(str(samples / name), "--aes-key", "0123456789abcdef")
    said = record["saver"]["langgraph"]
    assert said == SQLITE_SAMPLES[name]
    assert (record["summary"]["error"] > 0) == (said == "cannot")
    if said == "cannot":
        from fixtures.legacy_graphs import sqlite_copy_saver

        assert name in UNREADABLE
        with sqlite_copy_saver(samples / name, tmp_path) as saver, pytest.raises(sqlite3.Error):
            list(saver.list(None))
        return
    with LEGACY_SAVERS[name](samples / name, tmp_path) as saver:
        assert list(saver.list(None))
    if name.endswith(".db"):
        (copy,) = tmp_path.glob(f"*-{name}")
        changed = columns(copy) != columns(samples / name)
        assert changed == (said == "migrates")


def test_saver_releases_are_the_installed_ones() -> None:
    from importlib.metadata import version

    from ckpt.stores.postgres.store import PG_RELEASE
    from ckpt.stores.redis.store import REDIS_RELEASE
    from ckpt.stores.sqlite.store import SAVER_RELEASE

    for release in (SAVER_RELEASE, PG_RELEASE, REDIS_RELEASE):
        package, number = release.split(" ")
        assert version(package) == number


def test_every_code_is_documented() -> None:
    schema = json.loads((DOCS / "check.schema.json").read_text())
    assert set(schema["$defs"]["finding"]["properties"]["code"]["enum"]) == set(KINDS)
    text = (DOCS / "json.md").read_text()
    assert [code for code in KINDS if f"`{code}`" not in text] == []


def test_a_changed_version_must_pass_every_version_of_the_parent() -> None:
    """LangGraph's rule (format.md §3.4): a step gives each channel it updates the next
    version after the namespace's highest, whatever the saver's versions (ints, padded
    strings, the old md5 ones). Several steps between two saved checkpoints (durability
    "exit") only make the jump longer."""
    from ckpt.scan.copies import version_misfit

    def padded(count: int, rest: str = "0.5") -> str:
        return f"{count:032}.{rest}"

    parent = {"__start__": 1, "messages": 3, "branch:to:agent": 2}
    assert version_misfit(dict(parent), parent) is None
    assert version_misfit({**parent, "messages": 4, "agent": 4}, parent) is None
    assert version_misfit({**parent, "messages": 9}, parent) is None  # steps not saved
    wrong = version_misfit({**parent, "branch:to:agent": 3}, parent)
    assert wrong is not None and "'branch:to:agent' has version 3" in wrong
    assert "goes back" in (version_misfit({**parent, "messages": 2}, parent) or "")
    assert version_misfit({**parent, "tools": 3}, parent) is not None  # a new channel
    strings = {c: padded(v) for c, v in parent.items()}
    assert version_misfit({**strings, "messages": padded(4, "0.1")}, strings) is None
    assert version_misfit({**strings, "messages": padded(3, "0.9")}, strings) is not None
    assert version_misfit({**strings, "__start__": padded(2, "")}, strings) is not None
    md5 = {"__start__": padded(2, ""), "messages": padded(2, "f2b0")}
    assert version_misfit({**md5, "messages": padded(3, "3616"), "a": padded(3, "")}, md5) is None
    mixed = {"a": 1, "b": padded(2)}
    assert version_misfit({"a": 1, "b": padded(3)}, mixed) is None  # no highest to pass
    assert version_misfit({**strings, "messages": 4}, strings) is None  # nor a count to
    assert version_misfit({**strings, "messages": [4]}, strings) is None  # a damaged one
