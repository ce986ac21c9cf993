"""`ckpt types`: every class a store's values name, and what LangGraph's strict mode does with it.

The census reads the raw rows (`Store.raw_checkpoints`, `raw_blobs`, `raw_writes`) and
never builds decoded values: a msgpack document is unpacked by ormsgpack in Rust with its
ext values left as `slice(code, data)` placeholders (as ckpt.decoders.skeleton does), the
plain containers around them are walked to learn which channel each one sits in, and
each ext payload is unpacked again with a hook that only notes `(code, module, name)` and
returns None, so nested classes (an Enum inside a pydantic model inside a message's
kwargs, a dataclass in a list) are counted too. Nothing named in the data is imported or
called; `pickle` values are listed with pickletools (ckpt.decoders.pickle_imports).

Statuses follow LangGraph's own checks (langgraph/checkpoint/serde/jsonplus.py,
`_create_msgpack_ext_hook` and `JsonPlusSerializer._reviver`), with ckpt.decoders.safe_types as
the safe list; docs/json.md "ckpt types" documents the record.

Memory stays flat: rows stream, and what is kept is per type (counts, channel names, one
example). Thread counts need to know when a thread's rows are over: SQLite and pickle
stores are read as one stream merged by thread id (all three scans list rows in Python
string order of thread ids); Postgres scans run one after the other inside one
transaction, so there the blobs and writes of each batch of threads are read after the
batch's checkpoints, and the batch's threads are forgotten once it is done.
"""

from __future__ import annotations

import json
import marshal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Final, Protocol

import ormsgpack

from ckpt.decoders.crypto import decrypt_aes
from ckpt.decoders.depth import (
    ESTIMATE_LIMIT,
    MAX_EXT_NESTING,
    ORMSGPACK_MAX_DEPTH,
    STACK_BUDGET,
    max_depth,
)
from ckpt.decoders.ext import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_NUMPY_ARRAY,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
)
from ckpt.decoders.msgpack import TOO_MANY_EXTS, ext_budget
from ckpt.decoders.pickle_imports import pickle_globals
from ckpt.decoders.safe_types import RELEASE, SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from ckpt.errors import BadOption, DecodeError, NotFound, TooLarge
from ckpt.records.model import DumpQuery, RawBlob, RawCheckpoint, RawWrite
from ckpt.records.types import (
    AllowlistRecord,
    DegradeRecord,
    PickleGlobalRecord,
    TagCountRecord,
    TypeExampleRecord,
    TypesEncryptionRecord,
    TypesRecord,
    TypesStoreRecord,
    TypeStatus,
    TypeUseRecord,
    UndecodableRecord,
)
from ckpt.records.vocabulary import TOO_LARGE
from ckpt.stores.base import Store

RawRow = RawCheckpoint | RawBlob | RawWrite
Progress = Callable[[Iterator[RawRow]], Iterator[RawRow]]

# Envelope kinds of the json tag, beside the msgpack ext codes 0-7 in a type key.
LC1: Final = 101
LC2: Final = 102
# (code, module, name, method): code is an ext code, LC1 or LC2; method only for ext 3.
TypeKey = tuple[int, str, str, str | None]
# (part, name): ("channel", "messages"), ("write", "messages"), ("elsewhere", "metadata").
Where = tuple[str, str]
# Where one occurrence is: thread, namespace, checkpoint id (None for a blob until it is
# matched to a checkpoint), part, channel, blob version.
Example = tuple[str, str, str | None, str, str | None, str | None]

_CONSTRUCTORS: Final = frozenset(
    {
        EXT_CONSTRUCTOR_SINGLE_ARG,
        EXT_CONSTRUCTOR_POS_ARGS,
        EXT_CONSTRUCTOR_KW_ARGS,
        EXT_PYDANTIC_V1,
        EXT_PYDANTIC_V2,
    }
)
# What LangGraph returns instead of the object when it does not rebuild one: `payload[2]`
# of the ext record (jsonplus.py), or the lc:2 envelope itself under the json tag.
_BECOMES: Final[dict[int, str]] = {
    EXT_CONSTRUCTOR_SINGLE_ARG: "value",
    EXT_CONSTRUCTOR_POS_ARGS: "list",
    EXT_CONSTRUCTOR_KW_ARGS: "dict",
    EXT_METHOD_SINGLE_ARG: "value",
    EXT_PYDANTIC_V1: "dict",
    EXT_PYDANTIC_V2: "dict",
    LC2: "envelope",
}
_STATUS_ORDER: Final[dict[str, int]] = {
    "blocked": 0,
    "allowlist": 1,
    "langchain": 2,
    "ungated": 3,
    "safe": 4,
}
# Bytes that start an ext value (fixext 1-16, ext 8/16/32): a document holding none of
# them has no ext value, and a value without one needs no unpacking at all.
_EXT_HEADERS: Final = (0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xC7, 0xC8, 0xC9)
_NON_STR_KEYS: Final = ormsgpack.OPT_NON_STR_KEYS
_STOP: Final = attrgetter("stop")
_NO_CLASSES: Final = frozenset({"null", "empty", "bytes", "bytearray"})
_METADATA: Final[Where] = ("elsewhere", "metadata")
_BODY: Final[Where] = ("elsewhere", "checkpoint body")
_PENDING_SENDS: Final[Where] = ("elsewhere", "pending_sends")
_EXAMPLE_PART: Final = {
    "checkpoints": "checkpoint",
    "blobs": "blob",
    "writes": "write",
    "metadata": "metadata",
}
_PLAIN: Final = frozenset({str, int, float, bool, type(None), bytes})
_MAX_UNDECODABLE: Final = 20  # examples kept; scanned.undecodable counts them all
CACHE_BYTES: Final = 32 << 20  # ext payload bytes kept for look-ups (per thread, at most)
MAX_INTERNED: Final = 10_000  # distinct ext contents shared as one object
PG_BATCH: Final = 500  # Postgres: threads whose blobs and writes are read together
# Metadata formats LangGraph never revives ("mongodb-pairs": MongoDBSaver's typed values,
# shown as stored when one is not plain data; its census is not taken yet).
_SERDE_METADATA: Final = frozenset({"json", "jsonb", "mongodb-pairs"})


