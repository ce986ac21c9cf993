"""numpy arrays (ext 6) as nested lists, read with struct: numpy is never imported."""

from __future__ import annotations

import base64
import math
import struct
from typing import Any, Final

from ckpt.decoders.ext import NDARRAY_TYPE, ShapeError
from ckpt.decoders.values import TYPE_KEY, float_record

MAX_DIMENSIONS: Final = 64  # numpy's own limit (NPY_MAXDIMS) is 32 or 64
# Empty arrays have no buffer to bound their shape; cap the empty lists we build.
MAX_EMPTY_LISTS: Final = 1_000_000

# dtype.str without its byte-order character -> (struct code, itemsize, complex?)
_SCALAR_CODES: Final[dict[str, tuple[str, int, bool]]] = {
    "b1": ("?", 1, False),
    "i1": ("b", 1, False),
    "u1": ("B", 1, False),
    "i2": ("h", 2, False),
    "u2": ("H", 2, False),
    "i4": ("i", 4, False),
    "u4": ("I", 4, False),
    "i8": ("q", 8, False),
    "u8": ("Q", 8, False),
    "f2": ("e", 2, False),
    "f4": ("f", 4, False),
    "f8": ("d", 8, False),
    "c8": ("f", 8, True),
    "c16": ("d", 16, True),
}


def decode_ndarray(payload: Any) -> dict[str, Any]:
    """`[dtype.str, shape, "C"|"F", buffer]` (format.md §2.3, code 6) -> an ndarray record.

    Known numeric dtypes get "data" (nested lists like ndarray.tolist(), complex numbers as
    [re, im]); other dtypes (strings, datetimes, records ...) keep the buffer as "base64"
    with its "order".
    """
    if type(payload) is not list or len(payload) != 4:
        raise ShapeError("expected [dtype, shape, order, buffer]")
    dtype, shape, order, buffer = payload
    if type(dtype) is not str:
        raise ShapeError("dtype must be a string")
    if type(shape) is not list or any(type(dim) is not int or dim < 0 for dim in shape):
        raise ShapeError("shape must be an array of non-negative integers")
    if len(shape) > MAX_DIMENSIONS:
        raise ShapeError(f"more than {MAX_DIMENSIONS} dimensions")
    if order not in ("C", "F"):
        raise ShapeError('order must be "C" or "F"')
    if type(buffer) is not bytes:
        raise ShapeError("buffer must be bin")
    record: dict[str, Any] = {TYPE_KEY: NDARRAY_TYPE, "dtype": dtype, "shape": list(shape)}
    scalar = _SCALAR_CODES.get(dtype[1:]) if dtype[:1] in ("<", ">", "|", "=") else None
    if scalar is None:
        record["order"] = order
        record["base64"] = base64.b64encode(buffer).decode("ascii")
        return record
    code, itemsize, is_complex = scalar
    count = math.prod(shape)
    if count * itemsize != len(buffer):
        raise ShapeError(f"buffer has {len(buffer)} bytes, shape and dtype need {count * itemsize}")
    byte_order = ">" if dtype[0] == ">" else "<"
    scalars = count * 2 if is_complex else count
    values: list[Any] = list(struct.unpack(f"{byte_order}{scalars}{code}", buffer))
    if code in "efd":
        values = [value if math.isfinite(value) else float_record(value) for value in values]
    if is_complex:
        values = [[values[index], values[index + 1]] for index in range(0, len(values), 2)]
    if order == "F" and len(shape) > 1:
        values = [values[index] for index in _fortran_to_c(shape)]
    record["data"] = _nest(values, shape)
    return record


def _fortran_to_c(shape: list[int]) -> list[int]:
    """Indexes into a column-major buffer, listed in row-major order."""
    indexes = [0]
    stride = 1
    strides = []
    for dim in shape:
        strides.append(stride)
        stride *= dim
    for dim, axis_stride in zip(shape, strides, strict=True):
        indexes = [base + step * axis_stride for base in indexes for step in range(dim)]
    return indexes


def _nest(values: list[Any], shape: list[int]) -> Any:
    """Row-major flat values -> nested lists of `shape` (a scalar for shape [])."""
    if not shape:
        return values[0]
    if 0 in shape:
        return _empty(shape)
    nested: list[Any] = values
    for dim in reversed(shape[1:]):
        nested = [nested[start : start + dim] for start in range(0, len(nested), dim)]
    return nested


def _empty(shape: list[int]) -> list[Any]:
    """Nested lists for a shape with a zero dimension: lists down to the first zero."""
    leading = shape[: shape.index(0)]
    if math.prod(leading) > MAX_EMPTY_LISTS:
        raise ShapeError("empty array shape too large")

    def build(level: int) -> list[Any]:  # at most MAX_DIMENSIONS deep
        if level == len(leading):
            return []
        return [build(level + 1) for _ in range(leading[level])]

    return build(0)
