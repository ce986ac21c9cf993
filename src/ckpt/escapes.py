"""The characters from a store that must never reach a terminal or a JSON reader raw, and
the one way each output escapes them (docs/security.md, "Text from the store").

A thread id, a message or a file name can hold anything. Some characters act on the
terminal instead of being shown: C0 and C1 controls (ESC and CSI start escape
sequences: recolour, clear, retitle, write the clipboard with OSC 52), DEL. Others hide
or reorder what is shown: bidi embeddings, overrides, isolates and marks (U+061C,
U+200E/F, U+202A-E, U+2066-9), line and paragraph separators (U+2028/9), zero-width
characters and joiners (U+200B-D, U+2060-4), the BOM (U+FEFF), tag characters
(U+E0000-E007F), the soft hyphen and other format characters. Lone surrogates (from
JSON `\\ud800` escapes, or bytes that are not UTF-8) cannot be written as UTF-8 at all.

The set is every code point of Unicode general category Cc, Cf, Zl, Zp or Cs (as of
Unicode 15.1), plus the whole tag block; `tests/test_escapes.py` checks it against
`unicodedata` for all 1,114,112 code points.
"""

from __future__ import annotations

import re
from typing import Final

# (first, last) code points, inclusive: categories Cc, Cf, Zl, Zp and Cs of Unicode 15.1.
UNSAFE_RANGES: Final = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605),
    (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE007F),
)  # fmt: skip

# Kept as they are where a view lays text out on several lines (values shown --full).
_LAYOUT: Final = frozenset({"\n", "\t"})


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        re.escape(chr(first))
        if first == last
        else f"{re.escape(chr(first))}-{re.escape(chr(last))}"
        for first, last in ranges
    )


_UNSAFE: Final = re.compile(f"[{_class(UNSAFE_RANGES)}]")
_UNSAFE_NOT_LAYOUT: Final = re.compile(f"(?![\n\t])[{_class(UNSAFE_RANGES)}]")
# In JSON text C0 controls are never raw inside strings (json.dumps escapes them); the
# raw newlines and spaces there are the layout of indented output, and stay.
_JSON_UNSAFE: Final = re.compile(f"[{_class(UNSAFE_RANGES[1:])}]")


def _terminal_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def for_terminal(text: str, *, keep_layout: bool = False) -> str:
    """The one function every piece of text goes through before it reaches a terminal
    (stdout views and stderr messages alike): each unsafe character becomes a visible
    Python-style escape (`\\x1b`, `\\u202e`, `\\U000e0041`), everything else is kept.
    `keep_layout` keeps newlines and tabs (a multi-line value shown whole)."""
    if text.isascii() and text.isprintable():
        return text
    pattern = _UNSAFE_NOT_LAYOUT if keep_layout else _UNSAFE
    return pattern.sub(_terminal_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_json_text(text: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with every unsafe character
    written as a \\u escape: the same JSON value, valid UTF-8 whatever the strings held
    (a lone surrogate stays a lone \\udXXX escape), and safe to print on a terminal.
    Unsafe characters can only be inside string literals, where an escape means the
    same character."""
    if text.isascii():
        return text if "\x7f" not in text else text.replace("\x7f", "\\u007f")
    return _JSON_UNSAFE.sub(_json_escape, text)
