"""The tasks due at a checkpoint, as LangGraph's `prepare_next_tasks` finds them, from the
store alone: their names, ids, paths and outcomes, in LangGraph's order (docs/format.md,
"Tasks").

LangGraph answers `get_state(checkpoint_id=...)` and `get_state_history()` with every task
that was due at a checkpoint, finished or not, and `get_state()` for the latest state with
the tasks still to run (`pregel/main.py` `_prepare_state_snapshot`). Both come from here:
`due_tasks` gives the first, each task marked with what its writes say; `Task.finished`
tells the second apart.

Without the graph's code ckpt learns the graph's shape from what the store keeps:

* a node's triggers from the trigger channels it names (`branch:to:<node>`, `join:...:<node>`,
  legacy `start:<node>` and `branch:<src>:<cond>:<node>`) and from `versions_seen`, which
  records, per node, the versions of the triggers it consumed;
* the node behind `__start__` (the `__start__` node of a StateGraph, the entrypoint of a
  functional-API graph) from `versions_seen` or from the writes of the task that ran;
* the graph's node order from the order `channel_values` keeps (SQLite keeps LangGraph's
  channel order; Postgres JSONB and the pickle layouts do not).

Task ids are deterministic (`pregel/_algo.py` `_xxhash_str`, `_uuid5_str`), so every
derived task is checked against the ids of the writes: a write whose task ckpt did not
derive still names its task by its task path, or is kept as a write of an unknown task.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ckpt.decoders import TYPE_KEY
from ckpt.decoders.channel_versions import is_newer
from ckpt.records.model import (
    CONTROL_CHANNELS,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    Checkpoint,
    PendingWrite,
    trigger_node,
)

PULL: Final = "__pregel_pull"
PUSH: Final = "__pregel_push"
START: Final = "__start__"
NO_WRITES: Final = "__no_writes__"
RETURN: Final = "__return__"
# versions_seen keys that are bookkeeping, not nodes (format.md §3.5).
NOT_NODES: Final = frozenset({"__input__", "__interrupt__", "__snapshot_bumps__"})
NS_SEP: Final = "|"
NS_END: Final = ":"

TaskKind = Literal["pull", "push"]
TaskState = Literal["done", "failed", "interrupted", "to run"]


@dataclass(frozen=True, slots=True)
class InterruptInfo:
    """One `Interrupt` a task raised: its id (what `Command(resume={id: ...})` needs), the
    value shown to the user, what answer it expects, and whether it was answered."""

    id: str | None
    value: Any
    response_schema: Any = None
    answered: bool = False
    answer: Any = None
    has_answer: bool = False  # `answer` is known (the task's __resume__ write holds it)


@dataclass(slots=True)
class Task:
    """A task due at a checkpoint, with what its writes on that checkpoint say of it."""

    id: str
    name: str
    path: str  # as LangGraph's task_path_str prints it: "~__pregel_pull, agent"
    kind: TaskKind
    send_index: int | None = None  # push tasks: the Send packet it runs
    send_arg: Any = None  # push tasks: the Send's argument, the task's input
    derived: bool = True  # the id was computed (False: only the writes name the task)
    finished: bool = False  # it has an output write (pregel/_task_status.py)
    error: Any = None
    interrupts: list[InterruptInfo] = field(default_factory=list)
    resume: list[Any] = field(default_factory=list)  # answers the task consumed (__resume__)
    channels: list[str] = field(default_factory=list)  # the channels it wrote, in order
    subgraph_ns: str | None = None  # the namespace of the subgraph run this task made

    @property
    def state(self) -> TaskState:
        if self.finished:
            return "done"
        if self.error is not None:
            return "failed"
        if self.interrupts:
            return "interrupted"
        return "to run"

    @property
    def pending_interrupts(self) -> list[InterruptInfo]:
        """Interrupts still waiting for an answer: none once the task finished."""
        return [] if self.finished else [i for i in self.interrupts if not i.answered]


@dataclass(frozen=True, slots=True)
class Shape:
    """What ckpt knows of a graph: each node's trigger channels, and their order."""

    triggers: dict[str, tuple[str, ...]]
    start_node: str  # the node the `__start__` channel triggers


