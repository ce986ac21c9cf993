"""Output that needs no layout engine: stderr lines, cut values, and the fast threads table.

Kept free of Rich so that `ckpt threads` and every JSON path start quickly.
"""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any

from ckpt.decoders import MARK_KEY
from ckpt.render.records import ThreadRecord, dumps

CUT = 160  # characters of a value shown in tables unless --full
STATUS_STYLE = {
    "done": "green",
    "interrupted": "yellow",
    "error": "bold red",
    "pending": "cyan",
    "unknown": "dim",
}
_ANSI = {"green": "32", "yellow": "33", "bold red": "1;31", "cyan": "36", "dim": "2", "bold": "1"}


# Control characters from the data (an ESC in a thread id or a message) must not reach the
# terminal: they could recolour, clear or retitle it, or write the clipboard (OSC 52).
_CONTROL = {
    c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A)
}
# Invisible characters that reorder or hide text (bidi overrides, zero-width) too.
_INVISIBLE = (*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF)
_CONTROL.update({c: f"\\u{c:04x}" for c in _INVISIBLE})
_CONTROL_LINE = {**_CONTROL, 0x09: "\\t", 0x0A: "\\n"}


def clean(text: str) -> str:
    """Text with control characters shown as escapes; newlines and tabs kept."""
    return text.translate(_CONTROL)


def clean_line(text: str) -> str:
    """One line of text with every control character, newline included, as an escape."""
    return text.translate(_CONTROL_LINE)


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty() or bool(os.environ.get("CKPT_FORCE_TTY"))


def colour_allowed() -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (no-color.org)."""
    return stdout_is_terminal() and "NO_COLOR" not in os.environ


def error_line(message: str) -> None:
    """One line on stderr; never wrapped, never a traceback."""
    text = " ".join(message.split())
    if sys.stderr.isatty() and "NO_COLOR" not in os.environ:
        sys.stderr.write(f"\x1b[1;31mckpt: error:\x1b[0m {text}\n")
    else:
        sys.stderr.write(f"ckpt: error: {text}\n")
    sys.stderr.flush()


def say_notices(notices: list[str]) -> None:
    """Things the user should know once (e.g. a layout without channel values)."""
    while notices:
        sys.stderr.write(f"ckpt: note: {notices.pop(0)}\n")


def cut(text: str, full: bool, limit: int = CUT) -> str:
    """Shorten for a table cell; long cuts say how long the whole value is."""
    if full or len(text) <= limit:
        return text
    return text[: limit - 1] + ("…" if limit < 150 else f"… ({len(text)} chars)")


def brief(value: Any, full: bool = False, limit: int = CUT) -> str:
    """A value on one line: strings as they are, the rest as compact JSON."""
    if isinstance(value, str):
        return cut(clean_line(" ".join(value.split())) if not full else clean(value), full, limit)
    if isinstance(value, dict) and value.get(MARK_KEY) == "encrypted":
        return f"<encrypted {value.get('inner', '')}, {value.get('size', '?')} bytes>"
    if isinstance(value, dict) and value.get(MARK_KEY) == "skipped":
        return "<not loaded>"
    return cut(dumps(value), full, limit)


def human_size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"


def short_time(iso: str | None) -> str:
    return iso.replace("T", " ")[:19] if iso else ""


def cell_width(text: str) -> int:
    """Terminal columns of a string (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def threads_table(
    records: Iterable[ThreadRecord], *, location: str, filtered: bool = False
) -> None:
    """One row per thread, drawn by hand: stores have thousands of threads, and a layout
    engine that measures every cell costs half a second for 1,000 rows."""
    # PENDING: the writes on the latest checkpoint (`pending_writes` in the JSON); the
    # thread's total of write rows is `writes` in the JSON.
    headers = ["THREAD", "STATUS", "STEP", "SOURCE", "CKPTS", "PENDING", "NS", "UPDATED", "SIZE"]
    right = {"STEP", "CKPTS", "PENDING", "NS", "SIZE"}
    rows: list[list[str]] = []
    statuses: list[str] = []
    details: list[str] = []
    keeps: list[int] = []  # characters at the start of each detail that a cut must keep
    for record in records:
        keep = 0
        detail = ", ".join(record["next"] or [])
        if record["status"] == "error" and record["errors"]:
            detail = brief(record["errors"][0], limit=200)
        elif record["status"] == "interrupted" and record["interrupts"]:
            first = record["interrupts"][0]
            # The id first: it is what Command(resume={id: ...}) needs, and a cut
            # would make it useless.
            where = f" {first['id']}" if first["id"] else ""
            detail = f"waiting{where}: " + brief(first["value"], limit=200)
            keep = len(f"waiting{where}:")
        elif record["checkpoint_id"] is None:
            subgraphs = [n for n in record["namespaces"] if n]
            detail = f"no root checkpoint; only subgraph namespaces ({len(subgraphs)})"
        statuses.append(record["status"])
        details.append(clean_line(detail))
        keeps.append(keep)
        rows.append(
            [
                clean_line(record["thread_id"]),
                record["status"],
                "" if record["step"] is None else str(record["step"]),
                clean_line(record["source"] or ""),
                str(record["checkpoints"]),
                str(record["pending_writes"]),
                str(len([n for n in record["namespaces"] if n])),
                short_time(record["updated_at"]),
                human_size(record["size"]),
            ]
        )
    write = sys.stdout.write
    if not rows:
        # Nothing on stdout: an empty listing; the explanation is talk, for stderr.
        what = "no threads match" if filtered else "no threads"
        sys.stderr.write(f"ckpt: note: {what} in {location}\n")
        return
    widths = [
        max([cell_width(h), *(cell_width(r[i]) for r in rows)]) for i, h in enumerate(headers)
    ]
    terminal = stdout_is_terminal()
    colour = colour_allowed()
    used = sum(widths) + 2 * len(widths)
    # On a terminal (or with COLUMNS set) the detail is cut to the width; into a pipe or a
    # file, lines stay whole.
    if terminal:
        room = max(shutil.get_terminal_size().columns - used, 24)
    elif os.environ.get("COLUMNS", "").isdigit():
        room = max(int(os.environ["COLUMNS"]) - used, 24)
    else:
        room = 10**9

    def paint(text: str, style: str) -> str:
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if colour and style in _ANSI else text

    def line(cells: list[str], detail: str, status_style: str, keep: int = 0) -> str:
        padded = [
            c.rjust(w) if h in right else c + " " * (w - cell_width(c))
            for c, w, h in zip(cells, widths, headers, strict=True)
        ]
        padded[1] = paint(padded[1], status_style)
        shown = detail[:keep] + cut(detail[keep:], False, max(room - keep, 12))
        return ("  ".join(padded) + "  " + shown).rstrip() + "\n"

    write(paint(line(headers, "NEXT / DETAIL", "").rstrip("\n"), "bold") + "\n")
    for row, status, detail, keep in zip(rows, statuses, details, keeps, strict=True):
        write(line(row, detail, STATUS_STYLE.get(status, ""), keep))
    sys.stdout.flush()
