"""The fast listing path reads the same bookkeeping as a full decode, on every real body."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import ormsgpack
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ckpt.decoders import decode, peek_checkpoint
from runs import examples


def bodies(*stores: Path) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for store in stores:
        with sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True) as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
            if "type" not in columns:
                continue
            found += [
                (t, bytes(b)) for t, b in conn.execute("SELECT type, checkpoint FROM checkpoints")
            ]
    return found


def test_peek_agrees_with_decode(sqlite_store: Path, samples: Path) -> None:
    peeked = fallbacks = 0
    for tag, body in bodies(sqlite_store, *sorted(samples.glob("*.db"))):
        fast = peek_checkpoint(tag, body)
        if fast is None:
            fallbacks += 1
            continue
        peeked += 1
        full = decode(tag, body, shallow=True)
        for key in ("v", "ts", "id", "channel_versions", "versions_seen", "updated_channels"):
            assert fast.get(key) == full.get(key), key
        assert set(fast["channel_values"]) == set(full["channel_values"])
        assert not full["channel_values"].get("__pregel_tasks")
        assert not full.get("pending_sends")
    assert peeked > 50
    assert fallbacks > 0  # pending Sends, encrypted and legacy JSON bodies take the full path


def test_peek_declines_what_it_cannot_read_faithfully() -> None:
    assert peek_checkpoint("json", b"{}") is None
    assert peek_checkpoint("msgpack+aes", b"\x00" * 40) is None
    assert peek_checkpoint("msgpack", b"\xc1") is None  # never-used byte: invalid msgpack
    assert peek_checkpoint("msgpack", b"\x93\x01\x02\x03") is None  # not a map
    assert peek_checkpoint("msgpack", b"\x81\xa5extra\x01") is None  # a key it does not know


# Leaves a body's bookkeeping may hold in a damaged or hand-made store: besides plain
# scalars, what the full decode changes (bin, NaN and infinities, ext values) and what it
# must see (reserved keys, barrier and Send channels, non-string keys).
_LEAVES = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["__type__", "__ckpt__", "join:a+b:c", "__pregel_tasks", "null"]),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.binary(max_size=4),
    st.builds(ormsgpack.Ext, st.integers(0, 7), st.binary(max_size=4)),
)
_KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["__type__", "__ckpt__", "join:a+b:c", "__pregel_tasks", "messages"]),
    st.integers(0, 3),
)
_MAPS = st.dictionaries(_KEYS, _LEAVES, max_size=4)


@settings(max_examples=examples(150), deadline=None)
@given(
    versions=_MAPS,
    seen=st.dictionaries(_KEYS, st.one_of(_MAPS, _LEAVES), max_size=3),
    values=_MAPS,
    updated=st.one_of(st.none(), st.lists(_LEAVES, max_size=3)),
    scalars=st.fixed_dictionaries({}, optional={"v": _LEAVES, "ts": _LEAVES, "id": _LEAVES}),
)
# A falsy value in the Sends channel that the full decode marks (found by hypothesis).
@example(versions={}, seen={}, values={"__pregel_tasks": b""}, updated=None, scalars={})
def test_peek_is_decode_or_declines(
    versions: dict[Any, Any],
    seen: dict[Any, Any],
    values: dict[Any, Any],
    updated: list[Any] | None,
    scalars: dict[str, Any],
) -> None:
    """Whatever the fields hold, a peek gives what the full decode gives, or nothing."""
    body = {
        **scalars,
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": seen,
        "updated_channels": updated,
    }
    payload = ormsgpack.packb(body, option=ormsgpack.OPT_NON_STR_KEYS)
    fast = peek_checkpoint("msgpack", payload)
    if fast is None:
        return
    full = decode("msgpack", payload, shallow=True)
    for key in ("v", "ts", "id", "channel_versions", "versions_seen", "updated_channels"):
        assert fast.get(key) == full.get(key), key
    assert list(fast["channel_values"]) == list(full["channel_values"])
    assert not full["channel_values"].get("__pregel_tasks")
    assert not any(str(k).startswith("join:") for k in full["channel_values"])
