"""`ckpt migrate` of a large SQLite store, against re-`put`ting the same checkpoints through
LangGraph's own saver (what langmigrate does).

    python bench/make_store.py bench/out/mig.sqlite --threads 70 --turns 25   # ~237 MB
    python bench/migrate_bench.py bench/out/mig.sqlite

Each run works on a fresh copy of the store and is timed with its peak RSS (a child
process, measured by GNU time). The plan renames the `messages` channel (not a node:
make_store.py copies seed threads under new checkpoint ids but keeps their task ids, which
are then not the ids LangGraph derives, and ckpt refuses to rename a node's tasks it
cannot derive):

- **ckpt**: `ckpt migrate STORE --all --rename-channel messages=history --apply`, the
  whole history, and again with `--latest`.
- **LangGraph**: `SqliteSaver.list(None)` then, for every checkpoint, the channel renamed
  in the decoded checkpoint and `put` back with its metadata, plus `put_writes` of its
  pending writes renamed (it decodes and re-encodes every value, ids and interrupt ids
  left as they were, not atomic per thread).

Measured (2 shared cores, 2026-12-06; the 237 MB store of 70 threads x 25 turns: 8,750
checkpoints, 12,250 writes):

    ckpt migrate (all history)       16.4 s    35 MB peak
    ckpt migrate --latest             1.6 s    28 MB peak
    LangGraph list/put/put_writes    69.0 s  1027 MB peak   (list() holds every checkpoint)

ckpt reads, rewrites and reads back one thread at a time (memory flat in store size); it
plans every thread before it writes any, so each thread is read three times. It changes
names only: every value keeps its bytes, where re-`put`ting decodes and re-encodes all.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

CKPT = """
import sys
from ckpt.cli import app
sys.argv = ["ckpt", "migrate", sys.argv[1], "--all", "--rename-channel", "messages=history",
            "--apply", *sys.argv[2:]]
try:
    app()
except SystemExit as exit:
    assert not exit.code, exit.code
"""

LANGGRAPH = """
import sys
from langgraph.checkpoint.sqlite import SqliteSaver

def renamed(mapping):
    return {("history" if k == "messages" else k): v for k, v in mapping.items()}

with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    for item in list(saver.list(None)):
        checkpoint = dict(item.checkpoint)
        checkpoint["channel_values"] = renamed(checkpoint["channel_values"])
        checkpoint["channel_versions"] = renamed(checkpoint["channel_versions"])
        checkpoint["versions_seen"] = {
            node: renamed(seen) for node, seen in checkpoint["versions_seen"].items()
        }
        if checkpoint.get("updated_channels"):
            checkpoint["updated_channels"] = [
                "history" if c == "messages" else c for c in checkpoint["updated_channels"]
            ]
        config = {"configurable": {
            "thread_id": item.config["configurable"]["thread_id"],
            "checkpoint_ns": item.config["configurable"]["checkpoint_ns"],
            "checkpoint_id": item.parent_config["configurable"]["checkpoint_id"]
            if item.parent_config else None,
        }}
        saved = saver.put(config, checkpoint, item.metadata, checkpoint["channel_versions"])
        by_task = {}
        for task_id, channel, value in item.pending_writes or ():
            by_task.setdefault(task_id, []).append(
                ("history" if channel == "messages" else channel, value)
            )
        for task_id, writes in by_task.items():
            saver.put_writes(saved, writes, task_id)
"""


def child(code: str, *args: str) -> tuple[float, float]:
    """Run `code` in a fresh Python: (seconds, peak RSS in MB, by GNU time)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, PY, "-c", code, *args],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - start
        return round(seconds, 2), round(int(rss.read().split()[-1]) / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    args = parser.parse_args()
    size = args.store.stat().st_size / 1e6
    print(f"store: {args.store} ({size:.0f} MB)")
    with tempfile.TemporaryDirectory(dir=args.store.parent) as scratch:
        for label, code, extra in (
            ("ckpt migrate (all history)", CKPT, ()),
            ("ckpt migrate --latest", CKPT, ("--latest",)),
            ("LangGraph list/put/put_writes", LANGGRAPH, ()),
        ):
            copy = Path(scratch) / "store.sqlite"
            shutil.copy(args.store, copy)
            seconds, peak = child(code, str(copy), *extra)
            print(f"{label:32} {seconds:7.2f} s  {peak:6.1f} MB peak")
            copy.unlink()


if __name__ == "__main__":
    main()
