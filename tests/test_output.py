"""The output layer's text helpers, as properties."""

from __future__ import annotations

import re
import time

from hypothesis import given
from hypothesis import strategies as st

from ckpt.render.output import strip_trailing
from ckpt.render.text import LONG_LINE, clean_line

_TRAILING = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$", re.MULTILINE)
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def reference(text: str) -> str:
    """The obvious definition (quadratic on long runs of padding): every line without its
    trailing blanks, the style codes among them kept in order."""
    return _TRAILING.sub(lambda m: "".join(_SGR.findall(m.group())), text)


pieces = st.sampled_from(
    [" ", "\t", "a", "é", "\n", "\x1b[1m", "\x1b[0m", "\x1b[", "m", "\x1b[2;31m"]
)


@given(st.lists(pieces, max_size=40).map("".join))
def test_strip_trailing_is_the_reference(text: str) -> None:
    assert strip_trailing(text) == reference(text)


def test_strip_trailing_is_linear_in_padding() -> None:
    # A table with a 10 MB id pads the other rows with millions of spaces.
    text = ("x" + " " * 2_000_000 + "y\n") * 3
    started = time.process_time()  # CPU time: a loaded machine does not stretch it
    assert strip_trailing(text) == text
    assert time.process_time() - started < 10  # a hang guard: the regex took minutes


def test_a_huge_id_is_shown_with_its_length() -> None:
    shown = clean_line("t" * 10_000_000)
    assert len(shown) < LONG_LINE + 40 and shown.startswith("t" * 100)
    assert shown.endswith("(10,000,000 chars)")
    ordinary = "support-1-" + "x" * 300
    assert clean_line(ordinary) == ordinary  # a real id is never cut
