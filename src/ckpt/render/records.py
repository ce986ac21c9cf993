"""The JSON shapes ckpt prints (docs/json.md): plain dicts built from model records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TypedDict

from ckpt.analysis import (
    checkpoint_tasks,
    failed_tasks,
    next_at,
    raised_interrupts,
    status_of,
    still_to_run,
    waiting_interrupts,
)
from ckpt.decoders import uuid6_time
from ckpt.model import Checkpoint, PendingWrite, ThreadInfo
from ckpt.tasks import InterruptInfo, Task


class WriteRecord(TypedDict):
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    value: Any


class InterruptRecord(TypedDict):
    id: str | None
    value: Any
    response_schema: Any
    answered: bool


class TaskRecord(TypedDict):
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


class ThreadRecord(TypedDict):
    thread_id: str
    namespaces: list[str]
    checkpoints: int
    pending_writes: int
    writes: int
    checkpoint_id: str | None
    step: int | None
    source: str | None
    updated_at: str | None
    status: str
    next: list[str] | None
    errors: list[Any]
    interrupts: list[InterruptRecord]
    size: int
    metadata: dict[str, Any]


def write_record(write: PendingWrite) -> WriteRecord:
    return {
        "task_id": write.task_id,
        "task_path": write.task_path,
        "idx": write.idx,
        "channel": write.channel,
        "type": write.type,
        "value": write.value,
    }


def updated_at(checkpoint: Checkpoint) -> str | None:
    """When a checkpoint was written: its `ts`, else the time inside its uuid6 id."""
    if checkpoint.ts:
        return checkpoint.ts
    when = uuid6_time(checkpoint.checkpoint_id)
    return when.isoformat() if when else None


def interrupt_record(info: InterruptInfo) -> InterruptRecord:
    return {
        "id": info.id,
        "value": info.value,
        "response_schema": info.response_schema,
        "answered": info.answered,
    }


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


class DeltaRecord(TypedDict, total=False):
    snapshot_checkpoint_id: str | None
    writes: list[dict[str, Any]]
    reducer: str | None
    complete: bool
    value: Any


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


def thread_record(thread: ThreadInfo) -> ThreadRecord:
    latest = thread.latest
    tasks = checkpoint_tasks(latest, namespaces=thread.namespaces) if latest else None
    status = status_of(latest, tasks)
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
        "errors": [t.error for t in failed_tasks(tasks)] if tasks is not None else _errors(latest),
        "interrupts": [interrupt_record(i) for i in waiting_interrupts(tasks)],
        "size": thread.size,
        "metadata": latest.metadata if latest else {},
    }


def _errors(latest: Checkpoint | None) -> list[Any]:
    from ckpt.analysis import write_outcomes

    outcomes = write_outcomes(latest.pending_writes or []) if latest else []
    return [t.error for t in outcomes if t.error is not None and not t.finished]


def checkpoint_record(
    checkpoint: Checkpoint,
    *,
    values: bool = True,
    tasks: list[Task] | None = None,
    namespaces: list[str] | None = None,
) -> dict[str, Any]:
    """A checkpoint under LangGraph's own key names; values only when loaded and asked for."""
    if tasks is None:
        tasks = checkpoint_tasks(checkpoint, namespaces=namespaces or ())
    record: dict[str, Any] = {
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
    if values:
        record["channel_values"] = checkpoint.values  # null: unreadable, or none kept
        if checkpoint.deltas:
            record["delta_channels"] = {
                channel: delta_record(delta) for channel, delta in checkpoint.deltas.items()
            }
    record.update(checkpoint.extra)
    if checkpoint.unread_body is not None:
        # The undecodable or encrypted body stays visible under "checkpoint".
        record["checkpoint"] = checkpoint.unread_body
    return record


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON (no NaN), non-ASCII kept as is."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def json_array(records: Iterable[Any], *, pretty: bool = True) -> Iterator[str]:
    """Lines of one JSON array, streamed record by record.

    `pretty=False` puts each record on one line: still one array for jq, and about twice as
    fast to write (an indented dump runs json's pure-Python encoder).
    """
    first = True
    for record in records:
        if pretty:
            body = "\n".join("  " + line for line in dumps(record, indent=2).splitlines())
        else:
            body = dumps(record)
        yield ("[\n" if first else ",\n") + body
        first = False
    yield "[]\n" if first else "\n]\n"


def ndjson(records: Iterable[Any]) -> Iterator[str]:
    for record in records:
        yield dumps(record) + "\n"
