"""What LangGraph's loaders need of each part of a stored row, as the integrity visitor
(ckpt.scan.integrity) judges it: a function per part saying what is wrong, or None.

The rules read LangGraph's own code (langgraph-checkpoint-sqlite, -postgres, the memory
saver, `pregel/main.py` `_prepare_state_snapshot`, `pregel/_algo.py` `prepare_next_tasks`,
`pregel/_checkpoint.py` `channels_from_checkpoint`):

* the body, once `loads_typed` decoded it, is indexed as a dict: `v` (compared with 4),
  `id` (un-hexed into the bytes every task id is derived from), `ts`, `channel_versions`
  (a map of comparable versions), `versions_seen` (a map of such maps per node), and
  `channel_values` (a map; stores that keep values apart rebuild it from their blobs);
  `updated_channels` and v1-v3 `pending_sends` are lists when there;
* the metadata is a map, `step` a number LangGraph adds one to, `parents` a map of
  namespaces to checkpoint ids (spread into the config of every snapshot);
* a pending write has a task id, a channel, an index and a serde tag its value decodes by;
* a blob has a tag (PostgresSaver decodes it before it looks at it) and, unless `empty`
  or `null`, bytes.
"""

from __future__ import annotations

import binascii
import json
from itertools import chain
from typing import Any, Final

import ormsgpack

from ckpt.decoders.jsontext import json_document
from ckpt.records.model import UNREADABLE_IDX, RawBlob, RawCheckpoint, RawWrite

# Serde tags some LangGraph serializer reads (`loads_typed`), by part; `<inner>+<cipher>`
# is EncryptedSerializer's around one of them.
VALUE_TAGS: Final = frozenset({"msgpack", "json", "null", "bytes", "bytearray", "pickle"})
BLOB_TAGS: Final = VALUE_TAGS | {"empty"}  # PostgresSaver and InMemorySaver skip `empty`
BODY_TAGS: Final = frozenset({"msgpack", "json", "pickle", "jsonb"})
# Tags whose value is no bytes: nothing to decode.
_NO_BYTES: Final = frozenset({"null", "empty"})
_VERSION: Final = (str, int, float)
_VERSION_TYPES: Final = frozenset(_VERSION)
_STR: Final = frozenset({str})
_DICT: Final = frozenset({dict})
FORMAT_VERSIONS: Final = frozenset({1, 2, 3, 4})  # checkpoint `v` (format.md §2)
_METADATA_TAGS: Final = VALUE_TAGS | {"jsonb"}
_NUMBER: Final = (int, float)


def body_problem(body: Any, *, values_apart: bool, plain: bool = False) -> str | None:
    """What keeps LangGraph from loading a decoded checkpoint body, or None. `values_apart`:
    the store keeps channel values outside the body (its loader rebuilds `channel_values`);
    `plain`: its versions were found to be strings only (string_versions) already."""
    if type(body) is not dict:
        return f"the body is {_kind(body)}, not a map"
    v = body.get("v")
    if type(v) is not int:
        return "no format version `v`" if "v" not in body else f"`v` is {_kind(v)}"
    if v not in FORMAT_VERSIONS:
        return f"format version `v` {v} is none LangGraph writes (1 to 4)"
    checkpoint_id = body.get("id")
    if type(checkpoint_id) is not str:
        return "no `id`" if "id" not in body else f"`id` is {_kind(checkpoint_id)}"
    try:
        binascii.unhexlify(checkpoint_id.replace("-", ""))
    except (binascii.Error, ValueError):
        return f"`id` {checkpoint_id[:60]!r} is not a uuid (task ids are derived from it)"
    if type(body.get("ts")) is not str:
        return "no `ts`" if "ts" not in body else f"`ts` is {_kind(body['ts'])}"
    values = body.get("channel_values")
    if values is None and "channel_values" not in body and values_apart:
        pass  # rebuilt from the blobs
    elif type(values) is not dict:
        return (
            "no `channel_values`"
            if "channel_values" not in body
            else f"`channel_values` is {_kind(values)}"
        )
    versions = body.get("channel_versions")
    seen = body.get("versions_seen")
    if not plain and not string_versions(versions, seen):
        problem = _versions_problem(body, versions, seen)
        if problem is not None:
            return problem
    updated = body.get("updated_channels")
    if updated is not None and type(updated) is not list:
        return f"`updated_channels` is {_kind(updated)}"
    if updated and not set(map(type, updated)) <= _STR:
        return "`updated_channels` holds something other than channel names"
    sends = body.get("pending_sends")
    if sends is not None and type(sends) is not list and v < 4:
        return f"`pending_sends` is {_kind(sends)}"
    return None


