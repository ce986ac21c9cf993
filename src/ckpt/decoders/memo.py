"""The memos of `shared_exts`: within a dump, a message decoded before is not decoded again.

Every checkpoint of a growing chat repeats the messages of the one before, so a dump meets
each message as many times as the chat has checkpoints after it. Inside `shared_exts`, in
this thread, the msgpack decoder keeps its outermost ext values by their bytes
(ckpt.decoders.msgpack) and the lc JSON decoder its outermost envelopes by their JSON text
(ckpt.decoders.lcjson): a value met again is the object given before, shared and to be
read only. Outside, each call builds its own objects.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

SHARED_ENTRIES: Final = 50_000
SHARED_BYTES: Final = 32 << 20


class Memo:
    """Key bytes -> what the decoder keeps for them, dropped whole past SHARED_ENTRIES
    values or SHARED_BYTES of key bytes."""

    __slots__ = ("values", "size")

    def __init__(self) -> None:
        self.values: dict[bytes, Any] = {}
        self.size = 0

    def keep(self, key: bytes, entry: Any) -> None:
        self.size += len(key)
        if len(self.values) >= SHARED_ENTRIES or self.size > SHARED_BYTES:
            self.values.clear()
            self.size = len(key)
        self.values[key] = entry


class _Here(threading.local):
    # This thread's, within shared_exts: ext bytes -> (code, shallow, value, ext values
    # spent), and an envelope's JSON text -> (value, its "lc" count).
    exts: Memo | None = None
    envelopes: Memo | None = None


here: Final = _Here()


@contextmanager
def shared_exts() -> Iterator[None]:
    """Within it, in this thread, an ext value (a message) whose bytes were decoded before,
    or an lc envelope whose JSON text was, is given back as the same object, not decoded
    again: for a reader that only reads what it decodes (`dump` for the CLI and the MCP
    server) and meets the same messages in checkpoint after checkpoint (every checkpoint
    of a chat repeats its history). Memory stays bounded (Memo)."""
    if here.exts is not None:  # nested: the outer one keeps its memos
        yield
        return
    here.exts, here.envelopes = Memo(), Memo()
    try:
        yield
    finally:
        here.exts = here.envelopes = None
