"""What each LangGraph ext code and known (module, name) pair becomes, without importing anything.

The payload layouts are format.md §2.3; the Python type -> ext table is format.md §2.4. Every
function here receives values that are already JSON-ready and returns JSON-ready values.
Known pairs are turned into natural JSON by code that names the stdlib parsers itself
(never by looking a name from the data up); unknown pairs keep their name in TYPE_KEY.
"""

from __future__ import annotations

import decimal
import ipaddress
import json
import pathlib
import uuid
from collections.abc import Callable
from typing import Any, Final

from ckpt.decoders.checks import as_int, as_list, as_str
from ckpt.decoders.times import (
    date_iso_text,
    date_text,
    datetime_text,
    time_iso_text,
    timedelta_seconds,
    timezone_args_text,
    zone_key,
)
from ckpt.decoders.values import MARK_KEY, TYPE_KEY, object_record

EXT_CONSTRUCTOR_SINGLE_ARG: Final = 0
EXT_CONSTRUCTOR_POS_ARGS: Final = 1
EXT_CONSTRUCTOR_KW_ARGS: Final = 2
EXT_METHOD_SINGLE_ARG: Final = 3
EXT_PYDANTIC_V1: Final = 4
EXT_PYDANTIC_V2: Final = 5
EXT_NUMPY_ARRAY: Final = 6
EXT_DELTA_SNAPSHOT: Final = 7
KNOWN_EXT_CODES: Final = frozenset(range(8))

SEND_TYPE: Final = "langgraph.types.Send"
NDARRAY_TYPE: Final = "numpy.ndarray"
RESERVED_TYPE_PATHS: Final = frozenset({SEND_TYPE, NDARRAY_TYPE})
# langgraph <= 0.2 defined Send in langgraph.constants (legacy JSON ids, format.md §2.6 surprise 2).
SEND_PAIRS: Final = frozenset({("langgraph.types", "Send"), ("langgraph.constants", "Send")})
SECRET_NAMES: Final = frozenset({"SecretStr", "SecretBytes"})
# pydantic shows a set secret as ten stars and an empty one as ""; we do the same.
SECRET_MASK: Final = "**********"

# Errors a converter may raise on a malformed or forged argument; the caller then falls
# back to the generic object form, which still shows the name and the raw argument.
CONVERSION_ERRORS: Final = (ValueError, TypeError, OverflowError, ArithmeticError, LookupError)


class ShapeError(ValueError):
    """An ext payload that is valid msgpack but not of the layout its code promises."""


def type_path(module: str, name: str) -> str:
    """The TYPE_KEY value: "module.Name" (just the name when the module is empty).

    Send and ndarray objects have a fixed shape (docs/value.schema.json) that only their
    own converters build; a payload naming them any other way is malformed or forged.
    """
    path = f"{module}.{name}" if module else name
    if path in RESERVED_TYPE_PATHS:
        raise ShapeError(f"{path} is not stored this way")
    return path


def _uuid(arg: Any) -> str:
    return str(uuid.UUID(as_str(arg)))


def _decimal(arg: Any) -> str:
    if type(arg) is not str and type(arg) is not int:
        raise TypeError("expected a string")
    return str(decimal.Decimal(arg))


def set_sort_key(item: Any) -> tuple[int, Any]:
    """Set members are listed sorted, so that equal sets always look the same: numbers by
    value, then strings, then anything else by its JSON text."""
    if type(item) is bool:
        return (0, int(item))
    if type(item) is int or type(item) is float:
        return (1, item)
    if type(item) is str:
        return (2, item)
    return (3, json.dumps(item, sort_keys=True, ensure_ascii=False))


def _set_items(arg: Any) -> list[Any]:
    return sorted(as_list(arg), key=set_sort_key)


def _items(arg: Any) -> list[Any]:
    return as_list(arg)


