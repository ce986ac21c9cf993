"""ValkeySaver stores (langgraph-checkpoint-aws 1.2.6, format.md §7f), read-only.

Plain string keys, no modules: `checkpoint:{thread}:{ns}:{id}` (JSON: `type`, the
serialized checkpoint base64 in `checkpoint`, JSON metadata base64 in `metadata`,
`parent_checkpoint_id`), `writes:{thread}:{ns}:{id}` (a JSON list of the checkpoint's
writes: task_id, idx, channel, type, value base64) and `thread:{thread}:{ns}`, a list of
the namespace's checkpoint ids, the newest put first (LPUSH). The braces are Valkey hash
tags, literal in the key. Threads are listed from the `thread:` lists (SCAN, then LRANGE),
documents fetched by MGET only when shown; TTLs (EXPIRE) are the server's business: a key
gone is a checkpoint gone.
"""

from __future__ import annotations

import base64
import binascii
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Final, Generic, NamedTuple, TypeVar

import orjson

from ckpt.decoders import undecodable_record
from ckpt.errors import NotACheckpointStore, NotSupported
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
)
from ckpt.records.types import StorageRecord
from ckpt.stores.aws import aws_saver
from ckpt.stores.body import decode_metadata, decode_value
from ckpt.stores.documents import BATCH, DocumentStore, ThreadInfo, WriteFields, key_order
from ckpt.stores.redis.session import RedisSession, glob_escape, server_storage

FAMILIES: Final = ("checkpoint", "writes", "thread")
D = TypeVar("D")  # what a layout's checkpoint document reads as


class Stored(NamedTuple):
    """One ValkeySaver checkpoint document, its parts decoded from base64."""

    tag: str | None
    body: bytes
    metadata: bytes
    parent: str | None
    size: int  # the document's bytes as stored


def checkpoint_key(family: str, key: CheckpointKey) -> str:
    return f"{family}:{{{key.thread_id}}}:{key.checkpoint_ns}:{key.checkpoint_id}"


def thread_key(thread_id: str, checkpoint_ns: str) -> str:
    return f"thread:{{{thread_id}}}:{checkpoint_ns}"


def split_thread_key(key: str) -> tuple[str, str] | None:
    """(thread, ns) of `thread:{thread}:{ns}`. A thread id may hold `}:`; a namespace
    (node names and task ids) does not: the last `}:` ends the thread id."""
    if not key.startswith("thread:{"):
        return None
    rest = key[len("thread:{") :]
    end = rest.rfind("}:")
    return None if end < 0 else (rest[:end], rest[end + 2 :])


def split_key(family: str, key: str) -> CheckpointKey | None:
    """The checkpoint a `checkpoint:` or `writes:` key names (ids hold no `:`)."""
    head, _, checkpoint_id = key.rpartition(":")
    found = (
        split_thread_key("thread:" + head[len(family) + 1 :])
        if head.startswith(family + ":{")
        else None
    )
    return None if found is None or not checkpoint_id else CheckpointKey(*found, checkpoint_id)


class Layout(NamedTuple):
    """What a langgraph-checkpoint-aws Valkey layout says of itself: its era (the name and
    the words), its saver and what in the keys shows it, and what that saver needs."""

    era: str
    era_note: str
    saver: str
    evidence: tuple[str, ...]
    caveat: str = ""


