"""JSON text read as `json.loads` reads it, through orjson where the two agree.

orjson is several times faster, and ckpt reads JSON for every checkpoint a scan passes
(SQLite metadata, Postgres bodies and channel versions). The two differ on an integer of
19 digits or more (orjson reads one past 64 bits as a float), so such text goes to json;
what orjson refuses (NaN, lone surrogates, a BOM, another encoding than UTF-8, deep
nesting) json reads, or fails on, as before.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson


def json_document(data: bytes | str) -> Any:
    """`json.loads(data)`, the same values, errors and all (see the module docstring)."""
    if not long_integer(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


_DIGITS_AS_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
_RUN: Final = b"0" * 19  # 19 digits, once translated
# What may come before a run of 19 digits that is no integer: a quote (a string starting
# with digits: every version LangGraph writes), a digit (the same run), a decimal point
# (a fraction's digits, which orjson and json round alike, or a version's last part).
_NOT_AN_INTEGER: Final = frozenset(b'"0.')


def long_integer(data: bytes | str) -> bool:
    """Whether JSON text may hold an integer of 19 digits or more: a run of 19 digits (one
    C pass) that starts anywhere else than after a quote or a decimal point."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    text = raw.translate(_DIGITS_AS_ZERO)
    at = text.find(_RUN)
    while at >= 0:
        if at == 0 or text[at - 1] not in _NOT_AN_INTEGER:
            return True
        at = text.find(_RUN, at + 19)
    return False
