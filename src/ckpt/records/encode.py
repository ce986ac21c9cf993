"""Strict JSON for any value ckpt shows (docs/json.md, "Strict JSON"): one document, or
pieces streamed with flat memory."""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson
import ormsgpack

from ckpt.decoders.values import bytes_record, float_record
from ckpt.escapes import escape_json_text


def dumps(value: Any, *, indent: int | None = None, level: int = 0) -> str:
    """Strict JSON for any value (docs/json.md, "Strict JSON"): never NaN or Infinity
    (they become float records), bytes as bytes records, valid UTF-8 whatever the strings
    hold, and nothing a terminal would act on: non-ASCII text is kept, but controls, bidi
    and invisible characters and lone surrogates are written as \\u escapes
    (ckpt.escapes). Any depth: the writer keeps its own stack.

    `level` (with `indent`) writes the text as if nested that many levels deep: every
    line but the first starts with `level * indent` more spaces, as an array of records
    lays out its items."""
    if indent is None:
        try:  # json's C encoder, when the value is plain JSON and not nested too deep
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (ValueError, TypeError, RecursionError):
            text = "".join(_pieces(value, None, ""))
        return escape_json_text(text)
    return "".join(dump_pieces(value, indent=indent, level=level))


def dumps_line(value: Any) -> str:
    """`dumps(value)` in the tight layout of an NDJSON line (`,` and `:` with no space
    after, as `jq -c` writes). orjson writes it, several times as fast as json, when
    `_plain_json` finds nothing in it that strict JSON writes as a record or that orjson
    writes otherwise than json (a NaN: orjson writes null)."""
    if _plain_json(value):
        try:
            text = orjson.dumps(value).decode()
        except orjson.JSONEncodeError:  # nested too deep for it
            pass
        else:
            return escape_json_text(text)
    try:  # json's C encoder, when the value is plain JSON and not nested too deep
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        text = "".join(_pieces(value, None, "", tight=True))
    return escape_json_text(text)


def ndjson_line(value: Any, *, decoded: bool = False) -> bytes:
    """`dumps_line(value)` and its newline, as UTF-8 bytes: one line of `dump --ndjson`.

    `decoded=True` says the value holds only what ckpt's decoders return (`decode`, and
    what stores build from it) and ckpt's own str, int, bool and None fields, and that it
    is small (reader.SMALL_RECORD stored bytes). Decoders return JSON-ready values with
    every NaN and infinity already a float record (docs/json.md, "Decoded values"; the
    fuzz tests of tests/test_decode_hostile.py hold them to `json.dumps(allow_nan=False)`),
    so orjson writes such a value as json would, or refuses it (bytes, an int past 64
    bits, a non-str key, a lone surrogate, deep nesting), and the look `_plain_json` takes
    at each record is not needed."""
    if decoded:
        try:
            data = orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            pass
        else:
            if data.isascii():  # escape_json_text, on bytes: most lines of most stores
                return data if 0x7F not in data else data.replace(b"\x7f", b"\\u007f")
            return escape_json_text(data.decode()).encode()
    return (dumps_line(value) + "\n").encode()


# ormsgpack refuses what orjson would write otherwise than json (or not at all): these
# types, subclasses, non-str keys, ints beyond 64 bits, lone surrogates, deep nesting.
_REFUSE: Final = (
    ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_UUID
)
# A float 64 with an all-ones exponent: NaN or an infinity (or these bytes inside a
# string, read as one: then json writes it, no harm done).
_NON_FINITE: Final = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")


# Past this many bytes of msgpack, json writes it: orjson's buffer grows by doubling, and
# it crashes the process where an allocation fails (a run under a memory limit).
_ORJSON_PACKED: Final = 1 << 20


def _plain_json(value: Any) -> bool:
    """Whether orjson writes `value` as json would, but for the layout of float digits:
    dicts with str keys, lists and tuples, strings, 64-bit ints, finite floats, bools and
    None (orjson itself refuses bytes), and small enough (_ORJSON_PACKED). ormsgpack packs
    it in a fraction of a Python walk's time, every Python float as a float 64, whose
    bytes tell the non-finite ones."""
    try:
        packed = ormsgpack.packb(value, option=_REFUSE)
    except TypeError:  # MsgpackEncodeError: a type, key or number of the list above
        return False
    return len(packed) <= _ORJSON_PACKED and not _non_finite(packed)


def _non_finite(packed: bytes) -> bool:
    """`_NON_FINITE.search(packed) is not None`, faster where the second byte is rare (most
    records: text, where neither 0x7f nor 0xff occurs): each occurrence is found by memchr
    and its neighbours looked at; past _MANY occurrences the regex decides."""
    for byte in (0x7F, 0xFF):
        at = packed.find(byte, 1)
        for _ in range(_MANY):
            if at < 0:
                break
            if packed[at - 1] == 0xCB and packed[at + 1 : at + 2] >= b"\xf0":
                return True
            at = packed.find(byte, at + 1)
        else:
            return _NON_FINITE.search(packed) is not None
    return False


