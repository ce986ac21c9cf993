"""What a checkpoint means: the nodes due next, task outcomes and a thread's status."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ckpt.decoders import TYPE_KEY, compare_versions
from ckpt.model import (
    CONTROL_CHANNELS,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    Checkpoint,
    PendingWrite,
    ThreadInfo,
)

Status = Literal["done", "interrupted", "error", "pending", "unknown"]
STATUSES: tuple[Status, ...] = ("done", "interrupted", "error", "pending", "unknown")


@dataclass(slots=True)
class TaskOutcome:
    """The writes of one task on a checkpoint, and what they say about it."""

    task_id: str
    task_path: str
    node: str | None
    channels: list[str] = field(default_factory=list)
    finished: bool = False
    error: Any = None
    interrupts: list[Any] = field(default_factory=list)


# LangChain message roles (`type` field of a message's dict form).
MESSAGE_ROLES = frozenset(
    {"human", "ai", "system", "tool", "function", "chat", "remove", "developer"}
)


def is_message(value: Any) -> bool:
    """A LangChain message, decoded (`__type__` ...Message) or in its dict form."""
    if type(value) is not dict:
        return False
    kind = value.get(TYPE_KEY)
    if isinstance(kind, str) and kind.endswith(("Message", "MessageChunk")):
        return True
    return "content" in value and value.get("type") in MESSAGE_ROLES


def trigger_node(channel: str) -> str | None:
    """The node a trigger channel wakes, for every era of channel names (FORMAT 3.6)."""
    if channel.startswith("branch:to:"):
        return channel[len("branch:to:") :]
    if channel.startswith("start:"):
        return channel[len("start:") :]
    if channel.startswith("branch:"):
        return channel.rsplit(":", 1)[-1]
    return None


def next_nodes(checkpoint: Checkpoint) -> list[str]:
    """The nodes LangGraph would run next, from the checkpoint alone.

    A node is due when one of its trigger channels holds a value whose version is newer
    than `versions_seen[node]` records (langgraph/pregel/_algo.py `_triggers`), or when a
    Send packet for it is pending. Triggers are the `branch:to:<node>` family, plus any
    channel a node has consumed before (`versions_seen` records only triggers).
    """
    versions = checkpoint.channel_versions
    seen = checkpoint.versions_seen
    available = checkpoint.value_channels
    if available is None:  # the store keeps no values (single-file PersistentDict, FORMAT 7.2)
        return []
    due: list[str] = []

    def newer(channel: str, node: str) -> bool:
        if channel not in versions or (available is not None and channel not in available):
            return False
        node_seen = seen.get(node)
        last = node_seen.get(channel) if isinstance(node_seen, dict) else None
        return last is None or compare_versions(versions[channel], last) > 0

    for channel in versions:
        node = trigger_node(channel)
        if node is not None and node not in due and newer(channel, node):
            due.append(node)
    for node, node_seen in seen.items():
        if node.startswith("__") or node in due or not isinstance(node_seen, dict):
            continue
        if any(trigger_node(c) is None and newer(c, node) for c in node_seen):
            due.append(node)
    # Like StateSnapshot.next, leave out tasks that already finished (their outputs sit in
    # the pending writes, e.g. the siblings of a failed Send): pull tasks by node name,
    # push tasks by their index into the pending sends (task path `~__pregel_push, i, ...`).
    finished = [t for t in task_outcomes(checkpoint.pending_writes or []) if t.finished]
    done_nodes = {t.node for t in finished if t.node}
    done_sends = {i for t in finished if (i := push_index(t.task_path)) is not None}
    due = [node for node in due if node not in done_nodes]
    for index, send in enumerate(checkpoint.pending_sends):
        node = send_node(send)
        if node is not None and index not in done_sends:
            due.append(node)
    return due


def task_label(task_path: str, task_id: str, sends: list[Any]) -> str:
    """A task as people name it, the same in every view: its node; `node[i]` for the i-th
    Send packet; `update_state`; `input` for writes of no task; else its id's first 8."""
    if task_id == NULL_TASK_ID:
        return "input"
    node = task_node(task_path)
    if node:
        return node
    if task_path.startswith("~__interrupt__"):
        return "update_state"  # its writes hang off the checkpoint it updated (FORMAT 3.7)
    index = push_index(task_path)
    if index is not None:
        target = send_node(sends[index]) if index < len(sends) else None
        return f"{target or 'send'}[{index}]"
    return task_path.lstrip("~") or task_id[:8]


