"""`ckpt stats` against decoding every checkpoint with LangGraph's own `loads_typed`.

    python bench/stats.py [STORE] [--pairs N]     (make bench-stats)

STORE defaults to bench/out/b250.sqlite, generated if missing (1000 threads x 6 turns of a
growing chat, 248 MB; `--threads 1000 --turns 25` gives 3.4 GB). Both sides run as
separate processes, alternately (A B A B ...), and the medians are compared; peak memory
is the child's max RSS as /usr/bin/time reports it. The LangGraph side only decodes:
`JsonPlusSerializer().loads_typed((type, checkpoint))` for every row, with nothing added,
so it is the floor of any tool that decodes to answer.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CKPT = str(Path(sys.executable).with_name("ckpt"))
DEFAULT_STORE = HERE / "out" / "b250.sqlite"

LANGGRAPH_DECODE = """
import sqlite3, sys
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
serde = JsonPlusSerializer()
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
n = 0
for tag, body in conn.execute("SELECT type, checkpoint FROM checkpoints"):
    serde.loads_typed((tag, body))
    n += 1
print(n)
"""


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run."""
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", *argv], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-500:]}")
    wall, rss = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--pairs", type=int, default=3)
    options = parser.parse_args()
    store: Path = options.store
    if not store.exists():
        store.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(HERE / "make_store.py"), str(store), "--threads", "1000"]
            + ["--turns", "6"],
            check=True,
        )
    sides = {
        "ckpt stats": [CKPT, "stats", str(store), "--json", "--quiet"],
        "LangGraph loads_typed": [sys.executable, "-c", LANGGRAPH_DECODE, str(store)],
    }
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for _ in range(options.pairs):
        for name, argv in sides.items():
            runs[name].append(timed(argv))
    size = store.stat().st_size / 1e6
    print(f"{store.name}: {size:,.0f} MB, {options.pairs} pairs, medians")
    for name, samples in runs.items():
        wall = statistics.median(s[0] for s in samples)
        rss = max(s[1] for s in samples)
        print(f"  {name:24} {wall:6.2f} s   peak {rss:5.0f} MB")
    ours = statistics.median(s[0] for s in runs["ckpt stats"])
    theirs = statistics.median(s[0] for s in runs["LangGraph loads_typed"])
    print(f"  ckpt stats is {theirs / ours:.1f}x faster than decoding every checkpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
