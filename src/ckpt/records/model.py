"""Records that flow from the store readers to the renderers: threads, checkpoints, writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from ckpt.decoders.values import Marker

# Writes that belong to no task (input Commands, update_state resumes): format.md §3.3.
NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"

# A task is finished iff it has at least one write outside these (format.md §3.7,
# langgraph/pregel/_task_status.py).
CONTROL_CHANNELS: Final = frozenset(
    {"__interrupt__", "__resume__", "__error__", "__error_source_node__"}
)
ERROR: Final = "__error__"
INTERRUPT: Final = "__interrupt__"
RESUME: Final = "__resume__"
TASKS: Final = "__pregel_tasks"
# A pending write's `idx` as the store readers give it when the stored one is not a number
# (ckpt.stores.columns): it sorts after every real write, and `ckpt check` says it.
UNREADABLE_IDX: Final = 2**62


@dataclass(frozen=True, slots=True)
class CheckpointKey:
    """The primary key of a checkpoint in every store."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str


class StoredWriteFields(Protocol):
    """A stored write's own fields, its value still encoded (ckpt.stores.split.WriteRow,
    ckpt.stores.documents.WriteFields)."""

    @property
    def task_id(self) -> str: ...
    @property
    def task_path(self) -> str: ...
    @property
    def idx(self) -> int: ...
    @property
    def channel(self) -> str: ...
    @property
    def type(self) -> str | None: ...
    @property
    def size(self) -> int: ...


# PendingWrite and Checkpoint are not frozen, though never changed once built (views derive
# changed copies with dataclasses.replace): a dump builds one of each per row, and a frozen
# dataclass's __init__ sets each field through object.__setattr__ (a Checkpoint: 3.4 us,
# 0.8 us unfrozen). unsafe_hash keeps the hash and equality by value that frozen gave.
@dataclass(slots=True, unsafe_hash=True)
class PendingWrite:
    """One row of the writes table: a task's output attached to the checkpoint it started from."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None  # the serde tag as stored ("msgpack", "null", "msgpack+aes", ...)
    value: Any  # decoded, JSON-ready (see docs/json.md)
    size: int = 0  # bytes of the stored value

    @classmethod
    def of(cls, stored: StoredWriteFields, value: Any) -> PendingWrite:
        """The write `stored` holds, with its value decoded as `value`."""
        return cls(
            stored.task_id,
            stored.task_path,
            stored.idx,
            stored.channel,
            stored.type,
            value,
            stored.size,
        )


@dataclass(frozen=True, slots=True)
class BlobRef:
    """Where a channel value lives in stores that keep values apart (Postgres, pickle folder)."""

    version: str
    type: str | None
    size: int


class NotLoaded(Marker):
    """The value of a part of a checkpoint that the store keeps but this read left out
    (`values=False`): not the same as None, which says the store keeps none."""

    name = "NOT_LOADED"


NOT_LOADED: Final = NotLoaded()


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see PendingWrite
class Checkpoint:
    """A checkpoint as LangGraph names its parts; values already decoded to plain data.

    Built once by a store reader; views derive new ones with `dataclasses.replace`.
    `channel_values` is a dict when values were loaded, NOT_LOADED when the read left them
    out, and None when the store keeps none (a single-file PersistentDict, format.md §7.2).
    `pending_writes` is None when the store keeps none.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: dict[str, Any]
    v: int | None = None
    ts: str | None = None
    channel_versions: dict[str, Any] = field(default_factory=dict)
    versions_seen: dict[str, Any] = field(default_factory=dict)
    updated_channels: list[str] | None = None
    channel_values: dict[str, Any] | NotLoaded | None = NOT_LOADED
    # Channels that hold a value (what LangGraph calls "available"), known even when values
    # were not loaded; `next` needs it. None when the store cannot tell (no values kept).
    # In the order the store keeps them: LangGraph's own channel order in SQLite bodies.
    value_channels: tuple[str, ...] | None = None
    # Whether `value_channels` is in LangGraph's channel order (which follows the graph's
    # node order): true for stores that keep the serialized body (SQLite), false for
    # Postgres (JSONB sorts keys) and the pickle layouts (values keyed by version).
    keeps_order: bool = False
    # Who wrote it: "python" (LangGraph) or "js" (LangGraph.js, which derives task ids and
    # stores Sends, interrupts and errors its own way, format.md §11).
    writer: str = "python"
    # DeltaChannels absent from channel_values, rebuilt from the ancestors when asked for
    # (ckpt.analysis.delta.rebuild): channel -> ckpt.analysis.delta.DeltaValue.
    deltas: dict[str, Any] = field(default_factory=dict)
    # The values of `join:...` barrier channels (decoded even without values: whether a
    # waiting edge fired depends on them, format.md §3.6).
    barriers: dict[str, Any] = field(default_factory=dict)
    # Values `next` needs that could not be read (the Sends or a barrier, encrypted without
    # the key or damaged): channel -> the marked record.
    unread_values: dict[str, Any] = field(default_factory=dict)
    # The body itself could not be read (encrypted without the key, undecodable, a pickle
    # we never load, a custom serializer's output): its marked record, kept visible.
    unread_body: Any = None
    # Send packets still to run: v1-v3 `pending_sends`, v4 `channel_values["__pregel_tasks"]`,
    # legacy Postgres: the parent's `__pregel_tasks` writes (format.md §3.1, 5.3). Filled whether
    # or not values were loaded, because `next` needs them.
    pending_sends: list[Any] = field(default_factory=list)
    pending_writes: list[PendingWrite] | None = None
    size: int = 0  # bytes on disk of the checkpoint row (body + metadata)
    blobs: dict[str, BlobRef] | None = None  # channel -> blob, for stores with separate blobs
    extra: dict[str, Any] = field(default_factory=dict)  # body fields we do not model

    @property
    def key(self) -> CheckpointKey:
        return CheckpointKey(self.thread_id, self.checkpoint_ns, self.checkpoint_id)

    @property
    def step(self) -> int | None:
        step = self.metadata.get("step")
        return step if isinstance(step, int) and not isinstance(step, bool) else None

    @property
    def source(self) -> str | None:
        source = self.metadata.get("source")
        return source if isinstance(source, str) else None

    @property
    def values(self) -> dict[str, Any] | None:
        """The loaded channel values, or None when not loaded or not kept."""
        values = self.channel_values
        return values if isinstance(values, dict) else None


