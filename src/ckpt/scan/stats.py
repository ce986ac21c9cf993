"""`ckpt stats`: where a store's bytes go, how its threads grow, and what is wrong with it.

Counts and totals come from the store's own aggregates (`Store.sizes`, SQL where there is
SQL: the numbers `ckpt threads` shows). The breakdowns need one pass over the rows, a batch
of threads at a time, with nothing decoded: a checkpoint body is walked for the byte span
of each inline channel value (ckpt.decoders.spans); a blob is measured and compared with the
version before it; a write is only measured. Memory stays flat in the store's size: a
batch holds the bookkeeping of at most BATCH_ROWS rows, and what outlives a batch is one
small record per thread, channel and subgraph name.
"""

from __future__ import annotations

import heapq
import json
import re
import statistics
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import ormsgpack

from ckpt.decoders.spans import BodyLayout, ValueLayout, body_layout, shared_prefix, value_layout
from ckpt.records.model import DumpQuery, RawCheckpoint, StoreHealth, ThreadBytes, WriteTotals
from ckpt.records.types import (
    ChannelBytesRecord,
    DeltaHealthRecord,
    GrowthPoint,
    GrowthRecord,
    HealthRecord,
    KeyRecord,
    LargestCheckpointRecord,
    NamespaceBytesRecord,
    PruneEstimate,
    StatsRecord,
    ThreadBytesRecord,
    ThreadRecord,
    UnresolvedRecord,
    WriteChannelRecord,
)
from ckpt.stores.base import Store

BATCH_ROWS: Final = 20_000  # checkpoints and blobs read per batch of threads
BATCH_THREADS: Final = 500
LONG_ID: Final = 4096  # characters: longer than any real id (a damaged or hostile store)
GROWTH_THREADS: Final = 3  # threads whose growth is charted, the largest first
GROWTH_POINTS: Final = 240  # points kept per chart; longer threads are sampled evenly
DEFAULT_TOP: Final = 10
DEFAULT_KEEP: Final = 10
TICK: Final = 256  # rows between progress reports
DELTA_SNAPSHOT_EXT: Final = 7  # format.md §2.3, 3.8
# A subgraph namespace is `node:task_id`, nested with `|` (format.md §3.6): the names
# without their task ids say which subgraph the bytes belong to.
_TASK_ID: Final = re.compile(r":[^|]*")

Progress = Callable[[int], None]
BlobKey = tuple[str, str, str, str | None]


def namespace_name(checkpoint_ns: str) -> str:
    """`outer:1f0...|inner:1f0...` -> `outer|inner`; the root stays ''."""
    return _TASK_ID.sub("", checkpoint_ns)


