"""Time ckpt on a large RedisSaver store against LangGraph's own reading and a bare floor
(issue 27).

    python bench/redis_bench.py                      # 10,000 threads x 20 checkpoints
    python bench/redis_bench.py --threads 100000 --turns 1 --memory-only

A Redis 8.2 with RedisJSON and RediSearch is started on a free port
(fixtures/redis_server.py) and filled by bench/make_store.py: 20 seed threads of the
growing chat run through the real RedisSaver, the other threads are copies of their keys.
Every number is a separate process, started the same way for each side (start-up counts
for all); peak memory is the child's max RSS from /usr/bin/time. Compared:

    ckpt threads                 ckpt's listing (key names, then one document per thread)
    RedisSaver.list(None)        LangGraph's own way to see every thread
    floor                        a bare SCAN of checkpoint_latest:* and JSON.MGET of the
                                 latest documents: what any listing must at least read
    ckpt dump                    streams: peak memory flat in the store's size

Targets: memory under 100 MB at 100,000 threads (`--threads 100000 --turns 1
--memory-only`), dump flat.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from postgres import CKPT, TIME, Measured, measure  # noqa: E402 - bench/ as a script folder

LANGGRAPH_COUNT = """
import sys
from langgraph.checkpoint.redis import RedisSaver
with RedisSaver.from_conn_string(sys.argv[1]) as saver:
    saver.setup()  # the indexes exist: it only makes the saver's key registry
    print(len({t.config["configurable"]["thread_id"] for t in saver.list(None)}))
"""

FLOOR = """
import sys, redis
client = redis.Redis.from_url(sys.argv[1], protocol=2)
latest = [k for k in client.scan_iter(match="checkpoint_latest:*", count=2000)]
roots = [k for k in latest if k.endswith(b":__empty__")]
pointers = client.mget(roots)
n = 0
for start in range(0, len(pointers), 200):
    docs = client.execute_command("JSON.MGET", *pointers[start:start + 200], ".")
    n += sum(d is not None for d in docs)
print(n)
"""


def run_bench(url: str, *, memory_only: bool) -> None:
    rows: list[tuple[str, Measured]] = []

    def row(name: str, argv: list[str], repeat: int = 3, keep: bool = True) -> Measured:
        measured = measure(argv, repeat=repeat, keep_stdout=keep)
        rows.append((name, measured))
        return measured

    ours = row("ckpt threads --json", [CKPT, "threads", url, "--json"])
    row("ckpt threads (table)", [CKPT, "threads", url], keep=False)
    if not memory_only:
        floor = row("floor: SCAN latest + JSON.MGET", [sys.executable, "-c", FLOOR, url])
        row(
            "ckpt dump --ndjson (every value)",
            [CKPT, "dump", url, "--ndjson", "--quiet"],
            repeat=1,
            keep=False,
        )
        thread = "bench-0000"
        row("ckpt history <thread>", [CKPT, "history", thread, "--db", url])
        row("ckpt show <latest> --json", [CKPT, "show", thread, "--db", url, "--json"])
        try:
            theirs = row(
                "RedisSaver.list(None) thread count",
                [sys.executable, "-c", LANGGRAPH_COUNT, url],
                repeat=1,
            )
            print(f"LangGraph counts {theirs.stdout.strip()} threads")
        except SystemExit as exc:
            print(f"RedisSaver.list(None) failed: {exc}")
        print(f"floor read {floor.stdout.strip()} latest documents")
    print(f"ckpt listed {ours.stdout.count('thread_id')} threads")
    print(f"{'command':40} {'time':>9} {'peak RSS':>10}")
    for name, measured in rows:
        print(f"{name:40} {measured.seconds:8.3f}s {measured.rss_mb:8.1f}MB")
    if not Path(TIME).exists():
        print(f"peak memory not measured: no {TIME} (GNU time)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=4, help="5 checkpoints per turn")
    parser.add_argument("--memory-only", action="store_true", help="time `threads` only")
    parser.add_argument("--url", help="an existing store to time (left as it is)")
    args = parser.parse_args()
    if args.url:
        run_bench(args.url, memory_only=args.memory_only)
        return 0
    from fixtures.redis_server import RedisServer

    from make_store import make_redis

    with RedisServer() as server:
        make_redis(server.url, args.threads, args.turns, seeds=20)
        run_bench(server.url, memory_only=args.memory_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
