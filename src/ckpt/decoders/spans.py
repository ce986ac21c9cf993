"""Where the bytes of a stored value go, without decoding it: the byte span of each channel
value inside a checkpoint body, and of each element of a list value (`ckpt stats`).

msgpack is walked by its headers alone: a string, a binary or an ext value is skipped by
its length prefix whatever it holds (a LangChain message is one ext), so the walk costs a
few operations per container element, never per byte. JSON bodies (LangGraph.js, the
legacy `json` tag) are walked with the standard library's C scanner. Sizes are exact for
any encoding a writer chose; nothing is built from the data but the channel names and
versions.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Final

import ormsgpack

from ckpt.decoders.crypto import decrypt_aes

_U16: Final = struct.Struct(">H").unpack_from
_U32: Final = struct.Struct(">I").unpack_from
# Fixed sizes (header included) of the msgpack types that hold no length prefix.
_FIXED: Final = {
    0xC0: 1, 0xC2: 1, 0xC3: 1,  # nil, false, true
    0xCA: 5, 0xCB: 9,  # float 32, 64
    0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9,  # uint 8..64
    0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9,  # int 8..64
    0xD4: 3, 0xD5: 4, 0xD6: 6, 0xD7: 10, 0xD8: 18,  # fixext 1..16
}  # fmt: skip


# List elements measured one by one; a longer list is measured as one value (a hostile
# value of millions of tiny elements would otherwise hold a span and a hash for each:
# 395 MB for 2 million fixext values, where the bytes are 6 MB).
LIST_ELEMENTS: Final = 1 << 16


class SpanError(ValueError):
    """The bytes are not the msgpack or JSON they claim to be (truncated, or lying)."""


@dataclass(slots=True)
class ValueLayout:
    """The stored size of one value and, for a list, the size and a fingerprint of each
    element: two versions of an append-only list share their leading elements."""

    size: int
    elements: list[int] | None = None
    # What tells two elements apart: a hash of each element's bytes (header walk), or the
    # decoded element itself (ext values stay packed, so they compare as bytes).
    fingerprints: list[Any] | None = None
    ext: int | None = None  # the ext code when the value is one (7: a DeltaChannel snapshot)


@dataclass(slots=True)
class BodyLayout:
    """A checkpoint body's inline channel values and versions (SQLite, old PersistentDicts)."""

    values: dict[str, ValueLayout]
    versions: dict[Any, Any]  # channel -> version as stored (compared, never shown)
    v: int | None = None  # the checkpoint format version (format.md §3.1)


def plaintext(tag: str | None, data: bytes, aes_key: bytes | None) -> tuple[str | None, bytes]:
    """An `<inner>+aes` value decrypted when the key opens it; otherwise as stored."""
    if tag is not None and tag.endswith("+aes") and aes_key is not None:
        opened = decrypt_aes(data, aes_key)
        if opened is not None:
            return tag.removesuffix("+aes"), opened
    return tag, data


def body_layout(tag: str | None, data: bytes, aes_key: bytes | None = None) -> BodyLayout | None:
    """The layout of a checkpoint body, or None when it holds no readable inline values
    (encrypted without the key, a pickle, another serializer's bytes, damaged)."""
    tag, data = plaintext(tag, data, aes_key)
    try:
        if tag == "msgpack":
            return _fast_msgpack_body(data) or _msgpack_body(data)
        if tag == "json" or (tag is None and data[:1] in (b"{", b" ")):
            return _json_body(data)
    except (SpanError, IndexError, struct.error, ValueError, UnicodeDecodeError):
        return None
    return None


def value_layout(tag: str | None, data: bytes, aes_key: bytes | None = None) -> ValueLayout:
    """The layout of one stored value (a Postgres or pickle-folder blob, a write)."""
    size = len(data)
    tag, data = plaintext(tag, data, aes_key)
    try:
        if tag == "msgpack" and data:
            end, elements = _msgpack_value(data, 0)
            if end == len(data) and elements is not None:
                return _listed(size, data, elements)
            return ValueLayout(size, ext=ext_code(data, 0))
        elif tag == "json" and data:
            text = data.decode()
            start = _skip_ws(text, 0)
            if text.startswith("[", start):
                spans, _ = _json_array(text, start)
                if spans is not None:
                    return _listed(size, text.encode() if not text.isascii() else data, spans)
    except (SpanError, IndexError, struct.error, ValueError, UnicodeDecodeError):
        pass
    return ValueLayout(size)


