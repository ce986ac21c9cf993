"""The `msgpack` tag: ormsgpack with a safe ext hook, bounded nesting, and a walk only when needed.

Speed (bench/decode.py): ormsgpack builds the containers in Rust; our ext hook turns each
ext payload (FORMAT 2.3) into a plain dict or string. The Python walk that makes raw data
JSON-ready (values.make_json_ready) runs on one level's data only when its bytes can hold
something to fix: a bin header, a float with an all-ones exponent, a reserved key name,
or a non-string map key (found by a first unpack without OPT_NON_STR_KEYS, which rejects
them, FORMAT 2.2; the second read replays the ext values of the first). Values the hook
built are registered in `done` and never walked again.

Safety: nothing named in the data is imported or called (ckpt.decoders.ext). Depth is
bounded on two fronts, because each nested ext payload is unpacked by a recursive
`unpackb` call inside the hook and ormsgpack's own limit (1024 levels) applies per call:
ext nesting is capped at MAX_EXT_NESTING, and the nesting of all active calls together at
STACK_BUDGET. Without the second cap, 50 ext levels each 1,000 arrays deep crash the
interpreter with a segfault (stack overflow), and so does LangGraph's own loads_typed.
"""

from __future__ import annotations

import re
from collections import deque
from datetime import timedelta
from typing import Any, Final

import ormsgpack

from ckpt.decoders.ext import (
    CONVERSION_ERRORS,
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_DELTA_SNAPSHOT,
    EXT_NUMPY_ARRAY,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    KNOWN_EXT_CODES,
    RESERVED_TYPE_PATHS,
    ShapeError,
    interpret,
    kw_args,
    time_text,
)
from ckpt.decoders.ndarray import decode_ndarray
from ckpt.decoders.values import MARK_KEY, TYPE_KEY, ext_record, make_json_ready
from ckpt.errors import DecodeError

MAX_EXT_NESTING: Final = 100
# Nesting levels (arrays, maps, ext payloads) of all active unpackb calls together. A level
# costs ormsgpack about 530 bytes of C stack; 6144 levels stay near 3.3 MB, well inside the
# 8 MB a main or worker thread gets on Linux.
STACK_BUDGET: Final = 6144
# An unpackb call may nest up to ORMSGPACK_MAX_DEPTH levels, so each big ext payload is
# counted as that many until this much of the budget is spent; past it, the payload's real
# depth is measured (max_depth), so that big values nested deep are not refused.
ESTIMATE_LIMIT: Final = STACK_BUDGET // 2
ORMSGPACK_MAX_DEPTH: Final = 1024  # "Recursion limit reached" past this, per unpackb call
SKIPPED_IN_SHALLOW: Final = frozenset({4, 5, 6})  # messages/pydantic and numpy: the bulk


_RESERVED_KEY: Final = re.compile(rb"__(?:type|ckpt)__")


def may_need_walk(data: bytes) -> bool:
    """False when the raw bytes cannot hold bin, NaN/inf or a reserved key: no walk needed.

    A header byte may also occur inside other data, so each test only rules things out.
    Tuned for speed, since it runs once per message: `int in bytes` is a bare memchr (a
    bytes needle costs twice as much), and for short data a regex with a literal prefix
    beats two substring searches.
    """
    if 0xC4 in data or 0xC5 in data or 0xC6 in data:  # bin 8 / 16 / 32 headers
        return True
    if (0xCB in data or 0xCA in data) and (  # float 64 / 32 with an all-ones exponent
        data.find(b"\xcb\x7f") >= 0
        or data.find(b"\xcb\xff") >= 0
        or data.find(b"\xca\x7f") >= 0
        or data.find(b"\xca\xff") >= 0
    ):
        return True
    if len(data) < 65_536:
        return _RESERVED_KEY.search(data) is not None
    return data.find(b"__type__") >= 0 or data.find(b"__ckpt__") >= 0


