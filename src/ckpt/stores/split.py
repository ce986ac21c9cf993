"""The PostgresSaver layout, read back into checkpoints: what every store of that layout
shares (PostgresSaver, and MySQL's PyMySQLSaver, which keeps the same tables: format.md §5,
7e). A store fetches the rows in its own SQL dialect; `SplitStore` turns a checkpoint row,
the blobs its channel versions name and its writes into one decoded Checkpoint, as the
saver's own get_tuple does."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NamedTuple, TypeVar

from ckpt.decoders import decode_json_text
from ckpt.decoders.memo import here
from ckpt.errors import DecodeError
from ckpt.records.model import TASKS, BlobRef, Checkpoint, CheckpointKey, PendingWrite
from ckpt.stores.base import Store
from ckpt.stores.body import checkpoint_from_dict, decode_value, sort_writes, too_large_record

T = TypeVar("T")
# Blob payload bytes fetched (and held) at once. A batch whose values are larger is split,
# so memory stays flat and each statement short even when every checkpoint carries a long
# message list. Measured on 300 checkpoints with a 1 MB blob each: `ckpt dump` peaks at
# 65 MB RSS with 4 MB, 100 MB with 16 MB, 250 MB with whole batches; same speed.
PAYLOAD_BYTES = 4 * 1024 * 1024


class Row(NamedTuple):
    """One `checkpoints` row as the select lists below return it."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    body: Any  # the JSONB checkpoint, without channel_values when values are not wanted
    metadata: Any
    size: int
    inline_keys: list[str] | None  # channel_values keys, when body comes without them


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """A checkpoint_blobs row; its payload comes with it only for __pregel_tasks."""

    version: str | None  # None for the shallow schema, whose blobs have no version column
    type: str
    size: int
    payload: bytes | None


BlobKey = tuple[str, ...]  # (thread, ns, channel, version); shallow: (thread, ns, channel)


class WriteRow(NamedTuple):
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    blob: bytes | None
    size: int


WriteKey = tuple[str, str, str]


class Fetched(NamedTuple):
    """Blobs and writes of a batch of rows, found with them (`threads`)."""

    blobs: dict[BlobKey, StoredBlob]
    writes: dict[WriteKey, list[WriteRow]] | None


