"""The human views on odd and large stores: every checkpoint drawn once, in bounded time."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode
from ckpt.render.text import cell_width

runner = CliRunner()
CKPT = str(Path(sys.executable).with_name("ckpt"))
ROOT_IDS = "SELECT checkpoint_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY checkpoint_id"
SET_PARENT = "UPDATE checkpoints SET parent_checkpoint_id = ? WHERE checkpoint_id = ?"


def run(*args: str, width: int = 120) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    return result.exit_code, result.stdout, result.stderr


def edited(
    samples: Path, tmp_path: Path, name: str, sql: list[tuple[str, tuple[str, ...]]]
) -> Path:
    store = tmp_path / f"{name}.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        ids = [r[0] for r in conn.execute(ROOT_IDS)]
        for statement, picks in sql:
            conn.execute(statement, tuple(ids[int(p)] if p.isdigit() else p for p in picks))
    conn.close()
    return store


LINEAGE = {
    # name: (edits, the note the tree must carry)
    "cycle": ([(SET_PARENT, ("7", "0"))], "parent cycle"),  # 0 -> 7 -> ... -> 1 -> 0
    "short-cycle": ([(SET_PARENT, ("4", "3"))], "parent cycle"),  # 3 -> 4 -> 3
    "self": (
        [
            (
                "UPDATE checkpoints SET parent_checkpoint_id = checkpoint_id "
                "WHERE checkpoint_id = ?",
                ("3",),
            )
        ],
        "its own parent",
    ),
    "dangling": (
        [(SET_PARENT, ("1f1ec72c-ffff-6000-8000-00000000dead", "4"))],
        "not in this store",
    ),
    "newer": (  # 5 -> 6 -> 7 made a chain of its own, then 1's parent is 6
        [
            ("UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE checkpoint_id = ?", ("5",)),
            (SET_PARENT, ("6", "1")),
        ],
        "newer than this checkpoint",
    ),
}


@pytest.mark.parametrize("name", sorted(LINEAGE))
def test_odd_lineage_draws_every_checkpoint_once(samples: Path, tmp_path: Path, name: str) -> None:
    edits, note = LINEAGE[name]
    store = edited(samples, tmp_path, name, edits)
    code, out, err = run("history", "thread-1", "--db", str(store), "--json")
    assert code == 0, err
    ids = [c["checkpoint_id"][-8:] for c in json.loads(out)]
    code, out, err = run("history", "thread-1", "--db", str(store))
    assert code == 0 and err == "", err
    drawn = re.findall(r"[├└]── ([0-9a-f]{8})  step", out)
    assert sorted(drawn) == sorted(ids)  # each exactly once
    assert note in " ".join(out.split())


def _stored_twice(samples: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the sample store, and one that lost its primary key and holds every
    checkpoint row twice."""
    pristine = tmp_path / "pristine.db"
    shutil.copy(samples / "sqlite_checkpoints.db", pristine)
    store = tmp_path / "twice.db"
    shutil.copy(pristine, store)
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("CREATE TABLE loose AS SELECT * FROM checkpoints")
        conn.execute("DROP TABLE checkpoints")
        conn.execute("ALTER TABLE loose RENAME TO checkpoints")
        conn.execute("INSERT INTO checkpoints SELECT * FROM checkpoints")
    return pristine, store


def test_a_checkpoint_stored_twice_is_drawn_once(samples: Path, tmp_path: Path) -> None:
    """A store that lost its primary key holds every row twice: the tree draws each
    checkpoint once, says so, and counts each write once (found by make fuzz: every copy
    took every copy of each child, 2**depth nodes, 280 MB and 10 s)."""
    pristine, store = _stored_twice(samples, tmp_path)
    code, expected, err = run("history", "thread-1", "--db", str(pristine), width=400)
    assert code == 0, err
    code, out, err = run("history", "thread-1", "--db", str(store), width=400)
    assert code == 0 and err == "", err
    drawn = re.findall(r"[├└]── ([0-9a-f]{8})  step", out)
    assert len(drawn) == len(set(drawn)) == len(re.findall(r"[├└]── ([0-9a-f]{8})  step", expected))
    assert out.count("stored 2 times (drawn once)") == len(drawn)
    assert out.replace("  ⚠ stored 2 times (drawn once)", "") == expected