def shared_prefix(earlier: ValueLayout | None, later: ValueLayout) -> int:
    """Bytes of `later` that repeat `earlier`: its leading list elements equal to earlier's
    (the messages a chat re-stores at every step). 0 for values that are not lists."""
    if earlier is None or earlier.fingerprints is None or later.fingerprints is None:
        return 0
    assert later.elements is not None
    old = earlier.fingerprints
    if later.fingerprints[: len(old)] == old:  # appended to: one C-level compare
        return sum(later.elements[: len(old)])
    shared = 0
    for before, now, size in zip(old, later.fingerprints, later.elements, strict=False):
        if before != now:
            break
        shared += size
    return shared


# -- msgpack ------------------------------------------------------------------------------


def _fast_msgpack_body(data: bytes) -> BodyLayout | None:
    """The layout from ormsgpack's C decoder, ext values left packed (`slice(code, data)`),
    each size counted from what was decoded. That count assumes the smallest encoding of
    every item, as ormsgpack (LangGraph's serializer) writes; when the body's own length
    disagrees (another writer's float32 or wide ints), None: the header walk measures it."""
    try:
        body = ormsgpack.unpackb(data, ext_hook=slice, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError):
        return None
    if type(body) is not dict:
        return None
    values: dict[str, ValueLayout] = {}
    channel_values = body.get("channel_values")
    if type(channel_values) is not dict:
        return None
    rest = {k: v for k, v in body.items() if k != "channel_values"}
    try:
        # Everything but the values in one C call; then the values, a channel at a time.
        total = _map_header(len(body)) - _map_header(len(rest)) + _packed(rest)
        total += _size("channel_values") + _map_header(len(channel_values))
        for channel, inner in channel_values.items():
            if type(inner) is list:
                sizes = [  # inline for ext items (messages): no call per item
                    (n := len(item.stop))
                    + (2 if n in _FIXEXT else 3 if n < 0x100 else 4 if n < 0x10000 else 6)
                    if type(item) is slice
                    else _packed(item)
                    for item in inner
                ]
                layout = ValueLayout(_array_header(len(inner)) + sum(sizes), sizes, inner)
            else:
                code = inner.start if type(inner) is slice else None
                layout = ValueLayout(_packed(inner), ext=code)
            values[channel if type(channel) is str else repr(channel)] = layout
            total += _size(channel) + layout.size
    except _Unsized:
        return None
    if total != len(data):
        return None
    versions = body.get("channel_versions")
    v = body.get("v")
    return BodyLayout(
        values, versions if type(versions) is dict else {}, v if type(v) is int else None
    )


_FIXEXT: Final = frozenset({1, 2, 4, 8, 16})


class _Unsized(Exception):
    """A decoded value whose encoded size cannot be told from its Python type."""


def _packed(value: Any) -> int:
    """`_size`, counted by ormsgpack in C when the value holds no packed ext (a slice)."""
    if type(value) is slice:
        return _size(value)
    try:
        return len(ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS))
    except (TypeError, OverflowError):  # a slice inside: count in Python
        return _size(value)


def _size(value: Any) -> int:
    """Bytes of the smallest msgpack encoding of a decoded value (ext as `slice`)."""
    kind = type(value)
    if kind is slice:
        n = len(value.stop)
        return n + (2 if n in _FIXEXT else 3 if n < 0x100 else 4 if n < 0x10000 else 6)
    if kind is str:
        n = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        return n + (1 if n < 32 else 2 if n < 0x100 else 3 if n < 0x10000 else 5)
    if kind is int:
        if -32 <= value <= 0x7F:
            return 1
        if value > 0:
            return 2 if value < 0x100 else 3 if value < 0x10000 else 5 if value < 1 << 32 else 9
        return 2 if value >= -0x80 else 3 if value >= -0x8000 else 5 if value >= -(1 << 31) else 9
    if kind is dict:
        return _map_header(len(value)) + sum(_size(k) + _size(v) for k, v in value.items())
    if kind is list:
        return _array_header(len(value)) + sum(map(_size, value))
    if value is None or kind is bool:
        return 1
    if kind is float:
        return 9
    if kind is bytes:
        n = len(value)
        return n + (2 if n < 0x100 else 3 if n < 0x10000 else 5)
    raise _Unsized(kind.__name__)


