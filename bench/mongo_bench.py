"""Time ckpt on a large MongoDBSaver store against LangGraph's own reading and a bare floor
(issue 27).

    python bench/mongo_bench.py                      # 10,000 threads x 20 checkpoints
    python bench/mongo_bench.py --url mongodb://...  # an existing store, left as it is

The server is nx-27017 (MongoDB's wire protocol over SQLite, fixtures/mongo_server.py),
filled by bench/make_store.py: 20 seed threads of the growing chat through the real
MongoDBSaver, the other threads copies of their documents. Its numbers are nx-27017's
(a real mongod answers a find much faster); what they compare is ckpt against the same
server's floor. Compared:

    ckpt threads                 ckpt's listing (key fields of every checkpoint, then the
                                 latest documents and their writes)
    MongoDBSaver.list(None)      LangGraph's own way to see every thread
    floor                        a bare find of every checkpoint's key fields, sorted as the
                                 saver's unique index: what any listing must at least read
    ckpt dump                    streams: peak memory flat in the store's size
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
from langgraph.checkpoint.mongodb import MongoDBSaver
with MongoDBSaver.from_conn_string(sys.argv[1]) as saver:
    print(len({t.config["configurable"]["thread_id"] for t in saver.list(None)}))
"""

FLOOR = """
import sys, pymongo
db = pymongo.MongoClient(sys.argv[1])["checkpointing_db"]
fields = {"thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "_id": 0}
order = [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)]
print(len({d["thread_id"] for d in db.checkpoints.find({}, fields).sort(order)}))
"""


def run_bench(url: str) -> None:
    rows: list[tuple[str, Measured]] = []

    def row(name: str, argv: list[str], repeat: int = 3, keep: bool = True) -> Measured:
        measured = measure(argv, repeat=repeat, keep_stdout=keep)
        rows.append((name, measured))
        return measured

    ours = row("ckpt threads --json", [CKPT, "threads", url, "--json"])
    floor = row("floor: find key fields, sorted", [sys.executable, "-c", FLOOR, url])
    row("ckpt dump --ndjson (every value)", [CKPT, "dump", url, "--ndjson", "--quiet"], 1, False)
    row("ckpt history <thread>", [CKPT, "history", "bench-0000", "--db", url])
    row("ckpt show <latest> --json", [CKPT, "show", "bench-0000", "--db", url, "--json"])
    theirs = row(
        "MongoDBSaver.list(None) thread count", [sys.executable, "-c", LANGGRAPH_COUNT, url], 1
    )
    print(f"ckpt listed {ours.stdout.count('thread_id')} threads; floor saw "
          f"{floor.stdout.strip()}; LangGraph counts {theirs.stdout.strip()}")  # fmt: skip
    print(f"{'command':40} {'time':>9} {'peak RSS':>10}")
    for name, measured in rows:
        print(f"{name:40} {measured.seconds:8.3f}s {measured.rss_mb:8.1f}MB")
    if not Path(TIME).exists():
        print(f"peak memory not measured: no {TIME} (GNU time)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=4, help="5 checkpoints per turn")
    parser.add_argument("--url", help="an existing store to time (left as it is)")
    args = parser.parse_args()
    if args.url:
        run_bench(args.url)
        return 0
    from fixtures.mongo_server import MongoServer

    from make_store import make_mongodb

    with MongoServer() as server:
        make_mongodb(server.url, args.threads, args.turns, seeds=20)
        run_bench(server.url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