class SplitStore(Store):
    """A store of PostgresSaver's layout: `shallow` (ShallowPostgresSaver: one blob per
    channel, no versions) and `blob_versions` say how blobs are keyed."""

    # The payload group last decoded from, and its blobs' values (_blob_value).
    _decoded_blobs: tuple[dict[BlobKey, bytes | None] | None, dict[BlobKey, Any]] = (None, {})

    @property
    def shallow(self) -> bool:
        return False

    @property
    def blob_versions(self) -> bool:
        return True

    def _sort_writes(self, writes: Iterable[PendingWrite]) -> list[PendingWrite]:
        """A checkpoint's pending writes in the order its saver hands them to LangGraph:
        PostgresSaver's (task_path, task_id, idx)."""
        return sort_writes(writes)

    def _blob_key(self, row: Row, channel: str, version: Any) -> BlobKey | None:
        if not self.blob_versions:
            return (row.thread_id, row.checkpoint_ns, channel)
        text = version_text(version)
        return None if text is None else (row.thread_id, row.checkpoint_ns, channel, text)

    def _row_blob_keys(self, row: Row) -> Iterator[tuple[str, BlobKey]]:
        for channel, version in versions(row.body).items():
            key = self._blob_key(row, channel, version)
            if key is not None:
                yield channel, key

    def _payload_groups(
        self, rows: Sequence[Row], blobs: dict[BlobKey, StoredBlob]
    ) -> Iterator[tuple[list[Row], list[BlobKey]]]:
        """Consecutive rows whose blob payloads together stay under PAYLOAD_BYTES (a row
        larger than that alone), with the keys to fetch for them, each key once."""
        group: list[Row] = []
        keys: dict[BlobKey, None] = {}
        size = 0
        for row in rows:
            needed = {
                key: blobs[key].size
                for channel, key in self._row_blob_keys(row)
                if channel != TASKS
                and not channel.startswith("join:")
                and key in blobs
                and blobs[key].type != "empty"
            }
            added = sum(n for key, n in needed.items() if key not in keys)
            if group and size + added > PAYLOAD_BYTES:
                yield group, list(keys)
                group, keys, size = [], {}, 0
                added = sum(needed.values())
            group.append(row)
            keys.update(dict.fromkeys(needed))
            size += added
        if group:
            yield group, list(keys)

    def _blob_value(
        self, key: BlobKey | None, tag: str, payloads: dict[BlobKey, bytes | None]
    ) -> Any:
        """A blob's value. A blob is shared by every checkpoint still at its version
        (format.md §5.2): within `shared_exts` (a reader that only reads what it decodes,
        ckpt.decoders.memo) one decoded for a checkpoint of this payload group is given
        again to the next, as the msgpack decoder gives a message met again."""
        payload = payloads.get(key) if key is not None else None
        if key is None or here.exts is None:
            return decode_value(tag, payload, self.aes_key)
        group, decoded = self._decoded_blobs
        if group is not payloads:  # a new group (held here: its identity is not reused)
            decoded = {}
            self._decoded_blobs = (payloads, decoded)
        if key in decoded:
            return decoded[key]
        value = decoded[key] = decode_value(tag, payload, self.aes_key)
        return value

    def _write(self, raw: WriteRow) -> PendingWrite:
        return PendingWrite.of(raw, decode_value(raw.type, raw.blob, self.aes_key))

    def _sends(self, raws: Iterable[WriteRow]) -> list[Any]:
        return [w.value for w in sort_writes(self._write(r) for r in raws if r.channel == TASKS)]

    def _build(
        self,
        row: Row,
        blobs: dict[BlobKey, StoredBlob],
        payloads: dict[BlobKey, bytes | None],
        writes: dict[WriteKey, list[WriteRow]] | None,
        shallow_sends: dict[tuple[str, str], list[WriteRow]],
        *,
        values: bool,
    ) -> Checkpoint:
        key = CheckpointKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        metadata = metadata_dict(row.metadata)
        pending = (
            self._sort_writes(
                self._write(w)
                for w in writes.get((key.thread_id, key.checkpoint_ns, key.checkpoint_id), [])
            )
            if writes is not None
            else None
        )
        built = partial(
            checkpoint_from_dict,
            key,
            row.parent_checkpoint_id,
            writes=pending,
            values=values,
            size=row.size,
        )
        body = row.body
        if not isinstance(body, dict):
            return built(body, metadata)
        body = dict(body)
        inline = body.pop("channel_values", None)
        # format.md §5.3: the JSONB's inline primitives first, then blobs override them. Without
        # values, placeholders stand in: only which channels hold a value matters then.
        channel_values: dict[str, Any]
        if values:
            channel_values = dict(inline) if isinstance(inline, dict) else {}
        else:
            channel_values = dict.fromkeys(row.inline_keys or ())
        refs: dict[str, BlobRef] = {}
        for channel, version in versions(body).items():
            blob_key = self._blob_key(row, channel, version)
            blob = blobs.get(blob_key) if blob_key is not None else None
            if blob is None:
                continue
            refs[channel] = BlobRef(
                version=blob.version if blob.version is not None else str(version),
                type=blob.type,
                size=blob.size,
            )
            if blob.type == "empty":
                # A placeholder for "no value" (format.md §2.1): LangGraph drops it, keeping
                # any inline value (base.py:578-587).
                continue
            # An inline `true` with a blob behind it is a DeltaChannel snapshot marker; the
            # blob holds the value (format.md §3.8, 8.5).
            if channel == TASKS or channel.startswith("join:"):
                # Needed for `next` even without values: the Sends, and barrier states.
                channel_values[channel] = decode_value(blob.type, blob.payload, self.aes_key)
            elif values:
                channel_values[channel] = self._blob_value(blob_key, blob.type, payloads)
            else:
                channel_values[channel] = None
        if is_legacy(body) and not body.get("pending_sends"):
            # v<4 JSONB keeps `pending_sends: []`; the Sends are the parent's
            # __pregel_tasks writes (format.md §3.1, 5.3; shallow: format.md §6).
            if self.shallow:
                sends = self._sends(shallow_sends.get((row.thread_id, row.checkpoint_ns), []))
            elif row.parent_checkpoint_id and writes is not None:
                parent = (row.thread_id, row.checkpoint_ns, row.parent_checkpoint_id)
                sends = self._sends(writes.get(parent, []))
            else:
                sends = []
            if sends:
                body["pending_sends"] = sends
        return built(
            body,
            metadata,
            channel_values=channel_values,
            blobs=refs,
            # LangGraph.js numbers versions with plain integers, PostgresSaver never does.
            js_if_int_versions=True,
        )


