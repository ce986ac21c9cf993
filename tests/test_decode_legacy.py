"""Legacy JSON (format.md §2.6): lc:1 / lc:2 envelopes of checkpoint 1.0.x, and the old samples.

The envelopes below are what checkpoint 1.0.x's `JsonPlusSerializer._default` wrote for
each type (git tag checkpoint==1.0.9); LangGraph today loses several of them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckpt.decoders import decode, decode_json_text, lcjson
from ckpt.decoders.jsontext import json_document
from ckpt.errors import DecodeError
from decode_cases import ENVELOPES
from runs import examples

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("label", "envelope", "expected"), ENVELOPES, ids=[c[0] for c in ENVELOPES]
)
def test_envelopes(label: str, envelope: Any, expected: Any) -> None:
    text = json.dumps(envelope)
    assert decode_json_text(text) == expected
    assert decode("json", text.encode()) == expected
    assert json.dumps(decode_json_text(text), allow_nan=False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NaN", {"__ckpt__": "float", "value": "NaN"}),
        (
            "[Infinity, -Infinity]",
            [
                {"__ckpt__": "float", "value": "Infinity"},
                {"__ckpt__": "float", "value": "-Infinity"},
            ],
        ),
        ('"plain"', "plain"),
        ("3", 3),
    ],
)
def test_scalars_and_nonfinite_floats(text: str, expected: Any) -> None:
    assert decode_json_text(text) == expected


@pytest.mark.parametrize("text", [b"", b"{", b'{"a": }', b"\xff\xfe\x00", b"[1] x", b"1" * 5000])
def test_invalid_json(text: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_json_text(text)


def _rows(store: str, sql: str) -> list[Any]:
    with sqlite3.connect(f"file:{DATA / store}?mode=ro&immutable=1", uri=True) as connection:
        return list(connection.execute(sql))


def test_langgraph_0_2_store_json_tag() -> None:
    """checkpoint 1.0.9: `json` tag, lc envelopes, md5 channel versions (format.md §2.6, 3.4)."""
    store = "legacy_lg0.2.16_cp1.0.9_sqlite.db"
    bodies = [
        decode(tag, body)
        for tag, body in _rows(
            store, "SELECT type, checkpoint FROM checkpoints ORDER BY checkpoint_id"
        )
    ]
    assert {body["v"] for body in bodies} == {1}
    third = bodies[2]
    assert third["channel_values"]["extras"] == {
        "when": "2025-01-02T03:04:05+00:00",
        "uid": "12345678-1234-5678-1234-567812345678",
        "tags": ["a", "b"],
    }
    assert third["pending_sends"][0] == {
        "__type__": "langgraph.constants.Send",
        "node": "worker",
        "arg": {
            "call": {"name": "lookup", "args": {"q": "alpha"}, "id": "call_1", "type": "tool_call"}
        },
    }
    ai = third["channel_values"]["messages"][1]
    assert ai["__type__"] == "langchain.schema.messages.AIMessage"
    assert ai["tool_calls"][0]["id"] == "call_1"
    for (metadata,) in _rows(store, "SELECT metadata FROM checkpoints"):
        assert decode_json_text(metadata)["source"] in {"input", "loop", "update"}


def test_langgraph_0_1_store_untyped_blobs() -> None:
    """langgraph 0.1.19: no type column; untyped JSON blobs (format.md §4.1)."""
    store = "legacy_lg0.1.19_sqlite.db"
    rows = _rows(store, "SELECT checkpoint, metadata FROM checkpoints ORDER BY thread_ts")
    assert rows
    for body, metadata in rows:
        decoded = decode(None, body)
        assert decoded["v"] == 1 and "current_tasks" in decoded
        assert isinstance(decode_json_text(metadata), dict)
    values = [decode(None, value) for (value,) in _rows(store, "SELECT value FROM writes")]
    assert {
        "when": "2025-01-02T03:04:05+00:00",
        "uid": "12345678-1234-5678-1234-567812345678",
        "tags": ["a", "b"],
    } in values


def test_metadata_of_current_stores_is_plain_json() -> None:
    for (metadata,) in _rows("sqlite_checkpoints.db", "SELECT metadata FROM checkpoints"):
        decoded = decode_json_text(metadata)
        assert decoded == json.loads(metadata)


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"step": 1e400}', {"step": {"__ckpt__": "float", "value": "Infinity"}}),
        ("[-1E999, 1]", [{"__ckpt__": "float", "value": "-Infinity"}, 1]),
        # beside an integer too long for orjson, which json then reads alone
        ("[1e400, 10000000000000000000000]", [{"__ckpt__": "float", "value": "Infinity"}, 10**22]),
    ],
)
def test_a_number_past_a_floats_range_is_a_float_record(
    text: str, expected: Any, as_bytes: bool
) -> None:
    """json reads 1e400 as an infinity, with no NaN or Infinity in the text to say so (a
    metadata value of that shape reached `dump` as inf, and only its encoder's look
    made it a record)."""
    assert decode_json_text(text.encode() if as_bytes else text) == expected


_JSON_TEXT = st.characters(codec="utf-8", exclude_characters="_")  # no reserved keys
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_JSON_TEXT, max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(_JSON_TEXT, max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(150), deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans(), compact=st.booleans(), as_bytes=st.booleans())
def test_plain_json_reads_as_json_reads_it(
    value: Any, ascii_only: bool, compact: bool, as_bytes: bool
) -> None:
    # Plain JSON goes through orjson, which makes a long integer a float: where it could,
    # json reads it. Dumped as JSON, the two readings are the same text (ints stay ints).
    text: str | bytes = json.dumps(
        value, ensure_ascii=ascii_only, separators=(",", ":") if compact else None
    )
    if as_bytes:
        text = text.encode()
    expected = json.loads(text)
    assert json.dumps(decode_json_text(text)) == json.dumps(expected)


@pytest.mark.parametrize(
    "text",
    [b"1234567890123456789", b"[-9223372036854775809]", b'{"n": 123456789012345678901234567890}'],
)
def test_long_integers_stay_exact(text: bytes) -> None:
    assert json.dumps(decode_json_text(text)) == json.dumps(json.loads(text))


_MARKED_TEXT = st.lists(
    st.sampled_from(['"lc"', '"__type__"', '"__ckpt__"', "NaN", "Infinity", "\\u", '"', "_", "l"])
    | st.text(max_size=6),
    max_size=8,
).map("".join)


@settings(max_examples=examples(200), deadline=None)
@given(text=_MARKED_TEXT, pad=st.sampled_from([0, 480, 600]))
def test_the_marker_pattern_finds_what_the_marker_list_finds(text: str, pad: int) -> None:
    # Short texts take one pattern search, long ones the substring searches: both must
    # send the same texts to the full path.
    data = (" " * pad + text).encode()
    expected = not any(marker.encode() in data for marker in lcjson._NEEDS_CONVERSION)
    assert lcjson._plain(data) == expected
    assert lcjson._plain(data.decode()) == expected


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**17, max_value=10**40).map(lambda n: n * st_sign(n))
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='0123456789:[,- ab"\\\n\u00e9\ud800', max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=25), inner),
    max_leaves=12,
)


def st_sign(n: int) -> int:
    return -1 if n % 3 == 0 else 1


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES, st.sampled_from([None, 1]), st.booleans())
def test_json_document_reads_what_json_reads(
    value: Any, indent: int | None, as_bytes: bool
) -> None:
    """jsontext.json_document (Postgres JSONB, metadata: orjson where it agrees) gives
    json.loads' value, the type of every number included: integers of 19 digits and more
    stay integers; and decode_json_text reads plain JSON (no envelope) as json does."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    data: str | bytes = text.encode("utf-8", "surrogatepass") if as_bytes else text
    if as_bytes and "\ud800" in text:
        return  # not UTF-8: neither reads it
    assert repr(json_document(data)) == repr(json.loads(data))
    if "lc" not in text and "__" not in text and "\\u" not in text:
        assert repr(decode_json_text(data)) == repr(json.loads(data))
