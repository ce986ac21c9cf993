"""What the type census (ckpt.scan.census) reads of a value before it walks it: whether
raw bytes or decoded data may hold what it counts (ext values, lc envelopes), and JSON
read as ckpt reads it everywhere (ckpt.decoders.jsontext)."""

from __future__ import annotations

import marshal
import re
from typing import Any, Final

from ckpt.decoders.jsontext import json_document
from ckpt.errors import DecodeError

# Bytes that start an ext value (fixext 1-16, ext 8/16/32): a document holding none of
# them has no ext value, and a value without one needs no unpacking at all.
_EXT_HEADER: Final = re.compile(b"[\xc7-\xc9\xd4-\xd8]")
# The types of values that hold nothing to count.
PLAIN: Final = frozenset({str, int, float, bool, type(None), bytes})


def may_hold_ext(value: Any) -> bool:
    """False when unpacked data surely holds no ext placeholder. marshal takes exactly
    msgpack's plain types (dict, list, tuple, str, bytes, numbers, None) and refuses a
    slice, in C: four times faster than looking."""
    try:
        marshal.dumps(value)
    except ValueError:  # unmarshallable, or nested deeper than marshal goes
        return True
    return False


def may_hold_map(values: list[Any]) -> bool:
    """False when JSON values surely hold no map, so no lc envelope: numbers, strings, and
    lists of strings (a list of anything else is looked at)."""
    for value in values:
        if type(value) is list:
            try:
                "".join(value)
            except TypeError:
                return True
        elif type(value) not in PLAIN:
            return True
    return False


def has_ext(data: bytes) -> bool:
    """Whether msgpack bytes may hold an ext value (a byte that may start one)."""
    return _EXT_HEADER.search(data) is not None


def looks_pickled(data: bytes) -> bool:
    """langgraph 0.1 untyped blobs: a pickle starts with \\x80 and ends with "."."""
    return data[:1] == b"\x80" and data[-1:] == b"."


def json_value(data: bytes) -> Any:
    """JSON text as ckpt reads it (json_document); DecodeError when it is not JSON."""
    try:
        return json_document(data)
    except RecursionError:
        raise DecodeError("JSON nested too deep") from None
    except ValueError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None


def version_of(body: Any) -> int | None:
    """A checkpoint body's format version `v`, when it is a number."""
    if type(body) is not dict:
        return None
    v = body.get("v")
    return v if type(v) is int else None


def json_or_none(text: bytes) -> Any:
    """JSON text as ckpt reads it, or None when it is empty or not JSON."""
    try:
        return json_document(text) if text else None
    except (ValueError, RecursionError):
        return None
