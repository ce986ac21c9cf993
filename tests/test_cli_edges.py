"""Edges found by using ckpt as a user would: usage errors, pipes, hostile text, damage."""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode

runner = CliRunner()
CKPT = str(Path(sys.executable).parent / "ckpt")


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "120", **(env or {})})


def one_error_line(result: Any) -> bool:
    return bool(result.stderr.startswith("ckpt: error:") and result.stderr.count("\n") == 1)


@pytest.mark.parametrize(
    "args",
    [
        ["threads", "x", "--bogus"],
        ["show"],
        ["bogus-command"],
        ["threads", "-n", "0"],
        ["threads", "--status", "bogus"],
        ["threads", "--where", "novalue"],
    ],
)
def test_usage_errors_are_one_line(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == ExitCode.USAGE
    assert one_error_line(result), result.stderr
    assert "--help" in result.stderr


def test_bad_key_names_its_source_and_is_a_usage_error(sqlite_store: Path) -> None:
    from_env = run("threads", str(sqlite_store), env={"LANGGRAPH_AES_KEY": "short"})
    assert from_env.exit_code == ExitCode.USAGE and "LANGGRAPH_AES_KEY" in from_env.stderr
    from_option = run("threads", str(sqlite_store), "--aes-key", "short")
    assert from_option.exit_code == ExitCode.USAGE and "--aes-key" in from_option.stderr


@pytest.fixture(scope="module")
def loud_store(sqlite_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """chat.sqlite plus a 400 KB pending write, so views overflow a pipe's buffer."""
    import ormsgpack

    store = tmp_path_factory.mktemp("loud") / "loud.sqlite"
    shutil.copy(sqlite_store, store)
    with sqlite3.connect(store) as conn:
        (latest,) = conn.execute(
            "SELECT max(checkpoint_id) FROM checkpoints "
            "WHERE thread_id = 'support-1' AND checkpoint_ns = ''"
        ).fetchone()
        conn.execute(
            "INSERT INTO writes VALUES ('support-1', '', ?, 'loud-task', '', 0, 'notes', "
            "'msgpack', ?)",
            (latest, ormsgpack.packb("line of text\n" * 30_000)),
        )
    return store


@pytest.mark.parametrize(
    "args",
    [
        ["show", "support-1", "--blobs", "--full"],
        ["show", "support-1", "--writes", "--full", "--json"],
        ["diff", "support-1~1", "support-1", "--full"],
    ],
)
def test_a_reader_that_leaves_early_is_not_an_error(loud_store: Path, args: list[str]) -> None:
    pipeline = subprocess.run(
        f"{CKPT} {' '.join(args)} --db {loud_store} | head -c 100 >/dev/null; "
        "echo status ${PIPESTATUS[0]}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    expected = "status 1" if args[0] == "diff" else "status 0"  # diff: they differ
    assert pipeline.stdout.strip() == expected, pipeline.stderr
    assert pipeline.stderr == ""


def test_control_characters_from_the_store_never_reach_the_terminal(
    sqlite_store: Path, tmp_path: Path
) -> None:
    store = tmp_path / "weird.sqlite"
    shutil.copy(sqlite_store, store)
    thread = "\x1b]52;c;cGF5bG9hZA==\x07evil\x1b[2J"
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE checkpoints SET thread_id = ? WHERE thread_id = 'rich-1'", (thread,))
        conn.execute("UPDATE writes SET thread_id = ? WHERE thread_id = 'rich-1'", (thread,))
    for args in (
        ["threads", str(store)],
        ["history", thread, "--db", str(store)],
        ["show", thread, "--blobs", "--db", str(store)],
    ):
        for env in ({}, {"CKPT_FORCE_TTY": "1"}):
            result = run(*args, env=env)
            assert result.exit_code == 0, result.stderr
            assert "\x1b]52" not in result.stdout and "\x1b[2J" not in result.stdout
            assert "\x07" not in result.stdout
            assert "\\x1b]52" in result.stdout


def test_a_truncated_page_is_corrupt_not_data(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "cut.sqlite"
    data = sqlite_store.read_bytes()
    store.write_bytes(data[: len(data) - 88])  # SQLite reads the lost tail as zeros
    result = run("dump", str(store), "--quiet")
    assert result.exit_code in (0, ExitCode.CORRUPT)
    if result.exit_code == ExitCode.CORRUPT:
        assert one_error_line(result)
    for line in result.stdout.splitlines():  # whatever was printed is a real checkpoint
        assert '"channel_versions"' in line


def test_text_that_is_not_utf8_is_kept_and_escaped(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "text.sqlite"
    shutil.copy(sqlite_store, store)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE writes SET task_path = CAST(X'69FF80FE' AS TEXT)")
    result = run("dump", str(store), "--quiet")
    assert result.exit_code == 0, result.stderr
    result.stdout.encode("utf-8")  # nothing raw: each bad byte is a \udcXX escape
    assert '"task_path":"i\\udcff\\udc80\\udcfe"' in result.stdout
    import json

    writes = [w for line in result.stdout.splitlines() for w in json.loads(line)["pending_writes"]]
    assert {w["task_path"] for w in writes} == {"i\udcff\udc80\udcfe"}
    shown = run("show", "support-1~1", "--db", str(store))
    assert shown.exit_code == 0 and "i\\udcff\\udc80\\udcfe" in shown.stdout


def test_demo_refuses_folders_and_unwritable_paths(tmp_path: Path) -> None:
    folder = run("demo", str(tmp_path))
    assert folder.exit_code == ExitCode.USAGE and one_error_line(folder)
    exists = tmp_path / "x.sqlite"
    exists.write_bytes(b"")
    assert run("demo", str(exists)).exit_code == ExitCode.USAGE
    unwritable = run("demo", "/proc/ckpt-demo.sqlite")
    assert unwritable.exit_code != 0 and one_error_line(unwritable)


def test_dump_of_an_unknown_namespace_is_an_error(sqlite_store: Path) -> None:
    result = run("dump", str(sqlite_store), "--ns", "research", "--quiet")
    assert result.exit_code == ExitCode.NOT_FOUND and one_error_line(result)


def test_show_says_when_next_cannot_be_known(encrypted_store: Path, memory_pkl: Path) -> None:
    locked = run("show", "support-1", "--db", str(encrypted_store))
    assert "next        (unknown: the checkpoint is encrypted" in locked.stdout
    single = run("show", "pending-1", "--db", str(memory_pkl))
    assert "(unknown: this store keeps no channel values)" in single.stdout


def test_discovery_inside_a_dev_folder(dev_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(dev_folder)
    result = run("threads", "--json")
    assert result.exit_code == 0, result.stderr


def test_json_and_ndjson_together_is_a_usage_error(sqlite_store: Path) -> None:
    for command in (["threads", str(sqlite_store)], ["dump", str(sqlite_store)]):
        result = run(*command, "--json", "--ndjson")
        assert result.exit_code == ExitCode.USAGE and one_error_line(result)


def test_channel_narrows_writes_too(sqlite_store: Path) -> None:
    import json

    result = run(
        "show",
        "fanout-1",
        "--writes",
        "--channel",
        "__error__",
        "--json",
        "--db",
        str(sqlite_store),
    )
    assert result.exit_code == 0, result.stderr
    writes = json.loads(result.stdout)["pending_writes"]
    assert [w["channel"] for w in writes] == ["__error__"]


def test_encrypted_bodies_exit_6_after_printing(encrypted_store: Path) -> None:
    for args in (["history", "delta-1"], ["versions", "delta-1"], ["show", "delta-1", "-c", "log"]):
        result = run(*args, "--db", str(encrypted_store))
        assert result.exit_code == ExitCode.ENCRYPTED, (args, result.stderr)
        assert one_error_line(result) and "--aes-key" in result.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e12", "0"])
def test_timeout_must_be_usable(sqlite_store: Path, value: str) -> None:
    result = run("threads", str(sqlite_store), "--timeout", value)
    assert result.exit_code == ExitCode.USAGE and one_error_line(result)


def test_empty_names_are_usage_errors(sqlite_store: Path) -> None:
    for args in (["history", ""], ["versions", " "], ["dump", "--thread", ""], ["show", ""]):
        db = [] if args[0] == "dump" else ["--db"]
        result = run(*args, *db, str(sqlite_store))
        assert result.exit_code == ExitCode.USAGE, (args, result.stderr)


def test_a_blank_thread_id_is_shown_and_selectable(tmp_path: Path) -> None:
    """Threads whose ids are '' and ' ' (LangGraph takes both): `threads` shows them
    quoted, as the shell takes them back, and every command selects them (issue 46 §4)."""
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        x: int

    graph = StateGraph(State)
    graph.add_node("a", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    store = tmp_path / "blank.sqlite"
    with sqlite3.connect(store, check_same_thread=False) as conn:
        app = graph.compile(checkpointer=SqliteSaver(conn))
        for thread_id, x in (("", 10), (" ", 20), ("chat-1", 30)):
            app.invoke({"x": x}, {"configurable": {"thread_id": thread_id}})
    conn.close()
    listed = run("threads", str(store))
    assert listed.exit_code == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines()[1:] if not line.startswith("(")]
    firsts = {line.split("  ")[0].rstrip() for line in rows}
    assert firsts == {"''", "' '", "chat-1"}, listed.stdout
    for thread_id, x in (("", 11), (" ", 21)):
        shown = run("show", thread_id, "--db", str(store), "--json", "--blobs")
        assert shown.exit_code == 0, shown.stderr
        record = json.loads(shown.stdout)
        assert record["thread_id"] == thread_id and record["channel_values"]["x"] == x
        history = run("history", thread_id, "--db", str(store), "--json")
        assert history.exit_code == 0, history.stderr
        assert {r["thread_id"] for r in json.loads(history.stdout)} == {thread_id}
        dumped = run("dump", str(store), "--thread", thread_id)
        assert dumped.exit_code == 0, dumped.stderr
        assert {json.loads(line)["thread_id"] for line in dumped.stdout.splitlines()} == {thread_id}
    assert "thread      ''" in run("show", "", "--db", str(store)).stdout


def test_a_long_ambiguous_list_says_it_is_cut(sqlite_store: Path) -> None:
    result = run("show", "1", "--db", str(sqlite_store))
    assert result.exit_code == ExitCode.AMBIGUOUS and "or more" in result.stderr


def test_invisible_characters_are_shown(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "bidi.sqlite"
    shutil.copy(sqlite_store, store)
    thread = "abc\u202edcba\u200b"
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE checkpoints SET thread_id = ? WHERE thread_id = 'rich-1'", (thread,))
    for args in (["threads", str(store)], ["history", thread, "--db", str(store)]):
        result = run(*args)
        assert "\u202e" not in result.stdout and "\\u202e" in result.stdout


def test_a_pipe_is_not_a_store(tmp_path: Path) -> None:
    fifo = tmp_path / "store.fifo"
    os.mkfifo(fifo)
    result = run("threads", str(fifo))  # must not wait for a writer
    assert result.exit_code == ExitCode.UNREADABLE and "not a regular file" in result.stderr


class ClosedPipe(io.TextIOBase):
    """stdout after the reader of a pipe left (`| head`): every write is EPIPE."""

    writes = 0

    def write(self, text: str) -> int:
        ClosedPipe.writes += 1
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor")


def test_the_closed_pipe_status_belongs_to_one_run(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one process (a notebook, a test suite), `threads | head` exits 0 after a `diff`
    that ended 1 on a closed pipe: the status lives in the run's Click context."""
    codes = []
    for args in (
        ["diff", "support-1~1", "support-1", "--db", str(sqlite_store)],
        ["threads", str(sqlite_store)],
        ["diff", "support-1~1", "support-1", "--db", str(sqlite_store)],
    ):
        before = ClosedPipe.writes
        monkeypatch.setattr(sys, "stdout", ClosedPipe())
        codes.append(app(args, prog_name="ckpt", standalone_mode=False))
        monkeypatch.undo()
        assert ClosedPipe.writes > before, args  # the run really met the closed pipe
    assert codes == [ExitCode.DIFFERENT, 0, ExitCode.DIFFERENT]


def test_the_cli_exits_at_once_yet_as_exit_would(sqlite_store: Path) -> None:
    """main() skips the interpreter's teardown (os._exit) but does what an exit does: the
    atexit handlers run, a buffered stdout is written out, the code is the command's, and
    a thread of the program's own still running is waited for."""
    code = (
        "import atexit, os, sys, threading, time; from ckpt import cli; "
        "atexit.register(lambda: print('ATEXIT', file=sys.stderr)); "
        "sys.argv = ['ckpt', *sys.argv[1:]]; "
        "late = lambda: (time.sleep(0.3), print('THREAD', file=sys.stderr, flush=True)); "
        "os.environ.get('WITH_THREAD') and threading.Thread(target=late).start(); "
        "cli.main()"
    )

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "", **env},
        )

    dumped = run("dump", str(sqlite_store), "--ndjson")
    assert dumped.returncode == 0 and dumped.stderr == "ATEXIT\n"
    lines = dumped.stdout.splitlines()
    assert len(lines) > 20 and all(json.loads(line)["thread_id"] for line in lines)
    missing = run("show", "nothere", "--db", str(sqlite_store))
    assert missing.returncode == ExitCode.NOT_FOUND and missing.stderr.endswith("ATEXIT\n")
    waited = run("--version", WITH_THREAD="1")
    assert waited.returncode == 0 and waited.stdout.strip()
    assert "THREAD" in waited.stderr and "ATEXIT" in waited.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("buffered", [False, True])
def test_a_full_disk_is_one_line_and_exit_74(sqlite_store: Path, buffered: bool) -> None:
    """stdout on a full disk (/dev/full fails every write with ENOSPC): one line on stderr
    and exit 74, not "internal error" nor a traceback, whether the write fails in the
    command, before it (--version) or at the last flush (a buffered stdout)."""
    store = str(sqlite_store)
    env = {**os.environ, "PYTHONUNBUFFERED": "" if buffered else "1"}
    for args in (
        ["--version"],
        ["threads", store],
        ["threads", store, "--json"],
        ["dump", store, "--ndjson"],
        ["show", "support-1", "--db", store],
    ):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [CKPT, *args], stdout=full, stderr=subprocess.PIPE, text=True, env=env
            )
        assert done.returncode == ExitCode.NO_SPACE == 74, (args, done.stderr)
        assert done.stderr == "ckpt: error: cannot write: No space left on device\n", args


def test_a_run_builds_only_its_command() -> None:
    """`ckpt CMD` gives Typer CMD alone to build; help, usage errors and misspellings
    still see every command."""
    code = (
        "import sys, typer.main; from ckpt import cli; built = []; "
        "get = typer.main.get_command_from_info; "
        "typer.main.get_command_from_info = lambda *a, **kw: built.append(1) or get(*a, **kw); "
        "sys.argv[0] = 'ckpt'; "
        "import atexit; atexit.register(lambda: print('BUILT', len(built), file=sys.stderr)); "
        "cli.main()"
    )

    def built(*args: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
        )
        return int(done.stderr.rsplit("BUILT", 1)[1]), done.stderr + done.stdout

    assert built("versions", "--help")[0] == 1
    count, _ = built("--help")
    assert count == len(app.registered_commands) > 5
    count, text = built("thread", "x")
    assert count > 5 and "Did you mean 'threads'" in text


def test_threads_on_sqlite_imports_no_reader_it_does_not_use(samples: Path) -> None:
    """Start-up is part of every command's time (issue 14): `ckpt threads` on a SQLite
    store loads neither the pickle readers, nor Postgres, the browser or AES."""
    code = (
        "import sys; from ckpt import cli; sys.argv[0] = 'ckpt'; "
        "import atexit; atexit.register(lambda: print('MODULES', sorted("
        "m.split('.')[0] for m in sys.modules), file=sys.stderr)); "
        "cli.main()"
    )
    store = str(samples / "sqlite_checkpoints.db")
    done = subprocess.run(
        [sys.executable, "-c", code, "threads", store, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stderr.rsplit("MODULES", 1)[1].strip()))
    assert "ckpt" in loaded
    assert not loaded & {"pickle", "pickletools", "psycopg", "textual", "Crypto"}, loaded


def test_a_run_imports_only_its_command_module() -> None:
    """`ckpt threads` imports the module that declares it and no other command module;
    the table that says where each command lives is what the modules register, in the
    order `ckpt --help` lists them."""
    from ckpt.cli import COMMAND_MODULES

    names = [
        c.name or getattr(c.callback, "__name__", "").replace("_", "-")
        for c in app.registered_commands
    ]
    assert names == list(COMMAND_MODULES)
    for command, name in zip(app.registered_commands, names, strict=True):
        assert getattr(command.callback, "__module__", "") == f"ckpt.cli.{COMMAND_MODULES[name]}"
    code = (
        "import sys; from ckpt import cli; sys.argv[0] = 'ckpt'; "
        "import atexit; atexit.register(lambda: print('MODULES', sorted("
        "m for m in sys.modules if m.startswith('ckpt.cli.')), file=sys.stderr)); "
        "cli.main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "threads", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stderr.rsplit("MODULES", 1)[1]
    assert "ckpt.cli.inspect" in loaded
    for module in set(COMMAND_MODULES.values()) - {"inspect"}:
        assert f"ckpt.cli.{module}'" not in loaded, module


def test_a_bug_in_ckpt_has_an_exit_code_of_its_own(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception that is not one of ckpt's errors is ckpt's own bug (exit 70), not a bad
    store (exit 4): one line that asks for a report. The bug is planted, since ckpt has
    none known to reach this path."""
    import ckpt.api

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(ckpt.api.CheckpointStore, "iter_threads", broken)
    result = run("threads", str(sqlite_store))
    assert result.exit_code == ExitCode.INTERNAL == 70
    assert one_error_line(result) and "internal error: ZeroDivisionError: planted" in result.stderr


@pytest.mark.parametrize("how", ["added", "metadata"])
def test_a_generated_column_is_refused_at_open(tmp_path: Path, how: str) -> None:
    """issue 29: a generated column whose expression is slow made every read slow (`threads`
    52 s). LangGraph's schemas have none: one line, exit 4, nothing read."""
    store = tmp_path / "store.db"
    shutil.copy(Path(__file__).parent / "data" / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        if how == "added":
            conn.execute(
                "ALTER TABLE checkpoints ADD COLUMN slow TEXT GENERATED ALWAYS AS (upper(type))"
            )
        else:  # `metadata` itself generated, as the hostile store had it
            conn.executescript(
                "ALTER TABLE checkpoints RENAME TO old;"
                "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id "
                "TEXT, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB "
                "GENERATED ALWAYS AS (zeroblob(10)) VIRTUAL);"
                "INSERT INTO checkpoints SELECT thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint FROM old;"
                "DROP TABLE old;"
            )
    column = "slow" if how == "added" else "metadata"
    for command in (["threads", str(store)], ["dump", str(store)], ["stats", str(store)]):
        result = run(*command)
        assert result.exit_code == ExitCode.UNREADABLE, result.output
        assert one_error_line(result)
        assert f"generated column checkpoints.{column}" in result.stderr


def test_metadata_too_large_to_fetch_is_a_record_and_the_rest_shows(tmp_path: Path) -> None:
    """issue 29: a 300 MB metadata row ran threads, dump and show out of memory. Metadata
    over METADATA_LIMIT is not fetched (SQLite knows its length without reading it): the
    checkpoint shows, its metadata a `too_large` record with its size."""
    from ckpt.stores.sqlite.store import METADATA_LIMIT

    store = tmp_path / "store.db"
    shutil.copy(Path(__file__).parent / "data" / "sqlite_checkpoints.db", store)
    size = METADATA_LIMIT + 1
    with sqlite3.connect(store) as conn:
        (checkpoint,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET metadata = zeroblob(?) WHERE checkpoint_id = ?",
            (size, checkpoint),
        )
    for command in (["threads", str(store)], ["dump", str(store), "-q"]):
        assert run(*command).exit_code == 0
    shown = run("show", checkpoint, "--db", str(store), "--json")
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    assert record["metadata"] == {"__ckpt__": "too_large", "size": size}
    assert record["checkpoint_id"] == checkpoint and "channel_versions" in record
    # The raw scans of stats and types do not fetch it either; its bytes are still counted.
    from ckpt.records.model import DumpQuery
    from ckpt.stores import open_store

    with open_store(str(store)) as opened:
        (row,) = [r for r in opened.raw_checkpoints(DumpQuery()) if r.checkpoint_id == checkpoint]
    assert row.metadata.startswith(b"\x00ckpt-too-large ") and row.metadata_size == size
    for command in (["stats", str(store), "--json"], ["types", str(store), "--json"]):
        assert run(*command).exit_code == 0, command


def test_a_sqlite_read_past_its_timeout_stops_with_one_line(sqlite_store: Path) -> None:
    """issue 29: with --timeout (the API's `timeout`) no SQLite statement steps longer than
    it: SQLite's progress handler stops it, and the read ends with one line (exit 4). Without
    one there is no limit: an aggregate over a 20 GB store may take longer than any default."""
    import ckpt
    from ckpt.errors import StoreUnreadable

    with ckpt.open(sqlite_store, timeout=1e-9) as store, pytest.raises(StoreUnreadable) as caught:
        store.threads()
    assert "ran past the 1e-09 s `timeout`" in str(caught.value)
    # The size aggregates too (threads --size, stats): every row's header is read.
    from ckpt.records.model import DumpQuery
    from ckpt.stores import open_store

    with open_store(str(sqlite_store), timeout=1e-9) as opened, pytest.raises(StoreUnreadable):
        opened.sizes(DumpQuery())
    with ckpt.open(sqlite_store, timeout=60) as store:
        assert store.threads()
    with ckpt.open(sqlite_store) as store:  # no limit
        assert store.threads()
    result = run("threads", str(sqlite_store), "--timeout", "30")
    assert result.exit_code == 0, result.stderr


def test_a_body_too_large_to_fetch_is_a_record_and_the_rest_shows(tmp_path: Path) -> None:
    """issue 29: a checkpoint body over BODY_LIMIT is not fetched (SQLite measures it in the
    header): the checkpoint shows with a `too_large` body and a note, the thread's other
    checkpoints whole, and stats and types count it without reading it."""
    from ckpt.stores.sqlite.store import BODY_LIMIT

    store = tmp_path / "store.db"
    shutil.copy(Path(__file__).parent / "data" / "sqlite_checkpoints.db", store)
    size = BODY_LIMIT + 1
    with sqlite3.connect(store) as conn:
        (checkpoint,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET checkpoint = zeroblob(?) WHERE checkpoint_id = ?",
            (size, checkpoint),
        )
    shown = run("show", checkpoint, "--db", str(store), "--json")
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    assert record["checkpoint"] == {"__ckpt__": "too_large", "size": size}
    assert record["next"] is None and record["size"] == size
    assert "over the 128 MB ckpt reads" in shown.stderr
    history = json.loads(run("history", "thread-1", "--db", str(store), "--json").stdout)
    assert sum(1 for c in history if c.get("next") is not None) >= 5
    for command in (["threads", str(store)], ["dump", str(store), "-q"], ["stats", str(store)]):
        assert run(*command).exit_code == 0, command
    types = json.loads(run("types", str(store), "--json").stdout)
    assert [p["checkpoint_id"] for p in types["undecodable"]] == [checkpoint]
    checked = run("check", str(store), "--json")  # not read is not damage: a warning
    assert checked.exit_code == 0, checked.output
    (large,) = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "too-large"]
    assert large["severity"] == "warning" and large["places"][0]["checkpoint_id"] == checkpoint


def test_counts_of_one_are_singular(sqlite_store: Path) -> None:
    """`read 1 thread`, not `1 threads` (issue 46 §3)."""
    checked = run("check", str(sqlite_store), "-t", "rich-1")
    assert "read       1 thread · " in checked.stdout, checked.stdout
    typed = run("types", str(sqlite_store), "-t", "rich-1")
    assert typed.stdout.splitlines()[2].startswith("1 thread, "), typed.stdout
