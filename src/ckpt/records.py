"""The records ckpt shows: one TypedDict per shape (docs/json.md), built here from the
model and the analysis, and nowhere else.

Every view takes these records: the JSON and NDJSON outputs print them as they are, the
human views (ckpt.render) lay them out, and the Python API (`ckpt.open`) returns them.
Status, `next`, tasks and interrupts are computed once, in ckpt.analysis, and carried by
the records; no view derives them again.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

from ckpt.analysis import (
    checkpoint_tasks,
    failed_tasks,
    next_at,
    raised_interrupts,
    status_of,
    still_to_run,
    waiting_interrupts,
    why_next_unknown,
    write_outcomes,
)
from ckpt.decoders import uuid6_time
from ckpt.model import Checkpoint, PendingWrite, ThreadSummary
from ckpt.tasks import InterruptInfo, Task
from ckpt.vocabulary import Status


class WriteRecord(TypedDict):
    """A pending write: a task's output stored on the checkpoint it started from."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    value: Any


class InterruptRecord(TypedDict):
    """An `interrupt()`: the id `Command(resume={id: ...})` needs, and its answer."""

    id: str | None
    value: Any
    response_schema: Any
    answered: bool
    answer: NotRequired[Any]  # only when the task's __resume__ write holds it


class TaskRecord(TypedDict):
    """A task due at a checkpoint (LangGraph's PregelTask) with what its writes say."""

    id: str
    name: str
    path: str
    state: str  # done | failed | interrupted | to_run
    finished: bool
    error: Any
    interrupts: list[InterruptRecord]
    send_index: int | None
    input: Any
    subgraph_ns: str | None


class DeltaWriteRecord(TypedDict):
    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    value: Any


class DeltaRecord(TypedDict):
    """A DeltaChannel rebuilt from its snapshot and the writes since (ckpt.delta)."""

    snapshot_checkpoint_id: str | None
    writes: list[DeltaWriteRecord]
    reducer: str | None
    complete: bool
    value: NotRequired[Any]  # only when ckpt could apply the reducer


class ThreadRecord(TypedDict):
    """One thread of `ckpt threads`: aggregates and its latest state (`get_state()`)."""

    thread_id: str
    namespaces: list[str]
    checkpoints: int
    pending_writes: int
    writes: int
    checkpoint_id: str | None
    step: int | None
    source: str | None
    updated_at: str | None
    status: Status
    next: list[str] | None
    errors: list[Any]
    interrupts: list[InterruptRecord]
    size: int
    metadata: dict[str, Any]


class CheckpointRecord(TypedDict):
    """One checkpoint of `show`, `history`, `dump`: LangGraph's own key names, and what
    `get_state(checkpoint_id)` says of it. Body fields ckpt does not model are added
    under their own names (docs/json.md)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    v: int | None
    ts: str | None
    metadata: dict[str, Any]
    channel_versions: dict[str, Any]
    versions_seen: dict[str, Any]
    updated_channels: list[str] | None
    next: list[str] | None
    next_unknown: NotRequired[str]  # why `next` is null
    tasks: list[TaskRecord] | None
    interrupts: list[InterruptRecord]
    pending_sends: list[Any]
    pending_writes: list[WriteRecord] | None
    size: int
    channel_values: NotRequired[dict[str, Any] | None]  # with values only
    delta_channels: NotRequired[dict[str, DeltaRecord]]  # with values, when there are some
    checkpoint: NotRequired[Any]  # the body, when it could not be read


class SubgraphRecord(TypedDict):
    checkpoint_ns: str
    chain: list[HistoryNodeRecord]


class HistoryNodeRecord(TypedDict):
    """One checkpoint in the history tree: its record, the forks that leave it, and the
    subgraph runs its tasks made (ckpt.history)."""

    checkpoint: CheckpointRecord
    forks: list[list[HistoryNodeRecord]]
    subgraphs: list[SubgraphRecord]


class VersionColumn(TypedDict):
    checkpoint_id: str
    short_id: str
    step: int | None
    source: str | None


class BlobRecord(TypedDict):
    version: str
    type: str | None
    size: int


class VersionCell(TypedDict):
    version: Any
    counter: int | None
    moved: bool
    by: list[str]  # the tasks whose writes moved it
    blob: NotRequired[BlobRecord]
    shared_blob: NotRequired[bool]


class VersionRow(TypedDict):
    channel: str
    versions: list[VersionCell | None]


class VersionMatrix(TypedDict):
    """`ckpt versions`: which step moved each channel's version, and who moved it."""

    earlier_checkpoints: int
    thread_id: str | None
    checkpoint_ns: str
    checkpoints: list[VersionColumn]
    channels: list[VersionRow]


class PatchOperation(TypedDict):
    """One RFC 6902 operation of `ckpt diff --json`."""

    op: Literal["add", "remove", "replace"]
    path: str
    value: NotRequired[Any]


# -- ckpt stats (docs/json.md "ckpt stats") ---------------------------------------------------


# -- building them -------------------------------------------------------------------------------


def write_record(write: PendingWrite) -> WriteRecord:
    return {
        "task_id": write.task_id,
        "task_path": write.task_path,
        "idx": write.idx,
        "channel": write.channel,
        "type": write.type,
        "value": write.value,
    }


