"""Turn a decoded checkpoint body, metadata and writes into model records; shared by all stores."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ckpt.decoders import (
    ABSENT,
    MARK_KEY,
    decode,
    decode_json_text,
    is_marked,
    peek_checkpoint,
    undecodable_record,
)
from ckpt.decoders.skeleton import BODY_KEYS
from ckpt.errors import DecodeError
from ckpt.records.model import (
    NOT_LOADED,
    TASKS,
    BlobRef,
    Checkpoint,
    CheckpointKey,
    NotLoaded,
    PendingWrite,
)
from ckpt.records.vocabulary import TOO_LARGE

# Body keys we lift into Checkpoint fields; anything else goes to `extra` (format.md §3.1).
_KNOWN_BODY_KEYS = BODY_KEYS


def decode_value(
    tag: str | None, payload: bytes | None, aes_key: bytes | None, *, legacy_untyped: bool = False
) -> Any:
    """Decode one stored value; untyped legacy rows are JSON, or a pickle we never load."""
    if tag == "null" and (payload is None or type(payload) is bytes):
        return None  # most writes of a dump (`decode` says the same)
    if tag is None and legacy_untyped:
        # langgraph 0.1.x stored untyped JSON, or a pickle when the bytes look like one
        # (JsonPlusSerializerCompat, format.md §4.1).
        data = payload or b""
        tag = "pickle" if data.startswith(b"\x80") and data.endswith(b".") else "json"
    if tag is None and not payload:
        return None
    try:
        return decode(tag, payload, aes_key=aes_key)
    except DecodeError as exc:
        return undecodable_record(payload, str(exc), tag=tag)


def too_large_record(size: int) -> dict[str, Any]:
    """What a store shows for a value it did not fetch as too large (docs/json.md)."""
    return {MARK_KEY: "too_large", "size": size}


def decode_metadata(payload: bytes) -> dict[str, Any]:
    """SQLite metadata is UTF-8 JSON (with lc envelopes in stores before 2.0.12, format.md §3.2).
    A value the store left unread as too large is a `too_large` record with its size."""
    if not payload:
        return {}
    if payload.startswith(TOO_LARGE):
        return too_large_record(int(payload[len(TOO_LARGE) :]))
    try:
        metadata = decode_json_text(payload)
    except DecodeError:
        return undecodable_record(payload, "metadata is not JSON")
    return metadata if isinstance(metadata, dict) else {"value": metadata}


def sort_writes(writes: Iterable[PendingWrite]) -> list[PendingWrite]:
    """LangGraph's own order: writes_sort_key = (task_path, task_id, idx) (format.md §3.7)."""
    listed = list(writes)
    if len(listed) < 2:
        return listed  # most checkpoints of a dump: nothing to sort
    listed.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
    return listed


def checkpoint_from_body(
    key: CheckpointKey,
    parent_checkpoint_id: str | None,
    tag: str | None,
    body: bytes,
    metadata: dict[str, Any],
    *,
    writes: list[PendingWrite] | None,
    values: bool,
    aes_key: bytes | None,
    size: int,
    tolerant: bool,
    keeps_order: bool = False,
) -> Checkpoint:
    """Decode a serde-typed checkpoint body (SQLite, memory) into a Checkpoint record.

    With `values=False` the body is decoded shallowly: messages and models are skipped,
    which is what makes listing threads fast; Sends are still decoded for `next`.
    `tolerant` turns a damaged body into a marked checkpoint instead of an error.
    """
    if body.startswith(TOO_LARGE):
        # Not fetched (ckpt.stores.sqlite.store.BODY_LIMIT): a marked body, kept visible.
        size = int(body[len(TOO_LARGE) :])
        return checkpoint_from_dict(
            key,
            parent_checkpoint_id,
            too_large_record(size),
            metadata,
            writes=writes,
            values=values,
            size=size,
            keeps_order=keeps_order,
        )
    untyped = tag is None
    if untyped:
        tag = "pickle" if body.startswith(b"\x80") and body.endswith(b".") else "json"
    peeked = None if values else peek_checkpoint(tag, body)
    try:
        decoded = (
            peeked if peeked is not None else decode(tag, body, aes_key=aes_key, shallow=not values)
        )
    except DecodeError as exc:
        if not tolerant:
            raise DecodeError(
                f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r}: {exc}"
            ) from None
        decoded = undecodable_record(body, str(exc), tag=tag)
    if not tolerant and not _is_body(decoded):
        # Bytes that decode, but not to a checkpoint: a damaged page (SQLite fills a
        # truncated page with zeros), not a value to show as if it were fine.
        raise DecodeError(
            f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r}: the stored body "
            "is not a checkpoint (corrupt?)"
        )
    if not tolerant and is_marked(metadata, "undecodable"):
        raise DecodeError(
            f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r}: "
            "its metadata is not JSON (corrupt?)"
        )
    return checkpoint_from_dict(
        key,
        parent_checkpoint_id,
        decoded,
        metadata,
        writes=writes,
        values=values,
        size=size,
        keeps_order=keeps_order,
        js_if_int_versions=tag == "json",
    )