class ValkeyDocuments(DocumentStore, Generic[D]):
    """What ValkeySaver and AgentCoreValkeySaver stores share: a RedisSession without
    modules, a checkpoint document `D` per key (`_documents`), each checkpoint's writes in
    one document (`_writes`), and a `layout` that says which saver wrote them."""

    session: RedisSession
    layout: ClassVar[Layout]

    @property
    def era(self) -> str:
        return self.layout.era

    @property
    def era_note(self) -> str:
        return self.layout.era_note

    def saver(self) -> SaverFacts:
        layout = self.layout
        return aws_saver(layout.saver, layout.evidence, caveat=layout.caveat)

    @abstractmethod
    def _documents(self, keys: Sequence[CheckpointKey]) -> list[D | None]:
        """Each checkpoint's document, in the order of `keys` (None: gone)."""

    @abstractmethod
    def _writes(self, keys: Sequence[CheckpointKey]) -> list[list[WriteFields]]:
        """Each checkpoint's stored writes, in the order of `keys`."""

    def _with_writes(
        self, keys: Sequence[CheckpointKey]
    ) -> Iterator[tuple[CheckpointKey, D, list[WriteFields]]]:
        """Each checkpoint's document and stored writes, in the order of `keys`; those
        whose document is gone left out (their writes are not asked for)."""
        if not keys:
            return
        documents = self._documents(keys)
        present = [k for k, d in zip(keys, documents, strict=True) if d is not None]
        writes = dict(zip(present, self._writes(present), strict=True))
        for key, doc in zip(keys, documents, strict=True):
            if doc is not None:
                yield key, doc, writes[key]

    def _selected_documents(self, query: DumpQuery) -> Iterator[tuple[CheckpointKey, D]]:
        """The query's checkpoint documents, BATCH at a time; those gone left out."""
        for keys in self._selected_keys(query):
            for start in range(0, len(keys), BATCH):
                batch = keys[start : start + BATCH]
                for key, doc in zip(batch, self._documents(batch), strict=True):
                    if doc is not None:
                        yield key, doc

    def _write(self, raw: WriteFields) -> PendingWrite:
        return raw.pending(decode_value(raw.type, raw.data, self.aes_key))

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        for keys in self._selected_keys(query):
            ordered = sorted(keys, key=key_order)
            for start in range(0, len(ordered), BATCH):
                batch = ordered[start : start + BATCH]
                for key, found in zip(batch, self._writes(batch), strict=True):
                    for fields in sorted(found, key=lambda w: (w.task_id, w.idx)):
                        yield fields.raw(key, data=data)

    def close(self) -> None:
        self.session.close()