def census(
    store: Store, query: DumpQuery | None = None, *, progress: Progress | None = None
) -> TypesRecord:
    """The type census of `store` (or of the threads `query` selects): `ckpt types --json`.

    `progress`, if given, wraps the stream of raw rows (the CLI puts a stderr bar there).
    Raises NotFound for an unknown thread in `query`; values that stay encrypted or do not
    decode are reported in the record, never raised.
    """
    query = query or DumpQuery()
    for thread_id in query.thread_ids:
        if not thread_id.strip():
            raise BadOption("empty thread id in `threads`")
        if not store.thread_exists(thread_id):
            raise NotFound(f"no thread {thread_id!r} in {store.location}")
    scan = Census(store.aes_key)
    rows = _rows(store, query, scan)
    for row in progress(rows) if progress is not None else rows:
        scan.row(row)
    return census_record(store, scan)


def census_record(store: Store, scan: Census) -> TypesRecord:
    """The record of a census fed by another scan (ckpt.scan.check reads the rows itself and
    hands each one to `scan.row`, calling `scan.flush()` after each batch of threads)."""
    scan.flush()
    _place_blob_examples(store, scan)
    return scan.record(_store_record(store))


class Watcher(Protocol):
    """What a census tells the scan that feeds it (`ckpt check`) about single rows: the
    counts of the TypesRecord say how many, these say which."""

    def body(self, row: RawCheckpoint, body: Any) -> None:
        """A checkpoint body as read: the plain document, ext values left packed as
        `slice(code, data)` (msgpack), or the JSON document (json, Postgres JSONB)."""

    def problem(self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool) -> None:
        """A value that does not decode (`at`: checkpoint, metadata, blob, write); `large`:
        one past ckpt's resource caps (TooLarge), which is not damage."""

    def unverified(self, row: RawRow, at: str, tag: str | None) -> None:
        """An encrypted value the key given does not open (its authentication failed)."""

    def strict(self, row: RawRow, at: str, names: list[str]) -> None:
        """A value naming classes LangGraph's strict msgpack mode does not rebuild."""

    def pickled(self, row: RawRow, at: str, names: list[str]) -> None:
        """A pickle value, and the globals loading it would import."""


# -- reading the rows ----------------------------------------------------------------------


def _rows(store: Store, query: DumpQuery, scan: Census) -> Iterator[RawRow]:
    if store.rows_in_python_order:
        return _merged_rows(store, query, scan)
    return _batched_rows(store, query, scan)


def _merged_rows(store: Store, query: DumpQuery, scan: Census) -> Iterator[RawRow]:
    """Every row of the three scans, one thread after another (stores whose scans list
    rows sorted by thread id in Python's order), with a flush between threads: a
    thread's checkpoints, then its blobs, then its writes."""
    streams: list[Iterator[RawRow]] = [
        store.raw_checkpoints(query),
        store.raw_blobs(query),
        store.raw_writes(query),
    ]
    heads: list[RawRow | None] = [next(stream, None) for stream in streams]
    while True:
        waiting = [head.thread_id for head in heads if head is not None]
        if not waiting:
            return
        thread_id = min(waiting)
        for index, stream in enumerate(streams):
            head = heads[index]
            while head is not None and head.thread_id == thread_id:
                yield head
                head = next(stream, None)
            heads[index] = head
        scan.flush()


def _batched_rows(store: Store, query: DumpQuery, scan: Census) -> Iterator[RawRow]:
    """Stores whose order is their own collation (Postgres): checkpoints stream in one
    scan; after each PG_BATCH threads, their blobs and writes (nested scans, each finished
    before the outer one goes on)."""
    batch: list[str] = []

    def rest() -> Iterator[RawRow]:
        sub = DumpQuery(
            thread_ids=tuple(batch),
            checkpoint_ns=query.checkpoint_ns,
            since_id=query.since_id,
            until_id=query.until_id,
        )
        yield from store.raw_blobs(sub)
        yield from store.raw_writes(sub)
        scan.flush()
        batch.clear()

    for row in store.raw_checkpoints(query):
        if not batch or batch[-1] != row.thread_id:
            if len(batch) == PG_BATCH:
                yield from rest()
            batch.append(row.thread_id)
        yield row
    if batch:
        yield from rest()


# -- the census ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Uses:
    """What is kept per type (or pickle global): counts, where it was seen, one example."""

    count: int = 0
    threads: int = 0
    channels: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    elsewhere: set[str] = field(default_factory=set)
    example: Example | None = None

    def seen(self, where: Where, times: int) -> None:
        self.count += times
        part, name = where
        if part == "channel":
            self.channels.add(name)
        elif part == "write":
            self.writes.add(name)
        else:
            self.elsewhere.add(name)


@dataclass(slots=True)
class _Tag:
    plain: int = 0
    encrypted: int = 0
    ciphers: set[str] = field(default_factory=set)


