"""datetime, date, time, timedelta, timezone and ZoneInfo arguments as ISO-8601 text or seconds.

The converters that ext.py's tables (format.md §2.4) and the legacy JSON decoder use, and the
msgpack decoder's reading of a `datetime.time` (ext 2), whose tzinfo needs its raw layout.
Each converter checks its arguments itself and raises one of ext.CONVERSION_ERRORS on a
malformed or forged one; callers then show the generic object form.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Any, Final

import ormsgpack

from ckpt.decoders.checks import as_int, as_list, as_number, as_str


def zone_key(arg: Any) -> str:
    """ext 0 zoneinfo.ZoneInfo: its key."""
    return as_str(arg)


def timedelta_seconds(args: Any) -> float:
    """`[days, seconds, microseconds]` -> total seconds, as timedelta.total_seconds() does."""
    days, seconds, microseconds = as_list(args)
    return timedelta(as_int(days), as_int(seconds), as_int(microseconds)).total_seconds()


def date_text(args: Any) -> str:
    """ext 1 datetime.date `[year, month, day]`."""
    year, month, day = as_list(args)
    return date(as_int(year), as_int(month), as_int(day)).isoformat()


def format_offset(offset: timedelta) -> str:
    """The offset part of an ISO-8601 time: "+01:00", "-00:59:59.999995"."""
    sign = "-" if offset < timedelta(0) else "+"
    offset = abs(offset)
    hours, rest = divmod(offset, timedelta(hours=1))
    minutes, rest = divmod(rest, timedelta(minutes=1))
    text = f"{sign}{hours:02d}:{minutes:02d}"
    if rest:
        text += f":{rest.seconds:02d}"
        if rest.microseconds:
            text += f".{rest.microseconds:06d}"
    return text


def timezone_text(offset_seconds: Any, tz_name: Any = None) -> str:
    """A `datetime.timezone` as a string: its name if it has one, "UTC" for a nameless zero
    offset, else "+HH:MM" (with ":SS[.ffffff]" when needed)."""
    offset = timedelta(seconds=as_number(offset_seconds))
    timezone(offset)  # validates the range (strictly within one day), like the constructor
    if tz_name is not None:
        return as_str(tz_name)
    if not offset:
        return "UTC"
    return format_offset(offset)


def timezone_args_text(args: Any) -> str:
    """ext 1 datetime.timezone `[offset]` or `[offset, name]`."""
    args = as_list(args)
    if len(args) not in (1, 2):
        raise ValueError("expected [offset] or [offset, name]")
    return timezone_text(*args)


def time_text(
    hour: Any,
    minute: Any,
    second: Any,
    microsecond: Any,
    tz: tuple[str, Any] | None,
) -> str:
    """A `datetime.time` as ISO-8601. `tz` is ("offset", timedelta) for a datetime.timezone
    or ("zone", key) for a ZoneInfo; a zone key is appended in brackets (RFC 9557 style),
    because a time alone has no offset in a zone with daylight saving."""
    naive = time(as_int(hour), as_int(minute), as_int(second), as_int(microsecond))
    if tz is None:
        return naive.isoformat()
    kind, detail = tz
    if kind == "offset":
        return naive.replace(tzinfo=timezone(detail)).isoformat()
    return f"{naive.isoformat()}[{as_str(detail)}]"


def datetime_text(arg: Any) -> str:
    """ext 3 datetime.fromisoformat: the ISO string, validated and in isoformat() form."""
    return datetime.fromisoformat(as_str(arg)).isoformat()


def date_iso_text(arg: Any) -> str:
    """date.fromisoformat, which legacy JSON could name with the same method as datetime."""
    return date.fromisoformat(as_str(arg)).isoformat()


def time_iso_text(arg: Any) -> str:
    """time.fromisoformat, which legacy JSON could name with the same method as datetime."""
    return time.fromisoformat(as_str(arg)).isoformat()


# -- datetime.time in msgpack (ext 2), whose tzinfo is read from its raw layout -------------

_TIME_FIELDS: Final = frozenset({"hour", "minute", "second", "microsecond", "tzinfo", "fold"})


def is_time(payload: Any) -> bool:
    """An unpacked ext 2 payload `["datetime", "time", {fields}]`."""
    return (
        type(payload) is list
        and len(payload) == 3
        and payload[0] == "datetime"
        and payload[1] == "time"
        and type(payload[2]) is dict
    )


def packed_time_text(fields: dict[str, Any], data: bytes) -> str:
    """datetime.time: ext 2 with {hour, minute, second, microsecond, tzinfo, fold}, as
    time_text shows it; `data` is the packed ext payload the fields came from.

    ValueError, TypeError or LookupError when the fields are not such a time (the caller
    then shows the generic kw_args object).
    """
    if not fields.keys() <= _TIME_FIELDS:
        raise ValueError("not the fields of a datetime.time")
    tzinfo = fields["tzinfo"]
    tz = None if tzinfo is None else _time_tzinfo(_unpack_raw(data)[2]["tzinfo"])
    return time_text(fields["hour"], fields["minute"], fields["second"], fields["microsecond"], tz)


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
    ext 0 zoneinfo.ZoneInfo(key) (format.md §2.4 rows 15-17)."""
    if isinstance(raw, _Raw) and raw.code == 0:
        return ("zone", _raw_header(raw, 0, "zoneinfo", "ZoneInfo")[2])
    args = _raw_header(raw, 1, "datetime", "timezone")[2]
    if type(args) is not list or len(args) not in (1, 2):
        raise TypeError("unexpected timezone arguments")
    days, seconds, microseconds = _raw_header(args[0], 1, "datetime", "timedelta")[2]
    return ("offset", timedelta(days, seconds, microseconds))
