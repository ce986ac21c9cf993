"""The `msgpack` tag: ormsgpack with a safe ext hook, bounded nesting, and a walk only when needed.

Speed (bench/decode.py): ormsgpack builds the containers in Rust; our ext hook turns each
ext payload (format.md §2.3) into a plain dict or string. The Python walk that makes raw data
JSON-ready (values.make_json_ready) runs on one level's data only when its bytes can hold
something to fix: a bin header, a float with an all-ones exponent, a reserved key name,
or a non-string map key (found by a first unpack without OPT_NON_STR_KEYS, which rejects
them, format.md §2.2; the second read replays the ext values of the first). Values the hook
built are registered in `done` and never walked again.

Safety: nothing named in the data is imported or called (ckpt.decoders.ext). Depth is
bounded on two fronts, because each nested ext payload is unpacked by a recursive
`unpackb` call inside the hook and ormsgpack's own limit (1024 levels) applies per call:
ext nesting is capped at MAX_EXT_NESTING, and the nesting of all active calls together at
STACK_BUDGET (both set in ckpt.decoders.depth). Without the second cap, 50 ext levels each
1,000 arrays deep crash the interpreter with a segfault (stack overflow), and so does
LangGraph's own loads_typed.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any, Final

import ormsgpack

from ckpt.decoders.depth import (
    ESTIMATE_LIMIT,
    MAX_EXT_NESTING,
    ORMSGPACK_MAX_DEPTH,
    STACK_BUDGET,
    max_depth,
)
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
)
from ckpt.decoders.memo import Memo, here
from ckpt.decoders.ndarray import decode_ndarray
from ckpt.decoders.times import is_time, packed_time_text
from ckpt.decoders.values import MARK_KEY, TYPE_KEY, ext_record, make_json_ready
from ckpt.errors import DecodeError, TooLarge

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
    if 0x7F in data and _float_all_ones(data, 0x7F):
        return True
    if 0xFF in data and _float_all_ones(data, 0xFF):
        return True
    if len(data) < 65_536:
        return _RESERVED_KEY.search(data) is not None
    return data.find(b"__type__") >= 0 or data.find(b"__ckpt__") >= 0


def _float_all_ones(data: bytes, byte: int) -> bool:
    """Whether a float 64 / 32 header (0xcb / 0xca) comes before `byte` (0x7f or 0xff:
    the first byte of a NaN or an infinity) somewhere in `data`. Each occurrence of the
    rare byte is found by memchr; a 2-byte needle search would crawl over the many 0xcb
    of data full of floats. Past _MANY occurrences, it says yes (then the walk decides)."""
    at = data.find(byte)
    for _ in range(_MANY):
        if at < 0:
            return False
        if at and (data[at - 1] == 0xCB or data[at - 1] == 0xCA):
            return True
        at = data.find(byte, at + 1)
    return at >= 0


_MANY: Final = 64


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
        "exts_left",
        "shared",
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
        self.exts_left = 0  # ext values this decode may still build (set by decode)
        self.shared = here.exts  # the memo of `shared_exts`, read once per decode

    def decode(self, payload: bytes) -> Any:
        # A document of n bytes nests at most n levels deep (each level needs a header byte).
        self.used = min(len(payload), ORMSGPACK_MAX_DEPTH)
        self.verified = len(payload) <= STACK_BUDGET
        self.exts_left = ext_budget(len(payload))
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
                # Most likely a non-string map key: read again accepting them (format.md §2.2).
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
        """ormsgpack's ext_hook: one ext value (format.md §2.3) -> a JSON-ready value."""
        try:
            replay = self.replay
            if replay and replay[0][0] == code and replay[0][1] == data:
                value = replay.popleft()[2]
            else:
                if replay:
                    replay.clear()  # out of step (cannot happen): decode afresh from here on
                self.exts_left -= 1
                if self.exts_left < 0:
                    raise self._abort(TooLarge(TOO_MANY_EXTS))
                shared = self.shared
                if shared is not None and self.level == 0:
                    hit = shared.values.get(data)
                    if (
                        hit is not None
                        and hit[0] == code
                        and hit[1] is self.shallow
                        and (self.verified or self.used + len(data) <= STACK_BUDGET)
                    ):
                        # _shared_ext's hit, inline: a message met again (most of a dump's)
                        self.exts_left -= hit[3]
                        if self.exts_left < 0:
                            raise self._abort(TooLarge(TOO_MANY_EXTS))
                        value = hit[2]
                    else:
                        value = self._shared_ext(shared, code, data)
                else:
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

    def _shared_ext(self, shared: Memo, code: int, data: bytes) -> Any:
        """_ext through the shared memo (`shared_exts`): an outermost ext value whose whole
        subtree fits the stack budget depends on its code and bytes alone, so a message
        met again in the next checkpoint of a growing chat is not decoded again. The ext
        values it spent count against this payload's budget as if it had been."""
        if not self.verified and self.used + len(data) > STACK_BUDGET:
            return self._ext(code, data)
        hit = shared.values.get(data)
        if hit is not None and hit[0] == code and hit[1] is self.shallow:
            self.exts_left -= hit[3]
            if self.exts_left < 0:
                raise self._abort(TooLarge(TOO_MANY_EXTS))
            return hit[2]
        left = self.exts_left
        value = self._ext(code, data)
        if self.failure is None:
            shared.keep(data, (code, self.shallow, value, left - self.exts_left))
        return value

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
        try:
            return self._nested(code, data)
        finally:
            self.verified = verified

    def _nested(self, code: int, data: bytes) -> Any:
        """One ext payload read, a level deeper: what does not decode comes back as an
        ext record keeping its bytes, unless the whole message already failed."""
        self.level += 1
        try:
            return self._interpret(code, data)
        except (DecodeError, ShapeError) as exc:
            if self.failure is not None:
                raise
            return ext_record(code, data, str(exc))
        finally:
            self.level -= 1

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
        try:
            return self._nested(code, data)
        finally:
            self.used -= cost
            self.verified = False

    def _interpret(self, code: int, data: bytes) -> Any:
        if code == EXT_DELTA_SNAPSHOT:
            # Not an array: the payload is the snapshot value itself (format.md §2.3, 3.8).
            return {MARK_KEY: "delta_snapshot", "value": self._unpack(data)}
        if code == EXT_NUMPY_ARRAY:
            return decode_ndarray(self._unpack(data, walk=False))
        if code == EXT_PYDANTIC_V2 or code == EXT_PYDANTIC_V1:
            return self._model(data)
        payload = self._unpack(data)
        if code == EXT_CONSTRUCTOR_KW_ARGS and is_time(payload):
            return self._time(payload, data)
        return interpret(code, payload)

    def _time(self, payload: list[Any], data: bytes) -> Any:
        """datetime.time (ckpt.decoders.times), else the generic kw_args object."""
        try:
            return packed_time_text(payload[2], data)
        except CONVERSION_ERRORS:
            return kw_args("datetime", "time", payload[2])


