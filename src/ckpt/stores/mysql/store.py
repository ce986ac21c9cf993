"""Read the MySQL saver's stores (langgraph-checkpoint-mysql 3.0, format.md §7e), read-only.

PyMySQLSaver keeps PostgresSaver's tables (checkpoints with the checkpoint and metadata as
JSON, checkpoint_blobs, checkpoint_writes, checkpoint_migrations), every key led by
`thread_id` and `checkpoint_ns_hash` = UNHEX(MD5(checkpoint_ns)); so the rows are read here
in MySQL's SQL and assembled by the PostgresSaver layout's code (ckpt.stores.split). Rows
are read one by one, never through the JSON aggregates the saver's own SELECT builds,
which MariaDB cuts at group_concat_max_len (format.md §7e, `ckpt check` says which
threads that breaks).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, Final

import orjson

from ckpt.decoders import undecodable_record
from ckpt.errors import NotACheckpointStore, NotFound
from ckpt.records.model import (
    TASKS,
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    StoreHealth,
    ThreadSummary,
)
from ckpt.records.types import StorageRecord, TableBytesRecord, storage_record
from ckpt.records.vocabulary import FIND_LIMIT
from ckpt.stores.documents import (
    ThreadInfo,
    catalog_count,
    catalog_threads,
    key_order,
    newest_per_namespace,
)
from ckpt.stores.mysql.session import MySQLSession
from ckpt.stores.split import (
    BlobKey,
    Row,
    SplitStore,
    StoredBlob,
    WriteKey,
    WriteRow,
    batched,
    fragment_condition,
    is_legacy,
    version_text,
)

MYSQL_RELEASE: Final = "langgraph-checkpoint-mysql 3.0.0"  # the saver `ckpt check` speaks for
LATEST_MIGRATION: Final = 21  # the last of its MIGRATIONS (22 statements)
TABLES: Final = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
BATCH: Final = 100  # checkpoints loaded per round of statements
THREADS_PER_SCAN: Final = 50  # threads per statement of a raw scan
KEYS_PER_QUERY: Final = 500  # key tuples in one IN list


class MySQLStore(SplitStore):
    """A PyMySQLSaver (or AIOMySQLSaver, AsyncMySQLSaver) database on MySQL 8 or MariaDB."""

    kind = "mysql"
    reclaim = None

    def __init__(
        self, spec: str, *, aes_key: bytes | None = None, timeout: float | None = None
    ) -> None:
        session = MySQLSession(spec, timeout=timeout)
        super().__init__(session.location, aes_key=aes_key)
        self.session = session
        try:
            self.columns = self._columns()
            if "checkpoint_id" not in self.columns.get("checkpoints", set()):
                raise NotACheckpointStore(
                    f"{self.location}: not a MySQL saver database (no checkpoints table with "
                    "a checkpoint_id column)"
                )
            self.hashed = "checkpoint_ns_hash" in self.columns["checkpoints"]
            self.has_blobs = "checkpoint_blobs" in self.columns
            self.has_writes = "checkpoint_writes" in self.columns
            self.task_path = "task_path" in self.columns.get("checkpoint_writes", set())
        except BaseException:
            session.close()
            raise
        self._catalog_cache: dict[str, ThreadInfo] | None = None
        self._aggregate_limit: int | None = None

    def _columns(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for table, column in self.session.rows(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name IN (%s, %s, %s, %s)",
            TABLES,
        ):
            found.setdefault(str(table), set()).add(str(column))
        return found

    def _ns_match(self, alias: str) -> str:
        """A (thread, namespace) filter the saver's keys serve: the namespace's hash."""
        if self.hashed:
            return f"{alias}.checkpoint_ns_hash = UNHEX(MD5(%s))"
        return f"{alias}.checkpoint_ns = %s"

    # -- what it is ------------------------------------------------------------------------
    @property
    def era(self) -> str:
        return "mysql" if self.hashed else "mysql-unhashed"

    @property
    def era_note(self) -> str:
        server = "MariaDB" if self.session.mariadb else "MySQL"
        return (
            f"PyMySQLSaver tables (langgraph-checkpoint-mysql) on {server} {self.session.version}"
        )

    @property
    def copy_target(self) -> bool:
        return False

    @property
    def blob_policy(self) -> str:
        return "updated" if self.has_blobs else "none"

    def _migrations(self) -> list[int] | None:
        if "checkpoint_migrations" not in self.columns:
            return None
        return sorted(int(v) for (v,) in self.session.rows("SELECT v FROM checkpoint_migrations"))

    def saver(self) -> SaverFacts:
        ran = self._migrations()
        newest = max(ran, default=-1) if ran is not None else -1
        rows = (
            "no checkpoint_migrations table"
            if ran is None
            else f"checkpoint_migrations v{min(ran, default=0)}-{newest}"
        )
        if newest > LATEST_MIGRATION:
            langgraph, note = "unknown", f"migration v{newest} is newer than {MYSQL_RELEASE}'s"
        elif newest < LATEST_MIGRATION or not self.hashed:
            langgraph, note = (
                "migrates",
                f"PyMySQLSaver of {MYSQL_RELEASE} reads it after its setup() runs the "
                f"migrations up to v{LATEST_MIGRATION}",
            )
        else:
            langgraph, note = "reads", f"PyMySQLSaver of {MYSQL_RELEASE} reads it as it is"
        if self.session.mariadb:
            note += (
                f"; on MariaDB its reads fail (JSONDecodeError) for a checkpoint whose blobs "
                f"or writes exceed group_concat_max_len ({self.aggregate_limit:,} bytes here)"
            )
        return SaverFacts(
            saver="PyMySQLSaver",
            releases=f"langgraph-checkpoint-mysql (the layout of {MYSQL_RELEASE})",
            evidence=(
                "checkpoints.checkpoint_ns_hash column" if self.hashed else "no checkpoint_ns_hash",
                rows,
                f"{'MariaDB' if self.session.mariadb else 'MySQL'} {self.session.version}",
            ),
            langgraph=langgraph,
            note=note,
        )

    @property
    def aggregate_limit(self) -> int | None:
        """The bytes MariaDB's JSON_ARRAYAGG keeps of one checkpoint's blobs or writes in
        the saver's SELECT (group_concat_max_len, the server's default for its sessions);
        None on MySQL, whose JSON_ARRAYAGG it does not cut."""
        if not self.session.mariadb:
            return None
        if self._aggregate_limit is None:
            (limit,) = self.session.rows("SELECT @@GLOBAL.group_concat_max_len")[0]
            self._aggregate_limit = int(limit)
        return self._aggregate_limit

    # -- statements ------------------------------------------------------------------------
    def _checkpoint_rows(self, where: str, params: Sequence[Any], *, values: bool) -> list[Row]:
        found = []
        for t, ns, cid, parent, text, metadata, size in self.session.rows(
            "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, "
            "c.checkpoint, c.metadata, length(c.checkpoint) + length(c.metadata) "
            f"FROM checkpoints c WHERE {where}",
            params,
        ):
            found.append(_row(t, ns, cid, parent, text, metadata, size, values=values))
        return found

    def _rows_of_thread(self, thread_id: str, *, values: bool) -> list[Row]:
        rows = [
            r
            for r in self._checkpoint_rows("c.thread_id = %s", (thread_id,), values=values)
            if r.thread_id == thread_id  # a case-insensitive collation matches others too
        ]
        rows.sort(key=lambda r: (r.checkpoint_id, r.checkpoint_ns))
        return rows

    def _rows_by_key(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Row]:
        found: dict[CheckpointKey, Row] = {}
        for chunk in batched(list(keys), KEYS_PER_QUERY):
            match = " OR ".join(
                f"(c.thread_id = %s AND {self._ns_match('c')} AND c.checkpoint_id = %s)"
                for _ in chunk
            )
            params = [p for k in chunk for p in (k.thread_id, k.checkpoint_ns, k.checkpoint_id)]
            for row in self._checkpoint_rows(match, params, values=values):
                found[CheckpointKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id)] = row
        return [found[k] for k in keys if k in found]

    def _fetch_blobs(
        self, rows: Sequence[Row], *, values: bool, thread_id: str | None = None
    ) -> dict[BlobKey, StoredBlob]:
        """The blobs the rows' channel versions name, with payloads when `values` (and
        always for __pregel_tasks and join: channels, which `next` needs)."""
        if not self.has_blobs or not rows:
            return {}
        payload = (
            "b.`blob`"
            if values
            else "CASE WHEN b.channel = %s OR b.channel LIKE 'join:%%' THEN b.`blob` END"
        )
        select = (
            "SELECT b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, "
            f"coalesce(length(b.`blob`), 0), {payload} FROM checkpoint_blobs b WHERE "
        )
        head: list[Any] = [] if values else [TASKS]
        found: dict[BlobKey, StoredBlob] = {}
        wanted = {key for row in rows for _, key in self._row_blob_keys(row)}

        def collect(result: list[tuple[Any, ...]]) -> None:
            for t, ns, channel, version, tag, size, data in result:
                key = (t, ns, channel, version)
                if key in wanted:
                    found[key] = StoredBlob(version, tag, int(size), data)

        if thread_id is not None:
            collect(self.session.rows(select + "b.thread_id = %s", [*head, thread_id]))
            return found
        for chunk in batched(sorted(wanted), KEYS_PER_QUERY):
            match = " OR ".join(
                f"(b.thread_id = %s AND {self._ns_match('b')} AND b.channel = %s "
                "AND b.version = %s)"
                for _ in chunk
            )
            collect(self.session.rows(select + match, [*head, *(p for k in chunk for p in k)]))
        return found

    def _fetch_writes(
        self, rows: Sequence[Row], *, thread_id: str | None = None
    ) -> dict[WriteKey, list[WriteRow]] | None:
        """The rows' pending writes, and the __pregel_tasks writes of v<4 rows' parents
        (where the saver finds their Sends, as PostgresSaver does)."""
        if not self.has_writes:
            return None
        path = "w.task_path" if self.task_path else "''"
        select = (
            f"SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, {path}, w.idx, "
            "w.channel, w.type, w.`blob`, coalesce(length(w.`blob`), 0) "
            "FROM checkpoint_writes w WHERE "
        )
        found: dict[WriteKey, list[WriteRow]] = {}
        own = {(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in rows}
        parents = {
            (r.thread_id, r.checkpoint_ns, r.parent_checkpoint_id)
            for r in rows
            if r.parent_checkpoint_id and is_legacy(r.body)
        }

        def collect(result: list[tuple[Any, ...]]) -> None:
            for t, ns, cid, task_id, task_path, idx, channel, tag, blob, size in result:
                key = (t, ns, cid)
                if key in own or (key in parents and channel == TASKS):
                    found.setdefault(key, []).append(
                        WriteRow(task_id, task_path or "", int(idx), channel, tag, blob, int(size))
                    )

        if thread_id is not None:
            collect(self.session.rows(select + "w.thread_id = %s", (thread_id,)))
            return found
        for chunk in batched(sorted(own | parents), KEYS_PER_QUERY):
            match = " OR ".join(
                f"(w.thread_id = %s AND {self._ns_match('w')} AND w.checkpoint_id = %s)"
                for _ in chunk
            )
            collect(self.session.rows(select + match, [p for k in chunk for p in k]))
        return found

    def _hydrate(
        self, rows: Sequence[Row], *, values: bool, thread_id: str | None = None
    ) -> list[Checkpoint]:
        blobs = self._fetch_blobs(rows, values=values, thread_id=thread_id)
        writes = self._fetch_writes(rows, thread_id=thread_id)
        payloads = {k: b.payload for k, b in blobs.items()} if values else {}
        return [self._build(row, blobs, payloads, writes, {}, values=values) for row in rows]

    # -- listing ---------------------------------------------------------------------------
    def _catalog(self) -> dict[str, ThreadInfo]:
        """Every thread's count, namespaces and newest root id, from the key columns."""
        if self._catalog_cache is None:
            threads: dict[str, ThreadInfo] = {}
            for thread_id, ns, checkpoint_id in self.session.rows(
                "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints"
            ):
                info = threads.get(thread_id)
                if info is None:
                    info = threads[thread_id] = ThreadInfo()
                info.add(CheckpointKey(thread_id, ns, checkpoint_id))
            self._catalog_cache = threads
        return self._catalog_cache

    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        catalog = self._catalog()
        measured = self.sizes(DumpQuery()) if sizes else {}
        load = partial(self.load_many, values=False)
        yield from catalog_threads(catalog, measured, load, sizes=sizes, batch=BATCH * 5)

    def thread_exists(self, thread_id: str) -> bool:
        return any(
            t == thread_id
            for (t,) in self.session.rows(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id = %s", (thread_id,)
            )
        )

    def thread_ids(self) -> list[str]:
        return sorted(self._catalog())

    def namespaces(self, thread_id: str) -> list[str]:
        return sorted(
            {
                str(ns)
                for t, ns in self.session.rows(
                    "SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints "
                    "WHERE thread_id = %s",
                    (thread_id,),
                )
                if t == thread_id
            }
        )

    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        rows = self._rows_of_thread(thread_id, values=values)
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        return self._hydrate(rows, values=values, thread_id=thread_id)

    def iter_thread(self, thread_id: str) -> Iterator[Checkpoint]:
        rows = self._rows_of_thread(thread_id, values=False)
        for chunk in batched(rows, BATCH):
            yield from self._hydrate(chunk, values=False)

    # -- finding ---------------------------------------------------------------------------
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        condition, params = fragment_condition(fragment, "checkpoint_id", "thread_id", thread_id)
        rows = self.session.rows(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            f"WHERE {condition} LIMIT {FIND_LIMIT}",
            params,
        )
        return sorted(
            (
                CheckpointKey(*row)
                for row in rows
                if (thread_id is None or row[0] == thread_id)
                and (row[2].startswith(fragment) or row[2].endswith(fragment))
            ),
            key=key_order,
        )

    def find_exact(self, checkpoint_id: str) -> list[CheckpointKey]:
        # The saver indexes checkpoint_id alone (checkpoints_checkpoint_id_idx).
        rows = self.session.rows(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            "WHERE checkpoint_id = %s",
            (checkpoint_id,),
        )
        return sorted(
            (CheckpointKey(*row) for row in rows if row[2] == checkpoint_id), key=key_order
        )

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        # As the saver's get_tuple picks it: ORDER BY checkpoint_id DESC LIMIT 1.
        rows = self.session.rows(
            "SELECT thread_id, checkpoint_id FROM checkpoints "
            f"WHERE thread_id = %s AND {self._ns_match('checkpoints')} "
            "ORDER BY checkpoint_id DESC",
            (thread_id, checkpoint_ns),
        )
        ids = [cid for t, cid in rows if t == thread_id]
        return CheckpointKey(thread_id, checkpoint_ns, ids[0]) if ids else None

    # -- loading ---------------------------------------------------------------------------
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        found = self.load_many([key], values=values)
        if not found:
            raise NotFound(f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}")
        return found[0]

    def load_many(self, keys: Sequence[CheckpointKey], *, values: bool = True) -> list[Checkpoint]:
        found: list[Checkpoint] = []
        for chunk in batched(list(keys), BATCH):
            found.extend(self._hydrate(self._rows_by_key(chunk, values=values), values=values))
        return found

    def _selected_keys(self, query: DumpQuery) -> Iterator[list[CheckpointKey]]:
        """The query's checkpoint keys, a thread at a time, in (thread, ns, id) order."""
        catalog = self._catalog()
        thread_ids = (
            sorted(set(query.thread_ids) & set(catalog)) if query.thread_ids else sorted(catalog)
        )
        for thread_id in thread_ids:
            where = "thread_id = %s"
            params: list[Any] = [thread_id]
            if query.checkpoint_ns is not None:
                where += f" AND {self._ns_match('checkpoints')}"
                params.append(query.checkpoint_ns)
            keys = sorted(
                (
                    CheckpointKey(*row)
                    for row in self.session.rows(
                        "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                        f"WHERE {where}",
                        params,
                    )
                    if row[0] == thread_id
                    and (query.since_id is None or row[2] >= query.since_id)
                    and (query.until_id is None or row[2] <= query.until_id)
                ),
                key=lambda k: (k.checkpoint_ns, k.checkpoint_id),
            )
            if query.latest_only:
                keys = newest_per_namespace(keys)
            if keys:
                yield keys

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        return catalog_count(self._catalog(), query)

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        for keys in self._selected_keys(query):
            for chunk in batched(keys, BATCH):
                yield from self.load_many(chunk, values=values)

    # -- sizes, storage, health ------------------------------------------------------------
    def storage(self) -> StorageRecord:
        tables: list[TableBytesRecord] = []
        for name, data, index, rows in self.session.rows(
            "SELECT table_name, data_length, index_length, table_rows "
            "FROM information_schema.tables WHERE table_schema = DATABASE() "
            "AND table_name IN (%s, %s, %s, %s) ORDER BY table_name",
            TABLES,
        ):
            tables.append(
                {
                    "table": str(name),
                    "total_bytes": int(data or 0) + int(index or 0),
                    "table_bytes": int(data or 0),
                    "index_bytes": int(index or 0),
                    "toast_bytes": None,
                    "rows_estimate": int(rows) if rows is not None else None,
                    "live_rows": None,
                    "dead_rows": None,
                }
            )
        return storage_record(sum(t["total_bytes"] for t in tables), tables=tables)

    def health(self, query: DumpQuery) -> StoreHealth:
        health = StoreHealth()
        selected = DumpQuery(thread_ids=query.thread_ids)
        ids: dict[tuple[str, str], set[str]] = {}
        parents: list[tuple[CheckpointKey, str]] = []
        used: set[tuple[str, str, str, str]] = set()
        for row in self.raw_checkpoints(selected, data=False):
            ids.setdefault((row.thread_id, row.checkpoint_ns), set()).add(row.checkpoint_id)
            key = CheckpointKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id)
            if row.parent_checkpoint_id:
                parents.append((key, row.parent_checkpoint_id))
            for channel, version in (row.channel_versions or {}).items():
                used.add((row.thread_id, row.checkpoint_ns, channel, version))
        oldest = {pair: min(found) for pair, found in ids.items()}
        missing = [
            key
            for key, parent in parents
            if parent not in ids.get((key.thread_id, key.checkpoint_ns), set())
        ]
        health.missing_parents = len(missing)
        health.missing_parent_threads = len({k.thread_id for k in missing})
        health.missing_parent_oldest = sum(
            1 for k in missing if k.checkpoint_id == oldest[(k.thread_id, k.checkpoint_ns)]
        )
        health.missing_parent_examples = sorted(missing, key=key_order)[:5]
        orphans = [
            CheckpointKey(w.thread_id, w.checkpoint_ns, w.checkpoint_id)
            for w in self.raw_writes(selected, data=False)
            if w.checkpoint_id not in ids.get((w.thread_id, w.checkpoint_ns), set())
        ]
        health.orphan_writes = len(orphans)
        health.orphan_write_threads = len({k.thread_id for k in orphans})
        health.orphan_write_examples = sorted(set(orphans), key=key_order)[:5]
        if self.has_blobs:
            count = size = 0
            for blob in self.raw_blobs(selected, data=False):
                if (
                    blob.thread_id,
                    blob.checkpoint_ns,
                    blob.channel,
                    blob.version or "",
                ) not in used:
                    count, size = count + 1, size + blob.size
            health.orphan_blobs, health.orphan_blob_bytes = count, size
        health.namespaces = sorted(ids)
        return health

    # -- raw scans -------------------------------------------------------------------------
    def _scan_threads(self, query: DumpQuery) -> Iterator[list[str]]:
        """The threads a raw scan covers, a statement's worth at a time, in Python order
        (the writes' and blobs' threads too: rows whose checkpoints are gone)."""
        if query.thread_ids:
            wanted = sorted(set(query.thread_ids))
        else:
            found = set(self._catalog())
            for table in ("checkpoint_writes", "checkpoint_blobs"):
                if table in self.columns:
                    found.update(
                        t for (t,) in self.session.rows(f"SELECT DISTINCT thread_id FROM {table}")
                    )
            wanted = sorted(found)
        for chunk in batched(wanted, THREADS_PER_SCAN):
            yield list(chunk)

    def _scan_where(
        self, threads: list[str], query: DumpQuery, alias: str, *, ids: bool
    ) -> tuple[str, list[Any]]:
        where = [f"{alias}.thread_id IN ({', '.join(['%s'] * len(threads))})"]
        params: list[Any] = list(threads)
        if query.checkpoint_ns is not None:
            where.append(self._ns_match(alias))
            params.append(query.checkpoint_ns)
        if ids:
            bounds, bound_params = query.id_bounds(f"{alias}.checkpoint_id")
            where += bounds
            params += bound_params
        return " AND ".join(where), params

    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        body = "c.checkpoint, c.metadata" if data else "NULL, NULL"
        for threads in self._scan_threads(query):
            where, params = self._scan_where(threads, query, "c", ids=True)
            rows = self.session.rows(
                "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, "
                f"{body}, length(c.checkpoint), length(c.metadata), "
                "json_extract(c.checkpoint, '$.channel_versions') "
                f"FROM checkpoints c WHERE {where}",
                params,
            )
            wanted = set(threads)
            rows = [r for r in rows if r[0] in wanted]
            rows.sort(key=lambda r: (r[0], r[1], r[2]))
            for t, ns, cid, parent, text, metadata, body_n, meta_n, stored in rows:
                yield RawCheckpoint(
                    thread_id=t,
                    checkpoint_ns=ns,
                    checkpoint_id=cid,
                    parent_checkpoint_id=parent or None,
                    type="jsonb",
                    body=_utf8(text),
                    metadata_type="jsonb",
                    metadata=_utf8(metadata),
                    body_size=int(body_n or 0),
                    metadata_size=int(meta_n or 0),
                    channel_versions=_channel_versions(stored),
                )

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        if not self.has_blobs:
            return
        payload = "b.`blob`" if data else "NULL"
        for threads in self._scan_threads(query):
            where, params = self._scan_where(threads, query, "b", ids=False)
            rows = self.session.rows(
                "SELECT b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, "
                f"{payload}, coalesce(length(b.`blob`), 0) FROM checkpoint_blobs b WHERE {where}",
                params,
            )
            wanted = set(threads)
            rows = [r for r in rows if r[0] in wanted]
            rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
            yield from map(RawBlob.from_row, rows)

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        if not self.has_writes:
            return
        payload = "w.`blob`" if data else "NULL"
        path = "w.task_path" if self.task_path else "''"
        for threads in self._scan_threads(query):
            where, params = self._scan_where(threads, query, "w", ids=True)
            rows = self.session.rows(
                "SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, "
                f"w.channel, w.type, {payload}, coalesce(length(w.`blob`), 0), {path} "
                f"FROM checkpoint_writes w WHERE {where}",
                params,
            )
            wanted = set(threads)
            rows = [r for r in rows if r[0] in wanted]
            rows.sort(key=lambda r: (r[0], r[1], r[2], r[3], r[4]))
            yield from map(RawWrite.from_row, rows)

    def encrypted_sample(self) -> tuple[str, bytes] | None:
        for table in ("checkpoint_blobs", "checkpoint_writes"):
            if table not in self.columns:
                continue
            for tag, payload in self.session.rows(
                f"SELECT type, `blob` FROM {table} WHERE type LIKE '%%+%%' "
                "AND type NOT LIKE 'null+%%' AND `blob` IS NOT NULL LIMIT 1"
            ):
                return str(tag), bytes(payload)
        return None

    def close(self) -> None:
        self.session.close()


# -- helpers -----------------------------------------------------------------------------


def _utf8(text: Any) -> bytes:
    if text is None:
        return b""
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)


def _json(text: Any) -> Any:
    data = _utf8(text)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return undecodable_record(data, f"invalid JSON: {exc}", tag="json")


def _row(
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent: str | None,
    text: Any,
    metadata: Any,
    size: Any,
    *,
    values: bool,
) -> Row:
    body = _json(text)
    inline_keys: list[str] | None = None
    if not values and isinstance(body, dict) and "channel_values" in body:
        inline = body.pop("channel_values")
        inline_keys = list(inline) if isinstance(inline, dict) else None
    return Row(
        thread_id,
        ns,
        checkpoint_id,
        parent or None,
        body,
        _json(metadata) if metadata is not None else {},
        int(size or 0),
        inline_keys,
    )


def _channel_versions(stored: Any) -> dict[str, str]:
    found = _json(stored) if stored is not None else None
    return {
        str(channel): text
        for channel, version in (found.items() if isinstance(found, dict) else ())
        if (text := version_text(version)) is not None
    }
