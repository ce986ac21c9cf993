"""Structural diff of two checkpoint records: the changes in order, and the RFC 6902 patch."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Final, Literal

from ckpt.analysis.messages import is_message
from ckpt.analysis.status import task_label
from ckpt.analysis.tasks import send_label
from ckpt.records.encode import as_json
from ckpt.records.types import CheckpointRecord, PatchOperation

Kind = Literal["added", "removed", "changed"]

# Keys of the record that say which checkpoint it is rather than what it holds: a diff
# shows them in its header, not as changes to the state.
IDENTITY_KEYS: Final = (
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "ts",
)
# Bytes on disk: a migrated copy of the same checkpoint may differ here and nowhere else.
# Part of the patch (it turns A's record into B's), not of "the checkpoints differ".
STORAGE_KEYS: Final = frozenset({"size"})

# Lists whose differing middles hold more pairs of elements than this are not aligned
# element by element (see _diff_list).
ALIGN_LIMIT: Final = 4_000_000
# ...and lists whose differing middles hold more elements than this read as one change
# too: 1.5 million additions took 140 s and 3.8 GB to list (issue 29).
ELEMENT_LIMIT: Final = 10_000
# A dict or list (below the record itself) with more changes than this anywhere inside it
# reads as one change of the whole value, as a list past the limits above does: a 16 MB dict
# whose 700,000 values all changed was 700,000 changes, and its human view ended in
# MemoryError under a 1 GB limit (issue 38). Each record section (channel_values ...) is
# such a value, so a diff holds at most about this many changes per section, at any depth.
CHANGE_LIMIT: Final = 10_000
# The pairs of elements one diff may align in all; past it, a list whose differing middle
# is not empty reads as one change. A thousand lists of 2,000 equal strings, the first and
# last of each changed (4 MB of msgpack), took 281 s to align list by list; now 1.4 s.
PAIRS_LIMIT: Final = 4 * ALIGN_LIMIT

_PATCH_OPS: Final[dict[str, Literal["add", "remove", "replace"]]] = {
    "added": "add",
    "removed": "remove",
    "changed": "replace",
}


@dataclass(frozen=True, slots=True)
class Item:
    """A list element in a change's path: its index, and the id it was matched by, if any.

    The index is the element's place in B (added, changed) or in A (removed).
    """

    index: int
    key: str | None = None

    def __str__(self) -> str:
        return f"[{self.key}]" if self.key is not None else f"[{self.index}]"


PathPart = str | Item


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between A and B.

    `path` names the place for people (dict keys, list items with their ids);
    `pointer` is the RFC 6901 pointer of the same place at the moment the change is
    applied, when changes are applied in the order `diff_values` returns them.
    """

    kind: Kind
    path: tuple[PathPart, ...]
    pointer: str
    old: Any = None
    new: Any = None

    @property
    def section(self) -> str:
        """The top-level record key the change is under (metadata, channel_values ...)."""
        head = self.path[0] if self.path else ""
        return head if isinstance(head, str) else ""

    @property
    def op(self) -> Literal["add", "remove", "replace"]:
        return _PATCH_OPS[self.kind]


def diff_records(a: CheckpointRecord, b: CheckpointRecord) -> list[Change]:
    """Every difference between two checkpoint records (`show --json --blobs`).

    Both sides are compared after a JSON round trip: that is what makes the patch apply to
    the printed JSON, and it compares 1, 1.0 and true as JSON does (as different values).
    """
    return diff_values(as_json(a), as_json(b))


def differs(changes: Sequence[Change]) -> bool:
    """Whether the checkpoints differ in anything but how many bytes they take on disk."""
    return any(c.section not in STORAGE_KEYS for c in changes)


def json_patch(changes: Sequence[Change]) -> list[PatchOperation]:
    """RFC 6902 operations that turn A's record into B's, applied in this order."""
    operations: list[PatchOperation] = []
    for change in changes:
        operation: PatchOperation = {"op": change.op, "path": change.pointer}
        if change.kind != "removed":
            operation["value"] = change.new
        operations.append(operation)
    return operations


# -- the walk ---------------------------------------------------------------------------------


def diff_values(a: Any, b: Any) -> list[Change]:
    """The changes that turn JSON value `a` into `b`: dicts by key, lists by alignment.

    Lists of messages are matched by message id and lists of pending writes by
    (task, idx), so an appended message is one addition and an edited one is one change
    under its id; other lists are aligned element by element (difflib), so an insert in
    the middle does not read as every later element changing.
    """
    walk = _Walk((_task_names(a), _task_names(b)))
    walk.diff(a, b, (), "")
    return walk.out