_IP_CLASSES: Final[dict[str, Callable[[str], object]]] = {
    "IPv4Address": ipaddress.IPv4Address,
    "IPv4Interface": ipaddress.IPv4Interface,
    "IPv4Network": ipaddress.IPv4Network,
    "IPv6Address": ipaddress.IPv6Address,
    "IPv6Interface": ipaddress.IPv6Interface,
    "IPv6Network": ipaddress.IPv6Network,
}


def _ip(name: str) -> Callable[[Any], str]:
    parse = _IP_CLASSES[name]

    def convert(arg: Any) -> str:
        return str(parse(as_str(arg)))

    return convert


# ext 0 (one constructor argument): (module, name) -> converter of that argument.
SINGLE_ARG: Final[dict[tuple[str, str], Callable[[Any], Any]]] = {
    ("uuid", "UUID"): _uuid,
    ("decimal", "Decimal"): _decimal,
    ("builtins", "set"): _set_items,
    ("builtins", "frozenset"): _set_items,
    ("collections", "deque"): _items,
    ("zoneinfo", "ZoneInfo"): zone_key,
    **{("ipaddress", name): _ip(name) for name in _IP_CLASSES},
}


# What `_converted` gives back when there is no converter, or it refused the argument.
_UNCONVERTED: Final = object()


def _converted(convert: Callable[[Any], Any] | None, arg: Any) -> Any:
    """`convert(arg)` when a converter is known and takes the argument, else _UNCONVERTED
    (the caller then shows the argument as stored)."""
    if convert is not None:
        try:
            return convert(arg)
        except CONVERSION_ERRORS:
            pass
    return _UNCONVERTED


def single_arg(module: str, name: str, arg: Any) -> Any:
    """ext 0 `[module, name, arg]`: natural JSON for known pairs, else TYPE_KEY + "value"."""
    convert = SINGLE_ARG.get((module, name))
    if convert is None and name in SECRET_NAMES:
        # format.md §8.12: the secret is stored in clear text; show it the way pydantic does.
        empty = arg == "" or (type(arg) is dict and arg.get("size") == 0)
        return {TYPE_KEY: type_path(module, name), "value": "" if empty else SECRET_MASK}
    value = _converted(convert, arg)
    return value if value is not _UNCONVERTED else {TYPE_KEY: type_path(module, name), "value": arg}


def _path(name: str) -> Callable[[Any], str]:
    # Pure paths only join strings; the flavour follows the class name (format.md §2.4 row 6).
    flavour = pathlib.PureWindowsPath if "Windows" in name else pathlib.PurePosixPath

    def convert(args: Any) -> str:
        return str(flavour(*[as_str(part) for part in as_list(args)]))

    return convert


def _pattern(args: Any) -> Any:
    pattern, flags = as_list(args)
    as_int(flags)
    if type(pattern) is str:
        return pattern
    if type(pattern) is dict and pattern.get(MARK_KEY) == "bytes":
        return pattern
    raise TypeError("expected a string or bytes pattern")


_PATH_NAMES: Final = ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath")

# ext 1 (positional constructor arguments): (module, name) -> converter of the args list.
POS_ARGS: Final[dict[tuple[str, str], Callable[[Any], Any]]] = {
    ("datetime", "timedelta"): timedelta_seconds,
    ("datetime", "date"): date_text,
    ("datetime", "timezone"): timezone_args_text,
    ("re", "compile"): _pattern,
    **{
        (module, name): _path(name)
        for module in ("pathlib", "pathlib._local")
        for name in (*_PATH_NAMES, "PureWindowsPath")
    },
}


def send_record(
    node: Any,
    arg: Any,
    timeout: Any = None,
    *,
    with_timeout: bool = False,
    stored_as: str = SEND_TYPE,
) -> Any:
    """A langgraph Send packet; "timeout" only when the payload carried one. `__type__` is
    the class as stored: `langgraph.constants.Send` in legacy data (which LangGraph no
    longer revives from JSON, so it runs no such packet, format.md §2.6)."""
    record = {TYPE_KEY: stored_as, "node": node, "arg": arg}
    if with_timeout:
        record["timeout"] = timeout
    return record


