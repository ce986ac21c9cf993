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

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar, Final, Protocol

import orjson
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
from ckpt.decoders.msgpack import MIN_EXTS, TOO_MANY_EXTS, ext_budget, scalar_size
from ckpt.decoders.pickle_imports import pickle_globals
from ckpt.decoders.safe_types import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
from ckpt.errors import DecodeError, TooLarge
from ckpt.records.model import DumpQuery, RawBlob, RawCheckpoint, RawWrite
from ckpt.records.types import (
    TypesRecord,
    TypeStatus,
    UndecodableRecord,
)
from ckpt.records.vocabulary import TOO_LARGE
from ckpt.scan.census_readers import (
    PLAIN,
    has_ext,
    json_or_none,
    json_value,
    looks_pickled,
    may_hold_ext,
    may_hold_map,
    version_of,
)
from ckpt.scan.rows import RawRow, Visitor
from ckpt.scan.shapes import string_versions
from ckpt.stores.base import Store

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
_NON_STR_KEYS: Final = ormsgpack.OPT_NON_STR_KEYS
# Below this size a payload cannot hold more ext values (3 bytes each at least) than the
# budget's floor allows: its budget need not be worked out.
_UNDER_BUDGET: Final = 3 * MIN_EXTS
_STOP: Final = attrgetter("stop")
_NO_CLASSES: Final = frozenset({"null", "empty", "bytes", "bytearray"})
_VERSION_PARTS: Final = frozenset({"channel_versions", "versions_seen"})
_METADATA: Final[Where] = ("elsewhere", "metadata")
_BODY: Final[Where] = ("elsewhere", "checkpoint body")
_PENDING_SENDS: Final[Where] = ("elsewhere", "pending_sends")
_EXAMPLE_PART: Final = {
    "checkpoints": "checkpoint",
    "blobs": "blob",
    "writes": "write",
    "metadata": "metadata",
}
MAX_UNDECODABLE: Final = 20  # examples kept; scanned.undecodable counts them all
CACHE_BYTES: Final = 32 << 20  # ext payload bytes kept for look-ups (per thread, at most)
VALUE_BYTES: Final = 8 << 20  # whole values' bytes kept for look-ups (Census.read_values)
MAX_INTERNED: Final = 10_000  # distinct ext contents shared as one object
PG_BATCH: Final = 500  # Postgres: threads whose blobs and writes are read together
# Metadata formats LangGraph never revives ("mongodb-pairs": MongoDBSaver's typed values,
# shown as stored when one is not plain data; its census is not taken yet).
_SERDE_METADATA: Final = frozenset({"json", "jsonb", "mongodb-pairs"})