def _map_header(n: int) -> int:
    return 1 if n < 16 else 3 if n < 0x10000 else 5


_array_header = _map_header


def skip(data: bytes, i: int, count: int = 1) -> int:
    """The offset after `count` consecutive msgpack objects starting at `i`.

    Iterative: a container adds its items to the count, so hostile nesting costs no
    recursion; a length that runs past the data raises SpanError.
    """
    end = len(data)
    while count:
        count -= 1
        c = data[i]
        if c <= 0x7F or c >= 0xE0:  # positive and negative fixint
            i += 1
        elif c <= 0x8F:  # fixmap
            count += 2 * (c - 0x80)
            i += 1
        elif c <= 0x9F:  # fixarray
            count += c - 0x90
            i += 1
        elif c <= 0xBF:  # fixstr
            i += 1 + c - 0xA0
        elif c in _FIXED:
            i += _FIXED[c]
        elif c in (0xC4, 0xD9):  # bin 8, str 8
            i += 2 + data[i + 1]
        elif c in (0xC5, 0xDA):  # bin 16, str 16
            i += 3 + _U16(data, i + 1)[0]
        elif c in (0xC6, 0xDB):  # bin 32, str 32
            i += 5 + _U32(data, i + 1)[0]
        elif c == 0xC7:  # ext 8
            i += 3 + data[i + 1]
        elif c == 0xC8:  # ext 16
            i += 4 + _U16(data, i + 1)[0]
        elif c == 0xC9:  # ext 32
            i += 6 + _U32(data, i + 1)[0]
        elif c == 0xDC:  # array 16
            count += _U16(data, i + 1)[0]
            i += 3
        elif c == 0xDD:  # array 32
            count += _U32(data, i + 1)[0]
            i += 5
        elif c == 0xDE:  # map 16
            count += 2 * _U16(data, i + 1)[0]
            i += 3
        elif c == 0xDF:  # map 32
            count += 2 * _U32(data, i + 1)[0]
            i += 5
        else:  # 0xC1 is never used
            raise SpanError(f"byte 0x{c:02x} at offset {i} starts no msgpack object")
        if i > end or count > end:  # every object takes at least one byte
            raise SpanError("a length runs past the end of the data")
    return i


_EXT_TYPE_AT: Final = {0xD4: 1, 0xD5: 1, 0xD6: 1, 0xD7: 1, 0xD8: 1, 0xC7: 2, 0xC8: 3, 0xC9: 5}


def ext_code(data: bytes, i: int) -> int | None:
    """The type code of the ext value at i, or None if no ext starts there."""
    at = _EXT_TYPE_AT.get(data[i])
    if at is None or i + at >= len(data):
        return None
    code = data[i + at]
    return code - 256 if code > 127 else code


def container(data: bytes, i: int) -> tuple[str, int, int] | None:
    """("map" | "array", item count, offset of the first item) if a container starts at i."""
    c = data[i]
    if 0x80 <= c <= 0x8F:
        return "map", c - 0x80, i + 1
    if 0x90 <= c <= 0x9F:
        return "array", c - 0x90, i + 1
    if c == 0xDC:
        return "array", _U16(data, i + 1)[0], i + 3
    if c == 0xDD:
        return "array", _U32(data, i + 1)[0], i + 5
    if c == 0xDE:
        return "map", _U16(data, i + 1)[0], i + 3
    if c == 0xDF:
        return "map", _U32(data, i + 1)[0], i + 5
    return None


def _key(data: bytes, i: int) -> tuple[str, int]:
    """A map key as text (non-string keys as their repr, format.md §2.2) and its end."""
    end = skip(data, i)
    c = data[i]
    if 0xA0 <= c <= 0xBF:
        return data[i + 1 : end].decode("utf-8", "replace"), end
    key = ormsgpack.unpackb(data[i:end], ext_hook=lambda code, _: f"ext {code}")
    return (key if isinstance(key, str) else repr(key)), end


def _msgpack_value(data: bytes, i: int) -> tuple[int, list[tuple[int, int]] | None]:
    """The end of the value at i and, when it is an array, each element's span."""
    shape = container(data, i)
    if shape is None or shape[0] != "array":
        return skip(data, i), None
    _, count, j = shape
    if count > LIST_ELEMENTS:
        return skip(data, i), None
    spans = []
    for _ in range(count):
        end = skip(data, j)
        spans.append((j, end))
        j = end
    return j, spans


