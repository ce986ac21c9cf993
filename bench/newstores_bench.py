"""Time `ckpt threads` on MySQL, Valkey and DynamoDB stores against the saver's own way of
getting the same answer and against a bare floor (issue 43).

    python bench/newstores_bench.py                          # 200 threads x 25 checkpoints
    python bench/newstores_bench.py --kind dynamodb --threads 1000

Each store gets one seed thread written by the real saver (a graph that loops `--steps`
times: one checkpoint per step, a write per step), then the seed's rows, keys or items
copied under new thread ids. Every number is a separate process (start-up counts for
all sides); peak memory is the child's max RSS (GNU time). Compared, per kind:

    ckpt threads --json      ckpt's listing (key names / key columns, then the latest
                             checkpoint of each thread)
    saver                    what a user of the saver must do: list the thread ids by
                             hand (none of these savers can: list(None) raises or yields
                             nothing), then get_tuple() each thread's latest checkpoint
    floor                    the bare key read any listing needs: a Scan projecting PK
                             and SK (DynamoDB), SCAN + LRANGE 0 0 (Valkey), one GROUP BY
                             (MySQL)

Numbers (2026-12-06, this 2-core machine shared with four other sessions; 25 checkpoints
and 25 writes a thread, every process started cold):

    command (201 threads)                        time   peak RSS
    mysql: ckpt threads --json                  0.705s    38.1MB
    mysql: saver (ids by hand + get_tuple)      1.293s    55.9MB
    mysql: floor (one GROUP BY)                 0.174s    29.9MB
    valkey: ckpt threads --json                 0.524s    33.7MB
    valkey: saver (ids by hand + get_tuple)     1.704s    59.5MB
    valkey: floor (SCAN + LRANGE 0 0)           0.436s    27.2MB

    command (1,001 threads x 25 checkpoints: 200,200 items; moto in the bench's process)
    dynamodb: ckpt threads --json                  61.0s    61.0MB     58 requests
    dynamodb: ckpt threads --json --sort step      69.2s    60.9MB     80 requests
    dynamodb: saver (ids by hand + get_tuple)     793.7s    83.8MB  3,060 requests
    dynamodb: floor (Scan of PK, SK)               63.2s    57.3MB     57 requests

    requests by operation (botocore's own count, COUNT_REQUESTS below)
    ckpt threads             DescribeTable 1, Scan 57 (PK, SK, channel): no chunk, no S3
    ckpt threads --sort step DescribeTable 1, Scan 57, BatchGetItem 22 (the 1,001 newest
                             checkpoint items and their chunks, 100 a request; no Query:
                             the Scan saw no writes on them)
    saver's way              Scan 57, Query 2,002 (latest, writes), GetItem 1,001 (payloads)
    floor                    Scan 57

`ckpt threads` reads the Scan and nothing else (format.md §7g): thread ids, counts,
namespaces, the newest root checkpoint id and the channels of its writes, so a failed or
interrupted thread is told; step, source, `next` and done-or-pending are inside the newest
payload, left out (status `unknown`, a note on stderr). `--sort step` (like `--status
done`, `--where`) reads the newest payloads: the saver's whole answer, in 22 requests where
the saver sends 3,003. Before this change the listing sent a Query per thread for writes
(31 threads: 38 requests, 15.8 s; the saver's way 95). ckpt's memory at 31 threads is
58.3 MB, at 1,001 threads 61.0 MB (the floor, holding the thread ids: 52.3 and 57.3 MB):
a thread's counts and newest writes are kept, nothing per checkpoint or write (a key per
write, as the listing kept before, was 75 MB here). The saver's row is from the first
full run (`--repeat 1`), the others from a second run of the same table after that fix.
The times are moto's: a Scan page of 1 MB of items takes it ~1.2 s (2.5 s before
`sort_once` below), a point request ~0.25 s on this loaded machine (2 cores, other
sessions' test runs alongside), so the rows count round trips, not what DynamoDB would
take. Building the table takes ~100 s; the whole run ~30 min, most of it the saver's way
(twice: timed, then counted).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from postgres import TIME, Measured, measure  # noqa: E402 - bench/ as a script folder

CKPT = [sys.executable, "-m", "ckpt"]  # this checkout's ckpt (PYTHONPATH=src)
SEED = "seed-thread"

SAVER = {
    "mysql": """
import sys
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver
with PyMySQLSaver.from_conn_string(sys.argv[1]) as saver:
    with saver._cursor() as cur:
        cur.execute("SELECT DISTINCT thread_id FROM checkpoints")
        threads = [row["thread_id"] for row in cur.fetchall()]
    print(sum(saver.get_tuple({"configurable": {"thread_id": t}}) is not None for t in threads))
""",
    "valkey": """
import sys
from valkey import Valkey
from langgraph_checkpoint_aws.checkpoint.valkey import ValkeySaver
client = Valkey.from_url(sys.argv[1])
saver = ValkeySaver(client)
keys = client.scan_iter(match="thread:{*", count=2000)
threads = {k.decode()[8:].rpartition("}:")[0] for k in keys}
print(sum(saver.get_tuple({"configurable": {"thread_id": t}}) is not None for t in threads))
""",
    "dynamodb": """