# Metadata whose text is longer than this is not fetched (issue 29): the server measures it
# and sends a string saying so instead, which reads as a `too_large` record (docs/json.md).
# PostgresSaver's metadata is always an object, so no real row holds such a string.
METADATA_LIMIT: Final = 16 << 20
TOO_LARGE_PREFIX: Final = "\u2063ckpt-too-large "  # an invisible separator: no metadata starts so


def metadata_dict(raw: Any) -> dict[str, Any]:
    """Metadata is JSONB, already a dict. Only legacy metadata (langgraph <= 0.4) has
    `writes`, holding full values as LangChain envelopes (format.md §3.2): those are decoded
    as for SQLite, so both stores show the same values. One too large to fetch (_METADATA)
    is a `too_large` record."""
    if raw is None:
        return {}
    if isinstance(raw, str) and raw.startswith(TOO_LARGE_PREFIX):
        return too_large_record(int(raw[len(TOO_LARGE_PREFIX) :]))
    if not isinstance(raw, dict):
        return {"value": raw}
    if "writes" not in raw:
        return raw
    try:
        converted = decode_json_text(json.dumps(raw))
    except DecodeError:
        return raw
    return converted if isinstance(converted, dict) else raw


def versions(body: Any) -> dict[str, Any]:
    versions = body.get("channel_versions") if isinstance(body, dict) else None
    return versions if isinstance(versions, dict) else {}


def is_legacy(body: Any) -> bool:
    """Checkpoint format v1-v3 (before langgraph 0.5), whose Sends are not a channel value."""
    v = body.get("v") if isinstance(body, dict) else None
    return isinstance(v, int) and not isinstance(v, bool) and v < 4


def version_text(version: Any) -> str | None:
    """A version as `jsonb_each_text` renders it, which is how PostgresSaver joins blobs
    (format.md §3.4: strings today, plain ints from custom savers)."""
    if isinstance(version, str):
        return version
    if isinstance(version, int) and not isinstance(version, bool):
        return str(version)
    return None


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def columnar(keys: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Tuples to one list per column, for `unnest(%s, %s, ...)`."""
    return [[key[i] for key in keys] for i in range(width)]


# -- what the finds share ---------------------------------------------------------------------


def fragment_condition(
    fragment: str, id_column: str, thread_column: str, thread_id: str | None
) -> tuple[str, list[Any]]:
    """The condition (`%s` parameters) that finds the checkpoint ids starting or ending
    with `fragment`, its LIKE wildcards escaped, in the thread `thread_id` when given."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    condition = f"({id_column} LIKE %s OR {id_column} LIKE %s)"
    params: list[Any] = [escaped + "%", "%" + escaped]
    if thread_id is not None:
        condition += f" AND {thread_column} = %s"
        params.append(thread_id)
    return condition, params
