"""MongoDBSaver stores (langgraph-checkpoint-mongodb 0.5, format.md §7c), read-only.

Database `checkpointing_db` (the URL's path names another), collections `checkpoints` and
`checkpoint_writes`. A checkpoint document holds the ids, `type` and `checkpoint` (the
serialized checkpoint, values inline) and `metadata`, a document whose leaves are
`[type, bytes]` pairs; a write holds the ids, `task_id`, `task_path`, `idx`, `channel`,
`type` and `value`. ckpt asks only plain `find`s (filters with `$eq`, `$ne`, ranges,
`$in` and `$nin`, a projection) and `$group`s, never creates an index or a database, and
never instantiates MongoDBSaver, whose constructor creates its indexes.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ckpt.decoders import undecodable_record
from ckpt.errors import (
    BadOption,
    DecodeError,
    MissingDependency,
    NotACheckpointStore,
    StoreUnreadable,
)
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    ThreadBytes,
)
from ckpt.records.plans import CheckpointRow, ThreadRows, WriteRow
from ckpt.records.types import (
    CollectionRecord,
    StorageRecord,
    VacuumReport,
    VacuumTableRecord,
    server_vacuum_report,
    storage_record,
)
from ckpt.records.vocabulary import DEFAULT_TIMEOUT, FIND_LIMIT, install_hint
from ckpt.stores.base import Writer, close_quietly
from ckpt.stores.body import decode_metadata, decode_value, sort_writes
from ckpt.stores.documents import (
    BATCH,
    DocumentStore,
    Kept,
    ThreadInfo,
    WriteFields,
    key_order,
    parent_id,
    serde_tag,
)
from ckpt.stores.location import redact_url

if TYPE_CHECKING:
    from pymongo.collection import Collection


DATABASE: Final = "checkpointing_db"
CHECKPOINTS: Final = "checkpoints"
WRITES: Final = "checkpoint_writes"
_KEY_FIELDS: Final = {"thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "_id": 0}
_KEY_FIELDS_WITH_ID: Final = {"thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1}
_GROUP_CHECKPOINTS: Final = 5_000  # checkpoints whose writes raw_writes finds at once
# Whole threads are read with one find over the range of their ids, about RUN_ROWS
# checkpoints a find (by the catalog's counts), not their keys first and then their
# documents by key: a server answers the listing by reading the documents too. A thread of
# more than BIG_THREAD checkpoints is read by its keys, BATCH at a time (memory stays flat).
RUN_ROWS: Final = 500
BIG_THREAD: Final = 5_000


def _names_thread(value: Any, thread_id: str) -> bool:
    """Whether a document's `thread_id` matches `{"$eq": thread_id}` (an array does when it
    holds it)."""
    return value == thread_id or (isinstance(value, list) and thread_id in value)


def _named_threads(value: Any, threads: dict[str, Any]) -> list[str]:
    """Which of `threads` a document's `thread_id` matches as `$eq` does."""
    if isinstance(value, str):
        return [value] if value in threads else []
    if isinstance(value, list):
        return [t for t in dict.fromkeys(v for v in value if isinstance(v, str)) if t in threads]
    return []


def _import_pymongo() -> Any:
    try:
        import pymongo
        import pymongo.errors
    except ImportError:
        raise MissingDependency(
            f"reading a MongoDB store needs pymongo: {install_hint('mongodb')}"
        ) from None
    return pymongo