def checkpoint_from_dict(
    key: CheckpointKey,
    parent_checkpoint_id: str | None,
    decoded: Any,
    metadata: dict[str, Any],
    *,
    writes: list[PendingWrite] | None,
    values: bool,
    size: int,
    channel_values: dict[str, Any] | None = None,
    blobs: dict[str, BlobRef] | None = None,
    keeps_order: bool = False,
    js_if_int_versions: bool = False,
    values_kept: bool = True,
) -> Checkpoint:
    """Build a Checkpoint, once, from an already decoded body dict (SQLite and memory
    bodies, Postgres JSONB), with `channel_values` from the store when it keeps them apart.

    `keeps_order`: the body keeps LangGraph's channel order (SQLite). `js_if_int_versions`:
    in this store plain integer versions mean LangGraph.js wrote it (format.md §3.4, 11).
    `values_kept`: False for a store that keeps no channel values (format.md §7.2).
    """
    thread_id, checkpoint_ns, checkpoint_id = key.thread_id, key.checkpoint_ns, key.checkpoint_id
    if not isinstance(decoded, dict) or is_marked(decoded):
        # Encrypted without a key, undecodable, or not a checkpoint at all: keep it visible.
        return Checkpoint(
            thread_id,
            checkpoint_ns,
            checkpoint_id,
            parent_checkpoint_id,
            metadata,
            pending_writes=writes,
            size=size,
            blobs=blobs,
            unread_body=decoded,
            channel_values=NOT_LOADED if values_kept else None,
        )
    v = decoded.get("v")
    ts = decoded.get("ts")
    versions = _as_dict(decoded.get("channel_versions"))
    updated = decoded.get("updated_channels")
    body_values = _as_dict(
        channel_values if channel_values is not None else decoded.get("channel_values")
    )
    pending_sends: list[Any] = []
    unread: dict[str, Any] = {}
    barriers: dict[str, Any] = {}
    sends = decoded.get("pending_sends")
    if isinstance(sends, list) and sends:
        pending_sends = sends
    else:
        tasks = body_values.get(TASKS)
        if isinstance(tasks, list):
            pending_sends = tasks
        elif is_marked(tasks):
            unread[TASKS] = tasks
    # Barrier channels (`join:...`), found by one search over the names first: most
    # graphs have none, and a listing builds one checkpoint per thread.
    if "join:" in "\n".join(body_values):
        for k, value in body_values.items():
            if k.startswith("join:") and value is not ABSENT:
                if is_marked(value):
                    unread[k] = value
                else:
                    barriers[k] = value
    loaded: dict[str, Any] | NotLoaded | None = None
    value_channels: tuple[str, ...] | None = None
    if values_kept:
        # A listing builds one checkpoint per thread, a dump one per row: the plain case
        # (no channel written empty) in C.
        kept = body_values
        if ABSENT in body_values.values():
            kept = {k: value for k, value in body_values.items() if value is not ABSENT}
        value_channels = tuple(kept)
        if not values:
            loaded = NOT_LOADED
        else:
            loaded = kept if kept is not body_values else dict(body_values)
    js = js_if_int_versions and bool(versions) and all(type(x) is int for x in versions.values())
    # Keywords, not a dict of the common ones: a listing builds one per thread (~30% less).
    return Checkpoint(
        thread_id=thread_id,
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent_checkpoint_id,
        metadata=metadata,
        pending_writes=writes,
        size=size,
        blobs=blobs,
        v=v if isinstance(v, int) else None,
        ts=ts if isinstance(ts, str) else None,
        channel_versions=versions,
        versions_seen=_as_dict(decoded.get("versions_seen")),
        updated_channels=list(updated) if isinstance(updated, list) else None,
        channel_values=loaded,
        value_channels=value_channels,
        keeps_order=keeps_order,
        writer="js" if js else "python",
        barriers=barriers,
        unread_values=unread,
        pending_sends=pending_sends,
        extra=(
            {}
            if decoded.keys() <= _KNOWN_BODY_KEYS
            else {k: value for k, value in decoded.items() if k not in _KNOWN_BODY_KEYS}
        ),
    )


def _is_body(decoded: Any) -> bool:
    """A checkpoint body, or one we may not read: encrypted, a pickle we never load, or the
    output of a custom serializer we do not know."""
    if type(decoded) is dict and MARK_KEY not in decoded:
        return "channel_versions" in decoded  # a plain body (the common case)
    if any(is_marked(decoded, kind) for kind in ("encrypted", "pickle", "opaque")):
        return True
    return isinstance(decoded, dict) and not is_marked(decoded) and "channel_versions" in decoded


def _as_dict(value: Any) -> dict[str, Any]:
    if type(value) is dict and MARK_KEY not in value:
        return value  # the common case, without is_marked's call
    return value if isinstance(value, dict) and not is_marked(value) else {}