class _Budget:
    """The top-level ext_hook of a payload big enough to hold more ext values than
    ext_budget allows (as ckpt.decoders.msgpack decodes it): a placeholder per value,
    until the budget runs out; then the value is too large, as `show` marks it."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def __call__(self, code: int, data: bytes) -> slice:
        self.left -= 1
        if self.left < 0:
            raise ValueError("ext budget")  # ormsgpack turns it into ValueError anyway
        return slice(code, data)


class _Failure(Exception):
    """A value the census cannot read (too deep, malformed): it is counted as undecodable."""


class _Found:
    """What one ext value holds: the classes it and its nested values name, every ext code
    met, and the codes whose payload was malformed. Hashed by identity (cached, reused)."""

    __slots__ = ("keys", "codes", "malformed", "registered")

    def __init__(
        self, keys: tuple[TypeKey, ...], codes: tuple[int, ...], malformed: tuple[int, ...]
    ) -> None:
        self.keys = keys
        self.codes = codes
        self.malformed = malformed
        self.registered = False  # its classes have a _Uses (with an example) in `types`


class Census:
    """One scan: fed raw rows, it keeps the counts `record()` turns into a TypesRecord.
    `watcher` hears of single rows (see Watcher)."""

    def __init__(self, aes_key: bytes | None, watcher: Watcher | None = None) -> None:
        self.aes_key = aes_key
        self.watcher = watcher
        self.strict_names: dict[TypeKey, str | None] = {}  # key -> its name if strict refuses it
        self.types: dict[TypeKey, _Uses] = {}
        self.pickles: dict[str, _Uses] = {}
        self.pickle_values = 0
        self.tags: dict[tuple[str | None, str], _Tag] = {}
        self.versions: dict[int | None, int] = {}
        self.ext_counts: dict[int, list[int]] = {}  # code -> [count, malformed]
        self.checkpoints = 0
        self.blobs = 0
        self.writes = 0
        self.values = 0
        self.threads = 0
        self.encrypted = 0
        self.decrypted = 0
        self.hidden = 0
        self.wrong_key = 0
        self.undecodable = 0
        self.problems: list[UndecodableRecord] = []
        # The threads of the rows since the last flush -> the types and globals seen there.
        self.open_threads: dict[str, set[TypeKey | str]] = {}
        # Per row: where -> (what one ext value held -> occurrences), merged into `types`
        # when the row ends.
        self.local: dict[Where, dict[_Found, int]] = {}
        # The same, per open thread: expanded into `types` when the thread is flushed.
        self.acc: dict[str, dict[Where, dict[_Found, int]]] = {}
        # Ext payload bytes -> what they hold, for the threads since the last flush: a
        # SQLite body repeats every earlier message of its thread (format.md §4.2), so most
        # ext values were read before. Bounded by CACHE_BYTES.
        self.cache: dict[bytes, _Found] = {}
        self.cache_bytes = 0
        self.json_found: dict[TypeKey, _Found] = {}
        self.channel_wheres: dict[Any, Where] = {}
        # Where -> the ext payloads of the last list of ext values seen there, and what
        # they held (see _ext_list); forgotten at each flush.
        self.lists: dict[Where, tuple[list[bytes], dict[_Found, int]]] = {}
        self.interned: dict[
            tuple[tuple[TypeKey, ...], tuple[int, ...], tuple[int, ...]], _Found
        ] = {}
        # The ext walk: what the payload being read holds, and the depth bookkeeping of
        # ckpt.decoders.msgpack (nested unpackb calls share the C stack).
        self.found: list[TypeKey] = []
        self.codes: list[int] = []
        self.malformed: list[int] = []
        self.level = 0
        self.used = 0
        self.verified = False
        self.failure: _Failure | None = None

    # -- rows --------------------------------------------------------------------------------
    def row(self, row: RawRow) -> None:
        if row.thread_id not in self.open_threads:
            self.open_threads[row.thread_id] = set()
        kind = type(row)
        if kind is RawCheckpoint:
            self.checkpoints += 1
            self._checkpoint(row)  # type: ignore[arg-type]
            return
        if kind is RawBlob:
            self.blobs += 1
            part, where = "blobs", ("channel", row.channel)  # type: ignore[union-attr]
        else:
            self.writes += 1
            part, where = "writes", ("write", row.channel)  # type: ignore[union-attr]
        tag = row.type
        if tag in _NO_CLASSES:  # null, empty, bytes: counted, nothing to read
            entry = self.tags.get((tag, part))
            if entry is None:
                entry = self.tags[(tag, part)] = _Tag()
            entry.plain += 1
            return
        self._value(tag, row.data, part, where, row)  # type: ignore[union-attr]

    def _checkpoint(self, row: RawCheckpoint) -> None:
        if row.metadata_type not in _SERDE_METADATA and row.metadata_type is not None:
            # Memory stores keep metadata as a serde pair, loaded through loads_typed
            # (format.md §3.2); SQLite JSON and Postgres JSONB metadata never are revived.
            self._value(row.metadata_type, row.metadata, "metadata", _METADATA, row)
        if row.type == "jsonb":
            # Postgres: the JSONB body holds primitives only; its values are blobs.
            self._count_tag("jsonb", "checkpoints")
            document = _json_or_none(row.body)
            self._version(_version_of(document))
            if self.watcher is not None and document is not None:
                self.watcher.body(row, document)
            return
        if row.body.startswith(TOO_LARGE):  # a body the store did not fetch (BODY_LIMIT)
            self._version(None)
            size = int(row.body[len(TOO_LARGE) :])
            self._problem(
                row, "checkpoint", row.type, f"not read: {size:,} bytes, too large", large=True
            )
            return
        tag, data = self._open(row.type, row.body, "checkpoints", row)
        if data is None:
            self._version(None)
            return
        self.values += 1
        if tag in ("pickle", None) and (tag == "pickle" or _looks_pickled(data)):
            self._version(None)
            try:
                self._pickle(data, _BODY, row, "checkpoint")
            except DecodeError as exc:
                self._problem(row, "checkpoint", tag, str(exc), large=isinstance(exc, TooLarge))
            return
        if tag not in ("msgpack", "json", None):
            self._version(None)
            return  # a custom serializer's tag: nothing ckpt can read, counted as a tag
        try:
            body = self._unpack_top(data) if tag == "msgpack" else _json_document(data)
        except DecodeError as exc:
            self._version(None)
            self._problem(row, "checkpoint", tag, str(exc), large=isinstance(exc, TooLarge))
            return
        v = body.get("v") if type(body) is dict else None
        v = v if type(v) is int else None
        self.versions[v] = self.versions.get(v, 0) + 1
        if self.watcher is not None:
            self.watcher.body(row, body)
        walk = self._walk if tag == "msgpack" else self._json_walk
        wheres = self.channel_wheres
        try:
            if type(body) is dict:
                rest = []
                for name, part in body.items():
                    if name == "channel_values" and type(part) is dict:
                        for channel, value in part.items():
                            if type(value) in _PLAIN:
                                continue
                            where = wheres.get(channel)
                            if where is None:
                                where = wheres[channel] = ("channel", str(channel))
                            walk(value, where)
                    elif name == "pending_sends":
                        walk(part, _PENDING_SENDS)
                    elif type(part) is not str:
                        rest.append(part)
                # Versions, versions_seen ...: plain in every body LangGraph writes, so
                # they are walked only when they may hold a placeholder.
                if tag != "msgpack" or _may_hold_ext(rest):
                    walk(rest, _BODY)
            else:
                walk(body, _BODY)
        except _Failure as exc:
            self.local.clear()
            self._problem(row, "checkpoint", tag, str(exc), large=isinstance(exc, TooLarge))
            return
        if self.local:
            self._flush_local(row, "checkpoint")

    def _value(
        self, tag: str | None, payload: bytes | None, part: str, where: Where, row: RawRow
    ) -> None:
        """One stored value (blob, write, memory-store metadata): all of it is `where`."""
        tag, data = self._open(tag, payload, part, row)
        if data is None:
            return
        self.values += 1
        at = _EXAMPLE_PART[part]
        try:
            if tag == "msgpack":
                if _has_ext(data):
                    self._walk(self._unpack_top(data), where)
                elif self.watcher is not None:  # `ckpt check` decodes every value
                    self._unpack_top(data)
            elif tag == "json" or (tag is None and not _looks_pickled(data)):
                if b'"lc"' in data:
                    self._json_walk(_json_document(data), where)
                elif self.watcher is not None:
                    _json_document(data)
            elif tag in ("pickle", None):
                self._pickle(data, where, row, at)
        except (_Failure, DecodeError) as exc:
            self.local.clear()
            self._problem(row, at, tag, str(exc), large=isinstance(exc, TooLarge))
            return
        if self.local:
            self._flush_local(row, at)

    def _open(
        self, tag: str | None, payload: bytes | None, part: str, row: RawRow
    ) -> tuple[str | None, bytes | None]:
        """Count the tag; decrypt `<inner>+aes` with the key. (inner tag, plaintext), or
        (tag, None) when there is nothing to read (null, empty, hidden by encryption)."""
        if tag == "msgpack":  # the common case, first
            entry = self.tags.get(("msgpack", part))
            if entry is not None:
                entry.plain += 1
                return tag, payload or None
        inner, plus, cipher = (tag or "").partition("+")
        inner_tag = inner if tag is not None else None
        entry = self.tags.get((inner_tag, part))
        if entry is None:
            entry = self.tags[(inner_tag, part)] = _Tag()
        if not plus:
            entry.plain += 1
            if tag in ("null", "empty", "bytes", "bytearray") or not payload:
                return tag, None
            return tag, payload
        entry.encrypted += 1
        entry.ciphers.add(cipher)
        self.encrypted += 1
        if inner == "null":
            return inner, None  # the tag says None; nothing is hidden
        if cipher != "aes" or self.aes_key is None or not payload:
            self.hidden += 1
            return inner, None
        try:
            plaintext = decrypt_aes(payload, self.aes_key)
        except DecodeError as exc:
            self.hidden += 1
            self._problem(row, _EXAMPLE_PART[part], tag, str(exc))
            return inner, None
        if plaintext is None:
            self.hidden += 1
            self.wrong_key += 1
            if self.watcher is not None:
                self.watcher.unverified(row, _EXAMPLE_PART[part], tag)
            return inner, None
        self.decrypted += 1
        if inner in ("empty", "bytes", "bytearray") or not plaintext:
            return inner, None
        return inner, plaintext

    def _count_tag(self, tag: str, part: str) -> None:
        entry = self.tags.get((tag, part))
        if entry is None:
            entry = self.tags[(tag, part)] = _Tag()
        entry.plain += 1

    def _version(self, v: int | None) -> None:
        self.versions[v] = self.versions.get(v, 0) + 1

    def _problem(
        self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool = False
    ) -> None:
        self.undecodable += 1
        if self.watcher is not None:
            self.watcher.problem(row, at, tag, error, large=large)
        if len(self.problems) < _MAX_UNDECODABLE:
            thread_id, ns, checkpoint_id, part, channel, _ = _example(row, at)
            self.problems.append(
                {
                    "part": part,  # type: ignore[typeddict-item]
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "channel": channel,
                    "tag": tag,
                    "error": error,
                }
            )

    # -- msgpack -----------------------------------------------------------------------------
    def _unpack_top(self, data: bytes) -> Any:
        """The document with every top-level ext value left as a placeholder (no hook runs).

        ormsgpack refuses an ext value as a map key (or inside an array key) whatever the
        hook returns, and so does LangGraph's loads_typed: such a value is undecodable."""
        budget = ext_budget(len(data))
        # The smallest ext value takes 3 bytes: below that size the budget cannot be
        # exceeded, and the C `slice` hook keeps the hot path free of Python calls.
        hook: Callable[[int, bytes], Any] = slice if len(data) // 3 <= budget else _Budget(budget)
        try:
            return ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)
        except (ValueError, TypeError) as exc:
            if type(hook) is _Budget and hook.left < 0:
                raise TooLarge(TOO_MANY_EXTS) from None
            raise DecodeError(f"invalid msgpack: {exc}") from None
        except RecursionError:
            raise DecodeError("value nested too deep") from None

    def _walk(self, value: Any, where: Where) -> None:
        """Find the placeholders in plain data and note what each ext value holds.

        The hot loop of `ckpt types` (bench/census.py): lists of messages are the bulk, so
        list items are looked at in place, and an ext value read before costs a dict look-up.
        """
        if type(value) is list and value:
            try:
                datas = list(map(_STOP, value))
            except AttributeError:
                pass  # not a list of ext values only: the general walk below
            else:
                self._ext_list(value, datas, where)
                return
        counts: dict[_Found, int] | None = self.local.get(where)
        cache = self.cache
        stack = [value]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = type(node)
            if kind is list or kind is tuple:
                items = node
            elif kind is dict:
                items = node.values()  # keys are never ext values (see _unpack_top)
            elif kind is slice:
                items = (node,)
            else:
                continue
            for item in items:
                kind = type(item)
                if kind is slice:
                    data = item.stop
                    found = cache.get(data)
                    if found is None:
                        found = self._analyze(item.start, data)
                    if counts is None:
                        counts = self.local[where] = {}
                    counts[found] = counts.get(found, 0) + 1
                elif kind is list or kind is dict or kind is tuple:
                    push(item)

    def _ext_list(self, items: list[Any], datas: list[bytes], where: Where) -> None:
        """A channel holding a list of ext values only, e.g. messages. In SQLite each body
        repeats the list of the checkpoint before with new items at the end, so when the
        previous list of this channel is a prefix of this one (compared in C, byte for
        byte) only the new items are looked at."""
        previous = self.lists.get(where)
        start = 0
        if previous is not None:
            done, done_counts = previous
            if len(done) <= len(datas) and datas[: len(done)] == done:
                start = len(done)
                list_counts = dict(done_counts)
        if not start:
            list_counts = {}
        cache = self.cache
        for index in range(start, len(datas)):
            data = datas[index]
            found = cache.get(data)
            if found is None:
                found = self._analyze(items[index].start, data)
            list_counts[found] = list_counts.get(found, 0) + 1
        self.lists[where] = (datas, list_counts)
        counts = self.local.get(where)
        if counts is None:
            self.local[where] = dict(list_counts)
            return
        for found, times in list_counts.items():
            counts[found] = counts.get(found, 0) + times

    def _analyze(self, code: int, data: bytes) -> _Found:
        """Read one top-level ext value: the classes it and its nested ext values name."""
        self.found, self.codes, self.malformed = [], [], []
        self.level = 0
        self.used = 0
        self.verified = False
        self.failure = None
        try:
            self._ext(code, data)
        except ValueError:
            # ormsgpack turns what the hook raised into a bare ValueError.
            failure = self.failure or _Failure("invalid msgpack in an ext value")
            raise failure from None
        signature = (tuple(self.found), tuple(self.codes), tuple(self.malformed))
        found = self.interned.get(signature)
        if found is None:
            # One object per distinct content: a row's counts then hold a handful of
            # entries (a message class each), whatever the number of messages.
            found = _Found(*signature)
            if len(self.interned) < MAX_INTERNED:
                self.interned[signature] = found
        if self.cache_bytes > CACHE_BYTES:
            self.cache.clear()
            self.cache_bytes = 0
        self.cache[data] = found
        self.cache_bytes += len(data)
        return found

    def _hook(self, code: int, data: bytes) -> None:
        """ormsgpack's ext_hook inside an ext payload: note the type, return nothing."""
        try:
            self._ext(code, data)
        except _Failure as exc:
            if self.failure is None:
                self.failure = exc
            raise
        return None

    def _ext(self, code: int, data: bytes) -> None:
        self.codes.append(code)
        if code not in _CONSTRUCTORS and code not in (
            EXT_METHOD_SINGLE_ARG,
            EXT_NUMPY_ARRAY,
            EXT_DELTA_SNAPSHOT,
        ):
            return  # an unknown code: LangGraph loads it as None; counted in ext_codes only
        if self.level >= MAX_EXT_NESTING:
            raise _Failure(f"ext values nested more than {MAX_EXT_NESTING} deep")
        verified, used = self.verified, self.used
        if not verified:
            if used + len(data) <= STACK_BUDGET:
                self.verified = True  # n bytes nest at most n levels deep
            else:
                cost = min(len(data), ORMSGPACK_MAX_DEPTH)
                if used + cost > ESTIMATE_LIMIT:
                    try:
                        depth = max_depth(data)
                    except ValueError:
                        self.malformed.append(code)
                        return
                    if used + depth > STACK_BUDGET:
                        raise _Failure("values nested too deep")
                    self.verified = True
                else:
                    self.used = used + cost
        self.level += 1
        try:
            payload = ormsgpack.unpackb(data, ext_hook=self._hook, option=_NON_STR_KEYS)
        except ValueError:
            if self.failure is not None:
                raise self.failure from None
            self.malformed.append(code)
            return
        finally:
            self.level -= 1
            self.verified, self.used = verified, used
        if code == EXT_DELTA_SNAPSHOT:
            return  # the snapshot value itself: its classes were noted by the hook
        if code == EXT_NUMPY_ARRAY:
            self.found.append((code, "numpy", "ndarray", None))
            return
        sizes = (4,) if code == EXT_METHOD_SINGLE_ARG else (3, 4)
        if type(payload) is not list or len(payload) not in sizes:
            self.malformed.append(code)
            return
        module, name = payload[0], payload[1]
        if type(module) is not str or type(name) is not str:
            self.malformed.append(code)
            return
        if code == EXT_METHOD_SINGLE_ARG:
            method = payload[3]
            if type(method) is not str:
                self.malformed.append(code)
                return
            self.found.append((code, module, name, method))
        else:
            self.found.append((code, module, name, None))

    # -- legacy JSON -------------------------------------------------------------------------
    def _json_walk(self, value: Any, where: Where) -> None:
        """lc:1 and lc:2 constructor envelopes (format.md §2.6), at any depth."""
        counts = self.local.setdefault(where, {})
        stack = [value]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is dict:
                lc = node.get("lc")
                if (lc == 1 or lc == 2) and type(lc) is int and node.get("type") == "constructor":
                    ident = node.get("id")
                    if type(ident) is list and ident and all(type(p) is str for p in ident):
                        key = (LC1 if lc == 1 else LC2, ".".join(ident[:-1]), ident[-1], None)
                        found = self.json_found.get(key)
                        if found is None:
                            found = self.json_found[key] = _Found((key,), (), ())
                        counts[found] = counts.get(found, 0) + 1
                stack.extend(node.values())
            elif kind is list:
                stack.extend(node)

    # -- pickle ------------------------------------------------------------------------------
    def _pickle(self, data: bytes, where: Where, row: RawRow, at: str) -> None:
        names = pickle_globals(data)  # DecodeError for a malformed pickle
        self.pickle_values += 1
        if self.watcher is not None:
            self.watcher.pickled(row, at, names)
        seen = self.open_threads.setdefault(row.thread_id, set())
        for name in names:
            uses = self.pickles.get(name)
            if uses is None:
                uses = self.pickles[name] = _Uses(example=_example(row, at))
            uses.seen(where, 1)
            seen.add(name)

    # -- per row and per thread --------------------------------------------------------------
    def _flush_local(self, row: RawRow, at: str) -> None:
        """Add the row's occurrences to its thread's; the first use of a class names its
        example."""
        local = self.local
        thread = self.acc.get(row.thread_id)
        if thread is None:
            thread = self.acc[row.thread_id] = {}
        for where, counts in local.items():
            into = thread.get(where)
            if into is None:
                into = thread[where] = {}
            for found, times in counts.items():
                into[found] = into.get(found, 0) + times
                if not found.registered:
                    self._register(found, row, at)
        if self.watcher is not None:
            self._strict(row, at)
        local.clear()

    def _strict(self, row: RawRow, at: str) -> None:
        """Tell the watcher of the classes in this row strict mode would not rebuild."""
        names = self.strict_names
        refused: list[str] = []
        for counts in self.local.values():
            for found in counts:
                for key in found.keys:
                    name = names.get(key, "")
                    if name == "":
                        code, module, class_name, method = key
                        status = _status(code, module, class_name, method)
                        refused_name = f"{module}.{class_name}" + (f".{method}" if method else "")
                        name = names[key] = (
                            refused_name if status in ("allowlist", "blocked") else None
                        )
                    if name is not None and name not in refused:
                        refused.append(name)
        if refused:
            assert self.watcher is not None
            self.watcher.strict(row, at, refused)

    def _register(self, found: _Found, row: RawRow, at: str) -> None:
        for key in found.keys:
            if key not in self.types:
                self.types[key] = _Uses(example=_example(row, at))
        found.registered = True

    def flush(self) -> None:
        """The threads seen since the last flush are complete: count their occurrences."""
        types, ext_counts = self.types, self.ext_counts
        for thread_id, seen in self.open_threads.items():
            self.threads += 1
            for (part, name), counts in self.acc.pop(thread_id, {}).items():
                for found, times in counts.items():
                    for key in found.keys:
                        uses = types[key]
                        uses.count += times
                        if part == "channel":
                            uses.channels.add(name)
                        elif part == "write":
                            uses.writes.add(name)
                        else:
                            uses.elsewhere.add(name)
                        seen.add(key)
                    for code in found.codes:
                        tally = ext_counts.get(code)
                        if tally is None:
                            tally = ext_counts[code] = [0, 0]
                        tally[0] += times
                    for code in found.malformed:
                        ext_counts[code][1] += times
            for used in seen:
                uses = self.pickles[used] if isinstance(used, str) else types[used]
                uses.threads += 1
        self.open_threads.clear()
        self.acc.clear()
        self.lists.clear()
        self.cache.clear()
        self.cache_bytes = 0

    # -- the record --------------------------------------------------------------------------
    def record(self, store: TypesStoreRecord) -> TypesRecord:
        merged = _merge_by_class(self.types)
        types = sorted(
            (_type_record(key, codes, uses) for key, (codes, uses) in merged.items()),
            key=lambda t: (_STATUS_ORDER[t["status"]], t["module"], t["name"], t["method"] or ""),
        )
        return {
            "store": store,
            "safe_list": RELEASE,
            "scanned": {
                "threads": self.threads,
                "checkpoints": self.checkpoints,
                "blobs": self.blobs,
                "writes": self.writes,
                "values": self.values,
                "undecodable": self.undecodable,
            },
            "checkpoint_versions": [
                {"v": v, "checkpoints": n}
                for v, n in sorted(self.versions.items(), key=lambda i: (i[0] is None, i[0] or 0))
            ],
            "tags": self._tag_records(),
            "ext_codes": [
                {"code": code, "count": count, "malformed": malformed}
                for code, (count, malformed) in sorted(self.ext_counts.items())
            ],
            "types": types,
            "pickle": {
                "values": self.pickle_values,
                "globals": [
                    _pickle_record(name, uses) for name, uses in sorted(self.pickles.items())
                ],
            },
            "would_degrade": _degrade(types),
            "allowlist": _allowlist(types, pickle=self.pickle_values > 0),
            "encryption": self._encryption_record(),
            "undecodable": self.problems,
        }

    def _tag_records(self) -> list[TagCountRecord]:
        order = {"checkpoints": 0, "blobs": 1, "writes": 2, "metadata": 3}
        items = sorted(self.tags.items(), key=lambda i: (order[i[0][1]], i[0][0] or ""))
        return [
            {
                "tag": tag,
                "part": part,  # type: ignore[typeddict-item]
                "plain": entry.plain,
                "encrypted": entry.encrypted,
                "ciphers": sorted(entry.ciphers),
            }
            for (tag, part), entry in items
        ]

    def _encryption_record(self) -> TypesEncryptionRecord:
        note = None
        if self.hidden and self.aes_key is None:
            note = (
                f"{self.hidden} encrypted value(s): the classes inside them need the AES "
                "key (LANGGRAPH_AES_KEY); tags and counts are complete"
            )
        elif self.wrong_key:
            note = f"{self.wrong_key} value(s) did not decrypt with the key given"
        elif self.hidden:
            note = f"{self.hidden} value(s) use a cipher ckpt cannot decrypt"
        return {
            "encrypted": self.encrypted,
            "key": self.aes_key is not None,
            "decrypted": self.decrypted,
            "hidden": self.hidden,
            "note": note,
        }