def _msgpack_body(data: bytes) -> BodyLayout:
    shape = container(data, 0)
    if shape is None or shape[0] != "map":
        raise SpanError("a checkpoint body is a map")
    _, count, i = shape
    values: dict[str, ValueLayout] = {}
    versions: dict[Any, Any] = {}
    version: int | None = None
    for _ in range(count):
        key, i = _key(data, i)
        if key == "channel_values":
            inner = container(data, i)
            if inner is None or inner[0] != "map":
                i = skip(data, i)
                continue
            _, entries, i = inner
            for _ in range(entries):
                channel, i = _key(data, i)
                end, elements = _msgpack_value(data, i)
                values[channel] = (
                    _listed(end - i, data, elements)
                    if elements is not None
                    else ValueLayout(end - i, ext=ext_code(data, i))
                )
                i = end
        elif key in ("channel_versions", "v"):
            end = skip(data, i)
            found = ormsgpack.unpackb(
                data[i:end], ext_hook=lambda code, _: None, option=ormsgpack.OPT_NON_STR_KEYS
            )
            if key == "v":
                version = found if type(found) is int else None
            elif isinstance(found, dict):
                versions = found
            i = end
        else:
            i = skip(data, i)
    if i != len(data):
        raise SpanError("bytes after the checkpoint body")
    return BodyLayout(values, versions, version)


def _listed(size: int, data: bytes, spans: list[tuple[int, int]]) -> ValueLayout:
    return ValueLayout(
        size,
        [end - start for start, end in spans],
        [hash(data[start:end]) for start, end in spans],
    )


# -- JSON ---------------------------------------------------------------------------------

_DECODER: Final = json.JSONDecoder()
_WHITESPACE: Final = frozenset(" \t\n\r")


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _json_object(text: str, i: int) -> list[tuple[str, int, int, Any]]:
    """(key, start, end, value) of each member of the object at i (decoded in C)."""
    if not text.startswith("{", i):
        raise SpanError("not a JSON object")
    members: list[tuple[str, int, int, Any]] = []
    i = _skip_ws(text, i + 1)
    if text.startswith("}", i):
        return members
    while True:
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip_ws(text, i)
        if not text.startswith(":", i):
            raise SpanError("a JSON key without a value")
        start = _skip_ws(text, i + 1)
        value, end = _DECODER.raw_decode(text, start)
        members.append((key, start, end, value))
        i = _skip_ws(text, end)
        if text.startswith("}", i):
            return members
        if not text.startswith(",", i):
            raise SpanError("a JSON object without a comma between members")
        i = _skip_ws(text, i + 1)


def _json_array(text: str, i: int) -> tuple[list[tuple[int, int]] | None, int]:
    """Each element's span in the array at i (None past LIST_ELEMENTS), and its end."""
    spans: list[tuple[int, int]] | None = []
    i = _skip_ws(text, i + 1)
    if text.startswith("]", i):
        return spans, i + 1
    while True:
        _, end = _DECODER.raw_decode(text, i)
        if spans is not None:
            spans.append((i, end))
            if len(spans) > LIST_ELEMENTS:
                spans = None
        i = _skip_ws(text, end)
        if text.startswith("]", i):
            return spans, i + 1
        if not text.startswith(",", i):
            raise SpanError("a JSON array without a comma between elements")
        i = _skip_ws(text, i + 1)


def _json_body(data: bytes) -> BodyLayout:
    text = data.decode()
    ascii_only = text.isascii()

    def size(start: int, end: int) -> int:  # spans are in characters, sizes in bytes
        return end - start if ascii_only else len(text[start:end].encode())

    values: dict[str, ValueLayout] = {}
    versions: dict[Any, Any] = {}
    version: int | None = None
    for key, start, _, value in _json_object(text, _skip_ws(text, 0)):
        if key == "v" and type(value) is int:
            version = value
        if key == "channel_values" and isinstance(value, dict):
            for channel, begin, end, inner in _json_object(text, start):
                spans = _json_array(text, begin)[0] if isinstance(inner, list) else None
                if spans is not None:
                    values[channel] = ValueLayout(
                        size(begin, end),
                        [size(a, b) for a, b in spans],
                        [hash(text[a:b]) for a, b in spans],
                    )
                else:
                    values[channel] = ValueLayout(size(begin, end))
        elif key == "channel_versions" and isinstance(value, dict):
            versions = value
    return BodyLayout(values, versions, version)
