"""`ckpt copy` of a large SQLite store into Postgres, a new SQLite file, Redis and MongoDB,
against the floor of a bare bulk load and against LangGraph's own savers (issue 46).

    python bench/make_store.py bench/out/copy230.sqlite --threads 1000 --turns 6
    python bench/make_store.py bench/out/copy115.sqlite --threads 500 --turns 6
    python bench/copy_bench.py bench/out/copy230.sqlite --half bench/out/copy115.sqlite \
        --pg-admin postgresql://postgres@127.0.0.1/postgres --langgraph-threads 50 --repeat 3

Each run writes into an empty target of its own: a new Postgres database or SQLite file,
or a Redis 8.2 with RedisJSON and RediSearch (fixtures/redis_server.py) or an nx-27017
(fixtures/mongo_server.py) started for that run alone, never the shared Redis on 6379.
Every run is a child process timed by GNU time: wall seconds, CPU seconds (user +
system) and peak RSS; for Redis and MongoDB also the CPU the server spent (INFO cpu,
/proc). `--repeat N`: the best time of N, the largest peak. `--ckpt-src` times another
tree's ckpt (before and after a change); `--ckpt-only` leaves out floors and LangGraph.

- **ckpt**: `ckpt copy SRC DST --all --apply --quiet` (MongoDB: `--renumber-versions`,
  which SQLite's string versions need for MongoDBSaver). `--half`: the same on a store
  of half the threads, for the peak RSS (copy streams: memory flat in the store's size).
- **floor**: the same checkpoint and write rows, bare (no layout change, no transaction,
  no index): `COPY ... FROM STDIN` into Postgres, `executemany` into SQLite, JSON.SET of
  each row as a JSON document (bytes as base64) pipelined 500 at a time into Redis,
  `insert_many` of 500 documents at a time into MongoDB.
- **LangGraph**: `SqliteSaver.list` then the target saver's `put` and `put_writes`
  (PostgresSaver, RedisSaver, MongoDBSaver) for every checkpoint of the first
  `--langgraph-threads` threads; it decodes and re-encodes every value. The time beyond a
  run of no threads (imports, connecting, setup()) is extrapolated to the whole store.

Measured 2026-12-06 on the 2-core machine while other work ran on it (load average 5 to 7:
wall times are stretched and vary between runs, the CPU seconds much less). Best of 3.
The store: `make_store.py --threads 1000 --turns 6`, 248 MB, 1,000 threads x 30
checkpoints = 30,000 checkpoints and 42,000 writes.

                                      wall     CPU   peak RSS   server CPU
    Postgres 15
      ckpt copy                        7.2 s   3.6 s    50 MB
      floor: COPY of bare rows         3.7 s   1.0 s    39 MB
      LangGraph PostgresSaver         ~47 s   ~17 s     63 MB   (50 threads: 3.0 s)
    SQLite
      ckpt copy                        5.2 s   1.9 s    34 MB
      floor: executemany               2.5 s   1.0 s    24 MB
    Redis 8.2 (RedisJSON 2.8, RediSearch 2.10)
      ckpt copy                       12.8 s   3.7 s    46 MB     2.1 s
      floor: pipelined JSON.SET        4.7 s   1.2 s    64 MB     0.9 s
      LangGraph RedisSaver            ~63 s   ~39 s     80 MB   (50 threads: 3.9 s)
    MongoDB (nx-27017, over SQLite)
      ckpt copy                       17.2 s   3.4 s    45 MB     7.6 s
      floor: insert_many              22.0 s   0.8 s    48 MB     6.9 s
      LangGraph MongoDBSaver         ~530 s   ~26 s     58 MB   (50 threads: 27.4 s)

    ckpt copy's peak RSS       half (124 MB)   full (248 MB)   double (495 MB, 2,000 threads)
      into Postgres                49 MB           50 MB           50 MB
      into SQLite                  33 MB           34 MB           33 MB
      into Redis                   46 MB           46 MB           46 MB
      into MongoDB                 44 MB           45 MB           45 MB

Reading it: ckpt takes at most 3x the bare floor's wall time on every target (Redis
2.7x, or 2.8x in CPU with the server's), 5x (Redis) to 30x (MongoDB) less than
LangGraph's own savers, in less memory than either, flat in the store's size.
Into Redis the documents are RedisSaver's JSON (every message turned from msgpack into
its JSON, then parsed by RedisJSON and indexed by RediSearch: 2.1 s of the server's CPU
against 0.9 s for the floor's base64 strings), each thread one MULTI/EXEC. Into MongoDB
the server's own work dominates both ckpt and the floor (nx-27017 is Python; its wall
time for the floor varied from 8 to 24 s between runs); each copied thread is one
transaction. Before the changes made with this bench (stores/redis/target.py: each
message converted once, not once per checkpoint holding it; a thread's documents sent as
JSON.MSETs, one reply each, not one per document) ckpt copy into Redis took 6.3 s of
CPU (10.6 s wall) where it now takes 3.5 s (6.2 s wall), measured back to back.
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
