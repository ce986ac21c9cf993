"""The fast listing path reads the same bookkeeping as a full decode, on every real body."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ckpt.decoders import decode, peek_checkpoint


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