def _grown(samples: Path, tmp_path: Path, count: int, *, wide: bool) -> Path:
    """thread-1 with `count` more checkpoints: all children of one (a fork `count` wide),
    or each the child of the one before (a chain `count` long)."""
    store = tmp_path / "grown.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        ids = [r[0] for r in conn.execute(ROOT_IDS)]
        row = conn.execute(
            "SELECT * FROM checkpoints WHERE checkpoint_id = ?", (ids[-1],)
        ).fetchone()
        rows, parent = [], ids[-2]
        for i in range(count):
            new = f"1f1ec72d-0000-6000-8000-{i:012x}"  # after every id of the sample
            rows.append((row[0], row[1], new, parent, row[4], row[5], row[6]))
            parent = parent if wide else new
        conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()
    return store


@pytest.mark.parametrize(
    ("count", "wide"),
    [
        (4_000, True),
        (2_000, False),
        pytest.param(20_000, True, marks=pytest.mark.long),
        pytest.param(10_000, False, marks=pytest.mark.long),
    ],
)
def test_a_wide_fork_and_a_long_chain_draw_in_bounded_time(
    samples: Path, tmp_path: Path, count: int, wide: bool
) -> None:
    store = _grown(samples, tmp_path, count, wide=wide)
    started = time.monotonic()
    code, out, err = run("history", "thread-1", "--db", str(store), width=80)
    elapsed = time.monotonic() - started
    assert code == 0 and err == "", err
    drawn = re.findall(r"[├└]── ([0-9a-f]{8})  step", out)
    assert len(drawn) == len(set(drawn)) == 11 + count  # the subgraph's 3 too
    assert elapsed < 30, elapsed  # Rich's Tree took 19 s for the 20,000-wide fork
    code, out, _ = run("history", "thread-1", "--last", "5", "--db", str(store))
    assert code == 0 and len(re.findall(r"[├└]── ([0-9a-f]{8})  step", out)) < 10 + (
        count if wide else 0
    )


