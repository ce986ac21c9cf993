"""The one statement behind PostgresStore.threads: every thread's aggregates and its latest
root checkpoint with its blob rows, sorted as ckpt sorts threads."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from ckpt.records.model import TASKS
from ckpt.stores.postgres.schema import BLOB_BYTES, CHECKPOINT_BYTES, WRITE_BYTES, PgLayout

if TYPE_CHECKING:
    from psycopg.sql import Composable, Composed


def threads_statement(
    layout: PgLayout, pg: ModuleType, columns: Composed, *, sizes: bool, order: str
) -> Composed:
    """The statement (see PostgresStore.threads and the comments below); `columns`: the
    select list of a checkpoint row without its values."""
    # One statement for every thread's aggregates and its latest root checkpoint (a
    # consistent snapshot), read a batch at a time. Grouping by (thread, ns) first
    # lets the server hash-aggregate narrow rows; one array_agg(DISTINCT ...) over the
    # table would sort every row with its JSONB instead (5x slower, spills to disk).
    # Sizes and write rows (`sizes=True`) read every row's columns (pg_column_size,
    # octet_length, the blobs and writes tables): without them the statement reads the
    # checkpoints' primary-key columns only.
    writes_cte = (
        f"SELECT w.thread_id, count(*) AS n, {f'sum({WRITE_BYTES})' if sizes else '0'} "
        "AS size FROM {wr} w GROUP BY w.thread_id"
        if layout.has_writes and sizes
        else "SELECT NULL::text AS thread_id, 0::bigint AS n, 0::bigint AS size WHERE false"
    )
    blobs_cte = (
        f"SELECT b.thread_id, sum({BLOB_BYTES}) AS size FROM {{bl}} b GROUP BY b.thread_id"
        if layout.has_blobs and sizes
        else "SELECT NULL::text AS thread_id, 0::bigint AS size WHERE false"
    )
    checkpoint_bytes = f"sum({CHECKPOINT_BYTES})" if sizes else "0"
    # The order ckpt.analysis.threads sorts records in, so that rows stream straight out (flat
    # memory, `--limit` stops the read): Python compares strings by code point, which
    # is the "C" collation's byte order of UTF-8; a missing id compares as "".
    keys = (
        "coalesce(latest_root, '') COLLATE \"C\" AS k1, coalesce(thread_id, '') COLLATE \"C\" AS k2"
    )
    order_by, outer_order = (
        ("k1 DESC, k2 DESC", "cp.k1 DESC, cp.k2 DESC") if order == "updated" else ("k2", "cp.k2")
    )
    # The aggregates are sorted on their own (narrow rows), and the latest root row
    # joins them in that order by primary key, its blob rows as PostgresSaver's own
    # read joins them (channel_versions by jsonb_each; their keys never travel to the
    # server and back): no sort after the joins, so each FETCH of the server-side
    # cursor does the joins of its THREADS_PER_BATCH rows only (the statement timeout
    # applies to each FETCH: the first one waits for the aggregates alone). Each
    # batch's writes come in set-based queries.
    return layout.sql(
        f"WITH w AS ({writes_cte}), b AS ({blobs_cte}) "
        "SELECT cp.thread_id, cp.n, cp.namespaces, cp.size, cp.latest_root, "
        "coalesce(w.n, 0), coalesce(w.size, 0), coalesce(b.size, 0), {cols}, {blobs} "
        f"FROM (SELECT *, {keys} FROM (SELECT thread_id, sum(n) AS n, "
        "array_agg(checkpoint_ns ORDER BY checkpoint_ns) AS namespaces, "
        "sum(size) AS size, max(latest) FILTER (WHERE checkpoint_ns = '') AS latest_root "
        "FROM (SELECT c.thread_id, c.checkpoint_ns, count(*) AS n, "
        f"{checkpoint_bytes} AS size, "
        "max({id}) AS latest FROM {cp} c GROUP BY 1, 2) AS per_ns GROUP BY thread_id) "
        f"AS agg ORDER BY {order_by}) AS cp "
        "LEFT JOIN w USING (thread_id) LEFT JOIN b USING (thread_id) "
        "LEFT JOIN {cp} c ON c.thread_id = cp.thread_id AND c.checkpoint_ns = '' "
        "AND {id} = cp.latest_root {blobs_join} "
        f"ORDER BY {outer_order}",
        cols=columns,
        **latest_blobs(layout, pg),
    )


def latest_blobs(layout: PgLayout, pg: ModuleType) -> dict[str, Composable]:
    """The select list and join of `threads` that bring each latest checkpoint's blob
    rows as arrays (channel, version, type, size, and the payload `next` needs), and
    whether it has writes."""
    # Whether the latest checkpoint has writes: only those rows' writes are then read.
    written = (
        "EXISTS (SELECT 1 FROM {wr} w WHERE w.thread_id = c.thread_id "
        "AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = {id})"
        if layout.has_writes
        else "false"
    )
    if not layout.has_blobs:
        return {
            "blobs": layout.sql(f"NULL, NULL, NULL, NULL, NULL, {written}"),
            "blobs_join": pg.sql.SQL(""),
        }
    version = "b.version" if layout.blob_versions else "NULL::text"
    # Versions match as PostgresSaver's join matches them (`#>>`: the JSON value as
    # text); _blob_rows keeps only the rows _fetch_blobs would have asked for.
    match = "AND b.version = v.value #>> '{{}}' " if layout.blob_versions else ""
    return {
        "blobs": layout.sql(
            f"bl.channels, bl.versions, bl.types, bl.sizes, bl.payloads, {written}"
        ),
        "blobs_join": layout.sql(
            # One primary-key search per channel version: OFFSET 0 keeps the planner
            # from joining all of the thread's blobs instead (it takes jsonb_each for
            # 100 rows; 7x slower on 10,000 threads of 100 checkpoints).
            "LEFT JOIN LATERAL (SELECT array_agg(x.channel) AS channels, "
            "array_agg(x.version) AS versions, array_agg(x.type) AS types, "
            "array_agg(x.size) AS sizes, array_agg(x.payload) AS payloads "
            "FROM jsonb_each(CASE WHEN jsonb_typeof(c.checkpoint -> 'channel_versions') "
            "= 'object' THEN c.checkpoint -> 'channel_versions' END) v "
            f"CROSS JOIN LATERAL (SELECT b.channel, {version} AS version, b.type, "
            f"coalesce({BLOB_BYTES}, 0) AS size, "
            "CASE WHEN b.channel = {tasks} OR b.channel LIKE 'join:%' THEN b.blob END "
            "AS payload FROM {bl} b WHERE b.thread_id = c.thread_id "
            f"AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key {match}"
            "OFFSET 0) x) bl ON true",
            tasks=pg.sql.Literal(TASKS),
        ),
    }