def census(
    store: Store,
    query: DumpQuery | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> TypesRecord:
    """The type census of `store` (or of the threads `query` selects): `ckpt types --json`,
    from the one pass over the rows (ckpt.scan.rows). `progress(n)` hears of every n rows
    read. Values that stay encrypted or do not decode are reported in the record, never
    raised."""
    from ckpt.scan.census_record import census_record
    from ckpt.scan.rows import scan

    query = query or DumpQuery()
    counted = Census(store.aes_key)
    sizes = store.sizes(DumpQuery(thread_ids=query.thread_ids))
    scan(store, sizes, [CensusVisitor(counted)], progress=progress)
    return census_record(store, counted)


class CensusVisitor(Visitor):
    """The census as a visitor of the one pass: every row goes to the census
    (`Census.checkpoint`, `value_row`), and at the end of each batch its threads are
    counted (`flush`) and the examples of classes first met in a blob are placed on the
    first checkpoint of the batch naming that version."""

    needs: ClassVar[frozenset[str]] = frozenset({"checkpoints", "blobs", "writes"})

    def __init__(self, census: Census) -> None:
        self.census = census
        # The batch's checkpoints that name their blobs' versions: (thread, ns, id, versions).
        self.naming: list[tuple[str, str, str, dict[str, str]]] = []

    def checkpoint(self, row: RawCheckpoint) -> None:
        self.census.checkpoint(row)
        if row.channel_versions and self.census.classes:
            self.naming.append(
                (row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.channel_versions)
            )

    def blob(self, row: RawBlob) -> None:
        self.census.value_row(row, "blobs", "channel")

    def write(self, row: RawWrite) -> None:
        self.census.value_row(row, "writes", "write")

    def end_batch(self, threads: Sequence[str]) -> None:
        census = self.census
        census.flush()
        unplaced = [
            uses
            for uses in (*census.types.values(), *census.pickles.values())
            if uses.example is not None and uses.example[3] == "blob" and uses.example[2] is None
        ]
        for uses in unplaced if self.naming else ():
            assert uses.example is not None
            thread_id, ns, _, _, channel, version = uses.example
            for named in self.naming:
                held = named[3].get(channel or "") if named[:2] == (thread_id, ns) else None
                if held is not None and (version is None or held == version):
                    uses.example = (thread_id, ns, named[2], *uses.example[3:])
                    break
        self.naming.clear()


class Watcher(Protocol):
    """What a census tells the scan that feeds it (`ckpt check`) about single rows: the
    counts of the TypesRecord say how many, these say which."""

    def body(self, row: RawCheckpoint, body: Any, *, plain: bool = False) -> None:
        """A checkpoint body as read: the plain document, ext values left packed as
        `slice(code, data)` (msgpack), or the JSON document (json, Postgres JSONB).
        `plain`: its versions are strings only (ckpt.scan.shapes.string_versions)."""

    def problem(self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool) -> None:
        """A value that does not decode (`at`: checkpoint, metadata, blob, write); `large`:
        one past ckpt's resource caps (TooLarge), which is not damage."""

    def unverified(self, row: RawRow, at: str, tag: str | None) -> None:
        """An encrypted value the key given does not open (its authentication failed)."""

    def strict(self, row: RawRow, at: str, names: list[str]) -> None:
        """A value naming classes LangGraph's strict msgpack mode does not rebuild."""

    def pickled(self, row: RawRow, at: str, names: list[str]) -> None:
        """A pickle value, and the globals loading it would import."""


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
class TagCount:
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

    __slots__ = ("keys", "codes", "malformed", "registered", "refused")

    def __init__(
        self, keys: tuple[TypeKey, ...], codes: tuple[int, ...], malformed: tuple[int, ...]
    ) -> None:
        self.keys = keys
        self.codes = codes
        self.malformed = malformed
        self.registered = False  # its classes have a _Uses (with an example) in `types`
        # The names of its classes strict mode does not rebuild (Census._refused), once asked.
        self.refused: tuple[str, ...] | None = None


class Census:
    """One scan: fed raw rows, it keeps the counts `record()` turns into a TypesRecord.
    `watcher` hears of single rows (see Watcher). Without `classes`, the classes each row
    names are told the watcher only, never counted: the record's `types`, `ext_codes` and
    examples stay empty (`ckpt check` and `ckpt stats` show none of them)."""

    def __init__(
        self, aes_key: bytes | None, watcher: Watcher | None = None, *, classes: bool = True
    ) -> None:
        self.aes_key = aes_key
        self.watcher = watcher
        self.classes = classes
        self.refusing = False  # a class met so far strict mode refuses (_new_found)
        self.strict_names: dict[TypeKey, str | None] = {}  # key -> its name if strict refuses it
        self.types: dict[TypeKey, _Uses] = {}
        self.pickles: dict[str, _Uses] = {}
        self.pickle_values = 0
        self.tags: dict[tuple[str | None, str], TagCount] = {}
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
        # The same for whole values (blobs, writes: a value written to several threads or
        # channels): (tag, bytes) -> what the walk of `_value` counted there (empty: none).
        self.read_values: dict[tuple[str, bytes], dict[_Found, int]] = {}
        self.read_bytes = 0
        self.json_found: dict[TypeKey, _Found] = {}
        self.channel_wheres: dict[Any, Where] = {}
        # Where -> the ext payloads of the last list of ext values seen there, and what
        # they held (see _ext_list); forgotten at each flush.
        self.lists: dict[Where, tuple[list[bytes], dict[_Found, int]]] = {}
        self.json_lists: dict[Where, tuple[list[bytes], dict[_Found, int]]] = {}  # the same
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
    def checkpoint(self, row: RawCheckpoint) -> None:
        if row.thread_id not in self.open_threads:
            self.open_threads[row.thread_id] = set()
        self.checkpoints += 1
        self._checkpoint(row)

    def value_row(self, row: RawBlob | RawWrite, part: str, kind: str) -> None:
        """A blob (`part` "blobs", `kind` "channel") or a write ("writes", "write")."""
        if row.thread_id not in self.open_threads:
            self.open_threads[row.thread_id] = set()
        if part == "blobs":
            self.blobs += 1
        else:
            self.writes += 1
        where = (kind, row.channel)
        tag = row.type
        if tag in _NO_CLASSES:  # null, empty, bytes: counted, nothing to read
            entry = self.tags.get((tag, part))
            if entry is None:
                entry = self.tags[(tag, part)] = TagCount()
            entry.plain += 1
            return
        self._value(tag, row.data, part, where, row)

    def _checkpoint(self, row: RawCheckpoint) -> None:
        if row.metadata_type not in _SERDE_METADATA and row.metadata_type is not None:
            # Memory stores keep metadata as a serde pair, loaded through loads_typed
            # (format.md §3.2); SQLite JSON and Postgres JSONB metadata never are revived.
            self._value(row.metadata_type, row.metadata, "metadata", _METADATA, row)
        if row.type == "jsonb":
            # Postgres: the JSONB body holds primitives only; its values are blobs.
            self._count_tag("jsonb", "checkpoints")
            document = json_or_none(row.body)
            self._version(version_of(document))
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
        if tag in ("pickle", None) and (tag == "pickle" or looks_pickled(data)):
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
            if tag == "msgpack":
                body = self._unpack_top(data)
            elif row.parsed is not None and data is row.body:  # read whole already
                body = row.parsed
            else:
                body = json_value(data)
        except DecodeError as exc:
            self._version(None)
            self._problem(row, "checkpoint", tag, str(exc), large=isinstance(exc, TooLarge))
            return
        v = body.get("v") if type(body) is dict else None
        v = v if type(v) is int else None
        self.versions[v] = self.versions.get(v, 0) + 1
        # Versions that are strings only (as every saver since langgraph 0.2 writes them)
        # hold no ext value, and the integrity checks need not look at them again.
        plain = type(body) is dict and string_versions(
            body.get("channel_versions"), body.get("versions_seen")
        )
        if self.watcher is not None:
            self.watcher.body(row, body, plain=plain)
        if tag != "msgpack" and b'"lc"' not in data and b"\\u" not in data:
            return  # JSON naming no "lc" key (spelled out or escaped): no envelope to count
        walk = self._walk if tag == "msgpack" else self._json_walk
        wheres = self.channel_wheres
        try:
            if type(body) is dict:
                rest = []
                for name, part in body.items():
                    if name == "channel_values" and type(part) is dict:
                        for channel, value in part.items():
                            if type(value) in PLAIN:
                                continue
                            where = wheres.get(channel)
                            if where is None:
                                where = wheres[channel] = ("channel", str(channel))
                            walk(value, where)
                    elif name == "pending_sends":
                        walk(part, _PENDING_SENDS)
                    elif type(part) is not str and not (plain and name in _VERSION_PARTS):
                        rest.append(part)
                # Versions, versions_seen ...: plain in every body LangGraph writes, so
                # they are walked only when they may hold a placeholder (an envelope).
                if rest and (may_hold_ext(rest) if tag == "msgpack" else may_hold_map(rest)):
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
        if tag == "msgpack" or tag == "json":
            # The same bytes read again (a value written twice, in this batch): what they
            # held, as the walk below found it; they decoded then, so they do now.
            known = self.read_values.get((tag, data))
            if known is not None:
                if known:
                    self.local[where] = dict(known)
                    self._flush_local(row, at)
                return
        try:
            if tag == "msgpack":
                if has_ext(data):
                    self._walk(self._unpack_top(data), where)
                elif self.watcher is not None:  # `ckpt check` decodes every value
                    self._unpack_top(data)
            elif tag == "json" or (tag is None and not looks_pickled(data)):
                if b'"lc"' in data:
                    self._json_walk(json_value(data), where)
                elif self.watcher is not None:
                    json_value(data)
            elif tag in ("pickle", None):
                self._pickle(data, where, row, at)
        except (_Failure, DecodeError) as exc:
            self.local.clear()
            self._problem(row, at, tag, str(exc), large=isinstance(exc, TooLarge))
            return
        if (tag == "msgpack" or tag == "json") and (self.local or self.watcher is not None):
            self._remember((tag, data), self.local.get(where) or {})
        if self.local:
            self._flush_local(row, at)

    def _remember(self, value: tuple[str, bytes], counts: dict[_Found, int]) -> None:
        """What a value's bytes held (read_values), at most VALUE_BYTES of them."""
        if self.read_bytes > VALUE_BYTES:
            self.read_values.clear()
            self.read_bytes = 0
        self.read_values[value] = dict(counts)
        self.read_bytes += len(value[1])

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
            entry = self.tags[(inner_tag, part)] = TagCount()
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
            entry = self.tags[(tag, part)] = TagCount()
        entry.plain += 1

    def _version(self, v: int | None) -> None:
        self.versions[v] = self.versions.get(v, 0) + 1

    def _problem(
        self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool = False
    ) -> None:
        self.undecodable += 1
        if self.watcher is not None:
            self.watcher.problem(row, at, tag, error, large=large)
        if len(self.problems) < MAX_UNDECODABLE:
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
        # The smallest ext value takes 3 bytes: below that size the budget cannot be
        # exceeded, and the C `slice` hook keeps the hot path free of Python calls.
        size = len(data)
        budget = MIN_EXTS if size < _UNDER_BUDGET else ext_budget(size)
        hook: Callable[[int, bytes], Any] = slice if size // 3 <= budget else _Budget(budget)
        try:
            value = ormsgpack.unpackb(data, ext_hook=hook, option=_NON_STR_KEYS)
        except (ValueError, TypeError) as exc:
            if type(hook) is _Budget and hook.left < 0:
                raise TooLarge(TOO_MANY_EXTS) from None
            raise DecodeError(f"invalid msgpack: {exc}") from None
        except RecursionError:
            raise DecodeError("value nested too deep") from None
        if type(value) in PLAIN:  # no array or map: its size is known from its head
            taken = scalar_size(data)
            if taken is not None and taken != size:
                raise DecodeError(f"invalid msgpack: {size - taken:,} bytes after its value")
        return value

    def _walk(self, value: Any, where: Where) -> None:
        """Find the placeholders in plain data and note what each ext value holds.

        The hot loop of `ckpt types` (bench/census.py): lists of messages are the bulk, so
        list items are looked at in place, and an ext value read before costs a dict look-up.
        """
        if type(value) is list and len(value) > 1:  # one value (a write's message): below
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
            found = self._new_found(*signature)
            if len(self.interned) < MAX_INTERNED:
                self.interned[signature] = found
        if self.cache_bytes > CACHE_BYTES:
            self.cache.clear()
            self.cache_bytes = 0
        self.cache[data] = found
        self.cache_bytes += len(data)
        return found

    def _new_found(
        self, keys: tuple[TypeKey, ...], codes: tuple[int, ...], malformed: tuple[int, ...]
    ) -> _Found:
        """A new distinct content; with a watcher, the names strict mode refuses in it are
        known at once, and whether any content met so far has one (`refusing`)."""
        found = _Found(keys, codes, malformed)
        if self.watcher is not None:
            found.refused = self._refused(found)
            self.refusing = self.refusing or bool(found.refused)
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
                        self._malformed(code)
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
            self._malformed(code)
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

    def _malformed(self, code: int) -> None:
        """An ext payload that is not msgpack: LangGraph loads most as None (its hook
        catches the error), counted as malformed; a DeltaChannel snapshot's it does not
        catch (`_DeltaSnapshot(unpackb(data))`): the whole value fails to load."""
        if code == EXT_DELTA_SNAPSHOT:
            raise _Failure("invalid msgpack in a DeltaChannel snapshot (ext 7)")
        self.malformed.append(code)

    # -- legacy JSON -------------------------------------------------------------------------
    def _json_walk(self, value: Any, where: Where) -> None:
        """lc:1 and lc:2 constructor envelopes (format.md §2.6), at any depth."""
        counts = self.local.setdefault(where, {})
        if type(value) is list and len(value) > 1:
            self._json_list(value, where, counts)
        else:
            self._json_count(value, counts)

    def _json_list(self, items: list[Any], where: Where, counts: dict[_Found, int]) -> None:
        """A list of JSON values, e.g. messages: as _ext_list does for msgpack, when the
        previous list of this channel is a prefix of this one (each item's orjson text
        compared, which tells 1 from 1.0 and true) only the new items are walked. The
        counts come in the order the whole walk finds them (it walks the last item
        first), so that the strict-mode names a finding lists keep their order."""
        try:
            texts = list(map(orjson.dumps, items))
        except TypeError:  # what orjson does not write (an integer past 64 bits ...)
            self._json_count(items, counts)
            return
        start = 0
        previous = self.json_lists.get(where)
        if previous is not None:
            done, done_counts = previous
            if len(done) <= len(texts) and texts[: len(done)] == done:
                start = len(done)
        found_here: dict[_Found, int] = {}
        self._json_count(items[start:] if start else items, found_here)
        if start:
            for found, times in done_counts.items():
                found_here[found] = found_here.get(found, 0) + times
        self.json_lists[where] = (texts, found_here)
        for found, times in found_here.items():
            counts[found] = counts.get(found, 0) + times

    def _json_count(self, value: Any, counts: dict[_Found, int]) -> None:
        if type(value) is not dict and type(value) is not list:
            return
        stack = [value]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            # Only dicts and lists are pushed (in the order they come): most leaves are
            # strings, and a message list is most of a checkpoint.
            if type(node) is dict:
                lc = node.get("lc")
                if (lc == 1 or lc == 2) and type(lc) is int and node.get("type") == "constructor":
                    ident = node.get("id")
                    if type(ident) is list and ident and all(type(p) is str for p in ident):
                        key = (LC1 if lc == 1 else LC2, ".".join(ident[:-1]), ident[-1], None)
                        found = self.json_found.get(key)
                        if found is None:
                            found = self.json_found[key] = self._new_found((key,), (), ())
                        counts[found] = counts.get(found, 0) + 1
                children: Any = node.values()
            else:
                children = node
            for child in children:
                kind = type(child)
                if kind is dict or kind is list:
                    push(child)

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
        """Add the row's occurrences to its thread's (when it counts `classes`); the first
        use of a class names its example. The watcher hears of the classes in the row strict
        mode would not rebuild (in the order they were met)."""
        if self.classes:
            thread = self.acc.get(row.thread_id)
            if thread is None:
                thread = self.acc[row.thread_id] = {}
            for where, counts in self.local.items():
                into = thread.get(where)
                if into is None:
                    into = thread[where] = {}
                for found, times in counts.items():
                    into[found] = into.get(found, 0) + times
                    if not found.registered:
                        self._register(found, row, at)
        if self.watcher is not None and (self.classes or self.refusing):
            refused: list[str] = []
            for counts in self.local.values():
                for found in counts:
                    names = found.refused
                    if names is None:
                        names = found.refused = self._refused(found)
                    for name in names:
                        if name not in refused:
                            refused.append(name)
            if refused:
                self.watcher.strict(row, at, refused)
        self.local.clear()

    def _refused(self, found: _Found) -> tuple[str, ...]:
        """The names of the classes `found` holds that strict mode would not rebuild."""
        names = self.strict_names
        refused: list[str] = []
        for key in found.keys:
            name = names.get(key, "")
            if name == "":
                code, module, class_name, method = key
                status = type_status(code, module, class_name, method)
                refused_name = f"{module}.{class_name}" + (f".{method}" if method else "")
                name = names[key] = refused_name if status in ("allowlist", "blocked") else None
            if name is not None:
                refused.append(name)
        return tuple(refused)

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
            for where, counts in self.acc.pop(thread_id, {}).items():
                for found, times in counts.items():
                    for key in found.keys:
                        types[key].seen(where, times)
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
        self.json_lists.clear()
        self.cache.clear()
        self.cache_bytes = 0
        self.read_values.clear()
        self.read_bytes = 0


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


def type_status(code: int, module: str, name: str, method: str | None) -> TypeStatus:
    """What LangGraph does with the class (jsonplus.py `_check_allowed`,
    `_check_allowed_method`, `_reviver`)."""
    if code == EXT_METHOD_SINGLE_ARG:
        return "safe" if (module, name, method) in SAFE_MSGPACK_METHODS else "blocked"
    if code == EXT_NUMPY_ARRAY:
        return "ungated"
    if code == LC1:
        return "langchain"
    return "safe" if (module, name) in SAFE_MSGPACK_TYPES else "allowlist"