# -- turning the counts into records -------------------------------------------------------


def _merge_by_class(
    types: dict[TypeKey, _Uses],
) -> dict[tuple[str, str, str, str | None], tuple[list[int], _Uses]]:
    """One entry per (serde, module, name, method): a class stored with several ext codes
    (say ext 4 by an old release, ext 5 now) is one row with both codes."""
    merged: dict[tuple[str, str, str, str | None], tuple[list[int], _Uses]] = {}
    for (code, module, name, method), uses in sorted(types.items(), key=lambda i: i[0][0]):
        serde = "json" if code in (LC1, LC2) else "msgpack"
        # lc:1 and lc:2 envelopes of one class are told apart: LangGraph treats them apart.
        slot = (serde if serde == "msgpack" else f"json{code}", module, name, method)
        if slot not in merged:
            merged[slot] = ([code], _Uses(example=uses.example))
        codes, total = merged[slot]
        if code not in codes:
            codes.append(code)
        total.count += uses.count
        total.threads = max(total.threads, uses.threads)  # a class's threads, not their sum
        total.channels |= uses.channels
        total.writes |= uses.writes
        total.elsewhere |= uses.elsewhere
    return merged


def _status(code: int, module: str, name: str, method: str | None) -> TypeStatus:
    """What LangGraph does with the class (jsonplus.py `_check_allowed`,
    `_check_allowed_method`, `_reviver`)."""
    if code == EXT_METHOD_SINGLE_ARG:
        return "safe" if (module, name, method) in SAFE_MSGPACK_METHODS else "blocked"
    if code == EXT_NUMPY_ARRAY:
        return "ungated"
    if code == LC1:
        return "langchain"
    return "safe" if (module, name) in SAFE_MSGPACK_TYPES else "allowlist"