import sys
from urllib.parse import parse_qs, urlsplit
import boto3
from langgraph_checkpoint_aws import DynamoDBSaver
parts = urlsplit(sys.argv[1]); q = {k: v[0] for k, v in parse_qs(parts.query).items()}
where = {"region_name": q["region"], "endpoint_url": q["endpoint_url"]}
client = boto3.client("dynamodb", **where)
threads = set()
pages = client.get_paginator("scan").paginate(TableName=parts.netloc, ProjectionExpression="PK")
for page in pages:
    pks = [i["PK"]["S"] for i in page["Items"]]
    threads.update(pk[11:] for pk in pks if pk.startswith("CHECKPOINT_"))
saver = DynamoDBSaver(table_name=parts.netloc, **where)
print(sum(saver.get_tuple({"configurable": {"thread_id": t}}) is not None for t in threads))
""",
}
FLOOR = {
    "mysql": """
import sys
from urllib.parse import urlsplit
import pymysql
p = urlsplit(sys.argv[1])
conn = pymysql.connect(host=p.hostname, port=p.port, user=p.username, database=p.path[1:])
with conn.cursor() as cur:
    cur.execute(
        "SELECT thread_id, count(*), max(checkpoint_id) FROM checkpoints GROUP BY thread_id"
    )
    print(len(cur.fetchall()))
""",
    "valkey": """
import sys
from valkey import Valkey
client = Valkey.from_url(sys.argv[1])
keys = list(client.scan_iter(match="thread:{*", count=2000))
pipe = client.pipeline(transaction=False)
for k in keys:
    pipe.lrange(k, 0, 0)
print(sum(bool(x) for x in pipe.execute()))
""",
    "dynamodb": """
import sys
from urllib.parse import parse_qs, urlsplit
import boto3
parts = urlsplit(sys.argv[1]); q = {k: v[0] for k, v in parse_qs(parts.query).items()}
client = boto3.client("dynamodb", region_name=q["region"], endpoint_url=q["endpoint_url"])
threads = set()
pages = client.get_paginator("scan").paginate(TableName=parts.netloc, ProjectionExpression="PK, SK")
for page in pages:
    pks = [i["PK"]["S"] for i in page["Items"]]
    threads.update(pk for pk in pks if pk.startswith("CHECKPOINT_"))
print(len(threads))
""",
}


# Prepended to a DynamoDB side's script: count the requests botocore sends (stderr at exit).
COUNT_REQUESTS = """
import atexit, collections, sys, botocore.endpoint
_sent = collections.Counter()
_make = botocore.endpoint.Endpoint.make_request
def _counted(self, model, request):
    _sent[model.name] += 1
    return _make(self, model, request)
botocore.endpoint.Endpoint.make_request = _counted
atexit.register(lambda: print("requests:", dict(_sent), file=sys.stderr))
"""
CKPT_MAIN = "\nfrom ckpt.cli import main\nmain()\n"


def requests_sent(script: str, args: list[str]) -> str:
    """The botocore requests one run of `script` sends, by operation."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", COUNT_REQUESTS + script, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("requests:")]
    return lines[-1] if lines else f"(exit {done.returncode}: {done.stderr[-200:]})"


