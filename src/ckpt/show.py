"""Helpers for `ckpt show`: narrowing to channels, and the encrypted-without-key outcome."""

from __future__ import annotations

from typing import Any

from ckpt.decoders import MARK_KEY
from ckpt.errors import EncryptedError, NotFound
from ckpt.model import Checkpoint, ThreadInfo


def pick_channels(checkpoint: Checkpoint, names: list[str]) -> None:
    """Keep only the named channels' values and writes; an unknown channel is an error."""
    values = checkpoint.channel_values or {}
    writes = checkpoint.pending_writes
    known = set(values) | set(checkpoint.channel_versions) | {w.channel for w in writes or []}
    missing = [n for n in names if n not in known]
    if missing and has_encrypted(checkpoint.extra.get("body")):
        # Channel names live in the encrypted body: unknown is not the same as absent.
        raise EncryptedError("the checkpoint is encrypted: pass --aes-key or set LANGGRAPH_AES_KEY")
    if missing:
        raise NotFound(
            f"no channel {', '.join(map(repr, missing))} in checkpoint {checkpoint.checkpoint_id} "
            f"(channels: {', '.join(sorted(known)) or 'none'})"
        )
    if checkpoint.channel_values is not None:
        checkpoint.channel_values = {n: values[n] for n in names if n in values}
    if writes is not None:
        checkpoint.pending_writes = [w for w in writes if w.channel in names]


def has_encrypted(value: Any) -> bool:
    """Whether any part of a decoded value is an `encrypted` marked record."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get(MARK_KEY) == "encrypted":
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def require_key_if_encrypted(checkpoint: Checkpoint, *, has_key: bool) -> None:
    """After printing what is readable: fail with the encrypted exit code if values were hidden."""
    parts = [checkpoint.extra.get("body"), checkpoint.channel_values]
    parts += [w.value for w in checkpoint.pending_writes or []]
    if has_encrypted(parts):
        if has_key:
            raise EncryptedError("some values did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY")
        raise EncryptedError("values are encrypted: pass --aes-key or set LANGGRAPH_AES_KEY")


def encrypted_threads(threads: list[ThreadInfo], *, has_key: bool) -> list[str]:
    """A notice when newest checkpoints stayed encrypted; an error when a key was wrong."""
    hidden = [
        t for t in threads if t.latest is not None and has_encrypted(t.latest.extra.get("body"))
    ]
    if not hidden:
        return []
    if has_key:
        raise EncryptedError(
            f"{len(hidden)} thread(s) did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY"
        )
    return [
        f"{len(hidden)} of {len(threads)} threads are encrypted: their status and next need "
        "--aes-key or LANGGRAPH_AES_KEY"
    ]


def require_key_for_bodies(checkpoints: list[Checkpoint], *, has_key: bool) -> None:
    """After printing a thread: exit 6 when checkpoint bodies stayed encrypted."""
    hidden = sum(1 for c in checkpoints if has_encrypted(c.extra.get("body")))
    if not hidden:
        return
    if has_key:
        raise EncryptedError(
            f"{hidden} checkpoint(s) did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY"
        )
    raise EncryptedError(
        f"{hidden} checkpoint(s) are encrypted: versions and values need --aes-key or "
        "LANGGRAPH_AES_KEY"
    )
