"""Checkpoint ids are uuid6 (format.md §3.3): their time, and the smallest id of a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

# 100 ns ticks between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_TICKS: Final = 0x01B21DD213814000
_UNIX_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_MAX_TICKS: Final = (1 << 60) - 1


def _int_of(checkpoint_id: str) -> int | None:
    digits = checkpoint_id.strip().replace("-", "")
    if len(digits) != 32 or not _HEX.issuperset(digits):
        return None
    return int(digits, 16)


def uuid6_time(checkpoint_id: str) -> datetime | None:
    """The UTC time encoded in a uuid6 checkpoint id, or None if it is not a uuid6.

    Layout: time_high(32) | time_mid(16) | version 6 (4) | time_low(12) | variant |
    clock_seq = step & 0x3FFF | node (cp/base/id.py).
    """
    if not isinstance(checkpoint_id, str):
        return None
    value = _int_of(checkpoint_id)
    if value is None or (value >> 76) & 0xF != 6:
        return None
    ticks = ((value >> 80) << 12) | ((value >> 64) & 0xFFF)
    try:
        return _UNIX_EPOCH + timedelta(microseconds=(ticks - _UUID_EPOCH_TICKS) // 10)
    except OverflowError:
        return None


def uuid6_lower_bound(t: datetime) -> str:
    """The smallest uuid6 id string at time `t` (naive times are taken as UTC).

    Ids of one time sort after it and ids of earlier times before it, because the time
    fields come first in fixed-width lowercase hex: `id >= uuid6_lower_bound(since)` is the
    --since filter. Times outside the uuid6 range are clamped to its ends.
    """
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    delta = t - _UNIX_EPOCH
    ticks = (delta.days * 86_400 + delta.seconds) * 10_000_000 + delta.microseconds * 10
    ticks = min(max(ticks + _UUID_EPOCH_TICKS, 0), _MAX_TICKS)
    value = (ticks >> 12) << 80 | 6 << 76 | (ticks & 0xFFF) << 64 | 0x8000 << 48
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