class ValkeyStore(ValkeyDocuments[Stored]):
    kind = "valkey"
    label = "Valkey"
    layout = Layout(
        "valkey",
        "ValkeySaver (langgraph-checkpoint-aws) keys: checkpoint, writes, thread lists",
        "ValkeySaver",
        ("thread:{thread}:{ns} lists", "checkpoint:{thread}:{ns}:{id} JSON strings"),
    )

    def __init__(
        self,
        spec: str,
        *,
        aes_key: bytes | None = None,
        timeout: float | None = None,
        prefix: str | None = None,
    ) -> None:
        if prefix not in (None, "", "checkpoint"):
            raise NotSupported(
                f"prefix {prefix!r}: Valkey stores are read in ValkeySaver's layout, or "
                "AgentCoreValkeySaver's with prefix 'agentcore'"
            )
        session = RedisSession(spec, timeout=timeout, valkey=True)
        super().__init__(session.location, aes_key=aes_key)
        self.session = session
        try:
            if (
                next(self._scan("thread"), None) is None
                and next(self._scan("checkpoint"), None) is None
            ):
                raise NotACheckpointStore(
                    f"{self.location}: not a ValkeySaver store (no thread:{{...}} or "
                    "checkpoint:{...} keys)"
                )
        except BaseException:
            session.close()
            raise

    def _scan(self, family: str, thread_id: str | None = None) -> Iterator[str]:
        pattern = f"{family}:{{" + (
            glob_escape(thread_id) + "}:*" if thread_id is not None else "*"
        )
        for raw in self.session.scan(pattern):
            yield raw.decode("utf-8", "surrogateescape")

    # -- key names -------------------------------------------------------------------------
    def _lists(self, names: Sequence[tuple[str, str]]) -> list[list[str]]:
        """The checkpoint ids of each (thread, ns) list, newest put first, each once."""
        found: list[list[str]] = []
        for start in range(0, len(names), 500):
            batch = names[start : start + 500]
            answers = self.session.pipeline([("LRANGE", thread_key(*n), 0, -1) for n in batch])
            for answer in answers:
                ids = [i.decode("utf-8", "surrogateescape") for i in answer or ()]
                found.append(list(dict.fromkeys(ids)))  # a re-put id is pushed again
        return found

    def _read_catalog(self) -> dict[str, ThreadInfo]:
        names = [n for key in self._scan("thread") if (n := split_thread_key(key)) is not None]
        threads: dict[str, ThreadInfo] = {}
        for (thread_id, ns), ids in zip(names, self._lists(names), strict=True):
            info = threads.get(thread_id)
            if info is None:
                info = threads[thread_id] = ThreadInfo()
            for checkpoint_id in ids:
                info.add(CheckpointKey(thread_id, ns, checkpoint_id))
        return threads

    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        names = [
            n
            for key in self._scan("thread", thread_id)
            if (n := split_thread_key(key)) is not None and n[0] == thread_id
        ]
        keys = [
            CheckpointKey(thread_id, ns, checkpoint_id)
            for (_, ns), ids in zip(names, self._lists(names), strict=True)
            for checkpoint_id in ids
        ]
        keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
        return keys

    def _all_keys(self) -> Iterator[CheckpointKey]:
        for thread_id in sorted(self._catalog()):
            yield from self._thread_keys(thread_id)

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        # As the saver's get_tuple picks it: the head of the list, the last checkpoint put.
        head = self.session.execute("LRANGE", thread_key(thread_id, checkpoint_ns), 0, 0)
        if not head:
            return None
        return CheckpointKey(thread_id, checkpoint_ns, head[0].decode("utf-8", "surrogateescape"))

    # -- loading ---------------------------------------------------------------------------
    def _get(self, keys: Sequence[str]) -> list[bytes | None]:
        found: list[bytes | None] = []
        for start in range(0, len(keys), 200):
            found.extend(self.session.execute("MGET", *keys[start : start + 200]))
        return found

    def _documents(self, keys: Sequence[CheckpointKey]) -> list[Stored | None]:
        return [
            _stored(text) if text is not None else None
            for text in self._get([checkpoint_key("checkpoint", k) for k in keys])
        ]

    def _writes(self, keys: Sequence[CheckpointKey]) -> list[list[WriteFields]]:
        return [
            _write_list(text) for text in self._get([checkpoint_key("writes", k) for k in keys])
        ]

    def _load_keys(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Checkpoint]:
        return [
            self._checkpoint(
                key,
                stored.parent,
                stored.tag,
                stored.body,
                decode_metadata(stored.metadata),
                [self._write(w) for w in writes],
                values=values,
                size=stored.size,
            )
            for key, stored, writes in self._with_writes(keys)
        ]

    # -- sizes, storage, health ------------------------------------------------------------
    def storage(self) -> StorageRecord:
        return server_storage(
            self.session,
            FAMILIES,
            product="Valkey",
            indexed=False,
            note="read by SCAN and the thread lists",
        )

    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        return {
            key: stored.parent if stored is not None else None
            for key, stored in zip(keys, self._documents(keys), strict=True)
        }

    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        keys = [
            k
            for key in self._scan("writes", thread_id)
            if (k := split_key("writes", key)) is not None and k.thread_id == thread_id
        ]
        return [k for k, found in zip(keys, self._writes(keys), strict=True) for _ in found]

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        for key, stored in self._selected_documents(query):
            yield RawCheckpoint.kept(
                key, stored.parent, stored.tag, stored.body, "json", stored.metadata, data=data
            )


# -- documents -------------------------------------------------------------------------------


def _b64(value: Any) -> bytes:
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode("utf-8", "surrogatepass")


def _stored(text: bytes) -> Stored:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        record = orjson.dumps(undecodable_record(text, "not a JSON object", tag="json"))
        return Stored(None, text, record, None, len(text))
    tag = doc.get("type")
    parent = doc.get("parent_checkpoint_id")
    return Stored(
        tag if isinstance(tag, str) else None,
        _b64(doc.get("checkpoint")),
        _b64(doc.get("metadata")),
        parent if isinstance(parent, str) and parent else None,
        len(text),
    )


def _write_list(text: bytes | None) -> list[WriteFields]:
    if text is None:
        return []
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    writes = []
    for position, entry in enumerate(found if isinstance(found, list) else ()):
        if not isinstance(entry, dict):
            continue
        data = _b64(entry.get("value"))
        idx, tag = entry.get("idx"), entry.get("type")
        writes.append(
            WriteFields(
                task_id=str(entry.get("task_id", "")),
                task_path=str(entry.get("task_path", "")),
                idx=idx if type(idx) is int else position,
                channel=str(entry.get("channel", "")),
                type=tag if isinstance(tag, str) else None,
                data=data,
                size=len(data),
            )
        )
    return writes
