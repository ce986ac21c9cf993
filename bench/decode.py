"""Decode throughput: ckpt's safe decoder against LangGraph's own loads_typed, on the same blobs.

usage: python bench/decode.py [STORE.sqlite] [--checkpoints N] [--max-messages M] [--rounds R]

Without a store, builds a chat history the way a real SqliteSaver would: N checkpoint
bodies (serialized with LangGraph's own JsonPlusSerializer) holding a message list that
grows to M messages (Human, AI with tool calls and usage, Tool), plus each step's pending
writes. With a store path, reads every blob of its `checkpoints` and `writes` tables.
Prints MB/s for ckpt (full and shallow) and for LangGraph, and the ratio.
"""

from __future__ import annotations

import argparse
import logging
import random
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402

from ckpt.decoders import decode  # noqa: E402

WORDS = (
    "the a checkpoint graph node state message tool call result value channel thread "
    "version write task agent search weather order invoice customer refund policy"
).split()


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def turn(rng: random.Random, index: int) -> list[BaseMessage]:
    """One exchange: a question, an AI tool call, the tool result, and the AI answer."""
    call_id = f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}"
    usage = {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(5, 900)}
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    metadata = {
        "model_name": "gpt-4o-2024-08-06",
        "finish_reason": "tool_calls",
        "system_fingerprint": f"fp_{rng.getrandbits(40):x}",
        "token_usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": 12},
    }
    return [
        HumanMessage(content=sentence(rng, 5, 60), id=str(uuid.UUID(int=rng.getrandbits(128)))),
        AIMessage(
            content="",
            id=f"run-{uuid.UUID(int=rng.getrandbits(128))}-0",
            tool_calls=[
                {
                    "name": rng.choice(["search", "lookup_order", "get_weather"]),
                    "args": {"query": sentence(rng, 2, 8), "limit": rng.randint(1, 20)},
                    "id": call_id,
                    "type": "tool_call",
                }
            ],
            usage_metadata=usage,  # type: ignore[arg-type]
            response_metadata=metadata,
        ),
        ToolMessage(
            content=sentence(rng, 20, 150),
            tool_call_id=call_id,
            name="search",
            id=str(uuid.UUID(int=rng.getrandbits(128))),
        ),
        AIMessage(
            content=sentence(rng, 10, 120),
            id=f"run-{uuid.UUID(int=rng.getrandbits(128))}-0",
            usage_metadata=usage,  # type: ignore[arg-type]
            response_metadata={**metadata, "finish_reason": "stop"},
        ),
    ]


def build_blobs(checkpoints: int, max_messages: int) -> list[tuple[str, bytes]]:
    """Checkpoint bodies and pending writes of one growing chat thread."""
    serde = JsonPlusSerializer()
    rng = random.Random(42)
    messages: list[BaseMessage] = []
    per_checkpoint = max(1, max_messages // checkpoints)
    blobs: list[tuple[str, bytes]] = []
    for step in range(checkpoints):
        new: list[BaseMessage] = []
        while len(new) < per_checkpoint:
            new.extend(turn(rng, len(messages) + len(new)))
        new = new[:per_checkpoint]
        messages = messages + new
        version = f"{step + 2:032}.{rng.random():016}"
        body = {
            "v": 4,
            "ts": "2026-11-30T04:01:43.242185+00:00",
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "channel_values": {
                "messages": messages,
                "remaining_steps": 25,
                "branch:to:agent": None,
                "__pregel_tasks": [],
            },
            "channel_versions": {"messages": version, "branch:to:agent": version},
            "versions_seen": {"agent": {"branch:to:agent": version}, "__input__": {}},
            "updated_channels": ["messages"],
        }
        blobs.append(serde.dumps_typed(body))
        blobs.append(serde.dumps_typed(new))  # the step's write to the messages channel
        blobs.append(serde.dumps_typed(None))
    return blobs


def read_blobs(path: Path) -> list[tuple[str, bytes]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT type, checkpoint FROM checkpoints UNION ALL SELECT type, value FROM writes"
        )
        return [(tag, payload) for tag, payload in rows if tag and payload is not None]


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"


def best_seconds(work: Callable[[], None], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", type=Path, help="a SQLite checkpoint store")
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--max-messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # LangGraph logs each class outside its allowlist once

    if args.store:
        blobs = read_blobs(args.store)
        source = str(args.store)
    else:
        started = time.perf_counter()
        blobs = build_blobs(args.checkpoints, args.max_messages)
        source = (
            f"{args.checkpoints} checkpoints of a chat growing to {args.max_messages} messages, "
            f"built in {time.perf_counter() - started:.1f} s"
        )
    blobs = [(tag, payload) for tag, payload in blobs if tag not in ("empty",)]
    total = sum(len(payload) for _, payload in blobs)
    biggest = max(blobs, key=lambda blob: len(blob[1]))
    serde = JsonPlusSerializer()

    # One value at a time, like `ckpt dump` streams checkpoints with flat memory.
    def run_ckpt() -> None:
        for tag, payload in blobs:
            decode(tag, payload)

    def run_shallow() -> None:
        for tag, payload in blobs:
            decode(tag, payload, shallow=True)

    def run_langgraph() -> None:
        for tag, payload in blobs:
            serde.loads_typed((tag, payload))

    print(f"blobs: {len(blobs)}, {size_text(total)} ({source})")
    results = {}
    for name, work in (
        ("ckpt", run_ckpt),
        ("ckpt shallow", run_shallow),
        ("langgraph", run_langgraph),
    ):
        seconds = best_seconds(work, args.rounds)
        results[name] = seconds
        print(f"{name:>13}: {total / seconds / 1e6:8.1f} MB/s  ({seconds:.2f} s)")
    print(f"{'ratio':>13}: ckpt is {results['langgraph'] / results['ckpt']:.2f}x LangGraph")
    print(f"{'':>13}  shallow is {results['ckpt'] / results['ckpt shallow']:.1f}x full ckpt")

    tag, payload = biggest
    single = {
        "ckpt": best_seconds(lambda: decode(tag, payload) and None, 5),
        "ckpt shallow": best_seconds(lambda: decode(tag, payload, shallow=True) and None, 5),
        "langgraph": best_seconds(lambda: serde.loads_typed((tag, payload)) and None, 5),
    }
    timings = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in single.items())
    print(f"largest blob ({size_text(len(payload))}): {timings}")


if __name__ == "__main__":
    main()
