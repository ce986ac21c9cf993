"""lc envelopes within shared_exts (dump): one met again is not converted again, and reads
as it does converted alone; outside it, every caller gets objects of its own."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckpt.decoders import decode_json_text
from ckpt.decoders.memo import shared_exts
from ckpt.decoders.redisjson import decode_redis_json
from decode_cases import ENVELOPES
from runs import examples

MESSAGE = ENVELOPES[0][1]  # an lc:1 HumanMessage


@pytest.mark.parametrize(
    ("label", "envelope", "expected"), ENVELOPES, ids=[c[0] for c in ENVELOPES]
)
def test_shared_envelopes_read_as_when_converted_alone(
    label: str, envelope: Any, expected: Any
) -> None:
    """Every case twice in one memo, then three times in one text (met again within it)
    beside a string "lc", then inside a message (the outer envelope is the one kept)."""
    text = json.dumps(envelope, ensure_ascii=False)
    many = json.dumps({"values": [envelope, "lc", envelope], "again": envelope})
    inner = copy.deepcopy(MESSAGE)
    inner["kwargs"]["content"] = [envelope]
    nested = json.dumps([inner, inner])
    with shared_exts():
        for _ in range(2):
            assert decode_json_text(text) == expected
            assert decode_json_text(many) == {
                "values": [expected, "lc", expected],
                "again": expected,
            }
            message = decode_json_text(nested)
            assert message[0] == message[1] == {**ENVELOPES[0][2], "content": [expected]}


def test_a_caller_outside_a_dump_gets_its_own_objects() -> None:
    text = json.dumps({"messages": [MESSAGE]})
    with shared_exts():
        first = decode_json_text(text)["messages"][0]
        assert decode_json_text(text)["messages"][0] is first  # shared, to be read only
        assert decode_json_text(text, share=False)["messages"][0] is not first
    mine = decode_json_text(text)["messages"][0]
    again = decode_json_text(text)["messages"][0]
    assert mine == first and mine is not first and again is not mine
    mine["content"] = "changed"
    assert first["content"] == again["content"] == "hi there"
    with shared_exts():
        assert decode_json_text(text)["messages"][0] is not first  # a new memo


def test_envelopes_redis_markers_rewrite_are_not_shared() -> None:
    """convert_markers rewrites in place: a text with a RedisSaver marker has its
    envelopes converted afresh, and reads the same each time."""
    envelope = copy.deepcopy(MESSAGE)
    envelope["kwargs"]["additional_kwargs"] = {"raw": {"__bytes__": "aGk="}}
    text = json.dumps([envelope, envelope], separators=(",", ":")).encode()  # as the saver
    expected = decode_redis_json(text)
    assert expected[0]["additional_kwargs"]["raw"] != {"__bytes__": "aGk="}
    with shared_exts():
        first = decode_redis_json(text)
        second = decode_redis_json(text)
    assert first == second == expected
    assert first[0] is not second[0]


def test_an_envelope_too_deep_for_orjson_to_write_is_converted_unshared() -> None:
    envelope = copy.deepcopy(MESSAGE)
    deep: Any = "bottom"
    for _ in range(300):  # orjson reads 1024 levels, writes 254
        deep = [deep]
    envelope["kwargs"]["content"] = deep
    text = json.dumps([envelope, envelope])
    expected = decode_json_text(text)
    assert expected[0]["content"] == deep
    with shared_exts():
        assert decode_json_text(text) == expected
        assert decode_json_text(text) == expected


_RAW_ENVELOPES = [envelope for _, envelope, _ in ENVELOPES]
_STRINGS = st.text(alphabet='lc"\\é_x ', max_size=6) | st.sampled_from(["lc", '"lc"', 'a"lc'])
_KEYS = st.sampled_from(["lc", "id", "kwargs", "a", 'l"c', "é"])
_IDS = st.sampled_from([["a", "B"], ["langchain", "schema", "messages", "AIMessage"], ["x"]])
_DOCUMENTS = st.recursive(
    st.sampled_from(_RAW_ENVELOPES).map(copy.deepcopy)
    | _STRINGS
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_KEYS, inner, max_size=4)
        | st.fixed_dictionaries(
            {"lc": st.sampled_from([1, 2, "1"]), "type": st.just("constructor"), "id": _IDS},
            optional={"kwargs": st.dictionaries(_KEYS, inner, max_size=3), "args": inner},
        )
    ),
    max_leaves=16,
)


@settings(max_examples=examples(300), deadline=None)
@given(document=_DOCUMENTS, compact=st.booleans())
def test_shared_documents_read_as_when_converted_alone(document: Any, compact: bool) -> None:
    """Envelopes (nested ones too) among strings and keys spelled "lc": the walk, which
    stops once it has counted every "lc" of the text, finds all the same."""
    separators = (",", ":") if compact else None
    text = json.dumps([document, document], ensure_ascii=False, separators=separators)
    expected = decode_json_text(text)
    with shared_exts():
        assert decode_json_text(text) == expected
        assert decode_json_text(text.encode()) == expected


@pytest.mark.parametrize("escaped", ['"\\u006cc"', '"l\\u0063"'])
def test_an_lc_key_spelled_with_an_escape_is_an_envelope_shared_or_not(escaped: str) -> None:
    text = json.dumps([MESSAGE, "a\\b"], separators=(",", ":")).replace('"lc"', escaped)
    expected = [ENVELOPES[0][2], "a\\b"]
    assert decode_json_text(text) == expected
    with shared_exts():
        assert decode_json_text(text) == decode_json_text(text.encode()) == expected
