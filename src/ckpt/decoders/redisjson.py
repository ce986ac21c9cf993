"""RedisSaver's JSON (langgraph-checkpoint-redis 0.5, format.md §7b): LangChain lc envelopes
plus the saver's own markers, decoded as data and never constructed.

`JsonPlusRedisSerializer` writes a value as JSON (tag `json`) with:

* `{"__bytes__": base64}`: bytes inside a value the saver first packed as msgpack;
* `{"__send__": true, "node", "arg"}`: a `Send`;
* `{"__interrupt__": true, "value", "id" | "resumable", "ns", "when"}`: an `Interrupt`;
* `{"__delta_snapshot__": true, "value"}`: a DeltaChannel snapshot;
* lc:1 constructor dicts (`Serializable.to_json()`, messages) and lc:2 ones (sets,
  dataclasses, any object by its `__dict__`), which ckpt.decoders.lcjson reads.

Each becomes what the msgpack decoder gives for the same value (docs/json.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Final

import orjson

from ckpt.decoders.ext import send_record
from ckpt.decoders.lcjson import convert_parsed, decode_json_text
from ckpt.decoders.serde import decode
from ckpt.decoders.values import MARK_KEY, TYPE_KEY, bytes_record
from ckpt.errors import DecodeError

INTERRUPT_TYPE: Final = "langgraph.types.Interrupt"
# The saver's marker keys, in one pattern: its literal prefix makes one search of it as
# fast as one substring search.
_MARKERS: Final = re.compile(rb'"__(?:bytes|send|interrupt|delta_snapshot)__"')
_INTERRUPT_FIELDS: Final = ("id", "resumable", "ns", "when")


def decode_redis_json(text: bytes) -> Any:
    """One JSON text RedisSaver wrote (a document, a checkpoint, a write's value)."""
    markers = _MARKERS.search(text) is not None
    if b'"constructor"' in text and _EMPTY_ENVELOPE.search(text):
        value = _with_values_not_kept(text)
    else:
        # convert_markers rewrites in place: envelopes it may go into are not shared.
        value = decode_json_text(text, share=not markers)
    if markers:
        value = convert_markers(value)
    return value


# RedisSaver writes an object its JSON encoder does not know by its `__dict__` (format.md
# §7b): a Decimal, a timedelta, a frozenset, a ZoneInfo, an IP address, a numpy scalar have
# none, so the data is lost at write time and only `{"lc": 2, "type": "constructor", "id":
# [...], "kwargs": {}}` is stored. LangGraph's reviver then calls the class with nothing
# (JsonPlusSerializer._revive_lc2, for the types of SAFE_MSGPACK_TYPES) or, for any other
# type, hands back the envelope itself (no allowlist). What it reads, in ckpt's JSON:
_READ_AS_DEFAULT: Final[dict[tuple[str, str], Any]] = {
    ("decimal", "Decimal"): "0",
    ("datetime", "timedelta"): 0.0,
    ("datetime", "time"): "00:00:00",
    ("builtins", "set"): [],
    ("builtins", "frozenset"): [],
    ("collections", "deque"): [],
    ("pathlib", "Path"): ".",
    ("pathlib", "PosixPath"): ".",
    ("pathlib._local", "Path"): ".",
    ("pathlib._local", "PosixPath"): ".",
}
# ... and None where the class needs an argument (TypeError, which the reviver turns into
# None), with or without the `__dict__` it was given as keyword arguments.
_READ_AS_NONE: Final = frozenset(
    {
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "timezone"),
        ("uuid", "UUID"),
        ("zoneinfo", "ZoneInfo"),
        ("re", "compile"),
        ("pathlib", "WindowsPath"),
        ("pathlib._local", "WindowsPath"),
        *(
            ("ipaddress", f"IPv{v}{kind}")
            for v in (4, 6)
            for kind in ("Address", "Network", "Interface")
        ),
    }
)
# Only an lc:2 envelope can be one whose data was lost (_lost): a text whose every "lc"
# key holds the literal 1 (LangChain's messages, the common case) has none.
_EMPTY_ENVELOPE: Final = re.compile(rb'"lc":\s*(?!1\s*[,}])')
NOT_KEPT: Final = "not_kept"


class _NotKept:
    """An envelope whose data RedisSaver lost, kept apart from the lc conversion (which
    leaves anything but dicts and lists alone) until it becomes its record."""

    __slots__ = ("path", "read_as")

    def __init__(self, path: str, read_as: Any) -> None:
        self.path, self.read_as = path, read_as


def _lost(node: dict[str, Any]) -> _NotKept | None:
    """The envelope `node` as a value RedisSaver did not keep, or None if it kept one."""
    ident = node.get("id")
    if (
        node.get("lc") != 2
        or node.get("type") != "constructor"
        or "method" in node
        or node.get("args")
        or type(ident) is not list
        or len(ident) < 2
        or not all(type(part) is str for part in ident)
    ):
        return None
    pair = (".".join(ident[:-1]), ident[-1])
    path = ".".join(ident)
    kwargs = node.get("kwargs")
    if pair in _READ_AS_NONE:
        return _NotKept(path, None)
    if kwargs:
        return None
    if pair in _READ_AS_DEFAULT:
        return _NotKept(path, _READ_AS_DEFAULT[pair])
    if ident[0] == "numpy":
        return _NotKept(path, dict(node))  # not a safe type: LangGraph reads the envelope
    return None


def _with_values_not_kept(text: bytes) -> Any:
    """decode_json_text, where each envelope RedisSaver kept no data of is a `not_kept`
    record: what LangGraph reads in its place (`read_as`) and the type it was."""
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise DecodeError("JSON nested too deep") from None
    except ValueError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None
    found = False

    def swap(node: dict[str, Any]) -> Any:
        nonlocal found
        lost = _lost(node)
        found = found or lost is not None
        return node if lost is None else lost

    parsed = _rewrite_dicts(parsed, swap)
    value = convert_parsed(parsed)
    if not found:
        return value
    return _rewrite_all(value)


