"""`--follow`: a graph writes a store (with an interrupt and a failure) while ckpt watches;
every checkpoint shows once, in order, the writes that land later show as they land, and
the writer never fails for it. On SQLite in this process (the library's follower), and with
the graph and `ckpt history --follow` in processes of their own on every server kind
(`long`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ckpt.api
from ckpt.analysis.follow import HistoryFollower
from follow_writer import run_graph, saver_of
from invoke import run

ROOT = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).parent / "follow_writer.py"


def history_ids(store: str, thread: str) -> list[str]:
    result = run("history", thread, "--db", store, "--json")
    assert result.exit_code == 0, result.stderr
    return [r["checkpoint_id"] for r in json.loads(result.stdout)]


def look(follower: HistoryFollower) -> list[Any]:
    """One poll as `follow_history` makes it: the store's change token first (a reader of
    files saved whole opens them again there), then what is new."""
    follower.store.change_token()
    return list(follower.poll())


def check_events(events: list[dict[str, Any]], expected: list[str]) -> None:
    """Every checkpoint once, oldest id first; the interrupt and the failure seen in the
    writes that landed on checkpoints already shown, or in the checkpoints themselves."""
    shown = [e["checkpoint_id"] for e in events if "event" not in e]
    assert shown == expected
    writes = [w for e in events for w in e.get("pending_writes") or []]
    channels = {w["channel"] for w in writes}
    assert {"__interrupt__", "__error__"} <= channels, channels
    landed = [e for e in events if e.get("event") == "writes"]
    assert landed, f"no writes landed after their checkpoint was shown: {events}"
    for event in landed:
        assert event["checkpoint_id"] in shown[: shown.index(event["checkpoint_id"]) + 1]
    failed = [t for e in events for t in e.get("tasks") or [] if t["state"] == "failed"]
    assert failed and "PlannedFailure" in json.dumps(failed[-1]["error"])


def test_the_follower_sees_each_checkpoint_once_and_the_writes_as_they_land(
    tmp_path: Path,
) -> None:
    """The library's follower, polling while the graph runs in a thread of this process."""
    path = tmp_path / "live.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with saver_of("sqlite", str(path)) as saver:
            saver.setup()
    store = ckpt.api.open(path)
    follower = HistoryFollower(store.backend, "live")
    failures: list[BaseException] = []

    def write() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with saver_of("sqlite", str(path)) as saver:
                    run_graph(saver, "live", 0.05)
        except BaseException as exc:  # the test fails on it below
            failures.append(exc)

    writer = threading.Thread(target=write)
    events: list[dict[str, Any]] = []
    writer.start()
    while writer.is_alive():
        events += look(follower)
        time.sleep(0.01)
    writer.join()
    events += look(follower)
    store.close()
    assert failures == []
    check_events(events, history_ids(str(path), "live"))
    # The lines `history --follow` prints of them: the failure and the interrupt under the
    # checkpoints they landed on.
    from ckpt.render import human
    from ckpt.render.output import Output

    output = Output.from_environment()
    shown = [e for e in events if "event" not in e]
    lines = list(human.followed_lines(iter(events), output, local=False))
    assert len(lines) == len(events)
    assert sum("↳" in line for line in lines) == len(events) - len(shown)
    assert any("✗ finish: PlannedFailure" in line for line in lines), lines
    assert any("⏸ ask" in line for line in lines), lines


KINDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    "redis",
    "mongodb",
]