def _type_record(
    key: tuple[str, str, str, str | None], codes: list[int], uses: _Uses
) -> TypeUseRecord:
    _, module, name, method = key
    code = codes[0]
    status = _status(code, module, name, method)
    json_tag = code in (LC1, LC2)
    becomes = None
    if status in ("allowlist", "blocked"):
        becomes = " or ".join(dict.fromkeys(_BECOMES[c] for c in codes if c in _BECOMES))
    return {
        "module": module,
        "name": name,
        "method": method,
        "serde": "json" if json_tag else "msgpack",
        "ext": [] if json_tag else sorted(codes),
        "lc": (1 if code == LC1 else 2) if json_tag else None,
        "status": status,
        "becomes": becomes,
        "count": uses.count,
        "threads": uses.threads,
        "channels": sorted(uses.channels),
        "writes": sorted(uses.writes),
        "elsewhere": sorted(uses.elsewhere),
        "example": _example_record(uses.example),
    }


def _pickle_record(name: str, uses: _Uses) -> PickleGlobalRecord:
    return {
        "name": name,
        "count": uses.count,
        "threads": uses.threads,
        "channels": sorted(uses.channels),
        "writes": sorted(uses.writes),
        "elsewhere": sorted(uses.elsewhere),
        "example": _example_record(uses.example),
    }


