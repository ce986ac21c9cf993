"""Channel versions of every era (format.md §3.4) as the integer counter LangGraph compares."""

from __future__ import annotations

import math


def parse_version(version: object) -> int | None:
    """The integer counter of a channel version, or None if it has none.

    Accepts plain ints (BaseCheckpointSaver, old MemorySaver), their text form (Postgres
    stores versions as TEXT), and the padded strings of the SQLite, Postgres and memory
    savers: "00000000000000000000000000000003.0.3447419818925671" (two dots), exponent
    suffixes ("00000000000000000000000000000003.0000000001.2e-05"), md5 suffixes and the
    empty suffix "...0002." of checkpoint-sqlite 1.0.0-1.0.3. Like LangGraph
    (`int(current.split(".")[0])`), only the part before the first dot counts.
    """
    if isinstance(version, bool):
        return None
    if isinstance(version, int):
        return version
    if isinstance(version, float):
        return int(version) if math.isfinite(version) else None
    if isinstance(version, bytes):
        try:
            version = version.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(version, str):
        return None
    counter = version.strip().split(".", 1)[0]
    if not counter.isascii() or not counter.isdigit():
        return None
    return int(counter)


def compare_versions(a: object, b: object) -> int:
    """-1, 0 or 1 comparing two versions by their integer counter (parse_version).

    Versions of one namespace share one counter per superstep (format.md §3.4), so equal
    counters mean the same version. A version without a counter sorts before any with one;
    two without one compare by their text.
    """
    left, right = parse_version(a), parse_version(b)
    if left is not None and right is not None:
        return (left > right) - (left < right)
    if left is not None:
        return 1
    if right is not None:
        return -1
    left_text, right_text = str(a), str(b)
    return (left_text > right_text) - (left_text < right_text)


def is_newer(a: object, b: object) -> bool:
    """`compare_versions(a, b) > 0`, without parsing the two in the common case: padded
    strings whose counters have as many digits compare as text."""
    if type(a) is str and type(b) is str:
        left, right = a.partition(".")[0], b.partition(".")[0]
        if (
            len(left) == len(right)
            and left.isascii()
            and right.isascii()
            and left.isdigit()
            and right.isdigit()
        ):
            return left > right
    return compare_versions(a, b) > 0
