"""What a checkpoint means: the tasks due at it, `next` in both of LangGraph's senses, task
labels, interrupts, and a thread's status. Every view takes these from here.

LangGraph has two answers to "what runs next" (format.md §11, `pregel/main.py`):

* `get_state(config with checkpoint_id)` and `get_state_history()`: every task that was
  due at the checkpoint, finished or not — `next_at`;
* `get_state()` for the thread's current state: the due tasks of the latest checkpoint
  that have not finished — `still_to_run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ckpt.analysis.messages import is_message
from ckpt.analysis.tasks import (
    InterruptInfo,
    Shape,
    Task,
    due_tasks,
    interrupt_info,
    pull_node,
    push_index,
    send_label,
    send_node,
)
from ckpt.records.model import (
    CONTROL_CHANNELS,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    Checkpoint,
    PendingWrite,
    trigger_node,
)

Status = Literal["done", "interrupted", "error", "pending", "unknown"]

__all__ = [
    "InterruptInfo",
    "Status",
    "Task",
    "TaskOutcome",
    "checkpoint_tasks",
    "is_message",
    "next_at",
    "status_of",
    "still_to_run",
    "task_label",
    "task_labels",
    "trigger_node",
    "why_next_unknown",
]


def why_next_unknown(checkpoint: Checkpoint) -> str | None:
    """Why the tasks due at this checkpoint cannot be told, or None when they can."""
    body = checkpoint.unread_body
    if isinstance(body, dict) and body.get("__ckpt__") == "not_read":
        return str(body.get("reason") or "the checkpoint was not read")
    if isinstance(body, dict) and body.get("__ckpt__") == "encrypted":
        if body.get("reason") == "wrong key":
            return "the checkpoint did not decrypt: a wrong AES key"
        return "the checkpoint is encrypted: it needs the AES key (LANGGRAPH_AES_KEY)"
    if body is not None:
        return "the checkpoint body could not be read"
    for channel, marked in checkpoint.unread_values.items():
        what = "the pending Sends" if channel == "__pregel_tasks" else f"channel {channel}"
        if isinstance(marked, dict) and marked.get("__ckpt__") == "encrypted":
            if marked.get("reason") == "wrong key":
                return f"{what} did not decrypt: a wrong AES key"
            return f"{what} are encrypted: they need the AES key (LANGGRAPH_AES_KEY)"
        return f"{what} could not be read"
    if checkpoint.value_channels is None:
        return "this store keeps no channel values"
    return None


def checkpoint_tasks(
    checkpoint: Checkpoint, *, shape: Shape | None = None, namespaces: Sequence[str] = ()
) -> list[Task] | None:
    """The tasks due at `checkpoint` with their outcomes, or None when that cannot be told.

    `shape` is the graph's shape learned from more checkpoints of the same namespace (a
    whole thread's history knows more nodes than one checkpoint); `namespaces` are the
    thread's namespaces, to tell which tasks ran a subgraph.
    """
    if why_next_unknown(checkpoint):
        return None
    return due_tasks(
        checkpoint, shape=shape, keeps_order=checkpoint.keeps_order, namespaces=namespaces
    )


def next_at(tasks: list[Task] | None) -> list[str] | None:
    """`StateSnapshot.next` of `get_state(checkpoint_id=...)`: every task due, in order."""
    return None if tasks is None else [t.name for t in tasks]


def still_to_run(tasks: list[Task] | None) -> list[str] | None:
    """`StateSnapshot.next` of `get_state()` on the latest checkpoint: unfinished tasks."""
    return None if tasks is None else [t.name for t in tasks if not t.finished]


@dataclass(slots=True)
class TaskOutcome:
    """The writes of one task on a checkpoint, and what they say about it (for checkpoints
    whose due tasks cannot be told, e.g. encrypted bodies with readable writes)."""

    task_id: str
    task_path: str
    channels: list[str] = field(default_factory=list)
    finished: bool = False
    error: Any = None
    interrupts: list[InterruptInfo] = field(default_factory=list)


def write_outcomes(writes: Iterable[PendingWrite]) -> list[TaskOutcome]:
    """Group writes by task; a task is finished iff it has a non-control write (format.md §3.7)."""
    tasks: dict[str, TaskOutcome] = {}
    for write in writes:
        if write.task_id == NULL_TASK_ID:
            continue
        task = tasks.get(write.task_id)
        if task is None:
            task = tasks[write.task_id] = TaskOutcome(write.task_id, write.task_path)
        task.channels.append(write.channel)
        if write.channel == ERROR:
            task.error = write.value
        elif write.channel == INTERRUPT:
            value = write.value
            task.interrupts = [
                interrupt_info(i) for i in (value if isinstance(value, list) else [value])
            ]
        elif write.channel not in CONTROL_CHANNELS:
            task.finished = True
    return list(tasks.values())


def status_of(checkpoint: Checkpoint | None, tasks: list[Task] | None) -> Status:
    """A thread's status from its latest root checkpoint and the tasks due there.

    error: a task failed and did not finish on a retry; interrupted: a task waits on an
    `interrupt()`; pending: tasks still to run (a static breakpoint, a crash between
    steps); done: nothing left; unknown: the checkpoint cannot tell.
    """
    if checkpoint is None:
        return "unknown"
    if tasks is None:
        # Unreadable or encrypted body: the writes may still say it failed or waits.
        outcomes = write_outcomes(checkpoint.pending_writes or [])
        if any(t.error is not None and not t.finished for t in outcomes):
            return "error"
        if any(t.interrupts and not t.finished for t in outcomes):
            return "interrupted"
        return "unknown"
    if not checkpoint.pending_writes:
        # A task's failure, interrupt or output is in its writes: without any, each due
        # task is still to run (most threads a listing reads, and that one pass each).
        return "pending" if tasks else "done"
    # Writes of tasks that are not among the due ones still say a task failed or waits
    # (e.g. a LangGraph.js entrypoint whose name the store does not keep).
    known = {t.id for t in tasks}
    others = [
        o
        for o in write_outcomes(checkpoint.pending_writes or [])
        if o.task_id not in known and not o.task_id.startswith("ffffffff-")
    ]
    if any(t.state == "failed" for t in tasks) or any(
        o.error is not None and not o.finished for o in others
    ):
        return "error"
    if any(t.pending_interrupts for t in tasks) or any(
        o.interrupts and not o.finished for o in others
    ):
        return "interrupted"
    if any(not t.finished for t in tasks):
        return "pending"
    return "done"


def task_labels(checkpoint: Checkpoint, tasks: list[Task] | None) -> dict[str, str]:
    """Every task id of the checkpoint's writes -> its label (see `task_label`)."""
    by_id = {t.id: t for t in tasks or [] if t.id}
    labels: dict[str, str] = {}
    for write in checkpoint.pending_writes or []:
        if write.task_id not in labels:
            labels[write.task_id] = task_label(
                write.task_path, write.task_id, checkpoint.pending_sends, by_id.get(write.task_id)
            )
    return labels


