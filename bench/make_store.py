"""Generate large, realistic checkpoint stores for ckpt's benchmarks.

    python bench/make_store.py bench/out/big.sqlite --threads 1000 --turns 25
    python bench/make_store.py --postgres postgresql://postgres@127.0.0.1/bench --threads 1000
    python bench/make_store.py --dev-folder bench/out/dev --checkpoints 100000
    python bench/make_store.py --redis redis://127.0.0.1:PORT/0 --threads 10000 --turns 4
    python bench/make_store.py --mongodb mongodb://127.0.0.1:PORT/ --threads 10000 --turns 4

Every byte is LangGraph's own: a real growing-chat graph (each turn: a human message,
an AI message with a tool call, the tool's message, the AI's answer) runs through the
real saver, and every checkpoint carries the thread's whole message list, as real
stores do. Running 1000 long threads through LangGraph takes many minutes, so a few
"seed" threads are run for real (--seed-threads) and their rows are then copied to
fresh thread ids (bench-0000, bench-0001, ...). SQLite copies get fresh checkpoint ids (a
store never repeats one) and their writes the task ids LangGraph derives from those
(`_task_id_for`), so LangGraph finds each task's writes in a copy as in its seed.

SQLite keeps the whole message list inline in every checkpoint, so size grows with the
square of the turns. Measured here (2 CPUs): 1000 threads x 25 turns = 125,000
checkpoints, 3.4 GB in 38 s; 1000 x 6 turns = 248 MB in 2 s; 70 x 25 turns = 237 MB.
--postgres with 1000 x 20 turns (100,000 checkpoints): a 650 MB database in 10 s. --dev-folder
with 100,000 checkpoints: 1.8 GB (the blobs file is 1.7 GB) in 26 s, ~7 GB peak RSS.
Copied SQLite and Postgres threads keep their seed's metadata (user_id, tenant); the
dev-folder copies get their own thread_id, user_id and tenant, re-encoded by LangGraph's
serde, because the server's metadata names the thread.

Outputs belong under bench/out/ (gitignored). Prints size and time taken to stderr.
"""

from __future__ import annotations

import argparse
import binascii
import json
import random
import sqlite3
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any, TypedDict

import xxhash

if __package__ in (None, ""):  # run as a script: make `fixtures` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixtures.build import DevServerSaver  # the `langgraph dev` file layout
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

CHECKPOINTS_PER_TURN = 5  # input, __start__, model (tool call), tools, model (answer)

WORDS = (
    "order shipment refund invoice customer account warehouse carrier tracking delivery "
    "address payment card balance subscription plan upgrade discount coupon return label "
    "package damaged delayed express standard priority region policy window receipt "
    "please could you check status update confirm cancel reschedule estimate today week"
).split()
TOOLS = ("lookup_order", "check_payment", "find_shipment", "search_kb")


# --------------------------------------------------------------------------------------
# The graph: a support chat whose "model" is a deterministic stand-in.
# --------------------------------------------------------------------------------------


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def _rng(thread_id: str, n: int) -> random.Random:
    return random.Random(f"{thread_id}/{n}")


def model(state: ChatState, config: RunnableConfig) -> dict[str, list[AnyMessage]]:
    messages = state["messages"]
    n = len(messages)
    rng = _rng(config["configurable"]["thread_id"], n)
    usage = {"input_tokens": 60 * n, "output_tokens": 80, "total_tokens": 60 * n + 80}
    if isinstance(messages[-1], HumanMessage):
        call = {
            "name": rng.choice(TOOLS),
            "args": {"query": _text(rng, 60), "order_id": f"A-{rng.randrange(10**4):04d}"},
            "id": f"call_{n:04d}",
            "type": "tool_call",
        }
        reply = AIMessage(
            content="",
            tool_calls=[call],
            id=f"msg-{n:04d}",
            response_metadata={"model_name": "bench-fake", "finish_reason": "tool_calls"},
            usage_metadata=usage,
        )
    else:
        reply = AIMessage(
            content=_text(rng, 400),
            id=f"msg-{n:04d}",
            response_metadata={"model_name": "bench-fake", "finish_reason": "stop"},
            usage_metadata=usage,
        )
    return {"messages": [reply]}


