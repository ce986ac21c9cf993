"""`ckpt copy` of a large SQLite store into Postgres and into a new SQLite file, against
the floor and against LangGraph's own way.

    python bench/copy_bench.py bench/out/big.sqlite --pg-admin postgresql://postgres@127.0.0.1/postgres

The store comes from bench/make_store.py (e.g. `--threads 600 --turns 25`: about 2 GB).
Each run writes into a fresh database or file and is timed with its peak RSS (a child
process, measured by GNU time).

- **ckpt**: `ckpt copy SRC DST --all --apply --quiet`.
- **floor**: the same checkpoint and write rows, bare (no layout change), through
  `COPY ... FROM STDIN` into Postgres, and through `executemany` into SQLite.
- **LangGraph**: `SqliteSaver.list(None)` then `PostgresSaver.put` and `put_writes` for
  every checkpoint, on the first `--langgraph-threads` threads (it decodes and re-encodes
  every value); the rate is extrapolated to the whole store and said so.

Measured (2 cores, 2026-12-04; a 2.0 GB store of 600 threads x 25 turns: 75,000
checkpoints, 105,000 writes):

    ckpt copy into Postgres      57.3 s   60 MB peak   (75,000 blobs split out, 1.5 GB)
    floor: COPY of bare rows     46.6 s   38 MB
    ckpt copy into SQLite        21.6 s   41 MB
    floor: executemany           23.8 s   27 MB
    LangGraph list/put/put_writes  9.7 s for 20 threads: ~290 s for the store, 89 MB
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def child(code: str, *args: str) -> tuple[float, float]:
    """Run `code` in a fresh Python; (seconds, that child's peak RSS in MB, GNU time)."""
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


def fresh_database(admin: str, name: str) -> str:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


def url(dsn: str) -> str:
    import psycopg

    p = psycopg.conninfo.conninfo_to_dict(dsn)
    return (
        f"postgresql://{p.get('user', '')}@{p.get('host', '')}:{p.get('port', 5432)}/{p['dbname']}"
    )


CKPT = "import sys; from ckpt.cli import main; sys.argv = ['ckpt', *sys.argv[1:]]; main()"

FLOOR_PG = """
import sqlite3, sys, psycopg
src, dsn = sys.argv[1], sys.argv[2]
with sqlite3.connect(src) as s, psycopg.connect(dsn) as pg:
    pg.execute("CREATE TABLE bare_checkpoints (thread_id text, checkpoint_ns text, "
               "checkpoint_id text, parent_checkpoint_id text, type text, checkpoint bytea, "
               "metadata bytea)")
    pg.execute("CREATE TABLE bare_writes (thread_id text, checkpoint_ns text, checkpoint_id "
               "text, task_id text, task_path text, idx int, channel text, type text, blob bytea)")
    with pg.cursor() as cur:
        with cur.copy("COPY bare_checkpoints FROM STDIN") as copy:
            for row in s.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, "
                                 "parent_checkpoint_id, type, checkpoint, metadata "
                                 "FROM checkpoints"):
                copy.write_row(row)
        with cur.copy("COPY bare_writes FROM STDIN") as copy:
            for row in s.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, "
                                 "task_path, idx, channel, type, value FROM writes"):
                copy.write_row(row)
"""

FLOOR_SQLITE = """
import sqlite3, sys
from ckpt.stores.sqlite.target import SCHEMA
src, dst = sys.argv[1], sys.argv[2]
with sqlite3.connect(src) as s, sqlite3.connect(dst) as d:
    d.executescript(SCHEMA)
    d.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
                  s.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, "
                            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints"))
    d.executemany("INSERT INTO writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  s.execute("SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, "
                            "task_path, idx, channel, type, value FROM writes"))
"""

LANGGRAPH = """
import sqlite3, sys
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
src, dsn, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True, check_same_thread=False)
source = SqliteSaver(conn)
source.is_setup = True  # read-only: setup() would ALTER and switch to WAL
threads = [t for (t,) in conn.execute(
    "SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1 LIMIT ?", (n,))]
with PostgresSaver.from_conn_string(dsn) as target:
    target.setup()
    for thread_id in threads:
        tuples = list(source.list({"configurable": {"thread_id": thread_id}}))
        for tup in reversed(tuples):  # oldest first, parents before children
            conf = tup.config["configurable"]
            parent = (tup.parent_config or {}).get("configurable", {})
            config = {"configurable": {"thread_id": thread_id,
                      "checkpoint_ns": conf["checkpoint_ns"],
                      "checkpoint_id": parent.get("checkpoint_id")}}
            stored = target.put(config, tup.checkpoint, tup.metadata,
                                tup.checkpoint["channel_versions"])
            by_task = {}
            for task_id, channel, value in tup.pending_writes or []:
                by_task.setdefault(task_id, []).append((channel, value))
            for task_id, writes in by_task.items():
                target.put_writes(stored, writes, task_id)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--pg-admin", required=True, metavar="DSN")
    parser.add_argument("--langgraph-threads", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args(argv)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    src = str(args.store.resolve())
    with closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True)) as conn:
        (threads,) = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
        (checkpoints,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    results: dict[str, object] = {
        "store_bytes": args.store.stat().st_size,
        "threads": threads,
        "checkpoints": checkpoints,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    copy_sqlite = args.out / "copy_bench.sqlite"
    floor_sqlite = args.out / "copy_floor.sqlite"
    for path in (copy_sqlite, floor_sqlite):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    dsn = fresh_database(args.pg_admin, "ckpt_copy_bench")
    results["ckpt_to_postgres"] = child(CKPT, "copy", src, url(dsn), "--all", "--apply", "--quiet")
    results["ckpt_to_sqlite"] = child(
        CKPT, "copy", src, str(copy_sqlite), "--all", "--apply", "--quiet"
    )
    dsn = fresh_database(args.pg_admin, "ckpt_copy_floor")
    results["floor_postgres_copy"] = child(FLOOR_PG, src, dsn)
    results["floor_sqlite_executemany"] = child(FLOOR_SQLITE, src, str(floor_sqlite))
    dsn = fresh_database(args.pg_admin, "ckpt_copy_langgraph")
    n = min(args.langgraph_threads, threads)
    seconds, peak = child(LANGGRAPH, src, dsn, str(n))
    results["langgraph_to_postgres"] = {
        "threads": n,
        "seconds": seconds,
        "peak_mb": peak,
        "extrapolated_seconds": seconds * threads / n,
    }
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
