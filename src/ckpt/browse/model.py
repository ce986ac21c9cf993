"""What the browser holds between queries: the thread list with its filter and sort, a
thread's history tree as lines. Plain Python over records, no Textual and no
store."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ckpt.api import select_threads
from ckpt.records.types import CheckpointRecord, HistoryNodeRecord, ThreadRecord
from ckpt.records.vocabulary import STATUSES, THREAD_SORTS, ThreadSort


@dataclass(frozen=True, slots=True)
class Key:
    """A checkpoint's primary key in every store: what the browser loads it by."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str


def key_of(record: CheckpointRecord) -> Key:
    return Key(record["thread_id"], record["checkpoint_ns"], record["checkpoint_id"])


# -- threads ------------------------------------------------------------------------------------


class ThreadList:
    """Every thread of the store, and the ones the filter keeps, in the chosen order.

    Sorting is `ckpt threads --sort`'s own, cycled in its order (ckpt.api.select_threads);
    the filter keeps a thread when every word of it matches: KEY=VALUE as `--where` (the
    latest metadata), a status name as `--status`, any other word as a piece of the thread
    id or of a metadata value.
    """

    def __init__(self, records: Sequence[ThreadRecord], sort: ThreadSort = "updated") -> None:
        self.records = list(records)
        self.sort = sort
        self.text = ""
        self.shown: list[ThreadRecord] = []
        self.id_width = max((len(r["thread_id"]) for r in self.records), default=6)
        self._apply()

    def set_filter(self, text: str) -> None:
        self.text = text
        self._apply()

    def cycle_sort(self) -> ThreadSort:
        # By size only when sizes were measured (`ckpt threads` measures them on --size).
        sorts = [
            s
            for s in THREAD_SORTS
            if s != "size" or any(r["size"] is not None for r in self.records)
        ]
        self.sort = (
            sorts[(sorts.index(self.sort) + 1) % len(sorts)] if self.sort in sorts else sorts[0]
        )
        self._apply()
        return self.sort

    def index_of(self, thread_id: str | None) -> int | None:
        for i, record in enumerate(self.shown):
            if record["thread_id"] == thread_id:
                return i
        return None

    def next_with(self, status: str, start: int, step: int = 1) -> int | None:
        """The next shown thread (wrapping) whose status is `status`."""
        count = len(self.shown)
        for offset in range(1, count + 1):
            i = (start + offset * step) % count
            if self.shown[i]["status"] == status:
                return i
        return None

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for record in self.records:
            found[record["status"]] = found.get(record["status"], 0) + 1
        return found

    def _apply(self) -> None:
        where: dict[str, str] = {}
        status: str | None = None
        words: list[str] = []
        for word in self.text.split():
            key, eq, value = word.partition("=")
            if eq and key:
                where[key] = value
            elif word in STATUSES:
                status = word
            else:
                words.append(word.casefold())
        kept = select_threads(self.records, sort=self.sort, where=where, status=status)
        self.shown = [r for r in kept if all(_mentions(r, w) for w in words)]


def _mentions(record: ThreadRecord, word: str) -> bool:
    if word in record["thread_id"].casefold():
        return True
    return any(
        isinstance(value, str | int | float) and word in str(value).casefold()
        for value in record["metadata"].values()
    )


# -- history ------------------------------------------------------------------------------------

LineKind = Literal["checkpoint", "fork", "subgraph"]


@dataclass(slots=True)
class HistoryLine:
    """One line of the history tree: a checkpoint, or the head of a fork or subgraph run.
    `prefix` holds the tree's guides, as `ckpt history` draws them."""

    kind: LineKind
    prefix: str
    record: CheckpointRecord | None = None
    checkpoint_ns: str = ""


@dataclass(slots=True)
class History:
    """A thread's checkpoints as the lines of its tree (ckpt.api `history_tree`)."""

    thread_id: str
    lines: list[HistoryLine]
    index: dict[Key, int] = field(default_factory=dict)

    @classmethod
    def from_tree(cls, thread_id: str, chains: list[list[HistoryNodeRecord]]) -> History:
        lines = list(_flatten(chains))
        index = {key_of(line.record): i for i, line in enumerate(lines) if line.record is not None}
        return cls(thread_id, lines, index)

    @property
    def checkpoints(self) -> int:
        return len(self.index)

    def record(self, key: Key) -> CheckpointRecord | None:
        i = self.index.get(key)
        return self.lines[i].record if i is not None else None

    def parent(self, key: Key) -> Key | None:
        """The parent in the same namespace, when the store still holds it."""
        record = self.record(key)
        if record is None or record["parent_checkpoint_id"] is None:
            return None
        parent = Key(key.thread_id, key.checkpoint_ns, record["parent_checkpoint_id"])
        return parent if parent in self.index else None

    def generations(self, newest: Key, key: Key) -> int | None:
        """How many parent links lead from `newest` back to `key` (THREAD~N), if any."""
        current: Key | None = newest
        steps = 0
        while current is not None:
            if current == key:
                return steps
            current = self.parent(current)
            steps += 1
        return None

    def next_with(self, what: str, start: int, step: int = 1) -> int | None:
        """The next checkpoint line (wrapping) where a task raised an error ("failed":
        the task failed, or failed and was retried) or an interrupt ("interrupted":
        waiting, or answered)."""
        count = len(self.lines)
        for offset in range(1, count + 1):
            i = (start + offset * step) % count
            record = self.lines[i].record
            if record is not None and _has(record, what):
                return i
        return None


def _has(record: CheckpointRecord, what: str) -> bool:
    if what == "failed":
        return any(t["error"] is not None for t in record["tasks"] or [])
    return bool(record["interrupts"])


def _flatten(chains: list[list[HistoryNodeRecord]]) -> Iterator[HistoryLine]:
    """The tree of `ckpt history` line by line: chains under the thread, each checkpoint's
    subgraph runs and then its forks under it. Iterative: a 10,000-step chain is one level."""
    Item = tuple[str, Any]
    stack: list[tuple[Iterator[tuple[bool, Item]], str]] = []
    stack.append((_with_last([("node", n) for chain in chains for n in chain]), ""))
    while stack:
        items, indent = stack[-1]
        entry = next(items, None)
        if entry is None:
            stack.pop()
            continue
        last, (kind, payload) = entry
        prefix = indent + ("└── " if last else "├── ")
        children: list[Item]
        if kind == "node":
            yield HistoryLine("checkpoint", prefix, payload["checkpoint"])
            children = [("subgraph", sub) for sub in payload["subgraphs"]]
            children += [("fork", fork) for fork in payload["forks"]]
        elif kind == "subgraph":
            yield HistoryLine("subgraph", prefix, None, payload["checkpoint_ns"])
            children = [("node", n) for n in payload["chain"]]
        else:
            yield HistoryLine("fork", prefix)
            children = [("node", n) for n in payload]
        if children:
            stack.append((_with_last(children), indent + ("    " if last else "│   ")))


def _with_last(items: Iterable[Any]) -> Iterator[tuple[bool, Any]]:
    listed = list(items)
    for i, item in enumerate(listed):
        yield i == len(listed) - 1, item