@dataclass(slots=True)
class ThreadSummary:
    """What a store knows about one thread from aggregates plus its latest root checkpoint."""

    thread_id: str
    namespaces: list[str]
    checkpoints: int
    writes: int | None  # write rows of the whole thread; None when not measured (sizes)
    # Bytes on disk (checkpoints, metadata, blobs and writes); None when not measured
    # (`threads(sizes=False)`, the default: measuring reads every row).
    size: int | None
    latest: Checkpoint | None  # latest root checkpoint, loaded without channel values


# The parts of a store's rows that sizes count apart (ThreadBytes).
Part = Literal["checkpoint", "blob", "write"]


@dataclass(slots=True)
class ThreadBytes:
    """Rows and stored bytes of one thread, as every size ckpt shows counts them: checkpoint
    bodies with metadata, separately stored channel values (blobs), pending writes."""

    checkpoints: int = 0
    checkpoint_bytes: int = 0
    blobs: int = 0
    blob_bytes: int = 0
    writes: int = 0
    write_bytes: int = 0

    @property
    def total(self) -> int:
        return self.checkpoint_bytes + self.blob_bytes + self.write_bytes

    def add(self, part: Part, rows: int, size: int) -> None:
        """Count `rows` rows of one part, `size` bytes in all."""
        if part == "checkpoint":
            self.checkpoints += rows
            self.checkpoint_bytes += size
        elif part == "blob":
            self.blobs += rows
            self.blob_bytes += size
        else:
            self.writes += rows
            self.write_bytes += size


