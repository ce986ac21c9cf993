"""Each damage `ckpt check` finds in the parts of a row and in the links between rows, one
kind at a time, on a copy of the fixture store (chat.sqlite, written by SqliteSaver from the
demo graphs): the error is on the damaged thread and on no other, and LangGraph itself
shows that the damage matters: `get_state_history` through the thread's compiled graph
raises, or gives another history or state than on the undamaged store.

(The generated damage of every field of every row type is another test's; these are the
cases each rule was written for.)"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from fixtures.oracle import quiet_serde_log
from fixtures.state_oracle import demo_graphs
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite import SqliteSaver

from checking import by_code, check, errors

Damage = Callable[[sqlite3.Connection], dict[str, set[str]]]


# -- reading and writing the fixture's rows ----------------------------------------------------


def ids(conn: sqlite3.Connection, thread: str, ns: str = "") -> list[str]:
    return [
        i
        for (i,) in conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id",
            (thread, ns),
        )
    ]


def body(conn: sqlite3.Connection, checkpoint_id: str) -> dict[str, Any]:
    (data,) = conn.execute(
        "SELECT checkpoint FROM checkpoints WHERE checkpoint_id = ?", (checkpoint_id,)
    ).fetchone()
    decoded: dict[str, Any] = ormsgpack.unpackb(
        data, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS
    )
    return decoded


def put_body(conn: sqlite3.Connection, checkpoint_id: str, value: Any) -> None:
    conn.execute(
        "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        (ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS), checkpoint_id),
    )


def history(path: Path, thread: str) -> Any:
    """What LangGraph makes of the thread: its history through the thread's compiled graph
    (ids, parents, steps, values and next of each snapshot), or the exception it raises."""
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn, quiet_serde_log():
        graph = demo_graphs(SqliteSaver(conn))[thread]
        try:
            return [
                (
                    s.config["configurable"]["checkpoint_id"],
                    s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None,
                    (s.metadata or {}).get("step"),
                    json.dumps(s.values, default=repr, sort_keys=True),
                    s.next,
                )
                for s in graph.get_state_history({"configurable": {"thread_id": thread}})
            ]
        except Exception as exc:  # what the damage makes LangGraph raise
            return type(exc).__name__


# -- the damages: each changes one thread, and says the errors check must give ----------------


def body_null(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE checkpoints SET checkpoint = NULL WHERE checkpoint_id = ?",
        (ids(conn, "support-1")[-1],),
    )
    return {"malformed-checkpoint": {"support-1"}}


def body_tagged_bytes(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE checkpoints SET type = 'bytes' WHERE checkpoint_id = ?",
        (ids(conn, "support-2")[3],),
    )
    return {"malformed-checkpoint": {"support-2"}}


def body_without(field: str) -> Damage:
    def damage(conn: sqlite3.Connection) -> dict[str, set[str]]:
        newest = ids(conn, "approval-1")[-1]
        changed = body(conn, newest)
        del changed[field]
        put_body(conn, newest, changed)
        return {"malformed-checkpoint": {"approval-1"}}

    damage.__name__ = f"body_without_{field}"
    return damage


def body_version_text(conn: sqlite3.Connection) -> dict[str, set[str]]:
    newest = ids(conn, "subgraph-2")[-1]
    put_body(conn, newest, {**body(conn, newest), "v": "4"})
    return {"malformed-checkpoint": {"subgraph-2"}}


def body_id_not_a_uuid(conn: sqlite3.Connection) -> dict[str, set[str]]:
    newest = ids(conn, "fork-1")[-1]
    put_body(conn, newest, {**body(conn, newest), "id": "not-a-uuid"})
    return {"malformed-checkpoint": {"fork-1"}, "id-mismatch": {"fork-1"}}


def metadata_null(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE checkpoints SET metadata = CAST('null' AS BLOB) WHERE checkpoint_id = ?",
        (ids(conn, "support-3")[-2],),
    )
    return {"malformed-metadata": {"support-3"}}


def metadata_step_text(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), '$.step', 'one') "
        "AS BLOB) WHERE checkpoint_id = ?",
        (ids(conn, "pending-1")[-1],),
    )
    return {"malformed-metadata": {"pending-1"}}


def write_untyped(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE writes SET type = NULL WHERE rowid = (SELECT rowid FROM writes WHERE "
        "thread_id = 'approval-2' AND type = 'msgpack' ORDER BY rowid LIMIT 1)"
    )
    return {"malformed-write": {"approval-2"}}


# A thread's writes in the order of its checkpoints, not of their rowids: the fixture's
# graphs run their tasks in threads, so rows of one thread land in an order that varies.
FIRST_WRITE = "checkpoint_id, task_id, idx"
LAST_WRITE = "checkpoint_id DESC, task_id DESC, idx DESC"


def write_without_bytes(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE writes SET value = NULL WHERE rowid = (SELECT rowid FROM writes WHERE "
        f"thread_id = 'support-2' AND type = 'msgpack' ORDER BY {LAST_WRITE} LIMIT 1)"
    )
    return {"malformed-write": {"support-2"}}


def body_kept_as_text(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """The same bytes as SQLite TEXT: sqlite3 hands LangGraph a str it cannot unpack."""
    conn.execute(
        "UPDATE checkpoints SET checkpoint = CAST(checkpoint AS TEXT) WHERE checkpoint_id = ?",
        (ids(conn, "pending-1")[1],),
    )
    return {"malformed-checkpoint": {"pending-1"}}


def write_kept_as_text(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE writes SET value = CAST(value AS TEXT) WHERE rowid = (SELECT rowid FROM "
        f"writes WHERE thread_id = 'support-2' AND type = 'msgpack' ORDER BY {FIRST_WRITE} "
        "LIMIT 1)"
    )
    return {"malformed-write": {"support-2"}}


def write_index_text(conn: sqlite3.Connection) -> dict[str, set[str]]:
    conn.execute(
        "UPDATE writes SET idx = 'x' WHERE rowid = (SELECT rowid FROM writes "
        f"WHERE thread_id = 'support-3' ORDER BY {FIRST_WRITE} LIMIT 1)"
    )
    return {"malformed-write": {"support-3"}}


def parent_link_lost(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """A checkpoint from the middle of fork-1's chain loses its parent link: LangGraph's
    history stops there."""
    conn.execute(
        "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE checkpoint_id = ?",
        (ids(conn, "fork-1")[4],),
    )
    return {"two-roots": {"fork-1"}}


def step_goes_back(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """A row rewritten into another step: it no longer follows from its parent."""
    conn.execute(
        "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), '$.step', 0) "
        "AS BLOB) WHERE checkpoint_id = ?",
        (ids(conn, "support-1")[-1],),
    )
    return {"chain-mismatch": {"support-1"}}


def copied_onto_a_new_parent(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """One of support-2's checkpoints, newer than all of support-1's, copied into support-1
    on top of its newest: no parent link dangles, no id sorts wrong; its step goes back,
    and its id is also a checkpoint of support-2 (which stays undamaged)."""
    newest = ids(conn, "support-1")[-1]
    copied = next(i for i in ids(conn, "support-2")[1:] if i > newest)
    conn.execute(
        "INSERT INTO checkpoints SELECT 'support-1', checkpoint_ns, checkpoint_id, ?, type, "
        "checkpoint, metadata FROM checkpoints WHERE thread_id = 'support-2' AND "
        "checkpoint_id = ?",
        (newest, copied),
    )
    return {"chain-mismatch": {"support-1"}, "copied-checkpoint": {"support-1"}}


def second_root(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """pending-1's first checkpoint again, under a new (newest) id: LangGraph resumes from
    the thread's start."""
    first = ids(conn, "pending-1")[0]
    forged = str(uuid6(clock_seq=-1))
    conn.execute(
        "INSERT INTO checkpoints SELECT thread_id, checkpoint_ns, ?, NULL, type, checkpoint, "
        "metadata FROM checkpoints WHERE checkpoint_id = ?",
        (forged, first),
    )
    put_body(conn, forged, {**body(conn, first), "id": forged})
    return {"two-roots": {"pending-1"}}


