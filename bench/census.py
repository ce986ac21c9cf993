"""Time `ckpt types` against decoding the same store with LangGraph's own loads_typed.

    python bench/census.py [STORE] [--rounds N]

(Not bench/types.py: a script's folder comes first on sys.path, and a types.py there
would shadow the standard library's `types` for every script in bench/.)

STORE is a SQLite store from bench/make_store.py (default bench/out/b250.sqlite). Each
round runs, as separate processes and in alternating order (paired A/B):

    A  `ckpt types STORE --json --quiet`, the command as users run it
    B  a script that reads every checkpoint and write row with sqlite3 and hands each
       (type, bytes) to JsonPlusSerializer().loads_typed, as a loader of the whole store

and reports each side's median wall time, the median of the per-round ratios B/A, and
the peak RSS of each process (os.wait4's ru_maxrss). Both sides pay their start-up
(imports) inside the timing; `in-process` lines time the work alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CKPT = [sys.executable, "-m", "ckpt"]

LOADS_TYPED = r"""
import logging, sqlite3, sys, time
logging.disable(logging.WARNING)  # "Deserializing unregistered type" lines
started = time.perf_counter()
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
serde = JsonPlusSerializer()
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
work = time.perf_counter()
n = 0
for tag, body in conn.execute("SELECT type, checkpoint FROM checkpoints"):
    serde.loads_typed((tag, body)); n += 1
for tag, value in conn.execute("SELECT type, value FROM writes"):
    if tag != "empty":
        serde.loads_typed((tag, value)); n += 1
print(f"{n} {time.perf_counter() - work:.3f}", file=sys.stderr)
"""

CENSUS = r"""
import sys, time
import ckpt
from ckpt.scan.census import census
started = time.perf_counter()
with ckpt.open(sys.argv[1]) as store:
    record = census(store.backend)
print(f"{record['scanned']['values']} {time.perf_counter() - started:.3f}", file=sys.stderr)
"""


def timed(command: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and stderr of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}): {err}")
    return wall, usage.ru_maxrss // 1024, err.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", nargs="?", default=str(ROOT / "bench/out/b250.sqlite"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-langgraph", action="store_true", help="time ckpt types only")
    args = parser.parse_args()
    store = Path(args.store)
    if not store.exists():
        raise SystemExit(f"{store}: run bench/make_store.py first")
    size = store.stat().st_size / 1e6
    print(f"{store} ({size:,.0f} MB), {args.rounds} rounds, python {sys.version.split()[0]}")

    ckpt_runs: list[tuple[float, int]] = []
    lg_runs: list[tuple[float, int]] = []
    ckpt_work: list[float] = []
    lg_work: list[float] = []
    for round_no in range(args.rounds):
        sides = ["ckpt", "langgraph"] if round_no % 2 == 0 else ["langgraph", "ckpt"]
        for side in sides:
            if side == "ckpt":
                wall, rss, _ = timed([*CKPT, "types", str(store), "--json", "--quiet"])
                ckpt_runs.append((wall, rss))
                _, _, err = timed([sys.executable, "-c", CENSUS, str(store)])
                ckpt_work.append(float(err.split()[-1]))
            elif not args.no_langgraph:
                wall, rss, err = timed([sys.executable, "-c", LOADS_TYPED, str(store)])
                lg_runs.append((wall, rss))
                lg_work.append(float(err.split()[-1]))
        print(
            f"round {round_no + 1}: ckpt types {ckpt_runs[-1][0]:.2f}s"
            + (f", loads_typed {lg_runs[-1][0]:.2f}s" if lg_runs else "")
        )

    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(
        f"ckpt types      median {median([w for w, _ in ckpt_runs]):.2f}s wall, "
        f"in-process {median(ckpt_work):.2f}s, peak RSS {max(r for _, r in ckpt_runs)} MB"
    )
    if lg_runs:
        print(
            f"loads_typed     median {median([w for w, _ in lg_runs]):.2f}s wall, "
            f"in-process {median(lg_work):.2f}s, peak RSS {max(r for _, r in lg_runs)} MB"
        )
        ratios = [lg[0] / ck[0] for lg, ck in zip(lg_runs, ckpt_runs, strict=True)]
        work_ratios = [lg / ck for lg, ck in zip(lg_work, ckpt_work, strict=True)]
        print(
            f"speed-up        median {median(ratios):.1f}x end to end (paired), "
            f"{median(work_ratios):.1f}x in-process"
        )


if __name__ == "__main__":
    main()
