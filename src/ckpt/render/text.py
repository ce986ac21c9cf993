"""Text for people without a layout engine: escaped store text, cut values, sizes, times.

Kept free of Rich so that `ckpt threads` and every JSON path start quickly.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from ckpt.decoders import MARK_KEY
from ckpt.records import dumps

CUT = 160  # characters of a value shown in tables unless --full


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