# -- ids ------------------------------------------------------------------------------------


def task_id(checkpoint: Checkpoint, namespace: str, step: int, *parts: str) -> str | None:
    """LangGraph's id for a task: xxh3-128 (v >= 2) or sha1 (v1) over the checkpoint id's
    bytes, the task's namespace, the step and its path parts (`_algo.py` `_xxhash_str`)."""
    try:
        namespace_bytes = binascii.unhexlify(checkpoint.checkpoint_id.replace("-", ""))
    except (binascii.Error, ValueError):
        return None  # not a uuid: a custom saver's id; nothing to derive
    data = "".join((namespace, str(step), *parts)).encode("utf-8", "surrogatepass")
    if (checkpoint.v or 1) > 1:
        import xxhash

        digest = xxhash.xxh3_128_hexdigest(namespace_bytes + data)
    else:
        import hashlib  # v1 checkpoints only (OpenSSL's start-up costs `threads` ~8 ms)

        sha = hashlib.sha1(namespace_bytes, usedforsecurity=False)
        sha.update(data)
        digest = sha.hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def task_namespace(parent_ns: str, name: str) -> str:
    return f"{parent_ns}{NS_SEP}{name}" if parent_ns else name


# -- the graph's shape ------------------------------------------------------------------------


def shape_of(checkpoints: Iterable[Checkpoint]) -> Shape:
    """The trigger channels of each node, learned from one or more checkpoints of a graph."""
    learner = ShapeLearner()
    for checkpoint in checkpoints:
        learner.add(checkpoint)
    return learner.shape()


# Shapes learned from one checkpoint, by everything ShapeLearner.add reads of it: the
# threads of one graph at one stage share it, so a listing of many threads learns each
# shape once. Bounded: cleared when full.
_OWN_SHAPES: dict[Any, Shape] = {}
_OWN_SHAPES_KEPT = 256


def own_shape(checkpoint: Checkpoint) -> Shape:
    """`shape_of([checkpoint])`, the same Shape (never changed by its users) for every
    checkpoint with the same channels, versions seen and writes."""
    writes = checkpoint.pending_writes or ()
    # Lists, not generators, into the tuples: this key is made once per listed thread.
    key = (
        tuple(checkpoint.channel_versions),
        checkpoint.value_channels,
        tuple(
            [
                (node, tuple(seen) if isinstance(seen, dict) else None)
                for node, seen in checkpoint.versions_seen.items()
            ]
        ),
        checkpoint.metadata.get("step") == -1 if writes else None,
        tuple([(w.task_path, w.task_id.startswith("ffffffff-")) for w in writes]) if writes else (),
    )
    try:
        shape = _OWN_SHAPES.get(key)
    except TypeError:  # an unhashable channel name from a damaged body: no caching
        return shape_of([checkpoint])
    if shape is None:
        shape = shape_of([checkpoint])
        if len(_OWN_SHAPES) >= _OWN_SHAPES_KEPT:
            _OWN_SHAPES.clear()
        _OWN_SHAPES[key] = shape
    return shape