def saver_thread(path: Path, thread_id: str, rows: list[tuple[str, str | None, int, str]]) -> None:
    """Checkpoints of an empty state written through SqliteSaver.put, one per row of
    (checkpoint id, parent id, step, metadata source)."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        conn.execute("PRAGMA synchronous = OFF")
        saver = SqliteSaver(conn)
        for checkpoint_id, parent, step, source in rows:
            config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            if parent is not None:
                config["configurable"]["checkpoint_id"] = parent
            checkpoint: Any = {**empty_checkpoint(), "id": checkpoint_id}
            metadata: Any = {"source": source, "step": step, "parents": {}}
            saver.put(config, checkpoint, metadata, {})


def _nested_forks(path: Path, depth: int) -> list[str]:
    """A thread written through SqliteSaver.put where every checkpoint x[i] of a chain
    also has an update child y[i] newer than all of x[i+1]'s subtree: the trunk takes y[i],
    so x[i+1] is a fork, its own fork x[i+2] inside it, `depth` forks deep."""
    from langgraph.checkpoint.base.id import uuid6

    xs = [str(uuid6()) for _ in range(depth + 1)]
    ys = [str(uuid6()) for _ in range(depth + 1)][::-1]  # ys[0] the newest
    rows = [(x, xs[i - 1] if i else None, i, "loop") for i, x in enumerate(xs)]
    rows += [(ys[i], xs[i], i + 1, "update") for i in range(depth, -1, -1)]
    saver_thread(path, "deep-1", rows)
    return xs + ys


@pytest.mark.parametrize("depth", [1_000, pytest.param(3_000, marks=pytest.mark.long)])
def test_forks_nested_thousands_deep_draw(tmp_path: Path, depth: int) -> None:
    """No recursion from the records to the lines, and no per-character cost on guides
    thousands of columns wide: `depth` nested forks draw, each checkpoint once."""
    store = tmp_path / "deep.sqlite"
    ids = _nested_forks(store, depth)
    drawing = tmp_path / "history.txt"
    with drawing.open("w") as out:
        done = subprocess.run(
            [CKPT, "history", "deep-1", "--db", str(store)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "120"},
            check=False,
        )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    drawn: list[str] = []
    deepest = 0
    with drawing.open() as lines:
        for line in lines:
            found = re.search(r"[├└]── ([0-9a-f]{8})  step", line)
            if found:
                drawn.append(found.group(1))
                deepest = max(deepest, found.start())
    assert sorted(drawn) == sorted(i[-8:] for i in ids)
    assert deepest >= 4 * depth  # the innermost fork is drawn `depth` levels in


# -- what the views tell a user who is debugging ---------------------------------------------


def test_errors_that_lead_somewhere(sqlite_store: Path) -> None:
    db = ("--db", str(sqlite_store))
    code, _, err = run("history", "suport-1", *db)
    assert code == ExitCode.NOT_FOUND and "did you mean 'support-1'?" in err
    code, _, err = run("show", "nosuch", *db)
    assert code == ExitCode.NOT_FOUND and str(sqlite_store) in err
    code, _, err = run("dump", str(sqlite_store), "--since", "yesterday")
    assert code == ExitCode.NOT_FOUND and "neither an ISO time" in err
    code, _, err = run("show", "1f", *db)  # every id of the store starts so
    assert code == ExitCode.AMBIGUOUS and err.count("(thread ") == 5 and "and more" in err
    assert err.count("\n") == 1


def test_ns_takes_a_subgraph_node_name(sqlite_store: Path) -> None:
    db = ("--db", str(sqlite_store))
    code, out, err = run("show", "subgraph-2", "--ns", "research", *db, "--json")
    assert code == 0, err
    assert json.loads(out)["checkpoint_ns"].startswith("research:")
    code, _, err = run("show", "subgraph-2", "--ns", "nosuch", *db)
    assert code == ExitCode.NOT_FOUND and "'research:" in err  # the namespaces there are
    # The parent's show names the task whose subgraph ran, with the selector to open it.
    code, out, _ = run("show", "subgraph-2", *db)
    selector = re.search(r"subgraph checkpoints: (ckpt show .*)", out)
    assert selector is not None
    again = selector.group(1).split()[2:]
    code, out, err = run("show", *(a.strip("'") for a in again), *db, "--json")
    assert code == 0, err
    assert json.loads(out)["checkpoint_ns"].startswith("research:")


def test_a_failed_task_is_shown_with_its_input(sqlite_store: Path) -> None:
    code, out, _ = run("show", "fanout-1", "--db", str(sqlite_store))
    failed = out[out.index("task worker[1]") :].splitlines()
    assert failed[1].strip().startswith('input {"item": "invoice-2"}')
    assert "no traceback" in failed[2]
    code, out, _ = run("history", "fanout-1", "--db", str(sqlite_store))
    assert '✗ worker[1]({"item": "invoice-2"}): ValueError' in " ".join(out.split())


def test_piped_output_is_not_wrapped_and_has_no_trailing_spaces(sqlite_store: Path) -> None:
    for args in (["show", "support-1", "--blobs"], ["history", "fanout-1"], ["diff", "fork-1"]):
        result = runner.invoke(app, [*args, "--db", str(sqlite_store)], env={"COLUMNS": ""})
        lines = result.stdout.splitlines()
        assert lines and all(line == line.rstrip() for line in lines), args
    history = runner.invoke(
        app, ["history", "fanout-1", "--db", str(sqlite_store)], env={"COLUMNS": ""}
    )
    failed = next(line for line in history.stdout.splitlines() if "✗" in line)
    assert failed.endswith("worker[2] → results")  # one line, however long


def test_history_says_what_each_update_wrote(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    code, out, _ = run("history", "fork-1", "--db", str(sqlite_store))
    assert "wrote notes=[…, edit-A]" in out and "wrote notes=[…, edit-B]" in out
    assert "branch: the earlier run" in out and "branch: update_state" in out
    # The records say so: two update_state calls on one checkpoint, the first went on.
    code, out, _ = run("history", manifest["fork"], "--db", str(sqlite_store), "--json")
    records = json.loads(out)
    continued, abandoned = manifest["fork_children"]
    (earlier,) = [
        r["checkpoint_id"]
        for r in records
        if r["parent_checkpoint_id"] == manifest["fork_parent"]
        and r["checkpoint_id"] not in manifest["fork_children"]
    ]
    assert {r["checkpoint_id"]: r["branch"] for r in records if r["branch"]} == {
        abandoned: {"kind": "update_state", "trunk_checkpoint_id": continued},
        earlier: {"kind": "earlier_run", "trunk_checkpoint_id": continued},
    }


def branched_store(path: Path) -> list[str]:
    """One checkpoint with five children, written by SqliteSaver: the trunk (an update the
    thread went on from) and a branch of each kind beside it. Returns the ids in order."""
    from langgraph.checkpoint.base.id import uuid6

    ids = sorted(str(uuid6(clock_seq=i)) for i in range(7))
    # (parent, source) by index; 2 is the trunk: the newest, 6, is under it.
    layout = [(None, "input"), (0, "loop"), (0, "update"), (0, "fork"), (0, "loop")]
    layout += [(0, "update"), (2, "loop")]
    rows = [
        (ids[i], None if parent is None else ids[parent], i, source)
        for i, (parent, source) in enumerate(layout)
    ]
    saver_thread(path, "t", rows)
    return ids


def test_history_says_how_each_branch_began(tmp_path: Path) -> None:
    """The library tells each branch's kind (`branch` of the history records, every path
    to them alike); the tree only words it."""
    import ckpt
    from ckpt.records.types import history_nodes

    store = tmp_path / "branched.sqlite"
    ids = branched_store(store)
    trunk = ids[2]
    expected = {
        ids[1]: {"kind": "earlier_run", "trunk_checkpoint_id": trunk},  # older than the trunk
        ids[3]: {"kind": "fork", "trunk_checkpoint_id": trunk},
        ids[4]: {"kind": "replay", "trunk_checkpoint_id": trunk},  # newer than the trunk
        ids[5]: {"kind": "update_state", "trunk_checkpoint_id": trunk},
    }
    code, out, _ = run("history", "t", "--db", str(store), "--json")
    streamed = {r["checkpoint_id"]: r["branch"] for r in json.loads(out)}
    code, out, _ = run("history", "t", "--db", str(store), "--json", "--last", "7")
    listed = {r["checkpoint_id"]: r["branch"] for r in json.loads(out)}
    with ckpt.open(store) as opened:
        tree = opened.history_tree("t")
    drawn = {
        node["checkpoint"]["checkpoint_id"]: node["checkpoint"]["branch"]
        for chain in tree
        for node in history_nodes(chain)
    }
    assert streamed == listed == drawn == {cid: expected.get(cid) for cid in ids}
    code, out, _ = run("history", "t", "--db", str(store))
    labels = [line.split("branch: ", 1)[1] for line in out.splitlines() if "branch: " in line]
    short = [cid[-8:] for cid in ids]
    assert labels == [
        f"the earlier run, left when {short[2]} (update) went on from {short[0]}",
        f"a copy of {short[0]} (fork)",
        f"a replay from {short[0]}",
        "update_state",
    ]


def test_show_numbers_messages_and_keeps_the_last(sqlite_store: Path) -> None:
    code, out, _ = run("show", "support-1", "--blobs", "--last", "2", "--db", str(sqlite_store))
    assert code == 0
    numbers = re.findall(r"^#(\d+) ", out, re.MULTILINE)
    assert len(numbers) == 2 and int(numbers[0]) + 1 == int(numbers[1])
    assert f"#1–#{int(numbers[0]) - 1}) not shown" in out


def test_versions_fit_80_columns_and_say_how_many_are_left_out(sqlite_store: Path) -> None:
    code, out, _ = run("versions", "support-1", "--db", str(sqlite_store), width=80)
    assert code == 0 and all(len(line) <= 80 for line in out.splitlines())
    shown, total, left = map(int, re.search(r"newest (\d+) of (\d+); (\d+) left out", out).groups())  # type: ignore[union-attr]
    assert shown + left == total == 15 and shown >= 5


def test_demo_prints_a_next_command_that_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    ckpt = Path(sys.executable).parent / "ckpt"
    result = subprocess.run(
        [str(ckpt), "demo", str(tmp_path / "d.sqlite")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},  # ckpt is not on it
        timeout=120,
    )
    hint = result.stderr.splitlines()[-1]
    assert hint.startswith("next: ") and not hint.startswith("next: ckpt ")
    command = hint.removeprefix("next: ").split()
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "support-1" in again.stdout


def test_local_and_utc_times_are_labelled_the_same_way_in_every_view(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time as clock

    db = ("--db", str(samples / "sqlite_checkpoints.db"))
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30 all year, no daylight saving
    clock.tzset()
    try:
        views = {
            "threads": ["threads", db[1]],
            "history": ["history", "thread-1", *db],
            "show": ["show", "thread-1", *db],
            "diff": ["diff", "thread-1", *db],
        }
        for name, args in views.items():
            _, utc, _ = run(*args)
            _, local, _ = run(*args, "--local")
            assert "04:01:43" in utc and "UTC" in utc, name  # the stored time, labelled
            assert "09:31:43" in local and "IST" in local, name
            assert not re.search(r"(?<!T)04:01:43(?!\.)", local), name  # only as stored, in show
            assert run(*args, "--utc")[1] == utc, name
        # JSON keeps the stored times whatever the flag.
        assert (
            run("history", "thread-1", *db, "--json", "--local")[1]
            == run("history", "thread-1", *db, "--json")[1]
        )
    finally:
        monkeypatch.undo()
        clock.tzset()


def test_a_thread_whose_rows_are_stored_twice_is_listed_once(samples: Path, tmp_path: Path) -> None:
    """`threads` joins each thread's latest id to its row: a store that lost its primary
    key holds that row twice, and the thread is still one row of the listing."""
    pristine, store = _stored_twice(samples, tmp_path)
    code, expected, err = run("threads", str(pristine), "--json")
    assert code == 0, err
    code, out, err = run("threads", str(store), "--json")
    assert code == 0, err
    pristine_threads, twice_threads = json.loads(expected), json.loads(out)
    assert [t["thread_id"] for t in twice_threads] == [t["thread_id"] for t in pristine_threads]
    for before, after in zip(pristine_threads, twice_threads, strict=True):
        assert after == {**before, "checkpoints": 2 * before["checkpoints"]}


# -- paste back into LangGraph (issue 26, 5) -----------------------------------------------------


def test_the_printed_calls_run_in_langgraph(tmp_path: Path) -> None:
    """`show` prints the config of the checkpoint, and for the thread's newest checkpoint the
    call that answers its interrupts or retries its failed tasks. Pasted into LangGraph with
    the demo graphs, the resume call answers the interrupt (also one raised in a subgraph)
    and the retry runs the failed task again."""
    import sqlite3
    from contextlib import closing

    from fixtures.build import fixture_warnings
    from fixtures.graphs import run_scenarios
    from fixtures.state_oracle import demo_graphs
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    store = tmp_path / "paste.sqlite"
    with closing(sqlite3.connect(store, check_same_thread=False)) as conn, fixture_warnings():
        saver = SqliteSaver(conn)
        manifest = run_scenarios(saver)
        graphs = demo_graphs(saver)
        for thread in (manifest["interrupt_waiting"], manifest["subgraph_interrupt"]):
            code, out, err = run("show", thread, "--db", str(store), width=400)
            assert code == 0, err
            lines = {
                line.split("  ", 1)[0]: line.split("  ", 1)[1].strip()
                for line in out.split("in LangGraph\n", 1)[1].split("\n\n", 1)[0].splitlines()
            }
            config = json.loads(lines["config"])
            assert config["configurable"]["thread_id"] == thread
            assert (
                graphs[thread].get_state(config).config["configurable"]["checkpoint_id"]
                == (config["configurable"]["checkpoint_id"])
            )
            call = lines["resume"].replace("...", '{"approved": True, "answer": "yes"}')
            eval(call, {"graph": graphs[thread], "Command": Command})
            after = graphs[thread].get_state({"configurable": {"thread_id": thread}})
            assert not after.interrupts, (thread, after.interrupts)
        failed = manifest["fanout_error"]
        code, out, _ = run("show", failed, "--db", str(store), width=400)
        retry = next(line for line in out.splitlines() if line.startswith("retry"))
        before = len(list(saver.list({"configurable": {"thread_id": failed}})))
        with pytest.raises(ValueError, match="cannot parse"):
            eval(retry.split("  ", 1)[1].strip(), {"graph": graphs[failed]})
        # The failed worker ran again from the newest checkpoint: no new step was saved.
        assert len(list(saver.list({"configurable": {"thread_id": failed}}))) == before


# -- views at 80 columns (issue 26, 4) -----------------------------------------------------------

NARROW = {"plain": {}, "terminal": {"CKPT_FORCE_TTY": "1", "NO_COLOR": "1"}}
_SIZE = r"\b\d+(?:\.\d)? (?:B|KB|MB|GB)\b"


def _copy(store: Path, tmp_path: Path, name: str = "chat.sqlite") -> Path:
    """A copy of the session's store (WAL included), for commands that may change one."""
    copy = tmp_path / name
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    return copy


