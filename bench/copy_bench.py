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
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


class Timed(NamedTuple):
    """One child's wall seconds, peak RSS in MB, and CPU seconds (user + system), as GNU
    time reports them: the CPU time says what the run cost when other work shares the
    cores and stretches the wall time."""

    seconds: float
    peak_mb: float
    cpu: float


def child(code: str, *args: str) -> Timed:
    """Run `code` in a fresh Python, timed."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", rss.name, PY, "-c", code, *args],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - start
        kb, user, system = rss.read().split()[-3:]
        return Timed(
            round(seconds, 2), round(int(kb) / 1024, 1), round(float(user) + float(system), 2)
        )


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

FLOOR_REDIS = """
import base64, sqlite3, sys, orjson, redis
src, url, batch = sys.argv[1], sys.argv[2], 500
client = redis.Redis.from_url(url, protocol=2)
text = lambda b: None if b is None else base64.b64encode(b).decode()
with sqlite3.connect(src) as s:
    pipe = client.pipeline(transaction=False)
    for n, (t, ns, cid, pid, typ, body, meta) in enumerate(s.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "checkpoint, metadata FROM checkpoints"), 1):
        doc = {"thread_id": t, "checkpoint_ns": ns, "checkpoint_id": cid,
               "parent_checkpoint_id": pid, "type": typ, "checkpoint": text(body),
               "metadata": meta.decode() if isinstance(meta, bytes) else meta}
        pipe.execute_command("JSON.SET", f"bare:{t}:{ns}:{cid}", "$", orjson.dumps(doc))
        if n % batch == 0:
            pipe.execute()
    for n, (t, ns, cid, task, path, idx, ch, typ, value) in enumerate(s.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
            "channel, type, value FROM writes"), 1):
        doc = {"thread_id": t, "checkpoint_ns": ns, "checkpoint_id": cid, "task_id": task,
               "task_path": path, "idx": idx, "channel": ch, "type": typ, "blob": text(value)}
        pipe.execute_command("JSON.SET", f"bare_write:{t}:{ns}:{cid}:{task}:{idx}", "$",
                             orjson.dumps(doc))
        if n % batch == 0:
            pipe.execute()
    pipe.execute()
