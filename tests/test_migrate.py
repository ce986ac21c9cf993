"""`ckpt migrate`: a v1 graph's saved threads (done, interrupted at a human review, failed)
migrated to v2 (a key renamed, a scratch key dropped, the review node renamed), and
LangGraph itself as the judge: without migrate v2 loses the renamed key; after it v2's
state and history are v1's renamed, the raw rows hold no old name, interrupted threads
resume to the state a from-scratch v2 run reaches and no node runs twice. SQLite and
Postgres."""

from __future__ import annotations

import hashlib
import json
import operator
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Annotated, Any

import ormsgpack
import pytest
from jsonschema import Draft202012Validator
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import ckpt
import migrate_graphs as graphs
from ckpt.errors import Unsafe
from invoke import ckpt as run_ckpt

SCHEMA = Draft202012Validator(
    json.loads((Path(__file__).parent.parent / "docs" / "migrate.schema.json").read_text())
)
STEPS = ["--rename-channel", "notes=findings", "--drop-channel", "scratch",
         "--rename-node", "review=approve"]  # fmt: skip
RENAMED = {"notes": "findings"}
GONE_CHANNELS = {"notes", "scratch", "branch:to:review"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def sqlite_saver(path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


@pytest.fixture(scope="module")
def v1_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The v1 store, and v1's history of every thread as LangGraph showed it."""
    path = tmp_path_factory.mktemp("migrate") / "v1.sqlite"
    with sqlite_saver(path) as saver:
        graph = graphs.populate(saver)
        history = {t: history_of(graph, t) for t in graphs.THREADS}
    return path, history


@pytest.fixture
def store(v1_store: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    copy = tmp_path / "store.sqlite"
    shutil.copy(v1_store[0], copy)
    return copy


def snapshot_view(snapshot: Any) -> dict[str, Any]:
    """What a test compares of a StateSnapshot: values, next, ids, the tasks and their
    interrupts (values only: their ids are the task's), metadata without ckpt's list."""
    metadata = {k: v for k, v in (snapshot.metadata or {}).items() if k != "ckpt_migrations"}
    return {
        "values": json.loads(json.dumps(snapshot.values, default=repr, sort_keys=True)),
        "next": list(snapshot.next),
        "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"],
        "parent": (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "metadata": metadata,
        "tasks": [
            (t.name, [i.value for i in t.interrupts], t.error is not None) for t in snapshot.tasks
        ],
    }


def history_of(graph: Any, thread_id: str) -> list[dict[str, Any]]:
    config = {"configurable": {"thread_id": thread_id}}
    return [snapshot_view(s) for s in graph.get_state_history(config)]


def expected_v2(view: dict[str, Any]) -> dict[str, Any]:
    """A v1 snapshot view as v2 must show it after the migration."""
    values = {RENAMED.get(k, k): v for k, v in view["values"].items() if k != "scratch"}
    rename = {"review": "approve"}
    return {
        **view,
        "values": dict(sorted(values.items())),
        "next": [rename.get(n, n) for n in view["next"]],
        "tasks": [(rename.get(n, n), i, e) for n, i, e in view["tasks"]],
    }


def rows_of(path: Path) -> list[Any]:
    with closing(sqlite3.connect(path)) as conn:
        return [
            *conn.execute("SELECT * FROM checkpoints ORDER BY 1, 2, 3"),
            *conn.execute("SELECT * FROM writes ORDER BY 1, 2, 3, 4, 5"),
        ]


def raw_names(path: Path) -> set[str]:
    """Every name a raw row holds where LangGraph looks names up: body keys, versions,
    versions_seen keys and inner keys, updated_channels, write channels, task paths."""
    names: set[str] = set()
    with closing(sqlite3.connect(path)) as conn:
        for (body,) in conn.execute("SELECT checkpoint FROM checkpoints"):
            document = ormsgpack.unpackb(body, ext_hook=lambda code, data: None)
            names.update(document["channel_values"])
            names.update(document["channel_values"].get("__start__") or ())  # the input's keys
            names.update(document["channel_versions"])
            names.update(document.get("updated_channels") or ())
            for node, seen in document["versions_seen"].items():
                names.add(node)
                names.update(seen)
        for channel, task_path in conn.execute("SELECT channel, task_path FROM writes"):
            names.add(channel)
            names.update(task_path.removeprefix("~").split(", "))
    return names


def migrate_json(*args: str) -> dict[str, Any]:
    result = run_ckpt("migrate", *args, "--json")
    assert result.exit_code == 0, result.output
    record: dict[str, Any] = json.loads(result.stdout)
    SCHEMA.validate(record)
    return record


# -- SQLite -----------------------------------------------------------------------------------


def test_v2_loses_the_renamed_key_without_migrate(store: Path) -> None:
    with sqlite_saver(store) as saver:
        v2 = graphs.build(2, saver)
        config = {"configurable": {"thread_id": "waiting-1"}}
        assert "findings" not in v2.get_state(config).values
        # v2 does not even know the node the thread waits in: resuming runs nothing.
        v2.invoke(Command(resume="yes"), config)
        assert "draft" not in v2.get_state(config).values


def test_the_plan_changes_nothing_and_shows_a_diff(store: Path) -> None:
    before = digest(store)
    record = migrate_json(str(store), "--all", *STEPS)
    assert digest(store) == before
    assert record["applied"] is False
    assert record["totals"]["threads"] == len(graphs.THREADS)
    waiting = next(t for t in record["threads"] if t["thread_id"] == "waiting-1")
    assert waiting["action"] == "migrate"
    diff = "\n".join(waiting["diff"])
    assert '-  "notes",' in diff and '+  "findings",' in diff
    assert '-   "task_path": "~__pregel_pull, review",' in diff
    assert '+   "task_path": "~__pregel_pull, approve",' in diff
    text = run_ckpt("migrate", str(store), "--all", *STEPS)
    assert text.exit_code == 0, text.output
    assert "nothing changed: run again with --apply" in text.stdout


def test_migrate_then_v2_resumes_every_thread(
    store: Path, v1_store: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    backup = tmp_path / "backup.sqlite"
    record = migrate_json(str(store), "--all", *STEPS, "--backup", str(backup), "--apply")
    assert record["applied"] and record["totals"]["refused"] == 0
    assert record["backup"] == str(backup)
    assert rows_of(backup) == rows_of(v1_store[0])  # the backup is the store as it was
    assert not raw_names(store) & (GONE_CHANNELS | {"review"})
    checked = run_ckpt("check", str(store))  # every row still reads as LangGraph reads it
    assert checked.exit_code == 0 and "no errors" in checked.stdout, checked.output
    with sqlite_saver(store) as saver:
        v2 = graphs.build(2, saver)
        for thread_id, history in v1_store[1].items():
            assert history_of(v2, thread_id) == [expected_v2(v) for v in history], thread_id
        resumed = resume_all(v2)
    with sqlite_saver(tmp_path / "fresh.sqlite") as saver:
        fresh = graphs.populate(saver, version=2)
        expected = resume_all(fresh)
    assert resumed == expected


def resume_all(graph: Any) -> dict[str, Any]:
    """Resume the interrupted threads (by interrupt id for one, plainly for the other) and
    retry the failed one: each one's final values and the nodes the resume ran."""
    outcome: dict[str, Any] = {}
    for thread_id, (_, _, answer) in graphs.THREADS.items():
        config = {"configurable": {"thread_id": thread_id}}
        state = graph.get_state(config)
        graphs.RUNS.clear()
        if answer is None:
            if thread_id == "waiting-2":
                (pending,) = state.interrupts
                resume: Any = Command(resume={pending.id: "by id"})
            else:
                resume = Command(resume="yes")
            graph.invoke(resume, config)
        elif state.next:
            with pytest.raises(RuntimeError):
                graph.invoke(None, config)
        values = graph.get_state(config).values
        outcome[thread_id] = (
            json.loads(json.dumps(values, default=repr, sort_keys=True)),
            dict(graphs.RUNS),
        )
    assert outcome["waiting-1"][1] == {"approve": 1, "finish": 1}  # plan ran not again
    assert outcome["failed-1"][1] == {"finish": 1}
    return outcome


def test_a_second_run_changes_nothing(store: Path) -> None:
    migrate_json(str(store), "--all", *STEPS, "--apply")
    once = digest(store)
    record = migrate_json(str(store), "--all", *STEPS, "--apply")
    assert record["totals"]["threads"] == 0
    assert record["totals"]["unchanged"] == len(graphs.THREADS)
    assert digest(store) == once
    with closing(sqlite3.connect(store)) as conn:
        (metadata,) = conn.execute(
            "SELECT metadata FROM checkpoints WHERE thread_id = 'done-1' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
    assert json.loads(metadata)["ckpt_migrations"] == [
        "rename_channel:notes=findings", "drop_channel:scratch", "rename_node:review=approve"
    ]  # fmt: skip


def test_a_thread_that_reads_back_wrong_rolls_back_and_a_rerun_finishes(store: Path) -> None:
    """A trigger that changes what migrate wrote in one thread: that thread is rolled back
    (exit 14), the threads before it stay migrated, those after it untouched (as a killed
    migrate leaves them), and a second run finishes the rest."""
    from ckpt.errors import ExitCode

    with closing(sqlite3.connect(store)) as conn:
        conn.execute(
            "CREATE TRIGGER meddle AFTER UPDATE ON checkpoints WHEN NEW.thread_id = 'waiting-1' "
            "BEGIN UPDATE checkpoints SET metadata = '{}' WHERE rowid = NEW.rowid; END"
        )
        conn.commit()
    waiting = rows_of(store)
    result = run_ckpt("migrate", str(store), "--all", *STEPS, "--apply")
    assert result.exit_code == ExitCode.MISMATCH, result.output
    assert "'waiting-1' read back differs" in result.stderr
    names = {t: thread_names(store, t) for t in graphs.THREADS}
    assert not names["done-1"] & GONE_CHANNELS and not names["failed-1"] & GONE_CHANNELS
    assert "notes" in names["waiting-1"] and "notes" in names["waiting-2"]
    untouched = [r for r in rows_of(store) if r[0] in ("waiting-1", "waiting-2")]
    assert untouched == [r for r in waiting if r[0] in ("waiting-1", "waiting-2")]
    with closing(sqlite3.connect(store)) as conn:
        conn.execute("DROP TRIGGER meddle")
        conn.commit()
    record = migrate_json(str(store), "--all", *STEPS, "--apply")
    assert record["totals"]["threads"] == 2 and record["totals"]["unchanged"] == 2
    assert not raw_names(store) & GONE_CHANNELS


def thread_names(path: Path, thread_id: str) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {
            name
            for (body,) in conn.execute(
                "SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (thread_id,)
            )
            for name in ormsgpack.unpackb(body, ext_hook=lambda code, data: None)[
                "channel_versions"
            ]
        }


def test_a_plan_naming_a_channel_no_thread_has(store: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[[step]]\nname = "ghost"\nkind = "rename_channel"\nfrom = "nope"\nto = "x"\n')
    before = digest(store)
    record = migrate_json(str(store), "--all", "--plan", str(plan), "--apply")
    assert record["totals"]["unchanged"] == len(graphs.THREADS)
    assert record["steps"][0]["name"] == "ghost"
    assert digest(store) == before


def test_a_transform_that_raises_changes_nothing(store: Path) -> None:
    before = digest(store)

    def boom(value: Any) -> Any:
        raise ValueError("no")

    with ckpt.open(str(store)) as checkpoints, pytest.raises(Unsafe, match="transform raised"):
        checkpoints.migrate(
            all=True, rename_channel={"notes": "findings"}, transform={"draft": boom}, apply=True
        )
    assert digest(store) == before


def test_transform_and_add_channel(store: Path) -> None:
    with ckpt.open(str(store)) as checkpoints:
        record = checkpoints.migrate(
            threads=["done-1"],
            transform={"notes": lambda v: {**v, "text": v["text"].upper()}},
            add_channel={"extra": {"a": [1, 2]}},
            apply=True,
        )
    assert record["totals"]["threads"] == 1
    with sqlite_saver(store) as saver:
        values = graphs.build(1, saver).get_state({"configurable": {"thread_id": "done-1"}}).values
    assert values["notes"] == {"topic": "apples", "text": "NOTES ON APPLES"}
    with ckpt.open(str(store)) as checkpoints:
        shown = checkpoints.checkpoint("done-1")
    assert shown["channel_values"]["extra"] == {"a": [1, 2]}


def test_latest_migrates_only_the_newest_checkpoints(store: Path) -> None:
    record = migrate_json(str(store), "--all", *STEPS, "--latest", "--apply")
    assert record["latest"] and record["totals"]["checkpoints"] == len(graphs.THREADS)
    with sqlite_saver(store) as saver:
        v2 = graphs.build(2, saver)
        config = {"configurable": {"thread_id": "waiting-1"}}
        assert v2.get_state(config).values["findings"]["text"] == "notes on pears"
        graphs.RUNS.clear()
        v2.invoke(Command(resume="yes"), config)
        assert dict(graphs.RUNS) == {"approve": 1, "finish": 1}


def test_check_plan_names_the_threads_behind(store: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[[step]]\nname = "findings"\nkind = "rename_channel"\nfrom = "notes"\nto = "findings"\n'
    )
    migrate_json(str(store), "--thread", "done-1", "--plan", str(plan), "--apply")
    result = run_ckpt("check", str(store), "--plan", str(plan))
    assert result.exit_code == 1, result.output
    behind = set(result.stdout.split())
    assert behind == set(graphs.THREADS) - {"done-1"}
    as_json = run_ckpt("check", str(store), "--plan", str(plan), "--json")
    record = json.loads(as_json.stdout)
    Draft202012Validator(
        json.loads((Path(__file__).parent.parent / "docs" / "behind.schema.json").read_text())
    ).validate(record)
    assert set(record["behind"]) == behind
    migrate_json(str(store), "--all", "--plan", str(plan), "--apply")
    assert run_ckpt("check", str(store), "--plan", str(plan)).exit_code == 0


def test_bad_input_is_one_line(store: Path, tmp_path: Path) -> None:
    result = run_ckpt("migrate", str(store), "--all", "--rename-channel", "notes")
    assert result.exit_code == 2
    plan = tmp_path / "bad.toml"
    plan.write_text("[[step]]\nkind = 'rename_channel'\n")
    result = run_ckpt("migrate", str(store), "--all", "--plan", str(plan))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_other_kinds_refuse_in_one_line(tmp_path: Path) -> None:
    from ckpt.errors import ExitCode

    folder = tmp_path / ".langgraph_api"
    folder.mkdir()
    (folder / ".langgraph_checkpoint.1.pckl").write_bytes(b"\x80\x02}q\x00.")
    result = run_ckpt("migrate", str(folder), "--all", "--drop-channel", "x")
    assert result.exit_code == ExitCode.UNSUPPORTED, result.output
    errors = [line for line in result.stderr.splitlines() if "ckpt: note" not in line]
    assert len(errors) == 1 and "migrate is not supported on pickle stores" in errors[0]


# -- Postgres ---------------------------------------------------------------------------------


def pg_raw_names(dsn: str) -> set[str]:
    import psycopg

    names: set[str] = set()
    with psycopg.connect(dsn) as conn:
        for (document,) in conn.execute("SELECT checkpoint FROM checkpoints"):
            names.update(document["channel_values"])
            names.update(document["channel_versions"])
            names.update(document.get("updated_channels") or ())
            for node, seen in document["versions_seen"].items():
                names.add(node)
                names.update(seen)
        for channel, tag, blob in conn.execute("SELECT channel, type, blob FROM checkpoint_blobs"):
            names.add(channel)
            if channel == "__start__" and tag == "msgpack":  # the input's keys
                names.update(ormsgpack.unpackb(blob, ext_hook=lambda code, data: None))
        for channel, task_path in conn.execute("SELECT channel, task_path FROM checkpoint_writes"):
            names.add(channel)
            names.update(task_path.removeprefix("~").split(", "))
    return names


@pytest.mark.postgres
def test_postgres_migrate_then_v2_resumes_every_thread(
    pg_new_database: Callable[[], str], tmp_path: Path
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    from pg import url_of

    dsn = pg_new_database()
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        graph = graphs.populate(saver)
        history = {t: history_of(graph, t) for t in graphs.THREADS}
    url = url_of(dsn)
    assert "notes" in pg_raw_names(dsn)
    backup = tmp_path / "backup.sqlite"
    new_app = graph_module(tmp_path)  # --graph: each thread loads through PostgresSaver
    record = migrate_json(
        url, "--all", *STEPS, "--backup", str(backup), "--apply", "--graph", f"{new_app}:graph"
    )
    assert record["totals"]["threads"] == len(graphs.THREADS)
    assert all(t["graph_error"] is None for t in record["threads"])
    assert record["totals"]["blobs"] > 0  # `notes`' blobs, renamed once per version
    with sqlite_saver(backup) as saver:  # the backup holds v1's threads as they were
        v1 = graphs.build(1, saver)
        assert {t: history_of(v1, t) for t in graphs.THREADS} == history
    assert not pg_raw_names(dsn) & (GONE_CHANNELS | {"review"})
    with PostgresSaver.from_conn_string(dsn) as saver:
        v2 = graphs.build(2, saver)
        for thread_id, v1_history in history.items():
            assert history_of(v2, thread_id) == [expected_v2(v) for v in v1_history], thread_id
        resumed = resume_all(v2)
    with sqlite_saver(tmp_path / "fresh.sqlite") as saver:
        expected = resume_all(graphs.populate(saver, version=2))
    assert resumed == expected
    again = migrate_json(url, "--all", *STEPS, "--apply")
    assert again["totals"]["threads"] == 0
    # The restore the plan names puts v1's threads back.
    restored = run_ckpt("copy", str(backup), url, "--all", "--on-conflict", "replace", "--apply")
    assert restored.exit_code == 0, restored.output
    assert "notes" in pg_raw_names(dsn) and "findings" not in pg_raw_names(dsn)


# -- Sends to a renamed node, a renamed DeltaChannel ------------------------------------------

FAN_STEPS = ["--rename-node", "worker=crew", "--rename-channel", "log=journal"]


def fan_expected(view: dict[str, Any]) -> dict[str, Any]:
    values = {("journal" if k == "log" else k): v for k, v in view["values"].items()}
    rename = {"worker": "crew"}
    metadata = dict(view["metadata"])
    if "counters_since_delta_snapshot" in metadata:  # names the delta channel
        counters = metadata["counters_since_delta_snapshot"]
        metadata["counters_since_delta_snapshot"] = {
            ("journal" if k == "log" else k): v for k, v in counters.items()
        }
    return {
        **view,
        "metadata": metadata,
        "values": dict(sorted(values.items())),
        "next": [rename.get(n, n) for n in view["next"]],
        "tasks": [(rename.get(n, n), i, e) for n, i, e in view["tasks"]],
    }


def retry_fan(graph: Any) -> dict[str, Any]:
    """Retry the failed fan-out (its failing item fixed): final values, and what ran."""
    config = {"configurable": {"thread_id": "fan-failed"}}
    graphs.RUNS.clear()
    graph.invoke(None, config)
    values = json.loads(json.dumps(graph.get_state(config).values, sort_keys=True))
    return {"values": values, "runs": dict(graphs.RUNS)}


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sends_to_a_renamed_node_and_a_renamed_delta_channel(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The failed fan-out's saved worker writes are found under the renamed node's push
    task ids: the retry runs only the worker that failed; a DeltaChannel renamed is
    rebuilt under its new name from its renamed snapshot and writes."""
    if kind == "sqlite":
        location = str(tmp_path / "fan.sqlite")

        def saver() -> Any:
            return SqliteSaver.from_conn_string(location)

    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        from pg import url_of

        dsn = request.getfixturevalue("pg_new_database")()
        location = url_of(dsn)

        def saver() -> Any:
            return PostgresSaver.from_conn_string(dsn)

        with saver() as pg:
            pg.setup()
    with saver() as checkpointer:
        v1 = graphs.populate_fan(checkpointer)
        history = {t: history_of(v1, t) for t in graphs.FAN_THREADS}
    record = migrate_json(location, "--all", *FAN_STEPS, "--apply")
    assert record["totals"]["threads"] == len(graphs.FAN_THREADS)
    with saver() as checkpointer:
        v2 = graphs.build_fan(2, checkpointer)
        for thread_id, v1_history in history.items():
            assert history_of(v2, thread_id) == [fan_expected(v) for v in v1_history]
        retried = retry_fan(v2)
    assert retried["runs"] == {"crew": 1, "collect": 1}  # workers 1 and 3 not again
    with sqlite_saver(tmp_path / "fresh.sqlite") as checkpointer:
        assert retry_fan(graphs.populate_fan(checkpointer, version=2)) == retried


# -- a killed migrate -------------------------------------------------------------------------


def thread_states(path: Path) -> dict[str, set[bool]]:
    """Per thread: whether each checkpoint lists the plan's steps (migrated) or not."""
    states: dict[str, set[bool]] = {}
    with closing(sqlite3.connect(path)) as conn:
        for thread_id, metadata in conn.execute("SELECT thread_id, metadata FROM checkpoints"):
            states.setdefault(thread_id, set()).add("ckpt_migrations" in json.loads(metadata))
    return states


@pytest.mark.long
def test_a_killed_migrate_leaves_every_thread_whole(store: Path) -> None:
    """SIGKILL in the middle of an applied migration of many threads: each thread is
    migrated whole or not at all, and a second run migrates the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    # Many threads: the v1 threads' rows again under new thread ids (task ids and interrupt
    # ids do not name the thread, so each copy is a thread LangGraph resumes).
    with closing(sqlite3.connect(store)) as conn:
        for n in range(150):
            conn.execute(
                "INSERT INTO checkpoints SELECT thread_id || ?, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                "WHERE thread_id NOT LIKE '%#%'",
                (f"#{n:03d}",),
            )
            conn.execute(
                "INSERT INTO writes SELECT thread_id || ?, checkpoint_ns, checkpoint_id, task_id, "
                "task_path, idx, channel, type, value FROM writes WHERE thread_id NOT LIKE '%#%'",
                (f"#{n:03d}",),
            )
        conn.commit()
    command = [sys.executable, "-m", "ckpt", "migrate", str(store), "--all", *STEPS, "--apply"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if any(True in s for s in thread_states(store).values()):
            break
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    states = thread_states(store)
    assert all(len(s) == 1 for s in states.values()), "a thread is half migrated"
    done = sum(s == {True} for s in states.values())
    assert 0 < done < len(states), "the kill did not land mid-run: make the store bigger"
    record = migrate_json(str(store), "--all", *STEPS, "--apply")
    assert record["totals"]["threads"] == len(states) - done
    assert all(s == {True} for s in thread_states(store).values())
    assert not raw_names(store) & GONE_CHANNELS
    with sqlite_saver(store) as saver:
        v2 = graphs.build(2, saver)
        config = {"configurable": {"thread_id": "waiting-1#149"}}
        graphs.RUNS.clear()
        v2.invoke(Command(resume="yes"), config)
        assert dict(graphs.RUNS) == {"approve": 1, "finish": 1}


@pytest.mark.postgres
def test_postgres_transform_add_and_latest(pg_new_database: Callable[[], str]) -> None:
    """On Postgres a transformed value is a blob shared by every checkpoint at its version
    (transformed once); an added non-primitive value becomes a blob; `--latest` writes a
    renamed channel's blob under the new name beside the old one, which the older
    checkpoints still name."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from pg import url_of

    dsn = pg_new_database()
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        graphs.populate(saver)
    with ckpt.open(url_of(dsn)) as checkpoints:
        record = checkpoints.migrate(
            threads=["done-1"],
            transform={"notes": lambda v: {**v, "text": v["text"].upper()}},
            add_channel={"extra": {"a": [1, 2]}},
            apply=True,
        )
    assert record["totals"]["threads"] == 1 and record["totals"]["blobs"] > 0
    done = {"configurable": {"thread_id": "done-1"}}
    with PostgresSaver.from_conn_string(dsn) as saver:
        values = graphs.build(1, saver).get_state(done).values
    assert values["notes"] == {"topic": "apples", "text": "NOTES ON APPLES"}
    with ckpt.open(url_of(dsn)) as checkpoints:
        assert checkpoints.checkpoint("done-1")["channel_values"]["extra"] == {"a": [1, 2]}
    record = migrate_json(url_of(dsn), "--thread", "failed-1", *STEPS, "--latest", "--apply")
    assert record["totals"]["checkpoints"] == 1
    failed = {"configurable": {"thread_id": "failed-1"}}
    with PostgresSaver.from_conn_string(dsn) as saver:
        v1_history = history_of(graphs.build(1, saver), "failed-1")
        v2 = graphs.build(2, saver)
        assert v2.get_state(failed).values["findings"]["text"] == "notes on figs"
        graphs.RUNS.clear()
        with pytest.raises(RuntimeError):
            v2.invoke(None, failed)
        assert dict(graphs.RUNS) == {"finish": 1}
    # The checkpoint before the newest is v1's still, values and all.
    assert v1_history[1]["values"]["notes"] == {"topic": "figs", "text": "notes on figs"}
    assert "scratch" in v1_history[1]["values"]


# -- a barrier: another node's task id names the renamed node -------------------------------


def build_join(first: str, checkpointer: Any) -> Any:
    """START -> FIRST and b, both -> c (a barrier channel `join:FIRST+b:c`), c asks."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt

    class Join(TypedDict, total=False):
        seen: Annotated[list[str], operator.add]
        answer: str

    def node(name: str) -> Any:
        def run(state: Join) -> Join:
            graphs.RUNS[name] += 1
            if name == "c":
                return {"answer": str(interrupt({"seen": sorted(state.get("seen", []))}))}
            return {"seen": [name]}

        return run

    graph = StateGraph(Join)
    for name in (first, "b", "c"):
        graph.add_node(name, node(name))
    graph.add_edge(START, first)
    graph.add_edge(START, "b")
    graph.add_edge([first, "b"], "c")
    return graph.compile(checkpointer=checkpointer)


def test_renaming_a_node_a_barrier_waits_on(tmp_path: Path) -> None:
    """Node c waits on `join:a+b:c`: renaming `a` changes c's triggers, so c's task id and
    the id of the interrupt it raised; resuming by that id under v2 finds it."""
    path = tmp_path / "join.sqlite"
    config = {"configurable": {"thread_id": "join"}}
    with sqlite_saver(path) as saver:
        build_join("a", saver).invoke({"seen": []}, config)
    migrate_json(str(path), "--all", "--rename-node", "a=alpha", "--apply")
    with sqlite_saver(path) as saver:
        v2 = build_join("alpha", saver)
        state = v2.get_state(config)
        assert state.next == ("c",)
        (pending,) = state.interrupts
        assert pending.value == {"seen": ["a", "b"]}
        graphs.RUNS.clear()
        v2.invoke(Command(resume={pending.id: "ok"}), config)
        assert dict(graphs.RUNS) == {"c": 1}
        assert v2.get_state(config).values["answer"] == "ok"


def build_ask(name: str, checkpointer: Any) -> Any:
    """One node that asks twice: its second interrupt's id counts the first answer."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt

    class Ask(TypedDict, total=False):
        answers: list[str]

    def ask(state: Ask) -> Ask:
        graphs.RUNS[name] += 1
        return {"answers": [str(interrupt("first?")), str(interrupt("second?"))]}

    graph = StateGraph(Ask)
    graph.add_node(name, ask)
    graph.add_edge(START, name)
    return graph.compile(checkpointer=checkpointer)


def test_a_renamed_node_that_asked_twice(tmp_path: Path) -> None:
    path = tmp_path / "ask.sqlite"
    config = {"configurable": {"thread_id": "ask"}}
    with sqlite_saver(path) as saver:
        v1 = build_ask("ask", saver)
        v1.invoke({}, config)
        v1.invoke(Command(resume="one"), config)  # the second question waits
    migrate_json(str(path), "--all", "--rename-node", "ask=query", "--apply")
    with sqlite_saver(path) as saver:
        v2 = build_ask("query", saver)
        (pending,) = v2.get_state(config).interrupts
        assert pending.value == "second?"
        v2.invoke(Command(resume={pending.id: "two"}), config)
        assert v2.get_state(config).values["answers"] == ["one", "two"]


def test_renaming_into_a_name_a_thread_has_is_refused(store: Path) -> None:
    from ckpt.errors import ExitCode

    before = rows_of(store)
    result = run_ckpt("migrate", str(store), "--all", "--rename-channel", "notes=draft", "--apply")
    assert result.exit_code == ExitCode.UNSAFE, result.output
    assert "holds both 'notes' and 'draft'" in result.stderr
    assert rows_of(store) == before


def test_a_plan_file_with_every_kind_of_step(store: Path, tmp_path: Path) -> None:
    plan = tmp_path / "v2.toml"
    plan.write_text(
        '[[step]]\nname = "findings"\nkind = "rename_channel"\nfrom = "notes"\nto = "findings"\n'
        '[[step]]\nname = "no-scratch"\nkind = "drop_channel"\nchannel = "scratch"\n'
        '[[step]]\nname = "approve"\nkind = "rename_node"\nfrom = "review"\nto = "approve"\n'
        '[[step]]\nname = "priority"\nkind = "add_channel"\nchannel = "priority"\n'
        'value = { level = "normal", tags = ["a"] }\n'
    )
    record = migrate_json(str(store), "--thread", "waiting-1", "--plan", str(plan), "--apply")
    assert [s["name"] for s in record["steps"]] == ["findings", "no-scratch", "approve", "priority"]
    with ckpt.open(str(store)) as checkpoints:
        values = checkpoints.checkpoint("waiting-1")["channel_values"]
    assert values["priority"] == {"level": "normal", "tags": ["a"]}
    assert "findings" in values and "notes" not in values and "scratch" not in values


# -- --graph: the user's new graph loads every migrated thread ---------------------------------

GRAPH_MODULE = '''
import sys

sys.path.insert(0, {tests!r})
from migrate_graphs import build

graph = build(2, None)  # the new graph, compiled without a checkpointer


class StillReadsNotes:
    """An application that still reads the old key: its get_state raises without it."""

    def __init__(self, compiled):
        self.compiled = compiled

    def copy(self, update):
        return StillReadsNotes(self.compiled.copy(update=update))

    def get_state(self, config):
        state = self.compiled.get_state(config)
        if state.values and "notes" not in state.values:
            raise KeyError("notes")
        return state

    def get_state_history(self, config):
        return self.compiled.get_state_history(config)


stale = StillReadsNotes(build(1, None))
'''


def graph_module(tmp_path: Path) -> Path:
    path = tmp_path / "new_app.py"
    path.write_text(GRAPH_MODULE.format(tests=str(Path(__file__).parent)))
    return path


def test_graph_loads_every_migrated_thread(store: Path, tmp_path: Path) -> None:
    """--graph FILE:ATTR with the v2 graph: every migrated thread loads through it and
    LangGraph's SqliteSaver (graph_error null, exit 0)."""
    module = graph_module(tmp_path)
    record = migrate_json(str(store), "--all", *STEPS, "--apply", "--graph", f"{module}:graph")
    migrated = [t for t in record["threads"] if t["action"] == "migrate"]
    assert migrated and all(t["graph_error"] is None for t in migrated)


def test_graph_names_the_threads_it_cannot_load(store: Path, tmp_path: Path) -> None:
    """A graph that raises on a migrated thread: each thread stays migrated (committed),
    its record says what the graph raised, and the run ends with exit 14."""
    module = graph_module(tmp_path)
    result = run_ckpt(
        "migrate", str(store), "--all", *STEPS, "--apply", "--json", "--graph", f"{module}:stale"
    )
    assert result.exit_code == 14, result.output
    record = json.loads(result.stdout)
    SCHEMA.validate(record)
    failed = [t for t in record["threads"] if t["graph_error"]]
    assert failed and all("KeyError" in t["graph_error"] for t in failed)
    assert all(t["applied"] for t in failed)
    assert "the new graph cannot load migrated thread" in result.stderr


def test_a_graph_that_cannot_be_imported_is_one_line(store: Path, tmp_path: Path) -> None:
    before = digest(store)
    broken = tmp_path / "broken_app.py"
    broken.write_text("raise RuntimeError('no config')\n")
    for spec, words in (
        (f"{broken}:graph", "importing it raised RuntimeError: no config"),
        ("no_such_module_here:graph", "importing it raised ModuleNotFoundError"),
        (f"{graph_module(tmp_path)}:nothing", "not a compiled LangGraph graph"),
        ("graph", "give MODULE:ATTR"),
    ):
        result = run_ckpt("migrate", str(store), "--all", *STEPS, "--apply", "--graph", spec)
        assert result.exit_code == 2, (spec, result.output)
        assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert digest(store) == before
