"""Following a thread or a store while a graph writes to it (`--follow`): poll, and hand
on what is new since the last look, never what was already handed on.

New checkpoints are found by id: uuid6 ids sort by time (format.md §3.3), so each poll
reads only the ids from a little before the newest one shown (`LATE`: a checkpoint of a
parallel subgraph may commit a moment after a newer one), and skips those it has shown.
The writes of the newest checkpoint of each namespace are read again at every poll: a
task's writes (its output, an error, an interrupt) land on the checkpoint it started
from, after that checkpoint was shown. A store that can tell it has not changed
(SQLite's data version) is not read at all until it has. Memory holds the ids of the
last few seconds and one record per namespace, however long the thread.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from ckpt.analysis.reader import CheckpointReader, annotate
from ckpt.analysis.records import checkpoint_record
from ckpt.decoders import uuid6_lower_bound, uuid6_time
from ckpt.records.model import CheckpointKey, DumpQuery
from ckpt.records.types import CheckpointRecord, FollowWritesRecord, ThreadRecord
from ckpt.stores.base import Store

LATE: Final = dt.timedelta(seconds=5)  # how much older than the newest a new id may be
_UNSEEN: Final = object()  # no change token read yet


def _write_key(write: dict[str, object]) -> tuple[object, ...]:
    return (write["task_id"], write["idx"], write["channel"])


@dataclass
class HistoryFollower:
    """The state of `history --follow` between two polls of one thread."""

    store: Store
    thread_id: str
    ns: str | None = None
    shown: dict[str, None] = field(default_factory=dict)  # ids shown since `low`
    newest: str | None = None
    watched: dict[str, CheckpointRecord] = field(default_factory=dict)  # ns -> newest shown

    def poll(self, *, last: int | None = None) -> Iterator[CheckpointRecord | FollowWritesRecord]:
        """What landed since the last poll: the new writes of checkpoints already shown
        (before any newer checkpoint: they were written first), then the new checkpoints,
        oldest id first. `last` keeps only the newest N of the new checkpoints."""
        yield from self._writes()
        if self.newest is None and self.ns is None:
            # The first look: the thread as `history` reads it (its newest `last` alone).
            found = self.store.checkpoints(self.thread_id, values=False, last=last)
            if last is not None and found:
                # The ones just older than those are not to come later as new.
                self.newest = found[-1].checkpoint_id
                window = DumpQuery(thread_ids=(self.thread_id,), since_id=self._low())
                kept = {c.checkpoint_id for c in found}
                for older in self.store.iter_checkpoints(window, values=False):
                    if older.checkpoint_id not in kept:
                        self.shown[older.checkpoint_id] = None
                self.newest = None
        else:
            query = DumpQuery(
                thread_ids=(self.thread_id,), checkpoint_ns=self.ns, since_id=self._low()
            )
            found = list(self.store.iter_checkpoints(query, values=False))
        found = [c for c in found if c.checkpoint_id not in self.shown]
        found.sort(key=lambda c: c.checkpoint_id)
        if last is not None and len(found) > last:
            for checkpoint in found[:-last]:  # not shown, and not to be shown later either
                self.shown[checkpoint.checkpoint_id] = None
            found = found[-last:]
        reader = CheckpointReader(self.store)
        for checkpoint in found:
            checkpoint, tasks = annotate(reader, checkpoint, values=False)
            record = checkpoint_record(checkpoint, values=False, tasks=tasks)
            self.shown[checkpoint.checkpoint_id] = None
            if self.newest is None or checkpoint.checkpoint_id > self.newest:
                self.newest = checkpoint.checkpoint_id
            ns = checkpoint.checkpoint_ns
            if (
                ns not in self.watched
                or checkpoint.checkpoint_id > self.watched[ns]["checkpoint_id"]
            ):
                self.watched[ns] = record
            yield record
        self._forget()

    def _low(self) -> str | None:
        """The smallest id the next read asks for: LATE before the newest shown."""
        if self.newest is None:
            return None
        when = uuid6_time(self.newest)
        return uuid6_lower_bound(when - LATE) if when is not None else self.newest

    def _forget(self) -> None:
        """Drop the ids the next read will not ask for again."""
        low = self._low()
        if low is not None:
            for checkpoint_id in [i for i in self.shown if i < low]:
                del self.shown[checkpoint_id]

    def _writes(self) -> Iterator[FollowWritesRecord]:
        if not self.watched:
            return
        keys = [
            CheckpointKey(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"])
            for r in self.watched.values()
        ]
        reader = CheckpointReader(self.store)
        for checkpoint in self.store.load_many(keys, values=False):
            before = self.watched[checkpoint.checkpoint_ns]
            seen = {_write_key(dict(w)) for w in before["pending_writes"] or []}
            checkpoint, tasks = annotate(reader, checkpoint, values=False)
            record = checkpoint_record(checkpoint, values=False, tasks=tasks)
            new = [w for w in record["pending_writes"] or [] if _write_key(dict(w)) not in seen]
            if not new:
                continue
            self.watched[checkpoint.checkpoint_ns] = record
            yield {
                "event": "writes",
                "thread_id": record["thread_id"],
                "checkpoint_ns": record["checkpoint_ns"],
                "checkpoint_id": record["checkpoint_id"],
                "pending_writes": new,
                "tasks": record["tasks"],
                "interrupts": record["interrupts"],
            }

    def latest(self, checkpoint_ns: str) -> CheckpointRecord | None:
        """The newest checkpoint shown of a namespace, with the writes seen so far."""
        return self.watched.get(checkpoint_ns)


def polls(
    store: Store,
    *,
    interval: float,
    sleep: Callable[[float], None] = time.sleep,
    count: int | None = None,
) -> Iterator[int]:
    """The polls of a follow, `interval` seconds apart: yields the poll's number when
    the store may have changed since the last one (always, where it cannot tell)."""
    token: object = _UNSEEN
    n = 0
    while count is None or n < count:
        if n:
            sleep(interval)
        now = store.change_token()
        if now is None or now != token:
            yield n
        token = now if now is not None else _UNSEEN
        n += 1


def thread_changes(
    records: Callable[[], Iterable[ThreadRecord]], ticks: Iterable[int]
) -> Iterator[ThreadRecord]:
    """`threads --follow`: at each tick, the threads whose status is not the one last
    shown (every thread at the first tick)."""
    shown: dict[str, str] = {}
    for _ in ticks:
        for record in records():
            if shown.get(record["thread_id"]) != record["status"]:
                shown[record["thread_id"]] = record["status"]
                yield record


def check_interval(seconds: float) -> None:
    """A poll interval the API takes: more than 0 and at most an hour."""
    from ckpt.errors import BadOption

    if not 0 < seconds <= 3600 or seconds != seconds:
        raise BadOption(f"`interval` must be between 0 and 3600 seconds, not {seconds!r}")