def task_label(task_path: str, task_id: str, sends: list[Any], task: Task | None = None) -> str:
    """A task as people name it, the same in every view: its node; `node[i]` for the i-th
    Send packet; `update_state`; `input` for writes of no task; else its id's first 8."""
    if task_id == NULL_TASK_ID:
        return "input"
    if task is not None:
        return send_label(task.name, task.send_index)
    node = pull_node(task_path)
    if node is not None:
        return node
    if task_path.startswith("~__interrupt__"):
        return "update_state"  # its writes hang off the checkpoint it updated (format.md §3.7)
    if task_path.startswith("~~"):
        return "exit-mode writes"  # durability="exit" delta writes (format.md §11)
    index = push_index(task_path)
    if index is not None:
        target = send_node(sends[index]) if index < len(sends) else None
        return send_label(target or "send", index)
    caller = _caller(task_path)
    if caller is not None:
        return caller
    return task_id[:8]


def _caller(task_path: str) -> str | None:
    """A functional-API task called from a node: `~__pregel_push, ~__pregel_pull, flow,
    0000000001, True` -> `flow → task #1`."""
    prefix = "~__pregel_push, ~__pregel_pull, "
    if not task_path.startswith(prefix):
        return None
    rest = task_path[len(prefix) :]
    parts = rest.rsplit(", ", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return f"{parts[0]} → task #{int(parts[1])}"
    return None


def waiting_interrupts(tasks: list[Task] | None) -> list[InterruptInfo]:
    """Interrupts still waiting for an answer (`get_state().interrupts`)."""
    return [i for t in tasks or [] for i in t.pending_interrupts]


def raised_interrupts(tasks: list[Task] | None) -> list[InterruptInfo]:
    """Every interrupt the step's tasks raised (`get_state(checkpoint_id).interrupts`)."""
    return [i for t in tasks or [] for i in t.interrupts]


def failed_tasks(tasks: list[Task] | None) -> list[Task]:
    return [t for t in tasks or [] if t.state == "failed"]