def tools(state: ChatState, config: RunnableConfig) -> dict[str, list[AnyMessage]]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    rng = _rng(config["configurable"]["thread_id"], len(state["messages"]))
    return {
        "messages": [
            ToolMessage(
                content=_text(rng, 300),
                tool_call_id=call["id"],
                name=call["name"],
                id=f"{call['id']}-result",
            )
            for call in last.tool_calls
        ]
    }


def _route(state: ChatState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(ChatState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", _route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)


def run_threads(
    checkpointer: BaseCheckpointSaver[Any],
    thread_ids: list[str],
    turns: int,
    metadata: Callable[[str], dict[str, Any]] | None = None,
) -> None:
    """Run `turns` user turns on each thread through the real graph."""
    graph = chat_graph(checkpointer)
    for thread_id in thread_ids:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        config["metadata"] = metadata(thread_id) if metadata else _metadata(thread_id)
        for turn in range(turns):
            text = _text(_rng(thread_id, -turn), 200)
            message = HumanMessage(text, id=f"{thread_id}-user-{turn + 1:03d}")
            graph.invoke({"messages": [message]}, config)


def _metadata(thread_id: str) -> dict[str, Any]:
    n = int(thread_id.rsplit("-", 1)[1])
    return {"user_id": f"u-{n % 97}", "tenant": ("acme", "globex", "initech")[n % 3]}


def thread_name(i: int) -> str:
    return f"bench-{i:04d}"


# --------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------


def make_sqlite(path: Path, threads: int, turns: int, seeds: int) -> None:
    if path.exists():
        raise SystemExit(f"{path} exists; remove it first")
    path.parent.mkdir(parents=True, exist_ok=True)
    seeds = min(seeds, threads)
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        saver = SqliteSaver(conn)
        started = time.perf_counter()
        run_threads(saver, [thread_name(i) for i in range(seeds)], turns)
        _say(f"ran {seeds} thread(s) x {turns} turns through SqliteSaver", started)
        started = time.perf_counter()
        with conn:
            for i in range(seeds, threads):
                _copy_sqlite_thread(conn, thread_name(i % seeds), thread_name(i), i)
        _say(f"copied rows to {threads - seeds} more thread(s)", started)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def interleave(source: Path, target: Path) -> None:
    """Copy a store with its rows in checkpoint-id order across threads: the copies of a
    seed share their ids' time, so each thread's n-th checkpoint sits beside the others',
    as when many threads run at once. The primary-key index is the same; the table's pages
    are in write order, which is what a cold read of one thread pays for."""
    if target.exists():
        raise SystemExit(f"{target} exists; remove it first")
    started = time.perf_counter()
    with closing(sqlite3.connect(target)) as conn:
        conn.execute("ATTACH DATABASE ? AS src", (str(source),))
        for (sql,) in conn.execute(
            "SELECT sql FROM src.sqlite_master WHERE type = 'table' AND sql IS NOT NULL"
        ).fetchall():
            conn.execute(sql)
        with conn:
            conn.execute(
                "INSERT INTO checkpoints SELECT * FROM src.checkpoints "
                "ORDER BY checkpoint_id, thread_id"
            )
            conn.execute(
                "INSERT INTO writes SELECT * FROM src.writes ORDER BY checkpoint_id, thread_id"
            )
        conn.execute("DETACH DATABASE src")
        conn.execute("PRAGMA journal_mode=WAL")
    _say(f"wrote the rows of {source.name} in live-write order", started)


def _new_id(checkpoint_id: str, i: int) -> str:
    """A distinct id of the same length and time: real stores never repeat an id. The
    length matters: the body holds the id as a msgpack string of its old length (which
    `body.replace` keeps), so a longer id (`i` of 65,536 and up in four hex digits, as
    this once wrote) makes the copied body invalid msgpack."""
    digits = 6
    if i >= 16**digits:
        raise ValueError(f"at most {16**digits:,} copies")
    return checkpoint_id[:-digits] + f"{i:0{digits}x}"


def _copy_sqlite_thread(conn: sqlite3.Connection, source: str, target: str, i: int) -> None:
    """Copy a seed thread's rows under a new thread id, with fresh checkpoint ids.

    The id also sits inside the checkpoint blob (its `id` field); the new id has the same
    length, so replacing its bytes keeps the msgpack framing intact.
    """

    def remap(checkpoint_id: str | None) -> str | None:
        return None if checkpoint_id is None else _new_id(checkpoint_id, i)

    rows = conn.execute(
        "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
        "FROM checkpoints WHERE thread_id = ?",
        (source,),
    ).fetchall()
    conn.executemany(
        "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                target,
                ns,
                remap(cid),
                remap(parent),
                tag,
                body.replace(cid.encode(), remap(cid).encode()),
                meta,
            )  # type: ignore[union-attr]
            for ns, cid, parent, tag, body, meta in rows
        ],
    )
    writes = conn.execute(
        "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value "
        "FROM writes WHERE thread_id = ?",
        (source,),
    ).fetchall()
    steps = {(ns, cid): json.loads(meta).get("step") for ns, cid, _, _, _, meta in rows}
    conn.executemany(
        "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
        "channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                target,
                ns,
                remap(cid),
                _task_id_for(task, path, ns, cid, remap(cid), steps),
                path,
                *rest,
            )
            for ns, cid, task, path, *rest in writes
        ],
    )


