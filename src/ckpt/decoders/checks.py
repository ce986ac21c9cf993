"""Type checks for the arguments converters read from stored data: the value, or TypeError."""

from __future__ import annotations

from typing import Any

# `type(x) is T`, not isinstance, so that a bool never passes as an int.


def as_str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("expected a string")
    return value


def as_list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise TypeError("expected an array")
    return value


def as_int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("expected an integer")
    return value


def as_number(value: Any) -> float:
    if type(value) is not int and type(value) is not float:
        raise TypeError("expected a number")
    return float(value)