def _example_record(example: Example | None) -> TypeExampleRecord:
    assert example is not None  # every counted use had one
    thread_id, ns, checkpoint_id, part, channel, version = example
    record: TypeExampleRecord = {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": checkpoint_id,
        "part": part,  # type: ignore[typeddict-item]
        "channel": channel,
    }
    if part == "blob":
        record["version"] = version
    return record


def _degrade(types: list[TypeUseRecord]) -> list[DegradeRecord]:
    """What strict mode gives back instead of the object, most frequent first."""
    found: list[DegradeRecord] = [
        {
            "module": t["module"],
            "name": t["name"],
            "method": t["method"],
            "serde": t["serde"],
            "count": t["count"],
            "becomes": t["becomes"] or "",
            "fixed_by_allowlist": t["status"] == "allowlist",
        }
        for t in types
        if t["status"] in ("allowlist", "blocked")
    ]
    return sorted(found, key=lambda d: (-d["count"], d["module"], d["name"]))


def _allowlist(types: list[TypeUseRecord], *, pickle: bool) -> AllowlistRecord:
    msgpack = sorted(
        {
            (t["module"], t["name"])
            for t in types
            if t["status"] == "allowlist" and t["serde"] == "msgpack"
        }
    )
    lc2 = sorted(
        {
            (*t["module"].split("."), t["name"]) if t["module"] else (t["name"],)
            for t in types
            if t["status"] == "allowlist" and t["serde"] == "json"
        }
    )
    python = _python_allowlist("allowed_msgpack_modules", [tuple(p) for p in msgpack])
    if lc2:
        python += ",\n" + _python_allowlist("allowed_json_modules", lc2)
    if pickle:
        python += ",\npickle_fallback=True"
    serde: dict[str, Any] = {"allowed_msgpack_modules": [list(p) for p in msgpack]}
    if lc2:
        serde["allowed_json_modules"] = [list(p) for p in lc2]
    if pickle:
        serde["pickle_fallback"] = True
    return {
        "msgpack": [list(p) for p in msgpack],
        "json": [list(p) for p in lc2],
        "pickle_fallback": pickle,
        "python": python,
        "langgraph_json": {"checkpointer": {"serde": serde}},
    }