def _task_id_for(
    task_id: str, path: str, ns: str, old: str, new: str | None, steps: dict[Any, Any]
) -> str:
    """The id LangGraph gives the task of a write once its checkpoint has the id `new`:
    a pull task's id is XXH3 of the checkpoint id, the step and the node's triggers
    (langgraph.pregel._algo.prepare_single_task), so a copy with fresh checkpoint ids gets
    fresh task ids. Rewritten only where the old id is proved to be that hash of the old
    checkpoint id; any other id (a Send's, an input write's) is kept."""
    if new is None or ns or not path.startswith(f"~{_PULL}, "):
        return task_id
    node = path[len(f"~{_PULL}, ") :]
    step = steps.get((ns, old))
    if not isinstance(step, int) or node not in _TRIGGERS:
        return task_id
    parts = (node, str(step + 1), node, _PULL, *_TRIGGERS[node])
    if _xxh3_id(old, parts) != task_id:
        return task_id
    return _xxh3_id(new, parts)


_PULL = "__pregel_pull"
# The chat graph's nodes and their triggers, sorted as LangGraph hashes them.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    name: tuple(sorted(node.triggers)) for name, node in chat_graph(InMemorySaver()).nodes.items()
}


def _xxh3_id(checkpoint_id: str, parts: tuple[str, ...]) -> str:
    digest = xxhash.xxh3_128_hexdigest(
        binascii.unhexlify(checkpoint_id.replace("-", "")) + "".join(parts).encode()
    )
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


# --------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------

PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def make_postgres(dsn: str, threads: int, turns: int, seeds: int) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    seeds = min(seeds, threads)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
            if row and row[0]:
                raise SystemExit("the database already holds checkpoints; use an empty one")
        started = time.perf_counter()
        run_threads(saver, [thread_name(i) for i in range(seeds)], turns)
        _say(f"ran {seeds} thread(s) x {turns} turns through PostgresSaver", started)
    started = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        for table in PG_TABLES:
            columns = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position",
                    (table,),
                )
            ]
            select = ", ".join(
                "'bench-' || lpad(n::text, 4, '0')" if c == "thread_id" else f"t.{c}"
                for c in columns
            )
            # thread n copies seed thread (n mod seeds)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"SELECT {select} FROM generate_series(%s, %s - 1) AS n "
                f"JOIN {table} t ON t.thread_id = 'bench-' || lpad((n %% %s)::text, 4, '0')",
                (seeds, threads, seeds),
            )
        conn.commit()
        conn.execute("ANALYZE")
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    _say(f"copied rows to {threads - seeds} more thread(s)", started)
    if size:
        _say(f"database size {size[0] / 1e6:,.1f} MB")


# --------------------------------------------------------------------------------------
# Redis (RedisSaver: RedisJSON documents, format.md §7b)
# --------------------------------------------------------------------------------------


