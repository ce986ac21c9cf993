"""The legacy `json` tag and old SQLite metadata: JSON with LangChain lc:1 / lc:2 envelopes.

format.md §2.6. Checkpoint 1.0.x wrote everything this way; later releases only for strings
msgpack could not hold. LangGraph today revives few envelopes and turns legacy datetimes
into None (format.md §2.6 "surprise 1"); we decode every envelope ourselves, to the same
representation as the msgpack decoder, and never import what an envelope names.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from datetime import timedelta
from typing import Any, Final

import orjson

from ckpt.decoders.ext import (
    CONVERSION_ERRORS,
    METHODS,
    POS_ARGS,
    RESERVED_TYPE_PATHS,
    SECRET_NAMES,
    SEND_PAIRS,
    SINGLE_ARG,
    ShapeError,
    method_call,
    pos_args,
    send_record,
    single_arg,
    type_path,
)
from ckpt.decoders.jsontext import long_integer
from ckpt.decoders.memo import Memo, here
from ckpt.decoders.times import time_text
from ckpt.decoders.values import (
    MARK_KEY,
    TYPE_KEY,
    bytes_record,
    float_record,
    map_record,
    object_record,
)
from ckpt.errors import DecodeError

_BYTES_TYPES: Final = frozenset({("builtins", "bytes"), ("builtins", "bytearray")})


def decode_json_text(text: str | bytes, *, share: bool = True) -> Any:
    """Parse legacy JSON (format.md §2.6, 3.2) into the same values `decode` returns.

    orjson parses it several times faster than json where the two agree (ckpt.decoders.
    jsontext); it refuses NaN, the infinities and numbers it would read as one, so what
    it read needs no float converted, and often nothing but its lc envelopes. Those,
    within `shared_exts` (ckpt.decoders.memo) and unless `share` is False (the caller
    changes the value in place), are converted once and shared after."""
    plain = _plain(text)
    if not long_integer(text):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:  # lone surrogates, a BOM, deep nesting ...
            pass
        else:
            if plain:
                return parsed
            envelopes = _envelopes_only(text)
            memo = here.envelopes if share and envelopes else None
            return _convert(parsed, envelopes=envelopes, memo=memo)
    # json reads what orjson refused or was not asked: a number past a float's range
    # (1e400) among them, which json reads as an infinity and no marker announces.
    return _convert(_loads(text))


def convert_parsed(root: Any) -> Any:
    """Already parsed JSON (orjson's, say) -> the same values `decode_json_text` returns:
    envelopes decoded, non-finite floats and reserved keys marked."""
    return _convert(root)


def _loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise DecodeError("JSON nested too deep") from None
    except ValueError as exc:  # includes JSONDecodeError and UnicodeDecodeError
        raise DecodeError(f"invalid JSON: {exc}") from None


# A \u escape could spell any of the others, so it takes the full path too.
_NEEDS_CONVERSION: Final = ('"lc"', '"__type__"', '"__ckpt__"', "NaN", "Infinity", "\\u")
_NEEDS_CONVERSION_BYTES: Final = tuple(marker.encode() for marker in _NEEDS_CONVERSION)


# The same markers as one pattern: on the short text of most metadata one search costs a
# fifth of six (a listing reads one per thread); on long texts six substring searches win.
_NEEDS_CONVERSION_RE: Final = re.compile(rb'"(?:lc|__type__|__ckpt__)"|NaN|Infinity|\\u')
_SHORT_TEXT: Final = 512


def _plain(text: str | bytes) -> bool:
    """No envelope, reserved key or non-finite float can be in this JSON text."""
    if isinstance(text, bytes):
        if len(text) < _SHORT_TEXT:
            return _NEEDS_CONVERSION_RE.search(text) is None
        return not any(marker in text for marker in _NEEDS_CONVERSION_BYTES)
    return not any(marker in text for marker in _NEEDS_CONVERSION)


# What else a text orjson read may hold to convert: reserved keys, and a \u escape (it
# could spell any marker, "lc" too). One pattern with a literal prefix finds both keys in
# a fifth of the time two substring searches take; a \u is looked for only after a
# backslash (memchr), which most texts have none of.
_RESERVED_KEY: Final = re.compile(rb'"__(?:type|ckpt)__"')


def _envelopes_only(text: str | bytes) -> int | None:
    """When lc envelopes are all there is to convert in the JSON text (orjson read it: it
    holds no NaN nor infinity), how many there may be at most: its `"lc"` keys, and
    strings "lc"; None when there may be more to do."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _RESERVED_KEY.search(data) is not None or (b"\\" in data and b"\\u" in data):
        return None
    return data.count(b'"lc"')


def _convert(root: Any, *, envelopes: int | None = None, memo: Memo | None = None) -> Any:
    """Envelopes -> values, bottom-up, without recursion (any depth json.loads accepted).

    `envelopes`: the text holds nothing else to convert, and at most this many dicts with
    an "lc" key: the walk, breadth first, stops once it has found them all (the messages
    of a checkpoint, without a look inside each one's content). `memo` (with `envelopes`
    only): each outermost envelope is converted whole, through it (_shared_envelope)."""
    if type(root) is float and not math.isfinite(root):
        return float_record(root)
    if type(root) is not dict and type(root) is not list:
        return root
    holder = [root]
    pending: deque[tuple[Any, Any]] = deque([(holder, 0)])
    dicts: list[tuple[Any, Any]] = []  # (parent, key) of every dict, parents first
    left = -1 if envelopes is None else envelopes
    while pending and left:
        parent, key = pending.popleft()
        node = parent[key]
        if type(node) is dict:
            if "lc" in node:
                legacy_time = _legacy_time(node)
                if legacy_time is not None:
                    # Handled before its children: the tzinfo envelope is needed unconverted.
                    parent[key] = legacy_time
                    continue
                if memo is not None:
                    parent[key], found = _shared_envelope(memo, node)
                    left -= found
                    continue
                dicts.append((parent, key))
                left -= 1
            elif TYPE_KEY in node or MARK_KEY in node:
                dicts.append((parent, key))  # the others _convert_dict leaves as they are
            children: Any = node.items()
        else:
            children = enumerate(node)
        for child_key, child in children:
            kind = type(child)
            if kind is dict or kind is list:
                pending.append((node, child_key))
            elif kind is float and not math.isfinite(child):
                node[child_key] = float_record(child)
    for parent, key in reversed(dicts):
        parent[key] = _convert_dict(parent[key])
    return holder[0]


def _shared_envelope(memo: Memo, node: dict[str, Any]) -> tuple[Any, int]:
    """An outermost envelope, read by orjson from a text with nothing but envelopes to
    convert, converted whole: given back from `memo` if its JSON text was converted
    before (the same text is the same value: orjson writes each value it reads one way,
    its keys in order), else converted and kept. With it, how many "lc" the walk may
    count as found: the "lc" of its text, no more than of the text it was read from (that
    had no escape, and writes a string "lc" or an "lc" key as orjson does)."""
    try:
        text = orjson.dumps(node)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: not shared
        return _convert(node), 1
    hit: tuple[Any, int] | None = memo.values.get(text)
    if hit is not None:
        return hit
    found = text.count(b'"lc"')
    entry = (_convert(node, envelopes=found), found)
    memo.keep(text, entry)
    return entry


def _envelope_id(node: dict[str, Any]) -> list[str] | None:
    ident = node.get("id")
    if type(ident) is list and ident and all(type(part) is str for part in ident):
        return ident
    return None


def _convert_dict(node: dict[str, Any]) -> Any:
    """One dict whose children are converted already."""
    lc = node.get("lc")
    if lc == 2 and node.get("type") == "delta_snapshot" and node.keys() == {"lc", "type", "value"}:
        # LangGraph.js's DeltaChannel snapshot (its _DeltaSnapshot, format.md §11).
        return {MARK_KEY: "delta_snapshot", "value": node["value"]}
    ident = _envelope_id(node) if type(lc) is int else None
    if ident is not None:
        kind = node.get("type")
        if lc == 1:
            path = ".".join(ident)
            if kind == "constructor" and path not in RESERVED_TYPE_PATHS:
                # LangChain Serializable.to_json(): the id is the legacy LangChain path,
                # e.g. langchain.schema.messages.HumanMessage (format.md §2.6).
                return object_record(path, node.get("kwargs", {}))
            if kind == "secret":
                return {MARK_KEY: "secret", "id": ident}
            if kind == "not_implemented":
                return {MARK_KEY: "not_implemented", "id": ident, "repr": node.get("repr")}
        elif lc == 2 and kind == "constructor" and len(ident) >= 2:
            try:
                converted = _lc2(node, ".".join(ident[:-1]), ident[-1])
            except ShapeError:  # names Send or ndarray in a way we never write
                converted = None
            if converted is not None:
                return converted
    if TYPE_KEY in node or MARK_KEY in node:
        return map_record(node)
    return node


def _lc2(node: dict[str, Any], module: str, name: str) -> Any:
    """A LangGraph lc:2 constructor envelope; None if it is not well formed."""
    method = node.get("method")
    args = node.get("args") or []
    kwargs = node.get("kwargs") or {}
    if type(args) is not list:
        return None
    if type(method) is list and method and type(method[0]) is str:
        method = method[0]  # [name, fallback ...]: LangGraph 1.0 tried them in order
    if type(method) is str:
        if (module, name) in _BYTES_TYPES and method == "fromhex" and len(args) == 1:
            try:
                return bytes_record(bytes.fromhex(args[0]))
            except CONVERSION_ERRORS:
                pass
        if (module, name, method) in METHODS and len(args) == 1:
            return method_call(module, name, method, args[0])
        return method_call(module, name, method, args[0] if len(args) == 1 else args)
    # method None, or [None, "model_construct"] / [None, "construct"] for pydantic: the
    # first entry None already meant "the default constructor".
    if (module, name) in SEND_PAIRS:
        stored_as = f"{module}.{name}"
        if type(kwargs) is dict and not args and kwargs.keys() == {"node", "arg"}:
            return send_record(kwargs["node"], kwargs["arg"], stored_as=stored_as)
        if len(args) == 2 and not kwargs:
            return send_record(args[0], args[1], stored_as=stored_as)
    if not kwargs:
        if (module, name) in SINGLE_ARG and len(args) == 1:
            return single_arg(module, name, args[0])
        if (module, name) in POS_ARGS:
            return pos_args(module, name, args)
        if name in SECRET_NAMES and len(args) == 1:
            return single_arg(module, name, args[0])
    path = type_path(module, name)
    if not args:
        return object_record(path, kwargs) if kwargs else {TYPE_KEY: path}
    if not kwargs:
        if len(args) == 1:
            return {TYPE_KEY: path, "value": args[0]}  # Enum, like msgpack ext 0
        return {TYPE_KEY: path, "args": args}
    return {TYPE_KEY: path, "args": args, "kwargs": kwargs}


def _is_lc2(node: Any, module_and_name: list[str]) -> bool:
    return (
        type(node) is dict
        and node.get("lc") == 2
        and node.get("type") == "constructor"
        and node.get("id") == module_and_name
    )


def _legacy_time(node: dict[str, Any]) -> str | None:
    """lc:2 datetime.time: args [hour, minute, second, microsecond, tzinfo], kwargs {fold}.

    None when the envelope is anything else or malformed (then it takes the generic path).
    """
    if not _is_lc2(node, ["datetime", "time"]) or node.get("method") is not None:
        return None
    args = node.get("args")
    if type(args) is not list or len(args) != 5:
        return None
    hour, minute, second, microsecond, tzinfo = args
    try:
        tz: tuple[str, Any] | None = None
        if _is_lc2(tzinfo, ["zoneinfo", "ZoneInfo"]):
            tz = ("zone", tzinfo["args"][0])
        elif _is_lc2(tzinfo, ["datetime", "timezone"]):
            delta = tzinfo["args"][0]
            if not _is_lc2(delta, ["datetime", "timedelta"]):
                return None
            days, seconds, microseconds = delta["args"]
            tz = ("offset", timedelta(days, seconds, microseconds))
        elif tzinfo is not None:
            return None
        return time_text(hour, minute, second, microsecond, tz)
    except (*CONVERSION_ERRORS, KeyError):
        return None
