"""`ckpt migrate`: rename, drop or add a graph's channels and nodes in saved threads, the
plan first, then one thread per transaction, read back before it commits.

A step changes every place its name lives (docs/migrate.md): channel values, versions,
`updated_channels`, `versions_seen` (keys are nodes, inner keys channels), separately kept
blobs, pending writes, metadata that names channels or nodes, and for a renamed node its
trigger channel `branch:to:NAME`, the task path and task id LangGraph derives for it
(`langgraph/pregel/_algo.py`: xxh3-128 over the checkpoint id, the task namespace, the
step, the node, `__pregel_pull` and the sorted triggers) and the ids of the interrupts it
raised (`langgraph/types.py` `_interrupt_id`: xxh3-128 of `namespace:task_id`), so that
LangGraph finds the saved writes and answers on resume and runs no node twice.

Each migrated checkpoint lists the names of the steps it went through in its metadata
(MIGRATED_KEY): a step a checkpoint lists is skipped, so a second run changes nothing.
"""

from __future__ import annotations

import binascii
import difflib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Final

import ormsgpack
import xxhash

from ckpt.decoders import decode
from ckpt.decoders.repack import (
    EXT_KW_ARGS,
    EXT_POS_ARGS,
    RawExt,
    encode_value,
    ext_class,
    pack_raw,
    unpack_raw,
)
from ckpt.errors import CkptError, CopyRefused, DecodeError, MigrationMismatch, Unsafe
from ckpt.ops.run import Run
from ckpt.ops.user_graph import graph_loader
from ckpt.records.migration import (
    MIGRATED_KEY,
    Blob,
    BlobKey,
    MigCheckpoint,
    MigrationRows,
    MigWrite,
    Step,
    check_steps,
    step_record,
)
from ckpt.records.types import (
    MigrateHead,
    MigrateThreadRecord,
    MigrateTotals,
)
from ckpt.stores.base import Store

PULL: Final = "__pregel_pull"
PUSH: Final = "__pregel_push"
TASKS: Final = "__pregel_tasks"
START: Final = "__start__"  # the channel that keeps the graph's input (a map of state keys)
INTERRUPT: Final = "__interrupt__"
NO_WRITES: Final = "__no_writes__"
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


def _task_ns(parent_ns: str, node: str) -> str:
    return f"{parent_ns}|{node}" if parent_ns else node


def pull_task_id(
    checkpoint_id: str, ns: str, step: int, node: str, triggers: Sequence[str]
) -> str | None:
    return _hash_id(checkpoint_id, _task_ns(ns, node), str(step), node, PULL, *sorted(triggers))


def push_task_id(checkpoint_id: str, ns: str, step: int, node: str, index: int) -> str | None:
    return _hash_id(checkpoint_id, _task_ns(ns, node), str(step), node, PUSH, str(index))


