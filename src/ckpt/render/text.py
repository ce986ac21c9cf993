"""Text for people without a layout engine: escaped store text, cut values, sizes, times.

Kept free of Rich so that `ckpt threads` and every JSON path start quickly.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

from ckpt.analysis.tasks import send_label
from ckpt.decoders import MARK_KEY, TYPE_KEY
from ckpt.escapes import for_terminal
from ckpt.records.encode import dumps, dumps_head, dumps_within
from ckpt.records.types import TaskRecord

CUT = 160  # characters of a value shown in tables unless --full


def clean(text: str) -> str:
    """Text from the store made safe for a terminal, newlines and tabs kept (one escaping
    function for every view and message: ckpt.escapes.for_terminal)."""
    return for_terminal(text, keep_layout=True)


LONG_LINE = 4096  # characters of one line of text (an id, a name) a view shows at most


def clean_line(text: str) -> str:
    """One line of text with every unsafe character, newline included, as an escape. A
    line longer than any real id (a 10 MB thread id from a damaged store) is shown as its
    start and its length: a terminal table cannot lay it out, and nobody pastes it."""
    if len(text) > LONG_LINE:
        return f"{for_terminal(text[: LONG_LINE - 96])}… ({len(text):,} chars)"
    return for_terminal(text)


def counted(count: int, noun: str) -> str:
    """`1 thread`, `12 threads`, `1,024 values`: a count and its noun (plural in -s)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def short_name(text: str) -> str:
    """A name (a channel, a task, a path, a namespace) as a view shows it: whole up to
    LONG_LINE characters, else its start and its length (a 16 MB channel name took Rich
    10 s to measure and printed 16 MB; issue 46 §4). The JSON keeps it whole."""
    if len(text) > LONG_LINE:
        return f"{text[: LONG_LINE - 96]}… ({len(text):,} chars)"
    return text


def thread_cell(thread_id: str) -> str:
    """A thread id as a table shows it: clean_line, and shell-quoted when it is blank or
    has blanks at either end (`''`, `' a'`), which a table cell would hide; the quoted form
    is what selects it (`ckpt show ''`)."""
    import shlex

    if thread_id and thread_id.strip() == thread_id:
        return clean_line(thread_id)
    return clean_line(shlex.quote(thread_id))


def cut(text: str, full: bool, limit: int = CUT, length: int | None = None) -> str:
    """Shorten for a table cell; long cuts say how long the whole value is. `length`: the
    whole text's, when `text` is only its start."""
    size = len(text) if length is None else length
    if full or size <= limit:
        return text
    return text[: limit - 1] + ("…" if limit < 150 else f"… ({size} chars)")


def brief(value: Any, full: bool = False, limit: int = CUT) -> str:
    """A value on one line: strings as they are, the rest as compact JSON."""
    if isinstance(value, str):
        return cut(clean_line(" ".join(value.split())) if not full else clean(value), full, limit)
    if isinstance(value, dict) and value.get(MARK_KEY) == "encrypted":
        return f"<encrypted {value.get('inner', '')}, {value.get('size', '?')} bytes>"
    if isinstance(value, dict) and value.get(MARK_KEY) == "skipped":
        return "<not loaded>"
    if isinstance(value, dict) and value.get(MARK_KEY) == "not_kept":
        read_as = dumps(value.get("read_as"))
        return cut(
            f"<{value.get('type')} not kept by the saver; LangGraph reads {read_as}>", full, limit
        )
    if full:
        return dumps(value)
    head, length = dumps_head(value, limit)
    return cut(head, False, limit, length)


def brief_within(value: Any, limit: int) -> str | None:
    """`brief(value, full=True)` when it is at most `limit` characters long, else None,
    without writing more of it than that."""
    if isinstance(value, str):
        if len(value) > limit:
            return None
        text = clean(value)
        return text if len(text) <= limit else None
    if isinstance(value, dict) and value.get(MARK_KEY) in ("encrypted", "skipped", "not_kept"):
        text = brief(value, full=True)
        return text if len(text) <= limit else None
    return dumps_within(value, limit)


def task_name(task: TaskRecord) -> str:
    """A task as every view names it: its node, `node[i]` for the i-th Send."""
    return send_label(task["name"], task["send_index"])


def error_brief(error: Any, full: bool = False, limit: int = CUT) -> str:
    """A task's error on one line: LangGraph's repr as stored, or, for an error RedisSaver
    kept as an object without its message (its type and attributes: format.md §7b), the
    type and that there is no message, where its dict would read as data (issue 46 §3).
    An error a listing did not read (DynamoDB `threads` reads keys only) says where it is."""
    if isinstance(error, dict) and error.get("__ckpt__") == "not_read":
        return "failed (the error is in its write's payload: `ckpt show THREAD` reads it)"
    if isinstance(error, dict) and isinstance(error.get(TYPE_KEY), str):
        name = error[TYPE_KEY].rpartition(".")[2]
        said = {k: v for k, v in error.items() if k not in (TYPE_KEY, "__notes__")}
        if not said:
            return cut(f"{name} (no message: RedisSaver keeps none)", full, limit)
        if set(said) <= {"args", "message"}:
            text = said.get("message", said.get("args"))
            return cut(f"{name}: {brief(text, full, limit)}", full, limit)
    return brief(error, full, limit)


def failure(task: TaskRecord, limit: int = CUT, with_input: bool = True) -> str:
    """A failed task on one line, its input (the Send's argument) then its error:
    `worker[1]({"item": "invoice-2"}): ValueError('...')`. The input is cut first."""
    call = clean_line(task_name(task))
    if with_input and task["input"] is not None:
        call += f"({brief(task['input'], limit=min(60, limit))})"
    return f"{call}: {error_brief(task['error'], limit=limit)}"


def human_size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"


def short_time(iso: str | None, local: bool = False) -> str:
    """`2026-11-30 04:01:43`: a stored time in UTC (LangGraph writes UTC), or in the local
    zone with `local` (`--local`); a time that does not parse is shown as it is, escaped
    (a stored `ts` is the store's text: issue 29 found an ESC in one)."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso)
    except (ValueError, TypeError):
        return clean_line(str(iso).replace("T", " ")[:19])
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone() if local else when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S")


def zone_label(local: bool = False) -> str:
    """The zone the views' times are in: UTC, or the local zone's name (`--local`)."""
    return (datetime.now().astimezone().tzname() or "local") if local else "UTC"


def today(local: bool = False) -> str:
    return (datetime.now().astimezone() if local else datetime.now(UTC)).date().isoformat()


def cell_width(text: str) -> int:
    """Terminal columns of a string (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
