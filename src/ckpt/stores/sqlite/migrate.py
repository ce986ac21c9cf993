"""A SqliteSaver thread read into the migration form (ckpt.records.migration) and written
back from it, inside the writer's transaction (`ckpt migrate`).

A body is a msgpack map (format.md §3.1): its fields are cut out by byte span
(ckpt.stores.transfer), only the ones that hold names are decoded, and every channel value
stays the bytes it is. Written back, the body is packed field by field in the stored order,
so an unchanged checkpoint is the same bytes, and metadata is `json.dumps(...,
ensure_ascii=False)` as SqliteSaver writes it.

LangGraph.js's SqliteSaver stores a body tagged `json` (format.md §11): a JSON object whose
`channel_values` hold each value as JSON, and writes tagged `json`, with no `task_path`
column. Such a body is read as JSON, each value kept as ("json", its compact JSON), and
written back as `JSON.stringify` writes it (ckpt.records.migration.json_bytes), metadata
too; an unchanged checkpoint is not written.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Final

import ormsgpack

from ckpt.errors import CopyRefused
from ckpt.records.migration import (
    MigCheckpoint,
    MigrationRows,
    MigWrite,
    Packed,
    changed_groups,
    json_bytes,
)
from ckpt.stores.transfer import _map_entries, _pack_map

# Body fields that hold names: decoded to plain data (the rest stay Packed).
NAMED_FIELDS: Final = frozenset({"channel_versions", "versions_seen", "updated_channels"})


def read_rows(
    conn: sqlite3.Connection, thread_id: str, *, task_path: bool, latest: bool = False
) -> MigrationRows:
    """Every row of the thread, on `conn` (the reader's, or the writer's transaction);
    `latest`: only each namespace's newest checkpoint and its writes."""
    newest = (
        " AND c.checkpoint_id = (SELECT max(n.checkpoint_id) FROM checkpoints n "
        "WHERE n.thread_id = c.thread_id AND n.checkpoint_ns = c.checkpoint_ns)"
        if latest
        else ""
    )
    checkpoints = [
        parse_checkpoint(ns, cid, parent, tag, _bytes(body), _bytes(meta))
        for ns, cid, parent, tag, body, meta in conn.execute(
            "SELECT c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.type, "
            f"c.checkpoint, c.metadata FROM checkpoints c WHERE c.thread_id = ?{newest} "
            "ORDER BY c.checkpoint_ns, c.checkpoint_id",
            (thread_id,),
        )
    ]
    path = "w.task_path" if task_path else "''"
    only = (
        " AND w.checkpoint_id = (SELECT max(n.checkpoint_id) FROM checkpoints n "
        "WHERE n.thread_id = w.thread_id AND n.checkpoint_ns = w.checkpoint_ns)"
        if latest
        else ""
    )
    writes = [
        MigWrite(
            ns, cid, task, tp or "", idx, channel, tag, _bytes(value) if value is not None else None
        )
        for ns, cid, task, tp, idx, channel, tag, value in conn.execute(
            f"SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, {path}, w.idx, w.channel, "
            f"w.type, w.value FROM writes w WHERE w.thread_id = ?{only} "
            "ORDER BY w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx",
            (thread_id,),
        )
    ]
    return MigrationRows(thread_id, checkpoints, writes)


def _bytes(value: bytes | str | None) -> bytes:
    """A BLOB column as bytes; TEXT (a row another program wrote) as its UTF-8."""
    if isinstance(value, str):
        return value.encode()
    return bytes(value or b"")


def parse_checkpoint(
    ns: str, cid: str, parent: str | None, tag: str | None, body: bytes, metadata: bytes
) -> MigCheckpoint:
    where = f"checkpoint {cid}"
    if tag == "json":
        return _parse_json_checkpoint(ns, cid, parent, body, _metadata(metadata, where))
    if tag != "msgpack":
        raise CopyRefused(
            f"{where}: its body is stored as {tag!r}; migrate rewrites msgpack bodies "
            "(an encrypted store is not migrated yet)"
        )
    fields: dict[str, Any] = {}
    for key, packed in _map_entries(body, where):
        if key == "channel_values":
            fields[key] = {
                channel: ("msgpack", value)
                for channel, value in _map_entries(packed, f"{where}'s channel_values")
            }
        elif key in NAMED_FIELDS:
            fields[key] = ormsgpack.unpackb(packed)
        else:
            fields[key] = Packed(packed)
    return MigCheckpoint(ns, cid, parent, fields, _metadata(metadata, where))


def _metadata(metadata: bytes, where: str) -> dict[str, Any]:
    try:
        meta = json.loads(metadata) if metadata else {}
    except ValueError:
        raise CopyRefused(f"{where}: its metadata is not JSON") from None
    if not isinstance(meta, dict):
        raise CopyRefused(f"{where}: its metadata is not a JSON object")
    return meta


