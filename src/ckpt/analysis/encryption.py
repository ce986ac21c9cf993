"""The encryption policy: a wrong key is an error (exit 6) everywhere, values hidden without
a key are an error too once what is readable is given (ckpt.api decides whether to raise
it or keep it), and `--channel` narrowing (which must not hide what encryption hides)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from ckpt.decoders import MARK_KEY, decode, is_marked, key_from_env_or_arg
from ckpt.errors import BadOption, EncryptedError, NotFound
from ckpt.records.model import Checkpoint, ThreadSummary
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
        raise EncryptedError("the checkpoint is encrypted: pass `aes_key` or set LANGGRAPH_AES_KEY")
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
    (format.md §2.7), so this stays cheap on every checkpoint of a dump.
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
            f"{store.location}: the key does not decrypt this store: wrong `aes_key` / "
            "LANGGRAPH_AES_KEY"
        )


def opened_with_key(aes_key: str | bytes | None, opener: Callable[[bytes | None], Store]) -> Store:
    """The store `opener` opens with the EncryptedSerializer key given (else
    $LANGGRAPH_AES_KEY), the key checked on one encrypted value (verify_key); a key that
    is not one is BadOption."""
    if isinstance(aes_key, bytes):
        aes_key = aes_key.decode("utf-8")
    try:
        key = key_from_env_or_arg(aes_key)
    except EncryptedError as exc:
        raise BadOption(exc.message) from None
    store = opener(key)
    try:
        verify_key(store)
    except BaseException:
        store.close()
        raise
    return store


def hides_thread(thread: ThreadSummary) -> bool:
    """Whether a thread's newest checkpoint stayed encrypted."""
    return thread.latest is not None and hides_values(thread.latest)


def encrypted_threads_notice(hidden: int, total: int, *, has_key: bool) -> list[str]:
    """A notice when newest checkpoints hold encrypted values; an error when a key was
    wrong (every store keeps some parts in clear text, format.md §2.7: a wrong key shows
    only where an encrypted part is read). From counts: a streamed listing keeps no list."""
    if not hidden:
        return []
    if has_key:
        raise EncryptedError(
            f"{hidden} thread(s) did not decrypt: wrong `aes_key` / LANGGRAPH_AES_KEY"
        )
    return [
        f"{hidden} of {total} threads hold encrypted values: status and next "
        "shown as unknown where they need `aes_key` or LANGGRAPH_AES_KEY"
    ]


def bodies_error(checkpoints: Iterable[Checkpoint], *, has_key: bool) -> EncryptedError | None:
    """A thread's versions: the error when checkpoints stayed encrypted."""
    return _hidden_error(
        sum(1 for c in checkpoints if hides_values(c)), has_key=has_key, bodies=True
    )


def _hidden_error(hidden: int, *, has_key: bool, bodies: bool) -> EncryptedError | None:
    """The error when `hidden` checkpoints stayed encrypted; `bodies`: their bodies too (so
    versions are missing as well as values)."""
    if not hidden:
        return None
    if has_key:
        return EncryptedError(
            f"{hidden} checkpoint(s) did not decrypt: wrong `aes_key` / LANGGRAPH_AES_KEY"
        )
    if bodies:
        return EncryptedError(
            f"{hidden} checkpoint(s) are encrypted: versions and values need `aes_key` or "
            "LANGGRAPH_AES_KEY"
        )
    return EncryptedError("values are encrypted: pass `aes_key` or set LANGGRAPH_AES_KEY")


def record_hides_values(record: Any) -> bool:
    """A checkpoint record (ckpt.records.types) that shows an encrypted part: its body, a value,
    a write or the Sends (top level only: savers encrypt whole values, format.md §2.7)."""
    if is_marked(record.get("checkpoint"), "encrypted"):
        return True
    values = record.get("channel_values") or {}
    writes = record.get("pending_writes") or []
    sends = record.get("pending_sends") or []
    # is_marked(v, "encrypted") for each, inline: a dump asks this of every record.
    return (
        "encrypted" in [v.get(MARK_KEY) for v in values.values() if type(v) is dict]
        or "encrypted" in [w["value"].get(MARK_KEY) for w in writes if type(w["value"]) is dict]
        or "encrypted" in [s.get(MARK_KEY) for s in sends if type(s) is dict]
        or ("next_unknown" in record and "encrypted" in record["next_unknown"])
    )


def record_error(record: Any, *, has_key: bool) -> EncryptedError | None:
    """One checkpoint record: the error when values were hidden."""
    if not record_hides_values(record):
        return None
    if has_key:
        return EncryptedError("some values did not decrypt: wrong `aes_key` / LANGGRAPH_AES_KEY")
    return EncryptedError("values are encrypted: pass `aes_key` or set LANGGRAPH_AES_KEY")


def watch_hidden(records: Iterable[Any], hidden: list[Any]) -> Iterator[Any]:
    """Pass records through, keeping in `hidden` those `records_error` counts (a streamed
    listing keeps no list of everything)."""
    for record in records:
        if record_hides_values(record) or is_marked(record.get("checkpoint"), "encrypted"):
            hidden.append(record)
        yield record


def records_error(records: list[Any], *, has_key: bool) -> EncryptedError | None:
    """A thread or a dump: the error when some of what they show stayed encrypted."""
    return _hidden_error(
        sum(1 for r in records if record_hides_values(r)),
        has_key=has_key,
        bodies=any(is_marked(r.get("checkpoint"), "encrypted") for r in records),
    )


def stats_error(unmeasured: int) -> EncryptedError | None:
    """`ckpt stats`: bodies counted whole because they stayed encrypted."""
    if not unmeasured:
        return None
    return EncryptedError(
        f"{unmeasured} encrypted checkpoint bodies are counted whole: their split by "
        "channel needs `aes_key` or LANGGRAPH_AES_KEY"
    )


def types_error(hidden: int, *, has_key: bool) -> EncryptedError | None:
    """`ckpt types`: values whose classes stayed hidden."""
    if not hidden:
        return None
    if has_key:
        return EncryptedError(
            f"{hidden} value(s) did not decrypt: wrong `aes_key` / LANGGRAPH_AES_KEY; their "
            "classes are not listed"
        )
    return EncryptedError(
        f"{hidden} encrypted value(s): the classes inside need `aes_key` or LANGGRAPH_AES_KEY"
    )
