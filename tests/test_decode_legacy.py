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
from ckpt.errors import DecodeError

DATA = Path(__file__).parent / "data"


def lc2(
    module_and_name: list[str], *, method: Any = None, args: Any = None, kwargs: Any = None
) -> dict[str, Any]:
    return {
        "lc": 2,
        "type": "constructor",
        "id": module_and_name,
        "method": method,
        "args": args if args is not None else [],
        "kwargs": kwargs if kwargs is not None else {},
    }


def td(days: int, seconds: int, microseconds: int) -> dict[str, Any]:
    return lc2(["datetime", "timedelta"], args=[days, seconds, microseconds])


ENVELOPES: list[tuple[str, Any, Any]] = [
    (
        "lc:1 message: the legacy LangChain path and the non-default fields",
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "hi there", "type": "human", "id": "human-1"},
        },
        {
            "__type__": "langchain.schema.messages.HumanMessage",
            "content": "hi there",
            "type": "human",
            "id": "human-1",
        },
    ),
    (
        "lc:1 secret: only the id",
        {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]},
        {"__ckpt__": "secret", "id": ["OPENAI_API_KEY"]},
    ),
    (
        "lc:1 not_implemented",
        {"lc": 1, "type": "not_implemented", "id": ["mod", "Thing"], "repr": "Thing()"},
        {"__ckpt__": "not_implemented", "id": ["mod", "Thing"], "repr": "Thing()"},
    ),
    (
        "lc:2 datetime with method fromisoformat (LangGraph now returns None)",
        lc2(["datetime", "datetime"], method="fromisoformat", args=["2025-01-02T03:04:05+00:00"]),
        "2025-01-02T03:04:05+00:00",
    ),
    (
        "lc:2 UUID",
        lc2(["uuid", "UUID"], args=["12345678123456781234567812345678"]),
        "12345678-1234-5678-1234-567812345678",
    ),
    ("lc:2 set: sorted", lc2(["builtins", "set"], args=[["b", "a"]]), ["a", "b"]),
    ("lc:2 deque: in order", lc2(["collections", "deque"], args=[[3, 1]]), [3, 1]),
    ("lc:2 Decimal", lc2(["decimal", "Decimal"], args=["3.14"]), "3.14"),
    ("lc:2 timedelta", td(0, 90, 5), 90.000005),
    ("lc:2 date", lc2(["datetime", "date"], args=[2025, 1, 2]), "2025-01-02"),
    ("lc:2 timezone, nameless", lc2(["datetime", "timezone"], args=[td(0, 3600, 0)]), "+01:00"),
    ("lc:2 timezone.utc", lc2(["datetime", "timezone"], args=[td(0, 0, 0)]), "UTC"),
    (
        "lc:2 timezone, named",
        lc2(["datetime", "timezone"], args=[td(0, 19800, 0), "IST"]),
        "IST",
    ),
    ("lc:2 ZoneInfo", lc2(["zoneinfo", "ZoneInfo"], args=["Europe/Paris"]), "Europe/Paris"),
    (
        "lc:2 time with a timezone",
        lc2(
            ["datetime", "time"],
            args=[13, 14, 15, 16, lc2(["datetime", "timezone"], args=[td(-1, 82800, 0)])],
            kwargs={"fold": 0},
        ),
        "13:14:15.000016-01:00",
    ),
    (
        "lc:2 time with a ZoneInfo",
        lc2(
            ["datetime", "time"],
            args=[12, 0, 0, 0, lc2(["zoneinfo", "ZoneInfo"], args=["Europe/Paris"])],
            kwargs={"fold": 0},
        ),
        "12:00:00[Europe/Paris]",
    ),
    (
        "lc:2 naive time",
        lc2(["datetime", "time"], args=[1, 2, 3, 0, None], kwargs={"fold": 0}),
        "01:02:03",
    ),
    ("lc:2 Path", lc2(["pathlib", "Path"], args=["/", "tmp", "x"]), "/tmp/x"),
    ("lc:2 re.compile", lc2(["re", "compile"], args=["^a+$", 32]), "^a+$"),
    ("lc:2 ipaddress", lc2(["ipaddress", "IPv4Address"], args=["10.0.0.1"]), "10.0.0.1"),
    (
        "lc:2 bytes via fromhex",
        lc2(["builtins", "bytes"], method="fromhex", args=["00ff"]),
        {"__ckpt__": "bytes", "base64": "AP8=", "size": 2},
    ),
    (
        "lc:2 pydantic model, method [None, model_construct]",
        lc2(["graphdef", "Profile"], method=[None, "model_construct"], kwargs={"name": "ann"}),
        {"__type__": "graphdef.Profile", "name": "ann"},
    ),
    (
        "lc:2 dataclass",
        lc2(["graphdef", "Point"], kwargs={"x": 1, "y": 2}),
        {"__type__": "graphdef.Point", "x": 1, "y": 2},
    ),
    (
        "lc:2 Enum",
        lc2(["graphdef", "Color"], args=["red"]),
        {"__type__": "graphdef.Color", "value": "red"},
    ),
    (
        "lc:2 legacy langgraph.constants.Send",
        lc2(["langgraph", "constants", "Send"], kwargs={"node": "worker", "arg": {"k": 1}}),
        {"__type__": "langgraph.constants.Send", "node": "worker", "arg": {"k": 1}},
    ),
    (
        "lc:2 with another method: shown, not called",
        lc2(["os", "system"], method="__call__", args=["echo pwned"]),
        {
            "__ckpt__": "method_call",
            "module": "os",
            "name": "system",
            "method": "__call__",
            "arg": "echo pwned",
        },
    ),
    (
        "lc:2 with a list of methods, the first one named",
        lc2(["os", "system"], method=["__call__", None], args=["x"]),
        {
            "__ckpt__": "method_call",
            "module": "os",
            "name": "system",
            "method": "__call__",
            "arg": "x",
        },
    ),
    (
        "lc:2 naming Send the wrong way stays a plain map",
        lc2(["langgraph", "types", "Send"], args=[1, 2, 3, 4]),
        lc2(["langgraph", "types", "Send"], args=[1, 2, 3, 4]),
    ),
    (
        "a user dict holding a reserved key",
        {"__type__": "not ours", "n": 1},
        {"__ckpt__": "map", "entries": [["__type__", "not ours"], ["n", 1]]},
    ),
    (
        "envelopes nested in plain data",
        {"a": [lc2(["uuid", "UUID"], args=["0" * 32])], "b": {"c": td(1, 0, 0)}},
        {"a": ["00000000-0000-0000-0000-000000000000"], "b": {"c": 86400.0}},
    ),
]


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


@settings(max_examples=300, deadline=None)
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


@settings(max_examples=400, deadline=None)
@given(text=_MARKED_TEXT, pad=st.sampled_from([0, 480, 600]))
def test_the_marker_pattern_finds_what_the_marker_list_finds(text: str, pad: int) -> None:
    # Short texts take one pattern search, long ones the substring searches: both must
    # send the same texts to the full path.
    data = (" " * pad + text).encode()
    expected = not any(marker.encode() in data for marker in lcjson._NEEDS_CONVERSION)
    assert lcjson._plain(data) == expected
    assert lcjson._plain(data.decode()) == expected