def run_at(width: int, *args: str, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width), **(env or {})})
    assert result.exit_code in (0, 1), (args, result.stderr)  # diff exits 1: they differ
    return result.stdout


@pytest.mark.parametrize("mode", sorted(NARROW))
def test_every_view_fits_80_columns(sqlite_store: Path, tmp_path: Path, mode: str) -> None:
    store = _copy(sqlite_store, tmp_path)
    db = ("--db", str(store))
    views = [
        ["threads", str(store)],
        ["types", str(store)],
        ["prune", str(store), "--all"],
        ["show", "approval-2", "--writes", *db],
        ["show", "fanout-1", *db],
        ["show", "subgraph-2", *db],
        ["diff", "fork-1", *db],
        ["vacuum", str(store)],
        ["vacuum", str(store), "--into", str(tmp_path / "copy.sqlite")],
        ["copy", str(store), str(tmp_path / "new.sqlite"), "--all"],  # a new target
        ["copy", str(store), str(store.with_name("again.sqlite")), "--all"],  # conflicts
    ]
    copied = run_at(
        80, "copy", str(store), str(store.with_name("again.sqlite")), "--all", "--apply"
    )
    assert "copied" in copied
    for args in views:
        out = run_at(80, *args, env=NARROW[mode])
        assert "\x1b[" not in out, args  # not a terminal, or NO_COLOR: no styles
        too_wide = [line for line in out.splitlines() if cell_width(line) > 80]
        assert not too_wide, (args, too_wide)
        assert all(line == line.rstrip() for line in out.splitlines()), args