def push_index(task_path: str) -> int | None:
    """The Send packet a push task runs: `~__pregel_push, 0000000001, ...` -> 1."""
    parts = task_path.lstrip("~").split(", ")
    if len(parts) > 1 and parts[0] == "__pregel_push" and parts[1].isdigit():
        return int(parts[1])
    return None


def send_node(send: Any) -> str | None:
    """The target node of a decoded Send (current object form or legacy dict)."""
    if isinstance(send, dict):
        node = send.get("node")
        return node if isinstance(node, str) else None
    return None


def task_outcomes(writes: Iterable[PendingWrite]) -> list[TaskOutcome]:
    """Group writes by task; a task is finished iff it has a non-control write (FORMAT 3.7)."""
    tasks: dict[str, TaskOutcome] = {}
    for write in writes:
        if write.task_id == NULL_TASK_ID:
            continue
        task = tasks.get(write.task_id)
        if task is None:
            task = tasks[write.task_id] = TaskOutcome(
                write.task_id, write.task_path, node=task_node(write.task_path)
            )
        task.channels.append(write.channel)
        if write.channel == ERROR:
            task.error = write.value
        elif write.channel == INTERRUPT:
            value = write.value
            task.interrupts.extend(value if isinstance(value, list) else [value])
        elif write.channel not in CONTROL_CHANNELS:
            task.finished = True
    return list(tasks.values())


def task_node(task_path: str) -> str | None:
    """The node name in a task path like `~__pregel_pull, agent` (FORMAT 3.7)."""
    if task_path.startswith("~__pregel_pull, "):
        return task_path[len("~__pregel_pull, ") :].split(",")[0]
    return None


def why_next_unknown(checkpoint: Checkpoint) -> str | None:
    """Why `next` cannot be told from this checkpoint, or None when it can."""
    body = checkpoint.extra.get("body")
    if isinstance(body, dict) and body.get("__ckpt__") == "encrypted":
        if body.get("reason") == "wrong key":
            return "the checkpoint did not decrypt: wrong --aes-key / LANGGRAPH_AES_KEY"
        return "the checkpoint is encrypted: pass --aes-key or set LANGGRAPH_AES_KEY"
    if body is not None:
        return "the checkpoint body could not be read"
    if checkpoint.value_channels is None:
        return "this store keeps no channel values"
    return None


def known_next(checkpoint: Checkpoint) -> list[str] | None:
    """`next`, or None when it cannot be told (encrypted, unreadable, no values kept)."""
    return None if why_next_unknown(checkpoint) else next_nodes(checkpoint)


def status_of(checkpoint: Checkpoint | None) -> tuple[Status, list[str] | None]:
    """A thread's status and `next`, from its latest root checkpoint and the writes on it."""
    if checkpoint is None:
        return "unknown", None
    # Encrypted without a key, undecodable, or a store that keeps no channel values: which
    # nodes are due cannot be told.
    due = known_next(checkpoint)
    unknowable = due is None
    outcomes = task_outcomes(checkpoint.pending_writes or [])
    if any(t.error is not None and not t.finished for t in outcomes):
        return "error", due
    if any(t.interrupts and not t.finished for t in outcomes):
        return "interrupted", due
    if unknowable:
        return "unknown", due
    if due:
        return "pending", due
    return "done", due


def thread_status(thread: ThreadInfo) -> tuple[Status, list[str] | None]:
    return status_of(thread.latest)


def errors_of(checkpoint: Checkpoint) -> list[TaskOutcome]:
    return [t for t in task_outcomes(checkpoint.pending_writes or []) if t.error is not None]


def interrupt_values(checkpoint: Checkpoint) -> list[Any]:
    """The values the graph is waiting on (the `value` field of each Interrupt)."""
    found: list[Any] = []
    for task in task_outcomes(checkpoint.pending_writes or []):
        if task.finished:
            continue
        for interrupt in task.interrupts:
            if isinstance(interrupt, dict) and TYPE_KEY in interrupt:
                found.append(interrupt.get("value"))
            else:
                found.append(interrupt)
    return found
