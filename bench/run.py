"""Time ckpt against the obvious alternative on a large SqliteSaver store (make bench).

Usage: python bench/run.py [STORE]   (default: bench/out/bench.sqlite, generated if missing)

Every number comes from separate processes started the same way, so start-up is counted
for both sides. Peak memory is the child's max RSS as /usr/bin/time reports it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CKPT = str(BIN / "ckpt")
DEFAULT_STORE = HERE / "out" / "bench.sqlite"

LANGGRAPH_COUNT = """
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, check_same_thread=False)
threads = {t.config["configurable"]["thread_id"] for t in SqliteSaver(conn).list(None)}
print(len(threads))
"""


def measure(argv: list[str], *, repeat: int = 3) -> tuple[float, str]:
    """Best wall time (s) over `repeat` runs, and the last stdout."""
    best = float("inf")
    out = ""
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-500:]}")
        best = min(best, elapsed)
        out = proc.stdout
    return best, out


def measure_rss(argv: list[str]) -> float:
    """Peak RSS (MB) of one run, as /usr/bin/time reports it."""
    timer = Path("/usr/bin/time")
    if not timer.exists():
        return 0.0
    proc = subprocess.run(
        [str(timer), "-f", "%M", *argv], capture_output=True, text=True, check=True
    )
    return int(proc.stderr.strip().splitlines()[-1]) / 1024


def main() -> int:
    store = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_STORE
    if not store.exists():
        store.parent.mkdir(parents=True, exist_ok=True)
        # 1,000 threads of a growing tool-calling chat; 6 turns keep the file near 230 MB
        # because every checkpoint carries the whole message list (see bench/make_store.py).
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_store.py"),
                str(store),
                "--threads",
                "1000",
                "--turns",
                "6",
            ],
            check=True,
        )
    size_mb = store.stat().st_size / 1e6
    print(f"store: {store} ({size_mb:.0f} MB)")

    threads_json = json.loads(measure([CKPT, "threads", str(store), "--json"], repeat=1)[1])
    largest = max(threads_json, key=lambda t: t["size"])
    latest_id = largest["checkpoint_id"]

    rows: list[tuple[str, float, float, str]] = []

    def row(name: str, argv: list[str], target: str, repeat: int = 3) -> float:
        elapsed, _ = measure(argv, repeat=repeat)
        rss = measure_rss(argv)
        rows.append((name, elapsed, rss, target))
        return elapsed

    ours = row("ckpt threads (table)", [CKPT, "threads", str(store)], "< 0.5 s")
    row("ckpt threads --json", [CKPT, "threads", str(store), "--json"], "< 0.5 s")
    theirs = row(
        "SqliteSaver.list(None) thread count",
        [sys.executable, "-c", LANGGRAPH_COUNT, str(store)],
        "baseline",
        repeat=1,
    )
    row(
        "ckpt show <latest> --blobs",
        [CKPT, "show", latest_id, "--blobs", "--db", str(store)],
        "< 0.5 s",
    )
    row(
        "ckpt show <latest> --blobs --json",
        [CKPT, "show", latest_id, "--blobs", "--json", "--db", str(store)],
        "< 0.5 s",
    )
    row(
        "ckpt history <thread>",
        [CKPT, "history", largest["thread_id"], "--db", str(store)],
        "< 0.5 s",
    )
    row("ckpt versions <thread>", [CKPT, "versions", largest["thread_id"], "--db", str(store)], "-")
    row("ckpt --help", [CKPT, "--help"], "< 0.3 s")

    print(f"{'command':40} {'time':>9} {'peak RSS':>10}  target")
    for name, elapsed, rss, target in rows:
        print(f"{name:40} {elapsed:8.3f}s {rss:8.1f}MB  {target}")
    print(f"ckpt threads is {theirs / ours:.0f}x faster than SqliteSaver.list(None) (target 25x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