def ext_budget(size: int) -> int:
    """How many ext values a payload of `size` bytes may decode into: each becomes a dict
    of a few hundred bytes, so a payload of tiny ext values (3 bytes each) would expand
    a hundredfold. Real values spend far more than EXT_BYTES per ext (a message is
    over 100 bytes); past the budget the value is marked too large (docs/security.md)."""
    return MIN_EXTS + size // EXT_BYTES


MIN_EXTS: Final = 10_000
TOO_MANY_EXTS: Final = "too large to decode: more ext values than its size allows"
EXT_BYTES: Final = 64


def decode_msgpack(payload: bytes, *, shallow: bool = False) -> Any:
    """Decode one `msgpack`-tagged payload to JSON-ready values; raises DecodeError."""
    return MsgpackDecoder(shallow=shallow).decode(payload)


# The length of a scalar msgpack value from its first byte (format.md §2.2): fixed sizes,
# and (header bytes, length bytes) for str, bin and ext with a length field.
_FIXED_SIZES: Final = {
    0xC0: 1, 0xC2: 1, 0xC3: 1, 0xCC: 2, 0xD0: 2, 0xCD: 3, 0xD1: 3, 0xCA: 5, 0xCE: 5,
    0xD2: 5, 0xCB: 9, 0xCF: 9, 0xD3: 9, 0xD4: 3, 0xD5: 4, 0xD6: 6, 0xD7: 10, 0xD8: 18,
}  # fmt: skip
_SIZED: Final = {0xD9: 1, 0xC4: 1, 0xDA: 2, 0xC5: 2, 0xDB: 4, 0xC6: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}


def scalar_size(data: bytes) -> int | None:
    """How many bytes the msgpack value at the head of `data` takes, when it is no array or
    map (whose size only a walk tells): None for those. ormsgpack, and so LangGraph's
    loads_typed, reads a value and ignores any bytes after it: a value of another size
    than its bytes is not the one that was written."""
    if not data:
        return None
    head = data[0]
    if head <= 0x7F or head >= 0xE0:
        return 1
    if 0xA0 <= head <= 0xBF:
        return 1 + (head & 0x1F)
    fixed = _FIXED_SIZES.get(head)
    if fixed is not None:
        return fixed
    width = _SIZED.get(head)
    if width is None or len(data) < 1 + width:
        return None
    length = int.from_bytes(data[1 : 1 + width], "big")
    return 1 + width + (head >= 0xC7 and head <= 0xC9) + length
