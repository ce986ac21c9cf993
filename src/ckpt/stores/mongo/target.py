"""A MongoDBSaver database as the target of `ckpt copy`: its collections and unique
indexes made as MongoDBSaver's constructor makes them, documents written as its `put` and
`put_writes` write them, one thread per multi-document transaction.

What MongoDB offers for "all or nothing" (format.md §7c): a multi-document transaction,
on a replica set or a sharded cluster (a one-member replica set will do); a standalone
`mongod` refuses them. ckpt asks for one in the dry run too (an empty read inside a
transaction) and refuses a server that has none, rather than write a thread in pieces.
nx-27017 (the test server) runs transactions on SQLite's own.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from ckpt.errors import StoreUnreadable
from ckpt.records.model import RawCheckpoint, RawWrite
from ckpt.records.vocabulary import DEFAULT_TIMEOUT
from ckpt.stores.base import Carried, Target, ThreadSink, close_quietly
from ckpt.stores.location import redact_url
from ckpt.stores.mongo.store import (
    CHECKPOINTS,
    DATABASE,
    WRITES,
    _import_pymongo,
    mongo_errors,
    no_transactions,
    runs_transactions,
)
from ckpt.stores.transfer import (
    Blob,
    BlobKey,
    Sends,
    integer_versions,
    metadata_pairs,
    msgpack_inline,
)

# MongoDBSaver's unique indexes (langgraph-checkpoint-mongodb 0.5.1, _create_saver_indexes).
CHECKPOINT_INDEX: Final = [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)]
WRITE_INDEX: Final = [
    ("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1), ("task_id", 1), ("idx", 1)
]  # fmt: skip
FLUSH_EVERY: Final = 500  # documents buffered before an insert_many (inside the transaction)


@dataclass(frozen=True, slots=True)
class MongoRow:
    """A checkpoint as MongoDBSaver's `put` stores it."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    type: str | None
    body: bytes
    metadata: dict[str, Any]


def identity_of(spec: str, database: str, collections: tuple[str, str]) -> str:
    """Which store a URL, database and collections name, whatever the URL spelled: its
    hosts resolved to addresses (`localhost` and `127.0.0.1` are one server)."""
    from ckpt.stores.location import resolved_host

    try:
        from pymongo.uri_parser import parse_uri

        hosts = parse_uri(spec)["nodelist"]
        nodes = sorted(f"{resolved_host(host)}:{port}" for host, port in hosts)
    except Exception:  # an SRV record or a URL the driver reads otherwise: as given
        nodes = [redact_url(spec)]
    return f"mongodb://{','.join(nodes)}/{database}/{collections[0]},{collections[1]}"


