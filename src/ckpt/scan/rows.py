"""The one pass over a store's raw rows that `ckpt stats`, `ckpt types` and `ckpt check` make,
feeding every visitor each row (as pyflakes and Ruff feed every rule from one walk: a new
rule is a new visitor, never a new pass).

The rows come a batch of threads at a time (`thread_batches`: whole threads, at most
BATCH_ROWS checkpoints and blobs, so memory stays flat whatever the store's size), and in
each batch the checkpoints first, then the blobs, then the pending writes. A graph writing
meanwhile commits a checkpoint's blobs before it and its writes after it, so a live store
shows at most blobs and writes newer than the checkpoints read, never a checkpoint whose
blobs were not read yet. After its writes, every visitor hears that the batch is over:
what it kept of the batch's rows goes then.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar, Final

from ckpt.records.model import DumpQuery, RawBlob, RawCheckpoint, RawWrite, ThreadBytes
from ckpt.stores.base import Store

BATCH_ROWS: Final = 20_000  # checkpoints and blobs read per batch of threads
BATCH_THREADS: Final = 500
LONG_ID: Final = 4096  # characters: longer than any real id (a damaged or hostile store)
TICK: Final = 256  # rows between progress reports
GC_THRESHOLD: Final = 50_000  # new containers between two collections, during a pass

RawRow = RawCheckpoint | RawBlob | RawWrite
Progress = Callable[[int], None]


class Visitor:
    """What one pass feeds: every row of every batch, then the end of the batch. A visitor
    keeps what it needs and reports through its own record; `needs` names the parts whose
    stored bytes it reads (the others are read for their keys and sizes only)."""

    needs: ClassVar[frozenset[str]] = frozenset()  # of "checkpoints", "blobs", "writes"
    # Whether it counts the rows' bytes as Store.sizes does (RowSizes): the store then
    # measures them in the pass where that is not their length (RawCheckpoint.measured).
    measures: ClassVar[bool] = False

    def checkpoint(self, row: RawCheckpoint) -> None:
        """One checkpoint row."""

    def blob(self, row: RawBlob) -> None:
        """One stored channel value (stores that keep values apart)."""

    def write(self, row: RawWrite) -> None:
        """One pending-write row."""

    def end_batch(self, threads: Sequence[str]) -> None:
        """Every row of these threads has been read."""


def scan(
    store: Store,
    sizes: dict[str, ThreadBytes],
    visitors: Sequence[Visitor],
    *,
    progress: Progress | None = None,
) -> None:
    """Read the rows of the threads `sizes` names once, a batch at a time, and feed them to
    `visitors` in order (a visitor may rely on those before it having seen the row).
    `progress(n)` hears of every n rows read."""
    tick = progress or (lambda n: None)

    def fed(method: str) -> list[Callable[..., None]]:
        # Only the visitors that do something with that part: the base class's methods
        # do nothing, and a row costs a Python call per visitor.
        return [
            getattr(v, method)
            for v in visitors
            if getattr(type(v), method) is not getattr(Visitor, method)
        ]

    checkpoint, blob, write = fed("checkpoint"), fed("blob"), fed("write")
    wanted = {part: any(part in v.needs for v in visitors) for part in _PARTS}
    measure = any(v.measures for v in visitors)
    with store.one_pass(measure=measure), fewer_collections():
        _scan(store, sizes, visitors, wanted, (checkpoint, blob, write), tick)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The cyclic garbage collector at a slower pace for the pass. Each row's decoded
    values are freed by reference counting as soon as the visitors are done with them,
    but at the default pace (a collection every 700 new containers, a full one as the
    survivors grow) the collector walked what a batch keeps hundreds of times: 10% of a
    Postgres scan. The thresholds are restored after it, whatever happens."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _scan(
    store: Store,
    sizes: dict[str, ThreadBytes],
    visitors: Sequence[Visitor],
    wanted: dict[str, bool],
    feeds: tuple[list[Callable[..., None]], ...],
    tick: Progress,
) -> None:
    checkpoint, blob, write = feeds
    for threads in thread_batches(sizes):
        query = DumpQuery(thread_ids=tuple(threads))
        read = 0
        for row in store.raw_checkpoints(query, data=wanted["checkpoints"]):
            for feed in checkpoint:
                feed(row)
            read += 1
            if read % TICK == 0:
                tick(TICK)
        for value in store.raw_blobs(query, data=wanted["blobs"]):
            for feed in blob:
                feed(value)
            read += 1
            if read % TICK == 0:
                tick(TICK)
        for pending in store.raw_writes(query, data=wanted["writes"]):
            for feed in write:
                feed(pending)
            read += 1
            if read % TICK == 0:
                tick(TICK)
        tick(read % TICK)
        for visitor in visitors:
            visitor.end_batch(threads)


_PARTS: Final = ("checkpoints", "blobs", "writes")


class RowSizes(Visitor):
    """Store.sizes counted from the rows of the pass, for stores whose sizes are only that
    (Store.sizes_from_rows): each thread's entry of `sizes` (Store.thread_counts) is
    replaced when its first row is read, before the visitors after this one hear of the
    batch's end. Put it first."""

    measures = True

    def __init__(self, sizes: dict[str, ThreadBytes]) -> None:
        self.sizes = sizes
        self.counted: set[str] = set()
        # The thread of the last row and its entry: rows come a thread at a time.
        self.last_id: object = _NO_THREAD
        self.last = ThreadBytes()

    def _of(self, thread_id: str) -> ThreadBytes:
        if thread_id not in self.counted:
            self.counted.add(thread_id)
            self.sizes[thread_id] = ThreadBytes()
        self.last_id, self.last = thread_id, self.sizes[thread_id]
        return self.last

    def checkpoint(self, row: RawCheckpoint) -> None:
        sized = self.last if row.thread_id == self.last_id else self._of(row.thread_id)
        measured = row.measured
        sized.checkpoints += 1
        sized.checkpoint_bytes += (
            row.body_size + row.metadata_size if measured is None else measured
        )

    def blob(self, row: RawBlob) -> None:
        sized = self.last if row.thread_id == self.last_id else self._of(row.thread_id)
        sized.blobs += 1
        sized.blob_bytes += row.size

    def write(self, row: RawWrite) -> None:
        sized = self.last if row.thread_id == self.last_id else self._of(row.thread_id)
        measured = row.measured
        sized.writes += 1
        sized.write_bytes += row.size if measured is None else measured


_NO_THREAD: Final = object()  # RowSizes.last_id before any row


def rows_to_read(sizes: dict[str, ThreadBytes]) -> int:
    """Rows a pass over these threads reads: a progress bar's total."""
    return sum(s.checkpoints + s.blobs + s.writes for s in sizes.values())


def thread_batches(sizes: dict[str, ThreadBytes]) -> Iterator[list[str]]:
    """Threads in id order, cut where a batch would read more than BATCH_ROWS rows."""
    batch: list[str] = []
    rows = 0
    # A damaged pickle store can key a thread by something other than a string.
    for thread_id in sorted(sizes, key=lambda t: (type(t) is not str, str(t))):
        sized = sizes[thread_id]
        weight = sized.checkpoints + sized.blobs
        if len(thread_id) > LONG_ID:
            # Alone: SQLite copies each key of an IN list into the statement's own
            # index, and a batch's rows all hold theirs (a 10 MB id: 64 -> 32 MB).
            if batch:
                yield batch
                batch, rows = [], 0
            yield [thread_id]
            continue
        if batch and (rows + weight > BATCH_ROWS or len(batch) >= BATCH_THREADS):
            yield batch
            batch, rows = [], 0
        batch.append(thread_id)
        rows += weight
    if batch:
        yield batch