def _python_allowlist(keyword: str, entries: list[tuple[str, ...]]) -> str:
    """`keyword=[("module", "Name"), ...]`, one entry a line, ready to paste into
    JsonPlusSerializer(...)."""
    if not entries:
        return f"{keyword}=[]"
    lines = "".join(f"    {_tuple_text(entry)},\n" for entry in entries)
    return f"{keyword}=[\n{lines}]"


def _tuple_text(entry: tuple[str, ...]) -> str:
    parts = ", ".join(json.dumps(part, ensure_ascii=False) for part in entry)
    return f"({parts},)" if len(entry) == 1 else f"({parts})"


def _place_blob_examples(store: Store, scan: Census) -> None:
    """A blob has no checkpoint id: name the first checkpoint that holds that version,
    reading only the example's own thread and namespace."""
    wanted: dict[tuple[str, str], list[_Uses]] = {}
    for uses in (*scan.types.values(), *scan.pickles.values()):
        example = uses.example
        if example is not None and example[3] == "blob":
            wanted.setdefault((example[0], example[1]), []).append(uses)
    for (thread_id, ns), users in wanted.items():
        remaining = {id(u): u for u in users}
        query = DumpQuery(thread_ids=(thread_id,), checkpoint_ns=ns)
        for row in store.raw_checkpoints(query, data=False):
            versions = row.channel_versions or {}
            for key, uses in list(remaining.items()):
                assert uses.example is not None
                _, _, _, _, channel, version = uses.example
                held = versions.get(channel or "")
                if held is not None and (version is None or held == version):
                    uses.example = (*uses.example[:2], row.checkpoint_id, *uses.example[3:])
                    del remaining[key]
            if not remaining:
                break


