"""Channel versions of every era, uuid6 checkpoint ids, pickle globals and marked-record tests."""

from __future__ import annotations

import collections
import json
import math
import os
import pickle
import sqlite3
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver

from ckpt.decoders import (
    ABSENT,
    compare_versions,
    decode,
    is_marked,
    parse_version,
    pickle_globals,
    uuid6_lower_bound,
    uuid6_time,
)
from ckpt.decoders.channel_versions import is_newer
from ckpt.errors import DecodeError
from runs import examples

DATA = Path(__file__).parent / "data"

# -- channel versions (format.md §3.4) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "counter"),
    [
        ("00000000000000000000000000000003.0.3447419818925671", 3),  # two dots
        ("00000000000000000000000000000012.0000000001.2e-05", 12),  # exponent suffix
        ("00000000000000000000000000000004.53c160028c384530473cbc23ee1bdc17", 4),  # md5
        ("00000000000000000000000000000002.", 2),  # empty suffix, checkpoint-sqlite <= 1.0.3
        ("00000000000000000000000000000000.0.0", 0),
        (7, 7),  # BaseCheckpointSaver and old MemorySaver
        ("7", 7),  # ints as Postgres TEXT
        (3.0, 3),
        (b"00000000000000000000000000000005.0.1", 5),
        ("", None),
        (".5", None),
        ("abc.1", None),
        ("-1.0", None),
        (None, None),
        (True, None),
        (float("nan"), None),
        ([1], None),
    ],
)
def test_parse_version(version: object, counter: int | None) -> None:
    assert parse_version(version) == counter


@settings(max_examples=examples(25))
@given(st.integers(0, 60))
def test_parse_version_agrees_with_the_savers(steps: int) -> None:
    saver = InMemorySaver()  # same get_next_version as SqliteSaver and PostgresSaver
    version: Any = None
    for step in range(1, steps + 2):
        version = saver.get_next_version(version, None)
        assert parse_version(version) == step


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("00000000000000000000000000000003.0.9", "00000000000000000000000000000003.0.1", 0),
        ("00000000000000000000000000000002.0.9", "00000000000000000000000000000010.0.1", -1),
        (11, "00000000000000000000000000000010.0.1", 1),
        ("00000000000000000000000000000001.", 1, 0),
        (None, 1, -1),
        (1, None, 1),
        ("x", "y", -1),
        (None, None, 0),
    ],
)
def test_compare_versions(a: object, b: object, expected: int) -> None:
    assert compare_versions(a, b) == expected
    assert compare_versions(b, a) == -expected
    assert is_newer(a, b) is (expected > 0)
    assert is_newer(b, a) is (expected < 0)


_VERSION_PARTS = ["", "0", "1", "01", "10", "003", "3", " 3", "3 ", "\u0663", "\u00b2", "a", "."]


@settings(max_examples=examples(500))
@given(
    st.one_of(st.lists(st.sampled_from(_VERSION_PARTS), max_size=4).map("".join), st.integers()),
    st.one_of(st.lists(st.sampled_from(_VERSION_PARTS), max_size=4).map("".join), st.integers()),
)
def test_is_newer_is_compare_versions_above_zero(a: object, b: object) -> None:
    # Its shortcut compares padded counters as text: the same answer, odd versions too
    # (spaces, non-ASCII digits, no counter, a counter with more digits than the other).
    assert is_newer(a, b) is (compare_versions(a, b) > 0)


# -- uuid6 checkpoint ids (format.md §3.3) ---------------------------------------------------------

UUID_EPOCH_TICKS = 0x01B21DD213814000


def make_id(ticks: int, clock_seq: int, node: int) -> str:
    """A uuid6 laid out like langgraph.checkpoint.base.id.uuid6, for a chosen time."""
    value = ((ticks >> 12) & 0xFFFFFFFFFFFF) << 80 | 6 << 76 | (ticks & 0x0FFF) << 64
    value |= (0x8000 | (clock_seq & 0x3FFF)) << 48 | node
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def ticks_of(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (
        (delta.days * 86_400 + delta.seconds) * 10_000_000
        + delta.microseconds * 10
        + UUID_EPOCH_TICKS
    )


def test_uuid6_time_of_langgraph_ids() -> None:
    before = datetime.now(UTC)
    decoded = uuid6_time(str(uuid6(clock_seq=-1)))
    assert decoded is not None
    assert before - timedelta(seconds=1) <= decoded <= datetime.now(UTC) + timedelta(seconds=1)


def test_uuid6_time_matches_ts_in_the_sample_store() -> None:
    with sqlite3.connect(
        f"file:{DATA / 'sqlite_checkpoints.db'}?mode=ro&immutable=1", uri=True
    ) as db:
        rows = list(db.execute("SELECT checkpoint_id, type, checkpoint FROM checkpoints"))
    for checkpoint_id, tag, body in rows:
        ts = datetime.fromisoformat(decode(tag, body)["ts"])
        decoded = uuid6_time(checkpoint_id)
        assert decoded is not None and timedelta(0) <= decoded - ts < timedelta(seconds=1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not-an-id",
        "12345678-1234-5678-1234-567812345678",  # version 5, not 6
        "2024-07-01T12:00:00+00:00",  # langgraph 0.0 thread_ts
        "1f1ec72c-0eda-626e-8006-7c0f0edec00",  # one digit short
        "1f1ec72c-0eda-626e-8006-7c0f0edec00g",
    ],
)
def test_uuid6_time_of_other_strings(text: str) -> None:
    assert uuid6_time(text) is None


