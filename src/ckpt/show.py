"""Helpers for `ckpt show`: narrowing to channels, and the encrypted-without-key outcome."""

from __future__ import annotations

from dataclasses import replace

from ckpt.decoders import decode, is_marked
from ckpt.errors import EncryptedError, NotFound
from ckpt.model import Checkpoint, ThreadInfo
from ckpt.stores.base import Store


def pick_channels(checkpoint: Checkpoint, names: list[str]) -> Checkpoint:
    """The checkpoint with only the named channels' values and writes; an unknown channel
    is an error."""
    values = checkpoint.values or {}
    writes = checkpoint.pending_writes
    known = set(values) | set(checkpoint.channel_versions) | {w.channel for w in writes or []}
    missing = [n for n in names if n not in known]
    if missing and body_encrypted(checkpoint):
        # Channel names live in the encrypted body: unknown is not the same as absent.
        raise EncryptedError("the checkpoint is encrypted: pass --aes-key or set LANGGRAPH_AES_KEY")
    if missing:
        raise NotFound(
            f"no channel {', '.join(map(repr, missing))} in checkpoint {checkpoint.checkpoint_id} "
            f"(channels: {', '.join(sorted(known)) or 'none'})"
        )
    return replace(
        checkpoint,
        channel_values=(
            {n: values[n] for n in names if n in values}
            if checkpoint.values is not None
            else checkpoint.channel_values
        ),
        deltas={n: d for n, d in checkpoint.deltas.items() if n in names},
        pending_writes=([w for w in writes if w.channel in names] if writes is not None else None),
    )


def body_encrypted(checkpoint: Checkpoint) -> bool:
    """The checkpoint body itself stayed encrypted (no key, or a wrong one)."""
    return is_marked(checkpoint.unread_body, "encrypted")


def hides_values(checkpoint: Checkpoint) -> bool:
    """Encrypted without (the right) key: the body, or a value or write, is a marked record.

    Only the top level is looked at: savers encrypt whole values, never parts of one
    (FORMAT 2.7), so this stays cheap on every checkpoint of a dump.
    """
    if body_encrypted(checkpoint):
        return True
    if any(is_marked(v, "encrypted") for v in checkpoint.unread_values.values()):
        return True
    values = (checkpoint.values or {}).values()
    writes = (w.value for w in checkpoint.pending_writes or [])
    return any(is_marked(v, "encrypted") for v in values) or any(
        is_marked(v, "encrypted") for v in writes
    )


def verify_key(store: Store) -> None:
    """With a key given, check it on one encrypted value of the store: a wrong key is
    exit 6 on every command, even one whose output holds nothing encrypted."""
    if store.aes_key is None:
        return
    sample = store.encrypted_sample()
    if sample is None:
        return
    value = decode(sample[0], sample[1], aes_key=store.aes_key, shallow=True)
    if is_marked(value, "encrypted"):
        raise EncryptedError(
            f"{store.location}: the key does not decrypt this store: wrong --aes-key / "
            "LANGGRAPH_AES_KEY"
        )


def require_key_if_encrypted(checkpoint: Checkpoint, *, has_key: bool) -> None:
    """After printing what is readable: fail with the encrypted exit code if values were hidden."""
    if hides_values(checkpoint):
        if has_key:
            raise EncryptedError("some values did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY")
        raise EncryptedError("values are encrypted: pass --aes-key or set LANGGRAPH_AES_KEY")


def encrypted_threads(threads: list[ThreadInfo], *, has_key: bool) -> list[str]:
    """A notice when newest checkpoints hold encrypted values; an error when a key was
    wrong (every store keeps some parts in clear text, FORMAT 2.7: a wrong key shows only
    where an encrypted part is read)."""
    hidden = [t for t in threads if t.latest is not None and hides_values(t.latest)]
    if not hidden:
        return []
    if has_key:
        raise EncryptedError(
            f"{len(hidden)} thread(s) did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY"
        )
    return [
        f"{len(hidden)} of {len(threads)} threads hold encrypted values: status and next "
        "shown as unknown where they need --aes-key or LANGGRAPH_AES_KEY"
    ]


def require_key_for_bodies(checkpoints: list[Checkpoint], *, has_key: bool) -> None:
    """After printing a thread: exit 6 when checkpoints stayed encrypted."""
    hidden = sum(1 for c in checkpoints if hides_values(c))
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
