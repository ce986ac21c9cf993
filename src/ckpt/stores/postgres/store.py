"""Read PostgresSaver and ShallowPostgresSaver stores, read-only (format.md §5, 6)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ckpt.errors import BadOption, NotFound
from ckpt.records.model import (
    TASKS,
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    Part,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
    WriteTotals,
)
from ckpt.records.types import (
    StorageRecord,
    TableBytesRecord,
    VacuumReport,
    VacuumTableRecord,
    server_vacuum_report,
    storage_record,
)
from ckpt.records.vocabulary import FIND_LIMIT
from ckpt.stores import split as _split
from ckpt.stores.base import Writer
from ckpt.stores.postgres import sharing
from ckpt.stores.postgres.health import store_health
from ckpt.stores.postgres.saver import PG_RELEASE as PG_RELEASE
from ckpt.stores.postgres.saver import langgraph_saver, saver_facts
from ckpt.stores.postgres.schema import BLOB_BYTES, CHECKPOINT_BYTES, WRITE_BYTES, detect_layout
from ckpt.stores.postgres.session import PgSession
from ckpt.stores.postgres.threads import threads_statement
from ckpt.stores.readahead import read_ahead
from ckpt.stores.split import METADATA_LIMIT as METADATA_LIMIT
from ckpt.stores.split import TOO_LARGE_PREFIX as _TOO_LARGE
from ckpt.stores.split import BlobKey, SplitStore, WriteKey, fragment_condition
from ckpt.stores.split import Fetched as _Fetched
from ckpt.stores.split import Row as _Row
from ckpt.stores.split import StoredBlob as _Blob
from ckpt.stores.split import WriteRow as _RawWrite
from ckpt.stores.split import batched as _batched
from ckpt.stores.split import columnar as _columnar
from ckpt.stores.split import is_legacy as _is_legacy
from ckpt.stores.split import version_text as _version_text

if TYPE_CHECKING:
    from psycopg.sql import SQL, Composed

    from ckpt.records.migration import MigrationRows
    from ckpt.records.plans import Strategy, ThreadRows

    Query = SQL | Composed
    # A group of rows with what they are built from: blobs, payloads, writes, shallow Sends.
    _Group = tuple[
        Sequence[_Row],
        dict[BlobKey, _Blob],
        dict[BlobKey, bytes | None],
        dict[WriteKey, list[_RawWrite]] | None,
        dict[tuple[str, str], list[_RawWrite]],
    ]

BATCH = 500  # checkpoints per set-based blobs/writes fetch while streaming a dump
THREADS_PER_BATCH = 500  # latest checkpoints hydrated per round of `threads` ...
FIRST_BATCH = 8  # ... at first: then twice as many each time
PROBE_STEPS = 10000  # (thread, namespace) pairs `find_exact` walks before `find` scans
KEYS_PER_QUERY = 5000  # blob or write keys sent in one statement (bounded statement time)


class PostgresStore(SplitStore):
    """A PostgresSaver database (current, or v1 rows from checkpoint-postgres 2.x) or a
    ShallowPostgresSaver one, told apart by their columns (format.md §6, 8.16).

    Every statement runs in a read-only transaction under a statement timeout, so a slow
    query can neither change nor hold up a production server. Aggregates and the latest
    checkpoints are found in SQL; blobs and writes come in set-based queries for a whole
    batch of checkpoints, never one query per checkpoint.
    """

    kind = "postgres"
    reclaim = "reuse"
    exported: str | None = None  # the open read's snapshot, exported for forks (sharing.py)
    joins: str | None = None  # the snapshot a forked reader takes
    rows_in_python_order = False  # ORDER BY thread_id follows the database's collation

    def __init__(
        self,
        spec: str,
        *,
        aes_key: bytes | None = None,
        schema: str | None = None,
        timeout: float | None = None,
    ) -> None:
        session = PgSession(spec, timeout=timeout)
        super().__init__(session.location, aes_key=aes_key)
        self._spec, self._timeout = spec, timeout  # for a writer's own connection
        self._session = session
        self._pg = session.pg
        self.conn = session.conn
        self.schema = schema
        self._cursor_ids = itertools.count(1)  # named cursors: several dumps may be open
        # Held by a dump's reading thread for each step (read_ahead) and by this thread's
        # statements meanwhile (the progress bar's count): one connection, one transaction,
        # so the two never interleave their statements or transaction ends.
        self._io = threading.RLock()
        try:
            self.layout = detect_layout(session, schema)
        except BaseException:
            self.conn.close()
            raise
        self.notices.extend(self.layout.notices)
        if self.layout.text_keys:
            self.thread_orders = frozenset({"thread", "updated"})

    # -- statements ------------------------------------------------------------------------
    def _rows(self, query: Query, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._io:
            return self._session.rows(query, params)

    def _columns(self, *, values: bool) -> Composed:
        """The select list that fills a _Row; without values the JSONB's channel_values stay
        on the server and only their keys come back (which channels hold a value)."""
        if values:
            return self.layout.sql(
                "c.thread_id, c.checkpoint_ns, {id}, {parent}, c.checkpoint, "
                f"{_METADATA}, {CHECKPOINT_BYTES}, NULL::text[]"
            )
        return self.layout.sql(
            "c.thread_id, c.checkpoint_ns, {id}, {parent}, c.checkpoint - 'channel_values', "
            f"{_METADATA}, {CHECKPOINT_BYTES}, "
            "CASE WHEN jsonb_typeof(c.checkpoint->'channel_values') = 'object' "
            "THEN ARRAY(SELECT jsonb_object_keys(c.checkpoint->'channel_values')) END"
        )

    # -- listing ---------------------------------------------------------------------------
    @property
    def shallow(self) -> bool:
        """A ShallowPostgresSaver store: the latest checkpoint of each namespace only."""
        return self.layout.shallow

    @property
    def blob_versions(self) -> bool:
        return self.layout.blob_versions

    @property
    def era(self) -> str:
        return "shallow" if self.layout.shallow else "current"

    @property
    def era_note(self) -> str:
        if self.layout.shallow:
            return "ShallowPostgresSaver tables (latest checkpoint only)"
        return "PostgresSaver tables (values in checkpoint_blobs)"

    @property
    def copy_target(self) -> bool:
        return not self.layout.shallow

    @property
    def blob_policy(self) -> str:
        if not self.layout.has_blobs:
            return "none"
        return "every" if self.layout.shallow else "updated"

    def saver(self) -> SaverFacts:
        return saver_facts(self._session, self.schema, self.layout)

    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        statement = self.threads_statement(sizes=sizes, order=order)
        pg = self._pg
        try:
            with (
                self.conn.transaction(),
                self.conn.cursor(name=f"ckpt_threads_{next(self._cursor_ids)}", binary=True) as cur,
            ):
                cur.execute(statement)
                # FIRST_BATCH rows, then twice as many each time: each FETCH joins the
                # rows it returns, so `--limit 3` reads a few latest checkpoints, not 500.
                size = FIRST_BATCH
                while chunk := cur.fetchmany(size):
                    yield from self._thread_summaries(chunk, sizes=sizes)
                    size = min(size * 2, THREADS_PER_BATCH)
        except pg.Error as exc:
            raise self._session.translate(exc) from None

    def threads_statement(self, *, sizes: bool, order: str) -> Composed:
        """The one statement behind `threads` (postgres/threads.py)."""
        return threads_statement(
            self.layout, self._pg, self._columns(values=False), sizes=sizes, order=order
        )

    def _blob_rows(self, row: _Row, arrays: Sequence[Any]) -> dict[BlobKey, _Blob]:
        """One latest checkpoint's blob rows from `_latest_blobs`' arrays, under the keys
        `_fetch_blobs` gives them, and only those it would have asked for."""
        channels, versions, types, sizes, payloads = arrays
        if not channels:
            return {}
        wanted = dict(self._row_blob_keys(row))
        found: dict[BlobKey, _Blob] = {}
        for channel, ver, tag, size, payload in zip(
            channels, versions, types, sizes, payloads, strict=True
        ):
            key: BlobKey = (row.thread_id, row.checkpoint_ns, channel, ver)
            if not self.layout.blob_versions:
                key = key[:3]
            if wanted.get(channel) == key:
                found[key] = _Blob(ver, tag, int(size), payload)
        return found

    def _thread_summaries(
        self, chunk: list[tuple[Any, ...]], *, sizes: bool
    ) -> Iterator[ThreadSummary]:
        # A thread with only subgraph checkpoints has no state of its own: no latest.
        width = len(_Row._fields)
        rows: list[_Row] = []
        written: list[_Row] = []  # rows whose writes must be read
        blobs: dict[BlobKey, _Blob] = {}
        for found in chunk:
            if found[4] and found[8] is not None:
                row = _Row(*found[8 : 8 + width])
                rows.append(row)
                blobs.update(self._blob_rows(row, found[8 + width : -1]))
                if found[-1] or _is_legacy(row.body):  # v<4: Sends in the parent's writes
                    written.append(row)
        writes = self._fetch_writes(written, thread_id=None) if written else None
        if writes is None and self.layout.has_writes:
            writes = {}
        fetched = _Fetched(blobs, writes)
        groups = self._groups(rows, values=False, fetched=fetched)
        latest = {c.thread_id: c for c in self._built(groups, values=False)}
        for thread_id, count, namespaces, size, _, writes, writes_size, blobs_size, *_ in chunk:
            yield ThreadSummary(
                thread_id=thread_id,
                namespaces=sorted(namespaces or [""]),
                checkpoints=int(count),
                writes=int(writes) if sizes else None,
                size=(
                    int(size or 0) + int(writes_size or 0) + int(blobs_size or 0) if sizes else None
                ),
                latest=latest.get(thread_id),
            )

    def thread_exists(self, thread_id: str) -> bool:
        return bool(
            self._rows(
                self.layout.sql("SELECT 1 FROM {cp} c WHERE c.thread_id = %s LIMIT 1"), (thread_id,)
            )
        )

    def thread_ids(self) -> list[str]:
        rows = self._rows(self.layout.sql("SELECT DISTINCT c.thread_id FROM {cp} c"), ())
        return [row[0] for row in rows if isinstance(row[0], str)]

    def namespaces(self, thread_id: str) -> list[str]:
        rows = self._rows(
            self.layout.sql("SELECT DISTINCT c.checkpoint_ns FROM {cp} c WHERE c.thread_id = %s"),
            (thread_id,),
        )
        return sorted(str(row[0]) for row in rows)

    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        # Three statements whatever the thread's length: its rows, its blobs, its writes.
        rows = [
            _Row(*row)
            for row in self._rows(
                self.layout.sql(
                    "SELECT {cols} FROM {cp} c WHERE c.thread_id = %s",
                    cols=self._columns(values=values),
                ),
                (thread_id,),
            )
        ]
        rows.sort(key=lambda r: (r.checkpoint_id, r.checkpoint_ns))
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        return list(
            self._built(self._groups(rows, values=values, thread_id=thread_id), values=values)
        )

    # -- finding ---------------------------------------------------------------------------
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        # No index leads with checkpoint_id, so without a thread this is one pass over the
        # primary key (an index-only scan: no ORDER BY, which would make the planner read
        # the table in thread order instead); with a thread, a range of it.
        condition, params = fragment_condition(fragment, "{id}", "c.thread_id", thread_id)
        rows = self._rows(
            self.layout.sql(
                "SELECT c.thread_id, c.checkpoint_ns, {id} FROM {cp} c "
                f"WHERE {condition} LIMIT {FIND_LIMIT}"
            ),
            params,
        )
        return [CheckpointKey(*row) for row in sorted(rows)]

    def find_exact(self, checkpoint_id: str) -> list[CheckpointKey]:
        # No index leads with checkpoint_id and PostgreSQL before 18 has no skip scan, so
        # the statement skips through the primary key itself: a recursive walk from one
        # (thread, namespace) to the next (one index search each, by row comparison), and
        # a primary-key search for the id in every one. That reads a few pages per
        # namespace instead of the whole key index; after PROBE_STEPS namespaces it gives
        # up, and `find` scans the key index. Shallow stores keep the id in the JSONB and
        # a table without that key would be read in full per step: both use `find`.
        if self.layout.shallow or not self._has_key_index():
            return super().find_exact(checkpoint_id)
        rows = self._rows(
            self.layout.sql(
                "WITH RECURSIVE p(t, n, k) AS ("
                "(SELECT c.thread_id, c.checkpoint_ns, 1 FROM {cp} c "
                "ORDER BY c.thread_id, c.checkpoint_ns LIMIT 1) "
                "UNION ALL SELECT q.thread_id, q.checkpoint_ns, p.k + 1 FROM p "
                "CROSS JOIN LATERAL (SELECT c.thread_id, c.checkpoint_ns FROM {cp} c "
                "WHERE (c.thread_id, c.checkpoint_ns) > (p.t, p.n) "
                "ORDER BY c.thread_id, c.checkpoint_ns LIMIT 1) AS q "
                f"WHERE p.k < {PROBE_STEPS}) "
                # gave_up: the walk ended at PROBE_STEPS (its own column: the row factory
                # reads a NULL thread_id as "", columns.py).
                "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, "
                "c.thread_id IS NULL AS gave_up FROM p "
                "LEFT JOIN {cp} c ON c.thread_id = p.t AND c.checkpoint_ns = p.n "
                "AND c.checkpoint_id = %s "
                f"WHERE c.thread_id IS NOT NULL OR p.k = {PROBE_STEPS}"
            ),
            (checkpoint_id,),
        )
        if any(row[3] for row in rows):  # too many namespaces to walk
            return super().find_exact(checkpoint_id)
        return [CheckpointKey(*row[:3]) for row in sorted(rows)]

    def _has_key_index(self) -> bool:
        """A valid btree index whose keys start (thread_id, checkpoint_ns, checkpoint_id):
        PostgresSaver's primary key."""
        rows = self._rows(
            self._pg.sql.SQL(
                "SELECT 1 FROM pg_index i JOIN pg_class r ON r.oid = i.indexrelid "
                "JOIN pg_am a ON a.oid = r.relam WHERE i.indrelid = %s AND i.indisvalid "
                "AND a.amname = 'btree' AND i.indnkeyatts >= 3 AND ARRAY(SELECT attname "
                "FROM pg_attribute WHERE attrelid = i.indrelid AND attnum = ANY "
                "((i.indkey::int2[])[0:2]) ORDER BY array_position(i.indkey::int2[], "
                "attnum)) = ARRAY['thread_id', 'checkpoint_ns', 'checkpoint_id']::name[]"
            ),
            (self.layout.oids["checkpoints"],),
        )
        return bool(rows)

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        # As PostgresSaver.get_tuple picks it: ORDER BY checkpoint_id DESC LIMIT 1.
        rows = self._rows(
            self.layout.sql(
                "SELECT {id} FROM {cp} c WHERE c.thread_id = %s AND c.checkpoint_ns = %s "
                "ORDER BY {id} DESC LIMIT 1"
            ),
            (thread_id, checkpoint_ns),
        )
        return CheckpointKey(thread_id, checkpoint_ns, rows[0][0]) if rows else None

    # -- loading ---------------------------------------------------------------------------
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        rows = self._rows_by_key([key], values=values)
        if not rows:
            raise NotFound(f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}")
        return next(self._built(self._groups(rows, values=values), values=values))

    def load_many(self, keys: Sequence[CheckpointKey], *, values: bool = True) -> list[Checkpoint]:
        rows = self._rows_by_key(list(keys), values=values)
        return list(self._built(self._groups(rows, values=values), values=values))

    def _rows_by_key(self, keys: list[CheckpointKey], *, values: bool) -> list[_Row]:
        """Checkpoint rows by primary key, in the order of `keys` (missing ones left out)."""
        found: dict[CheckpointKey, _Row] = {}
        cols = self._columns(values=values)
        for chunk in _batched(keys, KEYS_PER_QUERY):
            for row in self._rows(
                self.layout.sql(
                    "SELECT {cols} FROM unnest(%b::text[], %b::text[], %b::text[]) "
                    "AS k(thread_id, checkpoint_ns, checkpoint_id) "
                    "JOIN {cp} c ON c.thread_id = k.thread_id "
                    "AND c.checkpoint_ns = k.checkpoint_ns AND {id} = k.checkpoint_id",
                    cols=cols,
                ),
                _columnar([(k.thread_id, k.checkpoint_ns, k.checkpoint_id) for k in chunk], 3),
            ):
                parsed = _Row(*row)
                found[
                    CheckpointKey(parsed.thread_id, parsed.checkpoint_ns, parsed.checkpoint_id)
                ] = parsed
        return [found[k] for k in keys if k in found]

    @staticmethod
    def _dump_where(query: DumpQuery) -> tuple[list[str], list[str], list[Any]]:
        """The dump's filters: on the key (thread, namespace), on the id range, and the
        parameters of both, in that order."""
        where: list[str] = []
        params: list[Any] = []
        if query.thread_ids:
            where.append("c.thread_id = ANY(%s)")
            params.append(list(query.thread_ids))
        if query.checkpoint_ns is not None:
            where.append("c.checkpoint_ns = %s")
            params.append(query.checkpoint_ns)
        ranges, bound_params = query.id_bounds("{id}")
        return where, ranges, params + bound_params

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        # A count over the primary key with the dump's filters (an index-only scan on a
        # vacuumed table). Asked from inside a running dump, it shares the dump's
        # transaction, so a savepoint keeps a failure (the statement timeout on a huge
        # table) from aborting the dump: the bar then goes without a total.
        where, ranges, params = self._dump_where(query)
        if query.latest_only and not self.layout.shallow:
            inner = f" WHERE {' AND '.join(where)}" if where else ""
            outer = " AND ".join(ranges).replace("{id}", "l.checkpoint_id")
            statement = self.layout.sql(
                "SELECT count(*) FROM (SELECT c.thread_id, c.checkpoint_ns, "
                "max(c.checkpoint_id) AS checkpoint_id FROM {cp} c"
                + inner
                + " GROUP BY 1, 2) AS l"
                + (f" WHERE {outer}" if outer else "")
            )
        else:
            clause = where + ranges
            statement = self.layout.sql(
                "SELECT count(*) FROM {cp} c" + (f" WHERE {' AND '.join(clause)}" if clause else "")
            )
        try:
            with self._io, self.conn.transaction(), self.conn.cursor() as cur:
                cur.execute(statement, params)
                row = cur.fetchone()
        except self._pg.Error:
            return None
        return int(row[0]) if row else None

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        where, ranges, params = self._dump_where(query)
        cols = self._columns(values=values)
        if query.latest_only and not self.layout.shallow:
            # The newest id per (thread, ns) comes from the primary key alone; then each
            # row is fetched by key. A DISTINCT ON would sort the whole table instead.
            inner = f" WHERE {' AND '.join(where)}" if where else ""
            outer = f" WHERE {' AND '.join(ranges)}" if ranges else ""
            statement = self.layout.sql(
                "SELECT {cols} FROM (SELECT c.thread_id, c.checkpoint_ns, "
                "max(c.checkpoint_id) AS checkpoint_id FROM {cp} c"
                + inner
                + " GROUP BY 1, 2) AS l JOIN {cp} c ON c.thread_id = l.thread_id "
                "AND c.checkpoint_ns = l.checkpoint_ns AND c.checkpoint_id = l.checkpoint_id"
                + outer
                + " ORDER BY c.thread_id, c.checkpoint_ns",
                cols=cols,
            )
        else:
            clause = where + ranges
            statement = self.layout.sql(
                "SELECT {cols} FROM {cp} c"
                + (f" WHERE {' AND '.join(clause)}" if clause else "")
                + " ORDER BY c.thread_id, c.checkpoint_ns, {id}",
                cols=cols,
            )
        yield from self._stream(statement, params, values=values)

    def _stream(
        self, statement: Composed, params: list[Any], *, values: bool
    ) -> Iterator[Checkpoint]:
        """A server-side cursor inside one read-only REPEATABLE READ transaction: memory stays
        flat however large the store, and every batch sees the same snapshot."""
        fetched = read_ahead(self._fetched(statement, params, values=values), self._io)
        yield from self._built(fetched, values=values)

    def _fetched(
        self, statement: Composed, params: list[Any], *, values: bool
    ) -> Generator[_Group, None, None]:
        """What `_stream` builds its checkpoints from, a group of rows at a time: every
        statement of the dump, none of its decoding (read_ahead runs it in a thread)."""
        for batch in self._batches("dump", statement, params):
            yield from self._groups([_Row(*row) for row in batch], values=values)

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        found: dict[str, ThreadBytes] = {}
        parts: tuple[tuple[Part, str, str, str, bool, bool], ...] = (
            ("checkpoint", "c", "cp", CHECKPOINT_BYTES, True, True),
            ("blob", "b", "bl", BLOB_BYTES, False, self.layout.has_blobs),
            ("write", "w", "wr", WRITE_BYTES, True, self.layout.has_writes),
        )
        for part, alias, table, size, ids, present in parts:
            if not present:
                continue
            where, params = self._raw_filter(query, alias, ids=ids)
            statement = self.layout.sql(
                f"SELECT {alias}.thread_id, count(*), sum({size}) FROM {{{table}}} {alias}{where} "
                f"GROUP BY {alias}.thread_id"
            )
            for thread_id, count, total in self._rows(statement, params):
                found.setdefault(thread_id, ThreadBytes()).add(part, int(count), int(total or 0))
        return found

    def storage(self) -> StorageRecord:
        tables = self._tables()
        return storage_record(sum(t["total_bytes"] for t in tables), tables=tables)

    def _tables(self) -> list[TableBytesRecord]:
        """The saver's tables as the server sizes them."""
        rows = self._rows(
            self._pg.sql.SQL(
                "SELECT c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid), "
                "pg_indexes_size(c.oid), "
                "coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), "
                "c.reltuples::bigint, s.n_live_tup, s.n_dead_tup "
                "FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid "
                "WHERE c.oid = ANY(%s::oid[]) ORDER BY c.relname"
            ),
            (list(self.layout.oids.values()),),
        )
        return [
            {
                "table": name,
                "total_bytes": int(total),
                "table_bytes": int(table),
                "index_bytes": int(indexes),
                "toast_bytes": int(toast),
                # From the planner's statistics (reltuples, pg_stat): estimates, -1 or
                # null before the table was first analyzed.
                "rows_estimate": int(estimate) if estimate is not None else None,
                "live_rows": int(live) if live is not None else None,
                "dead_rows": int(dead) if dead is not None else None,
            }
            for name, total, table, indexes, toast, estimate, live, dead in rows
        ]

    def write_totals(self, query: DumpQuery, keep: int) -> WriteTotals:
        totals = WriteTotals()
        if not self.layout.has_writes:
            return totals
        where, params = self._raw_filter(query, "w", ids=True)
        for channel, n, total in self._rows(
            self.layout.sql(
                f"SELECT w.channel, count(*), sum({WRITE_BYTES}) FROM {{wr}} w{where} GROUP BY 1"
            ),
            params,
        ):
            totals.by_channel[channel] = (int(n), int(total or 0))
        for ns, total in self._rows(
            self.layout.sql(
                f"SELECT w.checkpoint_ns, sum({WRITE_BYTES}) FROM {{wr}} w{where} GROUP BY 1"
            ),
            params,
        ):
            totals.by_namespace[ns] = int(total or 0)
        cp_where, cp_params = self._raw_filter(query, "c", ids=True)
        id_match = "(r.id = w.checkpoint_id)"
        ((on_latest, latest_bytes, on_last, last_bytes),) = self._rows(
            self.layout.sql(
                "WITH r AS (SELECT c.thread_id, c.checkpoint_ns, {id} AS id, row_number() OVER "
                "(PARTITION BY c.thread_id, c.checkpoint_ns ORDER BY {id} DESC) AS n "
                f"FROM {{cp}} c{cp_where}) "
                f"SELECT count(*) FILTER (WHERE r.n = 1), coalesce(sum({WRITE_BYTES}) FILTER "
                f"(WHERE r.n = 1), 0), count(*), coalesce(sum({WRITE_BYTES}), 0) "
                "FROM {wr} w JOIN r ON w.thread_id = r.thread_id "
                f"AND w.checkpoint_ns = r.checkpoint_ns AND {id_match} WHERE r.n <= %s"
            ),
            [*cp_params, keep],
        )
        totals.on_latest = (int(on_latest), int(latest_bytes))
        totals.on_last = (int(on_last), int(last_bytes))
        return totals

    def health(self, query: DumpQuery) -> StoreHealth:
        return store_health(self.layout, self._rows, query)

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        where, params = self._raw_filter(query, "c", ids=True)
        body = "c.checkpoint::text, c.metadata::text" if data else "NULL::text, NULL::text"
        statement = self.layout.sql(
            "SELECT c.thread_id, c.checkpoint_ns, {id}, {parent}, "
            + body
            + ", pg_column_size(c.checkpoint), pg_column_size(c.metadata), "
            "c.checkpoint->'channel_versions' FROM {cp} c"
            + where
            + " ORDER BY c.thread_id, c.checkpoint_ns, {id}"
        )
        for row in self._stream_rows(statement, params):
            thread_id, ns, checkpoint_id, parent, text, metadata, body_n, meta_n, versions = row
            yield RawCheckpoint(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=parent,
                type="jsonb",
                body=text.encode() if text is not None else b"",
                metadata_type="jsonb",
                metadata=metadata.encode() if metadata is not None else b"",
                body_size=int(body_n or 0),
                metadata_size=int(meta_n or 0),
                channel_versions={
                    str(channel): text_version
                    for channel, version in (versions.items() if isinstance(versions, dict) else ())
                    if (text_version := _version_text(version)) is not None
                },
            )

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        if not self.layout.has_blobs:
            return
        where, params = self._raw_filter(query, "b", ids=False)
        version = "b.version" if self.layout.blob_versions else "NULL::text"
        statement = self.layout.sql(
            f"SELECT b.thread_id, b.checkpoint_ns, b.channel, {version}, b.type, "
            + ("b.blob" if data else "NULL::bytea")
            + f", {BLOB_BYTES} FROM {{bl}} b"
            + where
            + f" ORDER BY b.thread_id, b.checkpoint_ns, b.channel, {version}"
        )
        yield from map(RawBlob.from_row, self._stream_rows(statement, params))

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        if not self.layout.has_writes:
            return
        where, params = self._raw_filter(query, "w", ids=True)
        statement = self.layout.sql(
            "SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel, "
            "w.type, "
            + ("w.blob" if data else "NULL::bytea")
            + f", {WRITE_BYTES}, {{task_path}} FROM {{wr}} w"
            + where
            + " ORDER BY w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx",
            task_path=self.layout.task_path_expr,
        )
        yield from map(RawWrite.from_row, self._stream_rows(statement, params))

    def _raw_filter(self, query: DumpQuery, alias: str, *, ids: bool) -> tuple[str, list[Any]]:
        """A WHERE clause for a raw scan of the table `alias` names; blobs have no ids."""
        where: list[str] = []
        params: list[Any] = []
        if query.thread_ids:
            where.append(f"{alias}.thread_id = ANY(%s)")
            params.append(list(query.thread_ids))
        if query.checkpoint_ns is not None:
            where.append(f"{alias}.checkpoint_ns = %s")
            params.append(query.checkpoint_ns)
        if ids:
            bounds, bound_params = query.id_bounds(
                "{id}" if alias == "c" else f"{alias}.checkpoint_id"
            )
            where += bounds
            params += bound_params
        return (f" WHERE {' AND '.join(where)}" if where else ""), params

    def _stream_rows(self, statement: Composed, params: list[Any]) -> Iterator[tuple[Any, ...]]:
        """Rows through a server-side cursor in one read-only transaction (flat memory), the
        next batch read while the caller works on this one."""
        for batch in read_ahead(self._batches("scan", statement, params), self._io):
            yield from batch

    def _batches(
        self, purpose: str, statement: Composed, params: list[Any]
    ) -> Generator[list[tuple[Any, ...]], None, None]:
        """A statement's rows BATCH at a time through a server-side cursor (`ckpt_{purpose}_N`)
        inside one transaction, open while the caller works on each batch: memory stays
        flat, and every batch sees the same snapshot. The cursor's errors are translated
        here; what the caller runs between two batches goes through `_rows`, which does."""
        pg = self._pg
        try:
            with (
                self.conn.transaction(),
                self.conn.cursor(
                    name=f"ckpt_{purpose}_{next(self._cursor_ids)}", binary=True
                ) as cur,
            ):
                cur.itersize = BATCH
                cur.execute(statement, params)
                while batch := cur.fetchmany(BATCH):
                    yield batch
        except pg.Error as exc:
            raise self._session.translate(exc) from None

    # -- assembling ------------------------------------------------------------------------
    def _built(self, groups: Iterable[_Group], *, values: bool) -> Iterator[Checkpoint]:
        """Each checkpoint of `groups` (`_groups`), built as it is asked for."""
        for rows, blobs, payloads, writes, shallow_sends in groups:
            for row in rows:
                yield self._build(row, blobs, payloads, writes, shallow_sends, values=values)

    def _groups(
        self,
        rows: Sequence[_Row],
        *,
        values: bool,
        thread_id: str | None = None,
        fetched: _Fetched | None = None,
    ) -> Iterator[_Group]:
        """Fetch the blobs and writes of all `rows` in set-based queries: the rows in groups,
        each with what its checkpoints are built from (blob payloads a group at a time,
        under PAYLOAD_BYTES). With `thread_id`, rows are that whole thread and the queries
        read the thread's range of each table instead of sending keys. `fetched`: the
        rows' blobs and writes, when the caller found them already."""
        if not rows:
            return
        if fetched is None:
            blobs = self._fetch_blobs(rows, thread_id=thread_id, payloads=values)
            writes = self._fetch_writes(rows, thread_id=thread_id)
        else:
            blobs, writes = fetched
        shallow_sends = self._shallow_sends(rows) if self.layout.shallow else {}
        if not values:
            yield rows, blobs, {}, writes, shallow_sends
            return
        for group, keys in self._payload_groups(rows, blobs):
            yield group, blobs, self._payloads(blobs, keys), writes, shallow_sends

    def _payloads(
        self, blobs: dict[BlobKey, _Blob], keys: list[BlobKey]
    ) -> dict[BlobKey, bytes | None]:
        """The payloads of `keys`: those `_fetch_blobs` brought along, the others asked."""
        found: dict[BlobKey, bytes | None] = {}
        missing: list[BlobKey] = []
        for key in keys:
            payload = blobs[key].payload
            if payload is None:
                missing.append(key)
            else:
                found[key] = payload
        if missing:
            found.update(self._fetch_payloads(missing))
        return found

    def _fetch_blobs(
        self, rows: Sequence[_Row], *, thread_id: str | None, payloads: bool = False
    ) -> dict[BlobKey, _Blob]:
        """The blob rows the checkpoints point at: type and size, without payloads (the
        server reads a TOASTed value's size without detoasting it). __pregel_tasks payloads
        come along: `next` needs the Sends even when no values are shown. With `payloads`,
        the others' too while they add up to PAYLOAD_BYTES (a running sum on the server):
        a dump's batch of ordinary size needs no statement of its own for them."""
        if not self.layout.has_blobs:
            return {}
        sql = self._pg.sql
        version = sql.SQL("b.version" if self.layout.blob_versions else "NULL::text")
        inline = (
            f"WHEN sum(coalesce({BLOB_BYTES}, 0)) OVER (ROWS UNBOUNDED PRECEDING) "
            f"<= {_split.PAYLOAD_BYTES} THEN b.blob "
            if payloads
            else ""
        )
        select = self.layout.sql(
            "SELECT b.thread_id, b.checkpoint_ns, b.channel, {version}, b.type, "
            f"coalesce({BLOB_BYTES}, 0), "
            "CASE WHEN b.channel = %s OR b.channel LIKE 'join:%%' THEN b.blob "
            f"{inline}END AS blob ",
            version=version,
        )
        found: dict[BlobKey, _Blob] = {}

        def collect(result: list[tuple[Any, ...]]) -> None:
            for t, ns, channel, ver, tag, size, payload in result:
                key = (t, ns, channel, ver) if self.layout.blob_versions else (t, ns, channel)
                found[key] = _Blob(ver, tag, int(size), payload)

        if thread_id is not None:
            statement = select + self.layout.sql("FROM {bl} b WHERE b.thread_id = %s")
            collect(self._rows(statement, (TASKS, thread_id)))
            return found
        # A blob is shared by every checkpoint still at its version (format.md §5.2): ask once.
        keys = {key for row in rows for _, key in self._row_blob_keys(row)}
        for chunk in _batched(sorted(keys), KEYS_PER_QUERY):
            collect(self._rows(select + self._blob_join(), (TASKS, *self._key_columns(chunk))))
        return found

    def _blob_join(self) -> Composed:
        if self.layout.blob_versions:
            return self.layout.sql(
                "FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[]) "
                "AS k(thread_id, checkpoint_ns, channel, version) JOIN {bl} b "
                "ON b.thread_id = k.thread_id AND b.checkpoint_ns = k.checkpoint_ns "
                "AND b.channel = k.channel AND b.version = k.version"
            )
        return self.layout.sql(
            "FROM unnest(%b::text[], %b::text[], %b::text[]) "
            "AS k(thread_id, checkpoint_ns, channel) JOIN {bl} b "
            "ON b.thread_id = k.thread_id AND b.checkpoint_ns = k.checkpoint_ns "
            "AND b.channel = k.channel"
        )

    def _key_columns(self, keys: Sequence[BlobKey]) -> list[list[Any]]:
        return _columnar(keys, 4 if self.layout.blob_versions else 3)

    def _fetch_payloads(self, keys: list[BlobKey]) -> dict[BlobKey, bytes | None]:
        version = "b.version, " if self.layout.blob_versions else ""
        statement = (
            self.layout.sql(f"SELECT b.thread_id, b.checkpoint_ns, b.channel, {version}b.blob ")
            + self._blob_join()
        )
        payloads: dict[BlobKey, bytes | None] = {}
        for chunk in _batched(keys, KEYS_PER_QUERY):
            for *key, payload in self._rows(statement, self._key_columns(chunk)):
                payloads[tuple(key)] = payload
        return payloads

    def _fetch_writes(
        self, rows: Sequence[_Row], *, thread_id: str | None
    ) -> dict[WriteKey, list[_RawWrite]] | None:
        """Pending writes of `rows`, plus the `__pregel_tasks` writes of the parents of v<4
        rows: PostgresSaver rebuilds their pending Sends from those (format.md §5.3)."""
        if not self.layout.has_writes:
            return None
        select = self.layout.sql(
            "SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, {task_path}, "
            f"w.idx, w.channel, w.type, w.blob, {WRITE_BYTES} ",
            task_path=self.layout.task_path_expr,
        )
        found: dict[WriteKey, list[_RawWrite]] = {}

        def collect(result: list[tuple[Any, ...]]) -> None:
            for t, ns, cid, *rest in result:
                found.setdefault((t, ns, cid), []).append(
                    _RawWrite(
                        rest[0], rest[1] or "", rest[2], rest[3], rest[4], rest[5], rest[6] or 0
                    )
                )

        if thread_id is not None:
            collect(
                self._rows(
                    select + self.layout.sql("FROM {wr} w WHERE w.thread_id = %s"), (thread_id,)
                )
            )
            return found
        own = {(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in rows}
        parents: set[WriteKey] = set()
        for r in rows:
            if r.parent_checkpoint_id and _is_legacy(r.body):
                parents.add((r.thread_id, r.checkpoint_ns, r.parent_checkpoint_id))
        keys = [(*k, True) for k in sorted(own)] + [(*k, False) for k in sorted(parents - own)]
        statement = select + self.layout.sql(
            "FROM unnest(%b::text[], %b::text[], %b::text[], %b::bool[]) "
            "AS k(thread_id, checkpoint_ns, checkpoint_id, every) JOIN {wr} w "
            "ON w.thread_id = k.thread_id AND w.checkpoint_ns = k.checkpoint_ns "
            "AND w.checkpoint_id = k.checkpoint_id WHERE k.every OR w.channel = %s"
        )
        for chunk in _batched(keys, KEYS_PER_QUERY):
            collect(self._rows(statement, (*_columnar(chunk, 4), TASKS)))
        return found

    def _shallow_sends(self, rows: Sequence[_Row]) -> dict[tuple[str, str], list[_RawWrite]]:
        """ShallowPostgresSaver v<4 rows: the `__pregel_tasks` writes of the previous
        checkpoint, the only other id whose writes it keeps (format.md §6). LangGraph's own
        query takes every such write of the namespace, the current id's too; those are
        the next step's Sends, so they are left out here."""
        legacy = [r for r in rows if _is_legacy(r.body)]
        if not legacy or not self.layout.has_writes:
            return {}
        result = self._rows(
            self.layout.sql(
                "SELECT w.thread_id, w.checkpoint_ns, w.task_id, {task_path}, w.idx, w.channel, "
                f"w.type, w.blob, {WRITE_BYTES} "
                "FROM unnest(%b::text[], %b::text[], %b::text[]) "
                "AS k(thread_id, checkpoint_ns, checkpoint_id) JOIN {wr} w "
                "ON w.thread_id = k.thread_id AND w.checkpoint_ns = k.checkpoint_ns "
                "AND w.channel = %s AND w.checkpoint_id <> k.checkpoint_id",
                task_path=self.layout.task_path_expr,
            ),
            (
                *_columnar([(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in legacy], 3),
                TASKS,
            ),
        )
        found: dict[tuple[str, str], list[_RawWrite]] = {}
        for t, ns, task_id, path, idx, channel, tag, blob, size in result:
            found.setdefault((t, ns), []).append(
                _RawWrite(task_id, path or "", idx, channel, tag, blob, size or 0)
            )
        return found

    # -- changing it -----------------------------------------------------------------------
    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        from ckpt.stores.postgres.writer import refuse_shallow_keep

        if backup:
            raise BadOption("`backup` is for SQLite stores (use pg_dump for Postgres)")
        refuse_shallow_keep(self, strategy)

    def check_migrate(self) -> None:
        from ckpt.stores.postgres.migrate import check

        check(self)

    def migration_rows(self, thread_id: str, *, latest: bool = False) -> MigrationRows:
        # Every checkpoint even with `latest`: a blob is shared by every checkpoint at
        # its version, and one the older checkpoints name must stay.
        from ckpt.stores.postgres.migrate import read_rows

        with self.conn.transaction():
            return read_rows(self, self.conn, thread_id)

    def thread_rows(self, thread_id: str) -> ThreadRows:
        from ckpt.stores.postgres.writer import thread_rows

        with self.conn.transaction():
            return thread_rows(self, self.conn, thread_id)

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        if into is not None:
            raise BadOption("`into` is for SQLite stores")
        tables = self.vacuum_tables()
        statement = "VACUUM (ANALYZE) " + ", ".join(t["table"] for t in tables)
        return server_vacuum_report("reuse", statement, tables)

    def vacuum_tables(self) -> list[VacuumTableRecord]:
        """The saver's tables with their dead rows' share of the heap: what VACUUM makes
        reusable (not what it gives back to the file system; that takes VACUUM FULL,
        which locks)."""
        found: list[VacuumTableRecord] = []
        for table in self._tables():
            # Live rows counted (issue 46 §3: pg_stat's n_live_tup read 0 for tables that
            # held rows, before autovacuum's first ANALYZE): one scan, less than the
            # VACUUM it plans. Dead rows only the statistics know (docs/json.md).
            named = self.layout.tables.get(table["table"])
            live = table["live_rows"] or 0
            if named is not None:
                counted = self._rows(self._pg.sql.SQL("SELECT count(*) FROM {}").format(named))
                live = int(counted[0][0])
            dead = table["dead_rows"] or 0
            bloat = round(table["table_bytes"] * dead / (live + dead)) if live + dead else 0
            found.append({**table, "live_rows": live, "bloat_estimate_bytes": bloat})
        return found

    def langgraph_saver(self) -> AbstractContextManager[Any]:
        return langgraph_saver(self._spec, self.schema)

    # -- a dump shared between processes (sharing.py) ---------------------------------------
    def reading(self) -> AbstractContextManager[None]:
        return sharing.reading(self)

    def dump_threads(self) -> list[tuple[str, int]] | None:
        return sharing.dump_threads(self)

    def keep_alive(self) -> None:
        sharing.keep_alive(self)

    def shares_reading(self) -> bool:
        return self.exported is not None  # the forks join its snapshot

    def fork(self) -> PostgresStore:
        return sharing.fork(self)

    def writer(self, *, timeout: float | None) -> Writer:
        from ckpt.stores.postgres.writer import PostgresWriter

        return PostgresWriter(self, self._spec, timeout=timeout)

    def encrypted_sample(self) -> tuple[str, bytes] | None:
        # The JSONB bodies and metadata stay plain (format.md §2.7): blobs and writes hold what
        # EncryptedSerializer encrypted.
        tables = [("{bl}", "blob")] if self.layout.has_blobs else []
        if self.layout.has_writes:
            tables.append(("{wr}", "blob"))
        for table, column in tables:
            rows = self._rows(
                self.layout.sql(
                    f"SELECT type, {column} FROM {table} WHERE type LIKE '%%+%%' "
                    f"AND type NOT LIKE 'null+%%' AND {column} IS NOT NULL LIMIT 1"
                )
            )
            for tag, payload in rows:
                return str(tag), bytes(payload)
        return None

    def close(self) -> None:
        self.conn.close()


# -- helpers -----------------------------------------------------------------------------

# The stored (maybe compressed) size first, which costs nothing: 32 KB stored is at most
# ~8 MB of text under pglz or lz4 (at most ~255x), so only larger rows are measured.
_METADATA: Final = (
    f"CASE WHEN pg_column_size(c.metadata) > 32768 "
    f"AND octet_length(c.metadata::text) > {METADATA_LIMIT} "
    f"THEN to_jsonb('{_TOO_LARGE}' || octet_length(c.metadata::text)) ELSE c.metadata END"
)
