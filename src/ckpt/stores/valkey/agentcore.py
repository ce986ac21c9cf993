"""AgentCoreValkeySaver stores (langgraph-checkpoint-aws 1.2.6, format.md §7f), read-only:
`valkey://... --prefix agentcore`.

    agentcore:checkpoint:{session}:{actor}:{ns}:{id}   JSON: checkpoint_id, session_id,
                                                      actor_id, thread_id, checkpoint_ns,
                                                      parent_checkpoint_id, checkpoint_data
                                                      and metadata as {"type", "data"
                                                      (base64)} serde pairs, created_at
    agentcore:writes:{session}:{actor}:{ns}:{id}       a list (RPUSH) of JSON writes:
                                                      task_id, channel, value (a pair),
                                                      task_path; no idx
    agentcore:channel:...                              each new channel value again (the
                                                      saver never reads them back)
    agentcore:session:{session}:{actor}:checkpoints    ids, newest put first

The session is the thread id in the root namespace, sha256(f"{thread}_{ns}") in a
subgraph's: key names do not say the namespace, so ckpt reads the documents' own fields.
A ckpt thread is the thread id (an actor's checkpoints are told apart by their keys).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence
from typing import Any, Final

import orjson

from ckpt.errors import NotACheckpointStore
from ckpt.records.model import (
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    RawCheckpoint,
)
from ckpt.records.types import StorageRecord
from ckpt.stores.body import decode_value
from ckpt.stores.documents import ThreadInfo, WriteFields, key_order, parent_id
from ckpt.stores.redis.session import RedisSession, server_storage
from ckpt.stores.valkey.store import Layout, ValkeyDocuments

PREFIX: Final = "agentcore"
# LangGraph's WRITES_IDX_MAP (format.md §3.7): the special channels' fixed indexes, which
# AgentCoreValkeySaver does not store (a write's idx here is its place in its task's).
SPECIAL_IDX: Final = {"__error__": -1, "__scheduled__": -2, "__interrupt__": -3, "__resume__": -4}


def _pair(value: Any) -> tuple[str | None, bytes]:
    """A {"type", "data": base64} serde pair as (tag, bytes)."""
    if not isinstance(value, dict):
        return None, b""
    tag, data = value.get("type"), value.get("data")
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) else b""
    except (binascii.Error, ValueError):
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else b""
    return (tag if isinstance(tag, str) else None), raw


def _json(text: bytes | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


class AgentCoreStore(ValkeyDocuments[dict[str, Any]]):
    kind = "valkey"
    label = "Valkey"
    layout = Layout(
        "agentcore-valkey",
        "AgentCoreValkeySaver (langgraph-checkpoint-aws) agentcore:* keys",
        "AgentCoreValkeySaver",
        ("agentcore:checkpoint:{session}:{actor}:{ns}:{id} JSON strings",),
        caveat=" (given each actor_id)",
    )

    def __init__(
        self, spec: str, *, aes_key: bytes | None = None, timeout: float | None = None
    ) -> None:
        session = RedisSession(spec, timeout=timeout, valkey=True)
        super().__init__(session.location, aes_key=aes_key)
        self.session = session
        self._keys: dict[CheckpointKey, str] = {}  # checkpoint -> its document's key
        try:
            if next(self.session.scan(f"{PREFIX}:checkpoint:*"), None) is None:
                raise NotACheckpointStore(
                    f"{self.location}: not an AgentCoreValkeySaver store (no "
                    "agentcore:checkpoint:... keys)"
                )
        except BaseException:
            session.close()
            raise

    # -- the catalog: every document's own fields ------------------------------------------
    def _read_catalog(self) -> dict[str, ThreadInfo]:
        found = self.session.scan(f"{PREFIX}:checkpoint:*")
        names = [k.decode("utf-8", "surrogateescape") for k in found]
        threads: dict[str, ThreadInfo] = {}
        actors: dict[str, set[str]] = {}
        for start in range(0, len(names), 200):
            batch = names[start : start + 200]
            for name, text in zip(batch, self.session.execute("MGET", *batch), strict=True):
                doc = _json(text)
                if not isinstance(doc, dict):
                    continue
                thread_id, ns, checkpoint_id = (
                    doc.get(f) for f in ("thread_id", "checkpoint_ns", "checkpoint_id")
                )
                if not (
                    isinstance(thread_id, str)
                    and isinstance(ns, str)
                    and isinstance(checkpoint_id, str)
                ):
                    continue
                key = CheckpointKey(thread_id, ns, checkpoint_id)
                self._keys[key] = name
                info = threads.get(key.thread_id)
                if info is None:
                    info = threads[key.thread_id] = ThreadInfo()
                info.add(key)
                actors.setdefault(key.thread_id, set()).add(str(doc.get("actor_id")))
        shared = sorted(t for t, found in actors.items() if len(found) > 1)
        if shared:
            self.notices.append(
                f"thread {shared[0]!r} (and {len(shared) - 1} others) has checkpoints of "
                "several actors: ckpt shows them as one thread"
            )
        return threads

    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        self._catalog()
        keys = [k for k in self._keys if k.thread_id == thread_id]
        keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
        return keys

    def _all_keys(self) -> Iterator[CheckpointKey]:
        self._catalog()
        yield from sorted(self._keys, key=key_order)

    # -- loading ---------------------------------------------------------------------------
    def _documents(self, keys: Sequence[CheckpointKey]) -> list[dict[str, Any] | None]:
        self._catalog()
        names = [self._keys.get(k) for k in keys]
        present = [n for n in names if n is not None]
        texts = iter(self.session.execute("MGET", *present) if present else [])
        found: list[dict[str, Any] | None] = []
        for name in names:
            doc = _json(next(texts)) if name is not None else None
            found.append(doc if isinstance(doc, dict) else None)
        return found

    def _writes(self, keys: Sequence[CheckpointKey]) -> list[list[WriteFields]]:
        names = [
            self._keys[k].replace(f"{PREFIX}:checkpoint:", f"{PREFIX}:writes:", 1) for k in keys
        ]
        answers = self.session.pipeline([("LRANGE", n, 0, -1) for n in names])
        found = []
        for answer in answers:
            writes: list[WriteFields] = []
            seen: dict[str, int] = {}
            for text in answer if isinstance(answer, list) else ():
                entry = _json(text)
                if not isinstance(entry, dict):
                    continue
                tag, data = _pair(entry.get("value"))
                task_id, channel = str(entry.get("task_id", "")), str(entry.get("channel", ""))
                position = seen.get(task_id, 0)
                seen[task_id] = position + 1
                writes.append(
                    WriteFields(
                        task_id=task_id,
                        task_path=str(entry.get("task_path", "")),
                        idx=SPECIAL_IDX.get(channel, position),
                        channel=channel,
                        type=tag,
                        data=data,
                        size=len(data),
                    )
                )
            found.append(writes)
        return found

    def _load_keys(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Checkpoint]:
        keys = [k for k in keys if k in self._keys or not self._catalog_cache]
        built = []
        for key, doc, writes in self._with_writes(keys):
            tag, body = _pair(doc.get("checkpoint_data"))
            built.append(
                self._checkpoint(
                    key,
                    parent_id(doc),
                    tag,
                    body,
                    self._metadata(doc),
                    [self._write(w) for w in writes],
                    values=values,
                    size=len(body),
                )
            )
        return built

    def _metadata(self, doc: dict[str, Any]) -> dict[str, Any]:
        tag, data = _pair(doc.get("metadata"))
        if not data:
            return {}
        value = decode_value(tag, data, self.aes_key)
        return value if isinstance(value, dict) else {"value": value}

    # -- sizes, storage, health ------------------------------------------------------------
    def storage(self) -> StorageRecord:
        return server_storage(
            self.session,
            (PREFIX,),
            product="Valkey",
            indexed=False,
            note="read by SCAN of agentcore:checkpoint:*",
        )

    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        found: dict[CheckpointKey, str | None] = {}
        for key, doc in zip(keys, self._documents(keys), strict=True):
            found[key] = parent_id(doc) if doc is not None else None
        return found

    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        keys = self._thread_keys(thread_id)
        return [k for k, found in zip(keys, self._writes(keys), strict=True) for _ in found]

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        for key, doc in self._selected_documents(query):
            tag, body = _pair(doc.get("checkpoint_data"))
            metadata_tag, metadata = _pair(doc.get("metadata"))
            yield RawCheckpoint.kept(
                key, parent_id(doc), tag, body, metadata_tag, metadata, data=data
            )