@dataclass(frozen=True, slots=True)
class DumpQuery:
    """Which checkpoints `dump` streams. Ids compare as strings (uuid6 sorts by time)."""

    thread_ids: tuple[str, ...] = ()
    checkpoint_ns: str | None = None
    since_id: str | None = None  # inclusive lower bound on checkpoint_id
    until_id: str | None = None  # inclusive upper bound on checkpoint_id
    latest_only: bool = False

    def id_bounds(self, id_column: str, mark: str = "%s") -> tuple[list[str], list[Any]]:
        """The SQL conditions that keep `id_column` within `since_id` and `until_id`, and
        their parameters (`mark`: the driver's placeholder)."""
        where: list[str] = []
        params: list[Any] = []
        if self.since_id is not None:
            where.append(f"{id_column} >= {mark}")
            params.append(self.since_id)
        if self.until_id is not None:
            where.append(f"{id_column} <= {mark}")
            params.append(self.until_id)
        return where, params


# -- raw rows: what `stats` and `types` scan, the stored bytes with nothing decoded -----------
#
# Not frozen, though never changed once read (dataclasses.replace makes a changed copy): a
# scan builds one per row, and a frozen dataclass's __init__ sets each field through
# object.__setattr__, six times slower (0.08 s of a 60,000-row `ckpt check`).
# unsafe_hash keeps the hash and equality by value that frozen gave.


@dataclass(slots=True, unsafe_hash=True)
class RawCheckpoint:
    """One checkpoint row as stored. `body` is the serialized checkpoint (SQLite: with its
    channel values inline; Postgres: the JSONB as text, values in blobs), empty when the
    scan was asked for sizes only. `size` counts the bytes as ThreadSummary.size does."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    type: str | None  # the body's serde tag; "jsonb" for Postgres; None for 0.1.x rows
    body: bytes
    metadata_type: str | None  # "json" (SQLite), "jsonb" (Postgres), a serde tag (pickle)
    metadata: bytes
    body_size: int
    metadata_size: int
    # Channel -> version, for stores whose values live apart (Postgres, pickle folder): which
    # blob each channel's value is. None where the versions are inside `body` (SQLite).
    channel_versions: dict[str, str] | None = None
    # What the reader saw wrong with the row as stored that the fields above no longer
    # show (a value kept as SQLite TEXT, which LangGraph's loader cannot unpack): words
    # for `ckpt check` (ckpt.scan.integrity), empty for a row as its saver writes it.
    flaws: tuple[str, ...] = ()
    # What the store's own record says against where it is kept (a RedisSaver document
    # naming another checkpoint than its key): the saver finds it by one, ckpt by the other.
    misfiled: str | None = None
    # The bytes Store.sizes counts for the row where the store measures them otherwise than
    # `size` (Redis: its document's JSON.DEBUG MEMORY), in a pass that asks for them
    # (Store.one_pass(measure=True)); None: `size`.
    measured: int | None = None
    # The body as `json_document(body)` reads it, where the reader has it at hand already
    # (a RedisJSON document parsed whole); None: read `body`. Not part of the row's value.
    parsed: Any = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int:
        return self.body_size + self.metadata_size

    @classmethod
    def kept(
        cls,
        key: CheckpointKey,
        parent: str | None,
        tag: str | None,
        body: bytes,
        metadata_type: str | None,
        metadata: bytes,
        *,
        data: bool,
        metadata_size: int | None = None,
    ) -> RawCheckpoint:
        """A checkpoint kept whole in one document or item: its bytes, or with `data`
        False only their sizes (`metadata_size`: when the metadata given is not the
        metadata as stored)."""
        return cls(
            key.thread_id,
            key.checkpoint_ns,
            key.checkpoint_id,
            parent,
            tag,
            body if data else b"",
            metadata_type,
            metadata if data else b"",
            len(body),
            len(metadata) if metadata_size is None else metadata_size,
        )


@dataclass(slots=True, unsafe_hash=True)
class RawBlob:
    """One stored channel value of a store that keeps values apart (Postgres, pickle folder)."""

    thread_id: str
    checkpoint_ns: str
    channel: str
    version: str | None  # None: the shallow Postgres schema, one blob per channel
    type: str | None
    data: bytes | None  # None when the scan was asked for sizes only
    size: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RawBlob:
        """A blob row an SQL raw scan selected in the fields' order (the payload NULL
        when sizes only were asked for)."""
        thread_id, ns, channel, version, tag, blob, size = row
        data = bytes(blob) if blob is not None else None
        return cls(thread_id, ns, channel, version, tag, data, int(size or 0))


@dataclass(slots=True, unsafe_hash=True)
class RawWrite:
    """One pending-write row as stored."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    type: str | None
    data: bytes | None  # None when the scan was asked for sizes only, or the row holds none
    size: int
    task_path: str = ""  # '' where the store keeps none (SQLite before checkpoint-sqlite 3.1.2)
    flaws: tuple[str, ...] = ()  # as RawCheckpoint.flaws
    misfiled: str | None = None  # as RawCheckpoint.misfiled
    # As RawCheckpoint.measured (0: a row Store.sizes does not count, as a RedisSaver write
    # of this thread's checkpoints filed under another thread).
    measured: int | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RawWrite:
        """A write row an SQL raw scan selected in the fields' order up to task_path (the
        payload NULL when sizes only were asked for; task_path NULL where none is kept)."""
        thread_id, ns, checkpoint_id, task_id, idx, channel, tag, blob, size, path = row
        data = bytes(blob) if blob is not None else None
        task_path = path if isinstance(path, str) else ""
        return cls(
            thread_id,
            ns,
            checkpoint_id,
            task_id,
            int(idx),
            channel,
            tag,
            data,
            int(size or 0),
            task_path,
        )