def test_threads_at_80_columns_keep_interrupt_ids_and_errors_whole(sqlite_store: Path) -> None:
    """The id is what Command(resume={id: ...}) needs, the error what went wrong: a detail
    that does not fit on the row goes under it, whole."""
    threads = json.loads(run_at(80, "threads", str(sqlite_store), "--json"))
    ids = [t["interrupts"][0]["id"] for t in threads if t["interrupts"]]
    errors = [t["failed_tasks"][0]["error"] for t in threads if t["failed_tasks"]]
    assert ids and errors
    for mode in NARROW.values():
        out = run_at(80, "threads", str(sqlite_store), env=mode)
        for interrupt_id in ids:
            assert interrupt_id in out
        for error in errors:
            assert error in " ".join(out.split())
        *rows, note = out.splitlines()
        under = [line for line in rows if line.startswith(" ")]
        assert len(under) >= len(ids) + len(errors)
        assert all(line.startswith(" " * 12) for line in under), under  # under STATUS
        assert len(rows) - len(under) == 1 + len(threads)  # the header, a row per thread
        # The columns left out for the width are said, never dropped silently (issue 46 §3).
        left_out = [h for h in ("SOURCE", "PENDING", "NS") if h not in rows[0].split()]
        assert left_out and note.startswith("(") and note.endswith(")"), note
        for header in left_out:
            assert f"{header} " in note or f"{header}," in note, (header, note)
        assert "left out at 80 columns" in note or "on every row" in note
    # Into a pipe nothing is fitted: each thread is one line, its detail on it.
    piped = runner.invoke(app, ["threads", str(sqlite_store)], env={"COLUMNS": ""}).stdout
    assert not any(line.startswith(" ") for line in piped.splitlines())
    assert all(i in piped for i in ids) and all(e in piped for e in errors)