_MANY: Final = 32


def dump_pieces(value: Any, *, indent: int = 2, level: int = 0) -> Iterator[str]:
    """`dumps(value, indent=indent, level=level)` a piece at a time: a document is never
    held whole as text (a pending write of 8 million nils is 100 MB of indented JSON;
    `ckpt types` on a store with a 10 MB thread id names it in every example)."""
    if indent == 2 and _orjson_writes_as_json(value):
        # orjson's indented layout is json's, character for character, for these values;
        # it writes a thread's record in ~2 us, where json's pure-Python indenting encoder
        # takes ~14 (`ckpt threads --json` on 100,000 threads).
        try:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:  # a lone surrogate, or nested too deep for it
            pass
        else:
            yield escape_json_text(text.replace("\n", "\n" + "  " * level) if level else text)
            return
    for piece in _pieces(value, "\n" + " " * (indent * level), " " * indent):
        yield escape_json_text(piece)


_ORJSON_SCALARS: Final = frozenset({str, bool, type(None)})
_ORJSON_NODES: Final = 4096  # values in a record written as one text ...
_ORJSON_CHARS: Final = 1 << 20  # ... and characters of its keys and strings


def _orjson_writes_as_json(value: Any) -> bool:
    """Whether orjson writes `value` as json would (dicts with str keys, lists, strings,
    64-bit ints, bools, None: no float, which it writes with other exponents, nor any
    type json would refuse) and it is small enough to hold as one text (a larger one is
    written a piece at a time)."""
    stack = [value]
    nodes = chars = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        nodes += 1
        if nodes > _ORJSON_NODES:
            return False
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
                chars += len(key)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is str:
            chars += len(item)
        elif kind is int:
            if not -(2**63) <= item < 2**64:
                return False
        elif kind not in _ORJSON_SCALARS:
            return False
        if chars > _ORJSON_CHARS:
            return False
    return True


def dump_document(value: Any, *, indent: int = 2) -> Iterator[str]:
    """The indented document and its final newline, a piece at a time (every
    `--json` view of one record)."""
    yield from dump_pieces(value, indent=indent)
    yield "\n"


def dumps_head(value: Any, limit: int) -> tuple[str, int]:
    """The first `limit` characters of `dumps(value)` and the length of the whole text,
    without holding the whole text (a one-line preview of a value of any size)."""
    head: list[str] = []
    kept = length = 0
    for piece in _pieces(value, None, ""):
        piece = escape_json_text(piece)
        length += len(piece)
        if kept < limit:
            head.append(piece[: limit - kept])
            kept += len(head[-1])
    return "".join(head), length


def dumps_within(value: Any, limit: int) -> str | None:
    """`dumps(value)` when it is at most `limit` characters long, else None, found without
    writing more than `limit` characters of it (a --full view of a 16 MB value)."""
    kept: list[str] = []
    length = 0
    for piece in _pieces(value, None, ""):
        piece = escape_json_text(piece)
        length += len(piece)
        if length > limit:
            return None
        kept.append(piece)
    return "".join(kept)


_encode_string = json.encoder.encode_basestring  # ensure_ascii=False: json's C escaper
_float_text = float.__repr__
_int_text = int.__repr__


