"""The times commands select by (`since`, `until`, `older_than`): one syntax for all of them.

A time is a `datetime` (naive: UTC), a `timedelta` (an age: that long before now), or text:
an ISO date or time (`2026-11-01`, `2026-11-30T09:00:00Z`), an age (`90s`, `30m`, `12h`,
`7d`, `2w`), or a checkpoint id or thread, which the API reads the time of (a uuid6 id
holds it, format.md §3.3). `parse_when` turns text into the first two; the API resolves
what is left against the store.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from ckpt.errors import BadOption

When = dt.datetime | dt.timedelta | str

_AGE: Final = re.compile(r"\s*(\d+)\s*([smhdw])\s*")
_UNITS: Final = {
    "s": dt.timedelta(seconds=1),
    "m": dt.timedelta(minutes=1),
    "h": dt.timedelta(hours=1),
    "d": dt.timedelta(days=1),
    "w": dt.timedelta(weeks=1),
}
_DATE: Final = re.compile(r"\s*\d{4}-\d{2}-\d{2}")
EXAMPLES: Final = "an ISO time (2026-11-30T09:00:00Z), a date (2026-11-01) or an age (7d)"


def parse_when(value: When, name: str) -> dt.datetime | dt.timedelta | str:
    """A time as given to the parameter `name`: an aware datetime, an age, or the text of a
    checkpoint id or thread (stripped) for the caller to resolve. Raises BadOption for an
    empty text or a date that is not one."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.timedelta):
        if value < dt.timedelta(0):
            raise BadOption(f"`{name}`: an age cannot be negative")
        return value
    text = value.strip()
    if not text:
        raise BadOption(f"`{name}` is empty: give {EXAMPLES}, or a checkpoint id")
    if match := _AGE.fullmatch(text):
        return int(match.group(1)) * _UNITS[match.group(2)]
    if _DATE.match(text):
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            raise BadOption(f"`{name}` {text!r} is not {EXAMPLES}") from None
        return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return text


def parse_age(value: When, name: str) -> dt.timedelta | dt.datetime:
    """`older_than`: an age or a time, never a checkpoint (an age is what is meant)."""
    parsed = parse_when(value, name)
    if isinstance(parsed, str):
        raise BadOption(f"`{name}` {parsed!r}: give an age (30d, 12h, 2w) or a time (2026-11-01)")
    return parsed


def moment(value: dt.datetime | dt.timedelta, now: dt.datetime) -> dt.datetime:
    """The time a parsed value names: an age counts back from `now`."""
    return now - value if isinstance(value, dt.timedelta) else value


def updated_at(text: str | None) -> dt.datetime | None:
    """A thread record's `updated_at` as an aware datetime (None when absent or unreadable)."""
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