class ShapeLearner:
    """`shape_of`, one checkpoint at a time (a streamed thread keeps no list of them)."""

    __slots__ = ("_triggers", "_start_node", "_ran", "_ran_from_input", "_channels", "_paths")

    def __init__(self) -> None:
        self._triggers: dict[str, set[str]] = {}
        self._start_node: str | None = None
        self._ran: set[str] = set()  # nodes whose writes name them
        self._ran_from_input: set[str] = set()  # ...on an input checkpoint: `__start__`'s
        # Channels already read for the node they trigger: a thread's checkpoints mostly
        # repeat the channels of the one before, and what they add is added once.
        self._channels: set[str] = set()
        self._paths: set[str] = set()  # task paths whose node is in _ran

    def add(self, checkpoint: Checkpoint) -> None:
        triggers = self._triggers
        known = self._channels
        for channels in (checkpoint.channel_versions, checkpoint.value_channels or ()):
            if known.issuperset(channels):
                continue  # (most checkpoints: the channels of the one before)
            for channel in channels:
                if channel in known:
                    continue
                known.add(channel)
                node = trigger_node(channel)
                if node is not None:
                    triggers.setdefault(node, set()).add(channel)
        for node, seen in checkpoint.versions_seen.items():
            if node in NOT_NODES or not isinstance(seen, dict):
                continue
            # A node, even one only Sends ran ({}); each channel it saw, once (the first
            # node seen to consume `__start__` is the start node).
            node_triggers = triggers.get(node)
            if node_triggers is None:
                node_triggers = triggers[node] = set()
            elif node_triggers.issuperset(seen):
                continue
            for channel in seen:
                if channel in node_triggers or not isinstance(channel, str):
                    continue
                node_triggers.add(channel)
                if channel == START and self._start_node is None:
                    self._start_node = node
        writes = checkpoint.pending_writes
        if not writes:
            return
        from_input = checkpoint.metadata.get("step") == -1 and START in checkpoint.channel_versions
        paths = self._paths
        for write in writes:
            path = write.task_path
            if not from_input and path in paths:
                continue  # its node is in _ran already
            name = pull_node(path)
            if name is None or write.task_id.startswith("ffffffff-"):
                continue
            self._ran.add(name)
            paths.add(path)
            if from_input:
                self._ran_from_input.add(name)

    def shape(self) -> Shape:
        triggers = {node: set(channels) for node, channels in self._triggers.items()}
        start_node = self._start_node
        if start_node is None:
            # No checkpoint records who consumed `__start__`: the task that ran from an
            # input checkpoint did (a functional-API entrypoint has its own name).
            ran_from_input = self._ran_from_input
            start_node = next(iter(ran_from_input)) if len(ran_from_input) == 1 else START
        for name in self._ran:
            triggers.setdefault(name, set())
        triggers.setdefault(start_node, set()).add(START)
        return Shape({n: tuple(sorted(t)) for n, t in triggers.items()}, start_node)


# -- task paths -----------------------------------------------------------------------------


def send_label(name: str, send_index: int | None) -> str:
    """A task as every view names it: its node, and `node[i]` when it runs the i-th Send
    packet (ckpt.analysis.status.task_label, the records' task names, the diff's write labels)."""
    return f"{name}[{send_index}]" if send_index is not None else name


def pull_node(task_path: str) -> str | None:
    """The node of a pull task's path `~__pregel_pull, <node>` (node names may hold commas)."""
    prefix = f"~{PULL}, "
    return task_path[len(prefix) :] if task_path.startswith(prefix) else None


def push_index(task_path: str) -> int | None:
    """The Send packet a push task runs: `~__pregel_push, 0000000001, False` -> 1."""
    prefix = f"~{PUSH}, "
    if not task_path.startswith(prefix):
        return None
    head = task_path[len(prefix) :].split(", ", 1)[0]
    return int(head) if head.isdigit() else None


def send_node(send: Any) -> str | None:
    """The target node of a decoded Send (current object form or legacy dict)."""
    if isinstance(send, dict):
        node = send.get("node")
        return node if isinstance(node, str) else None
    return None


def is_send(packet: Any) -> bool:
    """A Send LangGraph would run: `langgraph.types.Send`. A legacy JSON envelope naming
    `langgraph.constants.Send` is not revived by LangGraph today (not in its safe list), so
    it ignores the packet ("Ignoring invalid packet type", format.md §2.6), and so do we."""
    if not isinstance(packet, dict) or not isinstance(packet.get("node"), str):
        return False
    return packet.get(TYPE_KEY) == "langgraph.types.Send"


def is_js_send(packet: Any) -> bool:
    """A LangGraph.js Send: any object with a string `node` and `args` (`_isSendInterface`)."""
    return isinstance(packet, dict) and isinstance(packet.get("node"), str) and "args" in packet


# -- due tasks ------------------------------------------------------------------------------