class MongoTarget(Target):
    layout = "inline"
    counted_versions = True

    def __init__(self, spec: str, *, timeout: float | None = None) -> None:
        self.pymongo = _import_pymongo()
        self.location = redact_url(spec)
        self.notices = []
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.client: Any = self.pymongo.MongoClient(
                    spec,
                    serverSelectionTimeoutMS=int(self.timeout * 1000),
                    connectTimeoutMS=int(self.timeout * 1000),
                    appname="ckpt",
                    retryWrites=False,
                )
        except (self.pymongo.errors.PyMongoError, ValueError, TypeError) as exc:
            raise StoreUnreadable(f"{self.location}: not a valid MongoDB URL ({exc})") from None
        try:
            self.database = self.client.get_default_database(default=DATABASE).name
            db = self.client[self.database]
            with self.errors("cannot connect"):
                # (Listing a database that is not there creates it on some servers.)
                there = (
                    set(db.list_collection_names())
                    if self.database in self.client.list_database_names()
                    else set()
                )
            self.checkpoints = db[CHECKPOINTS]
            self.writes = db[WRITES]
            self.state = "ready" if CHECKPOINTS in there else "new"
            self.identity = identity_of(spec, self.database, (CHECKPOINTS, WRITES))
            # MongoDBSaver(ttl=...) stamps `created_at` on every document for its TTL index:
            # the copy does too when the target has one, or they would never expire.
            self.stamp = self.state == "ready" and any(
                "expireAfterSeconds" in index
                for coll in (self.checkpoints, self.writes)
                for index in self._indexes(coll)
            )
            if self.stamp:
                self.notices.append(
                    f"{self.location} has MongoDBSaver's TTL index: copied documents get "
                    "`created_at` = now, as the saver stamps them, and expire from then"
                )
        except BaseException:
            self.client.close()
            raise

    def _indexes(self, collection: Any) -> list[dict[str, Any]]:
        with self.errors():
            return list(collection.list_indexes())

    @contextmanager
    def errors(self, doing: str = "cannot write") -> Iterator[None]:
        """Every pymongo error as one line (exit 4) that names no password (as the
        reader's, mongo_errors), a duplicate key as a thread that appeared meanwhile."""
        with mongo_errors(self.pymongo, self.location, self.timeout, doing):
            try:
                yield
            except self.pymongo.errors.DuplicateKeyError:
                raise StoreUnreadable(
                    f"{self.location}: a document of this thread appeared on the target meanwhile"
                ) from None

    def carry(
        self,
        row: RawCheckpoint,
        blobs: Mapping[BlobKey, Blob],
        sends: Sends,
        *,
        renumber: bool = False,
    ) -> Carried:
        # (The metadata goes its own way: a MongoDB source's pairs as they are.)
        plain = replace(row, metadata=b"{}", metadata_type="json")
        inline = msgpack_inline(
            plain,
            blobs,
            sends,
            "; MongoDBSaver's channel versions are rewritten in msgpack bodies only",
        )
        where = f"checkpoint {row.checkpoint_id}"
        body = integer_versions(inline.body, where, renumber=renumber)
        metadata = metadata_pairs(row)
        found = MongoRow(
            inline.checkpoint_ns,
            inline.checkpoint_id,
            inline.parent_checkpoint_id,
            inline.type,
            body,
            metadata,
        )
        return Carried(found, len(body) + len(inline.metadata), {})

    def check_writable(self, *, replace: bool) -> None:
        if self.state != "new":  # (a read of a database that is not there may create it)
            self._transactions()

    def _transactions(self) -> None:
        """A transaction is what keeps a thread whole: ask for one (a read, aborted)."""
        with self.errors("cannot check the target"):
            runs = runs_transactions(self.pymongo, self.client, self.checkpoints)
        if not runs:
            raise StoreUnreadable(no_transactions(self.location, "copied thread", "copied"))

    def setup(self) -> None:
        self._transactions()
        with self.errors("cannot create the collections"):
            for collection, keys in ((self.checkpoints, CHECKPOINT_INDEX),
                                     (self.writes, WRITE_INDEX)):  # fmt: skip
                have = [list(index["key"].items()) for index in collection.list_indexes()]
                if keys not in have:
                    collection.create_index(keys, unique=True)
        self.state = "ready"

    def existing(self, thread_ids: Sequence[str]) -> set[str]:
        if self.state == "new":
            return set()
        found: set[str] = set()
        ids = list(dict.fromkeys(thread_ids))
        with self.errors("cannot read the target"):
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                for collection in (self.checkpoints, self.writes):
                    found.update(
                        t
                        for t in collection.distinct("thread_id", {"thread_id": {"$in": chunk}})
                        if isinstance(t, str)
                    )
        return found

    def thread(self, thread_id: str, *, replace: bool) -> ThreadSink:
        return _MongoSink(self, thread_id, replace)

    def close(self) -> None:
        close_quietly(self.client)


class _MongoSink(ThreadSink):
    def __init__(self, target: MongoTarget, thread_id: str, replace: bool) -> None:
        self.target, self.thread_id = target, thread_id
        self.pending: list[tuple[Any, dict[str, Any]]] = []
        self.now = datetime.now(tz=UTC) if target.stamp else None
        with target.errors("cannot start a transaction"):
            self.session = target.client.start_session()
            self.session.start_transaction()
        try:
            if replace:
                with target.errors():
                    for collection in (target.checkpoints, target.writes):
                        collection.delete_many(
                            {"thread_id": {"$eq": thread_id}}, session=self.session
                        )
        except BaseException:
            self.rollback()
            raise

    def _add(self, collection: Any, document: dict[str, Any]) -> None:
        if self.now is not None:
            document["created_at"] = self.now
        self.pending.append((collection, document))
        if len(self.pending) >= FLUSH_EVERY:
            self.flush()

    def checkpoint(self, row: MongoRow) -> None:
        # The fields in the order MongoDBSaver's upsert leaves them: its filter, then $set.
        self._add(
            self.target.checkpoints,
            {
                "thread_id": self.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
                "parent_checkpoint_id": row.parent_checkpoint_id,
                "type": row.type,
                "checkpoint": row.body,
                "metadata": row.metadata,
            },
        )

    def write(self, write: RawWrite) -> None:
        self._add(
            self.target.writes,
            {
                "thread_id": self.thread_id,
                "checkpoint_ns": write.checkpoint_ns,
                "checkpoint_id": write.checkpoint_id,
                "task_id": write.task_id,
                "task_path": write.task_path,
                "idx": write.idx,
                "channel": write.channel,
                "type": write.type,
                "value": write.data if write.data is not None else b"",
            },
        )

    def flush(self) -> None:
        batches: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
        for collection, document in self.pending:
            batches.setdefault(collection.name, (collection, []))[1].append(document)
        self.pending = []
        try:
            with self.target.errors():
                for collection, documents in batches.values():
                    collection.insert_many(documents, ordered=True, session=self.session)
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        try:
            with self.target.errors("cannot commit"):
                self.session.commit_transaction()
        except BaseException:
            self.rollback()
            raise
        self.session.end_session()

    def rollback(self) -> None:
        try:
            if self.session.in_transaction:
                self.session.abort_transaction()
        except Exception:  # the server is gone: it aborts the transaction itself
            pass
        try:
            self.session.end_session()
        except Exception:
            pass
