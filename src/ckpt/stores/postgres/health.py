"""Rows of a Postgres store that point at rows which are gone (PostgresStore.health), found
in SQL: anti-joins, never a lookup per row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ckpt.records.model import CheckpointKey, DumpQuery, StoreHealth
from ckpt.stores.postgres.schema import BLOB_BYTES, PgLayout

Rows = Callable[[Any, Sequence[Any]], list[tuple[Any, ...]]]


def store_health(layout: PgLayout, rows: Rows, query: DumpQuery) -> StoreHealth:
    """Missing parents, orphan writes and blobs no checkpoint names (`rows`: runs a
    statement in the store's read-only session)."""
    health = StoreHealth()
    params: list[Any] = [list(query.thread_ids)] if query.thread_ids else []
    only = " AND {alias}.thread_id = ANY(%s)" if query.thread_ids else ""
    if not layout.shallow:  # the shallow schema keeps no parent ids
        missing = (
            "FROM {cp} c WHERE c.parent_checkpoint_id IS NOT NULL"
            + only.format(alias="c")
            + " AND NOT EXISTS (SELECT 1 FROM {cp} p WHERE p.thread_id = c.thread_id "
            "AND p.checkpoint_ns = c.checkpoint_ns "
            "AND p.checkpoint_id = c.parent_checkpoint_id)"
        )
        ((count, threads, oldest),) = rows(
            layout.sql(
                "SELECT count(*), count(DISTINCT c.thread_id), count(*) FILTER (WHERE "
                "c.checkpoint_id = (SELECT min(m.checkpoint_id) FROM {cp} m "
                "WHERE m.thread_id = c.thread_id AND m.checkpoint_ns = c.checkpoint_ns)) " + missing
            ),
            params,
        )
        health.missing_parents, health.missing_parent_threads = int(count), int(threads)
        health.missing_parent_oldest = int(oldest)
        health.missing_parent_examples = [
            CheckpointKey(*row)
            for row in rows(
                layout.sql(
                    "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id "
                    + missing
                    + " ORDER BY 1, 2, 3 LIMIT 5"
                ),
                params,
            )
        ]
    if layout.has_writes:
        id_match = "" if layout.shallow else " AND c.checkpoint_id = w.checkpoint_id"
        if layout.shallow:  # one row per (thread, ns): a write matches its id in the JSONB
            id_match = " AND c.checkpoint->>'id' = w.checkpoint_id"
        orphans = (
            "FROM {wr} w WHERE NOT EXISTS (SELECT 1 FROM {cp} c "
            "WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns"
            + id_match
            + ")"
            + only.format(alias="w")
        )
        ((count, threads),) = rows(
            layout.sql("SELECT count(*), count(DISTINCT w.thread_id) " + orphans), params
        )
        health.orphan_writes, health.orphan_write_threads = int(count), int(threads)
        health.orphan_write_examples = [
            CheckpointKey(*row)
            for row in rows(
                layout.sql(
                    "SELECT DISTINCT w.thread_id, w.checkpoint_ns, w.checkpoint_id "
                    + orphans
                    + " ORDER BY 1, 2, 3 LIMIT 5"
                ),
                params,
            )
        ]
    if layout.has_blobs:
        # A blob is used when some checkpoint of its namespace names its version (as
        # PostgresSaver joins them); a hash anti-join, not a lookup per blob.
        if layout.blob_versions:
            refs = (
                "SELECT DISTINCT c.thread_id, c.checkpoint_ns, v.key AS channel, "
                "v.value AS version FROM {cp} c CROSS JOIN LATERAL "
                "jsonb_each_text(c.checkpoint->'channel_versions') v"
            )
            match = " AND r.version = b.version"
        else:
            refs = (
                "SELECT DISTINCT c.thread_id, c.checkpoint_ns, v AS channel FROM {cp} c "
                "CROSS JOIN LATERAL jsonb_object_keys(c.checkpoint->'channel_versions') v"
            )
            match = ""
        ((count, size),) = rows(
            layout.sql(
                f"WITH r AS ({refs}) SELECT count(*), coalesce(sum({BLOB_BYTES}), 0) "
                "FROM {bl} b WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.thread_id = "
                "b.thread_id AND r.checkpoint_ns = b.checkpoint_ns AND r.channel = b.channel"
                + match
                + ")"
                + only.format(alias="b")
            ),
            params,
        )
        health.orphan_blobs, health.orphan_blob_bytes = int(count), int(size)
    health.namespaces = [
        (thread_id, ns)
        for thread_id, ns in rows(
            layout.sql(
                "SELECT DISTINCT c.thread_id, c.checkpoint_ns FROM {cp} c WHERE true"
                + only.format(alias="c")
            ),
            params,
        )
    ]
    return health
