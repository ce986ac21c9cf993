"""What each `ckpt migrate` step does to one checkpoint's rows (ckpt.ops.migrate applies
them): rename, drop or add a channel, rename a node with its trigger channel, task paths
and ids, interrupt ids, barriers and Sends; and the ids as LangGraph derives them
(`langgraph/pregel/_algo.py`, `langgraph/types.py`) and as LangGraph.js does
(`@langchain/langgraph` `pregel/algo.js`: uuid5 of a JSON array, named by the checkpoint
id; `interrupt.js`: the same xxh3-128 as Python). Values stored as msgpack (Python) and as
JSON (LangGraph.js, tag `json`) are both rewritten, each in its own form."""

from __future__ import annotations

import binascii
import json
import uuid
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any, Final

import ormsgpack
import xxhash

from ckpt.decoders.repack import (
    EXT_KW_ARGS,
    EXT_POS_ARGS,
    RawExt,
    ext_class,
    pack_raw,
    unpack_raw,
)
from ckpt.errors import CopyRefused
from ckpt.records.migration import (
    Blob,
    MigCheckpoint,
    MigrationRows,
    MigWrite,
    json_bytes,
    json_value,
)

PULL: Final = "__pregel_pull"
PUSH: Final = "__pregel_push"
TASKS: Final = "__pregel_tasks"
START: Final = "__start__"  # the channel that keeps the graph's input (a map of state keys)
INTERRUPT: Final = "__interrupt__"
NO_WRITES: Final = "__no_writes__"
RESUME: Final = "__resume__"
ANSWERS: Final = 32  # answers a task may have had before it asked: the interrupt ids tried
BUMPS: Final = "__snapshot_bumps__"  # versions_seen entry that is no node (format.md §11)
COUNTERS: Final = "counters_since_delta_snapshot"
# Writes that say a task did not finish (format.md §11: a task is finished iff it has an
# output write): dropping a channel must not leave a finished task without one.
CONTROL: Final = frozenset({INTERRUPT, "__resume__", "__error__", "__error_source_node__"})


# -- ids as LangGraph derives them ---------------------------------------------------------


def _hash_id(checkpoint_id: str, *parts: str) -> str | None:
    try:
        namespace = binascii.unhexlify(checkpoint_id.replace("-", ""))
    except (binascii.Error, ValueError):
        return None
    hexed = xxhash.xxh3_128_hexdigest(namespace + "".join(parts).encode("utf-8", "surrogatepass"))
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:32]}"


def task_ns(parent_ns: str, node: str) -> str:
    return f"{parent_ns}|{node}" if parent_ns else node


def pull_task_id(
    checkpoint_id: str, ns: str, step: int, node: str, triggers: Sequence[str]
) -> str | None:
    return _hash_id(checkpoint_id, task_ns(ns, node), str(step), node, PULL, *sorted(triggers))


def push_task_id(checkpoint_id: str, ns: str, step: int, node: str, index: int) -> str | None:
    return _hash_id(checkpoint_id, task_ns(ns, node), str(step), node, PUSH, str(index))


def _uuid5_id(checkpoint_id: str, parts: list[Any]) -> str | None:
    """LangGraph.js's task id: uuid5 of `JSON.stringify(parts)` in the namespace of the
    checkpoint id (`@langchain/langgraph-checkpoint` `uuid5`)."""
    try:
        namespace = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    name = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    try:
        return str(uuid.uuid5(namespace, name))
    except UnicodeEncodeError:
        return None


def js_pull_task_id(
    checkpoint_id: str, ns: str, step: int, node: str, triggers: Sequence[str]
) -> str | None:
    # LangGraph.js hashes the one trigger that fired, as a list (`[trigger]`).
    return _uuid5_id(checkpoint_id, [task_ns(ns, node), str(step), node, PULL, list(triggers)])