def due_tasks(
    checkpoint: Checkpoint,
    *,
    shape: Shape | None = None,
    keeps_order: bool = False,
    namespaces: Sequence[str] = (),
) -> list[Task] | None:
    """Every task due at `checkpoint`, in LangGraph's order, with its outcome; None when the
    checkpoint cannot tell (body unreadable or encrypted, or a store that keeps no values).

    Push tasks (Sends) come first in packet order, then pull tasks in the graph's node
    order (`prepare_next_tasks`). `keeps_order` says `channel_values` keep LangGraph's
    channel order, which follows the node order; otherwise pull tasks sort by name.
    """
    if checkpoint.value_channels is None or checkpoint.unread_body is not None:
        return None
    shape = shape or own_shape(checkpoint)
    js = checkpoint.writer == "js"
    legacy = not js and (checkpoint.v or 1) < 3
    versions = checkpoint.channel_versions
    seen = checkpoint.versions_seen
    available = checkpoint.value_channels or ()
    if legacy:
        # LangGraph renames v1/v2 trigger channels to `branch:to:<node>` when it loads the
        # checkpoint, and derives task ids from the renamed triggers (format.md §3.1).
        versions, seen, available, shape = _migrated(checkpoint, shape)
    metadata_step = checkpoint.metadata.get("step")
    step = (metadata_step if isinstance(metadata_step, int) else -1) + 1
    parent_ns = checkpoint.checkpoint_ns
    tasks: list[Task] = []
    # Push tasks: the pending Sends (`__pregel_tasks`, or v<4 `pending_sends`).
    for index, packet in enumerate(checkpoint.pending_sends):
        if not (is_js_send(packet) if js else is_send(packet)):
            continue
        node = str(packet["node"])
        namespace = task_namespace(parent_ns, node)
        tid = (
            js_task_id(checkpoint, namespace, step, node, PUSH, str(index))
            if js
            else task_id(checkpoint, namespace, step, node, PUSH, str(index))
        )
        tasks.append(
            Task(
                id=tid or "",
                name=node,
                path=f"~{PUSH}, {index:010d}, {0:010d}",  # task_path_str(False)
                kind="push",
                send_index=index,
                send_arg=packet.get("args" if js else "arg"),
                derived=tid is not None,
            )
        )
    # Pull tasks: nodes with a trigger channel newer than what they last saw.
    if versions:
        order: dict[str, int] | None = None  # made once a node is due (most listed are done)
        due: list[tuple[tuple[int, str], Task]] = []
        barriers = checkpoint.barriers
        for node, node_triggers in shape.triggers.items():
            if len(node_triggers) == 1 and (
                node_triggers[0] not in versions or node_triggers[0] not in available
            ):
                continue  # _fired's first test, without the call: most nodes, most steps
            fired = _fired(versions, seen.get(node), available, barriers, node_triggers)
            if not fired:
                continue
            if order is None:
                order = {c: i for i, c in enumerate(available)} if keeps_order else {}
            namespace = task_namespace(parent_ns, node)
            if js:
                # LangGraph.js names the first trigger that fired (pregel/algo.ts).
                tid = js_task_id(checkpoint, namespace, step, node, PULL, [fired[0]])
            else:
                tid = task_id(checkpoint, namespace, step, node, PULL, *node_triggers)
            position = last = len(order)  # the first of the fired channels in `order`
            for channel in fired:
                at = order.get(channel, last)
                if at < position:
                    position = at
            task = Task(
                id=tid or "",
                name=node,
                path=f"~{PULL}, {node}",
                kind="pull",
                derived=tid is not None,
            )
            due.append(((position if keeps_order else 0, node), task))
        if len(due) > 1:
            due.sort(key=lambda item: item[0])
        tasks.extend([task for _, task in due])
    # Writes name their task by path too. For a migrated v1/v2 checkpoint LangGraph derives
    # new ids that no stored write has, so it matches none of them, and neither do we.
    _attach_writes(tasks, checkpoint, keeps_order, by_path=not legacy)
    _attach_subgraphs(tasks, parent_ns, namespaces)
    return tasks


def js_task_id(
    checkpoint: Checkpoint, namespace: str, step: int, name: str, kind: str, last: Any
) -> str | None:
    """LangGraph.js's task id: uuid5 in the checkpoint id's namespace of the JSON of
    [namespace, step, name, kind, trigger list or Send index] (`pregel/algo.ts`)."""
    import json
    import uuid

    try:
        namespace_uuid = uuid.UUID(checkpoint.checkpoint_id)
    except ValueError:
        return None
    name_text = json.dumps(
        [namespace, str(step), name, kind, last], separators=(",", ":"), ensure_ascii=False
    )
    return str(uuid.uuid5(namespace_uuid, name_text))