def string_versions(versions: Any, seen: Any) -> bool:
    """The common case, checked in C at once: `channel_versions` and each node's map in
    `versions_seen` map strings to strings (the versions every saver since langgraph 0.2
    writes), so nothing _versions_problem looks for is there."""
    if type(versions) is not dict or type(seen) is not dict:
        return False
    nodes = seen.values()
    if not set(map(type, nodes)) <= _DICT:
        return False
    every = chain(
        versions,
        versions.values(),
        chain.from_iterable(nodes),
        chain.from_iterable(map(dict.values, nodes)),
    )
    # str.join refuses anything but strings, in C (twice as fast as the set of their
    # types); the decoders that hand a body over make no str subclass.
    try:
        "".join(every)
    except TypeError:
        return False
    return True


def _versions_problem(body: dict[Any, Any], versions: Any, seen: Any) -> str | None:
    """What is wrong with the body's `channel_versions` and `versions_seen`, or None."""
    problem = _versions(versions, "channel_versions")
    if problem is not None:
        return problem
    if type(seen) is not dict:
        return (
            "no `versions_seen`"
            if "versions_seen" not in body
            else (f"`versions_seen` is {_kind(seen)}")
        )
    kinds = _plain_seen_types(seen)
    if kinds is None:
        for node, node_seen in seen.items():
            if type(node_seen) is dict and _plain_versions(node_seen):
                continue
            problem = _versions(node_seen, f"`versions_seen` of {str(node)[:60]!r}")
            if problem is not None:
                return problem
        kinds = set().union(
            *(_version_types(node_seen) for node_seen in seen.values() if type(node_seen) is dict)
        )
    kinds |= _version_types(versions)
    if str in kinds and len(kinds) > 1:
        # A saver writes one kind of version (strings, or numbers before langgraph 0.2):
        # LangGraph takes max() over them, and a string beside a number is a changed row.
        return "its versions mix strings and numbers"
    return None


def _versions(versions: Any, name: str) -> str | None:
    if type(versions) is not dict:
        shown = name if name.startswith("`") else f"`{name}`"
        return f"no {shown}" if versions is None else f"{shown} is {_kind(versions)}"
    if _plain_versions(versions):
        return None
    for channel, version in versions.items():
        if type(channel) is not str:
            return f"a channel of `{name.strip('`')}` is named by {_kind(channel)}"
        if not isinstance(version, _VERSION) or type(version) is bool:
            return f"the version of {channel[:60]!r} in `{name.strip('`')}` is {_kind(version)}"
    return None


def _version_types(versions: Any) -> set[type]:
    """The types of the versions (once checked: strings, or numbers, or both)."""
    if type(versions) is not dict:
        return set()
    return set(map(type, versions.values()))


def _plain_seen_types(seen: dict[Any, Any]) -> set[type] | None:
    """The common case of `versions_seen`, checked in C for all its nodes at once: maps
    with string keys and versions of the types savers write. The types of those
    versions; None when some node is not that plain."""
    nodes = seen.values()
    if not set(map(type, nodes)) <= _DICT or not set(map(type, chain.from_iterable(nodes))) <= _STR:
        return None
    kinds = set(map(type, chain.from_iterable(map(dict.values, nodes))))
    if not kinds <= _VERSION_TYPES:
        return None
    return kinds


def _plain_versions(versions: dict[Any, Any]) -> bool:
    """The common case, checked in C: string keys, versions of the types savers write."""
    return set(map(type, versions)) <= _STR and set(map(type, versions.values())) <= _VERSION_TYPES