def _pieces(value: Any, newline: str | None, step: str, *, tight: bool = False) -> Iterator[str]:
    """The JSON text of `value` before escaping, about FLUSH pieces at a time: the text
    `json.dumps(strict(value), ensure_ascii=False, allow_nan=False, indent=len(step))`
    gives, where strict(value) is the value as JSON can hold it (non-finite floats and
    bytes as their records, tuples as lists, keys as their JSON text, anything else as
    its str()); `newline=None` is json.dumps' compact layout (`tight`: with no space
    after `,` and `:`). Iterative, so any depth."""
    out: list[str] = []
    # One frame per open container: [items, is_dict, lead], `lead` being what goes before
    # the next item (the opening bracket and first indent, then the separator); the
    # separators and closing text of each depth are made once (`layouts`).
    frames: list[list[Any]] = []
    layouts: list[tuple[str, str, str, str, str]] = []
    text_of = _TEXT.get
    colon = ":" if tight else ": "
    item: Any = value
    while True:
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            container = item
        else:
            container = None
            to_text = text_of(kind)
            if to_text is not None and (kind is not float or item - item == 0.0):
                out.append(to_text(item))
            else:
                strict = _strict(item)
                if isinstance(strict, str):
                    out.append(strict)
                else:
                    container = strict
        if container is not None:
            if not container:
                out.append("{}" if isinstance(container, dict) else "[]")
            else:
                depth = len(frames)
                while len(layouts) <= depth:
                    layouts.append(_layout(newline, step, len(layouts), tight))
                if isinstance(container, dict):
                    frames.append([iter(container.items()), True, layouts[depth][2]])
                else:
                    frames.append([iter(container), False, layouts[depth][1]])
        # Go on with the innermost open container until one of its items is a container.
        item = _DONE
        while frames:
            frame = frames[-1]
            items, lead = frame[0], frame[2]
            sep = layouts[len(frames) - 1][0]
            if frame[1]:
                for key, child in items:
                    if type(key) is not str:
                        key = key if isinstance(key, str) else _key_text(key)
                    kind = type(child)
                    to_text = text_of(kind)
                    if to_text is not None and (kind is not float or child - child == 0.0):
                        out.append(lead + _encode_string(key) + colon + to_text(child))
                        lead = sep
                        continue
                    out.append(lead + _encode_string(key) + colon)
                    item = child
                    lead = sep
                    break
            else:
                # Runs of scalars are joined RUN at a time: a list of 8 million nils is a
                # few thousand pieces, not 8 million strings of their own.
                run: list[str] = []
                for child in items:
                    kind = type(child)
                    to_text = text_of(kind)
                    if to_text is not None and (kind is not float or child - child == 0.0):
                        run.append(to_text(child))
                        if len(run) < RUN:
                            continue
                        out.append(lead + sep.join(run))
                        lead = sep
                        run = []
                        if len(out) >= FLUSH:
                            yield "".join(out)
                            out = []
                        continue
                    if run:
                        out.append(lead + sep.join(run))
                        lead = sep
                        run = []
                    out.append(lead)
                    item = child
                    lead = sep
                    break
                if run:
                    out.append(lead + sep.join(run))
                    lead = sep
            if item is not _DONE:
                frame[2] = lead
                break
            out.append(layouts[len(frames) - 1][4 if frame[1] else 3])
            frames.pop()
        if len(out) >= FLUSH:
            yield "".join(out)
            out = []
        if item is _DONE:
            break
    if out:
        yield "".join(out)


def _layout(
    newline: str | None, step: str, depth: int, tight: bool = False
) -> tuple[str, str, str, str, str]:
    """The separator, the two openings and the two closings of a container `depth` deep."""
    if newline is None:
        return "," if tight else ", ", "[", "{", "]", "}"
    outer = newline + step * depth
    inner = outer + step
    return "," + inner, "[" + inner, "{" + inner, outer + "]", outer + "}"


def _null(_: None) -> str:
    return "null"


# The JSON text of the exact scalar types (a float only when finite: checked first).
_TEXT: Final[dict[type, Callable[[Any], str]]] = {
    str: _encode_string,
    int: _int_text,
    bool: {True: "true", False: "false"}.__getitem__,
    type(None): _null,
    float: _float_text,
}
_DONE: Final = object()
RUN: Final = 4096  # scalars joined into one piece
FLUSH: Final = 256  # pieces joined and handed on at once


def _strict(value: Any) -> Any:
    """What `_pieces` writes for a value not of an exact scalar type: a container (dict,
    list or tuple, subclasses too) as it is, a record for NaN, the infinities and bytes,
    and the text of anything else: json's own checks, in json's order."""
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, int):  # bool is never here: True and False are scalars
        return _int_text(value)
    if isinstance(value, float):
        return _float_text(value) if math.isfinite(value) else float_record(value)
    if isinstance(value, list | tuple | dict):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_record(value)
    return _encode_string(str(value))


def _key_text(key: Any) -> str:
    """A dict key that is not a str, as the JSON text json gives it (str() for the keys
    json refuses: NaN, the infinities, tuples ...)."""
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return _int_text(key)
    if isinstance(key, float) and math.isfinite(key):
        return _float_text(key)
    return str(key)


def as_json(value: Any) -> Any:
    """The value as it reads back from ckpt's JSON output, `json.loads(dumps(value))`,
    without writing the text: the parts that already are plain JSON are the value's own
    objects, not copies (a pending write of 8 million nils is compared where it lies)."""
    try:
        return _as_json(value)
    except RecursionError:
        return json.loads(dumps(value))


def _as_json(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is int:
        return value
    if kind is float:
        return value if value - value == 0.0 else float_record(value)
    if isinstance(value, list | tuple):
        if kind is list and _PLAIN_ITEMS.issuperset(map(type, value)):
            return value
        copy = [_as_json(item) for item in value]
        if kind is list and all(map(operator.is_, copy, value)):
            return value
        return copy
    if isinstance(value, dict):
        plain = kind is dict
        converted: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                plain = False
                key = str(key) if isinstance(key, str) else _key_text(key)
            new = _as_json(item)
            plain = plain and new is item
            converted[key] = new
        return value if plain else converted
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _as_json(float(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes_record(value)
    return str(value)


# No float: a float may be NaN or infinite.
_PLAIN_ITEMS: Final = frozenset({str, int, bool, type(None)})
