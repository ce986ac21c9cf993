"""A RedisSaver store as the target of `ckpt copy`: the RediSearch indexes its `setup()`
creates, and per checkpoint the keys its `put` and `put_writes` write (format.md §7b):

    checkpoint:{thread}:{ns}:{id}                        the checkpoint, values inline
    checkpoint_write:{thread}:{ns}:{id}:{task}:{idx}     one pending write
    write_keys_zset:{thread}:{ns}:{id}                   its writes' keys
    checkpoint_latest:{thread}:{ns}                      the newest checkpoint's key

ShallowRedisSaver's layout (`shallow`): `checkpoint:{thread}:{ns}` for each namespace's
newest checkpoint (no parent, no has_writes, the metadata an object), its writes, and
`write_registry:{thread}:{ns}:shallow`. Values are written as RedisSaver's JSON
(ckpt.stores.redis.encode). Each thread is one
MULTI/EXEC: Redis runs it whole, and a copy killed before EXEC sends leaves nothing. Keys
get no TTL (RedisSaver's `ttl` lives in the saver's configuration, not in the store).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import orjson

from ckpt.errors import CopyRefused, StoreUnreadable
from ckpt.records.model import RawCheckpoint, RawWrite
from ckpt.records.vocabulary import DEFAULT_TIMEOUT
from ckpt.stores.base import Carried, Target, ThreadSink, close_quietly
from ckpt.stores.location import redact_url, resolved_host
from ckpt.stores.redis.encode import Converted, _Ext, unpack
from ckpt.stores.redis.keys import (
    checkpoint_key,
    checkpoint_name,
    latest_key,
    thread_and_ns,
    to_storage_id,
    to_storage_ns,
    write_name,
    write_zset_key,
)
from ckpt.stores.redis.session import glob_escape, redis_errors
from ckpt.stores.transfer import (
    Blob,
    BlobKey,
    Sends,
    _map_entries,
    _plain,
    metadata_object,
    msgpack_inline,
)

PREFIX: Final = "checkpoint"
WRITE_PREFIX: Final = "checkpoint_write"
_TAG: Final = ("TAG", "SEPARATOR", ",")
# Documents sent in one JSON.MSET (RedisJSON 2.6+): one reply for them, not one each.
MSET_KEYS: Final = 256
MSET_BYTES: Final = 8 << 20
MSET_SINCE: Final = 20600  # RedisJSON's version number of 2.6.0
MEMO_ENTRIES: Final = 4096  # ext values remembered in their JSON form (then forgotten)
# RedisSaver's checkpoints_schema and writes_schema (langgraph-checkpoint-redis 0.5.2), as
# RedisVL's SearchIndex.create() sends them: (path, name, type...).
CHECKPOINT_FIELDS: Final = (
    ("thread_id", _TAG), ("run_id", _TAG), ("checkpoint_ns", _TAG), ("checkpoint_id", _TAG),
    ("parent_checkpoint_id", _TAG), ("checkpoint_ts", ("NUMERIC",)), ("source", _TAG),
    ("step", ("NUMERIC",)), ("has_writes", _TAG),
)  # fmt: skip
WRITE_FIELDS: Final = (
    ("thread_id", _TAG), ("checkpoint_ns", _TAG), ("checkpoint_id", _TAG), ("task_id", _TAG),
    ("idx", ("NUMERIC",)), ("channel", _TAG), ("type", _TAG),
)  # fmt: skip


def index_command(name: str, fields: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
    """The FT.CREATE RedisVL sends for one of RedisSaver's schemas."""
    command = ["FT.CREATE", name, "ON", "JSON", "PREFIX", "1", name + ":", "SCHEMA"]
    for field_name, kind in fields:
        command += [f"$.{field_name}", "AS", field_name, *kind]
    return command


@dataclass(frozen=True, slots=True)
class RedisRow:
    """A checkpoint as RedisSaver's `put` stores it: its key and document (has_writes set
    by the sink, which has seen the writes)."""

    checkpoint_ns: str
    checkpoint_id: str
    key: str
    document: dict[str, Any]


