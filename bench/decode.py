"""Decode throughput: ckpt's safe decoder against LangGraph's own loads_typed, on the same blobs.

usage: python bench/decode.py [STORE.sqlite] [--checkpoints N] [--max-messages M] [--rounds R]
                              [--no-guards]

Without a store, builds a chat history the way a real SqliteSaver would: N checkpoint
bodies (serialized with LangGraph's own JsonPlusSerializer) holding a message list that
grows to M messages (Human, AI with tool calls and usage, Tool), plus each step's pending
writes. With a store path, reads every blob of its `checkpoints` and `writes` tables.
Prints MB/s for ckpt (full and shallow) and for LangGraph, and the ratio.

Then checks the speed guards on one 5 MB checkpoint of 2,000 messages (`make bench-decode`
fails when one does not hold): it decodes in under 0.5 s, ckpt is at least 1.3x faster than
LangGraph, and shallow decoding at least 3x faster than full. They compare wall-clock
times, so they live here and not in the unit suite, where a busy machine would trip them.
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

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ckpt.decoders import decode

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


def guard_checkpoint() -> tuple[str, bytes]:
    """A 5 MB checkpoint body holding 2,000 messages with tool calls, as SqliteSaver stores it."""
    messages: list[BaseMessage] = []
    for index in range(500):
        call = f"call_{index:08d}"
        text = f"turn {index}: " + "lorem ipsum dolor sit amet, consectetur adipiscing " * 40
        messages += [
            HumanMessage(content=text, id=f"human-{index}"),
            AIMessage(
                content="",
                id=f"ai-{index}",
                tool_calls=[{"name": "search", "args": {"q": text[:40]}, "id": call}],
                usage_metadata={"input_tokens": 900, "output_tokens": 30, "total_tokens": 930},
                response_metadata={"model_name": "gpt-4o", "finish_reason": "tool_calls"},
            ),
            ToolMessage(content=text * 2, tool_call_id=call, id=f"tool-{index}"),
            AIMessage(content=text, id=f"answer-{index}"),
        ]
    body = {
        "v": 4,
        "id": "1f1ec72c-0eda-626e-8006-7c0f0edec000",
        "ts": "2026-11-30T04:01:43.242185+00:00",
        "channel_values": {"messages": messages, "__pregel_tasks": []},
        "channel_versions": {"messages": "00000000000000000000000000002000.0.25"},
        "versions_seen": {"__input__": {}},
        "updated_channels": ["messages"],
    }
    tag, payload = JsonPlusSerializer().dumps_typed(body)
    assert 4_000_000 < len(payload) < 8_000_000, len(payload)
    return tag, payload


def check_guards(rounds: int) -> bool:
    """Print each speed guard with its numbers; True when all of them hold."""
    tag, payload = guard_checkpoint()
    serde = JsonPlusSerializer()
    decoded = decode(tag, payload)
    shallow = decode(tag, payload, shallow=True)
    # The guards time real work: first make sure it is the work (every message, all skipped).
    assert len(decoded["channel_values"]["messages"]) == 2000
    assert {m["__ckpt__"] for m in shallow["channel_values"]["messages"]} == {"skipped"}
    full = best_seconds(lambda: decode(tag, payload) and None, rounds)
    fast = best_seconds(lambda: decode(tag, payload, shallow=True) and None, rounds)
    theirs = best_seconds(lambda: serde.loads_typed((tag, payload)) and None, rounds)
    guards = [
        (full < 0.5, f"full decode {full * 1000:.1f} ms (needs < 500 ms)"),
        (
            full * 1.3 < theirs,
            f"LangGraph {theirs * 1000:.1f} ms / ckpt {full * 1000:.1f} ms = "
            f"{theirs / full:.2f}x (needs > 1.3x)",
        ),
        (
            fast * 3 < full,
            f"full {full * 1000:.1f} ms / shallow {fast * 1000:.1f} ms = "
            f"{full / fast:.1f}x (needs > 3x)",
        ),
    ]
    print(f"speed guards ({size_text(len(payload))} checkpoint, 2000 messages):")
    for held, text in guards:
        print(f"  {'ok  ' if held else 'FAIL'} {text}")
    return all(held for held, _ in guards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", type=Path, help="a SQLite checkpoint store")
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--max-messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-guards", action="store_true", help="skip the speed guards")
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
    if not args.no_guards and not check_guards(args.rounds):
        sys.exit(1)


if __name__ == "__main__":
    main()
