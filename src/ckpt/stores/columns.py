"""Each LangGraph column read as the type LangGraph writes, whatever the store holds.

SQLite lets any column hold any type, and a hand-made Postgres schema can declare any
type: a TEXT, REAL or NULL where a BLOB belongs, a BLOB id, a NULL thread id. The store
readers get their rows through a row factory that fixes each such column by its name in
the statement (issue 15): ids and names become text (a BLOB read as UTF-8 with
surrogate escapes, a number as its text, NULL as ""), values become bytes (text as its
UTF-8, a number as its text: damaged values then, with the decoder's reason), and an
`idx` that is not a number sorts after every real one. Rows of the right types go
through untouched; aggregates and other columns are never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ckpt.records.model import UNREADABLE_IDX


def lenient_text(data: bytes) -> str:
    """Bytes as UTF-8, each byte that is not as a lone surrogate (surrogateescape)."""
    return data.decode("utf-8", "surrogateescape")


def as_text(value: Any) -> str:
    if type(value) is bytes or type(value) is memoryview:
        return lenient_text(bytes(value))
    if type(value) is float:
        return repr(value)
    return "" if value is None else str(value)


def as_optional_text(value: Any) -> str | None:
    return None if value is None else as_text(value)


def as_bytes(value: Any) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if type(value) is memoryview or type(value) is bytearray:
        return bytes(value)
    if type(value) is str:
        return value.encode("utf-8", "surrogateescape")
    return repr(value).encode("utf-8", "surrogateescape")


def as_index(value: Any) -> int:
    if type(value) is int:
        return value
    try:
        number = float(as_text(value))
    except (ValueError, OverflowError):
        return UNREADABLE_IDX
    return int(number) if number.is_integer() else UNREADABLE_IDX


_TEXT: Final = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path")
_TEXT_MORE: Final = ("channel", "version")
# name -> (the types that pass, the conversion of anything else)
COLUMNS: Final[dict[str, tuple[tuple[type, ...], Callable[[Any], Any]]]] = {
    **dict.fromkeys((*_TEXT, *_TEXT_MORE), ((str,), as_text)),
    "parent_checkpoint_id": ((str, type(None)), as_optional_text),
    "type": ((str, type(None)), as_optional_text),
    "idx": ((int,), as_index),
    "value": ((bytes, type(None)), as_bytes),
    "blob": ((bytes, type(None)), as_bytes),
}
# SQLite keeps the checkpoint and its metadata as BLOBs; Postgres as jsonb (any JSON).
SQLITE_COLUMNS: Final = {
    **COLUMNS,
    "checkpoint": ((bytes, type(None)), as_bytes),
    "metadata": ((bytes, type(None)), as_bytes),
}


# Text values longer than any real id (a 10 MB thread id in a damaged store): each row
# would hold its own copy; rows share one instead (a few at a time), so that a scan over
# many rows of one such thread stays bounded in memory.
LONG_TEXT: Final = 4096
_SHARED: dict[str, str] = {}


def _shared(value: str) -> str:
    if len(_SHARED) > 8:
        _SHARED.clear()
    return _SHARED.setdefault(value, value)


_Rule = tuple[tuple[type, ...], Callable[[Any], Any]]
_Rules = tuple[tuple[int, _Rule], ...]


def _rules(names: Sequence[str], columns: dict[str, _Rule]) -> _Rules:
    """The columns of a statement that have a rule, by position: worked out once per
    statement, not once per row."""
    return tuple((i, columns[name]) for i, name in enumerate(names) if name in columns)


def _fixed(row: Sequence[Any], rules: _Rules) -> tuple[Any, ...]:
    fixed: list[Any] | None = None
    for index, rule in rules:
        value = row[index]
        if type(value) is str and len(value) > LONG_TEXT and str in rule[0]:
            if fixed is None:
                fixed = list(row)
            fixed[index] = _shared(value)
            continue
        if type(value) in rule[0]:
            continue
        if fixed is None:
            fixed = list(row)
        fixed[index] = rule[1](value)
    return tuple(row) if fixed is None else tuple(fixed)


# The last statement's description and its rules: sqlite3 keeps one description object
# per executed statement, so rows of one statement find their rules by identity (the
# reference held here keeps that object, and so its identity, from being reused).
_last_sqlite: tuple[Any, _Rules, bool] = (None, (), False)
# The name of a statement's last column that says, computed by SQLite, that every column
# of the row is of the type it is read as (stores.sqlite.aggregates.plain_row): such rows
# go through untouched without a look at each column.
PLAIN_ROW: Final = "ckpt_plain_row"


def typed_sqlite_row(cursor: Any, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """sqlite3's row factory (see the module docstring)."""
    global _last_sqlite
    description = cursor.description
    last = _last_sqlite  # one read: another thread may swap the triple meanwhile
    if last[0] is description:
        rules, flagged = last[1], last[2]
    else:
        names = [column[0] for column in description]
        rules = _rules(names, SQLITE_COLUMNS)
        flagged = bool(names) and names[-1] == PLAIN_ROW
        _last_sqlite = (description, rules, flagged)
    if flagged and row[-1] == 1:
        return row
    return _fixed(row, rules)


def typed_pg_rows(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """psycopg's row factory (see the module docstring)."""
    description = cursor.description
    if not description:
        return tuple
    names = [column.name for column in description]
    if not any(name in COLUMNS for name in names):
        return tuple
    rules = _rules(names, COLUMNS)
    return lambda values: _fixed(values, rules)