def subgraph_copied(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """subgraph-1's subgraph run copied whole into delta-1: its checkpoints hang on
    subgraph-1's root checkpoint, which delta-1 does not hold."""
    conn.execute(
        "INSERT INTO checkpoints SELECT 'delta-1', checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
        "WHERE thread_id = 'subgraph-1' AND checkpoint_ns != ''"
    )
    return {"copied-checkpoint": {"delta-1"}}


DAMAGES: list[Damage] = [
    body_null,
    body_tagged_bytes,
    body_without("channel_versions"),
    body_without("versions_seen"),
    body_without("channel_values"),
    body_without("ts"),
    body_version_text,
    body_id_not_a_uuid,
    metadata_null,
    metadata_step_text,
    write_untyped,
    write_without_bytes,
    body_kept_as_text,
    write_kept_as_text,
    write_index_text,
    parent_link_lost,
    step_goes_back,
    copied_onto_a_new_parent,
    second_root,
]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__)
def test_each_damage_is_an_error_on_its_thread_and_matters_to_langgraph(
    damage: Damage, sqlite_store: Path, tmp_path: Path
) -> None:
    path = tmp_path / "damaged.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        expected = damage(conn)
    record = check(str(path))
    assert errors(record) == expected
    (thread,) = {t for threads in expected.values() for t in threads}
    assert history(path, thread) != history(sqlite_store, thread)
    # The thread alone (no other thread read) still shows its damage.
    narrowed = check(str(path), "--thread", thread)
    assert narrowed["scanned"]["threads"] == 1
    assert errors(narrowed) and errors(narrowed).items() <= expected.items()


