"""Time ckpt on a large PostgresSaver store against LangGraph's own reading (issue 6).

    python bench/postgres.py                        # make a 1,000 x 100 store, drop it after
    python bench/postgres.py --keep                 # ... and keep it (its URL is printed)
    python bench/postgres.py --dsn postgresql://... # time an existing store, left as it is

The store comes from bench/make_store.py: 1,000 threads of a growing tool-calling chat,
20 turns (100 checkpoints) each, every byte written by the real PostgresSaver. Every
number is measured in a separate process started the same way for both sides, so
start-up counts for both; peak memory is the child's max RSS as /usr/bin/time reports
it (0 when GNU time is missing). Targets:

    ckpt threads                at least 25x faster than counting threads with
                                PostgresSaver.list(None)
    ckpt show <latest> --blobs  within 0.5 s
    ckpt dump                   peak memory under 150 MB

Needs a server where the admin URL (--admin, default $CKPT_BENCH_PG_ADMIN or
postgresql://postgres@127.0.0.1:5432/postgres) may create databases.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
CKPT = str(Path(sys.executable).parent / "ckpt")
DEFAULT_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
TIME = "/usr/bin/time"

LANGGRAPH_COUNT = """
import sys
from langgraph.checkpoint.postgres import PostgresSaver
with PostgresSaver.from_conn_string(sys.argv[1]) as saver:
    print(len({t.config["configurable"]["thread_id"] for t in saver.list(None)}))
"""


class Measured:
    """Wall time (best of the runs), peak RSS (largest) and the last run's stdout."""

    def __init__(self, seconds: float, rss_mb: float, stdout: str) -> None:
        self.seconds = seconds
        self.rss_mb = rss_mb
        self.stdout = stdout


def measure(argv: list[str], *, repeat: int = 3, keep_stdout: bool = True) -> Measured:
    """Run `argv` `repeat` times. Peak RSS comes from /usr/bin/time (GNU time), whose own
    child starts small: a child forked from this process would report our RSS as its own."""
    best, peak, out = float("inf"), 0.0, ""
    timed = [TIME, "-f", "%M", *argv] if Path(TIME).exists() else argv
    for _ in range(repeat):
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            start = time.perf_counter()
            proc = subprocess.run(
                timed, stdout=stdout if keep_stdout else subprocess.DEVNULL, stderr=stderr
            )
            elapsed = time.perf_counter() - start
            stderr.seek(0)
            err = stderr.read().decode(errors="replace")
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-500:]}")
            stdout.seek(0)
            out = stdout.read().decode() if keep_stdout else ""
        best = min(best, elapsed)
        if timed is not argv:
            peak = max(peak, int(err.strip().splitlines()[-1]) / 1024)  # KiB
    return Measured(best, peak, out)