def make_redis(url: str, threads: int, turns: int, seeds: int) -> None:
    """Seeds through the real RedisSaver; every other thread a copy of a seed's keys with
    the thread id rewritten in key names and documents (what the saver's index reads)."""
    import redis
    from langgraph.checkpoint.redis import RedisSaver

    seeds = min(seeds, threads)
    client = redis.Redis.from_url(url)
    if client.dbsize():
        raise SystemExit("the Redis database already holds keys; use an empty one")
    started = time.perf_counter()
    with RedisSaver.from_conn_string(url) as saver:
        saver.setup()
        run_threads(saver, [thread_name(i) for i in range(seeds)], turns)
    _say(f"ran {seeds} thread(s) x {turns} turns through RedisSaver", started)
    started = time.perf_counter()
    seeded: dict[str, list[tuple[str, bytes, Any]]] = {}
    for i in range(seeds):
        name = thread_name(i)
        keys = []
        for pattern in (f"*:{name}:*",):
            for key in client.scan_iter(match=pattern, count=1000):
                kind = client.type(key)
                if kind == b"ReJSON-RL":
                    keys.append((key.decode(), kind, client.execute_command("JSON.GET", key)))
                elif kind == b"zset":
                    keys.append((key.decode(), kind, client.zrange(key, 0, -1, withscores=True)))
                else:
                    keys.append((key.decode(), kind, client.get(key)))
        seeded[name] = keys
    for n in range(seeds, threads):
        source, target = thread_name(n % seeds), thread_name(n)
        pipe = client.pipeline(transaction=False)
        old, new = f":{source}:", f":{target}:"
        for key, kind, value in seeded[source]:
            new_key = key.replace(old, new, 1)
            if kind == b"ReJSON-RL":
                text = value.replace(
                    f'"thread_id":"{source}"'.encode(), f'"thread_id":"{target}"'.encode()
                )
                pipe.execute_command("JSON.SET", new_key, "$", text)
            elif kind == b"zset":
                members = {m.replace(old.encode(), new.encode(), 1): sc for m, sc in value}
                if members:
                    pipe.zadd(new_key, members)
            else:
                pipe.set(new_key, value.replace(old.encode(), new.encode(), 1))
        pipe.execute()
    _say(f"copied keys to {threads - seeds} more thread(s)", started)
    used = client.info("memory").get("used_memory", 0)
    _say(f"{client.dbsize():,} keys, {int(used) / 1e6:,.1f} MB used")
    client.close()


def make_mongodb(url: str, threads: int, turns: int, seeds: int) -> None:
    """Seeds through the real MongoDBSaver; every other thread a copy of a seed's
    documents under its own thread id (database checkpointing_db)."""
    import pymongo
    from langgraph.checkpoint.mongodb import MongoDBSaver

    seeds = min(seeds, threads)
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url)
    db = client["checkpointing_db"]
    if "checkpoints" in db.list_collection_names() and db.checkpoints.find_one():
        raise SystemExit("checkpointing_db already holds checkpoints; use an empty server")
    started = time.perf_counter()
    with MongoDBSaver.from_conn_string(url) as saver:
        run_threads(saver, [thread_name(i) for i in range(seeds)], turns)
    _say(f"ran {seeds} thread(s) x {turns} turns through MongoDBSaver", started)
    started = time.perf_counter()
    for name in ("checkpoints", "checkpoint_writes"):
        collection = db[name]
        seeded: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for doc in collection.find({"thread_id": {"$in": [thread_name(i) for i in range(seeds)]}}):
            doc.pop("_id", None)
            seeded[doc["thread_id"]].append(doc)
        batch: list[dict[str, Any]] = []
        for n in range(seeds, threads):
            for doc in seeded[thread_name(n % seeds)]:
                batch.append({**doc, "thread_id": thread_name(n)})
            if len(batch) >= 5000:
                collection.insert_many(batch, ordered=False)
                batch = []
        if batch:
            collection.insert_many(batch, ordered=False)
    _say(f"copied documents to {threads - seeds} more thread(s)", started)
    client.close()


# --------------------------------------------------------------------------------------
# `langgraph dev` folder (.langgraph_api/.langgraph_checkpoint.{1,2,3}.pckl)
# --------------------------------------------------------------------------------------


