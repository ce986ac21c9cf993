"""Time `ckpt dump` against LangGraph's own listing, and `ckpt diff` on the largest thread.

Usage: python bench/dump.py [STORE]   (default: bench/out/bench.sqlite, made by make_store.py)

Both dumps run as separate processes started the same way (start-up counted for both),
writing to /dev/null, in this one run. The baseline is what a user without ckpt writes:
`SqliteSaver.list(None)`, then `json.dumps(..., default=str)` of each checkpoint tuple.
Peak memory is the child's max RSS as /usr/bin/time reports it (getrusage otherwise).
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CKPT = str(BIN / "ckpt")
DEFAULT_STORE = HERE / "out" / "bench.sqlite"
TIMER = Path("/usr/bin/time")

DUMP_TARGET = 3.0  # ckpt at least this many times faster than the baseline
MEMORY_TARGET_MB = 150.0
DIFF_TARGET_S = 0.5

LANGGRAPH_DUMP = """
import json, os, sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, check_same_thread=False)
with open(os.devnull, "w") as out:
    for tup in SqliteSaver(conn).list(None):
        record = {
            "config": tup.config,
            "checkpoint": tup.checkpoint,
            "metadata": tup.metadata,
            "parent_config": tup.parent_config,
            "pending_writes": tup.pending_writes,
        }
        out.write(json.dumps(record, default=str) + "\\n")
"""

DIFF_IN_PROCESS = """
import sys, time
from ckpt.analysis.changes import diff_records
from ckpt.analysis.records import checkpoint_record
from ckpt.records.model import CheckpointKey
from ckpt.stores.sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
key = store.latest_key(sys.argv[2])
started = time.perf_counter()
b = store.load(key)
a = store.load(CheckpointKey(key.thread_id, key.checkpoint_ns, b.parent_checkpoint_id))
loaded = time.perf_counter()
changes = diff_records(checkpoint_record(a), checkpoint_record(b))
done = time.perf_counter()
print(f"{loaded - started:.4f} {done - loaded:.4f} {len(changes)}")
"""


def run(argv: list[str], *, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MB) of one run, stdout to /dev/null."""
    timed = [str(TIMER), "-f", "%M", *argv] if TIMER.exists() else argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.run(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-500:]}")
    if TIMER.exists():
        rss_kb = int(proc.stderr.strip().splitlines()[-1])
    else:  # the max over every child so far: right only while it grows
        rss_kb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return elapsed, rss_kb / 1024


def best(argv: list[str], repeat: int, *, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    runs = [run(argv, ok=ok) for _ in range(repeat)]
    return min(t for t, _ in runs), max(m for _, m in runs)


def largest_thread(store: Path) -> str:
    uri = f"file:{store}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        row = conn.execute(
            "SELECT thread_id FROM checkpoints GROUP BY thread_id "
            "ORDER BY sum(length(checkpoint)) DESC, thread_id LIMIT 1"
        ).fetchone()
    return str(row[0])


def main() -> int:
    store = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_STORE
    if not store.exists():
        raise SystemExit(f"{store} is missing: python bench/make_store.py {store} --turns 6")
    size_mb = store.stat().st_size / 1e6
    print(f"store: {store} ({size_mb:.0f} MB)")

    ours, ours_rss = best([CKPT, "dump", "--ndjson", "--quiet", str(store)], repeat=3)
    skeleton, skeleton_rss = best(
        [CKPT, "dump", "--ndjson", "--quiet", "--no-values", str(store)], repeat=3
    )
    theirs, theirs_rss = run([sys.executable, "-c", LANGGRAPH_DUMP, str(store)])

    thread = largest_thread(store)
    diff_time, diff_rss = best([CKPT, "diff", thread, "--db", str(store)], repeat=5, ok=(0, 1))
    diff_json, _ = best([CKPT, "diff", thread, "--json", "--db", str(store)], repeat=5, ok=(0, 1))
    inner = subprocess.run(
        [sys.executable, "-c", DIFF_IN_PROCESS, str(store), thread],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    load_s, diff_s, changes = float(inner[0]), float(inner[1]), int(inner[2])

    rows = [
        ("ckpt dump --ndjson", ours, ours_rss, f"{size_mb / ours:.0f} MB/s"),
        (
            "ckpt dump --ndjson --no-values",
            skeleton,
            skeleton_rss,
            f"{size_mb / skeleton:.0f} MB/s",
        ),
        ("SqliteSaver.list + json.dumps", theirs, theirs_rss, f"{size_mb / theirs:.0f} MB/s"),
        (f"ckpt diff {thread} (vs parent)", diff_time, diff_rss, f"{changes} changes"),
        (f"ckpt diff {thread} --json", diff_json, diff_rss, ""),
    ]
    print(f"{'command':42} {'time':>9} {'peak RSS':>10}")
    for name, elapsed, rss, note in rows:
        print(f"{name:42} {elapsed:8.2f}s {rss:8.1f}MB  {note}")
    ratio = theirs / ours
    print(f"diff in process: load both {load_s * 1000:.1f} ms, compare {diff_s * 1000:.1f} ms")
    verdicts = [
        (
            f"dump {ratio:.1f}x faster than LangGraph (target {DUMP_TARGET:.0f}x)",
            ratio >= DUMP_TARGET,
        ),
        (
            f"dump peak RSS {ours_rss:.0f} MB (target < {MEMORY_TARGET_MB:.0f} MB)",
            ours_rss < MEMORY_TARGET_MB,
        ),
        (f"diff {diff_time:.2f}s (target < {DIFF_TARGET_S} s)", diff_time < DIFF_TARGET_S),
    ]
    for text, passed in verdicts:
        print(f"{'ok  ' if passed else 'FAIL'} {text}")
    summary = {
        "dump_s": ours,
        "baseline_s": theirs,
        "ratio": ratio,
        "dump_rss_mb": ours_rss,
        "diff_s": diff_time,
    }
    if os.environ.get("BENCH_JSON"):
        print(json.dumps(summary))
    return 0 if all(passed for _, passed in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
