"""Checkpoint, thread, task and write records built from the model and the analysis, and
nowhere else: status, `next`, tasks and interrupts are computed once, in
ckpt.analysis.status, and carried by the records."""

from __future__ import annotations

from typing import Any

from ckpt.analysis.status import (
    checkpoint_tasks,
    failed_tasks,
    next_at,
    raised_interrupts,
    status_of,
    still_to_run,
    task_label,
    task_labels,
    waiting_interrupts,
    why_next_unknown,
    write_outcomes,
)
from ckpt.analysis.tasks import InterruptInfo, Task
from ckpt.decoders import uuid6_time
from ckpt.records.model import Checkpoint, PendingWrite, ThreadSummary
from ckpt.records.types import (
    CheckpointRecord,
    DeltaRecord,
    InterruptRecord,
    TaskRecord,
    ThreadRecord,
    WriteRecord,
)


def write_record(write: PendingWrite, task: str) -> WriteRecord:
    return {
        "task_id": write.task_id,
        "task_path": write.task_path,
        "task": task,
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
    """A rebuilt DeltaChannel (ckpt.analysis.delta.DeltaValue); `value` only when ckpt could apply
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


def _failed_elsewhere(checkpoint: Checkpoint, due: set[str]) -> list[TaskRecord]:
    """Tasks with an unfinished `__error__` write that are not among the due tasks, as
    LangGraph's read_task_statuses reports them (format.md §3.7)."""
    writes = checkpoint.pending_writes or []
    labels = {w.task_id: w.task_path for w in writes}
    found: list[TaskRecord] = []
    for outcome in write_outcomes(writes):
        if outcome.error is None or outcome.finished or outcome.task_id in due:
            continue
        found.append(
            {
                "id": outcome.task_id,
                "name": task_label(
                    labels[outcome.task_id], outcome.task_id, checkpoint.pending_sends
                ),
                "path": outcome.task_path,
                "state": "failed",
                "finished": False,
                "error": outcome.error,
                "interrupts": [],
                "send_index": None,
                "input": None,
                "subgraph_ns": None,
            }
        )
    return found


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
    failed: list[TaskRecord] = []
    if tasks is not None:
        # The failed tasks are already found for the status, their Send arguments
        # decoded with them: naming them costs no further read. A task that failed in the
        # step without being one of them (a functional-API @task its entrypoint awaited)
        # has its own `__error__` write: LangGraph's task statuses list it too.
        failed = [task_record(t) for t in failed_tasks(tasks)]
        failed += _failed_elsewhere(latest, {t.id for t in tasks}) if latest else []
        errors = [t["error"] for t in failed]
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
        "failed_tasks": failed,
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
    thread, ckpt.analysis.reader); otherwise they are found from the checkpoint alone.
    """
    if tasks is None:
        tasks = checkpoint_tasks(checkpoint, namespaces=namespaces or ())
    labels = task_labels(checkpoint, tasks) if checkpoint.pending_writes else {}
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
            [write_record(w, labels[w.task_id]) for w in checkpoint.pending_writes]
            if checkpoint.pending_writes is not None
            else None
        ),
        "size": checkpoint.size,
        "config": {
            "configurable": {
                "thread_id": checkpoint.thread_id,
                "checkpoint_ns": checkpoint.checkpoint_ns,
                "checkpoint_id": checkpoint.checkpoint_id,
            }
        },
    }
    if tasks is None:
        record["next_unknown"] = why_next_unknown(checkpoint) or "unknown"
    if values:
        record["channel_values"] = checkpoint.values  # null: unreadable, or none kept
        if checkpoint.deltas:
            record["delta_channels"] = {
                channel: delta_record(delta) for channel, delta in checkpoint.deltas.items()
            }
    if checkpoint.unread_body is not None:
        # The undecodable or encrypted body stays visible under "checkpoint".
        extra: dict[str, Any] = dict(checkpoint.extra)
        extra["checkpoint"] = checkpoint.unread_body
        record.update(extra)  # type: ignore[typeddict-item]
    elif checkpoint.extra:
        record.update(checkpoint.extra)  # type: ignore[typeddict-item]
    return record