def make_dev_folder(project: Path, checkpoints: int, turns: int, seeds: int) -> None:
    folder = project / ".langgraph_api"
    if folder.exists():
        raise SystemExit(f"{folder} exists; remove it first")
    per_thread = turns * CHECKPOINTS_PER_TURN
    threads = max(1, checkpoints // per_thread)
    seeds = min(seeds, threads)
    with DevServerSaver(folder) as saver:
        started = time.perf_counter()
        run_threads(saver, [thread_name(i) for i in range(seeds)], turns)
        _say(f"ran {seeds} thread(s) x {turns} turns through the dev-server saver", started)
        started = time.perf_counter()
        _copy_memory_threads(saver, seeds, threads)
        count = sum(len(cps) for ns in saver.storage.values() for cps in ns.values())
        _say(f"copied entries to {threads - seeds} more thread(s): {count:,} checkpoints", started)
        started = time.perf_counter()
    _say("pickled (protocol 2, as PersistentDict does)", started)


def _fresh(value: bytes) -> bytes:
    # A new bytes object: pickle memoizes by identity, and a real file holds no
    # references shared between threads.
    return bytes(bytearray(value))


def _copy_memory_threads(saver: InMemorySaver, seeds: int, threads: int) -> None:
    serde = saver.serde
    writes_by_thread: dict[str, list[Any]] = defaultdict(list)
    for key, value in saver.writes.items():
        writes_by_thread[key[0]].append((key, value))
    blobs_by_thread: dict[str, list[Any]] = defaultdict(list)
    for key, value in saver.blobs.items():
        blobs_by_thread[key[0]].append((key, value))
    for i in range(seeds, threads):
        source, target = thread_name(i % seeds), thread_name(i)
        namespaces = defaultdict(dict)
        for ns, stored in saver.storage[source].items():
            for checkpoint_id, (checkpoint, metadata, parent) in stored.items():
                values = serde.loads_typed(metadata)
                values["thread_id"] = target  # the server's metadata names the thread
                values.update(_metadata(target))
                namespaces[ns][checkpoint_id] = (
                    (checkpoint[0], _fresh(checkpoint[1])),
                    serde.dumps_typed(values),
                    parent,
                )
        saver.storage[target] = namespaces
        for (_, ns, checkpoint_id), task_writes in writes_by_thread[source]:
            saver.writes[(target, ns, checkpoint_id)] = {
                key: (task_id, channel, (tag, _fresh(data)), path)
                for key, (task_id, channel, (tag, data), path) in task_writes.items()
            }
        for (_, ns, channel, version), (tag, data) in blobs_by_thread[source]:
            saver.blobs[(target, ns, channel, version)] = (tag, _fresh(data))


# --------------------------------------------------------------------------------------


def _say(message: str, started: float | None = None) -> None:
    suffix = f" in {time.perf_counter() - started:.1f}s" if started is not None else ""
    print(f"{message}{suffix}", file=sys.stderr)


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="SQLite file to write")
    parser.add_argument("--postgres", metavar="DSN", help="write into this (empty) database")
    parser.add_argument("--dev-folder", type=Path, metavar="DIR", help="write DIR/.langgraph_api")
    parser.add_argument("--redis", metavar="URL", help="write into this (empty) Redis database")
    parser.add_argument("--mongodb", metavar="URL", help="write into this MongoDB server")
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument(
        "--turns",
        type=int,
        help=f"user turns per thread ({CHECKPOINTS_PER_TURN} checkpoints each); "
        "default 25 for SQLite, 20 (100 checkpoints) for --postgres and --dev-folder",
    )
    parser.add_argument("--checkpoints", type=int, default=100_000, help="for --dev-folder")
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="SQLite: write the rows in the order a live application does (the threads' "
        "checkpoints interleaved), not thread by thread",
    )
    parser.add_argument(
        "--seed-threads",
        type=int,
        default=20,
        help="threads run through the real graph; the others copy their rows",
    )
    args = parser.parse_args(argv)
    targets = (args.out, args.postgres, args.dev_folder, args.redis, args.mongodb)
    if sum(x is not None for x in targets) != 1:
        parser.error("give exactly one of OUT, --postgres, --dev-folder, --redis, --mongodb")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    started = time.perf_counter()
    if args.out is not None:
        if args.mixed:
            staged = args.out.with_name(args.out.name + ".staged")
            make_sqlite(staged, args.threads, args.turns or 25, args.seed_threads)
            interleave(staged, args.out)
            staged.unlink()
        else:
            make_sqlite(args.out, args.threads, args.turns or 25, args.seed_threads)
        _say(f"{args.out}: {_size(args.out) / 1e6:,.1f} MB", None)
    elif args.postgres is not None:
        make_postgres(args.postgres, args.threads, args.turns or 20, args.seed_threads)
    elif args.redis is not None:
        make_redis(args.redis, args.threads, args.turns or 4, args.seed_threads)
    elif args.mongodb is not None:
        make_mongodb(args.mongodb, args.threads, args.turns or 4, args.seed_threads)
    else:
        make_dev_folder(args.dev_folder, args.checkpoints, args.turns or 20, args.seed_threads)
        folder = args.dev_folder / ".langgraph_api"
        _say(f"{folder}: {_size(folder) / 1e6:,.1f} MB", None)
    _say("total", started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