def js_push_task_id(checkpoint_id: str, ns: str, step: int, node: str, index: int) -> str | None:
    return _uuid5_id(checkpoint_id, [task_ns(ns, node), str(step), node, PUSH, str(index)])


# How a saver's task ids were made: Python LangGraph's (xxh3) or LangGraph.js's (uuid5).
PullId = Callable[[str, str, int, str, Sequence[str]], "str | None"]
PushId = Callable[[str, str, int, str, int], "str | None"]
ID_SCHEMES: Final[tuple[tuple[PullId, PushId], ...]] = (
    (pull_task_id, push_task_id),
    (js_pull_task_id, js_push_task_id),
)


def interrupt_id(task_ns: str, answered: int) -> str:
    text = f"{task_ns}|{answered}" if answered else task_ns
    return str(xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass")))


# -- the steps, one function each --------------------------------------------------------------


def names_in(checkpoint: MigCheckpoint) -> set[str]:
    names = set(checkpoint.values) | set(checkpoint.versions)
    updated = checkpoint.fields.get("updated_channels")
    if isinstance(updated, list):
        names.update(x for x in updated if isinstance(x, str))
    seen = checkpoint.fields.get("versions_seen")
    if isinstance(seen, dict):
        for node, inner in seen.items():
            if isinstance(inner, dict) and node != BUMPS:
                names.update(str(k) for k in inner)
    return names


def _renamed_key(mapping: dict[Any, Any], old: str, new: str) -> dict[Any, Any]:
    """`mapping` with key `old` called `new`, in the same place."""
    return {(new if k == old else k): v for k, v in mapping.items()}


def rename_channel(
    checkpoint: MigCheckpoint, writes: list[MigWrite], rows: MigrationRows, old: str, new: str
) -> set[str]:
    fields = checkpoint.fields
    where = f"checkpoint {checkpoint.checkpoint_id}"
    values, versions = checkpoint.values, checkpoint.versions
    if (old in values or old in versions) and (new in values or new in versions):
        raise CopyRefused(
            f"{where}: holds both {old!r} and {new!r}; rename into a name no checkpoint has"
        )
    if old in values:
        fields["channel_values"] = _renamed_key(values, old, new)
    if old in versions:
        version = versions[old]
        fields["channel_versions"] = _renamed_key(versions, old, new)
        if rows.split:
            found = rows.blobs.get((checkpoint.checkpoint_ns, old, str(version)))
            if found is not None:
                rows.blobs[(checkpoint.checkpoint_ns, new, str(version))] = found
    updated = fields.get("updated_channels")
    if isinstance(updated, list):
        fields["updated_channels"] = [new if x == old else x for x in updated]
    seen = fields.get("versions_seen")
    if isinstance(seen, dict):
        for node, inner in list(seen.items()):
            if not isinstance(inner, dict):
                continue
            if node == BUMPS:
                seen[node] = {_bump_key(k, channel=(old, new)): v for k, v in inner.items()}
            elif old in inner:
                seen[node] = _renamed_key(inner, old, new)
    _rename_in_metadata(checkpoint.metadata, channel=(old, new))
    for write in writes:
        if write.channel == old:
            write.channel = new
    _rename_in_input(checkpoint, writes, rows, old, new)
    return {old}


def _rename_in_input(
    checkpoint: MigCheckpoint,
    writes: list[MigWrite],
    rows: MigrationRows,
    old: str,
    new: str | None,
) -> None:
    """The graph input a run starts from, kept as the `__start__` channel's value (a map
    of state keys): its key renamed (None: dropped), in the body, its blob or a write."""

    def rekeyed(blob: Blob) -> Blob:
        tag, data = blob
        is_json, value = json_value(blob)
        if is_json:
            pack: Callable[[Any], bytes] = json_bytes
        elif tag == "msgpack" and data:
            value, pack = unpack_raw(data), pack_raw
        else:
            return blob
        if not isinstance(value, dict) or old not in value:
            return blob
        if new is None:
            return (tag, pack({k: v for k, v in value.items() if k != old}))
        if new in value:
            raise CopyRefused(
                f"checkpoint {checkpoint.checkpoint_id}: its input holds both {old!r} and {new!r}"
            )
        return (tag, pack(_renamed_key(value, old, new)))

    values = checkpoint.values
    if START in values:
        values[START] = rekeyed(values[START])
    key = (checkpoint.checkpoint_ns, START, str(checkpoint.versions.get(START)))
    if rows.split and key in rows.blobs:
        rows.blobs[key] = rekeyed(rows.blobs[key])
    for write in writes:
        if write.channel == START:
            write.type, write.data = rekeyed((write.type, write.data))


def _bump_key(
    key: Any, *, channel: tuple[str, str] | None = None, node: tuple[str, str] | None = None
) -> Any:
    """A `__snapshot_bumps__` key (`node|channel` or `node:channel`) renamed."""
    if not isinstance(key, str):
        return key
    for sep in ("|", ":"):
        head, found, tail = key.partition(sep)
        if found:
            if channel is not None and tail == channel[0]:
                tail = channel[1]
            if node is not None and head == node[0]:
                head = node[1]
            return f"{head}{sep}{tail}"
    return key


def _rename_in_metadata(
    metadata: dict[str, Any],
    *,
    channel: tuple[str, str] | None = None,
    node: tuple[str, str] | None = None,
    drop: str | None = None,
) -> None:
    """Metadata that names channels (`counters_since_delta_snapshot`; the channels of a
    node's output under `writes`, langgraph <1.0) and nodes (`writes`' keys)."""
    counters = metadata.get(COUNTERS)
    if isinstance(counters, dict):
        if drop is not None:
            counters.pop(drop, None)
        elif channel is not None and channel[0] in counters:
            metadata[COUNTERS] = _renamed_key(counters, *channel)
    outputs = metadata.get("writes")
    if isinstance(outputs, dict):
        if node is not None and node[0] in outputs:
            metadata["writes"] = outputs = _renamed_key(outputs, *node)
        for name, output in list(outputs.items()):
            if not isinstance(output, dict):
                continue
            if drop is not None:
                output.pop(drop, None)
            elif channel is not None and channel[0] in output:
                outputs[name] = _renamed_key(output, *channel)


def drop_channel(
    checkpoint: MigCheckpoint, writes: list[MigWrite], rows: MigrationRows, name: str
) -> None:
    fields = checkpoint.fields
    _rename_in_input(checkpoint, writes, rows, name, None)
    checkpoint.values.pop(name, None)
    checkpoint.versions.pop(name, None)
    updated = fields.get("updated_channels")
    if isinstance(updated, list):
        fields["updated_channels"] = [x for x in updated if x != name]
    seen = fields.get("versions_seen")
    if isinstance(seen, dict):
        for node, inner in seen.items():
            if not isinstance(inner, dict):
                continue
            if node == BUMPS:
                for key in [k for k in inner if _bump_key(k, channel=(name, "")) != k]:
                    del inner[key]
            else:
                inner.pop(name, None)
    _rename_in_metadata(checkpoint.metadata, drop=name)
    # A task whose only output was the dropped channel keeps an output write: LangGraph
    # counts a task finished iff it has one, and would run it again otherwise.
    by_task: dict[str, list[MigWrite]] = {}
    for write in writes:
        by_task.setdefault(write.task_id, []).append(write)
    kept: list[MigWrite] = []
    for task_writes in by_task.values():
        outputs = [w for w in task_writes if w.channel not in CONTROL]
        left = [w for w in task_writes if w.channel != name]
        if outputs and not any(w.channel not in CONTROL for w in left):
            first = next(w for w in task_writes if w.channel == name)
            # As each saver writes `(NO_WRITES, None)`: LangGraph.js's serializer as JSON.
            tag, data = ("json", b"null") if first.type == "json" else ("null", b"")
            left.append(
                MigWrite(first.checkpoint_ns, first.checkpoint_id, first.task_id,
                         first.task_path, first.idx, NO_WRITES, tag, data)
            )  # fmt: skip
        kept.extend(left)
    writes[:] = kept


def add_channel(checkpoint: MigCheckpoint, rows: MigrationRows, name: str, value: Any) -> None:
    if name in checkpoint.values or name in checkpoint.versions:
        return
    versions = checkpoint.versions
    integers = checkpoint.serde == "json" or (  # LangGraph.js counts versions 1, 2, ...
        bool(versions) and all(type(v) is int for v in versions.values())
    )
    version: Any = 1 if integers else f"{1:032}.{0.0:016}"
    versions[name] = version
    checkpoint.fields["channel_versions"] = versions
    if checkpoint.serde == "json":  # a LangGraph.js body: every value JSON, in the body
        checkpoint.values[name] = ("json", json_bytes(value))
        checkpoint.fields["channel_values"] = checkpoint.values
        return
    tags = {tag for tag, _ in rows.blobs.values()} if rows.split else set()
    if "json" in tags and "msgpack" not in tags:
        # Values kept apart as JSON (LangGraph.js's PostgresSaver, which reads every value
        # from its blob, none inline): the new one too.
        rows.blobs[(checkpoint.checkpoint_ns, name, str(version))] = ("json", json_bytes(value))
        return
    packed: Blob = ("msgpack", ormsgpack.packb(value))
    if rows.split and not _primitive(value):
        rows.blobs[(checkpoint.checkpoint_ns, name, str(version))] = packed
    else:
        checkpoint.values[name] = packed
        checkpoint.fields["channel_values"] = checkpoint.values


def primitive_bytes(data: bytes) -> bool:
    try:
        return _primitive(ormsgpack.unpackb(data))
    except (ValueError, TypeError):
        return False  # an ext: not a primitive


def _primitive(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _node_channel(channel: str, old: str, new: str) -> str:
    """A channel named after a node (`branch:to:NODE`; a barrier `join:A+B:NODE`)."""
    if channel == f"branch:to:{old}":
        return f"branch:to:{new}"
    if channel.startswith("join:"):
        _, starts, end = channel.split(":", 2) if channel.count(":") >= 2 else ("", "", "")
        if starts or end:
            names = [new if s == old else s for s in starts.split("+")]
            return f"join:{'+'.join(names)}:{new if end == old else end}"
    return channel


def rename_node(
    checkpoint: MigCheckpoint, writes: list[MigWrite], rows: MigrationRows, old: str, new: str
) -> set[str]:
    where = f"checkpoint {checkpoint.checkpoint_id}"
    ns = checkpoint.checkpoint_ns
    if any(part.split(":")[0] == old for part in ns.split("|")) and ns:
        raise CopyRefused(
            f"{where}: a subgraph namespace of node {old!r} ({ns!r}); renaming a subgraph "
            "node is not supported yet"
        )
    fields = checkpoint.fields
    seen = fields.get("versions_seen")
    if isinstance(seen, dict):
        if old in seen and new in seen:
            raise CopyRefused(f"{where}: both nodes {old!r} and {new!r} have run")
        renamed = _renamed_key(seen, old, new)
        if isinstance(renamed.get(BUMPS), dict):
            renamed[BUMPS] = {_bump_key(k, node=(old, new)): v for k, v in renamed[BUMPS].items()}
        fields["versions_seen"] = renamed
    _rename_in_metadata(checkpoint.metadata, node=(old, new))
    # Task ids first: they hash the triggers as the old graph named them.
    metadata_step = checkpoint.metadata.get("step")
    step = (metadata_step if isinstance(metadata_step, int) else -1) + 1
    channels = set(checkpoint.versions) | {w.channel for w in writes}
    _rename_tasks(checkpoint, writes, step, channels, old, new)
    touched: set[str] = set()
    names = set(checkpoint.versions) | set(checkpoint.values) | {w.channel for w in writes}
    for channel in sorted(names):
        renamed_channel = _node_channel(channel, old, new)
        if renamed_channel != channel:
            touched |= rename_channel(checkpoint, writes, rows, channel, renamed_channel)
    # Barriers (`add_edge([A, B], NODE)`) keep the names of the nodes that finished: their
    # value is a set of node names, each write to them a node name.
    for channel in [c for c in checkpoint.versions if c.startswith("join:")]:
        if channel in checkpoint.values:
            checkpoint.values[channel] = _barrier_renamed(checkpoint.values[channel], old, new)
        key = (checkpoint.checkpoint_ns, channel, str(checkpoint.versions[channel]))
        if rows.split and key in rows.blobs:
            rows.blobs[key] = _barrier_renamed(rows.blobs[key], old, new)
    for write in writes:
        if write.channel.startswith("join:"):
            write.type, write.data = _barrier_renamed((write.type, write.data), old, new)
    # Sends to the node, pending in the body (`__pregel_tasks`) or in writes.
    tasks_value = checkpoint.values.get(TASKS)
    if tasks_value is not None:
        checkpoint.values[TASKS] = _sends_renamed(tasks_value, old, new)
    tasks_key = (checkpoint.checkpoint_ns, TASKS, str(checkpoint.versions.get(TASKS)))
    if rows.split and tasks_key in rows.blobs:  # Postgres: one blob for every checkpoint
        rows.blobs[tasks_key] = _sends_renamed(rows.blobs[tasks_key], old, new)
    for write in writes:
        if write.channel == TASKS:
            write.type, write.data = _sends_renamed((write.type, write.data), old, new)
    return touched


def _rename_tasks(
    checkpoint: MigCheckpoint,
    writes: list[MigWrite],
    step: int,
    channels: set[str],
    old: str,
    new: str,
) -> None:
    """The writes of the node's tasks: task path, task id and interrupt ids as LangGraph
    (or LangGraph.js, whichever made the id) derives them for the renamed node."""
    cid, ns = checkpoint.checkpoint_id, checkpoint.checkpoint_ns
    tasks: dict[str, list[MigWrite]] = {}
    for write in writes:
        tasks.setdefault(write.task_id, []).append(write)
    sends = _send_count(checkpoint) if any(not w.task_path for w in writes) else 0
    # LangGraph.js keeps the answers of `Command({resume: {interruptId: value}})` as
    # `__resume__` writes under the interrupt's id (`pregel/io.js` mapCommand): they follow
    # the renamed task's interrupt ids.
    by_interrupt = [w for w in writes if w.channel == RESUME and len(w.task_id) == 32]
    interrupts: dict[str, str] = {}
    for task_id, task_writes in tasks.items():
        if len(task_id) == 32:
            continue  # an interrupt id, not a task's
        path = task_writes[0].task_path
        new_id: str | None = None
        new_path = path
        owner = old  # the node whose task it is
        found = None
        if not path or path == f"~{PULL}, {old}":
            found = _pull_triggers(cid, ns, step, old, task_id, channels)
        if path == f"~{PULL}, {old}" or (not path and found):
            if found is None:
                raise CopyRefused(
                    f"checkpoint {cid}: cannot derive the triggers of task {task_id} of node "
                    f"{old!r} (its id is not LangGraph's), so not its new id"
                )
            (pull_id, _), triggers = found
            renamed = [_node_channel(t, old, new) for t in triggers]
            new_id = pull_id(cid, ns, step, new, renamed)
            new_path = f"~{PULL}, {new}" if path else path
        elif path.startswith(f"~{PUSH}, "):
            try:
                index = int(path.split(", ")[1])
            except (IndexError, ValueError):
                continue
            for _, push_id in ID_SCHEMES:
                if push_id(cid, ns, step, old, index) == task_id:
                    new_id = push_id(cid, ns, step, new, index)
        elif not path:
            # No task path stored (LangGraph.js, older Python savers): a Send's task is
            # known by its id, over the indexes of the Sends pending here.
            for index in range(sends):
                for _, push_id in ID_SCHEMES:
                    if push_id(cid, ns, step, old, index) == task_id:
                        new_id = push_id(cid, ns, step, new, index)
        elif path.startswith(f"~{PULL}, "):
            # Another node's task: its id changes only when a trigger names the renamed
            # node (a barrier `join:OLD+B:NODE` of `add_edge([...], NODE)`).
            node = path[len(f"~{PULL}, ") :]
            if pull_task_id(cid, ns, step, node, (f"branch:to:{node}",)) == task_id:
                continue
            other = _pull_triggers(cid, ns, step, node, task_id, channels)
            if other is None:
                continue
            (pull_id, _), triggers = other
            renamed = [_node_channel(t, old, new) for t in triggers]
            if list(triggers) == renamed:
                continue
            new_id = pull_id(cid, ns, step, node, renamed)
            owner = node
        if new_id is None:
            continue
        renamed_owner = new if owner == old else owner
        old_ns = f"{task_ns(ns, owner)}:{task_id}"
        new_ns = f"{task_ns(ns, renamed_owner)}:{new_id}"
        _retask(task_writes, new_id, new_path, old_ns, new_ns, cid)
        if by_interrupt:
            answers = range(len(task_writes) + len(by_interrupt) + ANSWERS)
            interrupts |= {interrupt_id(old_ns, n): interrupt_id(new_ns, n) for n in answers}
    for write in by_interrupt:
        write.task_id = interrupts.get(write.task_id, write.task_id)


def _send_count(checkpoint: MigCheckpoint) -> int:
    """How many Sends the checkpoint holds pending (`__pregel_tasks`, in its body)."""
    blob = checkpoint.values.get(TASKS)
    if blob is None:
        return 0
    is_json, value = json_value(blob)
    if not is_json and blob[0] == "msgpack" and blob[1]:
        value = unpack_raw(blob[1])
    return len(value) if isinstance(value, list) else 0


def _retask(
    task_writes: list[MigWrite], new_id: str, new_path: str, old_ns: str, new_ns: str, cid: str
) -> None:
    """A task's writes under its new id and path, its interrupts with their new ids."""
    for write in task_writes:
        write.task_id = new_id
        write.task_path = new_path
        if write.channel == INTERRUPT:
            write.type, write.data = _interrupts_renamed(
                (write.type, write.data), old_ns, new_ns, cid
            )


def _pull_triggers(
    cid: str, ns: str, step: int, node: str, task_id: str, channels: set[str]
) -> tuple[tuple[PullId, PushId], tuple[str, ...]] | None:
    """The id scheme (Python LangGraph's or LangGraph.js's) and the trigger channels a pull
    task's id was hashed with: `branch:to:NODE` (every StateGraph node of langgraph 1.x
    and LangGraph.js), with a barrier of its (`join:A+B:NODE`), else any one or two
    channels of the checkpoint."""
    first = f"branch:to:{node}"
    for scheme in ID_SCHEMES:
        if scheme[0](cid, ns, step, node, (first,)) == task_id:
            return scheme, (first,)
    for scheme in ID_SCHEMES:
        pull_id = scheme[0]
        for channel in sorted(channels):
            if channel.startswith("join:") and channel.endswith(f":{node}"):
                pair = tuple(sorted((first, channel)))
                if pull_id(cid, ns, step, node, pair) == task_id:
                    return scheme, pair
        names = sorted(channels | {first})
        for size in (1, 2):
            for triggers in combinations(names, size):
                if pull_id(cid, ns, step, node, triggers) == task_id:
                    return scheme, triggers
    return None


def _interrupts_renamed(blob: Blob, old_ns: str, new_ns: str, cid: str) -> Blob:
    """An `__interrupt__` write's Interrupts with the ids of the renamed task."""
    tag, data = blob
    is_json, items = json_value(blob)
    if not is_json and (tag != "msgpack" or not data):
        raise CopyRefused(f"checkpoint {cid}: an interrupt stored as {tag!r} cannot be renamed")
    if not is_json:
        items = unpack_raw(data or b"")
    if not isinstance(items, list):
        return blob
    # n: how many answers the task had when it asked (a resumed task asks again).
    ids = {interrupt_id(old_ns, n): n for n in range(len(items) + ANSWERS)}
    if is_json:  # LangGraph.js: a list of plain {"id", "value"} objects
        for item in items:
            if isinstance(item, dict) and item.get("id") in ids:
                item["id"] = interrupt_id(new_ns, ids[item["id"]])
        return (tag, json_bytes(items))
    out = []
    for item in items:
        found = ext_class(item) if isinstance(item, RawExt) else None
        if found is not None and item.code == EXT_KW_ARGS and found[1] == "Interrupt":
            module, name, payload = found
            kwargs = payload[2]
            if isinstance(kwargs, dict) and kwargs.get("id") in ids:
                kwargs["id"] = interrupt_id(new_ns, ids[kwargs["id"]])
                item = RawExt(EXT_KW_ARGS, pack_raw(payload))
        out.append(item)
    return (tag, pack_raw(out))


def _barrier_renamed(blob: Blob, old: str, new: str) -> Blob:
    """A barrier's value (a set of node names: ext 0 `builtins.set`) or a write to it (a
    node name) with `old` called `new`; LangGraph.js keeps the set as
    `{"lc": 2, "type": "constructor", "id": ["Set"], "args": [[names]]}`."""
    tag, data = blob
    is_json, value = json_value(blob)
    if is_json:
        if value == old:
            return (tag, json_bytes(new))
        args = value.get("args") if isinstance(value, dict) else None
        if isinstance(args, list) and args and value.get("id") == ["Set"]:
            if isinstance(args[0], list) and old in args[0]:
                args[0] = [new if item == old else item for item in args[0]]
                return (tag, json_bytes(value))
        return blob
    if tag != "msgpack" or not data:
        return blob
    value = unpack_raw(data)
    if value == old:
        return (tag, pack_raw(new))
    found = ext_class(value) if isinstance(value, RawExt) else None
    if found is not None and found[1] in ("set", "frozenset") and isinstance(found[2][2], list):
        payload = found[2]
        if old in payload[2]:
            payload[2] = [new if item == old else item for item in payload[2]]
            return (tag, pack_raw(RawExt(value.code, pack_raw(payload))))
    return blob


def _sends_renamed(blob: Blob, old: str, new: str) -> Blob:
    """A value holding Sends (a list of them, or one) with those to `old` sent to `new`;
    LangGraph.js keeps a Send as `{"lg_name": "Send", "node", "args"}`."""
    tag, data = blob
    is_json, value = json_value(blob)
    if is_json:
        changed = False
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and item.get("node") == old and "args" in item:
                item["node"] = new
                changed = True
        return (tag, json_bytes(value)) if changed else blob
    if tag != "msgpack" or not data:
        return blob
    value = unpack_raw(data)
    changed = False

    def renamed(item: Any) -> Any:
        nonlocal changed
        found = ext_class(item) if isinstance(item, RawExt) else None
        if found is not None and item.code == EXT_POS_ARGS and found[1] == "Send":
            payload = found[2]
            args = payload[2]
            if isinstance(args, list) and args and args[0] == old:
                args[0] = new
                changed = True
                return RawExt(EXT_POS_ARGS, pack_raw(payload))
        return item

    value = [renamed(i) for i in value] if isinstance(value, list) else renamed(value)
    return (tag, pack_raw(value)) if changed else blob