@settings(max_examples=300)
@given(
    st.datetimes(min_value=datetime(1600, 1, 1), max_value=datetime(5000, 1, 1)),
    st.integers(-5_000_000, 5_000_000),
    st.integers(-(2**13), 2**13),
    st.integers(0, 2**48 - 1),
)
def test_uuid6_lower_bound_splits_ids_by_time(
    moment: datetime, offset_ticks: int, clock_seq: int, node: int
) -> None:
    moment = moment.replace(tzinfo=UTC)
    ticks = ticks_of(moment) + offset_ticks
    checkpoint_id = make_id(ticks, clock_seq, node)
    bound = uuid6_lower_bound(moment)
    assert (checkpoint_id >= bound) == (offset_ticks >= 0)
    assert uuid6_time(bound) == moment
    assert uuid6_time(checkpoint_id) == moment + timedelta(microseconds=offset_ticks // 10)


def test_uuid6_lower_bound_naive_is_utc_and_clamps() -> None:
    naive = datetime(2026, 11, 30, 4, 1, 43)
    assert uuid6_lower_bound(naive) == uuid6_lower_bound(naive.replace(tzinfo=UTC))
    assert (
        uuid6_lower_bound(datetime(1000, 1, 1, tzinfo=UTC))
        == "00000000-0000-6000-8000-000000000000"
    )
    assert (
        uuid6_lower_bound(datetime(9999, 1, 1, tzinfo=UTC)) < "ffffffff-ffff-7000-0000-000000000000"
    )


# -- pickle globals --------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_globals_follow_memo_and_stack_global(protocol: int) -> None:
    # The second os.system comes from the memo; protocol 4+ names it with STACK_GLOBAL.
    payload = pickle.dumps(
        [os.system, os.getcwd, collections.OrderedDict(a=1), os.system], protocol=protocol
    )
    assert pickle_globals(payload) == ["posix.system", "posix.getcwd", "collections.OrderedDict"]


@pytest.mark.parametrize(
    "name", ["memory_persistentdict.pkl", "memory_persistentdict_cp2.0.21.pkl"]
)
def test_pickle_globals_of_persistentdict_files(name: str) -> None:
    # format.md §7.2: the three globals a PersistentDict file holds.
    payload = (DATA / name).read_bytes()
    assert pickle_globals(payload) == [
        "collections.defaultdict",
        "__builtin__.dict",
        "_codecs.encode",
    ]


@pytest.mark.parametrize(
    "payload", [b"", b"\x80\x04", b"\x80\x04\x95\xff\xff\xff\xff", b"\xff\xff", b"c"]
)
def test_pickle_globals_of_malformed_pickles(payload: bytes) -> None:
    with pytest.raises(DecodeError):
        pickle_globals(payload)


def test_stack_global_with_names_built_at_run_time() -> None:
    # PROTO 4, NONE, NONE, STACK_GLOBAL, STOP: names that are not strings show as "?".
    assert pickle_globals(b"\x80\x04NN\x93.") == ["?.?"]


# -- marked records --------------------------------------------------------------------------------


def test_is_marked() -> None:
    record = decode("bytes", b"x")
    assert is_marked(record) and is_marked(record, "bytes") and not is_marked(record, "map")
    assert not is_marked({"__type__": "m.C"})
    assert not is_marked({"__ckpt__": 1})
    assert not is_marked([record])
    assert not is_marked(ABSENT)
    assert not is_marked("__ckpt__")
    assert json.dumps(record)


_PACKABLE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.floats(width=32).map(lambda x: ormsgpack.Ext(99, struct.pack(">f", x)))
    | st.text(max_size=8)
    | st.binary(max_size=4).map(lambda b: b.decode("latin-1")),
    lambda inner: st.lists(inner, max_size=70) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=100,
)


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(map(_non_finite, value))
    if isinstance(value, dict):
        return any(map(_non_finite, value.values()))
    return False


@settings(max_examples=examples(100), deadline=None)
@given(_PACKABLE)
def test_may_need_walk_never_misses_a_nan_or_an_infinity(value: Any) -> None:
    """may_need_walk looks for the byte after a float header by memchr, and gives up
    (says yes) past a few dozen: a NaN or an infinity anywhere, among any number of
    0xff / 0x7f bytes and float headers, is never missed."""
    from ckpt.decoders.msgpack import may_need_walk

    packed = ormsgpack.packb(value)
    if _non_finite(value):
        assert may_need_walk(packed)
    nan32 = b"\xca\x7f\xc0\x00\x00"
    assert may_need_walk(packed + nan32) and may_need_walk(b"\xff" * 100 + packed)


@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),
        st.floats(allow_nan=False),
        st.text(max_size=300),
        st.binary(max_size=70_000),
        st.builds(
            ormsgpack.Ext,
            st.integers(min_value=0, max_value=127),
            st.binary(max_size=70_000).filter(lambda b: len(b) not in (1, 2, 4, 8, 16)),
        ),
        st.builds(ormsgpack.Ext, st.integers(0, 127), st.sampled_from([1, 2, 4, 8, 16]).map(bytes)),
    ),
    st.binary(max_size=8),
)
@settings(max_examples=300)
def test_scalar_size_is_the_length_of_the_value_at_the_head(value: Any, after: bytes) -> None:
    """Every scalar encoding (fixed, str, bin, ext of each length field): its size from
    its head, whatever follows it; an array or map's is not known without a walk."""
    from ckpt.decoders.msgpack import scalar_size

    packed = ormsgpack.packb(value)
    assert scalar_size(packed + after) == len(packed)
    assert scalar_size(ormsgpack.packb([value]) + after) is None
    assert scalar_size(ormsgpack.packb({"k": value}) + after) is None
    assert scalar_size(b"") is None
