"""A PostgresSaver thread read into the migration form (ckpt.records.migration) and written
back from it, inside the writer's transaction (`ckpt migrate`).

The JSONB body keeps primitives inline and every other value in `checkpoint_blobs`, one
row per (namespace, channel, version) that every checkpoint at that version shares
(format.md §5.2): a renamed channel's blob is written once under the new name, and the
old row goes when no checkpoint names it any more. Inline primitives are carried as
their msgpack bytes, so the steps see one kind of value everywhere.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import ormsgpack

from ckpt.errors import CopyRefused, NotSupported
from ckpt.records.migration import (
    Blob,
    BlobKey,
    MigCheckpoint,
    MigrationRows,
    MigWrite,
    changed_groups,
)

if TYPE_CHECKING:
    from psycopg import Connection

    from ckpt.stores.postgres.writer import PostgresStore


def check(reader: PostgresStore) -> None:
    layout = reader.layout
    if reader.shallow or not layout.has_blobs or not layout.has_writes or not layout.blob_versions:
        raise NotSupported(
            f"{reader.location}: migrate writes PostgresSaver's tables (checkpoints, "
            "checkpoint_blobs with versions, checkpoint_writes); not this layout; nothing changed"
        )


def read_rows(reader: PostgresStore, conn: Connection[Any], thread_id: str) -> MigrationRows:
    """Every row of the thread, on `conn` inside the caller's transaction."""
    sql = reader.layout.sql
    task_path = "w.task_path" if reader.layout.task_path else "''::text"
    with conn.cursor() as cur:
        checkpoints = [
            _checkpoint(ns, cid, parent, document, metadata)
            for ns, cid, parent, document, metadata in cur.execute(
                sql(
                    "SELECT c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, "
                    "c.checkpoint::text, c.metadata::text FROM {cp} c WHERE c.thread_id = %s "
                    "ORDER BY c.checkpoint_ns, c.checkpoint_id"
                ),
                (thread_id,),
            )
        ]
        writes = [
            MigWrite(ns, cid, task, tp or "", idx, channel, tag,
                     bytes(value) if value is not None else None)
            for ns, cid, task, tp, idx, channel, tag, value in cur.execute(
                sql(
                    "SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, "
                    + task_path
                    + ", w.idx, w.channel, w.type, w.blob FROM {wr} w WHERE w.thread_id = %s "
                    "ORDER BY w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx"
                ),
                (thread_id,),
            )
        ]  # fmt: skip
        blobs: dict[BlobKey, Blob] = {
            (ns, channel, version): (tag, bytes(value) if value is not None else None)
            for ns, channel, version, tag, value in cur.execute(
                sql(
                    "SELECT b.checkpoint_ns, b.channel, b.version, b.type, b.blob FROM {bl} b "
                    "WHERE b.thread_id = %s"
                ),
                (thread_id,),
            )
        }
    return MigrationRows(thread_id, checkpoints, writes, blobs, split=True)


def _checkpoint(ns: str, cid: str, parent: str | None, text: str, metadata: str) -> MigCheckpoint:
    document = json.loads(text)
    if not isinstance(document, dict):
        raise CopyRefused(f"checkpoint {cid}: its JSONB is not an object")
    values = document.get("channel_values")
    if isinstance(values, dict):
        document["channel_values"] = {
            channel: ("msgpack", ormsgpack.packb(value)) for channel, value in values.items()
        }
    meta = json.loads(metadata) if metadata else {}
    return MigCheckpoint(ns, cid, parent, document, meta if isinstance(meta, dict) else {})


def _document(checkpoint: MigCheckpoint) -> str:
    document = dict(checkpoint.fields)
    values = document.get("channel_values")
    if isinstance(values, dict):
        inline = {}
        for channel, (tag, data) in values.items():
            value = ormsgpack.unpackb(data) if tag == "msgpack" and data else None
            if tag != "msgpack" or not (
                value is None or isinstance(value, (bool, int, float, str))
            ):
                raise CopyRefused(
                    f"checkpoint {checkpoint.checkpoint_id}: channel {channel!r} would be kept "
                    "inline but is not a primitive"
                )
            inline[channel] = value
        document["channel_values"] = inline
    return json.dumps(document, ensure_ascii=False)


def write_rows(
    reader: PostgresStore, conn: Connection[Any], before: MigrationRows, after: MigrationRows
) -> None:
    """Write `after` over `before` inside the caller's transaction: changed checkpoints,
    changed blob rows, and the thread's writes when any changed."""
    sql, thread_id = reader.layout.sql, after.thread_id
    old = {(c.checkpoint_ns, c.checkpoint_id): c for c in before.checkpoints}
    with conn.cursor() as cur:
        for checkpoint in after.checkpoints:
            was = old.get((checkpoint.checkpoint_ns, checkpoint.checkpoint_id))
            if was is None:
                raise CopyRefused(f"thread {thread_id!r}: a migration never adds a checkpoint")
            if was.fields == checkpoint.fields and was.metadata == checkpoint.metadata:
                continue
            cur.execute(
                sql(
                    "UPDATE {cp} SET checkpoint = %s::jsonb, metadata = %s::jsonb "
                    "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
                ),
                (_document(checkpoint), json.dumps(checkpoint.metadata, ensure_ascii=False),
                 thread_id, checkpoint.checkpoint_ns, checkpoint.checkpoint_id),
            )  # fmt: skip
        for ns, channel, version in before.blobs.keys() - after.blobs.keys():
            cur.execute(
                sql(
                    "DELETE FROM {bl} WHERE thread_id = %s AND checkpoint_ns = %s "
                    "AND channel = %s AND version = %s"
                ),
                (thread_id, ns, channel, version),
            )
        for (ns, channel, version), (tag, data) in after.blobs.items():
            if before.blobs.get((ns, channel, version)) == (tag, data):
                continue
            cur.execute(
                sql(
                    "INSERT INTO {bl} (thread_id, checkpoint_ns, channel, version, type, blob) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (thread_id, checkpoint_ns, "
                    "channel, version) DO UPDATE SET type = EXCLUDED.type, blob = EXCLUDED.blob"
                ),
                (thread_id, ns, channel, version, tag, data),
            )
        path = reader.layout.task_path
        columns = "task_id, idx, channel, type, blob" + (", task_path" if path else "")
        marks = ", ".join(["%s"] * (8 + path))
        for (ns, cid), writes in changed_groups(before.writes, after.writes).items():
            cur.execute(
                sql(
                    "DELETE FROM {wr} WHERE thread_id = %s AND checkpoint_ns = %s "
                    "AND checkpoint_id = %s"
                ),
                (thread_id, ns, cid),
            )
            if not writes:
                continue
            cur.executemany(
                sql(
                    "INSERT INTO {wr} (thread_id, checkpoint_ns, checkpoint_id, "
                    + columns
                    + f") VALUES ({marks})"
                ),
                [
                    (thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel,
                     w.type, w.data, *((w.task_path,) if path else ()))
                    for w in writes
                ],
            )  # fmt: skip