# The renames of `_migrated` for one shape and one tuple of channels (their names decide
# them all): the `start:` and `branch:` channels (old, new, node), then the channels named
# after a node (old, its (new, target) pairs).
_Renames = tuple[list[tuple[str, str, str]], list[tuple[str, list[tuple[str, str]]]]]
# What `_migrated` derives from a shape alone (its static edges, its renamed triggers, the
# renames of each tuple of channels met): the checkpoints of one graph share one Shape
# object, so this is worked out once for them.
_LEGACY_SHAPES: dict[int, tuple[Shape, dict[str, list[str]], Shape, dict[Any, _Renames]]] = {}
_LEGACY_SHAPES_KEPT = 256
_RENAMES_KEPT = 256


def _legacy_shape(shape: Shape) -> tuple[dict[str, list[str]], Shape, dict[Any, _Renames]]:
    """A shape's static edges (node -> the nodes that consumed the channel named after it)
    and the shape LangGraph migrates it to: each node triggered by `branch:to:<node>`; and
    the renames worked out for it so far, by channels."""
    known = _LEGACY_SHAPES.get(id(shape))
    if known is not None and known[0] is shape:
        return known[1], known[2], known[3]
    nodes = set(shape.triggers)
    targets: dict[str, list[str]] = {}
    for node, channels in shape.triggers.items():
        for channel in channels:
            if channel in nodes and channel != START:
                targets.setdefault(channel, []).append(node)
    triggers: dict[str, tuple[str, ...]] = {
        node: (START,) if node == shape.start_node else (f"branch:to:{node}",) for node in nodes
    }
    migrated = Shape(triggers, shape.start_node)
    renames: dict[Any, _Renames] = {}
    if len(_LEGACY_SHAPES) >= _LEGACY_SHAPES_KEPT:
        _LEGACY_SHAPES.clear()
    # Holding the shape keeps its id unique.
    _LEGACY_SHAPES[id(shape)] = (shape, targets, migrated, renames)
    return targets, migrated, renames


def _renames(
    channels: tuple[str, ...], nodes: dict[str, Any], targets: dict[str, list[str]]
) -> _Renames:
    """What `_migrated` renames among `channels` (see _Renames), found from their names
    alone, as it renames them: the channels added and removed on the way decide the rest."""
    versions = dict.fromkeys(channels)
    first: list[tuple[str, str, str]] = []
    for old in list(versions):
        if old.startswith("start:") or (old.startswith("branch:") and old.count(":") == 3):
            node = old.rsplit(":", 1)[-1] if old.startswith("branch:") else old.split(":")[1]
            if node in nodes:
                new = f"branch:to:{node}"
                first.append((old, new, node))
                versions[new] = None
                versions.pop(old, None)
    second: list[tuple[str, list[tuple[str, str]]]] = []
    for old in list(versions):
        if old in nodes and old != START:
            moves = [(f"branch:to:{target}", target) for target in targets.get(old, [])]
            for new, _ in moves:
                versions[new] = None
            versions.pop(old, None)
            second.append((old, moves))
    return first, second


