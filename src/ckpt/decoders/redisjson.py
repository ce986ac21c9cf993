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
from typing import Any, Final

import orjson

from ckpt.decoders.ext import send_record
from ckpt.decoders.lcjson import convert_parsed, decode_json_text
from ckpt.decoders.serde import decode
from ckpt.decoders.values import MARK_KEY, TYPE_KEY, bytes_record

INTERRUPT_TYPE: Final = "langgraph.types.Interrupt"
_MARKERS: Final = (b'"__bytes__"', b'"__send__"', b'"__interrupt__"', b'"__delta_snapshot__"')
_INTERRUPT_FIELDS: Final = ("id", "resumable", "ns", "when")


def decode_redis_json(text: bytes) -> Any:
    """One JSON text RedisSaver wrote (a document, a checkpoint, a write's value)."""
    value = decode_json_text(text)
    if any(marker in text for marker in _MARKERS):
        value = convert_markers(value)
    return value


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
