"""A real LangGraph application writing a store, for the live-writer test.

    python tests/live_writer.py STORE SECONDS MODE READY_FILE

Runs notes_graph (ckpt.demo) through SqliteSaver (STORE a path) or PostgresSaver (STORE a
libpq DSN, already set up) in a loop until SECONDS have passed, in one of the ways
applications hold their connection (MODE):

    reopen    a new connection for every run, closed after it (the last close
              checkpoints the WAL into the database file and deletes the -wal), with
              20 ms between runs
    keep      one connection for the whole time (the -wal grows, autocheckpoints)
    idle      write a large -wal (wal_autocheckpoint off), then stay attached, idle

It writes READY_FILE once the first run committed, prints one JSON line of what it did
({"runs": n, "errors": [...]}) and exits 1 if any LangGraph call failed: the test checks
that ckpt never made the application fail.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

PAD = "x" * 3000  # checkpoints of a few KB, so the WAL grows over pages quickly


def _run_once(conn: Any, thread: str) -> None:
    from ckpt.demo import notes_graph

    if isinstance(conn, sqlite3.Connection):
        from langgraph.checkpoint.sqlite import SqliteSaver

        saver: Any = SqliteSaver(conn)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        saver = PostgresSaver(conn)
    graph = notes_graph(saver)
    graph.invoke({"notes": [PAD], "count": 0}, {"configurable": {"thread_id": thread}})


def main(store: str, seconds: float, mode: str, ready: str) -> int:
    warnings.simplefilter("ignore")
    deadline = time.monotonic() + seconds
    # The readers say when they have read enough (READY.read, after 10 reads): on a slow
    # machine the writer goes on past SECONDS until then (at most 10 minutes), so the test
    # counts reads made while it writes, however loaded the machine is.
    enough = Path(ready + ".read")
    cap = time.monotonic() + 600
    runs = 0
    errors: list[str] = []

    def step(conn: Any) -> None:
        nonlocal runs
        try:
            _run_once(conn, f"live-{runs % 7}")
        except Exception as exc:  # reported, and the exit status says so
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
        if runs == 1:
            Path(ready).write_text("ready")

    def connect() -> Any:
        if "=" in store:  # a libpq DSN
            import psycopg
            from psycopg.rows import dict_row

            return psycopg.connect(
                store, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
        return sqlite3.connect(store, check_same_thread=False, timeout=5.0)

    def going() -> bool:
        now = time.monotonic()
        return now < deadline or (not enough.exists() and now < cap)

    if mode == "reopen":
        while going():
            with closing(connect()) as conn:
                step(conn)
            time.sleep(0.02)  # between requests: no -wal is left while the store is idle
    elif mode == "keep":
        with closing(connect()) as conn:
            while going():
                step(conn)
    elif mode == "idle":
        with closing(connect()) as conn:
            if isinstance(conn, sqlite3.Connection):
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            for _ in range(40):
                step(conn)
            while going():
                time.sleep(0.05)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    report: dict[str, Any] = {"runs": runs, "errors": errors[:5]}
    print(json.dumps(report))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]))
