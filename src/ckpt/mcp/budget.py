"""Answers that fit: every tool's answer is cut to a size budget, long values shown by their
size, lists paged with a cursor, and a note of everything left out (docs/mcp.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from ckpt.errors import BadOption
from ckpt.records.encode import dumps, dumps_head, dumps_within

MARK: Final = "__ckpt__"  # a marked record's key (docs/json.md, "Marked records")
HEAD: Final = 200  # characters of a cut value's JSON shown in its `cut` record
ENVELOPE: Final = 400  # characters kept for the answer's own keys and notes


@dataclass(frozen=True, slots=True)
class Budget:
    """How much one answer may hold: `chars` of JSON in all, `value_chars` of any one
    string (a message's content, a bytes record's base64)."""

    chars: int = 40_000
    value_chars: int = 2_000


@dataclass
class Answer:
    """One tool's answer: the records (as `--json` prints them), where the next page
    starts, and what was cut or left out, in words."""

    result: Any
    cursor: str | None = None
    left_out: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"result": self.result}
        if self.cursor is not None:
            answer["next_cursor"] = self.cursor
        if self.left_out:
            answer["left_out"] = self.left_out
        if self.notices:
            answer["notices"] = self.notices
        return answer

    def text(self) -> str:
        return dumps(self.document())


def offset(cursor: str | None) -> int:
    """The position a cursor names (the `next_cursor` of the previous page)."""
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit():
        raise BadOption(f"`cursor` {cursor!r} is not one this server gave")
    return int(cursor)


def cut_strings(value: Any, limit: int, path: str, left_out: list[str]) -> Any:
    """`value` with every string longer than `limit` characters replaced by a `cut`
    record: its first `limit` characters and its length."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        left_out.append(f"{path or '.'}: a string of {len(value):,} characters cut")
        return {MARK: "cut", "size": len(value), "head": value[:limit]}
    if isinstance(value, dict):
        return {k: cut_strings(v, limit, f"{path}.{k}", left_out) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cut_strings(v, limit, f"{path}[{i}]", left_out) for i, v in enumerate(value)]
    return value


def _size(value: Any) -> int:
    return dumps_head(value, 0)[1]


def _cut(value: Any, path: str, size: int, left_out: list[str]) -> dict[str, Any]:
    left_out.append(f"{path or '.'}: {size:,} characters of JSON cut")
    return {MARK: "cut", "size": size, "head": dumps_head(value, HEAD)[0]}


def fit(value: Any, chars: int, path: str, left_out: list[str]) -> Any:
    """`value` in at most about `chars` characters of JSON: the smaller parts of a dict
    kept whole and the larger ones fitted in what is left, a list's first items kept and
    the rest counted, anything else too large cut to a `cut` record."""
    if dumps_within(value, chars) is not None:
        return value
    if isinstance(value, dict) and MARK not in value:
        sizes = {k: _size(v) + len(dumps(k)) + 4 for k, v in value.items()}  # ": ", ", "
        kept: dict[str, Any] = {}
        room = chars - 2
        larger = []
        for key in sorted(value, key=lambda k: sizes[k]):
            if sizes[key] <= room // max(len(value) - len(kept), 1) or sizes[key] <= HEAD:
                kept[key] = value[key]
                room -= sizes[key]
            else:
                larger.append(key)
        for n, key in enumerate(larger):
            share = max(room // (len(larger) - n), HEAD + 50)
            kept[key] = fit(value[key], share - len(dumps(key)) - 4, f"{path}.{key}", left_out)
            room -= _size(kept[key]) + len(dumps(key)) + 4
        return {k: kept[k] for k in value}  # the record's own order
    if isinstance(value, list | tuple):
        items: list[Any] = []
        room = chars - 2 - 80  # the closing record that counts what is left out
        for i, item in enumerate(value):
            size = _size(item) + 2  # ", "
            if size > room:
                if not items and room > HEAD + 50:  # one item larger than all: fitted
                    items.append(fit(item, room, f"{path}[{i}]", left_out))
                    i += 1
                rest = len(value) - i
                if rest:
                    left_out.append(f"{path or '.'}: the last {rest:,} of {len(value):,} items")
                    items.append({MARK: "cut", "items": rest})
                return items
            items.append(item)
            room -= size
        return items
    return _cut(value, path, _size(value), left_out)


def bounded(value: Any, budget: Budget, notices: Iterable[str] = ()) -> Answer:
    """One record (a checkpoint, stats, a check) as an answer within the budget."""
    cut: list[str] = []
    value = cut_strings(value, budget.value_chars, "", cut)
    room = budget.chars - ENVELOPE
    for _ in range(8):  # the estimate is close; a retry takes what it missed by
        left_out = list(cut)
        answer = Answer(fit(value, room, "", left_out), left_out=_trim(left_out))
        over = _size(answer.document()) - (budget.chars - ENVELOPE // 2)
        if over <= 0:
            break
        room -= over + 50
    answer.notices = list(notices)
    return answer


def paged(
    records: Iterator[Any], budget: Budget, *, start: int, limit: int, notices: Iterable[str] = ()
) -> Answer:
    """Records from position `start`, as many as fit the budget (at most `limit`), and the
    cursor of the next page when there are more. A stream left unfinished is closed (its
    read ends)."""
    try:
        return _page(records, budget, start=start, limit=limit, notices=notices)
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()


def _page(
    records: Iterator[Any], budget: Budget, *, start: int, limit: int, notices: Iterable[str]
) -> Answer:
    left_out: list[str] = []
    page: list[Any] = []
    room = budget.chars - ENVELOPE
    position = start
    for _ in range(start):
        if next(records, None) is None:
            return Answer([], notices=list(notices))
    for record in records:
        if len(page) >= limit:
            return Answer(page, str(position), _trim(left_out), list(notices))
        record = cut_strings(record, budget.value_chars, f"[{position}]", left_out)
        size = _size(record) + 2  # ", "
        if size > room:
            if page:
                return Answer(page, str(position), _trim(left_out), list(notices))
            record = fit(record, room, f"[{position}]", left_out)  # alone on its page
            size = room
        page.append(record)
        room -= size
        position += 1
    return Answer(page, None, _trim(left_out), list(notices))


def _trim(left_out: list[str]) -> list[str]:
    return left_out[:20] + _more(left_out, 20)


def _more(left_out: list[str], shown: int) -> list[str]:
    return [f"... and {len(left_out) - shown:,} more cuts"] if len(left_out) > shown else []


def check_limit(limit: int, name: str = "limit") -> int:
    if limit < 1:
        raise BadOption(f"`{name}` must be 1 or more")
    return limit
