"""Where a finding of the integrity visitor (ckpt.scan.integrity) is, and what it asks of
one row by itself: a place record, a row's part and place, whether a body was left unread,
the blobs a checkpoint needs, and what a write costs the MySQL saver's aggregate."""

from __future__ import annotations

from typing import Any, Final

from ckpt.records.model import RawBlob, RawCheckpoint, RawWrite
from ckpt.records.plans import COUNTERS
from ckpt.records.types import PlaceRecord
from ckpt.records.vocabulary import TOO_LARGE
from ckpt.scan.rows import RawRow

MENTIONED: Final = 200  # characters of an id a finding's detail names (the place has it whole)


def mention(name: str) -> str:
    """Another thread's id as a finding's detail names it: whole up to MENTIONED
    characters, else its start and its length (a 10 MB id, said in every detail, took
    the records of `stats` past 200 MB); the place records keep ids whole."""
    if len(name) <= MENTIONED:
        return name
    return f"{name[: MENTIONED - 40]}... ({len(name):,} characters)"


def place(
    thread_id: str,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    *,
    channel: str | None = None,
    detail: str | None = None,
) -> PlaceRecord:
    return {
        "thread_id": thread_id,
        "checkpoint_ns": checkpoint_ns,
        "checkpoint_id": checkpoint_id,
        "channel": channel,
        "detail": detail,
    }


def aggregated_write(row: RawWrite) -> int:
    """The bytes one write takes in the MySQL saver's JSON_ARRAYAGG on MariaDB: the JSON
    array [task_id, channel, type, to_base64(blob), idx] and its separator. MariaDB's
    TO_BASE64 breaks lines every 76 characters, each newline escaped in JSON as two."""
    encoded = 4 * ((row.size + 2) // 3)
    newlines = max(encoded - 1, 0) // 76
    texts = len(row.task_id) + len(row.channel) + len(row.type or "") + len(str(row.idx))
    return encoded + 2 * newlines + texts + 18


def next_power(size: int) -> int:
    """A group_concat_max_len that holds `size`: the next power of two."""
    return 1 << max(size - 1, 1).bit_length()


def unread(row: RawCheckpoint) -> bool:
    """A body the census had no reason to read: encrypted (without the key, or another
    cipher), or too large to fetch."""
    tag = row.type
    return (isinstance(tag, str) and "+" in tag) or row.body.startswith(TOO_LARGE)


def needs_blob(
    body: Any, metadata: dict[str, Any] | None, versions: dict[str, str]
) -> tuple[list[str], list[str], set[str]]:
    """The channels of a PostgresSaver checkpoint that must have a blob at their version
    (format.md §5.2, 3.8): those its step updated (`updated_channels`: they hold a value)
    whose value is not inline. Then the channels whose inline `true` is a snapshot marker
    if they are DeltaChannels, and the DeltaChannels its metadata counts (the checkpoint
    holding a snapshot counts none: the caller decides for the whole namespace). A
    channel left out may rightly have no blob: an empty one, or a DeltaChannel between
    snapshots. Bodies without `updated_channels` (before langgraph 0.6.4) say nothing."""
    if not isinstance(body, dict):
        return [], [], set()
    inline = body.get("channel_values")
    inline = inline if isinstance(inline, dict) else {}
    counters = metadata.get(COUNTERS) if metadata is not None else None
    deltas = {str(c) for c in counters} if isinstance(counters, dict) else set()
    marked = [c for c, value in inline.items() if value is True and c in versions]
    updated = body.get("updated_channels")
    needed = []
    if isinstance(updated, list):
        needed = [
            c
            for c in updated
            if isinstance(c, str) and c in versions and c not in deltas and c not in inline
        ]
    return needed, marked, deltas


# What row_place reads of a row, without its bytes: (part, thread, namespace, checkpoint id,
# channel, the write's task id or the blob's version).
RowKey = tuple[str, str, str, str | None, str | None, str | None]


def row_key(row: RawRow) -> RowKey:
    if type(row) is RawBlob:
        return ("blob", row.thread_id, row.checkpoint_ns, None, row.channel, row.version)
    if type(row) is RawWrite:
        return ("write", row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.channel,
                row.task_id)  # fmt: skip
    assert isinstance(row, RawCheckpoint)
    return ("checkpoint", row.thread_id, row.checkpoint_ns, row.checkpoint_id, None, None)


def key_place(key: RowKey, at: str, detail: str | None) -> PlaceRecord:
    """The place of the row `key` names (row_place)."""
    part, thread_id, ns, checkpoint_id, channel, extra = key
    if part == "blob":
        return place(thread_id, ns, channel=channel, detail=f"blob version {extra}: {detail}")
    what = f"{at} of task {extra}" if part == "write" else at
    return place(
        thread_id,
        ns,
        checkpoint_id,
        channel=channel,
        detail=f"{what}: {detail}" if detail else what,
    )


def row_place(row: RawRow, at: str, detail: str | None) -> PlaceRecord:
    return key_place(row_key(row), at, detail)