# Each side's task id -> its name as `show` gives it (`worker[1]` for the second Send),
# and its pending Sends, to label the writes of tasks the record does not list.
Names = tuple[dict[str, str], list[Any]]
_NO_NAMES: Final[Names] = ({}, [])


def _task_names(value: Any) -> Names:
    """A checkpoint record's task names: from its tasks, as `show` labels them."""
    if type(value) is not dict:
        return _NO_NAMES
    names: dict[str, str] = {}
    for task in value.get("tasks") or []:
        if type(task) is dict and isinstance(task.get("id"), str) and task["id"]:
            index = task.get("send_index")
            name = str(task.get("name"))
            names[task["id"]] = send_label(name, index if isinstance(index, int) else None)
    sends = value.get("pending_sends")
    return names, sends if type(sends) is list else []


class _Overflow(Exception):
    """The changes inside one value passed CHANGE_LIMIT: the value reads as one change
    (`_Walk.diff` catches it at that value)."""


class _Walk:
    """One diff: the changes found so far, each side's task names, and the alignment
    work it may still do (PAIRS_LIMIT)."""

    def __init__(self, names: tuple[Names, Names] = (_NO_NAMES, _NO_NAMES)) -> None:
        self.out: list[Change] = []
        self.names = names
        self.pairs_left = PAIRS_LIMIT

    def diff(self, a: Any, b: Any, path: tuple[PathPart, ...], pointer: str) -> None:
        if same(a, b):
            return
        both = type(a)
        if both is not type(b) or both not in (dict, list):
            self.out.append(Change("changed", path, pointer, old=a, new=b))
            return
        # The record itself is never one change: its sections each are, first.
        before = len(self.out) if path else None
        try:
            if both is dict:
                self._dict(a, b, path, pointer, before)
            else:
                self._list(a, b, path, pointer, before)
        except _Overflow:
            del self.out[before:]
            self.out.append(Change("changed", path, pointer, old=a, new=b))

    def _check(self, before: int | None) -> None:
        """Raise _Overflow when the value whose changes start at `before` has too many."""
        if before is not None and len(self.out) - before > CHANGE_LIMIT:
            raise _Overflow

    def _add(self, change: Change, before: int | None) -> None:
        self.out.append(change)
        self._check(before)

    def _dict(
        self,
        a: dict[str, Any],
        b: dict[str, Any],
        path: tuple[PathPart, ...],
        pointer: str,
        before: int | None,
    ) -> None:
        for key, old in a.items():
            child = (*path, key)
            where = f"{pointer}/{_escape(key)}"
            if key in b:
                self.diff(old, b[key], child, where)
                self._check(before)
            else:
                self._add(Change("removed", child, where, old=old), before)
        for key, new in b.items():
            if key not in a:
                where = f"{pointer}/{_escape(key)}"
                self._add(Change("added", (*path, key), where, new=new), before)

    def _list(
        self,
        a: list[Any],
        b: list[Any],
        path: tuple[PathPart, ...],
        pointer: str,
        before: int | None,
    ) -> None:
        # Trim the common ends first: a chat that grew by one message costs one comparison
        # per message, and the aligner below sees only the part that moved.
        start, end_a, end_b = common_ends(a, b, same)
        mid_a, mid_b = a[start:end_a], b[start:end_b]
        pairs = len(mid_a) * len(mid_b)
        if pairs > min(ALIGN_LIMIT, self.pairs_left) or len(mid_a) + len(mid_b) > ELEMENT_LIMIT:
            # difflib's alignment is quadratic: past the limits the list reads as one
            # change (the values compared, not aligned), in bounded time (docs/security.md).
            self._add(Change("changed", path, pointer, old=a, new=b), before)
            return
        self.pairs_left -= pairs
        names = self.names
        keys_a, keys_b = _item_keys(mid_a, names[0]), _item_keys(mid_b, names[1])
        keyed = keys_a is not None and keys_b is not None
        if keys_a is None or keys_b is None:
            align_a, align_b = [_canonical(x) for x in mid_a], [_canonical(x) for x in mid_b]
            labels_a: list[str | None] = [None] * len(mid_a)
            labels_b: list[str | None] = [None] * len(mid_b)
        else:
            align_a, align_b = keys_a, keys_b
            labels_a, labels_b = [k[1] for k in keys_a], [k[1] for k in keys_b]

        def item(index: int, label: str | None) -> tuple[PathPart, ...]:
            return (*path, Item(start + index, label))

        # Applying the changes in order, the list reads b[:start + j1] + a[start + i1:] when
        # an opcode starts, so every pointer below is start + (a position in B).
        matcher = SequenceMatcher(None, align_a, align_b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                if keyed:  # same ids: the elements themselves may still differ
                    for offset in range(i2 - i1):
                        i, j = i1 + offset, j1 + offset
                        where = f"{pointer}/{start + j}"
                        self.diff(mid_a[i], mid_b[j], item(j, labels_b[j]), where)
                        self._check(before)
                continue
            if tag == "replace" and not keyed:
                paired = _pairable(mid_a[i1:i2], mid_b[j1:j2])
                for offset in range(paired):
                    i, j = i1 + offset, j1 + offset
                    self.diff(mid_a[i], mid_b[j], item(j, None), f"{pointer}/{start + j}")
                    self._check(before)
                i1, j1 = i1 + paired, j1 + paired
            for i in range(i1, i2):
                where = f"{pointer}/{start + j1}"
                self._add(Change("removed", item(i, labels_a[i]), where, old=mid_a[i]), before)
            for j in range(j1, j2):
                where = f"{pointer}/{start + j}"
                self._add(Change("added", item(j, labels_b[j]), where, new=mid_b[j]), before)


def common_ends(
    a: Sequence[Any], b: Sequence[Any], equal: Callable[[Any, Any], bool] = operator.eq
) -> tuple[int, int, int]:
    """(start, end_a, end_b): a[:start] and b[:start] are equal, and so are a[end_a:] and
    b[end_b:]; the parts between are what differs (difflib's aligners see only those)."""
    start, shortest = 0, min(len(a), len(b))
    while start < shortest and equal(a[start], b[start]):
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and equal(a[end_a - 1], b[end_b - 1]):
        end_a -= 1
        end_b -= 1
    return start, end_a, end_b


def _pairable(old: list[Any], new: list[Any]) -> int:
    """How many elements of a replaced run read best as changed in place, not removed + added.

    A run of the same length pairs up ([1, 2, 3] -> [1, 5, 3] is "2 -> 5"); otherwise only
    leading dicts and lists pair with their own kind, to be diffed inside.
    """
    if len(old) == len(new):
        return len(old)
    paired = 0
    for x, y in zip(old, new, strict=False):
        if type(x) is not type(y) or type(x) not in (dict, list):
            break
        paired += 1
    return paired


def _item_keys(items: list[Any], names: Names = _NO_NAMES) -> list[tuple[Any, str]] | None:
    """(match key, label) per element when the list is keyed: messages by id, writes by task.

    None when the elements are not all of one keyed kind or a key repeats.
    """
    if not items:
        return []
    keys: list[tuple[Any, str]]
    if all(is_message(x) and isinstance(x.get("id"), str) for x in items):
        keys = [(("message", x["id"]), x["id"]) for x in items]
    elif all(_is_write(x) for x in items):
        keys = [(("write", x["task_id"], x["idx"]), _write_label(x, names)) for x in items]
    else:
        return None
    if len({k for k, _ in keys}) != len(keys):
        return None
    return keys


def _write_label(write: dict[str, Any], names: Names = _NO_NAMES) -> str:
    """`worker[1] → results`: the task as `show` names it (from the record's tasks, else
    its path and the record's pending Sends), and the channel written."""
    tasks, sends = names
    who = tasks.get(write["task_id"]) or task_label(
        str(write.get("task_path") or ""), write["task_id"], sends
    )
    label = f"{who} → {write['channel']}"
    return label if write["idx"] <= 0 else f"{label} #{write['idx']}"


def _is_write(value: Any) -> bool:
    return (
        type(value) is dict
        and isinstance(value.get("task_id"), str)
        and isinstance(value.get("idx"), int)
        and isinstance(value.get("channel"), str)
    )


def _canonical(value: Any) -> Any:
    """A hashable stand-in equal for equal JSON values only (1, 1.0 and true differ)."""
    if type(value) in (dict, list):
        return ("json", json.dumps(value, sort_keys=True, ensure_ascii=False))
    return (type(value).__name__, value)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: Python's == (fast, in C), then the types it conflates."""
    return a is b or (a == b and _same_types(a, b))


def _same_types(a: Any, b: Any) -> bool:
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return all(_same_types(value, b[key]) for key, value in a.items())
    if kind is list:
        return all(map(_same_types, a, b))
    return True


def _escape(key: Any) -> str:
    """One RFC 6901 reference token."""
    return str(key).replace("~", "~0").replace("/", "~1")