class _Raw:
    """An ext value left packed, for the one place that needs the raw layout (time's tzinfo)."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data


def _raw_hook(code: int, data: bytes) -> _Raw:
    return _Raw(code, data)


def _unpack_raw(data: bytes) -> Any:
    return ormsgpack.unpackb(data, ext_hook=_raw_hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _raw_header(raw: Any, code: int, module: str, name: str) -> list[Any]:
    if not isinstance(raw, _Raw) or raw.code != code:
        raise TypeError("unexpected tzinfo")
    payload = _unpack_raw(raw.data)
    if type(payload) is not list or len(payload) != 3 or payload[:2] != [module, name]:
        raise TypeError("unexpected tzinfo")
    return payload


def _time_tzinfo(raw: Any) -> tuple[str, Any]:
    """A time's tzinfo, still packed: ext 1 datetime.timezone([ext 1 timedelta, name?]) or
    ext 0 zoneinfo.ZoneInfo(key) (FORMAT 2.4 rows 15-17)."""
    if isinstance(raw, _Raw) and raw.code == 0:
        return ("zone", _raw_header(raw, 0, "zoneinfo", "ZoneInfo")[2])
    args = _raw_header(raw, 1, "datetime", "timezone")[2]
    if type(args) is not list or len(args) not in (1, 2):
        raise TypeError("unexpected timezone arguments")
    days, seconds, microseconds = _raw_header(args[0], 1, "datetime", "timedelta")[2]
    return ("offset", timedelta(days, seconds, microseconds))


class MsgpackDecoder:
    """One decode of one msgpack payload (holds the per-call depth and bookkeeping state)."""

    __slots__ = (
        "shallow",
        "done",
        "level",
        "used",
        "verified",
        "clean",
        "walking",
        "record",
        "replay",
        "failure",
    )

    def __init__(self, *, shallow: bool = False) -> None:
        self.shallow = shallow
        # id -> value for every container the hook returned while the enclosing payload is
        # to be walked: already JSON-ready, so the walk skips it. Holding the value keeps its
        # id from being reused while this decode runs.
        self.done: dict[int, object] = {}
        self.level = 0  # ext payloads being unpacked right now
        self.used = 0  # nesting levels the active unpackb calls may be using
        self.verified = False  # the current subtree is known to fit STACK_BUDGET
        self.clean = False  # an enclosing payload's bytes hold nothing may_need_walk looks for
        self.walking = False  # the payload being unpacked will be walked afterwards
        # The ext values of the payload being unpacked, in order, kept for a second read.
        self.record: list[tuple[int, bytes, Any]] | None = None
        self.replay: deque[tuple[int, bytes, Any]] | None = None
        self.failure: BaseException | None = None  # what made the hook abort everything

    def decode(self, payload: bytes) -> Any:
        # A document of n bytes nests at most n levels deep (each level needs a header byte).
        self.used = min(len(payload), ORMSGPACK_MAX_DEPTH)
        self.verified = len(payload) <= STACK_BUDGET
        return self._unpack(payload)

    def _unpack(self, data: bytes, *, walk: bool = True) -> Any:
        # Nested payloads are parts of this one: if it is clean, so are they.
        clean = self.clean
        scan = walk and not clean and may_need_walk(data)
        saved = (self.walking, self.record, self.replay)
        recorded: list[tuple[int, bytes, Any]] = []
        self.walking, self.record, self.replay = scan, recorded, None
        self.clean = clean or (walk and not scan)
        try:
            try:
                value = ormsgpack.unpackb(data, ext_hook=self._hook)
            except ValueError:
                self._reraise_failure()
                # Most likely a non-string map key: read again accepting them (FORMAT 2.2).
                # The ext values decoded before the failure are replayed, not decoded again:
                # redoing them at every level would take exponential time on nested data.
                self.walking = scan = walk
                self.record, self.replay = None, deque(recorded)
                try:
                    value = ormsgpack.unpackb(
                        data, ext_hook=self._hook, option=ormsgpack.OPT_NON_STR_KEYS
                    )
                except ValueError as exc:
                    self._reraise_failure()
                    raise DecodeError(f"invalid msgpack: {exc}") from None
        finally:
            self.clean = clean
            self.walking, self.record, self.replay = saved
        if scan:
            value = make_json_ready(value, self.done)
        return value

    def _reraise_failure(self) -> None:
        # ormsgpack replaces whatever the hook raised by ValueError("ext_hook failed").
        if self.failure is not None:
            raise self.failure

    def _abort(self, error: DecodeError) -> DecodeError:
        self.failure = error
        return error

    def _hook(self, code: int, data: bytes) -> Any:
        """ormsgpack's ext_hook: one ext value (FORMAT 2.3) -> a JSON-ready value."""
        try:
            replay = self.replay
            if replay and replay[0][0] == code and replay[0][1] == data:
                value = replay.popleft()[2]
            else:
                if replay:
                    replay.clear()  # out of step (cannot happen): decode afresh from here on
                value = self._ext(code, data)
                if self.record is not None:
                    self.record.append((code, data, value))
            if self.walking and (type(value) is dict or type(value) is list):
                self.done[id(value)] = value
            return value
        except BaseException as exc:
            # Remember it: ormsgpack would turn it into a bare "ext_hook failed".
            if self.failure is None:
                self.failure = exc
            raise

    def _ext(self, code: int, data: bytes) -> Any:
        if self.shallow and code in SKIPPED_IN_SHALLOW:
            return {MARK_KEY: "skipped", "ext": code, "size": len(data)}
        if code not in KNOWN_EXT_CODES:
            return ext_record(code, data, f"unknown ext code {code}")
        if self.level >= MAX_EXT_NESTING:
            raise self._abort(DecodeError(f"ext values nested more than {MAX_EXT_NESTING} deep"))
        # The common case, inline since it runs once per message: the subtree is known to
        # fit the budget, or is small enough to (n bytes nest at most n deep).
        verified = self.verified
        if not verified and self.used + len(data) > STACK_BUDGET:
            return self._budgeted(code, data)
        self.verified = True
        self.level += 1
        try:
            if code == EXT_PYDANTIC_V2 or code == EXT_PYDANTIC_V1:
                return self._model(data)
            return self._interpret(code, data)
        except (DecodeError, ShapeError) as exc:
            if self.failure is not None:
                raise
            return ext_record(code, data, str(exc))
        finally:
            self.level -= 1
            self.verified = verified

    def _model(self, data: bytes) -> Any:
        """ext 4 / 5, every message: [module, name, {fields}(, "model_validate_json")]."""
        payload = self._unpack(data)
        if type(payload) is list and 3 <= len(payload) <= 4:
            module, name, fields = payload[0], payload[1], payload[2]
            if (
                type(module) is str
                and type(name) is str
                and type(fields) is dict
                and module
                and TYPE_KEY not in fields
                and MARK_KEY not in fields
            ):
                path = f"{module}.{name}"
                if path not in RESERVED_TYPE_PATHS:
                    return {TYPE_KEY: path, **fields}
        return interpret(EXT_PYDANTIC_V2, payload)  # the same rules, with their errors

    def _budgeted(self, code: int, data: bytes) -> Any:
        """_ext for a payload that might not fit STACK_BUDGET (see the module docstring)."""
        cost = min(len(data), ORMSGPACK_MAX_DEPTH)
        if self.used + cost > ESTIMATE_LIMIT:
            try:
                depth = max_depth(data)
            except ValueError as exc:
                return ext_record(code, data, f"invalid msgpack: {exc}")
            if self.used + depth > STACK_BUDGET:
                raise self._abort(DecodeError("values nested too deep"))
            cost = 0
            self.verified = True
        self.used += cost
        self.level += 1
        try:
            return self._interpret(code, data)
        except (DecodeError, ShapeError) as exc:
            if self.failure is not None:
                raise
            return ext_record(code, data, str(exc))
        finally:
            self.level -= 1
            self.used -= cost
            self.verified = False

    def _interpret(self, code: int, data: bytes) -> Any:
        if code == EXT_DELTA_SNAPSHOT:
            # Not an array: the payload is the snapshot value itself (FORMAT 2.3, 3.8).
            return {MARK_KEY: "delta_snapshot", "value": self._unpack(data)}
        if code == EXT_NUMPY_ARRAY:
            return decode_ndarray(self._unpack(data, walk=False))
        if code == EXT_PYDANTIC_V2 or code == EXT_PYDANTIC_V1:
            return self._model(data)
        payload = self._unpack(data)
        if code == EXT_CONSTRUCTOR_KW_ARGS and _is_time(payload):
            return self._time(payload, data)
        return interpret(code, payload)

    def _time(self, payload: list[Any], data: bytes) -> Any:
        """datetime.time: ext 2 with {hour, minute, second, microsecond, tzinfo, fold}."""
        fields = payload[2]
        if not fields.keys() <= _TIME_FIELDS:
            return kw_args("datetime", "time", fields)
        try:
            tzinfo = fields["tzinfo"]
            tz = None if tzinfo is None else _time_tzinfo(_unpack_raw(data)[2]["tzinfo"])
            return time_text(
                fields["hour"], fields["minute"], fields["second"], fields["microsecond"], tz
            )
        except CONVERSION_ERRORS:
            return kw_args("datetime", "time", fields)