class RedisTarget(Target):
    layout = "json"

    def __init__(self, spec: str, *, timeout: float | None = None, shallow: bool = False) -> None:
        self.shallow = shallow
        # A message is stored again in every later checkpoint of its thread (the channel
        # holds the whole list): its ext bytes are turned into JSON once, then reused.
        self.memo: dict[tuple[int, bytes], tuple[Any, bool]] = {}
        from ckpt.stores.redis.session import _import_redis, _module_name, _text

        self.redis = _import_redis()
        self.location = redact_url(spec)
        self.notices = []
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        try:
            self.client: Any = self.redis.Redis.from_url(
                spec,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                protocol=2,
            )
        except ValueError as exc:
            raise StoreUnreadable(f"{self.location}: not a valid Redis URL ({exc})") from None
        try:
            with self.errors("cannot connect"):
                modules = self.client.execute_command("MODULE", "LIST")
                self.modules = {_text(_module_name(m)).lower() for m in modules or ()}
                self.mset = any(
                    _text(_module_name(m)).lower() in ("rejson", "redisjson")
                    and _module_version(m) >= MSET_SINCE
                    for m in modules or ()
                )
                self.indexes = (
                    {_text(n) for n in self.client.execute_command("FT._LIST") or ()}
                    if "search" in self.modules
                    else set()
                )
                has_keys = bool(self.client.scan(0, match=f"{PREFIX}:*", count=1000)[1])
            kwargs = self.client.connection_pool.connection_kwargs
            where = kwargs.get("path") or (
                f"{resolved_host(str(kwargs.get('host', 'localhost')))}:{kwargs.get('port', 6379)}"
            )
            # As RedisSession.identity spells it for the store read from the same server.
            self.identity = f"redis://{where}/{kwargs.get('db', 0)}/{PREFIX}"
            self.state = "ready" if PREFIX in self.indexes or has_keys else "new"
            with self.errors("cannot connect"):
                found = self.client.scan(0, match="write_registry:*:shallow", count=1000)[1]
            if has_keys and bool(found) != shallow:
                there, asked = ("ShallowRedisSaver's", "RedisSaver's") if found else (
                    "RedisSaver's", "ShallowRedisSaver's")  # fmt: skip
                raise StoreUnreadable(
                    f"{self.location} holds {there} layout: copying {asked} into it would mix "
                    + ("them (pass `shallow`)" if found else "them (leave out `shallow`)")
                )
        except BaseException:
            self.client.close()
            raise

    def errors(self, doing: str = "cannot write") -> AbstractContextManager[None]:
        return redis_errors(self.redis, self.location, self.timeout, doing)

    # -- the layout --------------------------------------------------------------------
    def redis_json(self, data: bytes, where: str) -> tuple[Any, bool]:
        """msgpack bytes as RedisSaver's JSON, and whether they held bytes
        (ckpt.stores.redis.encode), ext values converted once while remembered."""
        if len(self.memo) > MEMO_ENTRIES:
            self.memo.clear()
        converter = _Remembering(where, self.memo)
        return converter.value(unpack(data, where)), converter.has_bytes

    def laid_out(self, row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends) -> Carried:
        inline = msgpack_inline(
            row, blobs, sends, ", which ckpt does not turn into RedisSaver's JSON"
        )
        where = f"checkpoint {row.checkpoint_id}"
        body: dict[str, Any] = {"type": "json"}
        held_bytes = False
        for key, packed in _map_entries(inline.body, where):
            if key == "channel_values":
                values = {}
                for channel, value in _map_entries(packed, f"{where}'s channel_values"):
                    values[channel], found = self.redis_json(value, f"{where}: channel {channel!r}")
                    held_bytes = held_bytes or found
                body[key] = values
            elif key == "pending_sends":
                continue  # RedisSaver keeps Sends as the parent's writes, and writes []
            else:
                plain = _plain(packed, f"{where}'s {key!r}")
                if key == "channel_versions" and isinstance(plain, dict):
                    plain = {k: str(v) for k, v in plain.items()}
                body[key] = plain
        if held_bytes:
            body["type"] = "msgpack"  # what its serializer falls back to (format.md §7b)
        body["pending_sends"] = []
        metadata = metadata_object(row, f"{where}: its metadata")
        document: dict[str, Any] = {
            "thread_id": to_storage_id(row.thread_id),
            "run_id": to_storage_id(str(metadata["run_id"])) if metadata.get("run_id") else "",
            "checkpoint_ns": to_storage_ns(row.checkpoint_ns),
            "checkpoint_id": to_storage_id(row.checkpoint_id),
            "parent_checkpoint_id": (
                to_storage_id(row.parent_checkpoint_id) if row.parent_checkpoint_id else ""
            ),
            "checkpoint_ts": _timestamp(body.get("ts")),
            "checkpoint": body,
            # JsonPlusRedisSerializer's JSON of the metadata, NUL escapes dropped as it does.
            "metadata": orjson.dumps(metadata).decode().replace("\\u0000", ""),
            "has_writes": False,
        }
        if "source" in metadata and "step" in metadata:
            document["source"], document["step"] = metadata["source"], metadata["step"]
        key = checkpoint_key(PREFIX, row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        if self.shallow:
            key, document = _shallow(row, document, metadata)
        text = orjson.dumps(document)
        return Carried(RedisRow(row.checkpoint_ns, row.checkpoint_id, key, document), len(text), {})

    def carry_write(self, write: RawWrite) -> RawWrite:
        """The write's (type, bytes) as RedisSaver's put_writes makes them: JSON, or its
        msgpack as stored when the value holds bytes (its serializer's fallback)."""
        where = f"a pending write of checkpoint {write.checkpoint_id} (channel {write.channel!r})"
        tag = write.type
        if tag in ("null", "bytes", "bytearray", "json"):
            return write
        if tag != "msgpack" or write.data is None:
            raise CopyRefused(f"{where} is stored as {tag!r}, which RedisSaver does not keep")
        value, held_bytes = self.redis_json(write.data, where)
        if held_bytes:
            return write
        text = orjson.dumps(value)
        return dataclasses.replace(write, type="json", data=text, size=len(text))

    def send_documents(self, pipe: Any, commands: Sequence[tuple[Any, ...]]) -> None:
        """Queue the JSON.SETs `commands` (each `JSON.SET key $ text`) in their order: as
        JSON.MSETs of up to MSET_KEYS documents where the server has it (RedisJSON sets
        and RediSearch indexes their keys in the order given, as for the JSON.SETs)."""
        if not self.mset:
            for command in commands:
                pipe.execute_command(*command)
            return
        batch: list[Any] = []
        size = 0
        for _, key, path, text in commands:
            batch += (key, path, text)
            size += len(text)
            if len(batch) >= 3 * MSET_KEYS or size >= MSET_BYTES:
                pipe.execute_command("JSON.MSET", *batch)
                batch, size = [], 0
        if batch:
            pipe.execute_command("JSON.MSET", *batch)

    # -- the server --------------------------------------------------------------------
    def check_writable(self, *, replace: bool) -> None:
        if not ({"rejson", "redisjson"} & self.modules) or "search" not in self.modules:
            raise StoreUnreadable(
                f"{self.location}: RedisSaver needs the RedisJSON and RediSearch modules, "
                "which this server has not (use Redis 8 or Redis Stack); nothing copied"
            )
        with self.errors("cannot check the target"):
            info = self.client.info("replication")
        if info.get("role") != "master":
            raise StoreUnreadable(
                f"{self.location}: the target is a read-only replica; copy into its primary"
            )

    def setup(self) -> None:
        with self.errors("cannot create the RediSearch indexes"):
            for name, fields in ((PREFIX, CHECKPOINT_FIELDS), (WRITE_PREFIX, WRITE_FIELDS)):
                if name not in self.indexes:
                    self.client.execute_command(*index_command(name, fields))
                    self.indexes.add(name)
        self.state = "ready"

    def existing(self, thread_ids: Sequence[str]) -> set[str]:
        if self.state == "new":
            return set()
        wanted = set(thread_ids)
        found: set[str] = set()
        with self.errors("cannot read the target"):
            for prefix, read in ((PREFIX, checkpoint_name), (WRITE_PREFIX, write_name)):
                for raw in self.client.scan_iter(match=f"{prefix}:*", count=2000):
                    name = read(raw.decode("utf-8", "surrogateescape"), prefix)
                    if name is not None and name.thread_id in wanted:
                        found.add(name.thread_id)
        return found

    def thread_keys(self, thread_id: str) -> list[bytes]:
        """Every key RedisSaver keeps for the thread (what `replace` deletes): those under
        its id whose name reads as its own, and those whose name splits more than one way
        (keys.py) when the checkpoint document they belong to names the thread."""
        sid = glob_escape(to_storage_id(thread_id))
        keys: list[bytes] = []
        unsure: list[tuple[bytes, str]] = []  # (key, the checkpoint document that says)
        with self.errors("cannot read the target"):
            for family in (PREFIX, WRITE_PREFIX, "write_keys_zset", f"{PREFIX}_latest",
                           "write_registry"):  # fmt: skip
                for raw in self.client.scan_iter(match=f"{family}:{sid}:*", count=2000):
                    if self.shallow and family in (PREFIX, "write_registry"):
                        continue  # by the id as is, below
                    text = raw.decode("utf-8", "surrogateescape")
                    owner = _owner_key(text, family)
                    name = (
                        write_name(text, WRITE_PREFIX)
                        if family == WRITE_PREFIX
                        else checkpoint_name(text, family)
                        if family in (PREFIX, "write_keys_zset")
                        else None
                    )
                    if family == f"{PREFIX}_latest":
                        split = thread_and_ns(text[len(family) + 1 :])
                        pointer = self.client.get(raw) if split is None else None
                        if isinstance(pointer, bytes):  # the checkpoint key it points to
                            unsure.append((raw, pointer.decode("utf-8", "surrogateescape")))
                        elif split is None or split[0] == thread_id:
                            keys.append(raw)
                    elif name is not None:
                        if name.thread_id == thread_id:
                            keys.append(raw)
                    elif owner is not None:
                        unsure.append((raw, owner))
                    else:
                        keys.append(raw)
            said = self.client.pipeline(transaction=False)
            for _, owner in unsure:
                said.execute_command("JSON.GET", owner, "$.thread_id")
            for (raw, _), answer in zip(unsure, said.execute(), strict=True):
                ids = orjson.loads(answer) if isinstance(answer, bytes | str) else []
                if not ids or ids[0] == to_storage_id(thread_id) or ids[0] == thread_id:
                    keys.append(raw)  # its own, or nothing says it is another thread's
            if self.shallow:  # `checkpoint:{thread}:{ns}` and its registry: by the id as is
                raw_id = glob_escape(thread_id)
                for pattern in (f"{PREFIX}:{raw_id}:*", f"write_registry:{raw_id}:*"):
                    keys.extend(self.client.scan_iter(match=pattern, count=2000))
        return keys

    def thread(self, thread_id: str, *, replace: bool) -> ThreadSink:
        doomed = self.thread_keys(thread_id) if replace else []
        if self.shallow:
            return _ShallowSink(self, thread_id, doomed)
        return _RedisSink(self, thread_id, doomed)

    def close(self) -> None:
        close_quietly(self.client)


class _Remembering(Converted):
    """Converted, with each ext value's JSON (and whether it held bytes) kept in `memo`
    by its bytes: the same bytes always give the same JSON, shared read-only."""

    __slots__ = ("memo",)

    def __init__(self, where: str, memo: dict[tuple[int, bytes], tuple[Any, bool]]) -> None:
        super().__init__(where)
        self.memo = memo

    def ext(self, ext: _Ext) -> Any:
        key = (ext.code, ext.data)
        known = self.memo.get(key)
        if known is None:
            held, self.has_bytes = self.has_bytes, False
            known = self.memo[key] = (super().ext(ext), self.has_bytes)
            self.has_bytes = held
        self.has_bytes = self.has_bytes or known[1]
        return known[0]


@dataclass
class _RedisSink(ThreadSink):
    target: RedisTarget
    thread_id: str
    doomed: list[bytes]
    with_writes: set[tuple[str, str]] = field(default_factory=set)
    registries: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    calls: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    newest: dict[str, RedisRow] = field(default_factory=dict)  # shallow: kept per namespace
    pending: list[RawWrite] = field(default_factory=list)  # shallow: writes, kept till then
    # Each checkpoint's JSON.SET, and its writes', sent in the order the saver makes them
    # (a checkpoint, then its writes, oldest first): RedisSaver reads writes back in the
    # order RediSearch indexed them, which is how it replays a DeltaChannel.
    saved: dict[tuple[str, str], tuple[Any, ...]] = field(default_factory=dict)
    written: dict[tuple[str, str], list[tuple[Any, ...]]] = field(default_factory=dict)

    def ordered(self) -> list[tuple[Any, ...]]:
        commands: list[tuple[Any, ...]] = []
        for at in sorted(self.saved.keys() | self.written.keys(), key=lambda k: (k[1], k[0])):
            if at in self.saved:
                commands.append(self.saved[at])
            commands.extend(self.written.get(at, ()))
        return commands

    def checkpoint(self, row: RedisRow) -> None:
        document = row.document
        if (row.checkpoint_ns, row.checkpoint_id) in self.with_writes:
            document = {**document, "has_writes": True}
        at = (row.checkpoint_ns, row.checkpoint_id)
        self.saved[at] = ("JSON.SET", row.key, "$", orjson.dumps(document))
        if row.checkpoint_id > self.latest.get(row.checkpoint_ns, ""):
            self.latest[row.checkpoint_ns] = row.checkpoint_id

    def write(self, write: RawWrite) -> None:
        idx = write.idx
        key = (
            f"{WRITE_PREFIX}:{to_storage_id(self.thread_id)}:{to_storage_ns(write.checkpoint_ns)}"
            f":{to_storage_id(write.checkpoint_id)}:{write.task_id}:{idx}"
        )
        data = write.data or b""
        document = {
            "thread_id": to_storage_id(self.thread_id),
            "checkpoint_ns": to_storage_ns(write.checkpoint_ns),
            "checkpoint_id": to_storage_id(write.checkpoint_id),
            "task_id": write.task_id,
            "task_path": write.task_path,
            "idx": idx,
            "channel": write.channel,
            "type": write.type,
            "blob": base64.b64encode(data).decode(),
        }
        at = (write.checkpoint_ns, write.checkpoint_id)
        self.written.setdefault(at, []).append(("JSON.SET", key, "$", orjson.dumps(document)))
        self.with_writes.add(at)
        # put_writes scores a call's keys 0, 1, 2 ...: one call per task.
        calls = self.calls.setdefault((*at, write.task_id), [0])
        self.registries.setdefault(at, {})[key] = calls[0]
        calls[0] += 1

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """The thread's one MULTI/EXEC: the doomed keys deleted and the documents set, then
        what the caller queues on the pipeline it is given (registries, pointers), then
        EXEC; the documents are forgotten once sent."""
        target = self.target
        with target.errors():
            pipe = target.client.pipeline(transaction=True)
            if self.doomed:
                pipe.delete(*self.doomed)
            target.send_documents(pipe, self.ordered())
            yield pipe
            pipe.execute()
        self.saved, self.written = {}, {}

    def commit(self) -> None:
        with self._transaction() as pipe:
            for (ns, checkpoint_id), registry in self.registries.items():
                pipe.zadd(write_zset_key(self.thread_id, ns, checkpoint_id), registry)
            for ns, checkpoint_id in self.latest.items():
                pipe.set(
                    latest_key(PREFIX, self.thread_id, ns),
                    checkpoint_key(PREFIX, self.thread_id, ns, checkpoint_id),
                )

    def rollback(self) -> None:
        self.saved, self.written = {}, {}  # nothing was sent: MULTI/EXEC goes at commit


class _ShallowSink(_RedisSink):
    """ShallowRedisSaver's layout: each namespace's newest checkpoint, without its parent,
    under `checkpoint:{thread}:{ns}`, and the writes of that checkpoint, registered in
    `write_registry:{thread}:{ns}:shallow`; no latest pointer, no has_writes."""

    def checkpoint(self, row: RedisRow) -> None:
        kept = self.newest.get(row.checkpoint_ns)
        if kept is None or row.checkpoint_id > kept.checkpoint_id:
            self.newest[row.checkpoint_ns] = row

    def write(self, write: RawWrite) -> None:
        self.pending.append(write)

    def commit(self) -> None:
        for ns, row in self.newest.items():
            self.saved[(ns, row.checkpoint_id)] = (
                "JSON.SET", row.key, "$", orjson.dumps(row.document)
            )  # fmt: skip
            for write in self.pending:
                if (write.checkpoint_ns, write.checkpoint_id) == (ns, row.checkpoint_id):
                    super().write(write)
        # Writes of checkpoints a shallow store does not keep are left out.
        with self._transaction() as pipe:
            registries: dict[str, dict[str, int]] = {}
            for (ns, _), registry in self.registries.items():
                registries.setdefault(
                    f"write_registry:{self.thread_id}:{to_storage_ns(ns)}:shallow", {}
                ).update(registry)
            for key, registry in registries.items():
                pipe.zadd(key, registry)


def _module_version(module: Any) -> int:
    """The version number MODULE LIST gives a module (0 when it gives none)."""
    pairs: Any = {}
    if isinstance(module, dict):
        pairs = module
    elif isinstance(module, list | tuple):  # RESP2: [b"name", b"ReJSON", b"ver", 20803, ...]
        pairs = dict(zip(module[::2], module[1::2], strict=False))
    found = pairs.get(b"ver", pairs.get("ver", 0))
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _owner_key(key: str, family: str) -> str | None:
    """The checkpoint document that says whose a key is: the checkpoint's own, a write's
    checkpoint, a registry's checkpoint; None for a latest pointer (`{PREFIX}_latest:
    {thread}:{ns}`, whose value is the checkpoint's key) and the shallow registry."""
    rest = key[len(family) + 1 :]
    if family in (PREFIX, "write_keys_zset"):
        return f"{PREFIX}:{rest}"
    if family == WRITE_PREFIX:
        return f"{PREFIX}:{rest.rsplit(':', 2)[0]}"
    return None


def _shallow(
    row: RawCheckpoint, document: dict[str, Any], metadata: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """ShallowRedisSaver's key and document for a checkpoint RedisSaver's would be:
    ids as they are, no parent and no has_writes, the metadata as an object."""
    shallow: dict[str, Any] = {
        "thread_id": row.thread_id,
        "run_id": document["run_id"],
        "checkpoint_ns": document["checkpoint_ns"],
        "checkpoint_id": row.checkpoint_id,
        "checkpoint_ts": document["checkpoint_ts"],
        "checkpoint": document["checkpoint"],
        "metadata": json.loads(document["metadata"]),
    }
    if "source" in metadata and "step" in metadata:
        shallow["source"], shallow["step"] = metadata["source"], metadata["step"]
    return f"{PREFIX}:{row.thread_id}:{row.checkpoint_ns}", shallow


def _timestamp(ts: Any) -> float | None:
    """The checkpoint's time in milliseconds (RedisSaver's `checkpoint_ts`, which it takes
    from the clock when the id is no ULID, as LangGraph's are not)."""
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts).timestamp() * 1000
    except ValueError:
        return None
