"""Names of many MB (a thread id, a channel, a task id and path, a namespace) in every
command: an answer under the 1 GB limit of tests/ckpt_runner.py, with each name shown as
its start and its length in the human views, and whole in the JSON (issue 46 §4: a 16 MB
channel name made `diff` end in MemoryError and `show --blobs` take 15 s).

The store is written by SqliteSaver from a real graph run; the 16 MB variant is `long`, a
64 KB one (past what a view shows whole) runs in the default suite."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

import pytest

from ckpt.errors import ExitCode
from ckpt_runner import run_ckpt

COMMANDS: list[tuple[str, ...]] = [
    ("threads", "{db}"),
    ("threads", "{db}", "--json"),
    ("history", "chat-1", "--db", "{db}"),
    ("show", "chat-1", "--db", "{db}", "--blobs"),
    ("show", "chat-1", "--db", "{db}", "--blobs", "--json"),
    ("diff", "chat-1", "--db", "{db}"),
    ("versions", "chat-1", "--db", "{db}"),
    ("dump", "{db}"),
    ("stats", "{db}"),
    ("types", "{db}"),
    ("check", "{db}"),
]


class State(TypedDict):
    x: int


def huge_store(path: Path, size: int) -> dict[str, str]:
    """A SqliteSaver store: thread chat-1 run by a graph, then a pending write on its
    latest checkpoint with a channel, task id and task path of `size` characters, a
    subgraph checkpoint under a namespace of that size, and a thread of an id that long."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(State)
    graph.add_node("a", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    names = {
        "channel": "c" * size,
        "task_id": "t" * size,
        "task_path": "p" * size,
        "ns": "n" * (size - 37) + ":" + str(uuid.uuid4()),
        "thread": "h" * size,
    }
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        app = graph.compile(checkpointer=saver)
        app.invoke({"x": 1}, {"configurable": {"thread_id": "chat-1"}})
        config = app.get_state({"configurable": {"thread_id": "chat-1"}}).config
        saver.put_writes(config, [(names["channel"], 1)], names["task_id"], names["task_path"])
        sub = {"configurable": {"thread_id": "chat-1", "checkpoint_ns": names["ns"]}}
        saver.put(sub, empty_checkpoint(), {"source": "loop", "step": 0}, {})
        app.invoke({"x": 1}, {"configurable": {"thread_id": names["thread"]}})
    finally:
        conn.close()
    return names


@pytest.mark.parametrize(
    ("size", "seconds"),
    [
        pytest.param(64 << 10, 10, id="64KB"),
        pytest.param(16 << 20, 30, id="16MB", marks=pytest.mark.long),
    ],
)
def test_huge_names_answer_in_every_command(tmp_path: Path, size: int, seconds: int) -> None:
    db = tmp_path / "huge.sqlite"
    names = huge_store(db, size)
    sample = size < 1 << 20  # the default suite: the commands the issue names, and stats
    for command in COMMANDS:
        if sample and command[0] not in ("show", "diff", "stats"):
            continue
        args = [part.replace("{db}", str(db)) for part in command]
        started = time.monotonic()
        done = run_ckpt(*args, timeout=seconds)
        took = time.monotonic() - started
        allowed = {ExitCode.OK, ExitCode.DIFFERENT} if args[0] in ("diff", "check") else {0}
        assert done.returncode in allowed, (args, done.returncode, done.stderr[-500:])
        assert "Traceback" not in done.stderr, args
        assert took < seconds, (args, took)
        if "--json" in args or args[0] == "dump":
            text = done.stdout
            if args[0] == "show":
                record: dict[str, Any] = json.loads(text)
                [write] = [w for w in record["pending_writes"] if w["task_id"] == names["task_id"]]
                assert write["channel"] == names["channel"]  # whole in the JSON
                assert write["task_path"] == names["task_path"]
            continue
        # The human views: each name cut to its start and its length, no line of MBs.
        longest = max(map(len, done.stdout.splitlines()), default=0)
        assert longest < 10_000, (args, longest)
        if args[0] in ("show", "diff", "stats"):
            assert f"({size:,} chars)" in done.stdout, args
