"""Hostile sizes and shapes give DecodeError (never another exception, a hang or a crash).

Plus fuzzing with hypothesis: random bytes and mutated real blobs, under every tag; the
longer run is bench/fuzz.py (`make fuzz`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckpt.decoders import ABSENT, decode, is_marked
from ckpt.decoders.depth import max_depth
from ckpt.errors import DecodeError
from ckpt.records.encode import ndjson_line
from hostile import nested_ext
from runs import examples, long_run

DATA = Path(__file__).parent / "data"
TAGS = ["msgpack", "json", "pickle", None, "msgpack+aes", "bytes", "null", "empty", "weird"]
KEY = b"0123456789abcdef"


def pack(value: Any) -> bytes:
    return ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)


@pytest.mark.parametrize("arrays", [0, 1, 14, 250, 255, 256, 1_020, 65_535])
def test_nested_ext_is_ext_packed_inside_ext(arrays: int) -> None:
    """hostile.nested_ext writes its headers itself (in one pass): the same bytes as
    ormsgpack packing each level around the last, across every ext header size."""
    for code, inner in ((1, b"\x01"), (7, b""), (5, nested_ext(2, 3))):
        payload = inner
        for levels in range(1, 30):
            payload = pack(ormsgpack.Ext(code, b"\x91" * arrays + payload))
            assert nested_ext(levels, arrays, code, inner) == payload, (levels, code)


def decodes_or_refuses(tag: str | None, payload: bytes, **options: Any) -> Any:
    """The fuzz property: JSON-ready data (or ABSENT), or DecodeError; nothing else."""
    try:
        value = decode(tag, payload, **options)
    except DecodeError as exc:
        assert str(exc)
        return exc
    if value is not ABSENT:
        json.dumps(value, allow_nan=False)
        # What dump writes of decoded values without a look first (ndjson_line):
        # orjson's text is the checked encoder's.
        assert ndjson_line(value, decoded=True) == ndjson_line(value)
    return value


def real_blobs() -> list[tuple[str, bytes]]:
    blobs: list[tuple[str, bytes]] = []
    for store in ("sqlite_checkpoints.db", "sqlite_delta.db", "legacy_lg0.2.16_cp1.0.9_sqlite.db"):
        with sqlite3.connect(f"file:{DATA / store}?mode=ro&immutable=1", uri=True) as connection:
            rows = connection.execute(
                "SELECT type, checkpoint FROM checkpoints UNION ALL SELECT type, value FROM writes"
            )
            blobs.extend((tag, payload) for tag, payload in rows if payload)
    return blobs


BLOBS = real_blobs()


# -- depth ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"\x91" * 100_000 + b"\x01",
        b"\x81\xa1k" * 100_000 + b"\x01",
        b"\xdc\x00\x01" * 100_000 + b"\xc0",
        nested_ext(100_000, 0),
        nested_ext(2_000, 1),
        nested_ext(50, 1_000),  # crashes LangGraph's loader (C stack overflow)
        nested_ext(15, 1_020),
        nested_ext(6, 1_020),
        nested_ext(20, 1_000, code=7),
        nested_ext(3, 1_000, code=5, inner=nested_ext(10, 1_000)),
        b"\x91" * 1_000 + nested_ext(8, 1_000),
    ],
    ids=[
        "arrays 100k",
        "maps 100k",
        "array16 100k",
        "ext 100k",
        "ext 2k",
        "ext 50x1000",
        "ext 15x1020",
        "ext 6x1020",
        "delta 20x1000",
        "mixed codes",
        "arrays then ext",
    ],
)
def test_deep_nesting_is_refused(payload: bytes) -> None:
    started = time.process_time()
    with pytest.raises(DecodeError, match="deep|Recursion"):
        decode("msgpack", payload)
    assert time.process_time() - started < 5


def test_deep_nesting_is_refused_in_a_thread_too() -> None:
    # Worker threads have the same 8 MB stack on Linux; the budget leaves room to spare.
    outcome: list[object] = []

    def work() -> None:
        for payload in (nested_ext(50, 1_000, code=7), nested_ext(5, 1_020, code=7)):
            try:
                outcome.append(decode("msgpack", payload))
            except DecodeError as exc:
                outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert isinstance(outcome[0], DecodeError)
    assert isinstance(outcome[1], dict)  # 5 x 1020 levels still fit, and decode
    assert outcome[1]["__ckpt__"] == "delta_snapshot"


@pytest.mark.parametrize(
    ("payload", "depth"),
    [
        (nested_ext(99, 10, code=7), 99 * 11),  # measured, and shallow enough to pass
        (b"\x91" * 1_000 + nested_ext(5, 1_000, code=7), 1_000 + 5 * 1_001),
    ],
)
def test_legitimately_deep_values_still_decode(payload: bytes, depth: int) -> None:
    value = decode("msgpack", payload)
    assert isinstance(value, list | dict)
    assert not any(
        is_marked(item, "ext")
        for item in (value, value.get("value") if isinstance(value, dict) else None)
    )
    assert max_depth(payload) == depth


def test_deep_big_payloads_are_measured_not_refused() -> None:
    # Ext payloads over 6 KB, each holding the next: estimated at 1024 levels each for the
    # first few, then measured, so that such values decode although they are shallow.
    node: Any = {"v": 1}
    for _ in range(12):
        node = ormsgpack.Ext(2, pack(["mod", "Node", {"pad": "x" * 7_000, "next": node}]))
    payload = pack(node)
    value = decode("msgpack", payload)
    for _ in range(12):
        assert value["__type__"] == "mod.Node"
        value = value["next"]
    assert value == {"v": 1}


def test_json_nesting_is_refused() -> None:
    with pytest.raises(DecodeError, match="deep"):
        decode("json", b"[" * 100_000 + b"]" * 100_000)


# -- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"\xc6\xff\xff\xff\xff",  # bin 32 of 4 GB
        b"\xdb\xff\xff\xff\xff",  # str 32
        b"\xdd\xff\xff\xff\xff",  # array 32 of 4 G items
        b"\xdf\xff\xff\xff\xff",  # map 32
        b"\xc9\xff\xff\xff\xff\x05",  # ext 32
        b"\x91\xc9\xff\xff\xff\xff\x02abc",
        b"\xdd\xff\xff\xff\xff" + b"\xc0" * 1_000,
    ],
)
def test_length_prefixes_claiming_4_gb(payload: bytes) -> None:
    started = time.process_time()
    with pytest.raises(DecodeError):
        decode("msgpack", payload)
    # A guard against allocating the claimed 4 GB first (minutes), not a speed claim.
    assert time.process_time() - started < 10


def test_numpy_shapes_that_do_not_match_the_buffer() -> None:
    for shape in ([2**40], [2**31, 2**31], [0, 2**40], [1] * 100, [-1]):
        value = decode("msgpack", pack(ormsgpack.Ext(6, pack(["<i4", shape, "C", b"\0" * 8]))))
        assert value["__ckpt__"] == "ext", shape


def test_huge_empty_numpy_shape() -> None:
    value = decode("msgpack", pack(ormsgpack.Ext(6, pack(["<f8", [10**9, 0], "C", b""]))))
    assert value["__ckpt__"] == "ext"


# -- truncation ------------------------------------------------------------------------------


def _largest(tag: str) -> bytes:
    return max((payload for blob_tag, payload in BLOBS if blob_tag == tag), key=len)


@pytest.mark.parametrize("tag", ["msgpack", "json"])
def test_every_truncation_of_a_real_blob_is_refused(tag: str) -> None:
    blob = _largest(tag)
    assert len(blob) > 1_000
    for end in range(len(blob)):
        with pytest.raises(DecodeError):
            decode(tag, blob[:end])


def test_every_truncation_of_a_pickle_is_refused() -> None:
    blob = (DATA / "memory_persistentdict.pkl").read_bytes()
    for end in range(0, len(blob), 7):
        with pytest.raises(DecodeError):
            decode("pickle", blob[:end])


def test_truncated_encrypted_values() -> None:
    with pytest.raises(DecodeError, match="shorter"):
        decode("msgpack+aes", b"\x00" * 31, aes_key=KEY)
    # Longer but cut: the MAC check fails, which is all AES-EAX can say.
    assert decode("msgpack+aes", b"\x00" * 40, aes_key=KEY)["reason"] == "wrong key"


# -- fuzzing -------------------------------------------------------------------------------

# The same examples on every run of make test (the profile's derandomize; make fuzz draws
# new ones), and five times as many in a long run.
FUZZ = settings(
    max_examples=examples(1_500, 7_500),
    deadline=2_000 if long_run() else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(st.sampled_from(TAGS), st.binary(max_size=300))
def test_random_bytes(tag: str | None, payload: bytes) -> None:
    decodes_or_refuses(tag, payload)
    decodes_or_refuses(tag, payload, aes_key=KEY, shallow=True)


@st.composite
def mutated_blobs(draw: st.DrawFn) -> tuple[str, bytes]:
    tag, blob = draw(st.sampled_from(BLOBS))
    data = bytearray(blob)
    for _ in range(draw(st.integers(1, 8))):
        action = draw(st.sampled_from(["flip", "set", "insert", "delete", "splice"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0xC1, 0xC4, 0xC7, 0xCB, 0xD4, 0xDD, 0xFF]))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 6))]
        else:
            other = draw(st.sampled_from(BLOBS))[1]
            start = draw(st.integers(0, len(other) - 1))
            data[at:at] = other[start : start + draw(st.integers(1, 64))]
    return tag, bytes(data)


@FUZZ
@given(mutated_blobs())
def test_mutated_real_blobs(blob: tuple[str, bytes]) -> None:
    tag, payload = blob
    decodes_or_refuses(tag, payload)
    decodes_or_refuses(tag, payload, shallow=True)
    decodes_or_refuses("msgpack" if tag == "json" else "json", payload)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary(),
        lambda children: (
            st.lists(children, max_size=3)
            | st.tuples(st.integers(0, 9), children).map(
                lambda pair: ormsgpack.Ext(pair[0], pack(pair[1]))
            )
        ),
        max_leaves=20,
    )
)
def test_ext_values_of_any_code_and_content(value: Any) -> None:
    # Structurally valid msgpack, with ext values of every code holding anything.
    decodes_or_refuses("msgpack", pack(value))


def test_negative_ext_codes_are_kept() -> None:
    # -1 is msgpack's timestamp extension; LangGraph never writes it and returns None.
    assert decode("msgpack", b"\x91\xd6\xff\x00\x00\x00\x01") == [
        {"__ckpt__": "ext", "code": -1, "base64": "AAAAAQ==", "error": "unknown ext code -1"}
    ]


def test_non_string_keys_at_every_level_take_linear_time() -> None:
    # Each level's kwargs hold the next level, then an int key, so each level is read a
    # second time accepting non-string keys (format.md §2.2). Nested values are replayed, not
    # decoded again: without that, 99 levels would take 2**99 steps.
    node: Any = 1
    for _ in range(99):
        node = ormsgpack.Ext(2, pack(["m", "N", {"a": node, 1: 2}]))
    started = time.process_time()
    value = decode("msgpack", pack(node))
    assert time.process_time() - started < 2
    for _ in range(99):
        assert value["__type__"] == "m.N"
        entries = dict(value["kwargs"]["entries"])
        assert entries[1] == 2
        value = entries["a"]
    assert value == 1


# -- resource caps (docs/security.md, "Resource bounds") ------------------------------------


def test_tiny_ext_values_past_the_expansion_budget_are_too_large() -> None:
    from ckpt.decoders.msgpack import MIN_EXTS
    from ckpt.errors import TooLarge

    item = pack(ormsgpack.Ext(0, b"\x00"))
    started = time.process_time()
    with pytest.raises(TooLarge, match="too large"):
        decode("msgpack", b"\xdd" + (2_000_000).to_bytes(4, "big") + item * 2_000_000)
    assert time.process_time() - started < 5
    # Just under the budget the same shape still decodes, one record per ext value.
    fitting = MIN_EXTS
    value = decode("msgpack", b"\xdd" + fitting.to_bytes(4, "big") + item * fitting)
    assert len(value) == fitting


def test_messages_are_far_inside_the_expansion_budget() -> None:
    message = ormsgpack.Ext(
        5, pack(["langchain_core.messages.ai", "AIMessage", {"content": "ok", "id": "m"}])
    )
    payload = pack({"messages": [message] * 50_000})
    assert len(decode("msgpack", payload)["messages"]) == 50_000


def test_pickle_bombs_are_refused_before_unpickling() -> None:
    import io

    from ckpt.errors import StoreCorrupt
    from ckpt.stores.pickle.unpickler import load_pickle
    from hostile import PICKLES

    for name in ("hash-bomb", "memo-bomb", "hash-bomb-p2", "memo-bomb-p2"):
        started = time.process_time()
        with pytest.raises(StoreCorrupt, match="too large"):
            load_pickle(io.BytesIO(PICKLES[name]), source=name)
        assert time.process_time() - started < 10, name  # unguarded: past 30 s
    # Shared references that stay small still load.
    small = b"\x80\x04]\x94K\x01a" + b"](h\x00h\x00e\x94" + b"."
    assert load_pickle(io.BytesIO(small), source="small") == [[1], [1]]


def test_lists_too_long_to_align_are_one_change() -> None:
    from ckpt.analysis.changes import ALIGN_LIMIT, diff_values

    size = int(ALIGN_LIMIT**0.5) + 10
    started = time.process_time()
    changes = diff_values({"x": list(range(size))}, {"x": [-n for n in range(1, size + 1)]})
    assert time.process_time() - started < 5
    assert [(c.kind, c.pointer) for c in changes] == [("changed", "/x")]