_TIME_FIELDS: Final = frozenset({"hour", "minute", "second", "microsecond", "tzinfo", "fold"})


def _is_time(payload: Any) -> bool:
    return (
        type(payload) is list
        and len(payload) == 3
        and payload[0] == "datetime"
        and payload[1] == "time"
        and type(payload[2]) is dict
    )


def decode_msgpack(payload: bytes, *, shallow: bool = False) -> Any:
    """Decode one `msgpack`-tagged payload to JSON-ready values; raises DecodeError."""
    return MsgpackDecoder(shallow=shallow).decode(payload)


# -- nesting depth without building values ---------------------------------------------------

# Bytes to skip after a header byte, for the fixed-size scalars.
_FIXED: Final[dict[int, int]] = {
    0xC0: 0, 0xC2: 0, 0xC3: 0,
    0xCA: 4, 0xCB: 8,
    0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,
    0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8,
}  # fmt: skip
_LENGTH_PREFIXED: Final[dict[int, int]] = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}
_FIXEXT: Final[dict[int, int]] = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_EXT: Final[dict[int, int]] = {0xC7: 1, 0xC8: 2, 0xC9: 4}
_COLLECTION: Final[dict[int, tuple[int, int]]] = {
    0xDC: (2, 1),
    0xDD: (4, 1),
    0xDE: (2, 2),
    0xDF: (4, 2),
}  # header -> (length bytes, items per entry)


