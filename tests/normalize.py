"""The oracle's half of the decoder tests: Python values -> ckpt's decoded representation.

`normalize(value)` maps what LangGraph's own `JsonPlusSerializer.loads_typed` returns (real
Python objects) to the JSON-ready representation that `ckpt.decoders.decode` produces
from the bytes, as docs/json.md ("Decoded values") documents it. The decoder tests assert

    decode(*serde.dumps_typed(v)) == normalize(serde.loads_typed(serde.dumps_typed(v)))

so this one function is the written-down contract, rule by rule:

* None, bool, int, str: themselves. float: itself, or {"__ckpt__": "float", "value":
  "NaN" | "Infinity" | "-Infinity"}.
* bytes, bytearray: {"__ckpt__": "bytes", "base64", "size"} plus "text" when valid UTF-8.
* list, tuple, deque: lists. set, frozenset: lists sorted by `set_sort_key`.
* dict: a dict when every key is a str and none is "__type__" or "__ckpt__"; otherwise
  {"__ckpt__": "map", "entries": [[key, value], ...]} in the dict's order.
* datetime, date: isoformat(). time: isoformat() of the naive time plus the offset of a
  datetime.timezone, or "[zone key]" for a ZoneInfo. timedelta: total_seconds().
* timezone: its name if it has one, "UTC" for a nameless zero offset, else "+HH:MM".
  ZoneInfo: its key. UUID, Decimal, ipaddress, pathlib: str(). re.Pattern: the pattern.
* pydantic v2 models (LangChain messages too): {"__type__": "module.Name", **model_dump()};
  pydantic v1: .dict(); dataclasses: their fields; namedtuples: _asdict(); Item: its slots.
* SecretStr / SecretBytes: {"__type__": ..., "value": "**********"} ("" when empty).
* Enum members: {"__type__": "module.Name", "value": member.value}.
* Send: {"__type__": "langgraph.types.Send", "node", "arg"} plus "timeout" when set.
* numpy.ndarray: {"__type__": "numpy.ndarray", "dtype": dtype.str, "shape": [...],
  "data": tolist()} with complex numbers as [re, im]; dtypes other than bool, ints,
  floats and complex keep "order" and "base64" of the raw buffer instead of "data".
* _DeltaSnapshot: {"__ckpt__": "delta_snapshot", "value": ...}.
* BaseException: repr() (LangGraph stores exceptions as their repr string).
"""

from __future__ import annotations

import base64
import dataclasses
import decimal
import enum
import ipaddress
import json
import math
import pathlib
import re
import uuid
from collections import deque
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

