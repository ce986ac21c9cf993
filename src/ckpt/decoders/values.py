"""Decoded-value vocabulary: reserved keys, marked records, the walk that makes data JSON-ready."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Self, cast

# A decoded object (dataclass, pydantic model, message, Send ...) is a dict of its fields
# plus this key holding "module.Name" (docs/json.md, "Decoded values").
TYPE_KEY: Final = "__type__"
# A marked record (bytes, non-string-key map, NaN, encrypted, pickle ...) holds its kind here.
MARK_KEY: Final = "__ckpt__"


class Marker:
    """A value that stands for a state, not for data (ABSENT, NOT_LOADED): one instance
    per class (compared with `is`), false, shown by its `name`."""

    name: ClassVar[str]
    _instance: ClassVar[Marker | None] = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cast("Self", cls._instance)

    def __repr__(self) -> str:
        return self.name

    def __bool__(self) -> bool:
        return False


class _Absent(Marker):
    """The type of ABSENT: a channel whose version moved but which holds no value."""

    name = "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


# Returned for the `empty` tag (format.md §2.1): savers write it for a channel with no value.
ABSENT: Final[object] = _Absent()


def is_marked(value: Any, kind: str | None = None) -> bool:
    """True if `value` is a marked record (of that `kind`, when given)."""
    if type(value) is not dict:
        return False
    mark = value.get(MARK_KEY)
    if not isinstance(mark, str):
        return False
    return kind is None or mark == kind


def undecodable_record(
    payload: bytes | None, error: str, *, tag: str | None = None
) -> dict[str, Any]:
    """A stored value that did not decode: the reason, and its bytes kept (docs/json.md)."""
    record: dict[str, Any] = {MARK_KEY: "undecodable"}
    if tag is not None:
        record["tag"] = tag
    data = payload or b""
    record["size"] = len(data)
    record["error"] = error
    record["base64"] = base64.b64encode(data).decode("ascii")
    return record


def bytes_record(raw: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Bytes as JSON: base64 and size, plus the text when they are valid UTF-8."""
    raw = bytes(raw)
    record: dict[str, Any] = {
        MARK_KEY: "bytes",
        "base64": base64.b64encode(raw).decode("ascii"),
        "size": len(raw),
    }
    try:
        record["text"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return record


def float_record(value: float) -> dict[str, Any]:
    """NaN and the infinities, which strict JSON cannot hold."""
    if value != value:
        text = "NaN"
    elif value > 0:
        text = "Infinity"
    else:
        text = "-Infinity"
    return {MARK_KEY: "float", "value": text}


def ext_record(code: int, payload: bytes, error: str) -> dict[str, Any]:
    """An ext value we do not understand: kept whole, never dropped (STYLE habit 6)."""
    return {
        MARK_KEY: "ext",
        "code": code,
        "base64": base64.b64encode(payload).decode("ascii"),
        "error": error,
    }


def map_record(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A map plain JSON cannot hold losslessly: non-string keys (format.md §2.2) or reserved keys.

    The entries still need the walk (keys may be tuples, bytes or NaN).
    """
    return {MARK_KEY: "map", "entries": [[key, value] for key, value in mapping.items()]}


def object_record(type_path: str, fields: Any) -> dict[str, Any]:
    """An object: its fields plus TYPE_KEY, or TYPE_KEY + "kwargs" when the fields are not
    a plain string-keyed dict (they became a map record, or a forged payload nested an object)."""
    if type(fields) is dict and TYPE_KEY not in fields and MARK_KEY not in fields:
        return {TYPE_KEY: type_path, **fields}
    return {TYPE_KEY: type_path, "kwargs": fields}


def _plain_dict(mapping: dict[Any, Any]) -> bool:
    """A dict that can be emitted as a JSON object as it is."""
    for key in mapping:
        if type(key) is not str:
            return False
    return TYPE_KEY not in mapping and MARK_KEY not in mapping


def make_json_ready(root: Any, done: Mapping[int, object] | None = None) -> Any:
    """Turn raw unpacked data into JSON-ready values, in place where possible.

    bytes -> bytes records, NaN/inf -> float records, dicts with non-string or reserved keys
    -> map records, tuples (array map keys) -> lists. Containers whose id is in `done` are
    already JSON-ready (values built by the ext hook) and are not entered. Iterative, so
    depth is no problem here (ckpt.decoders.msgpack bounds it anyway).
    """
    skip: Mapping[int, object] = done if done is not None else {}
    # The list branch and the dict branch below are the same walk written twice on purpose:
    # this loop runs once per value of every checkpoint a dump reads, and one shared helper
    # (or a `node.items() if dict else enumerate(node)` switch) costs about a fifth of the
    # decode time (bench/decode.py). Change both together.
    holder: list[Any] = [root]
    stack: list[Any] = [holder]
    while stack:
        node = stack.pop()
        if type(node) is list:
            for index, value in enumerate(node):
                kind = type(value)
                if kind is str or kind is int or kind is bool or value is None:
                    continue
                if kind is list:
                    if id(value) not in skip:
                        stack.append(value)
                elif kind is dict:
                    if id(value) in skip:
                        continue
                    if _plain_dict(value):
                        stack.append(value)
                    else:
                        record = map_record(value)
                        node[index] = record
                        stack.append(record["entries"])
                else:
                    fixed = _leaf(value)
                    node[index] = fixed
                    if type(fixed) is list:
                        stack.append(fixed)
        else:
            for key, value in node.items():
                kind = type(value)
                if kind is str or kind is int or kind is bool or value is None:
                    continue
                if kind is list:
                    if id(value) not in skip:
                        stack.append(value)
                elif kind is dict:
                    if id(value) in skip:
                        continue
                    if _plain_dict(value):
                        stack.append(value)
                    else:
                        record = map_record(value)
                        node[key] = record
                        stack.append(record["entries"])
                else:
                    fixed = _leaf(value)
                    node[key] = fixed
                    if type(fixed) is list:
                        stack.append(fixed)
    return holder[0]


def _leaf(value: Any) -> Any:
    """A non-container value, made JSON-ready (a tuple becomes a list still to be walked)."""
    if type(value) is float:
        return value if math.isfinite(value) else float_record(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_record(value)
    if type(value) is tuple:
        return list(value)
    return value