def max_depth(data: bytes) -> int:
    """The deepest nesting of arrays, maps and (known-code) ext payloads in one document.

    Linear and iterative; used only when a deep ext payload might not fit STACK_BUDGET.
    Raises ValueError on malformed data.
    """
    pos = 0
    best = 0
    # One frame per open container: [items left, end offset of an ext payload or -1].
    frames: list[list[int]] = [[1, -1]]
    limits = [len(data)]
    while True:
        while frames and frames[-1][0] == 0:
            _, end = frames.pop()
            if end >= 0:
                pos = end  # ormsgpack ignores bytes after the document in an ext payload
                limits.pop()
        if not frames:
            return best
        frames[-1][0] -= 1
        limit = limits[-1]
        if pos >= limit:
            raise ValueError("truncated")
        head = data[pos]
        pos += 1
        if head <= 0x7F or head >= 0xE0:
            continue
        if head <= 0x8F:
            frames.append([2 * (head & 0x0F), -1])
        elif head <= 0x9F:
            frames.append([head & 0x0F, -1])
        elif head <= 0xBF:
            pos += head & 0x1F
        elif head in _FIXED:
            pos += _FIXED[head]
        elif head in _LENGTH_PREFIXED:
            width = _LENGTH_PREFIXED[head]
            pos += width + int.from_bytes(data[pos : pos + width], "big")
        elif head in _COLLECTION:
            width, per_entry = _COLLECTION[head]
            count = int.from_bytes(data[pos : pos + width], "big")
            pos += width
            frames.append([count * per_entry, -1])
        elif head in _FIXEXT or head in _EXT:
            if head in _FIXEXT:
                size = _FIXEXT[head]
            else:
                width = _EXT[head]
                size = int.from_bytes(data[pos : pos + width], "big")
                pos += width
            if pos >= limit:
                raise ValueError("truncated")
            code = int.from_bytes(data[pos : pos + 1], "big", signed=True)
            pos += 1
            if pos + size > limit:
                raise ValueError("truncated")
            if code in KNOWN_EXT_CODES:
                frames.append([1, pos + size])
                limits.append(pos + size)
            else:
                pos += size
        else:
            raise ValueError(f"invalid header byte 0x{head:02x}")
        if pos > limit:
            raise ValueError("truncated")
        best = max(best, len(frames) - 1)
