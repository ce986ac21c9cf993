"""How deep msgpack data may nest while ckpt decodes it, and a scan that measures the depth.

The limits are explained in ckpt.decoders.msgpack, which enforces them; max_depth reads a
document's headers only, so it measures a payload without building any of its values.
"""

from __future__ import annotations

from typing import Final

from ckpt.decoders.ext import KNOWN_EXT_CODES

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