def _migrated(
    checkpoint: Checkpoint, shape: Shape
) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...], Shape]:
    """A v1/v2 checkpoint as LangGraph reads it today (`graph/state.py`
    `_migrate_checkpoint`): `start:<node>`, `branch:<src>:<cond>:<node>` and the channel
    named after each node (a static edge node -> target) become `branch:to:<target>`, with
    the newest of the versions they merge; each node's triggers are `branch:to:<node>`.
    Its channel versions, versions seen and channels with a value, and the shape, as
    migrated (the checkpoint's own, not copies, when nothing is renamed: read them only)."""
    targets, migrated, known = _legacy_shape(shape)
    nodes = migrated.triggers
    channels = tuple(checkpoint.channel_versions)
    renames = known.get(channels)
    if renames is None:
        renames = _renames(channels, nodes, targets)
        if len(known) >= _RENAMES_KEPT:
            known.clear()
        known[channels] = renames
    first, second = renames
    if not first and not second:
        available = tuple(dict.fromkeys(checkpoint.value_channels or ()))
        return checkpoint.channel_versions, checkpoint.versions_seen, available, migrated
    versions = dict(checkpoint.channel_versions)
    seen = {k: dict(v) if isinstance(v, dict) else v for k, v in checkpoint.versions_seen.items()}
    values = list(checkpoint.value_channels or ())

    def move(old: str, new: str, node: str) -> None:
        old_version = versions[old]
        versions[new] = _newest(versions[new], old_version) if new in versions else old_version
        for holder in (seen.get(node), seen.get("__interrupt__")):
            if isinstance(holder, dict) and old in holder:
                read = holder.pop(old)
                holder[new] = _newest(holder[new], read) if new in holder else read
        if old in values and new not in values:
            values[values.index(old)] = new

    for old, new, node in first:
        move(old, new, node)
        versions.pop(old, None)
    for old, moves in second:
        for new, target in moves:
            move(old, new, target)
        versions.pop(old, None)
        if old in values:
            values.remove(old)
    return versions, seen, tuple(dict.fromkeys(values)), migrated


def _newest(a: Any, b: Any) -> Any:
    # Python's max() on the stored versions, as the migration does.
    try:
        return max(a, b)
    except TypeError:
        return a


def _fired(
    versions: dict[str, Any],
    seen: Any,
    available: Sequence[str],
    barriers: dict[str, Any],
    node_triggers: Sequence[str],
) -> list[str]:
    """The trigger channels that make a node due (`_algo.py` `_triggers`): `seen` is what
    the node's versions_seen holds, `available` the channels with a value."""
    fired: list[str] = []
    for channel in node_triggers:
        if channel not in versions or channel not in available:
            continue  # (most triggers of most checkpoints: no value, _available's first test)
        if channel.startswith("join:") and not _available(available, barriers, channel):
            continue
        last = seen.get(channel) if isinstance(seen, dict) else None
        if last is None:
            fired.append(channel)
            continue
        current = versions[channel]
        if type(last) is str and current == last:
            continue  # the version it saw: equal text is an equal counter (most nodes)
        if is_newer(current, last):
            fired.append(channel)
    return fired


def _available(available: Sequence[str], barriers: dict[str, Any], channel: str) -> bool:
    if channel not in available:
        return False
    if channel.startswith("join:"):
        # A NamedBarrierValue is available once every source has written (format.md §3.6).
        barrier = barriers.get(channel)
        names = set(channel[len("join:") :].rpartition(":")[0].split("+"))
        if isinstance(barrier, list) and len(barrier) == 2 and isinstance(barrier[1], bool):
            seen, finished = barrier  # NamedBarrierValueAfterFinish: (seen, finished)
            return bool(finished) and isinstance(seen, list) and set(seen) == names
        return isinstance(barrier, list) and set(map(str, barrier)) == names
    return True


def _attach_writes(
    tasks: list[Task], checkpoint: Checkpoint, keeps_order: bool, *, by_path: bool = True
) -> None:
    """Mark each task with what its writes say; add due tasks only the writes name.

    A task is matched by id. A write whose id ckpt did not derive still names a due pull
    task by its task path: the task ran from this checkpoint, so it was due. Exit-mode
    writes (synthetic `ffffffff-` ids, `~~` paths) and writes on a checkpoint with no
    versions (an exit-mode stub) name no due task: LangGraph prepares none there.
    """
    writes = checkpoint.pending_writes
    if not writes:
        return  # nothing to mark (a listing's latest checkpoints mostly have no writes)
    by_id = {t.id: t for t in tasks if t.id}
    by_name: dict[tuple[str, str], Task] | None = None  # made when a write needs it
    evidence = by_path and bool(checkpoint.channel_versions)
    for write in writes:
        if write.task_id == NULL_TASK_ID:
            continue
        task = by_id.get(write.task_id)
        if task is None:
            if not evidence or write.task_id.startswith("ffffffff-"):
                continue
            if by_name is None:
                by_name = {(t.kind, t.name): t for t in tasks}
            task = _task_from_write(write, by_name)
            if task is None:
                continue
            if task not in tasks:
                _insert(tasks, task, keeps_order)
            by_id[write.task_id] = task
        _record(task, write)
    for task in tasks:
        if task.finished and task.interrupts:
            _mark_answered(task)