def _parse_json_checkpoint(
    ns: str, cid: str, parent: str | None, body: bytes, metadata: dict[str, Any]
) -> MigCheckpoint:
    """A LangGraph.js body: every field plain JSON, each channel value ("json", bytes)."""
    where = f"checkpoint {cid}"
    try:
        document = json.loads(body)
    except ValueError:
        raise CopyRefused(f"{where}: its body is tagged 'json' but is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("channel_values", {}), dict):
        raise CopyRefused(f"{where}: its JSON body is not a checkpoint object")
    fields = {
        key: (
            {channel: ("json", json_bytes(v)) for channel, v in value.items()}
            if key == "channel_values"
            else value
        )
        for key, value in document.items()
    }
    return MigCheckpoint(ns, cid, parent, fields, metadata, serde="json")


def _channel_data(
    checkpoint: MigCheckpoint, channel_values: dict[str, Any], tag: str, refusal: str
) -> list[tuple[str, bytes]]:
    """Each channel's stored bytes, for a body that holds only values tagged `tag`; a value
    tagged otherwise (or none) is refused, `refusal` saying what body it would land in."""
    inner: list[tuple[str, bytes]] = []
    for channel, (stored_tag, data) in channel_values.items():
        if stored_tag != tag or data is None:
            raise CopyRefused(
                f"checkpoint {checkpoint.checkpoint_id}: channel {channel!r} would be "
                f"stored as {stored_tag!r}{refusal}"
            )
        inner.append((channel, data))
    return inner


def _json_body_bytes(checkpoint: MigCheckpoint) -> bytes:
    """A LangGraph.js body written back, field by field in the stored order."""
    entries: list[bytes] = []
    for key, value in checkpoint.fields.items():
        if key != "channel_values":
            entries.append(json_bytes(key) + b":" + json_bytes(value))
            continue
        inner = [
            json_bytes(channel) + b":" + data
            for channel, data in _channel_data(
                checkpoint, value, "json", " in a LangGraph.js (JSON) body"
            )
        ]
        entries.append(json_bytes(key) + b":{" + b",".join(inner) + b"}")
    return b"{" + b",".join(entries) + b"}"


def body_bytes(checkpoint: MigCheckpoint) -> bytes:
    if checkpoint.serde == "json":
        return _json_body_bytes(checkpoint)
    entries: list[tuple[str, bytes]] = []
    for key, value in checkpoint.fields.items():
        if key == "channel_values":
            inner = _channel_data(
                checkpoint, value, "msgpack", ", which a SQLite body does not hold"
            )
            entries.append((key, _pack_map(inner)))
        elif isinstance(value, Packed):
            entries.append((key, value.data))
        else:
            entries.append((key, ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)))
    return _pack_map(entries)


def metadata_bytes(checkpoint: MigCheckpoint) -> bytes:
    if checkpoint.serde == "json":
        return json_bytes(checkpoint.metadata)
    return json.dumps(checkpoint.metadata, ensure_ascii=False).encode("utf-8", "ignore")


def write_rows(
    conn: sqlite3.Connection, before: MigrationRows, after: MigrationRows, *, task_path: bool
) -> None:
    """Write `after` over `before` (the same thread, inside the caller's transaction):
    the checkpoints that changed, and the thread's writes when any changed."""
    thread_id = after.thread_id
    old = {(c.checkpoint_ns, c.checkpoint_id): c for c in before.checkpoints}
    if {(c.checkpoint_ns, c.checkpoint_id) for c in after.checkpoints} != old.keys():
        raise CopyRefused(f"thread {thread_id!r}: a migration never adds or removes a checkpoint")
    for checkpoint in after.checkpoints:
        was = old[(checkpoint.checkpoint_ns, checkpoint.checkpoint_id)]
        if was.fields == checkpoint.fields and was.metadata == checkpoint.metadata:
            continue
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ?, metadata = ? WHERE thread_id = ? "
            "AND checkpoint_ns = ? AND checkpoint_id = ?",
            (body_bytes(checkpoint), metadata_bytes(checkpoint), thread_id,
             checkpoint.checkpoint_ns, checkpoint.checkpoint_id),
        )  # fmt: skip
    changed = changed_groups(before.writes, after.writes)
    columns = "task_id, idx, channel, type, value" + (", task_path" if task_path else "")
    marks = ", ".join("?" * (8 + task_path))
    for (ns, cid), writes in changed.items():
        conn.execute(
            "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (thread_id, ns, cid),
        )
        conn.executemany(
            f"INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, {columns}) "
            f"VALUES ({marks})",
            [
                (thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel,
                 w.type, w.data, *((w.task_path,) if task_path else ()))
                for w in writes
            ],
        )  # fmt: skip