@pytest.fixture
def live_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, what the writer is given, what ckpt is given): a new store of the kind, set up
    with one finished thread (a store ckpt opens before the watched thread is there)."""
    kind = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "sqlite":
            path = str(tmp_path / "live.sqlite")
            yield from _warm(kind, path, path)
        elif kind == "postgres":
            from pg import url_of

            dsn = request.getfixturevalue("pg_new_database")()
            yield from _warm(kind, dsn, url_of(dsn))
        elif kind == "redis":
            from fixtures.redis_server import RedisServer

            with RedisServer() as server:
                yield from _warm(kind, server.url, server.url)
        else:
            from fixtures.mongo_server import MongoServer

            with MongoServer() as server:
                yield from _warm(kind, server.url, server.url)


def _warm(kind: str, target: str, location: str) -> Iterator[tuple[str, str, str]]:
    with saver_of(kind, target) as saver:
        run_graph(saver, "warm", 0.0)
    yield kind, target, location


def _ckpt(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ckpt", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )


def _stopped(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


@pytest.mark.long
@pytest.mark.parametrize("live_store", KINDS, indirect=True)
def test_follow_watches_a_graph_writing_in_another_process(
    live_store: tuple[str, str, str],
) -> None:
    kind, target, location = live_store
    history = _ckpt("history", "t1", "--db", location, "--follow", "--json", "--interval", "0.05")
    threads = _ckpt("threads", location, "--follow", "--json", "--interval", "0.05")
    try:
        assert history.stderr is not None
        said = history.stderr.readline()  # the follower is up and waiting
        assert "waiting for thread 't1'" in said, said
        writer = subprocess.run(
            [sys.executable, str(WRITER), kind, target, "t1", "0.3"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert writer.returncode == 0, writer.stdout + writer.stderr
        report = json.loads(writer.stdout.splitlines()[-1])
        assert report["errors"] == [] and report["writes"] > 10
        # No put waited on the readers (a lock waits up to the saver's timeout, 5 s).
        assert report["slowest"] < 2.0, report
        time.sleep(0.5)  # a few polls more: the last writes
    finally:
        code, out, err = _stopped(history)
        threads_code, threads_out, threads_err = _stopped(threads)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "ckpt: error: interrupted"
    check_events([json.loads(line) for line in out.splitlines()], history_ids(location, "t1"))
    # `threads --follow`: the warm thread once, then t1 at each change of status.
    assert threads_code == 130, threads_err
    changes = [json.loads(line) for line in threads_out.splitlines()]
    assert [c["status"] for c in changes if c["thread_id"] == "warm"] == ["error"]
    statuses = [c["status"] for c in changes if c["thread_id"] == "t1"]
    assert statuses[-1] == "error" and "interrupted" in statuses, statuses
    assert all(a != b for a, b in zip(statuses, statuses[1:], strict=False))


def test_the_follower_reads_a_langgraph_dev_folder_again_when_it_is_saved(
    tmp_path: Path,
) -> None:
    """`langgraph dev` saves its files whole: the follower opens them again when they
    change, and shows only what is new."""
    from fixtures.build import DevServerSaver
    from langgraph.types import Command

    from follow_writer import PlannedFailure, follow_graph

    folder = tmp_path / ".langgraph_api"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saver = DevServerSaver(folder)
        graph = follow_graph(saver, 0.0)
        config = {"configurable": {"thread_id": "dev"}}

        def saved() -> None:
            for kept in (saver.storage, saver.writes, saver.blobs):
                kept.sync()  # type: ignore[attr-defined]

        graph.invoke({"steps": []}, config)
        saved()
        store = ckpt.api.open(folder)
        follower = HistoryFollower(store.backend, "dev")
        events = look(follower)
        assert look(follower) == []  # nothing new, nothing again
        with pytest.raises(PlannedFailure):
            graph.invoke(Command(resume="yes"), config)
        time.sleep(0.01)  # a new modification time, on file systems that keep only ms
        saved()
        events += look(follower)
        store.close()
    check_events(events, history_ids(str(folder), "dev"))


def test_an_unchanged_sqlite_store_is_not_read_again(tmp_path: Path) -> None:
    """The change token: polls of a store nobody writes read it once; a commit by another
    connection makes the next poll read."""
    from ckpt.analysis.follow import polls

    path = tmp_path / "quiet.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with saver_of("sqlite", str(path)) as saver:
            run_graph(saver, "warm", 0.0)
    store = ckpt.api.open(path)
    naps: list[float] = []
    assert list(polls(store.backend, interval=0.5, sleep=naps.append, count=4)) == [0]
    assert naps == [0.5, 0.5, 0.5]
    ticks = polls(store.backend, interval=0.5, sleep=lambda _: None, count=3)
    assert next(ticks) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with saver_of("sqlite", str(path)) as saver:
            run_graph(saver, "second", 0.0)
    assert list(ticks) == [1]
    assert [e["checkpoint_id"] for e in store.follow_history("second", polls=1)] == (
        history_ids(str(path), "second")
    )
    store.close()


def test_threads_follow_starts_with_every_thread_once(sqlite_store: Path) -> None:
    """The first look gives every thread (as `threads --json` has it), in thread order, and
    a second look of a store nobody writes gives none; the human lines say each status,
    and why a failed thread failed."""
    from ckpt.render.output import Output
    from ckpt.render.plain import thread_change_lines

    with ckpt.api.open(sqlite_store) as store:
        first = list(store.follow_threads(polls=1))
        assert first == store.threads(sort="thread")
        assert list(store.follow_threads(polls=3, interval=0.01))[len(first) :] == []
    lines = list(thread_change_lines(iter(first), Output.from_environment()))
    assert len(lines) == len(first)
    failed = next(r for r in first if r["status"] == "error")
    line = next(line for line in lines if f"  {failed['thread_id']}  error" in line)
    assert failed["failed_tasks"][0]["name"] in line


@pytest.mark.parametrize(
    "args",
    [
        ("threads", "{store}", "--follow", "--limit", "3"),
        ("threads", "{store}", "--follow", "--status", "error"),
        ("history", "x", "--db", "{store}", "--follow", "--interval", "0"),
        ("history", "x", "--db", "{store}", "--follow", "--interval", "nan"),
    ],
)
def test_follow_options_that_cannot_hold_are_usage_errors(
    sqlite_store: Path, args: tuple[str, ...]
) -> None:
    result = run(*(a.format(store=sqlite_store) for a in args))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_follow_with_last_starts_with_the_newest_and_shows_no_older_one_later(
    sqlite_store: Path,
) -> None:
    with ckpt.api.open(sqlite_store) as store:
        thread = max(store.threads(), key=lambda t: t["checkpoints"])["thread_id"]
        newest = [r["checkpoint_id"] for r in store.history(thread, last=3)]
        followed = [e["checkpoint_id"] for e in store.follow_history(thread, last=3, polls=1)]
        assert followed == newest
        # Every look after the first: nothing (the store is not written).
        follower = HistoryFollower(store.backend, thread)
        first = [e["checkpoint_id"] for e in follower.poll(last=3)]
        assert first == newest
        assert list(follower.poll()) == [] and list(follower.poll()) == []
