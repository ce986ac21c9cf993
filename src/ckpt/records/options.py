"""What the API's verbs take, as typed keyword sets: the CLI's options by their library
names (ckpt.api's `CheckpointStore.threads`, `dump`, `iter_prune`, `iter_copy` ...)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ckpt.records.vocabulary import Status, ThreadSort
from ckpt.records.when import When

if TYPE_CHECKING:
    from ckpt.records.migration import Step
    from ckpt.records.runs import ThreadPlanRecord

Hidden = Literal["raise", "keep"]
Strategy = Literal["keep_latest", "keep_last", "delete", "orphans"]
OnConflict = Literal["fail", "skip", "replace"]


class ThreadsQuery(TypedDict, total=False):
    """Which threads `threads` lists, in which order, how many, and whether measured
    (CheckpointStore.iter_threads)."""

    status: Status | None
    where: dict[str, str] | None
    sort: ThreadSort
    limit: int | None
    sizes: bool


class DumpFilters(TypedDict, total=False):
    """Which checkpoints `dump` streams and `dump_total` counts: the threads, a namespace,
    times or raw ids that bound them, or each namespace's newest only."""

    threads: Sequence[str]
    ns: str | None
    since: When | None
    until: When | None
    latest: bool
    since_id: str | None
    until_id: str | None


class Selection(TypedDict, total=False):
    """Which threads `prune` and `copy` take: every condition given holds (`all=True`: no
    condition, every thread). Times as ckpt.records.when reads them: a datetime, a timedelta, an
    ISO time or date, an age (`30d`), or a checkpoint id or thread."""

    threads: Sequence[str]
    older_than: When | None
    since: When | None
    status: Status | None
    where: Mapping[str, str] | None
    all: bool


class PruneOptions(Selection, total=False):
    """What `prune` takes besides the threads (CheckpointStore.iter_prune)."""

    strategy: Strategy
    keep: int
    backup: str | os.PathLike[str] | None
    apply: bool
    timeout: float | None
    on_thread: Callable[[ThreadPlanRecord], None] | None


class CopyOptions(Selection, total=False):
    """What `copy` takes besides the threads and the target (CheckpointStore.iter_copy)."""

    rename: Mapping[str, str] | None
    on_conflict: OnConflict
    redact: bool
    keep_keys: Sequence[str]
    keep_errors: bool
    renumber_versions: bool
    shallow: bool
    apply: bool
    timeout: float | None
    on_rows: Callable[[int], None] | None


class MigrateOptions(Selection, total=False):
    """What `migrate` takes besides the threads (CheckpointStore.iter_migrate)."""

    rename_channel: Mapping[str, str] | None
    drop_channel: Sequence[str]
    rename_node: Mapping[str, str] | None
    add_channel: Mapping[str, Any] | None
    transform: Mapping[str, Callable[[Any], Any]] | None
    plan: str | os.PathLike[str] | Sequence[Step] | None
    latest: bool
    backup: str | os.PathLike[str] | None
    apply: bool
    timeout: float | None
    graph: Any
