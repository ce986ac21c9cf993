"""Decoder cases the decoder tests share, as bytes or JSON in and the decoded value out:
each tag and ext code's layout (format.md §2.1-2.4; tests/test_decode_bytes.py) and the
lc:1 / lc:2 envelopes of checkpoint 1.0.x (format.md §2.6; tests/test_decode_legacy.py).
docs/value.schema.json must describe every value (tests/test_decode_schema.py)."""

from __future__ import annotations

from typing import Any

from ckpt.decoders import ABSENT

# (label, msgpack payload, decoded value)
EXT_CASES: list[tuple[str, bytes, Any]] = [
    (
        "ext 0 uuid.UUID: hex without dashes -> dashed string",
        b"\xc7-\x00\x93\xa4uuid\xa4UUID\xd9 12345678123456781234567812345678",
        "12345678-1234-5678-1234-567812345678",
    ),
    (
        "ext 0 decimal.Decimal -> string",
        b"\xc7\x16\x00\x93\xa7decimal\xa7Decimal\xa43.14",
        "3.14",
    ),
    (
        "ext 0 builtins.set -> sorted array",
        b"\xc7\x12\x00\x93\xa8builtins\xa3set\x93\x03\x01\x02",
        [1, 2, 3],
    ),
    (
        "ext 0 collections.deque -> array in order",
        b"\xc7\x16\x00\x93\xabcollections\xa5deque\x92\x03\x01",
        [3, 1],
    ),
    (
        "ext 0 zoneinfo.ZoneInfo -> key",
        b"\xc7 \x00\x93\xa8zoneinfo\xa8ZoneInfo\xacEurope/Paris",
        "Europe/Paris",
    ),
    (
        "ext 0 ipaddress.IPv6Network -> string",
        b"\xc7%\x00\x93\xa9ipaddress\xabIPv6Network\xad2001:db8::/32",
        "2001:db8::/32",
    ),
    (
        "ext 0 unknown class (an Enum) -> __type__ + value",
        b"\xc7\x14\x00\x93\xa8graphdef\xa5Color\xa3red",
        {"__type__": "graphdef.Color", "value": "red"},
    ),
    (
        "ext 0 pydantic SecretStr -> masked",
        b"\xc7!\x00\x93\xaepydantic.types\xa9SecretStr\xa6s3cr3t",
        {"__type__": "pydantic.types.SecretStr", "value": "**********"},
    ),
    (
        "ext 1 datetime.timedelta -> total seconds",
        b"\xc7\x18\x01\x93\xa8datetime\xa9timedelta\x93\x01\x02\x03",
        86402.000003,
    ),
    (
        "ext 1 datetime.date -> ISO date",
        b"\xc7\x15\x01\x93\xa8datetime\xa4date\x93\xcd\x07\xe9\x01\x02",
        "2025-01-02",
    ),
    (
        "ext 1 datetime.timezone holding an ext 1 timedelta -> offset string",
        b"\xc71\x01\x93\xa8datetime\xa8timezone\x91"
        b"\xc7\x1a\x01\x93\xa8datetime\xa9timedelta\x93\x00\xcd\x0e\x10\x00",
        "+01:00",
    ),
    (
        "ext 1 pathlib.PosixPath parts -> path",
        b"\xc7\x1c\x01\x93\xa7pathlib\xa9PosixPath\x93\xa1/\xa3tmp\xa1x",
        "/tmp/x",
    ),
    (
        "ext 1 re.compile [pattern, flags] -> pattern",
        b"\xc7\x13\x01\x93\xa2re\xa7compile\x92\xa4^a+$\x02",
        "^a+$",
    ),
    (
        "ext 1 langgraph.types.Send [node, arg]",
        b"\xc7\x22\x01\x93\xaflanggraph.types\xa4Send\x92\xa6worker\x81\xa1k\x01",
        {"__type__": "langgraph.types.Send", "node": "worker", "arg": {"k": 1}},
    ),
    (
        "ext 1 unknown class -> __type__ + args",
        b"\xc7\x0f\x01\x93\xa3mod\xa5Klass\x92\x01\xa1a",
        {"__type__": "mod.Klass", "args": [1, "a"]},
    ),
    (
        "ext 2 dataclass -> fields + __type__",
        b"\xc7\x17\x02\x93\xa8graphdef\xa5Point\x82\xa1x\x01\xa1y\x02",
        {"__type__": "graphdef.Point", "x": 1, "y": 2},
    ),
    (
        "ext 2 datetime.time without tzinfo -> ISO time",
        b"\xc7A\x02\x93\xa8datetime\xa4time\x86\xa4hour\r\xa6minute\x0e\xa6second\x0f"
        b"\xabmicrosecond\x10\xa6tzinfo\xc0\xa4fold\x00",
        "13:14:15.000016",
    ),
    (
        "ext 3 datetime.fromisoformat -> ISO string",
        b"\xc7;\x03\x94\xa8datetime\xa8datetime\xb92025-01-02T03:04:05+00:00\xadfromisoformat",
        "2025-01-02T03:04:05+00:00",
    ),
    (
        "ext 3 anything else -> method_call record, nothing called",
        b"\xc7\x1f\x03\x94\xa2os\xa6system\xaaecho pwned\xa8__call__",
        {
            "__ckpt__": "method_call",
            "module": "os",
            "name": "system",
            "method": "__call__",
            "arg": "echo pwned",
        },
    ),
    (
        "ext 4 pydantic v1 (3 elements) -> fields + __type__",
        b"\xc7\x0b\x04\x93\xa1m\xa3Old\x81\xa1a\x01",
        {"__type__": "m.Old", "a": 1},
    ),
    (
        "ext 5 pydantic v2 (4th element ignored) -> fields + __type__",
        b"\xc7W\x05\x94\xbdlangchain_core.messages.human\xacHumanMessage"
        b"\x82\xa7content\xa2hi\xa4type\xa5human\xb3model_validate_json",
        {
            "__type__": "langchain_core.messages.human.HumanMessage",
            "content": "hi",
            "type": "human",
        },
    ),
    (
        "ext 6 numpy little-endian int16",
        b"\xc7\x0f\x06\x94\xa3<i2\x91\x02\xa1C\xc4\x04\x01\x00\x02\x00",
        {"__type__": "numpy.ndarray", "dtype": "<i2", "shape": [2], "data": [1, 2]},
    ),
    (
        "ext 6 numpy big-endian int16",
        b"\xc7\x0f\x06\x94\xa3>i2\x91\x02\xa1C\xc4\x04\x00\x01\x00\x02",
        {"__type__": "numpy.ndarray", "dtype": ">i2", "shape": [2], "data": [1, 2]},
    ),
    (
        "ext 6 numpy Fortran order 2x2 int8",
        b"\xc7\x10\x06\x94\xa3|i1\x92\x02\x02\xa1F\xc4\x04\x01\x03\x02\x04",
        {"__type__": "numpy.ndarray", "dtype": "|i1", "shape": [2, 2], "data": [[1, 2], [3, 4]]},
    ),
    (
        "ext 6 numpy unicode dtype keeps the buffer",
        b"\xc7\x13\x06\x94\xa3<U1\x91\x02\xa1C\xc4\x08a\x00\x00\x00b\x00\x00\x00",
        {
            "__type__": "numpy.ndarray",
            "dtype": "<U1",
            "shape": [2],
            "order": "C",
            "base64": "YQAAAGIAAAA=",
        },
    ),
    (
        "ext 7 _DeltaSnapshot: the payload is the value itself",
        b"\xc7\x0e\x07\x92\xa4seed\xa7entry-1",
        {"__ckpt__": "delta_snapshot", "value": ["seed", "entry-1"]},
    ),
    (
        "unknown ext code 42 -> ext record, never None",
        b"\x81\xa1v\xd5*\x01\x02",
        {"v": {"__ckpt__": "ext", "code": 42, "base64": "AQI=", "error": "unknown ext code 42"}},
    ),
    (
        "ext 0 of the wrong shape -> ext record with the error",
        b"\xd5\x00\x91\x01",
        {
            "__ckpt__": "ext",
            "code": 0,
            "base64": "kQE=",
            "error": "expected an array of 3 elements [module, name, ...]",
        },
    ),
    (
        "ext payload that is not msgpack -> ext record with the error",
        b"\xd4\x02\xc1",
        {
            "__ckpt__": "ext",
            "code": 2,
            "base64": "wQ==",
            "error": "invalid msgpack: invalid type Reserved",
        },
    ),
]

