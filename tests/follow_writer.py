"""A graph writing a store while `--follow` watches it (tests/test_follow.py).

    python tests/follow_writer.py KIND STORE THREAD PAUSE

Runs `follow_graph` on THREAD through the saver of KIND (sqlite: a path; postgres: a libpq
DSN; redis, mongodb: a URL), in two runs as an application does: the first stops on an
interrupt, the second resumes it and fails in its last node (a ValueError of the graph's
own). Each node sleeps PAUSE seconds first, so that a follower polling faster sees every
step land. Prints one JSON line ({"errors": [...], "writes": n, "slowest": seconds}: how
many puts it made and the longest one took): anything but the graph's own interrupt and
failure is an error, and the exit status is then 1.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypedDict


class FollowState(TypedDict):
    steps: list[str]


class PlannedFailure(ValueError):
    """The failure the graph is written to have."""


def follow_graph(saver: Any, pause: float) -> Any:
    """plan -> work -> ask (interrupt) -> finish (fails)."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def step(name: str) -> Any:
        def run(state: FollowState) -> dict[str, list[str]]:
            time.sleep(pause)
            if name == "ask":
                answer = interrupt({"question": "go on?"})
                return {"steps": [*state["steps"], f"ask:{answer}"]}
            if name == "finish":
                raise PlannedFailure("finish failed on purpose")
            return {"steps": [*state["steps"], name]}

        return run

    builder = StateGraph(FollowState)
    names = ["plan", "work", "ask", "finish"]
    for name in names:
        builder.add_node(name, step(name))
    builder.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    return builder.compile(checkpointer=saver)


def run_graph(saver: Any, thread: str, pause: float) -> None:
    """The two runs: to the interrupt, then resumed to the planned failure."""
    from langgraph.types import Command

    graph = follow_graph(saver, pause)
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"steps": []}, config)
    time.sleep(pause * 4)  # a person reads the question
    try:
        graph.invoke(Command(resume="yes"), config)
    except PlannedFailure:
        pass
    else:
        raise AssertionError("the graph did not fail where it was written to")


@contextmanager
def saver_of(kind: str, store: str) -> Iterator[Any]:
    """The saver of KIND on STORE, set up, as an application holds it."""
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(store, check_same_thread=False, timeout=5.0)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(store) as saver:
            saver.setup()
            yield saver
    elif kind == "redis":
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(store) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.mongodb import MongoDBSaver

        with MongoDBSaver.from_conn_string(store) as saver:
            yield saver


def timed(saver: Any, took: list[float]) -> Any:
    """The saver, each put and put_writes timed (a reader that held a lock would show)."""
    for name in ("put", "put_writes"):
        method = getattr(saver, name)

        def wrapped(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _method(*args, **kwargs)
            finally:
                took.append(time.perf_counter() - start)

        setattr(saver, name, wrapped)
    return saver


def main(kind: str, store: str, thread: str, pause: float) -> int:
    warnings.simplefilter("ignore")
    errors: list[str] = []
    took: list[float] = []
    try:
        with saver_of(kind, store) as saver:
            run_graph(timed(saver, took), thread, pause)
    except Exception as exc:  # reported, and the exit status says so
        errors.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps({"errors": errors, "writes": len(took), "slowest": max(took, default=0)}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