@dataclass(slots=True)
class StoreHealth:
    """Rows that point at rows which are gone, found by the store's own queries (`stats`)."""

    orphan_writes: int = 0  # write rows whose checkpoint does not exist
    orphan_write_threads: int = 0
    orphan_write_examples: list[CheckpointKey] = field(default_factory=list)
    missing_parents: int = 0  # checkpoints whose parent id names no checkpoint
    missing_parent_threads: int = 0
    # Of those, the oldest checkpoint of its namespace: the mark a prune leaves behind.
    missing_parent_oldest: int = 0
    missing_parent_examples: list[CheckpointKey] = field(default_factory=list)
    orphan_blobs: int | None = None  # blobs no checkpoint's versions name; None: no blobs
    orphan_blob_bytes: int | None = None
    namespaces: list[tuple[str, str]] = field(default_factory=list)  # every (thread, ns)


@dataclass(frozen=True, slots=True)
class SaverFacts:
    """Which saver wrote a store, from its schema (Store.saver), and what the saver of the
    current release does with it (`ckpt check`)."""

    saver: str  # the saver class, as LangGraph names it: "SqliteSaver", "PostgresSaver" ...
    releases: str  # the releases whose schema this is, in words
    evidence: tuple[str, ...]  # what says so: columns, tables, migration rows, file layouts
    # What the current saver does with it: "reads" (as it is), "migrates" (after its
    # setup() changes the schema), "cannot", or "unknown" (nothing here says).
    langgraph: str
    note: str  # that, in one line, naming the release


@dataclass(slots=True)
class WriteTotals:
    """Pending writes aggregated for `stats`: by channel, by namespace, and how many of them
    hang on the checkpoints a prune would keep."""

    by_channel: dict[str, tuple[int, int]] = field(default_factory=dict)  # (writes, bytes)
    by_namespace: dict[str, int] = field(default_factory=dict)  # checkpoint_ns -> bytes
    on_latest: tuple[int, int] = (0, 0)  # on the newest checkpoint of their namespace
    on_last: tuple[int, int] = (0, 0)  # on one of the newest `keep`


# -- channel names (format.md §3.6) ------------------------------------------------------


def trigger_node(channel: str) -> str | None:
    """The node a trigger channel wakes, for every era of channel names (format.md §3.6)."""
    if channel.startswith("branch:to:"):
        return channel[len("branch:to:") :]
    if channel.startswith("join:"):
        sources_and_node = channel[len("join:") :]
        _, colon, node = sources_and_node.rpartition(":")
        return node if colon else None
    if channel.startswith("start:"):
        return channel[len("start:") :]
    if channel.startswith("branch:") and channel.count(":") == 3:
        return channel.rsplit(":", 1)[-1]
    return None


def is_internal(channel: str) -> bool:
    """Channels LangGraph keeps for itself rather than the graph's state."""
    return channel.startswith("__") or trigger_node(channel) is not None