TYPE_KEY = "__type__"
MARK_KEY = "__ckpt__"
SECRET_MASK = "**********"
NUMERIC_DTYPES = {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"}
COMPLEX_DTYPES = {"c8", "c16"}


def set_sort_key(item: Any) -> tuple[int, Any]:
    """How set members are ordered: numbers by value, then strings, then anything by JSON."""
    if isinstance(item, bool):
        return (0, int(item))
    if isinstance(item, int | float):
        return (1, item)
    if isinstance(item, str):
        return (2, item)
    return (3, json.dumps(item, sort_keys=True, ensure_ascii=False))


def bytes_record(raw: bytes) -> dict[str, Any]:
    record: dict[str, Any] = {
        MARK_KEY: "bytes",
        "base64": base64.b64encode(raw).decode("ascii"),
        "size": len(raw),
    }
    try:
        record["text"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return record


def float_value(value: float) -> Any:
    if math.isfinite(value):
        return value
    text = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return {MARK_KEY: "float", "value": text}


def offset_text(offset: timedelta) -> str:
    """ISO-8601 offset text. Written again, not imported from ckpt.decoders.times: the
    oracle side of a comparison must not share the code under test."""
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


def timezone_text(tz: timezone) -> str:
    args = tz.__getinitargs__()  # type: ignore[attr-defined]
    if len(args) == 2:
        return str(args[1])
    return "UTC" if not args[0] else offset_text(args[0])


def time_text(value: time) -> str:
    naive = value.replace(tzinfo=None).isoformat()
    if value.tzinfo is None:
        return naive
    if isinstance(value.tzinfo, ZoneInfo):
        return f"{naive}[{value.tzinfo.key}]"
    offset = value.utcoffset()
    assert offset is not None
    return value.replace(tzinfo=timezone(offset)).isoformat()


def object_value(type_path: str, fields: dict[str, Any]) -> dict[str, Any]:
    normalized = normalize(fields)
    if isinstance(normalized, dict) and not is_reserved(normalized):
        return {TYPE_KEY: type_path, **normalized}
    return {TYPE_KEY: type_path, "kwargs": normalized}


def is_reserved(mapping: dict[str, Any]) -> bool:
    return TYPE_KEY in mapping or MARK_KEY in mapping


def path_of(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__name__}"


def ndarray_value(array: Any) -> dict[str, Any]:
    dtype = array.dtype.str
    record: dict[str, Any] = {TYPE_KEY: "numpy.ndarray", "dtype": dtype, "shape": list(array.shape)}
    kind = dtype[1:]
    if kind in NUMERIC_DTYPES:
        record["data"] = normalize(array.tolist())
    elif kind in COMPLEX_DTYPES:
        record["data"] = normalize(_complex_pairs(array.tolist()))
    else:
        order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
        record["order"] = order
        record["base64"] = base64.b64encode(array.tobytes(order="A")).decode("ascii")
    return record


def _complex_pairs(value: Any) -> Any:
    if isinstance(value, list):
        return [_complex_pairs(item) for item in value]
    return [value.real, value.imag]


def normalize(value: Any) -> Any:
    """The representation `decode` must produce for a Python value (rules: module docstring)."""
    if type(value).__name__ == "_DeltaSnapshot":  # a NamedTuple, checked before tuples
        return {MARK_KEY: "delta_snapshot", "value": normalize(value.value)}
    if isinstance(value, enum.Enum):  # before int/str: IntEnum and StrEnum are both
        return {TYPE_KEY: path_of(value), "value": normalize(value.value)}
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float_value(value)
    if isinstance(value, bytes | bytearray):
        return bytes_record(bytes(value))
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value) and not is_reserved(value):
            return {key: normalize(item) for key, item in value.items()}
        return {
            MARK_KEY: "map",
            "entries": [[normalize(key), normalize(item)] for key, item in value.items()],
        }
    if hasattr(value, "_asdict") and isinstance(value, tuple):  # namedtuple
        return object_value(path_of(value), value._asdict())
    if isinstance(value, list | tuple | deque):
        return [normalize(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((normalize(item) for item in value), key=set_sort_key)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return time_text(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, timezone):
        return timezone_text(value)
    if isinstance(value, ZoneInfo):
        return value.key
    if isinstance(value, uuid.UUID | decimal.Decimal | pathlib.PurePath):
        return str(value)
    if isinstance(value, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(value)
    if isinstance(value, ipaddress.IPv4Network | ipaddress.IPv6Network):
        return str(value)
    if isinstance(value, ipaddress.IPv4Interface | ipaddress.IPv6Interface):
        return str(value)
    if isinstance(value, re.Pattern):
        return normalize(value.pattern)
    if isinstance(value, BaseException):
        return repr(value)
    return _normalize_object(value)


def _normalize_object(value: Any) -> Any:
    """Objects LangGraph rebuilt from ext 0-7 (and the classes the tests define)."""
    cls = type(value)
    if cls.__module__ == "numpy" and cls.__name__ == "ndarray":
        return ndarray_value(value)
    if cls.__module__ == "langgraph.types" and cls.__name__ == "Send":
        record = {
            TYPE_KEY: "langgraph.types.Send",
            "node": normalize(value.node),
            "arg": normalize(value.arg),
        }
        if value.timeout is not None:
            record["timeout"] = normalize(value.timeout)
        return record
    if hasattr(value, "get_secret_value"):
        secret = value.get_secret_value()
        return {TYPE_KEY: path_of(value), "value": SECRET_MASK if secret else ""}
    if hasattr(value, "model_dump"):
        return object_value(path_of(value), value.model_dump())
    if hasattr(value, "dict") and callable(value.dict):  # pydantic v1
        return object_value(path_of(value), value.dict())
    if dataclasses.is_dataclass(value):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return object_value(path_of(value), fields)
    if cls.__module__ == "langgraph.store.base" and cls.__name__ == "Item":
        return object_value(path_of(value), {key: getattr(value, key) for key in cls.__slots__})
    raise TypeError(f"normalize: no rule for {cls.__module__}.{cls.__qualname__}")