@contextmanager
def bench_database(admin: str, keep: bool) -> Iterator[str]:
    """A new, uniquely named database; dropped afterwards unless `keep`."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"ckpt_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(make_conninfo(admin, dbname=name))
    url = (
        f"postgresql://{params.get('user', '')}@{params.get('host', '')}"
        f":{params.get('port', 5432)}/{name}"
    )
    try:
        yield url
    finally:
        if keep:
            print(f"kept the store: {url}", file=sys.stderr)
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def generate(url: str, threads: int, turns: int) -> None:
    sys.path.insert(0, str(HERE))
    from make_store import make_postgres

    make_postgres(url, threads, turns, seeds=20)


def store_summary(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM checkpoints), (SELECT count(DISTINCT thread_id) "
            "FROM checkpoints), (SELECT count(*) FROM checkpoint_blobs), "
            "(SELECT count(*) FROM checkpoint_writes), pg_database_size(current_database())"
        ).fetchone()
    assert row is not None
    checkpoints, threads, blobs, writes, size = row
    return (
        f"{threads:,} threads, {checkpoints:,} checkpoints, {blobs:,} blobs, "
        f"{writes:,} writes, {size / 1e6:,.0f} MB"
    )


def run_bench(url: str) -> bool:
    print(f"store: {url}: {store_summary(url)}")
    threads = json.loads(measure([CKPT, "threads", url, "--json"], repeat=1).stdout)
    latest = max(threads, key=lambda t: (t["checkpoints"], t["thread_id"]))
    thread = latest["thread_id"]

    rows: list[tuple[str, Measured, str]] = []

    def row(
        name: str, argv: list[str], target: str, repeat: int = 3, keep_stdout: bool = True
    ) -> Measured:
        measured = measure(argv, repeat=repeat, keep_stdout=keep_stdout)
        rows.append((name, measured, target))
        return measured

    ours = row("ckpt threads --json", [CKPT, "threads", url, "--json"], "25x baseline")
    row("ckpt threads (table)", [CKPT, "threads", url], "-")
    theirs = row(
        "PostgresSaver.list(None) thread count",
        [sys.executable, "-c", LANGGRAPH_COUNT, url],
        "baseline",
        repeat=1,
    )
    if theirs.stdout.strip() != str(len(threads)):
        raise SystemExit(f"thread counts differ: LangGraph {theirs.stdout!r}, ckpt {len(threads)}")
    show = row(
        "ckpt show <latest> --blobs",
        [CKPT, "show", thread, "--db", url, "--blobs"],
        "< 0.5 s",
    )
    show_json = row(
        "ckpt show <latest> --blobs --json",
        [CKPT, "show", thread, "--db", url, "--blobs", "--json"],
        "< 0.5 s",
    )
    row("ckpt history <thread>", [CKPT, "history", thread, "--db", url], "-")
    row("ckpt versions <thread>", [CKPT, "versions", thread, "--db", url], "-")
    dump = row(
        "ckpt dump --ndjson (every value)",
        [CKPT, "dump", url, "--ndjson", "--quiet"],
        "< 150 MB",
        repeat=1,
        keep_stdout=False,
    )
    row(
        "ckpt dump --latest --no-values",
        [CKPT, "dump", url, "--ndjson", "--quiet", "--latest", "--no-values"],
        "-",
        repeat=1,
        keep_stdout=False,
    )

    print(f"{'command':40} {'time':>9} {'peak RSS':>10}  target")
    for name, measured, target in rows:
        print(f"{name:40} {measured.seconds:8.3f}s {measured.rss_mb:8.1f}MB  {target}")
    speedup = theirs.seconds / ours.seconds
    checks = [
        (f"ckpt threads is {speedup:.0f}x faster than PostgresSaver.list(None)", speedup >= 25),
        (
            f"ckpt show <latest> --blobs took {max(show.seconds, show_json.seconds):.3f} s",
            max(show.seconds, show_json.seconds) <= 0.5,
        ),
    ]
    if Path(TIME).exists():
        checks.append((f"ckpt dump peaked at {dump.rss_mb:.0f} MB", dump.rss_mb < 150))
    else:
        print(f"?    peak memory not measured: no {TIME} (GNU time)")
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'MISS'} {text}")
    return all(ok for _, ok in checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="time this existing store instead of making one")
    parser.add_argument(
        "--admin",
        default=os.environ.get("CKPT_BENCH_PG_ADMIN", DEFAULT_ADMIN),
        help="URL of a role that may CREATE DATABASE (default: %(default)s)",
    )
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20, help="5 checkpoints per turn")
    parser.add_argument("--keep", action="store_true", help="keep the generated database")
    args = parser.parse_args(argv)
    if args.dsn:
        return 0 if run_bench(args.dsn) else 1
    with bench_database(args.admin, args.keep) as url:
        started = time.perf_counter()
        generate(url, args.threads, args.turns)
        print(f"generated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        return 0 if run_bench(url) else 1


if __name__ == "__main__":
    raise SystemExit(main())