def interrupt_id(task_ns: str, answered: int) -> str:
    text = f"{task_ns}|{answered}" if answered else task_ns
    return str(xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass")))


# -- rewriting one thread ------------------------------------------------------------------


@dataclass
class Outcome:
    """What a rewrite changed in one thread."""

    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    steps: list[str] = field(default_factory=list)
    example: tuple[MigCheckpoint, MigCheckpoint, list[MigWrite], list[MigWrite]] | None = None


class Rewriter:
    """The plan's steps applied to one thread's rows (a pure function of them: the store
    calls it inside its transaction, the dry run on what its reader read)."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        latest: bool,
        aes_key: bytes | None = None,
        example: bool = True,
    ):
        self.steps = list(steps)
        self.example = example  # keep one checkpoint before and after, for the diff
        self.latest = latest
        self.aes_key = aes_key
        self.outcome = Outcome()
        self.blob_changed = False

    def __call__(self, rows: MigrationRows) -> MigrationRows | None:
        self.outcome = outcome = Outcome()
        new = _clone_rows(rows)
        chosen = self._chosen(new)
        writes_at: dict[tuple[str, str], list[MigWrite]] = {}
        for write in new.writes:
            writes_at.setdefault((write.checkpoint_ns, write.checkpoint_id), []).append(write)
        touched: set[str] = set()
        transformed: dict[BlobKey, Blob] = {}
        names_before = {s.name for s in self.steps}
        for checkpoint in new.checkpoints:
            if checkpoint.checkpoint_id not in chosen.get(checkpoint.checkpoint_ns, ()):
                continue
            done = checkpoint.metadata.get(MIGRATED_KEY)
            done = list(done) if isinstance(done, list) else []
            due = [s for s in self.steps if s.name not in done]
            if not due:
                continue
            key = (checkpoint.checkpoint_ns, checkpoint.checkpoint_id)
            original = _clone_checkpoint(checkpoint)
            writes = writes_at.get(key, [])
            original_writes = [_clone_write(w) for w in writes]
            self.blob_changed = False
            if isinstance(new.blobs, _Blobs):
                new.blobs.changed = False
            for step in due:
                touched |= self._apply(step, checkpoint, writes, new, transformed)
            writes_at[key] = writes
            if (
                checkpoint.fields == original.fields
                and checkpoint.metadata == original.metadata
                and writes == original_writes
                and not self.blob_changed
                and not (isinstance(new.blobs, _Blobs) and new.blobs.changed)
            ):
                continue  # no step names anything here: the checkpoint stays as it is
            checkpoint.metadata[MIGRATED_KEY] = done + [s.name for s in due]
            outcome.checkpoints += 1
            outcome.writes += sum(
                1 for a, b in zip(original_writes, writes, strict=False) if a != b
            ) + abs(len(original_writes) - len(writes))
            for s in due:
                if s.name not in outcome.steps and s.name in names_before:
                    outcome.steps.append(s.name)
            if self.example and (
                outcome.example is None
                or (
                    checkpoint.checkpoint_ns == ""
                    and checkpoint.checkpoint_id > outcome.example[0].checkpoint_id
                )
            ):
                outcome.example = (
                    original,
                    _clone_checkpoint(checkpoint),
                    original_writes,
                    list(writes),
                )
        if not outcome.checkpoints:
            return None
        new.writes = [w for ws in writes_at.values() for w in ws]
        new.writes.sort(key=lambda w: (w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx))
        _close_gaps(new.writes, rows.writes)
        if new.split:
            outcome.blobs = self._settle_blobs(rows, new, touched)
        self._check_no_old_names(new, chosen)
        return new

    def _chosen(self, rows: MigrationRows) -> dict[str, set[str]]:
        by_ns: dict[str, set[str]] = {}
        for checkpoint in rows.checkpoints:
            by_ns.setdefault(checkpoint.checkpoint_ns, set()).add(checkpoint.checkpoint_id)
        if self.latest:
            return {ns: {max(ids)} for ns, ids in by_ns.items()}
        return by_ns

    # -- the steps ---------------------------------------------------------------------------
    def _apply(
        self,
        step: Step,
        checkpoint: MigCheckpoint,
        writes: list[MigWrite],
        rows: MigrationRows,
        transformed: dict[BlobKey, Blob],
    ) -> set[str]:
        """Apply one step to a checkpoint and its writes; the channel names whose blobs
        may now be unused."""
        if step.kind == "rename_channel":
            assert step.new is not None
            return _rename_channel(checkpoint, writes, rows, step.old, step.new)
        if step.kind == "drop_channel":
            _drop_channel(checkpoint, writes, rows, step.old)
            return {step.old}
        if step.kind == "rename_node":
            assert step.new is not None
            return _rename_node(checkpoint, writes, rows, step.old, step.new)
        if step.kind == "add_channel":
            _add_channel(checkpoint, rows, step.old, step.value)
            return set()
        self._transform(step, checkpoint, rows, transformed)
        return set()

    def _transform(
        self,
        step: Step,
        checkpoint: MigCheckpoint,
        rows: MigrationRows,
        transformed: dict[BlobKey, Blob],
    ) -> None:
        channel, function = step.old, step.function
        assert function is not None
        where = f"checkpoint {checkpoint.checkpoint_id}: channel {channel!r}"
        values = checkpoint.values
        version = checkpoint.versions.get(channel)
        key = (checkpoint.checkpoint_ns, channel, str(version))
        if channel in values:
            result = self._transformed(values[channel], function, where)
            if rows.split and not _primitive_bytes(result[1] or b""):
                # A store that keeps only primitives inline keeps this one as a blob.
                del values[channel]
                rows.blobs[key] = result
                self.blob_changed = True
            else:
                values[channel] = result
        elif rows.split and key in rows.blobs:
            if key not in transformed:
                transformed[key] = self._transformed(rows.blobs[key], function, where)
                rows.blobs[key] = transformed[key]
            self.blob_changed = True

    def _transformed(self, blob: Blob, function: Callable[[Any], Any], where: str) -> Blob:
        tag, data = blob
        if tag == "empty":
            return blob
        try:
            value = decode(tag, data, aes_key=self.aes_key)
        except DecodeError as exc:
            raise CopyRefused(f"{where}: cannot decode it for the transform ({exc})") from None
        try:
            result = function(value)
        except Exception as exc:
            raise Unsafe(
                f"{where}: the transform raised {type(exc).__name__}: {exc}; nothing changed"
            ) from None
        return ("msgpack", encode_value(result, where))

    # -- blobs and the final check -----------------------------------------------------------
    def _settle_blobs(self, before: MigrationRows, after: MigrationRows, touched: set[str]) -> int:
        """Delete the blobs of renamed or dropped channels no checkpoint names any more;
        the number of blob rows changed."""
        named = {
            (c.checkpoint_ns, ch, str(v)) for c in after.checkpoints for ch, v in c.versions.items()
        }
        for key in list(after.blobs):
            if key[1] in touched and key not in named:
                del after.blobs[key]
        changed = sum(1 for k, v in after.blobs.items() if before.blobs.get(k) != v)
        return changed + sum(1 for k in before.blobs if k not in after.blobs)

    def _check_no_old_names(self, rows: MigrationRows, chosen: dict[str, set[str]]) -> None:
        """A renamed or dropped channel left anywhere in a migrated checkpoint is a bug in
        ckpt: refuse the thread rather than write it half done."""
        gone: set[str] = set()
        for step in self.steps:
            if step.kind in ("rename_channel", "drop_channel"):
                gone.add(step.old)
            elif step.kind == "rename_node":
                gone.add(f"branch:to:{step.old}")
        if not gone:
            return
        left: dict[tuple[str, str], set[str]] = {}  # old names pending writes still use
        for write in rows.writes:
            if write.channel in gone:
                left.setdefault((write.checkpoint_ns, write.checkpoint_id), set()).add(
                    write.channel
                )
        for checkpoint in rows.checkpoints:
            if checkpoint.checkpoint_id not in chosen.get(checkpoint.checkpoint_ns, ()):
                continue
            found = _names_in(checkpoint) & gone
            found |= left.get((checkpoint.checkpoint_ns, checkpoint.checkpoint_id), set())
            if found:
                raise CopyRefused(
                    f"checkpoint {checkpoint.checkpoint_id}: {sorted(found)[0]!r} is still "
                    "named after the migration (a bug in ckpt); nothing changed"
                )


def _plain_copy(value: Any) -> Any:
    """A copy of plain data (dicts, lists, JSON values); bytes, tuples and Packed are
    immutable and shared."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def _clone_checkpoint(checkpoint: MigCheckpoint) -> MigCheckpoint:
    return MigCheckpoint(
        checkpoint.checkpoint_ns,
        checkpoint.checkpoint_id,
        checkpoint.parent_checkpoint_id,
        _plain_copy(checkpoint.fields),
        _plain_copy(checkpoint.metadata),
    )


def _clone_write(write: MigWrite) -> MigWrite:
    return MigWrite(
        write.checkpoint_ns, write.checkpoint_id, write.task_id, write.task_path,
        write.idx, write.channel, write.type, write.data,
    )  # fmt: skip


class _Blobs(dict[BlobKey, Blob]):
    """A thread's blobs that note whether a step changed one (a blob can change while its
    checkpoint's own fields do not: the input under `__start__`, pending Sends)."""

    changed = False

    def __setitem__(self, key: BlobKey, value: Blob) -> None:
        if self.get(key) != value:
            self.changed = True
        super().__setitem__(key, value)

    def __delitem__(self, key: BlobKey) -> None:
        self.changed = True
        super().__delitem__(key)


def _clone_rows(rows: MigrationRows) -> MigrationRows:
    """A copy the steps may change: the stored values' bytes are shared, never changed."""
    return MigrationRows(
        rows.thread_id,
        [_clone_checkpoint(c) for c in rows.checkpoints],
        [_clone_write(w) for w in rows.writes],
        _Blobs(rows.blobs),
        rows.split,
    )


def _names_in(checkpoint: MigCheckpoint) -> set[str]:
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


def _rename_channel(
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
        if tag != "msgpack" or not data:
            return blob
        value = unpack_raw(data)
        if not isinstance(value, dict) or old not in value:
            return blob
        if new is None:
            return (tag, pack_raw({k: v for k, v in value.items() if k != old}))
        if new in value:
            raise CopyRefused(
                f"checkpoint {checkpoint.checkpoint_id}: its input holds both {old!r} and {new!r}"
            )
        return (tag, pack_raw(_renamed_key(value, old, new)))

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


def _drop_channel(
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
            left.append(
                MigWrite(first.checkpoint_ns, first.checkpoint_id, first.task_id,
                         first.task_path, first.idx, NO_WRITES, "null", b"")
            )  # fmt: skip
        kept.extend(left)
    writes[:] = kept


def _add_channel(checkpoint: MigCheckpoint, rows: MigrationRows, name: str, value: Any) -> None:
    if name in checkpoint.values or name in checkpoint.versions:
        return
    versions = checkpoint.versions
    integers = bool(versions) and all(type(v) is int for v in versions.values())
    version: Any = 1 if integers else f"{1:032}.{0.0:016}"
    versions[name] = version
    checkpoint.fields["channel_versions"] = versions
    packed: Blob = ("msgpack", ormsgpack.packb(value))
    if rows.split and not _primitive(value):
        rows.blobs[(checkpoint.checkpoint_ns, name, str(version))] = packed
    else:
        checkpoint.values[name] = packed
        checkpoint.fields["channel_values"] = checkpoint.values


def _primitive_bytes(data: bytes) -> bool:
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


def _rename_node(
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
            touched |= _rename_channel(checkpoint, writes, rows, channel, renamed_channel)
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
    derives them for the renamed node."""
    cid, ns = checkpoint.checkpoint_id, checkpoint.checkpoint_ns
    tasks: dict[str, list[MigWrite]] = {}
    for write in writes:
        tasks.setdefault(write.task_id, []).append(write)
    for task_id, task_writes in tasks.items():
        path = task_writes[0].task_path
        new_id: str | None = None
        new_path = path
        if path == f"~{PULL}, {old}" or (
            not path and _pull_triggers(cid, ns, step, old, task_id, channels)
        ):
            triggers = _pull_triggers(cid, ns, step, old, task_id, channels)
            if triggers is None:
                raise CopyRefused(
                    f"checkpoint {cid}: cannot derive the triggers of task {task_id} of node "
                    f"{old!r} (its id is not LangGraph's), so not its new id"
                )
            renamed = [_node_channel(t, old, new) for t in triggers]
            new_id = pull_task_id(cid, ns, step, new, renamed)
            new_path = f"~{PULL}, {new}" if path else path
        elif path.startswith(f"~{PUSH}, "):
            try:
                index = int(path.split(", ")[1])
            except (IndexError, ValueError):
                continue
            if push_task_id(cid, ns, step, old, index) == task_id:
                new_id = push_task_id(cid, ns, step, new, index)
        elif path.startswith(f"~{PULL}, "):
            # Another node's task: its id changes only when a trigger names the renamed
            # node (a barrier `join:OLD+B:NODE` of `add_edge([...], NODE)`).
            node = path[len(f"~{PULL}, ") :]
            if pull_task_id(cid, ns, step, node, (f"branch:to:{node}",)) == task_id:
                continue
            triggers = _pull_triggers(cid, ns, step, node, task_id, channels)
            renamed = [_node_channel(t, old, new) for t in triggers or ()]
            if triggers is None or list(triggers) == renamed:
                continue
            new_id = pull_task_id(cid, ns, step, node, renamed)
            if new_id is None:
                continue
            old_ns, new_ns = f"{_task_ns(ns, node)}:{task_id}", f"{_task_ns(ns, node)}:{new_id}"
            _retask(task_writes, new_id, path, old_ns, new_ns, cid)
            continue
        if new_id is None:
            continue
        old_ns, new_ns = f"{_task_ns(ns, old)}:{task_id}", f"{_task_ns(ns, new)}:{new_id}"
        _retask(task_writes, new_id, new_path, old_ns, new_ns, cid)


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
) -> tuple[str, ...] | None:
    """The trigger channels a pull task's id was hashed with: `branch:to:NODE` (every
    StateGraph node of langgraph 1.x), with a barrier of its (`join:A+B:NODE`), else any
    one or two channels of the checkpoint."""
    first = f"branch:to:{node}"
    if pull_task_id(cid, ns, step, node, (first,)) == task_id:
        return (first,)
    for channel in sorted(channels):
        if channel.startswith("join:") and channel.endswith(f":{node}"):
            pair = tuple(sorted((first, channel)))
            if pull_task_id(cid, ns, step, node, pair) == task_id:
                return pair
    names = sorted(channels | {first})
    for size in (1, 2):
        for triggers in combinations(names, size):
            if pull_task_id(cid, ns, step, node, triggers) == task_id:
                return triggers
    return None


def _interrupts_renamed(blob: Blob, old_ns: str, new_ns: str, cid: str) -> Blob:
    """An `__interrupt__` write's Interrupts with the ids of the renamed task."""
    tag, data = blob
    if tag != "msgpack" or not data:
        raise CopyRefused(f"checkpoint {cid}: an interrupt stored as {tag!r} cannot be renamed")
    items = unpack_raw(data)
    if not isinstance(items, list):
        return blob
    # n: how many answers the task had when it asked (a resumed task asks again).
    ids = {interrupt_id(old_ns, n): n for n in range(len(items) + 32)}
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
    node name) with `old` called `new`."""
    tag, data = blob
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
    """A value holding Sends (a list of them, or one) with those to `old` sent to `new`."""
    tag, data = blob
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


# -- the run ---------------------------------------------------------------------------------


def names_view(checkpoint: MigCheckpoint, writes: list[MigWrite]) -> list[str]:
    """The names a checkpoint holds, as lines for a before/after diff."""
    view = {
        "channel_values": list(checkpoint.values),
        "channel_versions": dict(checkpoint.versions),
        "versions_seen": checkpoint.fields.get("versions_seen"),
        "updated_channels": checkpoint.fields.get("updated_channels"),
        "metadata": checkpoint.metadata,
        "writes": [
            {"task_id": w.task_id, "task_path": w.task_path, "idx": w.idx, "channel": w.channel}
            for w in writes
        ],
    }
    return json.dumps(view, indent=1, sort_keys=False, default=str).splitlines()


def diff_lines(outcome: Outcome) -> list[str] | None:
    if outcome.example is None:
        return None
    before, after, before_writes, after_writes = outcome.example
    return list(
        difflib.unified_diff(
            names_view(before, before_writes),
            names_view(after, after_writes),
            f"before {before.checkpoint_id}",
            f"after {after.checkpoint_id}",
            n=1,
            lineterm="",
        )
    )


@dataclass
class MigrateRun(Run):
    """A migration as it runs: iterating it plans (with `apply`, migrates) one thread at a
    time and yields its record; `totals` are complete once it ends."""

    head: MigrateHead
    records: Iterator[MigrateThreadRecord]
    totals: MigrateTotals = field(
        default_factory=lambda: MigrateTotals(
            threads=0, checkpoints=0, writes=0, blobs=0, unchanged=0, refused=0
        )
    )
    first_refused: MigrateThreadRecord | None = None
    unloadable: list[MigrateThreadRecord] = field(default_factory=list)  # --graph failed

    def __iter__(self) -> Iterator[MigrateThreadRecord]:
        for record in self.records:
            if record["graph_error"] is not None:
                self.unloadable.append(record)
            totals = self.totals
            if record["action"] == "refused":
                totals["refused"] += 1
                self.first_refused = self.first_refused or record
            elif record["action"] == "unchanged":
                totals["unchanged"] += 1
            else:
                totals["threads"] += 1
                totals["checkpoints"] += record["checkpoints"]
                totals["writes"] += record["writes"]
                totals["blobs"] += record["blobs"]
            yield record

    def refusal(self) -> CkptError | None:
        """The error a run ends with once it has run: threads refused (exit 12), or
        migrated threads the new graph cannot load (`graph`: exit 14)."""
        if self.unloadable:
            first, more = self.unloadable[0], len(self.unloadable) - 1
            return MigrationMismatch(
                f"the new graph cannot load migrated thread {first['thread_id']!r}: "
                f"{first['graph_error']}" + (f" (and {more} more threads)" if more else "")
            )
        return self.refused(self.first_refused, self.totals["refused"])


def _close_gaps(writes: list[MigWrite], before: Sequence[MigWrite]) -> None:
    """A task that lost writes (a dropped channel) has its other writes numbered 0, 1, 2 ...
    again, in their order: as LangGraph's put_writes numbers what a task wrote (negative
    indexes, its special channels', stay). Sorted writes, renumbered in place."""

    def task(write: MigWrite) -> tuple[str, str, str]:
        return (write.checkpoint_ns, write.checkpoint_id, write.task_id)

    had = Counter(task(w) for w in before)
    left = Counter(task(w) for w in writes)
    shrunk = {key for key, count in left.items() if count < had[key]}
    number: dict[tuple[str, str, str], int] = {}
    for write in writes:
        key = task(write)
        if key in shrunk and write.idx >= 0:
            write.idx = number.get(key, 0)
            number[key] = write.idx + 1


def _record(
    thread_id: str, outcome: Outcome | None, refused: str | None, applied: bool
) -> MigrateThreadRecord:
    if refused is not None or outcome is None:
        return {
            "thread_id": thread_id, "action": "refused", "applied": False, "refused": refused,
            "checkpoints": 0, "writes": 0, "blobs": 0, "steps": [], "diff": None,
            "graph_error": None,
        }  # fmt: skip
    return {
        "thread_id": thread_id,
        "action": "migrate" if outcome.checkpoints else "unchanged",
        "applied": applied and bool(outcome.checkpoints),
        "refused": None,
        "checkpoints": outcome.checkpoints,
        "writes": outcome.writes,
        "blobs": outcome.blobs,
        "steps": outcome.steps,
        "diff": diff_lines(outcome),
        "graph_error": None,
    }


def migrate_run(
    store: Store,
    choose: Callable[[], Sequence[str]],
    steps: Sequence[Step],
    *,
    latest: bool = False,
    apply: bool = False,
    backup: Path | None = None,
    timeout: float | None = None,
    graph: Any = None,
) -> MigrateRun:
    """Plan (and with `apply`, carry out) the migration of the threads `choose` names.
    `graph`: the user's new compiled graph; each migrated thread is then loaded through
    it (get_state, get_state_history) and what it raises is the thread's `graph_error`.

    Every thread is planned first on the read-only reader (a step that cannot be carried
    out, a transform that raises, is found before anything is written: an applied run
    that meets one changes nothing); then, with `apply`, each thread is migrated in its
    own transaction, planned again there, and read back before it commits."""
    check_steps(steps)
    store.check_migrate()
    threads = list(choose())
    head: MigrateHead = {
        "store": {"kind": store.kind, "location": store.location},
        "applied": apply,
        "latest": latest,
        "backup": str(backup) if apply and backup else None,
        "steps": [step_record(s) for s in steps],
    }

    def plan(thread_id: str, rewriter: Rewriter) -> MigrateThreadRecord:
        try:
            rewriter(store.migration_rows(thread_id, latest=latest))
        except CopyRefused as refusal:
            return _record(thread_id, None, str(refusal), False)
        return _record(thread_id, rewriter.outcome, None, False)

    if not apply:  # the plan, a thread at a time, each with its diff
        shown = Rewriter(steps, latest=latest, aes_key=store.aes_key)
        return MigrateRun(head, (plan(t, shown) for t in threads))
    # Every thread is planned before any is written (no diffs kept: memory stays small).
    quiet = Rewriter(steps, latest=latest, aes_key=store.aes_key, example=False)
    planned = [plan(t, quiet) for t in threads]
    if any(r["action"] == "refused" for r in planned):
        # Nothing is written when a thread cannot be migrated: fix the plan first.
        return MigrateRun(head, iter(planned))

    def applied() -> Iterator[MigrateThreadRecord]:
        with store.writer(timeout=timeout) as writer, graph_loader(store, graph) as loads:
            if backup is not None:
                if writer.backs_up_whole:
                    writer.backup(backup)
                else:
                    _copy_backup(store, backup, threads, timeout)
            for record in planned:
                if record["action"] != "migrate":
                    yield record
                    continue
                thread_rewriter = Rewriter(
                    steps, latest=latest, aes_key=store.aes_key, example=False
                )
                writer.migrate(record["thread_id"], thread_rewriter, latest=latest)
                done = _record(record["thread_id"], thread_rewriter.outcome, None, True)
                done["graph_error"] = loads(record["thread_id"])
                yield done

    return MigrateRun(head, applied())


def _copy_backup(store: Store, backup: Path, threads: list[str], timeout: float | None) -> None:
    """The selected threads copied, byte for byte, into a new SqliteSaver file (ckpt copy):
    the backup of a store that has no whole-file one (Postgres)."""
    from ckpt.ops.copy import copy_run
    from ckpt.stores import open_target

    if backup.exists():
        raise Unsafe(f"{backup} exists; give a new file for `backup`")
    with open_target(str(backup), timeout=timeout) as target:
        run = copy_run(store, target, lambda: threads, apply=True)
        for _ in run:
            pass
        if (refusal := run.refusal()) is not None:
            raise Unsafe(f"the backup could not copy every thread ({refusal}); nothing changed")


def behind(
    store: Store,
    choose: Callable[[], Sequence[str]],
    steps: Sequence[Step],
    *,
    latest: bool = False,
) -> list[str]:
    """The threads a plan would still change (`ckpt check --plan`)."""
    check_steps(steps)
    store.check_migrate()
    rewriter = Rewriter(steps, latest=latest, aes_key=store.aes_key)
    found = []
    for thread_id in choose():
        try:
            if rewriter(store.migration_rows(thread_id, latest=latest)) is not None:
                found.append(thread_id)
        except CopyRefused:
            found.append(thread_id)
    return found