class MongoStore(DocumentStore):
    kind = "mongodb"
    label = "MongoDB"
    reclaim = "compact"
    counted_versions = True
    # Checked with LangGraph: a MongoDBSaver thread copied into SqliteSaver as it is reads
    # back the same, then fails to resume (TypeError comparing str and int).
    int_versions_saver = "MongoDBSaver"

    def __init__(
        self,
        spec: str,
        *,
        aes_key: bytes | None = None,
        timeout: float | None = None,
        collections: str | None = None,
        database: str | None = None,
    ) -> None:
        super().__init__(redact_url(spec), aes_key=aes_key)
        # Per thread, the key fields (and _id) of its checkpoint documents whose namespace or
        # id is not a string: MongoDBSaver lists them (by thread), ckpt keys them by neither.
        self._odd_docs: dict[str, list[dict[str, Any]]] = {}
        # The write keys of the threads whose writes were read last (in one_pass): what
        # `health` then lists for the same threads.
        self._kept_write_keys: Kept[CheckpointKey] = Kept()
        self.pymongo = _import_pymongo()
        seconds = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        self.timeout = seconds
        try:
            # pymongo warns on stderr of options it does not know: one line is ckpt's.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.client: Any = self.pymongo.MongoClient(
                    spec,
                    serverSelectionTimeoutMS=int(seconds * 1000),
                    connectTimeoutMS=int(seconds * 1000),
                    # Per round trip (a batch of a cursor), as Postgres's statement timeout:
                    # not timeoutMS, which would bound a whole listing of a large store.
                    socketTimeoutMS=int(seconds * 1000),
                    appname="ckpt",
                    retryReads=False,
                )
        except (self.pymongo.errors.PyMongoError, ValueError, TypeError) as exc:
            raise StoreUnreadable(f"{self.location}: not a valid MongoDB URL ({exc})") from None
        try:
            default = database or self.client.get_default_database(default=DATABASE).name
            # "--prefix CHECKPOINTS[,WRITES]": MongoDBSaver's collection names.
            given, _, given_writes = (collections or "").partition(",")
            self.checkpoints_name = given or CHECKPOINTS
            self.writes_name = given_writes or (WRITES if not given else f"{given}_writes")
            names = self._database_names()
            # Reading a database that is not there creates it on some servers: never.
            if names is not None and default not in names:
                raise NotACheckpointStore(
                    f"{self.location}: no database {default!r} on this server (MongoDBSaver's "
                    f"default is {DATABASE!r}; name another in the URL's path)"
                )
            db = self.client[default]
            with self._errors("cannot list the collections"):
                collections_there = set(db.list_collection_names())
            if self.checkpoints_name not in collections_there:
                raise NotACheckpointStore(
                    f"{self.location}: not a MongoDBSaver store (database {default!r} has no "
                    f"{self.checkpoints_name!r} collection)"
                )
            self.database = default
            from ckpt.stores.mongo.target import identity_of

            self.identity = identity_of(spec, default, (self.checkpoints_name, self.writes_name))
            self.checkpoints_coll: Collection[dict[str, Any]] = db[self.checkpoints_name]
            self.writes_coll: Collection[dict[str, Any]] | None = (
                db[self.writes_name] if self.writes_name in collections_there else None
            )
        except BaseException:
            self.client.close()
            raise

    def _database_names(self) -> list[str] | None:
        """The server's databases; None for a user who may not list them (a role on one
        database only): then the collections of the named one are all ckpt can check."""
        errors = self.pymongo.errors
        with self._errors("cannot connect"):
            try:
                names: list[str] = self.client.list_database_names()
            except errors.OperationFailure as exc:
                if exc.code != 13:  # Unauthorized
                    raise
                return None
        return names

    def _errors(self, doing: str = "cannot read") -> AbstractContextManager[None]:
        return mongo_errors(self.pymongo, self.location, self.timeout, doing)

    def _find(
        self, collection: Collection[dict[str, Any]], query: dict[str, Any], projection: Any = None
    ) -> Iterator[dict[str, Any]]:
        with self._errors():
            yield from collection.find(query, projection, batch_size=1000)

    @property
    def copy_target(self) -> bool:
        return True

    @property
    def era(self) -> str:
        return "mongodb"

    @property
    def era_note(self) -> str:
        return (
            f"MongoDBSaver (langgraph-checkpoint-mongodb) database {self.database!r}, "
            f"collections {self.checkpoints_name!r} and {self.writes_name!r}"
        )

    def saver(self) -> SaverFacts:
        return SaverFacts(
            saver="MongoDBSaver",
            releases="langgraph-checkpoint-mongodb (the layout of 0.5.1)",
            evidence=(
                f"collections {self.checkpoints_name!r} and {self.writes_name!r} in "
                f"database {self.database!r}",
            ),
            langgraph="reads",
            note="MongoDBSaver of langgraph-checkpoint-mongodb 0.5.1 reads it",
        )

    # -- listing ---------------------------------------------------------------------------
    def _read_catalog(self) -> dict[str, ThreadInfo]:
        """Every thread's count, namespaces and newest root id, counted by the server: two
        `$group`s on one field and a find of the subgraph checkpoints' key fields. (A find
        of every checkpoint would do, but a server may build it whole before answering.)"""
        threads: dict[str, ThreadInfo] = {}
        counts: list[dict[str, Any]] = [{"$group": {"_id": "$thread_id", "n": {"$sum": 1}}}]
        for row in self._aggregate(self.checkpoints_coll, counts):
            thread_id, n = row.get("_id"), row.get("n")
            if isinstance(thread_id, str) and type(n) is int:
                threads[thread_id] = ThreadInfo(checkpoints=n)
        roots: list[dict[str, Any]] = [
            {"$match": {"checkpoint_ns": {"$eq": ""}}},
            {"$group": {"_id": "$thread_id", "latest": {"$max": "$checkpoint_id"}}},
        ]
        for row in self._aggregate(self.checkpoints_coll, roots):
            thread_id, latest = row.get("_id"), row.get("latest")
            info = threads.get(thread_id) if isinstance(thread_id, str) else None
            if info is not None and isinstance(latest, str):
                info.root = True
                info.latest_root = latest
        subgraphs = {"checkpoint_ns": {"$ne": ""}}
        for doc in self._find(self.checkpoints_coll, subgraphs, _KEY_FIELDS):
            key = _key(doc)
            info = threads.get(key.thread_id) if key is not None else None
            if key is not None and info is not None:
                if info.subgraphs is None:
                    info.subgraphs = set()
                info.subgraphs.add(key.checkpoint_ns)
        return threads

    def _aggregate(
        self, collection: Collection[dict[str, Any]], pipeline: list[dict[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        with self._errors():
            yield from collection.aggregate(pipeline, batchSize=1000)

    def thread_exists(self, thread_id: str) -> bool:
        if self._catalog_cache is not None:
            return thread_id in self._catalog_cache
        with self._errors():
            return (
                self.checkpoints_coll.find_one({"thread_id": {"$eq": thread_id}}, _KEY_FIELDS)
                is not None
            )

    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        keys: list[CheckpointKey] = []
        odd: list[dict[str, Any]] = []
        query = {"thread_id": {"$eq": thread_id}}
        for doc in self._find(self.checkpoints_coll, query, _KEY_FIELDS_WITH_ID):
            key = _key(doc)
            if key is not None:
                keys.append(key)
            else:
                odd.append(doc)
        if odd:
            self._odd_docs[thread_id] = odd
        else:
            self._odd_docs.pop(thread_id, None)
        keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
        return keys

    def _threads_keys(self, thread_ids: list[str]) -> Iterator[tuple[str, list[CheckpointKey]]]:
        """`_thread_keys` of a run of threads at a time: one find of the key fields over the
        range of their ids on the saver's index, not one per thread."""
        for start in range(0, len(thread_ids), BATCH):
            run = thread_ids[start : start + BATCH]
            found: dict[str, tuple[list[CheckpointKey], list[dict[str, Any]]]] = {
                t: ([], []) for t in run
            }
            query = {"thread_id": {"$gte": run[0], "$lte": run[-1]}}
            for doc in self._find(self.checkpoints_coll, query, _KEY_FIELDS_WITH_ID):
                for thread_id in _named_threads(doc.get("thread_id"), found):
                    keys, odd = found[thread_id]
                    key = _key(doc)
                    if key is not None and key.thread_id == thread_id:
                        keys.append(key)
                    elif key is None:
                        odd.append(doc)
            for thread_id in run:
                keys, odd = found.pop(thread_id)
                if odd:
                    self._odd_docs[thread_id] = odd
                else:
                    self._odd_docs.pop(thread_id, None)
                keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
                yield thread_id, keys

    def find_exact(self, checkpoint_id: str) -> list[CheckpointKey]:
        # The server filters: not every checkpoint's key fields sent to be compared here.
        query = {"checkpoint_id": {"$eq": checkpoint_id}}
        found = [
            key
            for doc in self._find(self.checkpoints_coll, query, _KEY_FIELDS)
            if (key := _key(doc)) is not None and key.checkpoint_id == checkpoint_id
        ]
        return sorted(found, key=key_order)[:FIND_LIMIT]

    def _all_keys(self) -> Iterator[CheckpointKey]:
        for doc in self._find(self.checkpoints_coll, {}, _KEY_FIELDS):
            if (key := _key(doc)) is not None:
                yield key

    # -- loading ---------------------------------------------------------------------------
    def _by_keys(
        self, collection: Collection[dict[str, Any]], keys: Sequence[CheckpointKey]
    ) -> Iterator[dict[str, Any]]:
        """The documents of these checkpoints (a superset, filtered by the caller): one find
        over the range of their threads on the saver's unique index, by checkpoint id. (A
        range, not `$in` on thread_id, which a server may answer by reading every row.)"""
        threads = sorted({k.thread_id for k in keys})
        ids = sorted({k.checkpoint_id for k in keys})
        query = {
            "thread_id": {"$gte": threads[0], "$lte": threads[-1]},
            "checkpoint_id": {"$in": ids},
        }
        yield from self._find(collection, query)

    def _load_keys(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Checkpoint]:
        """The checkpoints at `keys`, in that order, with their writes; missing ones left out
        (two finds for any number)."""
        if not keys:
            return []
        wanted = set(keys)
        docs: dict[CheckpointKey, dict[str, Any]] = {}
        for doc in self._by_keys(self.checkpoints_coll, keys):
            key = _key(doc)
            if key is not None and key in wanted:
                docs[key] = doc
        write_docs: Iterable[dict[str, Any]] = ()
        if self.writes_coll is not None and docs:
            write_docs = self._by_keys(self.writes_coll, list(docs))
        return list(self._built(keys, docs, write_docs, values=values))

    def _built(
        self,
        keys: Iterable[CheckpointKey],
        docs: dict[CheckpointKey, dict[str, Any]],
        write_docs: Iterable[dict[str, Any]],
        *,
        values: bool,
    ) -> Iterator[Checkpoint]:
        """The checkpoints at `keys` that `docs` holds, one at a time, with their writes
        among `write_docs` (read first: those of other checkpoints are left out)."""
        writes: dict[CheckpointKey, list[PendingWrite]] = {}
        for doc in write_docs:
            key = _key(doc)
            if key is not None and key in docs:
                writes.setdefault(key, []).append(self._write(_write_fields(doc)))
        for key in keys:
            if key in docs:
                yield self._build(key, docs[key], sort_writes(writes.get(key, [])), values=values)

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        runs = self._runs(query)
        if runs is None:
            yield from super().iter_checkpoints(query, values=values)
            return
        for run, whole in runs:
            if not whole:
                yield from super().iter_checkpoints(DumpQuery(thread_ids=tuple(run)), values=values)
                continue
            keys: list[CheckpointKey] = []
            docs: dict[CheckpointKey, dict[str, Any]] = {}
            for _, keyed, _ in self._run_docs(run):
                for key, doc in keyed:
                    keys.append(key)
                    docs[key] = doc
            write_docs: Iterable[dict[str, Any]] = ()
            if self.writes_coll is not None and docs:
                write_docs = list(self._find(self.writes_coll, _thread_range(run)))
            yield from self._built(keys, docs, write_docs, values=values)

    def _runs(self, query: DumpQuery) -> list[tuple[list[str], bool]] | None:
        """The query's threads in runs, each read whole by one find (True), or a big
        thread alone, read by its keys (False); None for a query that takes part of a
        thread (a namespace, ids, the latest only): read by keys."""
        if (
            query.checkpoint_ns is not None
            or query.since_id is not None
            or query.until_id is not None
            or query.latest_only
        ):
            return None
        catalog = self._catalog()
        thread_ids = sorted(set(query.thread_ids)) if query.thread_ids else sorted(catalog)
        runs: list[tuple[list[str], bool]] = []
        run: list[str] = []
        rows = 0
        for thread_id in thread_ids:
            info = catalog.get(thread_id)
            count = info.checkpoints if info is not None else 0
            if count > BIG_THREAD:
                if run:
                    runs.append((run, True))
                    run, rows = [], 0
                runs.append(([thread_id], False))
                continue
            run.append(thread_id)
            rows += count
            if rows >= RUN_ROWS:
                runs.append((run, True))
                run, rows = [], 0
        if run:
            runs.append((run, True))
        return runs

    def _run_docs(
        self, run: list[str]
    ) -> Iterator[tuple[str, list[tuple[CheckpointKey, dict[str, Any]]], list[dict[str, Any]]]]:
        """Each thread of `run` (sorted) that has checkpoints, with its documents by key
        in (namespace, id) order and those whose key fields are not strings: one find over
        the range of their ids, as `_threads_keys` lists them (their keys kept in
        one_pass, for the writes and `health`)."""
        found: dict[str, tuple[list[CheckpointKey], dict[CheckpointKey, Any], list[Any]]] = {
            t: ([], {}, []) for t in run
        }
        for doc in self._find(self.checkpoints_coll, _thread_range(run)):
            for thread_id in _named_threads(doc.get("thread_id"), found):
                keys, docs, odd = found[thread_id]
                key = _key(doc)
                if key is not None and key.thread_id == thread_id:
                    keys.append(key)
                    docs[key] = doc
                elif key is None:
                    odd.append(doc)
        for thread_id in run:
            keys, docs, odd = found.pop(thread_id)
            keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
            if self._keeping:
                self._kept_keys.put(thread_id, keys)
            if keys:
                yield thread_id, [(k, docs[k]) for k in sorted(keys, key=key_order)], odd

    def _write(self, raw: WriteFields) -> PendingWrite:
        return raw.pending(decode_value(raw.type, raw.data, self.aes_key))

    def _build(
        self, key: CheckpointKey, doc: dict[str, Any], writes: list[PendingWrite], *, values: bool
    ) -> Checkpoint:
        body = _bytes(doc.get("checkpoint")) or b""
        metadata_doc = doc.get("metadata")
        return self._checkpoint(
            key,
            parent_id(doc),
            serde_tag(doc),
            body,
            self._metadata(metadata_doc),
            writes,
            values=values,
            size=len(body) + _metadata_size(metadata_doc),
        )

    def _metadata(self, raw: Any) -> dict[str, Any]:
        """MongoDBSaver's metadata: a document whose leaves are serde `[type, bytes]` pairs
        (`parents` a nested document of them)."""
        data = _bytes(raw)
        if data is not None:  # LangGraph.js's MongoDBSaver: its JSON text, as binary
            return decode_metadata(data)
        if not isinstance(raw, dict):
            return {} if raw is None else {"value": str(raw)}
        return {str(k): self._metadata_value(v) for k, v in raw.items()}

    def _metadata_value(self, value: Any) -> Any:
        if (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], str)
            and _bytes(value[1]) is not None
        ):
            try:
                return decode_value(value[0], _bytes(value[1]), self.aes_key)
            except DecodeError as exc:
                return undecodable_record(_bytes(value[1]), str(exc), tag=value[0])
        if isinstance(value, dict):
            return {str(k): self._metadata_value(v) for k, v in value.items()}
        return value

    # -- sizes, storage, health ------------------------------------------------------------
    sizes_from_rows = True

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        found: dict[str, ThreadBytes] = {}
        for row in self.raw_checkpoints(query, data=False):
            measured = found.setdefault(row.thread_id, ThreadBytes())
            measured.checkpoints += 1
            measured.checkpoint_bytes += row.body_size + row.metadata_size
        for write in self.raw_writes(query, data=False):
            measured = found.setdefault(write.thread_id, ThreadBytes())
            measured.writes += 1
            measured.write_bytes += write.size
        return found

    def _collection_stats(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """collStats of the saver's two collections, each one the server answers for
        (a missing writes collection is left out)."""
        db = self.client[self.database]
        for name in (self.checkpoints_name, self.writes_name):
            try:
                with self._errors():
                    stats = db.command("collStats", name)
            except StoreUnreadable:
                continue
            yield name, stats

    def storage(self) -> StorageRecord:
        db = self.client[self.database]
        collections: list[CollectionRecord] = []
        for name, stats in self._collection_stats():
            collections.append(
                {
                    "collection": name,
                    "documents": int(stats.get("count", 0)),
                    "bytes": int(stats.get("size", 0)),
                    "storage_bytes": int(stats.get("storageSize", 0)),
                }
            )
        with self._errors():
            others = sorted(
                set(db.list_collection_names()) - {self.checkpoints_name, self.writes_name}
            )
        return storage_record(
            sum(c["storage_bytes"] or c["bytes"] for c in collections),
            database=self.database,
            collections=collections,
            other_collections=others,  # not the saver's: listed, never read
        )

    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        fields = {**_KEY_FIELDS, "parent_checkpoint_id": 1}
        query = {"thread_id": {"$eq": keys[0].thread_id}}
        return {
            key: parent if isinstance(parent := doc.get("parent_checkpoint_id"), str) else None
            for doc in self._find(self.checkpoints_coll, query, fields)
            if (key := _key(doc)) is not None
        }

    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        if self.writes_coll is None:
            return []
        query = {"thread_id": {"$eq": thread_id}}
        return [
            key
            for doc in self._find(self.writes_coll, query, _KEY_FIELDS)
            if (key := _key(doc)) is not None
        ]

    def _threads_write_keys(self, thread_ids: list[str]) -> dict[str, list[CheckpointKey]]:
        """`_write_keys` of a run of threads in one find over their range on the saver's
        index (as raw_writes), not one for each thread."""
        found: dict[str, list[CheckpointKey]] = {t: [] for t in thread_ids}
        if self.writes_coll is None or not thread_ids:
            return found
        kept = {t: keys for t in thread_ids if (keys := self._kept_write_keys.get(t)) is not None}
        if kept:
            unlisted = [t for t in thread_ids if t not in kept]
            return {**kept, **self._threads_write_keys(unlisted)}
        in_range = {"thread_id": {"$gte": min(thread_ids), "$lte": max(thread_ids)}}
        for doc in self._find(self.writes_coll, in_range, _KEY_FIELDS):
            key = _key(doc)
            if key is None:
                continue
            for thread_id in _named_threads(doc.get("thread_id"), found):
                found[thread_id].append(key)
        return found

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        runs = self._runs(query)
        if runs is None:
            yield from self._raw_by_keys(query, data=data)
            return
        for run, whole in runs:
            if not whole:
                yield from self._raw_by_keys(DumpQuery(thread_ids=tuple(run)), data=data)
                continue
            for thread_id, keyed, odd in self._run_docs(run):
                for key, doc in keyed:
                    yield _raw_checkpoint(key, doc, data=data)
                yield from self._odd_raw(thread_id, odd, data=data)

    def _raw_by_keys(self, query: DumpQuery, *, data: bool) -> Iterator[RawCheckpoint]:
        """`raw_checkpoints` by the keys `_selected_keys` lists."""
        group: list[list[CheckpointKey]] = []
        rows = 0
        for keys in self._selected_keys(query):
            group.append(keys)
            rows += len(keys)
            if rows >= BATCH:
                yield from self._group_checkpoints(group, data=data)
                group, rows = [], 0
        if group:
            yield from self._group_checkpoints(group, data=data)

    def _group_checkpoints(
        self, group: list[list[CheckpointKey]], *, data: bool
    ) -> Iterator[RawCheckpoint]:
        """The checkpoints of a group of threads (each a list of its keys), thread by
        thread: one find for every BATCH of them, not one for each thread."""
        flat = [key for keys in group for key in keys]
        docs: dict[CheckpointKey | None, dict[str, Any]] = {}
        for start in range(0, len(flat), BATCH):
            batch = flat[start : start + BATCH]
            docs.update((_key(d), d) for d in self._by_keys(self.checkpoints_coll, batch))
        for keys in group:
            for key in keys:
                doc = docs.get(key)
                if doc is not None:
                    yield _raw_checkpoint(key, doc, data=data)
            yield from self._odd_checkpoints(keys[0].thread_id, data=data)

    def _odd_checkpoints(self, thread_id: str, *, data: bool) -> Iterator[RawCheckpoint]:
        """The thread's checkpoint documents whose namespace or id is not a string: the
        saver lists them with the thread and cannot read them as its checkpoints."""
        odd = self._odd_docs.get(thread_id)
        if not odd:
            return
        ids = [doc["_id"] for doc in odd if "_id" in doc]
        found = self._find(self.checkpoints_coll, {"_id": {"$in": ids}})
        yield from self._odd_raw(thread_id, found, data=data)

    def _odd_raw(
        self, thread_id: str, docs: Iterable[dict[str, Any]], *, data: bool
    ) -> Iterator[RawCheckpoint]:
        """The thread's documents among `docs` whose namespace or id is not a string."""
        for doc in docs:
            if doc.get("thread_id") != thread_id or _key(doc) is not None:
                continue
            wrong = next(
                (f for f in ("checkpoint_ns", "checkpoint_id") if not isinstance(doc.get(f), str)),
                "checkpoint_id",
            )
            why = f"its `{wrong}` is {type(doc.get(wrong)).__name__}, not a string"
            raw = _raw_checkpoint(_stray_key(doc), doc, data=data)
            yield dataclasses.replace(raw, misfiled=why)

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        if self.writes_coll is None:
            return
        group: list[list[CheckpointKey]] = []
        rows = 0
        for keys in self._selected_keys(query):
            group.append(keys)
            rows += len(keys)
            if len(group) >= BATCH or rows >= _GROUP_CHECKPOINTS:
                yield from self._group_writes(group, data=data)
                group, rows = [], 0
        if group:
            yield from self._group_writes(group, data=data)

    def _group_writes(self, group: list[list[CheckpointKey]], *, data: bool) -> Iterator[RawWrite]:
        """The writes of a group of threads (each a list of its checkpoints' keys), thread
        by thread: each thread's writes, its orphans among them (check judges those;
        `health` counts them), and writes of its checkpoints filed under another thread
        (moved there, or their thread_id changed: MongoDBSaver finds writes by those
        fields). Two finds for the whole group, not two for each thread: one over the range
        of its threads on the saver's index, one by checkpoint id of the writes filed under
        other threads (`$nin`: not the group's own writes again, which the first read).
        (nx-27017 does not match an array by a range of its elements as mongod does: a
        write whose thread_id is an array holding a thread of the group is not read.)"""
        assert self.writes_coll is not None
        threads = [keys[0].thread_id for keys in group]
        own: dict[str, list[dict[str, Any]]] = {t: [] for t in threads}
        ids = sorted({k.checkpoint_id for keys in group for k in keys})
        by_id: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
        ranged: set[str] = set()
        in_range = {"thread_id": {"$gte": min(threads), "$lte": max(threads)}}
        for doc in self._find(self.writes_coll, in_range):
            for thread_id in _named_threads(doc.get("thread_id"), own):
                own[thread_id].append(doc)
            ranged.add(repr(doc.get("_id")))  # (an _id may be a document)
            _file_by_id(doc, by_id)
        if self._keeping:
            for thread_id, docs in own.items():
                keys = [key for doc in docs if (key := _key(doc)) is not None]
                self._kept_write_keys.put(thread_id, keys)
        elsewhere = {"checkpoint_id": {"$in": ids}, "thread_id": {"$nin": threads}}
        for doc in self._find(self.writes_coll, elsewhere):
            if repr(doc.get("_id")) not in ranged:
                _file_by_id(doc, by_id)
        for keys in group:
            thread_id = keys[0].thread_id
            wanted = set(keys)
            found = list(own.pop(thread_id))
            # As `{"thread_id": {"$ne": thread}, "checkpoint_id": {"$in": ids}}` finds them.
            seen: set[int] = set()
            for checkpoint_id in sorted({k.checkpoint_id for k in keys}):
                for doc in by_id.get(checkpoint_id, ()):
                    if id(doc) not in seen and not _names_thread(doc.get("thread_id"), thread_id):
                        seen.add(id(doc))
                        found.append(doc)
            rows = [(_key(doc) or _stray_key(doc), _write_fields(doc)) for doc in found]
            rows = [(k, w) for k, w in rows if k in wanted] + [
                (k, w) for k, w in rows if k not in wanted
            ]
            rows.sort(
                key=lambda r: (r[0].checkpoint_ns, r[0].checkpoint_id, r[1].task_id, r[1].idx)
            )
            for key, fields in rows:
                yield fields.raw(key, data=data)

    # -- prune (ckpt.stores.mongo.writer) -----------------------------------------------
    def _prune_rows(self, thread_id: str) -> ThreadRows:
        from ckpt.decoders.spans import body_layout
        from ckpt.stores.prune_rows import metadata_facts

        checkpoints = []
        for doc in self._find(self.checkpoints_coll, {"thread_id": {"$eq": thread_id}}):
            key = _key(doc)
            if key is None:
                continue
            body = _bytes(doc.get("checkpoint")) or b""
            layout = body_layout(serde_tag(doc), body, self.aes_key)
            root, delta, js_delta = metadata_facts(self._metadata(doc.get("metadata")))
            checkpoints.append(
                CheckpointRow(
                    checkpoint_ns=key.checkpoint_ns,
                    checkpoint_id=key.checkpoint_id,
                    parent_id=parent_id(doc),
                    v=layout.v if layout else None,
                    root_id=root,
                    delta_channels=delta,
                    values=frozenset(layout.values) if layout else None,
                    versions={},
                    size=len(body) + _metadata_size(doc.get("metadata")),
                    js_delta=js_delta,
                )
            )
        writes = []
        if self.writes_coll is not None:
            for doc in self._find(self.writes_coll, {"thread_id": {"$eq": thread_id}}):
                key = _key(doc)
                if key is not None:
                    fields = _write_fields(doc)
                    writes.append(
                        WriteRow(key.checkpoint_ns, key.checkpoint_id, fields.channel, fields.size)
                    )
        return ThreadRows(thread_id, checkpoints, writes)

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        """What `compact` may give back, collection by collection: the storage the engine
        holds beyond what the documents take (collStats `freeStorageSize` where the
        server reports it)."""
        if into is not None:
            raise BadOption("`into` is for SQLite stores")
        tables: list[VacuumTableRecord] = []
        for name, stats in self._collection_stats():
            storage, indexes = int(stats.get("storageSize", 0)), int(stats.get("totalIndexSize", 0))
            free = stats.get("freeStorageSize")
            tables.append(
                {
                    "table": name,
                    "total_bytes": storage + indexes,
                    "table_bytes": storage,
                    "index_bytes": indexes,
                    "toast_bytes": None,
                    "rows_estimate": None,
                    "live_rows": int(stats.get("count", 0)),
                    "dead_rows": None,
                    "bloat_estimate_bytes": int(free) if isinstance(free, int) else 0,
                }
            )
        statement = "; ".join(f"compact {t['table']}" for t in tables)
        return server_vacuum_report("compact", statement, tables)

    def writer(self, *, timeout: float | None) -> Writer:
        from ckpt.stores.mongo.writer import MongoWriter

        return MongoWriter(self)

    def _forget_kept(self) -> None:
        super()._forget_kept()
        self._kept_write_keys.clear()

    def close(self) -> None:
        close_quietly(self.client)


# -- documents -------------------------------------------------------------------------------


def _key(doc: dict[str, Any]) -> CheckpointKey | None:
    thread_id, ns, checkpoint_id = (
        doc.get("thread_id"),
        doc.get("checkpoint_ns"),
        doc.get("checkpoint_id"),
    )
    if not (isinstance(thread_id, str) and isinstance(ns, str) and isinstance(checkpoint_id, str)):
        return None
    return CheckpointKey(thread_id, ns, checkpoint_id)


def _raw_checkpoint(key: CheckpointKey, doc: dict[str, Any], *, data: bool) -> RawCheckpoint:
    body = _bytes(doc.get("checkpoint")) or b""
    stored = doc.get("metadata")
    metadata = _metadata_json(stored)
    plain = _metadata_plain(stored)
    return RawCheckpoint.kept(
        key,
        parent_id(doc),
        serde_tag(doc),
        body,
        # As SqliteSaver and PostgresSaver keep it when every value is plain data; else the
        # pairs, their payloads as base64 records.
        "json" if plain is not None else "mongodb-pairs",
        plain if plain is not None else metadata,
        data=data,
        metadata_size=len(metadata),
    )


def _file_by_id(doc: dict[str, Any], by_id: dict[str, list[dict[str, Any]]]) -> None:
    """The write document under each of the checkpoint ids of `by_id` it names."""
    named = doc.get("checkpoint_id")
    for checkpoint_id in named if isinstance(named, list) else [named]:
        if isinstance(checkpoint_id, str) and checkpoint_id in by_id:
            by_id[checkpoint_id].append(doc)


def _thread_range(run: list[str]) -> dict[str, Any]:
    """The filter of the documents of a sorted run of threads (and any between them): a
    range on the saver's index, not `$in`, which a server may answer by reading every row."""
    return {"thread_id": {"$gte": run[0], "$lte": run[-1]}}


def _stray_key(doc: dict[str, Any]) -> CheckpointKey:
    """The key a write document names when some part is not a string (MongoDBSaver never
    finds it under any checkpoint): each part as text."""
    return CheckpointKey(
        *(str(doc.get(part)) for part in ("thread_id", "checkpoint_ns", "checkpoint_id"))
    )


def _bytes(value: Any) -> bytes | None:
    """BSON binary (bson.Binary is a bytes subclass) as bytes; None for anything else."""
    return bytes(value) if isinstance(value, bytes | bytearray) else None


def _write_fields(doc: dict[str, Any]) -> WriteFields:
    return WriteFields.judged(doc, _bytes(doc.get("value")))


def _metadata_size(raw: Any) -> int:
    """Bytes of the metadata's stored values (the pairs' payloads)."""
    if isinstance(raw, dict):
        return sum(_metadata_size(v) for v in raw.values())
    if isinstance(raw, list):
        return sum(_metadata_size(v) for v in raw)
    data = _bytes(raw)
    return len(data) if data is not None else len(str(raw)) if raw is not None else 0


def _metadata_json(raw: Any) -> bytes:
    """The metadata as JSON text for `stats` and `types` (payloads as base64 records;
    LangGraph.js's is JSON text already)."""
    if (data := _bytes(raw)) is not None:
        return data
    import base64

    import orjson

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        data = _bytes(value)
        if data is not None:
            return {
                "__ckpt__": "bytes",
                "base64": base64.b64encode(data).decode(),
                "size": len(data),
            }
        return value if isinstance(value, str | int | float | bool) or value is None else str(value)

    return orjson.dumps(plain(raw)) if raw is not None else b""


def _metadata_plain(raw: Any) -> bytes | None:
    """MongoDBSaver's metadata as the JSON text SqliteSaver and PostgresSaver keep, when
    every value in it is plain data (a `msgpack` or `null` pair, format.md §7c);
    LangGraph.js's is its JSON text already. None when a value is not plain."""
    if (data := _bytes(raw)) is not None:
        return data
    import json

    import ormsgpack

    class NotPlain(Exception):
        pass

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
            payload = _bytes(value[1])
            if value[0] == "null":
                return None
            if value[0] == "msgpack" and payload:
                return ormsgpack.unpackb(payload)  # ValueError on an ext type
        raise NotPlain

    try:
        return json.dumps(plain(raw) if raw is not None else {}, ensure_ascii=False).encode()
    except (NotPlain, ValueError, TypeError):
        return None


@contextmanager
def mongo_errors(pymongo: Any, location: str, timeout: float, doing: str) -> Iterator[None]:
    """Every pymongo error raised inside as one line (exit 4) that names no password:
    `doing` says what failed (reading the store, writing a copy)."""
    errors = pymongo.errors
    try:
        yield
    except errors.OperationFailure as exc:  # (ExecutionTimeout too: it is one)
        if exc.code in (13, 18):  # Unauthorized, AuthenticationFailed
            raise StoreUnreadable(f"{location}: {doing}: not allowed ({_clean(exc)})") from None
        raise StoreUnreadable(f"{location}: the server refused: {_clean(exc)}") from None
    except (errors.ServerSelectionTimeoutError, errors.NetworkTimeout):
        raise StoreUnreadable(
            f"{location}: {doing}: no answer within {timeout:g} s (`timeout` sets the limit)"
        ) from None
    except errors.PyMongoError as exc:
        raise StoreUnreadable(f"{location}: {doing}: {_clean(exc)}") from None


def runs_transactions(pymongo: Any, client: Any, collection: Any) -> bool:
    """Whether the server runs multi-document transactions (what keeps a thread whole):
    a read in one, aborted. A standalone mongod refuses it; other errors are raised."""
    try:
        with client.start_session() as session:
            session.start_transaction()
            try:
                collection.find_one({"thread_id": {"$eq": ""}}, session=session)
            finally:
                session.abort_transaction()
    except pymongo.errors.OperationFailure as exc:
        if exc.code == 20 or "ransaction" in str(exc):
            return False
        raise
    return True


def no_transactions(location: str, thread: str, done: str) -> str:
    """Why a server without multi-document transactions is refused (`runs_transactions`):
    `thread`, what they would keep whole; `done`, what was not done."""
    return (
        f"{location}: this server runs no multi-document transactions (a standalone mongod), "
        f"which keep each {thread} whole: run it as a replica set (one member will do); "
        f"nothing {done}"
    )


def _clean(exc: BaseException) -> str:
    text = str(exc).split(", full error:", 1)[0]
    return " ".join(text.split())[:300] or type(exc).__name__
