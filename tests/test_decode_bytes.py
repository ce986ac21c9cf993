"""Byte-literal tests: each tag and ext code's layout (format.md §2.1-2.4) in, decoded value out.

In the style of msgpack-python's test/test_extension.py: the bytes are written out (in
tests/decode_cases.py), so a change of layout on either side shows up here first.
"""

from __future__ import annotations

from typing import Any

import pytest

from ckpt.decoders import ABSENT, decode
from decode_cases import EXT_CASES, MSGPACK_CASES, TAG_CASES


@pytest.mark.parametrize(("label", "payload", "expected"), EXT_CASES, ids=[c[0] for c in EXT_CASES])
def test_ext_layout(label: str, payload: bytes, expected: Any) -> None:
    assert decode("msgpack", payload) == expected


@pytest.mark.parametrize(
    ("label", "payload", "expected"), MSGPACK_CASES, ids=[c[0] for c in MSGPACK_CASES]
)
def test_msgpack_layout(label: str, payload: bytes, expected: Any) -> None:
    assert decode("msgpack", payload) == expected


def test_shared_messages_decode_as_when_decoded_alone() -> None:
    """Under shared_exts (dump) an ext value met again is the one decoded before: every
    case decodes to its value twice in one memo, and an array of three copies of its
    payload (its ext values met again, as outermost values) to three times its value."""
    from ckpt.decoders.memo import shared_exts

    cases = [(payload, expected) for _, payload, expected in EXT_CASES + MSGPACK_CASES]
    with shared_exts():
        for payload, expected in cases:
            assert decode("msgpack", payload) == expected
            assert decode("msgpack", payload) == expected
        for payload, expected in cases:
            whole = b"\x93" + payload * 3  # an array of the three, ext values outermost
            assert decode("msgpack", whole) == [expected] * 3


@pytest.mark.parametrize(("tag", "payload", "expected"), TAG_CASES)
def test_tags(tag: str | None, payload: bytes | None, expected: Any) -> None:
    assert decode(tag, payload) == expected


def test_absent_is_a_falsy_singleton() -> None:
    assert decode("empty", b"") is ABSENT
    assert not ABSENT
    assert repr(ABSENT) == "ABSENT"
