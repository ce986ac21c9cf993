"""DynamoDBSaver stores (langgraph-checkpoint-aws 1.2.6, format.md §7g), read-only.

One table with string keys PK and SK (the saver does not create it):

    PK CHECKPOINT_{thread}           SK {ns}#{id}       a checkpoint: id, ns, type,
                                                        parent_checkpoint_id, ref_loc,
                                                        ref_key, compression, ttl
    PK WRITES_{thread}#{ns}#{id}     SK {task_id}#{idx} a pending write: task_id, channel,
                                                        idx, task_path, type, ref_*, ...
    PK CHUNK_{...}                   SK CHUNK           a payload (`payload`, binary)

A checkpoint's payload is ONE serde value, {"checkpoint": ..., "metadata": ...} (values
inline), gzip-compressed when `compression` says "gzip"; a payload over 350 KB is an S3
object (`ref_loc` S3, `ref_key` {thread}/checkpoints/{ns}/{id}[/writes/{task}/{idx}],
under the bucket's optional key prefix). ckpt cuts the checkpoint's and the metadata's
bytes out of the payload's msgpack map (ckpt.decoders.spans), never re-encoding them.

`threads` is one Scan that projects the keys and each write's `channel` (format.md §7g):
thread ids, namespaces, counts, the latest root checkpoint id (its time is in the uuid6)
and that checkpoint's writes by task and channel, so a failed or interrupted thread is
told without a payload. A step, a source, `next` and done-or-pending are inside the
latest checkpoint's payload: the listing leaves them out (status "unknown", said once)
and `loaded_threads` (what --status done, --where and --sort step ask for) reads them.
Checkpoints, writes and payloads are fetched (Query, BatchGetItem, S3 GetObject) only for
what is shown.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, NamedTuple

import ormsgpack

from ckpt.decoders.spans import SpanError, container, plaintext, skip
from ckpt.errors import NotACheckpointStore
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    ThreadSummary,
)
from ckpt.records.types import StorageRecord, TableBytesRecord, storage_record
from ckpt.stores.aws import aws_saver
from ckpt.stores.body import decode_value
from ckpt.stores.documents import (
    BATCH,
    DocumentStore,
    ThreadInfo,
    WriteFields,
    catalog_threads,
)
from ckpt.stores.dynamodb.session import DynamoSession

GZIP_LIMIT: Final = 256 << 20  # bytes a compressed payload may inflate to before ckpt stops
# What a keys-only listing puts where the latest checkpoint's payload would be read: its
# body, and the value of each of its writes (docs/json.md, marked records).
NOT_READ: Final = {
    "__ckpt__": "not_read",
    "reason": "DynamoDB threads reads keys only: `ckpt show THREAD` reads the checkpoint",
}
KEYS_ONLY_NOTICE: Final = (  # API words: the CLI says them as its flags (cli.options.FLAGS)
    "DynamoDB: threads read keys only (no payloads): a thread's step, source and next, and "
    "whether it is done or pending (status unknown), are in its latest checkpoint: `ckpt show "
    "THREAD` reads one; a listing by `status` done, pending or unknown, by `where`, or in step "
    "order reads them all"
)


class Item(NamedTuple):
    """A checkpoint or write item's attributes (payload not yet fetched)."""

    key: CheckpointKey
    tag: str | None
    parent: str | None
    ref_loc: str
    ref_key: str
    compression: str | None
    attributes: dict[str, Any]


class Payload(NamedTuple):
    """A checkpoint payload cut in two: the checkpoint's and the metadata's msgpack."""

    tag: str | None
    body: bytes
    metadata_tag: str | None
    metadata: bytes
    size: int  # as stored (compressed)