"""

FLOOR_MONGO = """
import sqlite3, sys, pymongo
src, url, batch = sys.argv[1], sys.argv[2], 500
db = pymongo.MongoClient(url).get_default_database()
queries = {
    "bare_checkpoints": ("SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                         "type, checkpoint, metadata FROM checkpoints"),
    "bare_writes": ("SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
                    "channel, type, value FROM writes"),
}
with sqlite3.connect(src) as s:
    for name, sql in queries.items():
        cursor = s.execute(sql)
        fields = [d[0] for d in cursor.description]
        while rows := cursor.fetchmany(batch):
            db[name].insert_many([dict(zip(fields, row)) for row in rows])
"""

# LangGraph's own way: SqliteSaver.list then the target saver's put and put_writes for every
# checkpoint of the first N threads (it decodes and re-encodes every value). {saver} opens
# the target saver as `target` from sys.argv[2].
LANGGRAPH = """
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = sqlite3.connect(f"file:{{src}}?mode=ro", uri=True, check_same_thread=False)
source = SqliteSaver(conn)
source.is_setup = True  # read-only: setup() would ALTER and switch to WAL
threads = [t for (t,) in conn.execute(
    "SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1 LIMIT ?", (n,))]
{saver}
    for thread_id in threads:
        tuples = list(source.list({{"configurable": {{"thread_id": thread_id}}}}))
        for tup in reversed(tuples):  # oldest first, parents before children
            conf = tup.config["configurable"]
            parent = (tup.parent_config or {{}}).get("configurable", {{}})
            config = {{"configurable": {{"thread_id": thread_id,
                      "checkpoint_ns": conf["checkpoint_ns"],
                      "checkpoint_id": parent.get("checkpoint_id")}}}}
            stored = target.put(config, tup.checkpoint, tup.metadata,
                                tup.checkpoint["channel_versions"])
            by_task = {{}}
            for task_id, channel, value in tup.pending_writes or []:
                by_task.setdefault(task_id, []).append((channel, value))
            for task_id, writes in by_task.items():
                target.put_writes(stored, writes, task_id)
"""
SAVERS = {
    "postgres": (
        "from langgraph.checkpoint.postgres import PostgresSaver\n"
        "with PostgresSaver.from_conn_string(dst) as target:\n"
        "    target.setup()"
    ),
    "redis": (
        "from langgraph.checkpoint.redis import RedisSaver\n"
        "with RedisSaver.from_conn_string(dst) as target:\n"
        "    target.setup()"
    ),
    "mongodb": (
        "from langgraph.checkpoint.mongodb import MongoDBSaver\n"
        "with MongoDBSaver.from_conn_string(dst, db_name='langgraph') as target:"
    ),
}


KINDS = ("postgres", "sqlite", "redis", "mongodb")


class Fresh:
    """An empty target of one kind: `spec`, the URL or path the floor and LangGraph take
    (ckpt_spec() turns it into what `ckpt copy` takes), and `server_cpu()`, the CPU
    seconds its server has used (None for SQLite, and for the shared Postgres)."""

    def __init__(self, spec: str, server_cpu: Callable[[], float | None] = lambda: None):
        self.spec, self.server_cpu = spec, server_cpu


@contextmanager
def fresh_target(kind: str, admin: str | None, name: str, out: Path) -> Iterator[Fresh]:
    """A new Postgres database, SQLite file, or Redis 8.2 or nx-27017 server started for
    this run alone."""
    if kind == "postgres":
        if admin is None:
            raise SystemExit("--pg-admin is needed for the postgres runs")
        yield Fresh(fresh_database(admin, name))
    elif kind == "sqlite":
        path = out / f"{name}.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        yield Fresh(str(path))
    elif kind == "redis":
        import redis
        from fixtures.redis_server import RedisServer

        def redis_cpu() -> float:
            with redis.Redis.from_url(redis_server.url) as client:
                cpu = client.info("cpu")
            return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

        with RedisServer() as redis_server:
            yield Fresh(redis_server.url, redis_cpu)
    else:
        from fixtures.mongo_server import MongoServer

        def process_cpu() -> float:
            assert mongo_server.process is not None
            fields = Path(f"/proc/{mongo_server.process.pid}/stat").read_text().split(")")[-1]
            utime, stime = fields.split()[11:13]  # fields 14 and 15 of proc(5)
            return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")

        with MongoServer() as mongo_server:
            yield Fresh(mongo_server.url + name, process_cpu)


def ckpt_spec(kind: str, target: str) -> str:
    return url(target) if kind == "postgres" else target


def ckpt_copy(kind: str, src: str, target: str) -> Timed:
    # SQLite's channel versions are strings; MongoDBSaver counts 1, 2, 3 (copy says so).
    renumber = ["--renumber-versions"] if kind == "mongodb" else []
    return child(
        CKPT, "copy", src, ckpt_spec(kind, target), "--all", "--apply", "--quiet", *renumber
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument(
        "--half", type=Path, help="a store of half the threads: ckpt's peak RSS on both"
    )
    parser.add_argument("--pg-admin", metavar="DSN", help="a URL that may create databases")
    parser.add_argument(
        "--targets", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}"
    )
    parser.add_argument("--langgraph-threads", type=int, default=20)
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each: the best time, the largest peak"
    )
    parser.add_argument("--ckpt-only", action="store_true", help="no floor, no LangGraph")
    parser.add_argument(
        "--ckpt-src",
        type=Path,
        default=ROOT / "src",
        help="the ckpt source tree to time (another checkout's src/: before and after)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args(argv)
    kinds = [k for k in args.targets.split(",") if k]
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown target kind(s): {', '.join(sorted(unknown))}")
    sys.path.insert(0, str(ROOT))  # fixtures/ (the throwaway Redis and MongoDB servers)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(args.ckpt_src.resolve()), str(ROOT)])
    args.out.mkdir(parents=True, exist_ok=True)
    stores = {"full": args.store.resolve()}
    if args.half is not None:
        stores["half"] = args.half.resolve()
    results: dict[str, Any] = {"stores": {}, "runs": {}}
    for size, path in stores.items():
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            (threads,) = conn.execute(
                "SELECT count(DISTINCT thread_id) FROM checkpoints"
            ).fetchone()
            (checkpoints,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
            (writes,) = conn.execute("SELECT count(*) FROM writes").fetchone()
        results["stores"][size] = {
            "path": str(path),
            "bytes": path.stat().st_size,
            "threads": threads,
            "checkpoints": checkpoints,
            "writes": writes,
        }
    src = str(stores["full"])
    threads = results["stores"]["full"]["threads"]
    runs: dict[str, Any] = results["runs"]

    def run(label: str, kind: str, go: Callable[[str], Timed]) -> None:
        best: Timed | None = None
        peak, server = 0.0, None
        for _ in range(args.repeat):  # each on an empty target of its own
            with fresh_target(kind, args.pg_admin, "ckpt_copy_bench", args.out) as target:
                before = target.server_cpu()
                timed = go(target.spec)
                after = target.server_cpu()
            peak = max(peak, timed.peak_mb)
            if best is None or timed.seconds < best.seconds:
                best = timed
                if after is not None and before is not None:
                    server = round(after - before, 1)  # the server's share of the best run
        assert best is not None
        runs[label] = {
            "seconds": best.seconds,
            "cpu_seconds": best.cpu,
            "peak_mb": peak,
            "server_cpu_seconds": server,
        }
        said = f"{label:38} {best.seconds:7.1f} s (CPU {best.cpu:5.1f} s) {peak:6.0f} MB"
        print(
            said + (f"  server CPU {server:.1f} s" if server is not None else ""), file=sys.stderr
        )

    for kind in kinds:
        for size, path in stores.items():
            run(f"ckpt copy -> {kind} ({size})", kind, partial(ckpt_copy, kind, str(path)))
        if args.ckpt_only:
            continue
        floor = {"postgres": FLOOR_PG, "sqlite": FLOOR_SQLITE, "redis": FLOOR_REDIS,
                 "mongodb": FLOOR_MONGO}[kind]  # fmt: skip
        run(f"floor -> {kind}", kind, partial(child, floor, src))
        if kind in SAVERS:
            # The first n threads, and none (imports, connecting, setup()): the rate is
            # what the n threads took beyond that, extrapolated to the store's threads.
            n = min(args.langgraph_threads, threads)
            code = LANGGRAPH.format(saver=SAVERS[kind])
            label = f"LangGraph put/put_writes -> {kind}"
            for count, name in ((0, f"{label} (start-up)"), (n, label)):
                run(name, kind, lambda spec, code=code, k=count: child(code, src, spec, str(k)))
            ran, idle = runs[label], runs[f"{label} (start-up)"]
            scale = threads / n
            runs[label].update(
                threads=n,
                extrapolated_seconds=round(
                    idle["seconds"] + (ran["seconds"] - idle["seconds"]) * scale, 1
                ),
                extrapolated_cpu_seconds=round(
                    idle["cpu_seconds"] + (ran["cpu_seconds"] - idle["cpu_seconds"]) * scale, 1
                ),
            )
            print(
                f"{'':38} extrapolated to {threads} threads: "
                f"{runs[label]['extrapolated_seconds']:.0f} s "
                f"(CPU {runs[label]['extrapolated_cpu_seconds']:.0f} s)",
                file=sys.stderr,
            )
    (args.out / "copy_bench.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