def test_a_copied_subgraph_run_hangs_on_another_thread(sqlite_store: Path, tmp_path: Path) -> None:
    """The copied namespace is not one LangGraph's root history reaches, but the saver
    lists its checkpoints as the thread's: a history with checkpoints added."""
    path = tmp_path / "damaged.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        expected = subgraph_copied(conn)
    record = check(str(path))
    assert errors(record) == expected
    (copied,) = by_code(record)["copied-checkpoint"]["places"][:1]
    assert "subgraph-1" in copied["detail"]

    def listed(store: Path) -> int:
        with closing(sqlite3.connect(store, check_same_thread=False)) as conn:
            return sum(
                1 for _ in SqliteSaver(conn).list({"configurable": {"thread_id": "delta-1"}})
            )

    assert listed(path) > listed(sqlite_store)


def test_a_thread_copied_whole_is_not_damage(sqlite_store: Path, tmp_path: Path) -> None:
    """The same checkpoints under another thread id, parents and all (what `ckpt copy
    --rename` and LangGraph's thread copy make): a shared history, not a copied row."""
    path = tmp_path / "copied.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO checkpoints SELECT 'support-1-copy', checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = 'support-1'"
        )
        conn.execute(
            "INSERT INTO writes SELECT 'support-1-copy', checkpoint_ns, checkpoint_id, task_id, "
            "task_path, idx, channel, type, value FROM writes WHERE thread_id = 'support-1'"
        )
    assert errors(check(str(path))) == {}


@pytest.mark.parametrize("length", [100, 5_000])
def test_a_body_kept_as_long_text_is_an_error_not_a_crash(
    sqlite_store: Path, tmp_path: Path, length: int
) -> None:
    """A checkpoint body SQLite holds as TEXT is read as its bytes, however long: past the
    4 KB that ids are shared at, the row reader once kept it a str and `check` ended in
    an internal error (found by the long generated-damage run)."""
    path = tmp_path / "damaged.sqlite"
    shutil.copy(sqlite_store, path)
    with closing(sqlite3.connect(path)) as conn, conn:
        thread, checkpoint_id = conn.execute(
            "SELECT thread_id, checkpoint_id FROM checkpoints ORDER BY rowid LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            ("x" * length, checkpoint_id),
        )
    record = check(str(path))
    assert set().union(*errors(record).values()) == {thread}
