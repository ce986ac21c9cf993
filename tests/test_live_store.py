"""Reading a store while a real LangGraph application writes it (issue 15, item 1).

A graph writes through SqliteSaver (or PostgresSaver) in another process, holding its
connection the ways applications do (tests/live_writer.py), while ckpt runs `threads`,
`show`, `history`, `dump` and `check` in a loop. Every run must succeed, show a consistent
snapshot, and never make the application fail. Bounded in time: about 10 s in all in
make test, 25 s in a long run (seconds_of).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ckpt.cli import app
from pg import url_of
from runs import long_run

ROOT = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).parent / "live_writer.py"
runner = CliRunner()


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def single_chains(records: list[dict[str, Any]]) -> list[str]:
    """What is wrong with a snapshot of notes_graph threads (empty: nothing). The writer
    only ever appends to one chain per thread: a checkpoint's parent is always committed
    before it, so in any consistent snapshot every parent is there and each (thread,
    namespace) has one root and no fork."""
    problems = []
    by_chain: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        by_chain.setdefault((record["thread_id"], record["checkpoint_ns"]), []).append(record)
    for key, chain in by_chain.items():
        ids = {r["checkpoint_id"] for r in chain}
        parents = [r["parent_checkpoint_id"] for r in chain]
        if parents.count(None) != 1:
            problems.append(f"{key}: {parents.count(None)} roots")
        missing = [p for p in parents if p is not None and p not in ids]
        if missing:
            problems.append(f"{key}: parents missing: {missing[:3]}")
        if len(set(parents)) != len(parents):
            problems.append(f"{key}: a fork")
    return problems


def check_run(args: list[str], stdout: str) -> list[str]:
    """The consistency of one command's output."""
    command = args[0]
    if command == "dump":
        return single_chains([strict_json(line) for line in stdout.splitlines()])
    if command == "history":
        return single_chains(strict_json(stdout))
    parsed = strict_json(stdout)
    if command == "check":  # what a live graph leaves is never damage
        return [f"check: {f['code']}" for f in parsed["findings"] if f["severity"] == "error"]
    if command == "show":
        values = parsed["channel_values"]
        return [] if isinstance(values, dict) and "notes" in values else ["show: no notes"]
    assert command == "threads"
    return [
        f"threads: {t['thread_id']} is {t['status']}"
        for t in parsed
        if t["status"] not in ("done", "pending")
    ]


READS = 10  # reads made while the writer writes (it waits for them: tests/live_writer.py)


def read_while_writing(
    store: str, location: str, mode: str, seconds: float, tmp_path: Path
) -> tuple[int, dict[str, Any]]:
    """Start the writer, loop the readers until it is done; returns the number of reads
    and the writer's report. Fails on the first read that breaks a promise."""
    ready = tmp_path / f"ready-{mode}"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), store, str(seconds), mode, str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    commands = [
        ["dump", location, "--quiet", "--ndjson"],
        ["threads", location, "--json"],
        ["history", "live-0", "--db", location, "--json"],
        ["show", "live-0", "--blobs", "--db", location, "--json"],
        ["check", location, "--json", "--quiet"],
    ]
    reads = 0
    try:
        started = time.monotonic()
        while not ready.exists():
            assert writer.poll() is None, writer.communicate()
            assert time.monotonic() - started < 60, "the writer did not start"
            time.sleep(0.02)
        while writer.poll() is None:
            args = commands[reads % len(commands)]
            result = runner.invoke(app, args)
            reads += 1
            if reads == READS:  # the writer may stop once its time is up
                ready.with_name(ready.name + ".read").write_text("enough")
            assert result.exit_code == 0, (args, result.stderr)
            assert result.stderr == "", (args, result.stderr)
            assert check_run(args, result.stdout) == [], args
        out, err = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, (out, err)  # the application never failed because of ckpt
    return reads, json.loads(out.strip().splitlines()[-1])


def dump_counts(location: str) -> dict[str, int]:
    result = runner.invoke(app, ["dump", location, "--quiet", "--ndjson", "--no-values"])
    assert result.exit_code == 0, result.stderr
    counts: dict[str, int] = {}
    for line in result.stdout.splitlines():
        thread = strict_json(line)["thread_id"]
        counts[thread] = counts.get(thread, 0) + 1
    return counts


def saver_counts(list_all: Callable[[], Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in list_all():
        thread = item.config["configurable"]["thread_id"]
        counts[thread] = counts.get(thread, 0) + 1
    return counts


def seconds_of(long: float) -> float:
    """How long the writer writes at least: `long` in a long run, 2 s in make test (the
    writer keeps writing until READS reads are done, however long that takes)."""
    return long if long_run() else min(long, 2.0)


@pytest.mark.parametrize(
    ("mode", "seconds"),
    [("reopen", seconds_of(7.0)), ("keep", seconds_of(3.0)), ("idle", seconds_of(3.0))],
)
def test_sqlite_reads_while_langgraph_writes(tmp_path: Path, mode: str, seconds: float) -> None:
    import sqlite3
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    store = tmp_path / "live.sqlite"
    reads, report = read_while_writing(str(store), str(store), mode, seconds, tmp_path)
    assert report["errors"] == [] and report["runs"] > 0
    assert reads >= READS, reads
    # Afterwards ckpt and LangGraph agree on every thread.
    with closing(sqlite3.connect(store, check_same_thread=False)) as conn:
        expected = saver_counts(lambda: SqliteSaver(conn).list(None))
    assert dump_counts(str(store)) == expected


@pytest.mark.postgres
def test_postgres_reads_while_langgraph_writes(
    tmp_path: Path, pg_new_database: Callable[[], str]
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    dsn = pg_new_database()
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
    location = url_of(dsn)
    reads, report = read_while_writing(dsn, location, "reopen", seconds_of(4.0), tmp_path)
    assert report["errors"] == [] and reads >= READS
    with PostgresSaver.from_conn_string(dsn) as saver:
        expected = saver_counts(lambda: saver.list(None))
    assert dump_counts(location) == expected