def _task_from_write(write: PendingWrite, by_name: dict[tuple[str, str], Task]) -> Task | None:
    """The due task a write belongs to when its id was not derived: by its task path."""
    node = pull_node(write.task_path)
    if node is not None:
        known = by_name.get(("pull", node))
        if known is not None and not known.channels:
            known.id, known.derived = write.task_id, False
            return known
        task = Task(id=write.task_id, name=node, path=write.task_path, kind="pull", derived=False)
        by_name[("pull", node)] = task
        return task
    return None  # update_state, functional-API calls, exit-mode writes: not due tasks


def _insert(tasks: list[Task], task: Task, keeps_order: bool) -> None:
    if task.kind == "pull":
        tasks.append(task)
        return
    tasks.insert(sum(1 for t in tasks if t.kind == "push"), task)


def _record(task: Task, write: PendingWrite) -> None:
    task.channels.append(write.channel)
    if write.channel == ERROR:
        if task.error is None:
            task.error = write.value
    elif write.channel == INTERRUPT:
        value = write.value
        task.interrupts = [
            interrupt_info(i) for i in (value if isinstance(value, list) else [value])
        ]
    elif write.channel == RESUME:
        value = write.value
        task.resume = list(value) if isinstance(value, list) else [value]
    elif write.channel not in CONTROL_CHANNELS:
        task.finished = True


def _mark_answered(task: Task) -> None:
    """A finished task answered every interrupt it raised. The `__interrupt__` slot holds
    the task's latest interrupts and `__resume__` every answer it consumed, oldest first,
    so the answers to the interrupts in the slot are the last ones (`types.py` interrupt)."""
    offset = len(task.resume) - len(task.interrupts)
    task.interrupts = [
        InterruptInfo(
            info.id,
            info.value,
            info.response_schema,
            answered=True,
            answer=task.resume[offset + i] if offset + i >= 0 else None,
            has_answer=offset + i >= 0,
        )
        for i, info in enumerate(task.interrupts)
    ]


def _attach_subgraphs(tasks: list[Task], parent_ns: str, namespaces: Sequence[str]) -> None:
    # A subgraph's namespace is another than the checkpoint's own: when that is the only
    # one (most threads: the root alone), no task has one.
    if not tasks or not namespaces or (len(namespaces) == 1 and namespaces[0] == parent_ns):
        return
    present = set(namespaces)
    for task in tasks:
        if not task.id:
            continue
        ns = f"{task_namespace(parent_ns, task.name)}{NS_END}{task.id}"
        if ns in present:
            task.subgraph_ns = ns
        elif task_namespace(parent_ns, task.name) in present:  # checkpointer=True subgraphs
            task.subgraph_ns = task_namespace(parent_ns, task.name)


def interrupt_info(interrupt: Any) -> InterruptInfo:
    """An `Interrupt` in every era: `{value, id, response_schema}`, or legacy
    `{value, resumable, ns, when}` whose id is xxh3-128 of the joined ns (format.md §3.6)."""
    if isinstance(interrupt, dict) and TYPE_KEY not in interrupt and "value" in interrupt:
        # LangGraph.js stores an interrupt as the plain object {id, value}.
        identifier = interrupt.get("id")
        return InterruptInfo(
            identifier if isinstance(identifier, str) else None, interrupt["value"]
        )
    if not isinstance(interrupt, dict) or TYPE_KEY not in interrupt:
        return InterruptInfo(None, interrupt)
    identifier = interrupt.get("id")
    if not isinstance(identifier, str):
        ns = interrupt.get("ns")
        identifier = None
        if isinstance(ns, list) and all(isinstance(p, str) for p in ns):
            import xxhash

            identifier = xxhash.xxh3_128_hexdigest("|".join(ns).encode("utf-8", "surrogatepass"))
    return InterruptInfo(identifier, interrupt.get("value"), interrupt.get("response_schema"))
