"""A thread's bookkeeping for the prune planner, from the stored rows (no value decoded)."""

from __future__ import annotations

import json
from typing import Any

import ormsgpack

from ckpt.decoders.spans import body_layout
from ckpt.records.plans import COUNTERS, JS_DELTA_MARK, CheckpointRow


def metadata_facts(metadata: Any) -> tuple[str | None, frozenset[str], bool]:
    """(the root checkpoint a subgraph call ran from, the DeltaChannels counted, whether
    the JS runtime marked a DeltaChannel thread) from decoded metadata."""
    if not isinstance(metadata, dict):
        return None, frozenset(), False
    parents = metadata.get("parents")
    root = parents.get("") if isinstance(parents, dict) else None
    counters = metadata.get(COUNTERS)
    delta = frozenset(str(c) for c in counters) if isinstance(counters, dict) else frozenset()
    return (root if isinstance(root, str) else None), delta, JS_DELTA_MARK in metadata


def sqlite_row(
    ns: str,
    checkpoint_id: str,
    parent_id: str | None,
    tag: str | None,
    body: bytes,
    metadata: bytes,
    size: int,
    aes_key: bytes | None,
) -> CheckpointRow:
    """A SqliteSaver row: the body is walked for the channels holding a value (a delta
    snapshot is one), the metadata is JSON text."""
    layout = body_layout(tag, body, aes_key) if body else None
    try:
        decoded = json.loads(metadata) if metadata else {}
    except (ValueError, UnicodeDecodeError):
        decoded = None
    if decoded is None and metadata:  # serde-typed metadata (some custom savers)
        try:
            decoded = ormsgpack.unpackb(metadata, ext_hook=lambda code, data: None)
        except (ValueError, TypeError):
            decoded = None
    root, delta, js_delta = metadata_facts(decoded)
    return CheckpointRow(
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_id=parent_id,
        v=layout.v if layout else None,
        root_id=root,
        delta_channels=delta,
        values=frozenset(layout.values) if layout else None,
        versions={},
        size=size,
        js_delta=js_delta,
    )
