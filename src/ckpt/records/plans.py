"""A prune as data: the rows of a thread the planner reads (ckpt.ops.prune), and the plan
it returns, which a store's Writer carries out inside the transaction it read them in."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

# "orphans" deletes no checkpoint: only the rows nothing uses (`_orphans` in ckpt.ops.prune).
Strategy = Literal["keep_latest", "keep_last", "delete", "orphans"]
# The JS runtime marks DeltaChannel threads in metadata but keeps no snapshot markers
# ckpt can read (format.md §11): their chains cannot be told, so they are not pruned.
JS_DELTA_MARK: Final = "delta_writes_versioned"
# The metadata key naming a thread's DeltaChannels (format.md §3.2, 3.8).
COUNTERS: Final = "counters_since_delta_snapshot"


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One checkpoint as the planner needs it. `values` are the channels holding a value
    in this checkpoint (None: unknown, the body is encrypted without the key)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    v: int | None
    root_id: str | None  # metadata.parents[""]: the root checkpoint a subgraph call ran from
    delta_channels: frozenset[str]  # channels counters_since_delta_snapshot names
    values: frozenset[str] | None
    versions: dict[str, str]  # channel -> version, where blobs are kept apart
    size: int
    js_delta: bool = False


@dataclass(frozen=True, slots=True)
class WriteRow:
    checkpoint_ns: str
    checkpoint_id: str
    channel: str
    size: int


@dataclass(frozen=True, slots=True)
class BlobRow:
    checkpoint_ns: str
    channel: str
    version: str | None
    size: int


@dataclass(slots=True)
class ThreadRows:
    thread_id: str
    checkpoints: list[CheckpointRow]
    writes: list[WriteRow]
    blobs: list[BlobRow] = field(default_factory=list)
    # The checkpoint ids this thread's writes name that are no checkpoint of the thread but
    # are one of another thread's (writes copied from there): for the "orphans" strategy.
    foreign: frozenset[str] = frozenset()


@dataclass(slots=True)
class NamespacePlan:
    checkpoint_ns: str
    kept: dict[str, list[str]] = field(default_factory=dict)  # id -> why it stays
    deleted: list[str] = field(default_factory=list)
    deleted_bytes: int = 0
    writes: int = 0
    write_bytes: int = 0
    blobs: list[tuple[str, str | None]] = field(default_factory=list)  # (channel, version)
    blob_bytes: int = 0
    parents_cleared: list[str] = field(default_factory=list)
    # Checkpoints that are gone but whose pending writes are there: those writes go.
    orphan_writes: list[str] = field(default_factory=list)
    whole: bool = False  # the namespace goes entirely
    why: str | None = None  # why it goes entirely


@dataclass(slots=True)
class ThreadPlan:
    thread_id: str
    strategy: Strategy
    namespaces: list[NamespacePlan] = field(default_factory=list)
    refused: str | None = None  # why this thread is left alone

    @property
    def changes(self) -> bool:
        return self.refused is None and any(
            n.deleted or n.blobs or n.writes or n.parents_cleared or n.whole or n.orphan_writes
            for n in self.namespaces
        )

    def total(self, attribute: str) -> int:
        return sum(getattr(n, attribute) for n in self.namespaces)


# What a Writer calls, inside a thread's transaction, on the rows it read there.
Planner = Callable[[ThreadRows], ThreadPlan]


# -- rows nothing uses (`prune` with strategy "orphans", and `ckpt check`) -------------------

# A blob newer than every version its namespace's checkpoints name may be the value of a
# checkpoint being saved right now (PostgresSaver commits a checkpoint's blobs before the
# checkpoint itself): it is left alone while the namespace's newest checkpoint is younger
# than this, and counted as unused after.
IN_FLIGHT: Final = dt.timedelta(minutes=10)


def version_number(version: object) -> int | None:
    """The counter of a channel version as LangGraph's savers write it: an integer, or a
    string `<counter>.<hash>` (zero-padded); None for anything else."""
    if isinstance(version, int) and not isinstance(version, bool):
        return version
    if isinstance(version, str):
        head = version.partition(".")[0]
        if head.isdigit():
            return int(head)
    return None


def in_flight(
    version: object, named: int | None, newest_checkpoint_id: str | None, now: dt.datetime
) -> bool:
    """Whether a blob no checkpoint names may be the value of the checkpoint its namespace is
    saving right now: its version counts past every version its namespace's checkpoints
    name (`named`: the highest counter; LangGraph numbers each step's new versions from
    it), and the newest of those checkpoints is less than IN_FLIGHT old (unknown times
    count as old)."""
    counter = version_number(version)
    if counter is None or (named is not None and counter <= named):
        return False
    return newest_checkpoint_id is not None and recent(newest_checkpoint_id, now)


def recent(checkpoint_id: str, now: dt.datetime) -> bool:
    """Whether a checkpoint id was made less than IN_FLIGHT before `now` (its uuid6 time;
    an id that tells no time is not recent)."""
    from ckpt.decoders.ids import uuid6_time

    when = uuid6_time(checkpoint_id)
    return when is not None and now - when < IN_FLIGHT


def lost_checkpoint(checkpoint_id: str) -> bool:
    """Whether pending writes naming this id, newer than every checkpoint of their
    namespace, say a checkpoint was lost: the id is one LangGraph made (a uuid6), so a
    checkpoint was saved under it and is gone (`ckpt check`: missing-checkpoint; `prune`
    with "orphans" leaves those writes, the only trace of it)."""
    from ckpt.decoders.ids import uuid6_time

    return uuid6_time(checkpoint_id) is not None
