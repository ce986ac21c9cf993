"""DeltaChannel values rebuilt from the store: the snapshot they replay from, the writes
since, and the value where ckpt can apply the reducer without user code (format.md §3.8).

A DeltaChannel is absent from `channel_values` between snapshots. LangGraph rebuilds it
(`BaseCheckpointSaver.get_delta_channel_history`): walk the parent chain from the target's
parent, collect every write to the channel on each ancestor (LangGraph's write order
within a checkpoint, oldest ancestor first), stop at the nearest ancestor that holds a
value for it (a `_DeltaSnapshot`, or a plain value from before a migration), and hand
seed and writes to the channel's reducer. The reducer is user code; ckpt applies it only
when it is one whose behaviour is known from the data:

* `messages`: every item is a LangChain message, as with LangGraph's own
  `_messages_delta_reducer` (append; replace by id; `RemoveMessage` deletes by id;
  `RemoveMessage(id="__remove_all__")` clears);
* `concat`: a list seed and list writes, as with `operator.add` or list extension.

Otherwise the value stays unknown and the writes are shown instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ckpt.analysis.messages import is_message
from ckpt.decoders import MARK_KEY, TYPE_KEY
from ckpt.records.model import Checkpoint, CheckpointKey
from ckpt.records.plans import COUNTERS

OVERWRITE_TYPE: Final = "langgraph.types.Overwrite"
REMOVE_ALL: Final = "__remove_all__"
Reducer = Literal["messages", "concat"]
# How many ancestors a walk may visit: LangGraph snapshots every 100 updates by default,
# and at the latest after 5,000 supersteps (format.md §11).
MAX_WALK: Final = 5_001


@dataclass(slots=True)
class DeltaWrite:
    """One write to a delta channel on an ancestor: where it hangs and what it wrote."""

    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    value: Any


@dataclass(slots=True)
class DeltaValue:
    """A delta channel at one checkpoint: its seed, the writes since, and the value."""

    channel: str
    seed_checkpoint_id: str | None  # the ancestor holding the snapshot; None: starts empty
    seed: Any
    writes: list[DeltaWrite] = field(default_factory=list)
    reducer: Reducer | None = None
    value: Any = None
    rebuilt: bool = False
    complete: bool = True  # False: the walk hit a missing ancestor or the walk limit


ParentLoader = Callable[[CheckpointKey], Checkpoint | None]


def is_snapshot(value: Any) -> bool:
    return isinstance(value, dict) and value.get(MARK_KEY) == "delta_snapshot"


def snapshot_value(value: Any) -> Any:
    """A stored delta value as LangGraph reads it: a `_DeltaSnapshot` holds the value."""
    return value.get("value") if is_snapshot(value) else value


def delta_candidates(checkpoint: Checkpoint) -> list[str]:
    """Channels of this checkpoint that are delta channels with no value stored here."""
    values = checkpoint.values
    if values is None:
        return []
    counters = checkpoint.metadata.get(COUNTERS)
    named = set(counters) if isinstance(counters, dict) else set()
    return [c for c in checkpoint.channel_versions if c in named and c not in values]


def rebuild(checkpoint: Checkpoint, load_parent: ParentLoader) -> dict[str, DeltaValue]:
    """Every delta channel absent from `checkpoint`, rebuilt by walking its ancestors."""
    channels = delta_candidates(checkpoint)
    if not channels:
        return {}
    remaining = set(channels)
    collected: dict[str, list[DeltaWrite]] = {c: [] for c in channels}
    seeds: dict[str, tuple[str, Any]] = {}
    complete = True
    parent_id = checkpoint.parent_checkpoint_id
    visited = {checkpoint.checkpoint_id}
    steps = 0
    while parent_id is not None and remaining:
        steps += 1
        if parent_id in visited or steps > MAX_WALK:
            complete = False  # a parent cycle, or longer than LangGraph ever lets it get
            break
        visited.add(parent_id)
        key = CheckpointKey(checkpoint.thread_id, checkpoint.checkpoint_ns, parent_id)
        ancestor = load_parent(key)
        if ancestor is None:
            complete = False  # pruned or missing: the chain ends here
            break
        for write in reversed(ancestor.pending_writes or []):
            if write.channel in remaining:
                collected[write.channel].append(
                    DeltaWrite(
                        ancestor.checkpoint_id,
                        write.task_id,
                        write.task_path,
                        write.idx,
                        write.value,
                    )
                )
        stored = ancestor.values or {}
        for channel in list(remaining):
            if channel in stored:
                seeds[channel] = (ancestor.checkpoint_id, stored[channel])
                remaining.discard(channel)
        parent_id = ancestor.parent_checkpoint_id
    result: dict[str, DeltaValue] = {}
    for channel in channels:
        seed_id, seed = seeds.get(channel, (None, None))
        delta = DeltaValue(
            channel,
            seed_id,
            snapshot_value(seed),
            list(reversed(collected[channel])),
            complete=complete or channel in seeds,
        )
        if delta.complete:
            _apply(delta)
        result[channel] = delta
    return result


def _apply(delta: DeltaValue) -> None:
    base: Any = delta.seed
    writes = [w.value for w in delta.writes]
    # The last Overwrite resets the base; only writes after it reach the reducer
    # (DeltaChannel.replay_writes).
    for i, value in enumerate(writes):
        if isinstance(value, dict) and value.get(TYPE_KEY) == OVERWRITE_TYPE:
            base = value.get("value")
            writes = writes[i + 1 :]
    items = [*(base if isinstance(base, list) else []), *_flat(writes)]
    if (base is None or isinstance(base, list)) and items and all(is_message(m) for m in items):
        delta.reducer = "messages"
        delta.value = _messages(list(base or []), writes)
        delta.rebuilt = True
    elif (base is None or isinstance(base, list)) and all(isinstance(w, list) for w in writes):
        delta.reducer = "concat"
        delta.value = [*(base or []), *(item for w in writes for item in w)]
        delta.rebuilt = True


def _flat(writes: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(write)
    return flat


def _messages(state: list[Any], writes: list[Any]) -> list[Any]:
    """LangGraph's `_messages_delta_reducer` (pregel/_messages.py), on decoded messages."""
    messages = _flat(writes)
    for i in range(len(messages) - 1, -1, -1):
        if _is_remove(messages[i]) and messages[i].get("id") == REMOVE_ALL:
            state, messages = [], messages[i + 1 :]
            break
    index = {m.get("id"): i for i, m in enumerate(state) if m.get("id") is not None}
    result: list[Any] = list(state)
    for message in messages:
        mid = message.get("id")
        if mid is None:
            result.append(message)
        elif _is_remove(message):
            if mid in index:
                result[index.pop(mid)] = None
        elif mid in index:
            result[index[mid]] = message
        else:
            index[mid] = len(result)
            result.append(message)
    return [m for m in result if m is not None]


def _is_remove(message: Any) -> bool:
    return isinstance(message, dict) and (
        message.get("type") == "remove" or str(message.get(TYPE_KEY, "")).endswith("RemoveMessage")
    )


def store_loader(store: Any) -> ParentLoader:
    """A parent loader that reads each ancestor from the store (values included)."""
    from ckpt.errors import NotFound

    def load(key: CheckpointKey) -> Checkpoint | None:
        try:
            loaded: Checkpoint = store.load(key, values=True)
        except NotFound:
            return None
        return loaded

    return load