def parse_metadata(row: RawCheckpoint) -> tuple[dict[str, Any] | None, str | None]:
    """The stored metadata as plain data, and what is wrong with it (None: nothing, or it
    is not read here: MongoDBSaver's typed pairs, a serde tag ckpt does not read)."""
    tag = row.metadata_type
    data = row.metadata
    if (tag == "json" or tag == "jsonb") and data:  # SQLite's and Postgres's: first
        return _metadata_document(data, tag)
    if tag == "mongodb-pairs" and data:
        return _mongodb_pairs(data)
    if isinstance(tag, str) and "+" not in tag and tag not in _METADATA_TAGS:
        # A serde pair's tag (InMemorySaver keeps metadata as one): loads_typed raises.
        return None, f"metadata under serde tag {tag[:40]!r}: no LangGraph serializer reads it"
    if tag in ("null", "bytes", "bytearray"):
        return None, f"the metadata is stored as {tag!r}, which holds no map"
    if tag not in ("json", "jsonb", "msgpack"):
        return None, None
    if not data:
        return None, "no metadata (null or empty)"
    return _metadata_document(data, tag)


def _metadata_document(data: bytes, tag: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        if tag == "msgpack":
            metadata = ormsgpack.unpackb(data, ext_hook=lambda code, payload: None)
        else:
            metadata = json_document(data)
    except (ValueError, TypeError, RecursionError) as exc:
        return None, f"the metadata does not decode ({str(exc)[:80]})"
    if type(metadata) is not dict:
        return None, f"the metadata is {_kind(metadata)}, not a map"
    return metadata, metadata_problem(metadata)


class _BadPair(Exception):
    pass


def _mongodb_pairs(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """MongoDBSaver's metadata (format.md §7c), as the store gives it: JSON of a document
    whose leaves are `[type, bytes]` pairs (bytes as ckpt's base64 records), which
    `loads_metadata` hands to `serde.loads_typed` one by one. Each pair must be one and
    decode; the decoded metadata is then judged as any other."""
    import base64

    def leaf(value: Any, where: str) -> Any:
        if type(value) is dict and value.get("__ckpt__") != "bytes":
            return {k: leaf(v, f"{where}.{k}" if where else k) for k, v in value.items()}
        if not (type(value) is list and len(value) == 2 and type(value[0]) is str):
            raise _BadPair(f"`{where}` is {_kind(value)}, not a [type, bytes] pair")
        tag, stored = value
        if tag == "null":
            return None
        if tag.partition("+")[0] not in VALUE_TAGS or tag.partition("+")[2]:
            if tag.partition("+")[2]:
                return None  # encrypted: judged with the key, by the census
            raise _BadPair(f"`{where}`: serde tag {tag[:40]!r}: no LangGraph serializer reads it")
        if type(stored) is not dict or stored.get("__ckpt__") != "bytes":
            raise _BadPair(f"`{where}` holds {_kind(stored)}, not bytes")
        payload = base64.b64decode(stored.get("base64", ""))
        if tag in ("bytes", "bytearray"):
            return payload
        if tag == "pickle":
            return None
        if not payload:
            raise _BadPair(f"`{where}`: tag {tag!r} with empty bytes")
        try:
            if tag == "json":
                return json.loads(payload)
            return ormsgpack.unpackb(payload, ext_hook=lambda code, data: None)
        except (ValueError, TypeError, RecursionError) as exc:
            raise _BadPair(f"`{where}` does not decode ({str(exc)[:60]})") from exc

    try:
        document = json.loads(data)
    except ValueError as exc:
        return None, f"the metadata does not decode ({str(exc)[:80]})"
    if type(document) is not dict:
        return None, f"the metadata is {_kind(document)}, not a map"
    try:
        metadata = leaf(document, "")
    except _BadPair as exc:
        return None, str(exc)
    return metadata, metadata_problem(metadata)


def metadata_problem(metadata: dict[str, Any]) -> str | None:
    """What LangGraph trips on in decoded metadata, or None."""
    step = metadata.get("step")
    if "step" not in metadata:
        return "no `step`"
    if not isinstance(step, _NUMBER) or type(step) is bool:
        return f"`step` is {_kind(step)}, not a number"
    parents = metadata.get("parents")
    if "parents" in metadata:
        if type(parents) is not dict:
            return f"`parents` is {_kind(parents)}, not a map"
        for ns, checkpoint_id in parents.items():
            if type(ns) is not str or type(checkpoint_id) is not str:
                return "`parents` maps something other than a namespace to a checkpoint id"
    # LangGraph itself writes checkpoints without `source` (a DeltaChannel's exit snapshot
    # holds `{"step": -2}` alone), so only one of another type is wrong.
    source = metadata.get("source")
    if "source" in metadata and type(source) is not str:
        return f"`source` is {_kind(source)}"
    return None


def write_problem(row: RawWrite, *, untyped: bool) -> str | None:
    """What keeps LangGraph from loading a pending write row, or None (its value's bytes
    are judged by the census, which decodes them). `untyped`: langgraph 0.1 rows, which
    have no tag."""
    if type(row.task_id) is not str or not row.task_id:
        return "no task id"
    if not is_uuid(row.task_id) and not _resume_by_interrupt_id(row):
        return f"task id {row.task_id[:60]!r} is not a uuid"
    if type(row.channel) is not str or not row.channel:
        return "no channel"
    if type(row.idx) is not int or type(row.idx) is bool or row.idx == UNREADABLE_IDX:
        return "its index is not a number"
    return _value_problem(row.type, row.data, VALUE_TAGS, untyped=untyped) or stored_problem(
        row.type, row.flaws
    )


def _resume_by_interrupt_id(row: RawWrite) -> bool:
    """LangGraph.js's `Command({resume: {interruptId: value}})` saves each answer as a
    `__resume__` write under the interrupt's id (32 hex digits) as its task id
    (`@langchain/langgraph` `pregel/io.js` mapCommand); LangGraph.js reads it back."""
    if row.channel != "__resume__" or len(row.task_id) != 32:
        return False
    try:
        binascii.unhexlify(row.task_id)
    except (binascii.Error, ValueError):
        return False
    return True


def is_uuid(text: Any) -> bool:
    """Whether `text` is a uuid as LangGraph writes checkpoint and task ids (32 hex digits,
    dashes between)."""
    if type(text) is not str or len(text) != 36:
        return False
    try:
        binascii.unhexlify(text.replace("-", ""))
    except (binascii.Error, ValueError):
        return False
    return True


def stored_problem(tag: str | None, flaws: tuple[str, ...]) -> str | None:
    """What the reader saw of how the value is kept (RawCheckpoint.flaws) that LangGraph's
    loader trips on: a value kept as text is one only the `json` tag reads (and `null`
    ignores)."""
    if flaws and tag not in ("json", "null"):
        return flaws[0]
    return None


def blob_problem(row: RawBlob) -> str | None:
    """What keeps LangGraph from loading a stored channel value, or None."""
    return _value_problem(row.type, row.data, BLOB_TAGS, untyped=False)


def _value_problem(
    tag: str | None, data: bytes | None, tags: frozenset[str], *, untyped: bool
) -> str | None:
    if tag is None:
        return None if untyped else "no serde tag (the type is null)"
    if type(tag) is not str:
        return f"its serde tag is {_kind(tag)}"
    inner = tag.partition("+")[0]
    if inner not in tags:
        return f"serde tag {tag[:40]!r}: no LangGraph serializer reads it"
    if inner not in _NO_BYTES and inner not in ("bytes", "bytearray") and not data:
        return f"no value: tag {tag[:40]!r} with {'no bytes' if data is None else 'empty bytes'}"
    return None


def body_tag_problem(row: RawCheckpoint, *, untyped: bool = True) -> str | None:
    """What is wrong with a body that was not decoded, or None when there was no reason to
    decode it (encrypted, not fetched for its size, a pickle). `untyped`: a store of
    langgraph 0.1, whose pickles have no tag."""
    tag = row.type
    if not row.body and row.body_size == 0:
        return "no body (null or empty)"
    if tag is None:
        return None if untyped else "no serde tag"
    inner = tag.partition("+")[0]
    if inner in ("null", "empty", "bytes", "bytearray"):
        return f"the body is stored as {tag[:40]!r}, which holds no checkpoint"
    if inner not in BODY_TAGS:
        return f"serde tag {tag[:40]!r}: no LangGraph serializer reads it"
    return None


def step_of(row: RawCheckpoint) -> int | None:
    """The step from the stored metadata."""
    metadata, _ = parse_metadata(row)
    step = metadata.get("step") if metadata is not None else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    if isinstance(value, slice):
        return "an ext value"
    return type(value).__name__
