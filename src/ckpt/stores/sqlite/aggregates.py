"""Aggregates of a SqliteSaver store found in SQL (SqliteStore.write_totals, .health and
.pass_sizes, inside the store's snapshot), and what a stored value counts as."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ckpt.records.model import CheckpointKey, DumpQuery, StoreHealth, ThreadBytes, WriteTotals
from ckpt.stores.columns import LONG_TEXT, PLAIN_ROW

if TYPE_CHECKING:
    from ckpt.stores.sqlite.store import SqliteStore


def bytes_of(column: str) -> str:
    """SQL for the stored bytes of a column. length() of a BLOB reads only the record
    header; of TEXT it counts characters, so TEXT (which LangGraph never writes, but a
    hand-made row may hold) is measured as its UTF-8 bytes."""
    return (
        f"CASE WHEN typeof({column}) = 'text' THEN length(CAST({column} AS BLOB)) "
        f"ELSE length({column}) END"
    )


def plain_row(
    *,
    text: Sequence[str] = (),
    optional_text: Sequence[str] = (),
    blobs: Sequence[str] = (),
    integers: Sequence[str] = (),
) -> str:
    """SQL for a statement's last column PLAIN_ROW: 1 where each column named holds the
    type the row factory reads it as (ckpt.stores.columns), text no longer than LONG_TEXT
    bytes, so the row goes through untouched; else 0 or NULL, and the factory fixes it.
    It names every column of the statement that has a rule, or more."""

    def short(column: str) -> str:
        return f"coalesce(length(CAST({column} AS BLOB)), 0) <= {LONG_TEXT}"

    parts = [f"typeof({c}) = 'text' AND {short(c)}" for c in text]
    parts += [f"typeof({c}) IN ('text', 'null') AND {short(c)}" for c in optional_text]
    parts += [f"typeof({c}) IN ('blob', 'null')" for c in blobs]
    parts += [f"typeof({c}) = 'integer'" for c in integers]
    return f"coalesce({' AND '.join(parts)}, 0) AS {PLAIN_ROW}"


def thread_counts(store: SqliteStore, query: DumpQuery) -> dict[str, ThreadBytes] | None:
    """The threads of the checkpoints and writes `query` selects, with their checkpoint
    counts, from the primary keys' indexes alone (SqliteStore.pass_sizes); None when a
    thread id is no UTF-8 text: a statement naming it as text finds none of its rows."""
    found: dict[str, ThreadBytes] = {}
    tables = [("checkpoints", store._id, store._ns)]
    if store.has_writes:
        tables.append(("writes", store._w_id, store._w_ns))
    for table, id_column, ns_column in tables:
        counts = key_counts(store, query, table, id_column, ns_column)
        if counts is None:
            return None
        for thread_id, count in counts:
            sized = found.setdefault(thread_id, ThreadBytes())
            if table == "checkpoints":
                sized.checkpoints = count
    return found


def key_counts(
    store: SqliteStore, query: DumpQuery, table: str, id_column: str, ns_column: str
) -> list[tuple[str, int]] | None:
    """Each thread of `table`'s rows that `query` selects and its count of them, in
    thread_id's order, from the primary key's index alone; None when a thread id is no
    UTF-8 text (a blob or number shown as text, or text read with lone surrogates): a
    statement naming it as text finds none of its rows."""
    where, params = store._dump_filter(query, id_column, ns_column)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    # typeof of the group's own value: text equals only text, so a group is all text or
    # none (read per row, it would make SQLite decode every key of the index).
    rows = store._run(
        f"SELECT thread_id, count(*), typeof(thread_id) = 'text' FROM {table}"
        f"{clause} GROUP BY thread_id ORDER BY thread_id",
        params,
    )
    if not all(text and _utf8(thread_id) for thread_id, _, text in rows):
        return None
    return [(thread_id, count) for thread_id, count, _ in rows]


def checkpoint_ids(store: SqliteStore, query: DumpQuery) -> Iterator[Any]:
    """Store.checkpoint_ids: the rows raw_checkpoints reads, their ids alone (the primary
    key's index, no row read)."""
    where, params = store._dump_filter(query, store._id, store._ns)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    for (checkpoint_id,) in store._stream(f"SELECT {store._id} FROM checkpoints{clause}", params):
        yield checkpoint_id


def _utf8(text: str) -> bool:
    """Whether text read from the store was UTF-8 there (connection._lenient_text keeps the
    bytes that are not as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def write_totals(store: SqliteStore, query: DumpQuery, keep: int) -> WriteTotals:
    """Pending writes by channel and namespace, and on each namespace's newest and newest
    `keep` checkpoints (Store.write_totals)."""
    totals = WriteTotals()
    if not store.has_writes:
        return totals
    where, params = store._dump_filter(query, store._w_id, store._w_ns)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    size = bytes_of("value")
    for channel, n, total in store._run(
        f"SELECT channel, count(*), sum({size}) FROM writes{clause} GROUP BY channel", params
    ):
        totals.by_channel[channel] = (n, total or 0)
    for ns, total in store._run(
        f"SELECT {store._w_ns}, sum({size}) FROM writes{clause} GROUP BY 1", params
    ):
        totals.by_namespace[ns] = total or 0
    # The newest checkpoint and the keep-th newest of each (thread, ns), by key-index
    # searches: a window over every checkpoint (row_number) kept copies of each key in
    # SQLite's heap, 200 MB for a 10 MB thread id, and was 2-4x slower.
    ns, cid, w_ns, w_id = store._ns, store._id, store._w_ns, store._w_id
    one_ns = store.era == "0.1"  # a literal '': one namespace

    def same_ns(left: str, right: str) -> str:
        return "" if one_ns else f" AND {left} = {right}"

    cp_where, cp_params = store._dump_filter(query, cid, ns)
    cp_clause = f" WHERE {' AND '.join(cp_where)}" if cp_where else ""
    cp_and = "".join(f" AND {w}" for w in cp_where)  # inside `checkpoints c` subqueries
    group_ns = "" if one_ns else f", {ns}"
    ((on_latest, latest_bytes, on_last, last_bytes),) = store._run(
        f"WITH g AS (SELECT thread_id, {ns} AS ns, max({cid}) AS latest "
        f"FROM checkpoints{cp_clause} GROUP BY thread_id{group_ns}), "
        f"k AS (SELECT g.thread_id, g.ns, g.latest, coalesce((SELECT c.{cid} "
        f"FROM checkpoints c WHERE c.thread_id = g.thread_id{same_ns(f'c.{ns}', 'g.ns')}"
        f"{cp_and} ORDER BY c.{cid} DESC LIMIT 1 OFFSET ? - 1), '') AS cutoff FROM g) "
        f"SELECT coalesce(sum(w.{w_id} = k.latest), 0), coalesce(sum(CASE WHEN "
        f"w.{w_id} = k.latest THEN {bytes_of('w.value')} END), 0), count(*), "
        f"coalesce(sum({bytes_of('w.value')}), 0) "
        f"FROM k JOIN writes w ON w.thread_id = k.thread_id{same_ns(f'w.{w_ns}', 'k.ns')} "
        f"AND w.{w_id} >= k.cutoff WHERE EXISTS (SELECT 1 FROM checkpoints c "
        f"WHERE c.thread_id = w.thread_id{same_ns(f'c.{ns}', f'w.{w_ns}')} "
        f"AND c.{cid} = w.{w_id}{cp_and})",
        [*cp_params, *cp_params, max(keep, 1), *cp_params],
    )
    if keep < 1:
        on_last, last_bytes = 0, 0
    totals.on_latest, totals.on_last = (on_latest, latest_bytes), (on_last, last_bytes)
    return totals


def store_health(store: SqliteStore, query: DumpQuery) -> StoreHealth:
    """Missing parents and orphan writes (Store.health)."""
    health = StoreHealth()
    ns, cid = store._ns, store._id
    params: list[Any] = list(query.thread_ids)
    marks = ", ".join("?" for _ in params)
    threads = f" AND c.thread_id IN ({marks})" if params else ""
    parent = "parent_ts" if store.era == "0.1" else "parent_checkpoint_id"

    # 0.1.x rows have no namespace column: every checkpoint is in the root.
    def same_ns(left: str, right: str) -> str:
        return "" if store.era == "0.1" else f" AND {left} = {right}"

    missing = (
        f"FROM checkpoints c WHERE c.{parent} IS NOT NULL{threads} AND NOT EXISTS "
        f"(SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id"
        f"{same_ns(f'p.{ns}', f'c.{ns}')} AND p.{cid} = c.{parent})"
    )
    oldest = (
        f"c.{cid} = (SELECT min(m.{cid}) FROM checkpoints m WHERE m.thread_id = c.thread_id"
        f"{same_ns(f'm.{ns}', f'c.{ns}')})"
    )
    ((count, thread_count, at_oldest),) = store._run(
        f"SELECT count(*), count(DISTINCT c.thread_id), coalesce(sum({oldest}), 0) {missing}",
        params,
    )
    health.missing_parents, health.missing_parent_threads = count, thread_count
    health.missing_parent_oldest = at_oldest
    health.missing_parent_examples = [
        CheckpointKey(*row)
        for row in store._run(
            f"SELECT c.thread_id, {'c.' + ns if store.era != '0.1' else ns}, c.{cid} "
            f"{missing} ORDER BY 1, 2, 3 LIMIT 5",
            params,
        )
    ]
    if store.has_writes:
        w_ns, w_id = store._w_ns, store._w_id
        threads_w = threads.replace("c.thread_id", "w.thread_id")
        orphans = (
            f"FROM writes w WHERE NOT EXISTS (SELECT 1 FROM checkpoints c "
            f"WHERE c.thread_id = w.thread_id{same_ns(f'c.{ns}', f'w.{w_ns}')} "
            f"AND c.{cid} = w.{w_id}){threads_w}"
        )
        ((count, thread_count),) = store._run(
            f"SELECT count(*), count(DISTINCT w.thread_id) {orphans}", params
        )
        health.orphan_writes, health.orphan_write_threads = count, thread_count
        w_ns_col = f"w.{w_ns}" if store.era != "0.1" else "''"
        health.orphan_write_examples = [
            CheckpointKey(*row)
            for row in store._run(
                f"SELECT DISTINCT w.thread_id, {w_ns_col}, w.{w_id} {orphans} "
                "ORDER BY 1, 2, 3 LIMIT 5",
                params,
            )
        ]
    ns_col = f"c.{ns}" if store.era != "0.1" else "''"
    health.namespaces = [
        (thread_id, namespace)
        for thread_id, namespace in store._run(
            f"SELECT DISTINCT c.thread_id, {ns_col} FROM checkpoints c WHERE 1{threads}",
            params,
        )
    ]
    return health