def _rewrite_all(root: Any) -> Any:
    """Every _NotKept under `root` as its record, without recursion."""
    if isinstance(root, _NotKept):
        return {MARK_KEY: NOT_KEPT, "type": root.path, "read_as": root.read_as}
    pending = [root] if type(root) in (dict, list) else []
    while pending:
        node = pending.pop()
        items: Any = node.items() if type(node) is dict else enumerate(node)
        for key, child in list(items):
            if isinstance(child, _NotKept):
                node[key] = {MARK_KEY: NOT_KEPT, "type": child.path, "read_as": child.read_as}
            elif type(child) in (dict, list):
                pending.append(child)
    return root


def decode_redis_document(text: bytes, *, values: bool) -> Any:
    """A checkpoint document. Without `values`, its channel values are left undecoded
    (None) but for those a listing needs (`__pregel_tasks`, `join:` barriers), and only
    the parts that may hold an envelope are walked: a listing reads one document per
    thread, and most of a document is its messages and its versions."""
    if values:
        return decode_redis_json(text)
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, an integer past 64 bits ...: json reads those
        return decode_redis_json(text)
    body = doc.get("checkpoint") if type(doc) is dict else None
    if type(body) is not dict or any(
        type(v) in (dict, list) for k, v in doc.items() if k != "checkpoint"
    ):
        # Not the saver's document (its other fields are scalars): walk all of it.
        return convert_markers(convert_parsed(doc))
    channels = body.get("channel_values")
    if type(channels) is dict:
        kept = {
            k: (v if k == "__pregel_tasks" or k.startswith("join:") else None)
            for k, v in channels.items()
        }
        body["channel_values"] = convert_markers(convert_parsed(kept))
    for name, part in body.items():
        if name != "channel_values" and type(part) in (dict, list) and not _plain_strings(part):
            body[name] = convert_markers(convert_parsed(part))
    return doc


def _plain_strings(part: Any) -> bool:
    """A dict of strings, or of dicts of strings (versions, versions_seen), or a list of
    strings: nothing in it to convert."""
    if type(part) is list:
        return all(type(v) is str for v in part)
    for value in part.values():
        if type(value) is dict:
            if not all(type(v) is str for v in value.values()):
                return False
        elif type(value) is not str:
            return False
    return True


def decode_redis_value(tag: str | None, payload: bytes | None, aes_key: bytes | None) -> Any:
    """A write's (type, bytes) as RedisSaver typed it: `json` is its marked JSON; every
    other tag (`msgpack`, `null`, `bytes`, encrypted ...) is LangGraph's serde."""
    if tag == "json" and payload is not None:
        return decode_redis_json(payload)
    return decode(tag, payload, aes_key=aes_key)


def convert_markers(root: Any) -> Any:
    """The saver's marker dicts -> ckpt's records, bottom-up, without recursion."""
    return _rewrite_dicts(root, _marker)


def _rewrite_dicts(root: Any, rewrite: Any) -> Any:
    """`rewrite(d)` in place of every dict `d` under `root`, children before parents,
    without recursion (any depth the JSON parser accepted)."""
    if type(root) is not dict and type(root) is not list:
        return root
    holder = [root]
    pending: list[tuple[Any, Any]] = [(holder, 0)]
    dicts: list[tuple[Any, Any]] = []
    while pending:
        parent, key = pending.pop()
        node = parent[key]
        if type(node) is dict:
            dicts.append((parent, key))
            children: Any = node.items()
        else:
            children = enumerate(node)
        for child_key, child in children:
            if type(child) is dict or type(child) is list:
                pending.append((node, child_key))
    for parent, key in reversed(dicts):
        parent[key] = rewrite(parent[key])
    return holder[0]


def _marker(node: dict[str, Any]) -> Any:
    if len(node) == 1 and type(node.get("__bytes__")) is str:
        try:
            return bytes_record(base64.b64decode(node["__bytes__"], validate=True))
        except (binascii.Error, ValueError):
            return node
    if node.get("__send__") is True and len(node) == 3 and "node" in node and "arg" in node:
        return send_record(node["node"], node["arg"])
    if node.get("__interrupt__") is True and "value" in node:
        record: dict[str, Any] = {TYPE_KEY: INTERRUPT_TYPE, "value": node["value"]}
        for field in _INTERRUPT_FIELDS:
            if field in node:
                record[field] = node[field]
        return record
    if node.get("__delta_snapshot__") is True and len(node) == 2 and "value" in node:
        return {MARK_KEY: "delta_snapshot", "value": node["value"]}
    return node


def decode_js_redis(parsed: Any) -> Any:
    """LangGraph.js RedisSaver's JSON, parsed: lc envelopes, and its `lg_name`-tagged Send
    (`{"lg_name": "Send", "node", "args"}`) and DeltaSnapshot, as LangGraph.js's serde
    elsewhere writes them (`{"node", "args"}`; a delta_snapshot record)."""
    return _js_markers(convert_parsed(parsed))


def _js_markers(root: Any) -> Any:
    return _rewrite_dicts(root, _js_marker)


def _js_marker(node: dict[str, Any]) -> Any:
    tag = node.get("lg_name")
    if tag == "Send" and "node" in node:
        return {k: v for k, v in node.items() if k != "lg_name"}
    if tag == "DeltaSnapshot" and node.keys() == {"lg_name", "value"}:
        return {MARK_KEY: "delta_snapshot", "value": node["value"]}
    return node