def _s(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value.get("S") if isinstance(value, dict) and isinstance(value.get("S"), str) else None


def _n(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    text = value.get("N") if isinstance(value, dict) else None
    try:
        return int(text) if isinstance(text, str) else None
    except ValueError:
        return None


def checkpoint_key_of(pk: str, sk: str) -> CheckpointKey | None:
    if not pk.startswith("CHECKPOINT_") or "#" not in sk:
        return None
    ns, _, checkpoint_id = sk.rpartition("#")
    return CheckpointKey(pk[len("CHECKPOINT_") :], ns, checkpoint_id)


def writes_key_of(pk: str) -> CheckpointKey | None:
    """The checkpoint of `WRITES_{thread}#{ns}#{id}` (a thread id may hold `#`; a namespace
    and an id do not)."""
    if not pk.startswith("WRITES_"):
        return None
    head, _, checkpoint_id = pk[len("WRITES_") :].rpartition("#")
    thread_id, sep, ns = head.rpartition("#")
    return CheckpointKey(thread_id, ns, checkpoint_id) if sep else None


class DynamoDBStore(DocumentStore):
    kind = "dynamodb"
    label = "DynamoDB"
    listing_reads_latest = False
    int_versions_saver = "DynamoDBSaver"  # LangGraph's default get_next_version

    def __init__(
        self, spec: str, *, aes_key: bytes | None = None, timeout: float | None = None
    ) -> None:
        session = DynamoSession(spec, timeout=timeout)
        super().__init__(session.location, aes_key=aes_key)
        self.session = session
        self._write_index: dict[str, list[CheckpointKey]] | None = None
        # thread -> (the newest root checkpoint id its writes name, those writes as
        # (SK, channel)): what the listing says of the latest checkpoint's writes.
        self._newest_writes: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        self._told_keys_only = False
        self._told_s3 = False
        self._unfetched: set[str] = set()  # S3 write payloads `_writes` left unread
        schema = session.describe()
        keys = {k["AttributeName"]: k["KeyType"] for k in schema.get("KeySchema", [])}
        if keys != {"PK": "HASH", "SK": "RANGE"}:
            raise NotACheckpointStore(
                f"{self.location}: not a DynamoDBSaver table (its keys are "
                f"{', '.join(sorted(keys)) or 'none'}, not PK and SK)"
            )
        self.table_bytes = int(schema.get("TableSizeBytes") or 0)
        self.table_items = int(schema.get("ItemCount") or 0)

    @property
    def era(self) -> str:
        return "dynamodb"

    @property
    def era_note(self) -> str:
        return f"DynamoDBSaver (langgraph-checkpoint-aws) table {self.session.table!r}" + (
            f", S3 bucket {self.session.bucket!r}" if self.session.bucket else ""
        )

    def saver(self) -> SaverFacts:
        return aws_saver(
            "DynamoDBSaver",
            ("table keys PK and SK", "CHECKPOINT_, WRITES_ and CHUNK_ items"),
            caveat=" (its list() needs a thread id)",
        )

    # -- listing ---------------------------------------------------------------------------
    def _read_catalog(self) -> dict[str, ThreadInfo]:
        """Every thread from one Scan projecting PK, SK and a write's `channel`; of each
        thread's writes only those of its newest root checkpoint are kept whole."""
        threads: dict[str, ThreadInfo] = {}
        newest: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        for item in self.session.scan_keys("channel"):
            pk, sk = _s(item, "PK") or "", _s(item, "SK") or ""
            key = checkpoint_key_of(pk, sk)
            if key is not None:
                info = threads.get(key.thread_id)
                if info is None:
                    info = threads[key.thread_id] = ThreadInfo()
                info.add(key)
                continue
            owner = writes_key_of(pk)
            if owner is None or owner.checkpoint_ns:
                continue
            kept = newest.get(owner.thread_id)
            if kept is None or owner.checkpoint_id > kept[0]:
                kept = newest[owner.thread_id] = (owner.checkpoint_id, [])
            if owner.checkpoint_id == kept[0]:
                kept[1].append((sk, _s(item, "channel") or ""))
        # Memory: a thread's counts and its newest writes, never one entry per write (a
        # listing of 1,000 threads x 75 writes kept 22 MB of write keys it never used).
        self._newest_writes = newest
        self._write_index = None  # read again when asked, as fresh as this catalog
        return threads

    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        """Every thread from the catalog's Scan alone (module doc): no payload, no S3.
        With `sizes` every payload is read anyway, and the latest checkpoints with them."""
        if sizes:
            yield from self.loaded_threads(sizes=True, order=order)
            return
        catalog = self._catalog()
        if catalog and not self._told_keys_only:
            self._told_keys_only = True
            self.notices.append(KEYS_ONLY_NOTICE)
        for thread_id in sorted(catalog):
            info = catalog[thread_id]
            root = info.latest_root
            yield ThreadSummary(
                thread_id=thread_id,
                namespaces=sorted(info.namespaces),
                checkpoints=info.checkpoints,
                writes=None,
                size=None,
                latest=self._listed_latest(thread_id, root) if root is not None else None,
            )

    def loaded_threads(
        self, *, sizes: bool = False, order: str = "thread"
    ) -> Iterator[ThreadSummary]:
        """Every thread with its latest root checkpoint read (payload, writes): a
        checkpoint's writes are queried only where the catalog's Scan saw some."""
        if sizes:
            return super().threads(sizes=True, order=order)
        catalog = self._catalog()
        newest = self._newest_writes

        def written(key: CheckpointKey) -> bool:
            # `>=`: writes newer than any checkpoint item leave the latest's unknown.
            return newest.get(key.thread_id, ("",))[0] >= key.checkpoint_id

        def load(keys: list[CheckpointKey]) -> list[Checkpoint]:
            return self._load_keys(keys, values=False, written=written)

        return catalog_threads(catalog, {}, load, sizes=False, batch=BATCH)

    def _listed_latest(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        """The latest root checkpoint as the keys tell it: its id, and its writes' tasks,
        indexes and channels (what says failed or interrupted), no body and no values."""
        kept_id, kept = self._newest_writes.get(thread_id, ("", []))
        if kept_id > checkpoint_id:
            # Writes of a checkpoint newer than any checkpoint item (its item is gone):
            # the latest one's writes were not kept, its partition's keys are read.
            pk = f"WRITES_{thread_id}##{checkpoint_id}"
            kept = [(_s(i, "SK") or "", _s(i, "channel") or "") for i in self.session.query(pk)]
        elif kept_id < checkpoint_id:
            kept = []
        pending = []
        for sk, channel in sorted(kept):  # the saver's order: SK as a string
            task_id, _, idx = sk.rpartition("#")
            try:
                index = int(idx)
            except ValueError:
                index = 0
            pending.append(PendingWrite(task_id, "", index, channel, None, dict(NOT_READ)))
        return Checkpoint(
            thread_id=thread_id,
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=None,
            metadata={},
            unread_body=dict(NOT_READ),
            pending_writes=pending,
        )

    def _thread_items(self, thread_id: str) -> list[Item]:
        found = []
        for item in self.session.query("CHECKPOINT_" + thread_id):
            key = checkpoint_key_of(_s(item, "PK") or "", _s(item, "SK") or "")
            if key is not None:
                found.append(_item(key, item))
        found.sort(key=lambda i: (i.key.checkpoint_id, i.key.checkpoint_ns))
        return found

    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        return [i.key for i in self._thread_items(thread_id)]

    def _all_keys(self) -> Iterator[CheckpointKey]:
        for thread_id in sorted(self._catalog()):
            yield from self._thread_keys(thread_id)

    # -- loading ---------------------------------------------------------------------------
    def _items(self, keys: Sequence[CheckpointKey]) -> dict[CheckpointKey, Item]:
        wanted = [
            {
                "PK": {"S": "CHECKPOINT_" + k.thread_id},
                "SK": {"S": f"{k.checkpoint_ns}#{k.checkpoint_id}"},
            }
            for k in keys
        ]
        found: dict[CheckpointKey, Item] = {}
        for item in self.session.batch_get(wanted):
            key = checkpoint_key_of(_s(item, "PK") or "", _s(item, "SK") or "")
            if key is not None:
                found[key] = _item(key, item)
        return found

    def _payloads(self, items: Sequence[Item]) -> dict[str, bytes | None]:
        """ref_key -> the stored bytes (still compressed); None where gone."""
        chunks = [i.ref_key for i in items if i.ref_loc == "DYNAMODB"]
        found: dict[str, bytes | None] = dict.fromkeys((i.ref_key for i in items), None)
        for item in self.session.batch_get(
            [{"PK": {"S": k}, "SK": {"S": "CHUNK"}} for k in chunks]
        ):
            payload = item.get("payload", {}).get("B")
            if isinstance(payload, bytes | bytearray):
                found[_s(item, "PK") or ""] = bytes(payload)
        for i in items:
            if i.ref_loc != "S3":
                continue
            if self.session.s3 is None and not self._told_s3:
                self._told_s3 = True
                self.notices.append(
                    f"payloads offloaded to S3 (e.g. {i.ref_key}) are not read: name the "
                    "bucket (dynamodb://TABLE?bucket=...)"
                )
            found[i.ref_key] = self.session.s3_get(i.ref_key)
        return found

    def _writes(self, key: CheckpointKey, *, values: bool = True) -> list[tuple[Item, WriteFields]]:
        """The checkpoint's writes in the saver's order (SK: "task_id#idx" as strings).
        Without `values`, a write's S3 payload is fetched only for LangGraph's own
        channels (`__interrupt__`, `__error__`, Sends...: what a status needs); the others
        come with no bytes (`data` None, `size` 0), marked in `self._unfetched`."""
        pk = f"WRITES_{key.thread_id}#{key.checkpoint_ns}#{key.checkpoint_id}"
        items = [_item(key, item) for item in self.session.query(pk)]
        skipped = {
            i.ref_key
            for i in items
            if not values
            and i.ref_loc == "S3"
            and not (_s(i.attributes, "channel") or "").startswith("__")
        }
        payloads = self._payloads([i for i in items if i.ref_key not in skipped])
        self._unfetched = skipped
        found = []
        for item in items:
            stored = payloads.get(item.ref_key)
            data = _inflate(stored, item.compression) if stored is not None else None
            attributes = item.attributes
            found.append(
                (
                    item,
                    WriteFields(
                        task_id=_s(attributes, "task_id") or "",
                        task_path=_s(attributes, "task_path") or "",
                        idx=_n(attributes, "idx") or 0,
                        channel=_s(attributes, "channel") or "",
                        type=item.tag,
                        data=data,
                        size=len(stored) if stored is not None else 0,
                    ),
                )
            )
        return found

    def _stored(
        self, keys: Sequence[CheckpointKey]
    ) -> Iterator[tuple[CheckpointKey, Item, Payload]]:
        """Each key's item and payload, BATCH keys at a time; a checkpoint whose item or
        payload is gone is left out, as the saver skips it."""
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            items = self._items(batch)
            payloads = self._payloads(list(items.values()))
            for key in batch:
                item = items.get(key)
                stored = payloads.get(item.ref_key) if item is not None else None
                if item is not None and stored is not None:
                    yield key, item, self._split(item, stored)

    def _load_keys(
        self,
        keys: Sequence[CheckpointKey],
        *,
        values: bool,
        written: Callable[[CheckpointKey], bool] | None = None,
    ) -> list[Checkpoint]:
        """`written`, when given, says which checkpoints have writes (the rest are not
        queried): from a catalog read in the same pass, never a stale one."""
        built = []
        for key, item, payload in self._stored(keys):
            stored = self._writes(key, values=values) if written is None or written(key) else []
            writes = [
                fields.pending(
                    decode_value(fields.type, fields.data, self.aes_key)
                    if fields.data is not None
                    else None
                )
                for write, fields in stored
                # A write whose payload is gone: the saver leaves it out.
                if fields.data is not None or write.ref_key in self._unfetched
            ]
            built.append(
                self._checkpoint(
                    key,
                    item.parent,
                    payload.tag,
                    payload.body,
                    self._metadata(payload),
                    writes,
                    values=values,
                    size=payload.size,
                )
            )
        return built

    def _metadata(self, payload: Payload) -> dict[str, Any]:
        if not payload.metadata:
            return {}
        value = decode_value(payload.metadata_tag, payload.metadata, self.aes_key)
        return value if isinstance(value, dict) else {"value": value}

    def _split(self, item: Item, stored: bytes) -> Payload:
        data = _inflate(stored, item.compression)
        if data is None:
            return Payload(None, b"", None, b"", len(stored))
        tag, opened = plaintext(item.tag, data, self.aes_key)
        if tag != "msgpack":
            # Encrypted without the key (or another serializer): the whole payload shows.
            return Payload(item.tag, data, None, b"", len(stored))
        parts = _map_values(opened, ("checkpoint", "metadata"))
        if parts is None or "checkpoint" not in parts:
            return Payload(tag, opened, None, b"", len(stored))
        return Payload(tag, parts["checkpoint"], tag, parts.get("metadata", b""), len(stored))

    # -- sizes, storage, health ------------------------------------------------------------
    def storage(self) -> StorageRecord:
        table: TableBytesRecord = {
            "table": self.session.table,
            "total_bytes": self.table_bytes,
            "table_bytes": self.table_bytes,
            "index_bytes": 0,
            "toast_bytes": None,
            "rows_estimate": self.table_items,  # DynamoDB updates these every ~6 hours
            "live_rows": None,
            "dead_rows": None,
        }
        return storage_record(self.table_bytes, tables=[table])

    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        return {i.key: i.parent for i in self._thread_items(keys[0].thread_id)}

    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        if self._write_index is None:
            # `check` asks thread by thread: one Scan of the keys indexes every write once.
            writes: dict[str, list[CheckpointKey]] = {}
            for item in self.session.scan_keys():
                owner = writes_key_of(_s(item, "PK") or "")
                if owner is not None:
                    writes.setdefault(owner.thread_id, []).append(owner)
            self._write_index = writes
        return list(self._write_index.get(thread_id, []))

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        for keys in self._selected_keys(query):
            for key, item, payload in self._stored(keys):
                yield RawCheckpoint.kept(
                    key,
                    item.parent,
                    payload.tag,
                    payload.body,
                    payload.metadata_tag,
                    payload.metadata,
                    data=data,
                )

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        for keys in self._selected_keys(query):
            for key in keys:
                ordered = sorted(self._writes(key), key=lambda w: (w[1].task_id, w[1].idx))
                for _, fields in ordered:
                    yield fields.raw(key, data=data)

    def close(self) -> None:
        self.session.close()


def _item(key: CheckpointKey, item: dict[str, Any]) -> Item:
    return Item(
        key=key,
        tag=_s(item, "type"),
        parent=_s(item, "parent_checkpoint_id") or None,
        ref_loc=_s(item, "ref_loc") or "",
        ref_key=_s(item, "ref_key") or "",
        compression=_s(item, "compression"),
        attributes=item,
    )


def _inflate(stored: bytes, compression: str | None) -> bytes | None:
    """The payload as serialized: gunzipped (at most GZIP_LIMIT bytes) when compressed."""
    if compression != "gzip":
        return stored
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(stored, GZIP_LIMIT)
    except zlib.error:
        return None
    if inflater.unconsumed_tail:
        return None  # larger than ckpt inflates
    return data


def _map_values(data: bytes, names: Sequence[str]) -> dict[str, bytes] | None:
    """The bytes of the values under `names` in a msgpack map (None: not a map)."""
    try:
        shape = container(data, 0)
        if shape is None or shape[0] != "map":
            return None
        _, count, i = shape
        found: dict[str, bytes] = {}
        for _ in range(count):
            end = skip(data, i)
            name = ormsgpack.unpackb(data[i:end]) if data[i] & 0xE0 == 0xA0 or data[i] in (
                0xD9, 0xDA, 0xDB
            ) else None  # fmt: skip
            value_end = skip(data, end)
            if isinstance(name, str) and name in names:
                found[name] = data[end:value_end]
            i = value_end
        return found
    except (SpanError, IndexError, ValueError):
        return None


__all__ = ["DynamoDBStore"]