def pos_args(module: str, name: str, args: Any) -> Any:
    """ext 1 `[module, name, [args...]]`: Send and known pairs, else TYPE_KEY + "args"."""
    if (module, name) in SEND_PAIRS and type(args) is list and len(args) in (2, 3):
        # LangGraph special-cases Send so that a third element is timeout= (format.md §2.3).
        stored_as = f"{module}.{name}"  # one of SEND_PAIRS
        if len(args) == 3:
            return send_record(args[0], args[1], args[2], with_timeout=True, stored_as=stored_as)
        return send_record(args[0], args[1], stored_as=stored_as)
    value = _converted(POS_ARGS.get((module, name)), args)
    return value if value is not _UNCONVERTED else {TYPE_KEY: type_path(module, name), "args": args}


def kw_args(module: str, name: str, kwargs: Any) -> Any:
    """ext 2 `[module, name, {kwargs}]`: dataclasses, namedtuples, Interrupt, Command ..."""
    return object_record(type_path(module, name), kwargs)


# (module, name, method) -> converter: the one pair LangGraph allows (format.md §2.5), plus the
# two sibling parsers legacy JSON could name with the same method.
METHODS: Final[dict[tuple[str, str, str], Callable[[Any], Any]]] = {
    ("datetime", "datetime", "fromisoformat"): datetime_text,
    ("datetime", "date", "fromisoformat"): date_iso_text,
    ("datetime", "time", "fromisoformat"): time_iso_text,
}


def method_call(module: str, name: str, method: str, arg: Any) -> Any:
    """ext 3 `[module, name, arg, method]`. Anything but a datetime parse was forged or is
    unknown: show every name and the argument; call nothing."""
    value = _converted(METHODS.get((module, name, method)), arg)
    if value is not _UNCONVERTED:
        return value
    return {MARK_KEY: "method_call", "module": module, "name": name, "method": method, "arg": arg}


def pydantic_model(module: str, name: str, fields: Any) -> Any:
    """ext 4 / ext 5: pydantic v1 and v2 models, including every LangChain message."""
    return object_record(type_path(module, name), fields)


def header(payload: Any, sizes: tuple[int, ...]) -> tuple[str, str, list[Any]]:
    """Check `[module, name, ...]` and return module, name and the whole list."""
    if type(payload) is not list or len(payload) not in sizes:
        wanted = " or ".join(str(size) for size in sizes)
        raise ShapeError(f"expected an array of {wanted} elements [module, name, ...]")
    module, name = payload[0], payload[1]
    if type(module) is not str or type(name) is not str:
        raise ShapeError("module and name must be strings")
    return module, name, payload


def interpret(code: int, payload: Any) -> Any:
    """Ext codes 0-5 after their payload was unpacked and made JSON-ready."""
    if code == EXT_CONSTRUCTOR_SINGLE_ARG:
        module, name, items = header(payload, (3,))
        return single_arg(module, name, items[2])
    if code == EXT_CONSTRUCTOR_POS_ARGS:
        module, name, items = header(payload, (3,))
        return pos_args(module, name, items[2])
    if code == EXT_CONSTRUCTOR_KW_ARGS:
        module, name, items = header(payload, (3,))
        return kw_args(module, name, items[2])
    if code == EXT_METHOD_SINGLE_ARG:
        module, name, items = header(payload, (4,))
        method = items[3]
        if type(method) is not str:
            raise ShapeError("method must be a string")
        return method_call(module, name, method, items[2])
    if code in (EXT_PYDANTIC_V1, EXT_PYDANTIC_V2):
        # v1 payloads have 3 elements, v2 add "model_validate_json", which LangGraph ignores.
        module, name, items = header(payload, (3, 4))
        return pydantic_model(module, name, items[2])
    raise ShapeError(f"unknown ext code {code}")
