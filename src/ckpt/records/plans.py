"""A prune as data: the rows of a thread the planner reads (ckpt.ops.prune), and the plan
it returns, which a store's Writer carries out inside the transaction it read them in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

Strategy = Literal["keep_latest", "keep_last", "delete"]
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
            n.deleted or n.blobs or n.writes or n.parents_cleared or n.whole
            for n in self.namespaces
        )

    def total(self, attribute: str) -> int:
        return sum(getattr(n, attribute) for n in self.namespaces)


# What a Writer calls, inside a thread's transaction, on the rows it read there.
Planner = Callable[[ThreadRows], ThreadPlan]
