"""Speed guards (loose, so CI noise cannot trip them): bench/decode.py measures the real numbers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ckpt.decoders import decode


def best_of(work: Callable[[], Any], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


@pytest.fixture(scope="module")
def chat_checkpoint() -> tuple[str, bytes]:
    """A 5 MB checkpoint body holding 2,000 messages with tool calls, as SqliteSaver stores it."""
    messages: list[Any] = []
    for turn in range(500):
        call = f"call_{turn:08d}"
        text = f"turn {turn}: " + "lorem ipsum dolor sit amet, consectetur adipiscing " * 40
        messages += [
            HumanMessage(content=text, id=f"human-{turn}"),
            AIMessage(
                content="",
                id=f"ai-{turn}",
                tool_calls=[{"name": "search", "args": {"q": text[:40]}, "id": call}],
                usage_metadata={"input_tokens": 900, "output_tokens": 30, "total_tokens": 930},
                response_metadata={"model_name": "gpt-4o", "finish_reason": "tool_calls"},
            ),
            ToolMessage(content=text * 2, tool_call_id=call, id=f"tool-{turn}"),
            AIMessage(content=text, id=f"answer-{turn}"),
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
    assert 4_000_000 < len(payload) < 8_000_000
    return tag, payload


def test_a_5_mb_checkpoint_with_2000_messages_decodes_at_once(
    chat_checkpoint: tuple[str, bytes],
) -> None:
    tag, payload = chat_checkpoint
    decoded = decode(tag, payload)
    assert len(decoded["channel_values"]["messages"]) == 2000
    assert best_of(lambda: decode(tag, payload)) < 0.5


def test_faster_than_langgraph(chat_checkpoint: tuple[str, bytes]) -> None:
    tag, payload = chat_checkpoint
    serde = JsonPlusSerializer()
    ours = best_of(lambda: decode(tag, payload))
    theirs = best_of(lambda: serde.loads_typed((tag, payload)))
    assert ours * 1.3 < theirs, f"ckpt {ours * 1000:.1f} ms, LangGraph {theirs * 1000:.1f} ms"


def test_shallow_is_much_faster(chat_checkpoint: tuple[str, bytes]) -> None:
    tag, payload = chat_checkpoint
    shallow = decode(tag, payload, shallow=True)
    assert {message["__ckpt__"] for message in shallow["channel_values"]["messages"]} == {"skipped"}
    full = best_of(lambda: decode(tag, payload))
    fast = best_of(lambda: decode(tag, payload, shallow=True))
    assert fast * 3 < full, f"shallow {fast * 1000:.1f} ms, full {full * 1000:.1f} ms"
