"""`ckpt check` on large stores against reading every row with LangGraph's own `list()`,
and its memory on two sizes of store (it must stay flat).

    python bench/check_bench.py bench/out/mid.sqlite bench/out/big.sqlite \\
        --postgres postgresql://postgres@127.0.0.1/ckcheck_mid \\
        --postgres postgresql://postgres@127.0.0.1/ckcheck_bench

The SQLite stores come from bench/make_store.py (`--threads 1000 --turns 6`: 248 MB;
`--threads 600 --turns 25`: 2.0 GB); the Postgres ones are the same stores copied with
`ckpt copy STORE postgresql://... --all --apply` (PostgresSaver's own layout). Each run is
a fresh Python process timed with its peak RSS by GNU time.

- **ckpt**: `ckpt check STORE --json --quiet` (every row read once, every value decoded,
  every check of docs/json.md "ckpt check").
- **LangGraph**: `SqliteSaver.list(None)` / `PostgresSaver.list(None)` iterated to the
  end: every checkpoint read and decoded with its writes, which is what an application
  would have to do to look at every row, and checks nothing. `--limit-mb N` caps that
  child's address space (PostgresSaver.list fetches its whole result first).

Measured 2026-12-04 on the 2 shared cores, ckpt the median of 3 runs, LangGraph one run
each; first with the machine quiet (load average 0.6-1.9, this bench's own processes and
the Postgres server included), then while other engineers' test suites ran (3.4-4.7):

    store                                     ckpt check          LangGraph list(None)
    quiet
    SQLite 236 MB (1,000 threads x 6 turns)    1.09 s,  84 MB      3.33 s,    53 MB
    SQLite 1.9 GB (600 threads x 25 turns)     3.21 s,  63 MB     34.87 s,    97 MB
    Postgres, the 236 MB store (118 MB disk)   1.95 s,  85 MB      5.14 s,   621 MB
    Postgres, the 1.9 GB store (493 MB disk)   6.01 s,  74 MB     40.73 s, 4,159 MB
    loaded
    SQLite 236 MB                              1.95 s,  85 MB      6.88 s,    53 MB
    SQLite 1.9 GB                              5.98 s,  64 MB     66.75 s,    97 MB
    Postgres, the 236 MB store                 3.55 s,  85 MB      6.46 s,   621 MB
    Postgres, the 1.9 GB store                 6.68 s,  75 MB     54.17 s, 4,159 MB

(The Postgres stores hold the same rows, 1.6 GB of values as stored for the large one:
TOAST compresses them on disk.) ckpt check reads every row once, decodes every value
and runs every check, 11x faster than list() on the large SQLite store and 7x on the
large Postgres one, which only reads; list() of PostgresSaver fetches its whole result
before the first row, so its memory grows with the store (4.2 GB), where ckpt's stays
flat: 84 -> 63 MB (SQLite) and 85 -> 74 MB (Postgres) for 8 times the bytes.

Measured again 2026-12-06 after the one-scan rewrite (issue 42: ckpt.scan.rows feeding the
census and the integrity visitor, every part of every row checked as LangGraph loads it,
a Bloom filter of every checkpoint id), on the same 2 cores while six other helpers' test
suites ran (load average 15-16, so every figure is slower than the quiet ones above;
compare the columns, not the rows): ckpt the median of 3 runs on the 236 MB store, one
run on the large one, LangGraph one run each:

    SQLite 236 MB (1,000 threads x 6 turns)    10.06 s,  84 MB     22.26 s,    52 MB
    SQLite 1.9 GB (600 threads x 25 turns)     29.43 s,  63 MB    186.29 s,    97 MB

Still 2.2x and 6.3x faster than list(), and flat: 84 -> 63 MB for 8 times the bytes (the
id filter takes 2.5 bytes per checkpoint, 0.4 MB here).

Memory does not grow with the store: a batch of threads (at most 20,000 checkpoints and
blobs, ckpt.scan.rows.thread_batches) is held at a time, with a few ids per checkpoint.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

CKPT = "import sys; from ckpt.cli import main; sys.argv = ['ckpt', *sys.argv[1:]]; main()"

LIST_SQLITE = """
import sqlite3, sys, warnings
warnings.simplefilter("ignore")
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, check_same_thread=False)
saver = SqliteSaver(conn)
saver.is_setup = True  # reading only: no ALTER TABLE, no WAL switch on the store
n = sum(1 for _ in saver.list(None))
print(n)
"""

LIST_POSTGRES = """
import sys, warnings
warnings.simplefilter("ignore")
import psycopg
from psycopg.rows import dict_row
from langgraph.checkpoint.postgres import PostgresSaver
with psycopg.connect(
    sys.argv[1], autocommit=True, prepare_threshold=0, row_factory=dict_row
) as conn:
    n = sum(1 for _ in PostgresSaver(conn).list(None))
print(n)
"""


def child(code: str, *args: str, limit_mb: int | None = None) -> tuple[float, float, int]:
    """Run `code` in a fresh Python: (seconds, peak RSS in MB by GNU time, exit status)."""

    def cap() -> None:
        if limit_mb:
            size = limit_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, PY, "-c", code, *args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=cap,
            check=False,
        )
        seconds = time.perf_counter() - start
        peak = int(rss.read().split()[-1]) / 1024
        return round(seconds, 2), round(peak, 1), done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sqlite", nargs="*", help="SQLite stores (bench/make_store.py)")
    parser.add_argument("--postgres", action="append", default=[], help="PostgresSaver URLs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--langgraph-runs", type=int, default=1)
    parser.add_argument("--limit-mb", type=int, default=12_000, help="cap of list()'s child")
    parser.add_argument("--no-langgraph", action="store_true")
    args = parser.parse_args()
    stores = [
        (store, f"SQLite {Path(store).stat().st_size >> 20:,} MB", "SqliteSaver", LIST_SQLITE)
        for store in args.sqlite
    ] + [(url, url.rsplit("/", 1)[-1], "PostgresSaver", LIST_POSTGRES) for url in args.postgres]
    for store, name, saver, listing in stores:
        results = [child(CKPT, "check", store, "--json", "--quiet") for _ in range(args.runs)]
        _print(f"ckpt check  {name}", results)
        if not args.no_langgraph:
            results = [
                child(listing, store, limit_mb=args.limit_mb) for _ in range(args.langgraph_runs)
            ]
            _print(f"{saver}.list(None)  {name}", results)


def _print(label: str, results: list[tuple[float, float, int]]) -> None:
    """The medians; an exit status other than 0 or 1 (check's findings) is said."""
    seconds = statistics.median(r[0] for r in results)
    peak = statistics.median(r[1] for r in results)
    odd = sorted({r[2] for r in results} - {0, 1})
    said = f"  (exit {odd}: the memory cap stopped it?)" if odd else ""
    print(f"{label:<44} {seconds:7.2f} s  {peak:8.1f} MB{said}", flush=True)


if __name__ == "__main__":
    main()