# -- small readers -------------------------------------------------------------------------


def _example(row: RawRow, at: str) -> Example:
    """Where a row's value is, as TypeExampleRecord names it. The thread id is interned:
    every row brings its own copy of it, and a class's example may keep it (twenty
    classes of a thread whose id is 10 MB held twenty copies)."""
    thread_id = sys.intern(row.thread_id)
    if type(row) is RawBlob:
        return (thread_id, row.checkpoint_ns, None, "blob", row.channel, row.version)
    if type(row) is RawWrite:
        return (thread_id, row.checkpoint_ns, row.checkpoint_id, "write", row.channel, None)
    assert isinstance(row, RawCheckpoint)
    return (thread_id, row.checkpoint_ns, row.checkpoint_id, at, None, None)


def _may_hold_ext(value: Any) -> bool:
    """False when unpacked data surely holds no ext placeholder. marshal takes exactly
    msgpack's plain types (dict, list, tuple, str, bytes, numbers, None) and refuses a
    slice, in C: four times faster than looking."""
    try:
        marshal.dumps(value)
    except ValueError:  # unmarshallable, or nested deeper than marshal goes
        return True
    return False


def _has_ext(data: bytes) -> bool:
    return any(header in data for header in _EXT_HEADERS)


def _looks_pickled(data: bytes) -> bool:
    """langgraph 0.1 untyped blobs: a pickle starts with \\x80 and ends with "."."""
    return data[:1] == b"\x80" and data[-1:] == b"."


def _json_document(data: bytes) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise DecodeError("JSON nested too deep") from None
    except ValueError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None


def _version_of(body: Any) -> int | None:
    if type(body) is not dict:
        return None
    v = body.get("v")
    return v if type(v) is int else None


def _json_or_none(text: bytes) -> Any:
    try:
        return json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None


# -- the store's era -----------------------------------------------------------------------


def _store_record(store: Store) -> TypesStoreRecord:
    """The schema era (format.md §4.1, 5.1, 6, 7), from what the reader found on opening."""
    return {
        "location": store.location,
        "kind": store.kind,
        "era": store.era,
        "era_note": store.era_note,
    }