def test_types_at_80_columns_shows_every_class_name_whole(sqlite_store: Path) -> None:
    record = json.loads(run_at(80, "types", str(sqlite_store), "--json"))
    names = []
    for t in record["types"]:
        name = f"{t['module']}.{t['name']}" if t["module"] else t["name"]
        names.append(f"{name}.{t['method']}()" if t["method"] else name)
    assert any(len(n) > 40 for n in names)  # langchain_core.messages.human.HumanMessage
    for width in (80, 100, 120):
        for mode in NARROW.values():
            out = run_at(width, "types", str(sqlite_store), env=mode)
            table = out.split("Classes named by stored values", 1)[1].split("\n\n", 2)[:2]
            shown = re.findall(r"[\w.]+(?:\(\))?", "\n".join(table))
            missing = [n for n in names if n not in shown]
            assert not missing, (width, mode, missing)


@pytest.mark.parametrize("width", [60, 80])
def test_wrapped_lines_of_show_keep_their_indent(sqlite_store: Path, width: int) -> None:
    """Under `pending writes` only a task's heading starts at column 0; what wraps goes on
    indented under the line it belongs to."""
    for thread in ("approval-2", "fanout-1", "subgraph-2", "subgraph-1~1"):
        out = run_at(width, "show", thread, "--writes", "--db", str(sqlite_store))
        writes = out.split("pending writes\n", 1)[1].splitlines()
        headings = [i for i, line in enumerate(writes) if line.startswith("task ")]
        assert headings and headings[0] == 0, (thread, writes)
        for line in writes:
            assert line.startswith(("task ", "  ")) or not line, (thread, line)
        ids = [line for line in writes if "id=" in line]
        if thread in ("approval-2", "subgraph-2"):
            assert ids and all(line.startswith("      id=") for line in ids), ids
    # A task's path goes on under its heading; the subgraph selector stays one line.
    out = run_at(80, "show", "fanout-1", "--writes", "--db", str(sqlite_store))
    assert re.search(r"^task worker\[1\]  [0-9a-f-]{36}\n    ~__pregel_push, 0+1, 0+$", out, re.M)
    out = run_at(80, "show", "subgraph-2", "--writes", "--db", str(sqlite_store))
    assert re.search(r"^    ckpt show subgraph-2 --ns 'research:[0-9a-f-]{36}'$", out, re.M)