def store_stats(
    store: Store,
    query: DumpQuery | None = None,
    *,
    top: int = DEFAULT_TOP,
    keep: int = DEFAULT_KEEP,
    threads: Iterable[ThreadRecord] = (),
    progress: Progress | None = None,
) -> StatsRecord:
    """Where the bytes of `store` go, or of the threads and namespace `query` selects.

    `top` cuts every list (0 keeps all); `keep` is the N of the keep-last-N estimate;
    `threads` are the thread records (`ckpt threads`) whose status health reports, read
    once the rows are (a generator's listing then runs after the scan, not beside it).
    `progress(n)` hears of every n rows read.
    """
    query = query or DumpQuery()
    chosen = query
    # The aggregates that need no Python (writes, health) run on a second reader while
    # this thread walks the rows, where the backend allows one.
    helper = store.fork()
    pool = ThreadPoolExecutor(max_workers=1) if helper is not None else None
    aggregates = (
        pool.submit(lambda: (helper.write_totals(chosen, keep), helper.health(chosen)))
        if pool is not None and helper is not None
        else None
    )
    try:
        sizes = store.sizes(query)
        scan = _scan(store, query, sizes, top=top, keep=keep, progress=progress)
        write_totals, health = (
            aggregates.result()
            if aggregates is not None
            else (store.write_totals(query, keep), store.health(query))
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        if helper is not None:
            helper.close()
    scan.writes(
        write_totals,
        sum(s.writes for s in sizes.values()),
        sum(s.write_bytes for s in sizes.values()),
    )
    from ckpt.records.plans import COUNTERS

    # Only the threads health has something to say of: failed or waiting ones, and those
    # with delta channels (the others add nothing to it, and a store may hold 100,000).
    snapshots = scan.snapshots
    selected = [
        t
        for t in threads
        if t["thread_id"] in sizes
        and (
            t["status"] in ("error", "interrupted")
            or COUNTERS in t["metadata"]
            or t["thread_id"] in snapshots
        )
    ]
    return {
        "store": {"kind": store.kind, "location": store.location},
        "selection": {"thread_ids": list(query.thread_ids), "checkpoint_ns": query.checkpoint_ns},
        "storage": store.storage(),
        **scan.record(),  # type: ignore[typeddict-item]
        "health": health_record(store, health, selected, scan.snapshots),
    }


def _scan(
    store: Store,
    query: DumpQuery,
    sizes: dict[str, ThreadBytes],
    *,
    top: int,
    keep: int,
    progress: Progress | None,
) -> _Scan:
    """One pass over the rows, a batch of threads at a time."""
    charts = 1 if query.thread_ids else GROWTH_THREADS
    # The threads the record lists (the biggest `top`) and charts, known from their sizes
    # before any row is read: only those are followed through the rows (nsmallest is
    # sorted(...)[:n], ties included, without a list of every thread).
    if top > 0:
        biggest = heapq.nsmallest(max(top, charts), sizes.items(), key=_by_size)
    else:
        biggest = sorted(sizes.items(), key=_by_size)
    listed = [t for t, _ in biggest[:top]] if top > 0 else [t for t, _ in biggest]
    charted = {t for t, _ in biggest[:charts]}
    scan = _Scan(
        store, sizes, keep=keep, top=top, listed=listed, charted=charted, progress=progress
    )
    for batch in thread_batches(sizes):
        scan.batch(DumpQuery(thread_ids=tuple(batch), checkpoint_ns=query.checkpoint_ns))
    return scan


def _by_size(item: tuple[str, ThreadBytes]) -> tuple[int, str]:
    """The order threads are listed in: the biggest first, then by id."""
    return -item[1].total, item[0]


def rows_to_read(store: Store, query: DumpQuery | None = None) -> int:
    """Rows a `store_stats` pass reads: a progress bar's total."""
    sizes = store.sizes(query or DumpQuery())
    return sum(s.checkpoints + s.blobs + s.writes for s in sizes.values())


def thread_batches(sizes: dict[str, ThreadBytes]) -> Iterator[list[str]]:
    """Threads in id order, cut where a batch would read more than BATCH_ROWS rows."""
    batch: list[str] = []
    rows = 0
    for thread_id in sorted(sizes):
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


# -- the pass -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Channel:
    bytes: int = 0
    stored: int = 0
    repeated: int = 0
    threads: int = 0
    last_thread: str | None = None


@dataclass(slots=True)
class _Thread:
    """A charted thread (its growth is drawn): what the chart says of it."""

    sized: ThreadBytes
    repeated: int = 0
    by_channel: dict[str, int] = field(default_factory=dict)  # repeated bytes per channel
    root_checkpoints: int = 0
    first: int | None = None
    last: int = 0
    points: list[GrowthPoint] | None = None


@dataclass(slots=True)
class _Group:
    """One (thread, namespace) while its checkpoints stream by: its newest `keep`."""

    thread_id: str
    checkpoint_ns: str
    recent: deque[tuple[str, int, dict[str, str] | None]]


@dataclass(slots=True)
class _Prune:
    """What a prune would delete, counted as everything minus what it keeps."""

    keep: int
    checkpoints: int = 0
    checkpoint_bytes: int = 0
    writes: int = 0
    write_bytes: int = 0
    blobs: int = 0
    blob_bytes: int = 0

    def record(self, total: int) -> PruneEstimate:
        reclaimed = self.checkpoint_bytes + self.write_bytes + self.blob_bytes
        return {
            "keep": self.keep,
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "blobs": self.blobs,
            "bytes": reclaimed,
            "share": _share(reclaimed, total),
            "strategy": "keep_latest" if self.keep == 1 else "keep_last",
        }


class _Scan:
    """Everything one pass over the rows accumulates."""

    def __init__(
        self,
        store: Store,
        sizes: dict[str, ThreadBytes],
        *,
        keep: int,
        top: int,
        listed: list[str],
        charted: set[str],
        progress: Progress | None,
    ) -> None:
        self.store = store
        self.sizes = sizes
        self.top = top
        self.listed = listed
        self.charted = charted
        self.progress = progress or (lambda n: None)
        # Repeated bytes of the listed threads, the rest of the few charted ones only: a
        # store may hold 100,000 threads, and stats keeps its memory flat in their number.
        self.repeated = dict.fromkeys(listed, 0)
        self.threads = {t: _Thread(sizes[t]) for t in charted}
        self.channels: dict[str, _Channel] = {}
        self.write_channels: dict[str, list[int]] = {}  # channel -> [writes, bytes]
        self.names: dict[str, list[int]] = {}  # subgraph name -> [runs, checkpoints, bytes]
        self.largest: list[tuple[int, str, str, str, int | None]] = []  # a min-heap
        self.body_bytes = self.inline_bytes = self.metadata_bytes = 0
        self.unmeasured = self.unmeasured_bytes = self.unmeasured_encrypted = 0
        self.keep_latest = _Prune(1)
        self.keep_last = _Prune(max(keep, 1))
        # thread -> delta channel -> the newest root checkpoint holding its snapshot
        self.snapshots: dict[str, dict[str, str]] = {}

    def batch(self, query: DumpQuery) -> None:
        blobs, by_group = self._blobs(query)
        self._checkpoints(query, blobs, by_group)

    # -- blobs ------------------------------------------------------------------------------
    def _blobs(
        self, query: DumpQuery
    ) -> tuple[dict[BlobKey, int], dict[tuple[str, str], list[int]]]:
        """Values kept apart (Postgres, pickle folder): each measured and compared with the
        version before it for the bytes it repeats. Returns every blob's size, and the
        count and bytes of blobs per (thread, ns)."""
        sizes: dict[BlobKey, int] = {}
        by_group: dict[tuple[str, str], list[int]] = {}
        previous: dict[tuple[str, str, str], ValueLayout] = {}
        aes_key = self.store.aes_key
        count = 0
        for blob in self.store.raw_blobs(query, data=True):
            count += 1
            if count % TICK == 0:
                self.progress(TICK)
            sizes[blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version] = blob.size
            group = by_group.setdefault((blob.thread_id, blob.checkpoint_ns), [0, 0])
            group[0] += 1
            group[1] += blob.size
            self._name_bytes(blob.checkpoint_ns, blob.size)
            layout = (
                value_layout(blob.type, blob.data, aes_key)
                if blob.data is not None and blob.type != "empty"
                else ValueLayout(blob.size)
            )
            slot = (blob.thread_id, blob.checkpoint_ns, blob.channel)
            if slot not in previous:  # blobs come channel by channel: keep only this one's
                previous.clear()
            repeated = min(shared_prefix(previous.get(slot), layout), blob.size)
            previous[slot] = layout
            self._channel(blob.thread_id, blob.channel, blob.size, repeated)
        self.progress(count % TICK)
        return sizes, by_group

    # -- checkpoints ------------------------------------------------------------------------
    def _checkpoints(
        self,
        query: DumpQuery,
        blobs: dict[BlobKey, int],
        blobs_by_group: dict[tuple[str, str], list[int]],
    ) -> None:
        aes_key = self.store.aes_key
        previous: dict[tuple[str, str, str], tuple[str | None, ValueLayout]] = {}
        group: _Group | None = None
        count = 0
        # Bodies whose values live apart (Postgres, the pickle folder) name their versions
        # instead; they are read for their metadata only (the step).
        for row in self.store.raw_checkpoints(query, data=True):
            count += 1
            if count % TICK == 0:
                self.progress(TICK)
            where = (row.thread_id, row.checkpoint_ns)
            if group is None or (group.thread_id, group.checkpoint_ns) != where:
                if group is not None:
                    self._close(group, blobs)
                group = _Group(row.thread_id, row.checkpoint_ns, deque(maxlen=self.keep_last.keep))
                previous.clear()  # rows come namespace by namespace: memory stays one's worth
                self._name_run(row.checkpoint_ns)
            inline = 0
            if row.channel_versions is None:
                layout = body_layout(row.type, row.body, aes_key) if row.body else None
                if layout is None:
                    self._unmeasured(row)
                else:
                    inline = self._inline(row, layout, previous)
            self.inline_bytes += inline
            self.body_bytes += row.body_size - inline
            self.metadata_bytes += row.metadata_size
            state = row.size + sum(
                blobs.get((row.thread_id, row.checkpoint_ns, channel, version), 0)
                for channel, version in (row.channel_versions or {}).items()
            )
            self._name_bytes(row.checkpoint_ns, row.size, checkpoint=True)
            self._largest(row, state)
            self._grow(row, state)
            group.recent.append((row.checkpoint_id, row.size, row.channel_versions))
            for prune in (self.keep_latest, self.keep_last):
                prune.checkpoints += 1
                prune.checkpoint_bytes += row.size
        if group is not None:
            self._close(group, blobs)
        self.progress(count % TICK)
        for prune in (self.keep_latest, self.keep_last):
            for n, size in blobs_by_group.values():
                prune.blobs += n
                prune.blob_bytes += size

    def _inline(
        self,
        row: RawCheckpoint,
        layout: BodyLayout,
        previous: dict[tuple[str, str, str], tuple[str | None, ValueLayout]],
    ) -> int:
        """Measure a body's inline values; a value repeats the one stored before it when
        its version is the same (a copy), or in its leading list elements."""
        inline = 0
        for channel, value in layout.values.items():
            inline += value.size
            version = layout.versions.get(channel)
            slot = (row.thread_id, row.checkpoint_ns, channel)
            before = previous.get(slot)
            if before is not None and version is not None and before[0] == version:
                repeated = value.size
            else:
                repeated = shared_prefix(before[1] if before else None, value)
            previous[slot] = (version, value)
            self._channel(row.thread_id, channel, value.size, repeated)
            if value.ext == DELTA_SNAPSHOT_EXT and not row.checkpoint_ns:
                self.snapshots.setdefault(row.thread_id, {})[channel] = row.checkpoint_id
        return inline

    def _unmeasured(self, row: RawCheckpoint) -> None:
        self.unmeasured += 1
        self.unmeasured_bytes += row.body_size
        if row.type is not None and row.type.endswith("+aes"):
            self.unmeasured_encrypted += 1

    def _close(self, group: _Group, blobs: dict[BlobKey, int]) -> None:
        """Take what each prune keeps (checkpoints, and the blobs they name) out of what it
        would delete."""
        recent = list(group.recent)
        for prune, kept in ((self.keep_latest, recent[-1:]), (self.keep_last, recent)):
            prune.checkpoints -= len(kept)
            prune.checkpoint_bytes -= sum(size for _, size, _ in kept)
            named = {
                (group.thread_id, group.checkpoint_ns, channel, version)
                for _, _, versions in kept
                for channel, version in (versions or {}).items()
            }
            used = [blobs[k] for k in named if k in blobs]
            prune.blobs -= len(used)
            prune.blob_bytes -= sum(used)

    # -- writes -----------------------------------------------------------------------------
    def writes(self, totals: WriteTotals, writes: int, write_bytes: int) -> None:
        """Writes, aggregated by the store: a write hangs on the checkpoint its task
        started from, and goes with it."""
        self.write_channels = {c: [n, size] for c, (n, size) in totals.by_channel.items()}
        for ns, size in totals.by_namespace.items():
            self._name_bytes(ns, size)
        for prune, (kept, kept_bytes) in (
            (self.keep_latest, totals.on_latest),
            (self.keep_last, totals.on_last),
        ):
            prune.writes += writes - kept
            prune.write_bytes += write_bytes - kept_bytes

    # -- accumulators -----------------------------------------------------------------------
    def _channel(self, thread_id: str, channel: str, size: int, repeated: int) -> None:
        found = self.channels.get(channel)
        if found is None:
            found = self.channels[channel] = _Channel()
        found.bytes += size
        found.stored += 1
        found.repeated += repeated
        if found.last_thread != thread_id:  # rows come thread by thread
            found.threads += 1
            found.last_thread = thread_id
        if not repeated:
            return
        if thread_id in self.repeated:  # listed
            self.repeated[thread_id] += repeated
        thread = self.threads.get(thread_id)  # charted: with --top 1, not all are listed
        if thread is not None:
            thread.repeated += repeated
            thread.by_channel[channel] = thread.by_channel.get(channel, 0) + repeated

    def _name_run(self, checkpoint_ns: str) -> None:
        self.names.setdefault(namespace_name(checkpoint_ns), [0, 0, 0])[0] += 1

    def _name_bytes(self, checkpoint_ns: str, size: int, *, checkpoint: bool = False) -> None:
        counted = self.names.setdefault(namespace_name(checkpoint_ns), [0, 0, 0])
        counted[1] += checkpoint
        counted[2] += size

    def _largest(self, row: RawCheckpoint, state: int) -> None:
        if self.top <= 0:
            return
        full = len(self.largest) >= self.top
        if full and state < self.largest[0][0]:
            return  # the common case: no tuple, no metadata decoded
        entry = (state, row.thread_id, row.checkpoint_ns, row.checkpoint_id, _step(row))
        if not full:
            heapq.heappush(self.largest, entry)
        elif entry[:4] > self.largest[0][:4]:
            heapq.heapreplace(self.largest, entry)

    def _grow(self, row: RawCheckpoint, state: int) -> None:
        thread = self.threads.get(row.thread_id)
        if row.checkpoint_ns or thread is None:
            return
        thread.root_checkpoints += 1
        if thread.first is None:
            thread.first = state
        thread.last = state
        if row.thread_id in self.charted:
            if thread.points is None:
                thread.points = []
            thread.points.append(
                {"checkpoint_id": row.checkpoint_id, "step": _step(row), "bytes": state}
            )

    # -- the record -------------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        sizes = self.sizes
        total = sum(s.total for s in sizes.values())
        blob_bytes = sum(s.blob_bytes for s in sizes.values())
        threads: list[ThreadBytesRecord] = [
            {
                "thread_id": thread_id,
                "checkpoints": sizes[thread_id].checkpoints,
                "writes": sizes[thread_id].writes,
                "bytes": sizes[thread_id].total,
                "share": _share(sizes[thread_id].total, total),
                "repeated_bytes": self.repeated[thread_id],
                "repeated_share": _share(self.repeated[thread_id], sizes[thread_id].total),
            }
            for thread_id in self.listed
        ]
        channels: list[ChannelBytesRecord] = [
            {
                "channel": name,
                "bytes": c.bytes,
                "share": _share(c.bytes, total),
                "stored": c.stored,
                "threads": c.threads,
                "repeated_bytes": c.repeated,
                "repeated_share": _share(c.repeated, c.bytes),
            }
            for name, c in sorted(self.channels.items(), key=lambda i: (-i[1].bytes, i[0]))
        ]
        write_channels: list[WriteChannelRecord] = [
            {"channel": name, "writes": n, "bytes": size, "share": _share(size, total)}
            for name, (n, size) in sorted(
                self.write_channels.items(), key=lambda i: (-i[1][1], i[0])
            )
        ]
        names: list[NamespaceBytesRecord] = [
            {
                "namespace": name,
                "namespaces": runs,
                "checkpoints": checkpoints,
                "bytes": size,
                "share": _share(size, total),
            }
            for name, (runs, checkpoints, size) in sorted(
                self.names.items(), key=lambda i: (-i[1][2], i[0])
            )
        ]
        largest: list[LargestCheckpointRecord] = [
            {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
                "step": step,
                "bytes": size,
            }
            for size, thread_id, ns, checkpoint_id, step in sorted(self.largest, reverse=True)
        ]
        growth = [
            _growth(t, self.threads[t])
            for t in sorted(self.charted, key=lambda t: (-sizes[t].total, t))
            if t in self.threads
        ]

        def cut(items: list[Any]) -> list[Any]:
            return items[: self.top] if self.top > 0 else items

        return {
            "totals": {
                "threads": len(sizes),
                "checkpoints": sum(s.checkpoints for s in sizes.values()),
                "blobs": sum(s.blobs for s in sizes.values()),
                "writes": sum(s.writes for s in sizes.values()),
                "bytes": total,
                "checkpoint_bytes": sum(s.checkpoint_bytes for s in sizes.values()),
                "body_bytes": self.body_bytes,
                "inline_value_bytes": self.inline_bytes,
                "metadata_bytes": self.metadata_bytes,
                "blob_bytes": blob_bytes,
                "write_bytes": sum(s.write_bytes for s in sizes.values()),
                "value_bytes": self.inline_bytes + blob_bytes,
                "unmeasured_bodies": {
                    "checkpoints": self.unmeasured,
                    "bytes": self.unmeasured_bytes,
                    "encrypted": self.unmeasured_encrypted,
                },
            },
            "threads": cut(threads),
            "namespaces": cut(names),
            "channels": cut(channels),
            "write_channels": cut(write_channels),
            "largest_checkpoints": largest,
            "growth": growth,
            "prune": {
                "keep_latest": self.keep_latest.record(total),
                "keep_last": self.keep_last.record(total),
            },
        }


GROWTH_SAMPLE: Final = 20  # root checkpoints below which no growth verdict is given


def growth_shape(
    checkpoints: int, sizes: list[int], first: int, last: int
) -> Literal["growing", "flat", "too_short"]:
    """Whether a thread's checkpoints keep getting bigger: then the thread grows with the
    square of its steps (every checkpoint stores the whole state again). Said only over
    GROWTH_SAMPLE checkpoints or more ("too_short" below), and only of a trend: the later
    half's median size over 1.5 times the earlier half's, and the newest over twice the
    first (a dip or one large step is not growth)."""
    if checkpoints < GROWTH_SAMPLE or len(sizes) < 4:
        return "too_short"
    half = len(sizes) // 2
    early, late = statistics.median(sizes[:half]), statistics.median(sizes[half:])
    if late > 1.5 * max(early, 1) and last > 2 * max(first, 1):
        return "growing"
    return "flat"


def _growth(thread_id: str, thread: _Thread) -> GrowthRecord:
    points = thread.points or []
    sampled = len(points) > GROWTH_POINTS
    if sampled:
        stride = (len(points) - 1) / (GROWTH_POINTS - 1)
        points = [points[round(i * stride)] for i in range(GROWTH_POINTS)]
    total = thread.sized.total
    channel, repeated = max(
        thread.by_channel.items(), key=lambda item: (item[1], item[0]), default=("", 0)
    )
    first = thread.first or 0
    shape = growth_shape(
        thread.root_checkpoints, [p["bytes"] for p in thread.points or []], first, thread.last
    )
    return {
        "thread_id": thread_id,
        "checkpoints": thread.root_checkpoints,
        "first_bytes": first,
        "last_bytes": thread.last,
        "bytes": total,
        "repeated_bytes": thread.repeated,
        "repeated_share": _share(thread.repeated, total),
        "channel": channel or None,
        "channel_repeated_share": _share(repeated, total),
        "shape": shape,
        "statement": (
            f"{channel} is re-stored in full at every step: {round(100 * repeated / total)}% "
            "of this thread's bytes are copies of earlier versions"
            if total and channel and 2 * repeated >= total
            else None
        ),
        "points": points,
        "sampled": sampled,
    }


# -- health ------------------------------------------------------------------------------------


def health_record(
    store: Store,
    health: StoreHealth,
    threads: Sequence[ThreadRecord],
    snapshots: dict[str, dict[str, str]] | None = None,
) -> HealthRecord:
    """What points at something gone, what ended badly, and what delta channels replay."""
    present = set(health.namespaces)
    orphan_namespaces = [
        {"thread_id": thread_id, "checkpoint_ns": ns}
        for thread_id, ns in sorted(present)
        if ns and (thread_id, ns.rpartition("|")[0]) not in present
    ]
    missing, oldest = health.missing_parents, health.missing_parent_oldest
    if not missing:
        note = None
    elif oldest == missing:
        note = (
            "each is the oldest checkpoint left in its namespace: what a prune leaves "
            "(LangGraph's keep_latest, or deleted rows), not damage"
        )
    else:
        note = (
            f"{missing - oldest} point into the middle of a chain: checkpoints were deleted "
            "from it"
            + (f"; {oldest} are the oldest left (expected after a prune)" if oldest else "")
        )
    unresolved: list[UnresolvedRecord] = []  # failed first, then waiting; by thread id
    for thread in sorted(threads, key=lambda t: (t["status"] != "error", t["thread_id"])):
        if thread["status"] == "error":
            detail = thread["errors"][0] if thread["errors"] else None
            unresolved.append(
                {"thread_id": thread["thread_id"], "status": "error", "detail": detail}
            )
        elif thread["status"] == "interrupted":
            first = thread["interrupts"][0]["value"] if thread["interrupts"] else None
            unresolved.append(
                {"thread_id": thread["thread_id"], "status": "interrupted", "detail": first}
            )
    return {
        "orphan_writes": {
            "count": health.orphan_writes,
            "threads": health.orphan_write_threads,
            "examples": [_key(k) for k in health.orphan_write_examples],
        },
        "missing_parents": {
            "count": missing,
            "threads": health.missing_parent_threads,
            "examples": [_key(k) for k in health.missing_parent_examples],
            "oldest": oldest,
            "note": note,
        },
        "orphan_namespaces": orphan_namespaces,  # type: ignore[typeddict-item]
        "orphan_blobs": (
            {"count": health.orphan_blobs, "bytes": health.orphan_blob_bytes or 0}
            if health.orphan_blobs is not None
            else None
        ),
        "unresolved": unresolved,
        "delta_channels": delta_channels(store, threads, snapshots or {}),
    }


def delta_channels(
    store: Store, threads: Sequence[ThreadRecord], snapshots: dict[str, dict[str, str]]
) -> list[DeltaHealthRecord]:
    """Each delta channel of each thread's latest checkpoint: the snapshot a replay starts
    from and the writes it applies (found as LangGraph finds them, ckpt.analysis.delta). Channels
    whose snapshot the latest checkpoint holds itself (the scan saw it) replay nothing."""
    from ckpt.analysis.delta import rebuild, store_loader
    from ckpt.errors import CkptError
    from ckpt.records.model import CheckpointKey
    from ckpt.records.plans import COUNTERS

    found: list[DeltaHealthRecord] = []
    for thread in threads:
        latest = thread["checkpoint_id"]
        for channel, where in sorted(snapshots.get(thread["thread_id"], {}).items()):
            if where == latest:
                found.append(
                    {
                        "thread_id": thread["thread_id"],
                        "channel": channel,
                        "snapshot_checkpoint_id": where,
                        "writes_to_replay": 0,
                        "updates_since_snapshot": 0,
                        "complete": True,
                    }
                )
        counters = thread["metadata"].get(COUNTERS)
        if not isinstance(counters, dict) or latest is None:
            continue
        key = CheckpointKey(thread["thread_id"], "", latest)
        try:
            deltas = rebuild(store.load(key, values=True), store_loader(store))
        except CkptError:
            continue  # damaged or encrypted: the thread's own commands say why
        for channel, delta in sorted(deltas.items()):
            counted = counters.get(channel)
            updates = counted[0] if isinstance(counted, list) and counted else None
            found.append(
                {
                    "thread_id": thread["thread_id"],
                    "channel": channel,
                    "snapshot_checkpoint_id": delta.seed_checkpoint_id,
                    "writes_to_replay": len(delta.writes),
                    "updates_since_snapshot": updates if isinstance(updates, int) else None,
                    "complete": delta.complete,
                }
            )
    return found


# -- small pieces -------------------------------------------------------------------------------


def _key(key: Any) -> KeyRecord:
    return {
        "thread_id": key.thread_id,
        "checkpoint_ns": key.checkpoint_ns,
        "checkpoint_id": key.checkpoint_id,
    }


def metadata_of(row: RawCheckpoint) -> dict[str, Any] | None:
    """The stored metadata as plain data: JSON text (SQLite, Postgres) or serde msgpack
    (ext values read as None); None when it is neither, or does not parse."""
    try:
        if row.metadata_type in ("json", "jsonb"):
            metadata = json.loads(row.metadata) if row.metadata else None
        elif row.metadata_type == "msgpack":
            metadata = ormsgpack.unpackb(row.metadata, ext_hook=lambda code, data: None)
        else:
            return None
    except (ValueError, TypeError, RecursionError):
        return None
    return metadata if isinstance(metadata, dict) else None


def _step(row: RawCheckpoint) -> int | None:
    """The step from the stored metadata."""
    metadata = metadata_of(row)
    step = metadata.get("step") if metadata is not None else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0