def interrupt_record(info: InterruptInfo) -> InterruptRecord:
    record: InterruptRecord = {
        "id": info.id,
        "value": info.value,
        "response_schema": info.response_schema,
        "answered": info.answered,
    }
    if info.has_answer:
        record["answer"] = info.answer
    return record


def task_record(task: Task) -> TaskRecord:
    return {
        "id": task.id,
        "name": task.name,
        "path": task.path,
        "state": task.state.replace(" ", "_"),
        "finished": task.finished,
        "error": task.error,
        "interrupts": [interrupt_record(i) for i in task.interrupts],
        "send_index": task.send_index,
        "input": task.send_arg if task.kind == "push" else None,
        "subgraph_ns": task.subgraph_ns,
    }


def delta_record(delta: Any) -> DeltaRecord:
    """A rebuilt DeltaChannel (ckpt.delta.DeltaValue); `value` only when ckpt could apply
    the reducer."""
    record: DeltaRecord = {
        "snapshot_checkpoint_id": delta.seed_checkpoint_id,
        "writes": [
            {
                "checkpoint_id": w.checkpoint_id,
                "task_id": w.task_id,
                "task_path": w.task_path,
                "idx": w.idx,
                "value": w.value,
            }
            for w in delta.writes
        ],
        "reducer": delta.reducer,
        "complete": delta.complete,
    }
    if delta.rebuilt:
        record["value"] = delta.value
    return record


def updated_at(checkpoint: Checkpoint) -> str | None:
    """When a checkpoint was written: its `ts`, else the time inside its uuid6 id."""
    if checkpoint.ts:
        return checkpoint.ts
    when = uuid6_time(checkpoint.checkpoint_id)
    return when.isoformat() if when else None


def thread_record(thread: ThreadSummary) -> ThreadRecord:
    """A thread and its latest state: what `graph.get_state(config)` would say."""
    latest = thread.latest
    tasks = checkpoint_tasks(latest, namespaces=thread.namespaces) if latest else None
    status = status_of(latest, tasks)
    if tasks is not None:
        errors = [t.error for t in failed_tasks(tasks)]
    else:
        outcomes = write_outcomes(latest.pending_writes or []) if latest else []
        errors = [t.error for t in outcomes if t.error is not None and not t.finished]
    return {
        "thread_id": thread.thread_id,
        "namespaces": thread.namespaces,
        "checkpoints": thread.checkpoints,
        "pending_writes": len(latest.pending_writes or []) if latest else 0,
        "writes": thread.writes,
        "checkpoint_id": latest.checkpoint_id if latest else None,
        "step": latest.step if latest else None,
        "source": latest.source if latest else None,
        "updated_at": updated_at(latest) if latest else None,
        "status": status,
        "next": still_to_run(tasks),
        "errors": errors,
        "interrupts": [interrupt_record(i) for i in waiting_interrupts(tasks)],
        "size": thread.size,
        "metadata": latest.metadata if latest else {},
    }


def checkpoint_record(
    checkpoint: Checkpoint,
    *,
    values: bool = True,
    tasks: list[Task] | None = None,
    namespaces: list[str] | None = None,
) -> CheckpointRecord:
    """A checkpoint under LangGraph's own key names; values only when loaded and asked for.

    `tasks` are its due tasks when the caller found them with more context (a whole
    thread, ckpt.reader); otherwise they are found from the checkpoint alone.
    """
    if tasks is None:
        tasks = checkpoint_tasks(checkpoint, namespaces=namespaces or ())
    record: CheckpointRecord = {
        "thread_id": checkpoint.thread_id,
        "checkpoint_ns": checkpoint.checkpoint_ns,
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "v": checkpoint.v,
        "ts": checkpoint.ts or updated_at(checkpoint),
        "metadata": checkpoint.metadata,
        "channel_versions": checkpoint.channel_versions,
        "versions_seen": checkpoint.versions_seen,
        "updated_channels": checkpoint.updated_channels,
        "next": next_at(tasks),
        "tasks": [task_record(t) for t in tasks] if tasks is not None else None,
        "interrupts": [interrupt_record(i) for i in raised_interrupts(tasks)],
        "pending_sends": checkpoint.pending_sends,
        "pending_writes": (
            [write_record(w) for w in checkpoint.pending_writes]
            if checkpoint.pending_writes is not None
            else None
        ),
        "size": checkpoint.size,
    }
    if tasks is None:
        record["next_unknown"] = why_next_unknown(checkpoint) or "unknown"
    if values:
        record["channel_values"] = checkpoint.values  # null: unreadable, or none kept
        if checkpoint.deltas:
            record["delta_channels"] = {
                channel: delta_record(delta) for channel, delta in checkpoint.deltas.items()
            }
    extra: dict[str, Any] = dict(checkpoint.extra)
    if checkpoint.unread_body is not None:
        # The undecodable or encrypted body stays visible under "checkpoint".
        extra["checkpoint"] = checkpoint.unread_body
    record.update(extra)  # type: ignore[typeddict-item]
    return record


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON (no NaN), non-ASCII kept as is."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=str)