@pytest.mark.parametrize("width", [60, 70, 80])
def test_the_diff_header_wraps_under_the_id_and_keeps_sizes_whole(
    sqlite_store: Path, width: int
) -> None:
    out = run_at(width, "diff", "fork-1", "--db", str(sqlite_store))
    header = out.split("\n\n", 1)[0].splitlines()
    assert header[0] == "thread fork-1" and header[-1].strip() == "B is A's child"
    assert all(line.startswith(("A  ", "B  ", "   ")) for line in header[1:]), header
    assert len(re.findall(_SIZE, "\n".join(header))) == 2
    assert not any(re.fullmatch(r"\s*" + _SIZE, line) for line in header), header


def test_prune_at_80_columns_keeps_namespaces_and_reasons(
    sqlite_store: Path, tmp_path: Path
) -> None:
    store = _copy(sqlite_store, tmp_path)
    plan = json.loads(run_at(80, "prune", str(store), "--all", "--json"))
    namespaces = [
        (ns["checkpoint_ns"], ns["kept"] or ns["whole"])
        for t in plan["threads"]
        for ns in t["namespaces"]
        if ns["checkpoint_ns"]
    ]
    assert namespaces
    out = run_at(80, "prune", str(store), "--all")
    assert all(cell_width(line) <= 80 for line in out.splitlines())
    for ns, _ in namespaces:
        assert re.search(rf"^\S+  {re.escape(ns)}$", out, re.M), ns  # whole, on a line
    assert "nothing: a subgraph call from a deleted root checkpoint" in out
    # Into a pipe: a row per namespace, what it keeps at its end.
    piped = runner.invoke(app, ["prune", str(store), "--all"], env={"COLUMNS": ""}).stdout
    rows = [line for line in piped.splitlines() if "research:" in line]
    assert len(rows) == len(namespaces) and all(
        line.endswith(("checkpoint", "head")) for line in rows
    )


def test_vacuum_into_without_apply_says_apply_writes_the_copy(
    sqlite_store: Path, tmp_path: Path
) -> None:
    store = _copy(sqlite_store, tmp_path)
    into = tmp_path / "compacted.sqlite"
    out = run_at(80, "vacuum", str(store), "--into", str(into))
    # Compared without spaces: a long temporary path may wrap anywhere at 80 columns.
    said = "".join(out.split())
    wanted = f"nothing changed: run again with --apply to write the copy to {into}"
    assert said.endswith("".join(wanted.split()))
    assert "--into FILE" not in out
    assert not into.exists()
    out = run_at(80, "vacuum", str(store))
    assert out.splitlines()[-1] == "nothing changed: --apply runs VACUUM, --into FILE writes a copy"


def test_stats_health_lines_wrap_under_their_text(sqlite_store: Path) -> None:
    """A health line the width wraps goes on under its text, not at column 0: each finding
    starts with its mark under a severity heading, and what follows it is indented."""
    out = run_at(60, "stats", str(sqlite_store), "--quiet")
    health = [line for line in out.split("\nHealth\n", 1)[1].splitlines() if line]
    assert any(line.startswith("    ") for line in health), health
    headings = ("Errors (", "Warnings (", "Notes (")
    for line in health:
        assert line[:1] in ("✓", "!", "·", "✗") or line.startswith(("  ", *headings)), line
        assert len(line) <= 60, line