def loop_graph(saver: Any, steps: int) -> Any:
    """A graph that counts to `steps`, one checkpoint and one write per step."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        count: int
        log: str

    def step(state: State) -> State:
        return {"count": state["count"] + 1, "log": state["log"] + f" step {state['count']}"}

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["count"] >= steps else "step")
    return builder.compile(checkpointer=saver)


def seed(saver: Any, steps: int) -> None:
    config: Any = {"configurable": {"thread_id": SEED}, "recursion_limit": steps + 10}
    loop_graph(saver, steps).invoke({"count": 0, "log": ""}, config)


def names(threads: int) -> Iterator[str]:
    return (f"bench-{n:05d}" for n in range(threads))


@contextmanager
def mysql_store(threads: int, steps: int) -> Iterator[str]:
    from fixtures.mysql_server import MariaDBServer
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    with MariaDBServer() as server:
        url = server.database("bench")
        with PyMySQLSaver.from_conn_string(url) as saver:
            saver.setup()
            seed(saver, steps)
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            columns = [r[0] for r in server.execute(f"SHOW COLUMNS FROM {table}", "bench")]
            listed = ", ".join(f"`{c}`" for c in columns)
            picked = ", ".join("%s" if c == "thread_id" else f"`{c}`" for c in columns)
            import pymysql

            conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root",
                                   database="bench", autocommit=True)  # fmt: skip
            with conn.cursor() as cur:
                for name in names(threads):
                    cur.execute(
                        f"INSERT INTO {table} ({listed}) SELECT {picked} FROM {table} "
                        "WHERE thread_id = %s",
                        (name, SEED),
                    )
            conn.close()
        yield url


@contextmanager
def valkey_store(threads: int, steps: int) -> Iterator[str]:
    from fixtures.redis_server import RedisServer
    from fixtures.valkey_stores import listing_saver, valkey_url
    from valkey import Valkey

    with RedisServer(modules=False) as server:
        url = valkey_url(server.url)
        seed(listing_saver(url), steps)
        client = Valkey.from_url(url)
        keys = list(client.scan_iter(match="*{" + SEED + "}*"))
        strings = {k: client.get(k) for k in keys if client.type(k) == b"string"}
        lists = {k: client.lrange(k, 0, -1) for k in keys if client.type(k) == b"list"}
        pipe = client.pipeline(transaction=False)
        token = SEED.encode()
        for name in names(threads):
            new = name.encode()
            for key, value in strings.items():
                pipe.set(key.replace(token, new), value.replace(token, new))
            for key, values in lists.items():
                pipe.rpush(key.replace(token, new), *values)
            if len(pipe) > 5000:
                pipe.execute()
        pipe.execute()
        client.close()
        yield url


@contextmanager
def dynamodb_store(threads: int, steps: int) -> Iterator[str]:
    from fixtures.dynamodb_stores import MotoServer, create_table, listing_saver

    with MotoServer() as server:
        create_table(server, "bench")
        seed(listing_saver(server, "bench"), steps)
        client = server.client("dynamodb")
        items = [
            i
            for page in client.get_paginator("scan").paginate(TableName="bench")
            for i in page["Items"]
        ]

        def renamed(value: Any, name: str) -> Any:
            if isinstance(value, dict) and "S" in value:
                return {"S": value["S"].replace(SEED, name)}
            return value

        batch: list[Any] = []
        for name in names(threads):
            for item in items:
                batch.append(
                    {"PutRequest": {"Item": {k: renamed(v, name) for k, v in item.items()}}}
                )
                if len(batch) == 25:
                    client.batch_write_item(RequestItems={"bench": batch})
                    batch = []
        if batch:
            client.batch_write_item(RequestItems={"bench": batch})
        sort_once(server, "bench")
        yield server.url("bench")


def sort_once(server: Any, table: str) -> None:
    """moto sorts every item of the table again for each Scan page (1 MB of items), which
    makes a Scan of 200,000 items quadratic (2.5 s a page here). The table no longer changes
    once filled: it is sorted once, and each page costs its own walk (1.2 s). What a Scan
    returns, page by page, is unchanged; only moto's own time is cut."""
    from fixtures.dynamodb_stores import REGION
    from moto.backends import get_backend

    backend = next(iter(get_backend("dynamodb").values()))[REGION]
    items = backend.tables[table].all_items()
    setattr(backend.tables[table], "all_items", lambda: items)  # noqa: B010 - a method


STORES: dict[str, Callable[[int, int], Any]] = {
    "mysql": mysql_store,
    "valkey": valkey_store,
    "dynamodb": dynamodb_store,
}


def run_bench(kind: str, url: str, threads: int, repeat: int) -> list[tuple[str, Measured]]:
    listing = [*CKPT, "threads", url, "--json", "--timeout", "600"]
    rows = [
        (f"{kind}: ckpt threads --json", measure(listing, repeat=repeat)),
        (
            f"{kind}: saver (ids by hand + get_tuple)",
            measure([sys.executable, "-c", SAVER[kind], url], repeat=1),
        ),  # fmt: skip
        (f"{kind}: floor", measure([sys.executable, "-c", FLOOR[kind], url], repeat=repeat)),
    ]
    if kind == "dynamodb":
        # The keys-only listing leaves step, next and done/pending out; `--sort step` reads
        # the newest payloads: the saver's whole answer.
        loaded = [*listing, "--sort", "step"]
        rows.insert(1, (f"{kind}: ckpt threads --json --sort step", measure(loaded, repeat=1)))
        ours = requests_sent(CKPT_MAIN, listing[3:])
        print(f"  ckpt threads {ours}")
        print(f"  ckpt threads --sort step {requests_sent(CKPT_MAIN, loaded[3:])}")
        print(f"  saver's way {requests_sent(SAVER[kind], [url])}")
        print(f"  floor {requests_sent(FLOOR[kind], [url])}", flush=True)
    listed = rows[0][1].stdout.count('"thread_id"')
    counted = [int(m.stdout.strip() or 0) for _, m in rows[-2:]]
    print(f"  ckpt listed {listed}, saver found {counted[0]}, floor {counted[1]} "
          f"(of {threads + 1} threads)", flush=True)  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=[*STORES, "all"], default="all")
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--steps", type=int, default=24, help="checkpoints per thread - 1")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each command (best)")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONPATH", str(HERE.parent / "src"))
    print(f"{'command':44} {'time':>9} {'peak RSS':>10}")
    for kind in STORES if args.kind == "all" else [args.kind]:
        with STORES[kind](args.threads, args.steps) as url:
            for name, measured in run_bench(kind, url, args.threads, args.repeat):
                print(f"{name:44} {measured.seconds:8.3f}s {measured.rss_mb:8.1f}MB", flush=True)
    if not Path(TIME).exists():
        print(f"peak memory not measured: no {TIME} (GNU time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