MSGPACK_CASES: list[tuple[str, bytes, Any]] = [
    (
        "nested bin -> bytes record",
        b"\x81\xa1b\xc4\x02\x00\xff",
        {"b": {"__ckpt__": "bytes", "base64": "AP8=", "size": 2}},
    ),
    (
        "NaN and infinity -> float records",
        b"\x92\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00",
        [{"__ckpt__": "float", "value": "NaN"}, {"__ckpt__": "float", "value": "Infinity"}],
    ),
    (
        "int and nil keys -> map record",
        b"\x82\x01\xa3one\xc0\x02",
        {"__ckpt__": "map", "entries": [[1, "one"], [None, 2]]},
    ),
    (
        "array (tuple) key -> map record with a list key",
        b"\x81\x92\x01\x02\xa1x",
        {"__ckpt__": "map", "entries": [[[1, 2], "x"]]},
    ),
    (
        "a user dict holding a reserved key -> map record",
        b"\x81\xa8__type__\xa1x",
        {"__ckpt__": "map", "entries": [["__type__", "x"]]},
    ),
    ("lone surrogates were already replaced by ?", b"\xa5a ? b", "a ? b"),
]


TAG_CASES: list[tuple[str | None, bytes | None, Any]] = [
    ("null", b"", None),
    ("empty", b"", ABSENT),
    ("empty", None, ABSENT),
    (
        "bytes",
        b"\x00raw",
        {"__ckpt__": "bytes", "base64": "AHJhdw==", "size": 4, "text": "\x00raw"},
    ),
    ("bytearray", b"ba", {"__ckpt__": "bytes", "base64": "YmE=", "size": 2, "text": "ba"}),
    ("bytes", b"\xff", {"__ckpt__": "bytes", "base64": "/w==", "size": 1}),
    ("json", b'{"a": [1, NaN]}', {"a": [1, {"__ckpt__": "float", "value": "NaN"}]}),
    ("dict", b"\x01\x02", {"__ckpt__": "opaque", "tag": "dict", "size": 2, "base64": "AQI="}),
    (None, None, None),
    (None, b'{"v": 1}', {"v": 1}),
    (
        "pickle",
        b"\x80\x04\x95)\x00\x00\x00\x00\x00\x00\x00\x8c\x08__main__\x94\x8c\x0bUnpicklable"
        b"\x94\x93\x94)\x81\x94}\x94\x8c\x01x\x94K\x01sb.",
        {
            "__ckpt__": "pickle",
            "globals": ["__main__.Unpicklable"],
            "size": 52,
            "base64": "gASVKQAAAAAAAACMCF9fbWFpbl9flIwLVW5waWNrbGFibGWUk5QpgZR9lIwBeJRLAXNiLg==",
        },
    ),
]


# -- legacy JSON: what checkpoint 1.0.x's JsonPlusSerializer._default wrote (git tag
# checkpoint==1.0.9) for each type, and what ckpt shows of it


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
