"""The sizes visitor of the one pass (ckpt.scan.rows): where a store's bytes go, for `ckpt stats`.

Nothing is decoded: a checkpoint body is walked for the byte span of each inline channel
value (ckpt.decoders.spans); a blob is measured and compared with the version before it
for the bytes it repeats; a write is only measured. A checkpoint whose values live apart
(Postgres, the pickle folder) is sized with the blobs its versions name, which come after
it in the batch: what needs them waits for the end of the batch. What outlives a batch is
one small record per listed thread, channel and subgraph name.
"""

from __future__ import annotations

import heapq
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, TypeVar

from ckpt.decoders.spans import BodyLayout, ValueLayout, body_layout, shared_prefix, value_layout
from ckpt.records.model import RawBlob, RawCheckpoint, RawWrite, ThreadBytes
from ckpt.records.types import (
    ChannelBytesRecord,
    GrowthPoint,
    GrowthRecord,
    LargestCheckpointRecord,
    NamespaceBytesRecord,
    PruneEstimate,
    ThreadBytesRecord,
    WriteChannelRecord,
)
from ckpt.scan.rows import Visitor
from ckpt.scan.shapes import step_of

GROWTH_POINTS: Final = 240  # points kept per chart; longer threads are sampled evenly
GROWTH_SAMPLE: Final = 20  # root checkpoints below which no growth verdict is given
DELTA_SNAPSHOT_EXT: Final = 7  # format.md §2.3, 3.8
# A subgraph namespace is `node:task_id`, nested with `|` (format.md §3.6): the names
# without their task ids say which subgraph the bytes belong to.
_TASK_ID: Final = re.compile(r":[^|]*")

BlobKey = tuple[str, str, str, str | None]


def namespace_name(checkpoint_ns: str) -> str:
    """`outer:1f0...|inner:1f0...` -> `outer|inner`; the root stays ''."""
    return _TASK_ID.sub("", checkpoint_ns)


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
    early, late = _median(sizes[:half]), _median(sizes[half:])
    if late > 1.5 * max(early, 1) and last > 2 * max(first, 1):
        return "growing"
    return "flat"


def _median(values: list[int]) -> float:
    """statistics.median, as it computes it (importing statistics, and fractions with
    it, took longer than every median `check` asks for)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


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
class _Prune(ThreadBytes):
    """What a prune keeping the last `keep` would delete, counted as everything minus what
    it keeps, in rows and bytes as ThreadBytes counts them."""

    keep: int = 1

    def record(self, total: int) -> PruneEstimate:
        reclaimed = self.total
        return {
            "keep": self.keep,
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "blobs": self.blobs,
            "bytes": reclaimed,
            "share": share(reclaimed, total),
            "strategy": "keep_latest" if self.keep == 1 else "keep_last",
        }


V = TypeVar("V")


def _largest_first(counted: dict[str, V], size: Callable[[V], int]) -> list[tuple[str, V]]:
    """(name, count) pairs, the largest `size` first, names in order among equals."""
    return sorted(counted.items(), key=lambda item: (-size(item[1]), item[0]))


class Sizes(Visitor):
    """Everything `ckpt stats` counts in one pass over the rows. `sizes` are the store's
    own aggregates of the threads reported (Store.sizes); `checkpoint_ns` narrows every
    count to one namespace; `listed` are the threads the record lists, `charted` those
    whose growth it draws, both known from `sizes` before any row is read."""

    needs: ClassVar[frozenset[str]] = frozenset({"checkpoints", "blobs"})

    def __init__(
        self,
        sizes: dict[str, ThreadBytes],
        *,
        aes_key: bytes | None,
        checkpoint_ns: str | None,
        keep: int,
        top: int,
        listed: list[str],
        charted: set[str],
    ) -> None:
        self.sizes = sizes
        self.aes_key = aes_key
        self.checkpoint_ns = checkpoint_ns
        self.top = top
        self.listed = listed
        self.charted = charted
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
        self.keep_latest = _Prune(keep=1)
        self.keep_last = _Prune(keep=max(keep, 1))
        # thread -> delta channel -> the newest root checkpoint holding its snapshot
        self.snapshots: dict[str, dict[str, str]] = {}
        # The batch: the namespace being read, and what waits for its blobs: checkpoints
        # whose values live apart, the groups whose kept checkpoints name blobs, every
        # blob's size, blobs per (thread, ns), and the checkpoints a prune keeps.
        self.group: _Group | None = None
        self.previous: dict[tuple[str, str, str], tuple[str | None, ValueLayout]] = {}
        self.waiting: list[RawCheckpoint] = []
        self.closed: list[_Group] = []
        self.blob_sizes: dict[BlobKey, int] = {}
        self.blob_groups: dict[tuple[str, str], list[int]] = {}
        self.previous_blob: dict[tuple[str, str, str], ValueLayout] = {}
        self.kept: dict[tuple[str, str], tuple[str | None, set[str]]] = {}

    def _counts(self, checkpoint_ns: str) -> bool:
        return self.checkpoint_ns is None or checkpoint_ns == self.checkpoint_ns

    # -- checkpoints ------------------------------------------------------------------------
    def checkpoint(self, row: RawCheckpoint) -> None:
        if not self._counts(row.checkpoint_ns):
            return
        group = self.group
        if group is None or (group.thread_id, group.checkpoint_ns) != (
            row.thread_id,
            row.checkpoint_ns,
        ):
            self._close_group()
            group = self.group = _Group(
                row.thread_id, row.checkpoint_ns, deque(maxlen=self.keep_last.keep)
            )
            self.previous.clear()  # rows come namespace by namespace: memory stays one's worth
            self._name_run(row.checkpoint_ns)
        inline = 0
        # Bodies whose values live apart (Postgres, the pickle folder) name their versions
        # instead; they are read for their metadata only (the step).
        if row.channel_versions is None:
            layout = body_layout(row.type, row.body, self.aes_key) if row.body else None
            if layout is None:
                self._unmeasured(row)
            else:
                inline = self._inline(row, layout)
        self.inline_bytes += inline
        self.body_bytes += row.body_size - inline
        self.metadata_bytes += row.metadata_size
        self._name_bytes(row.checkpoint_ns, row.size, checkpoint=True)
        if row.channel_versions:
            self.waiting.append(row)  # sized once its blobs are read
        else:
            self._sized(row, row.size)
        group.recent.append((row.checkpoint_id, row.size, row.channel_versions))
        for prune in (self.keep_latest, self.keep_last):
            prune.checkpoints += 1
            prune.checkpoint_bytes += row.size

    def _close_group(self) -> None:
        group, self.group = self.group, None
        if group is None:
            return
        self.closed.append(group)
        ids = [checkpoint_id for checkpoint_id, _, _ in group.recent]
        self.kept[group.thread_id, group.checkpoint_ns] = (ids[-1] if ids else None, set(ids))

    def _inline(self, row: RawCheckpoint, layout: BodyLayout) -> int:
        """Measure a body's inline values; a value repeats the one stored before it when
        its version is the same (a copy), or in its leading list elements."""
        inline = 0
        previous = self.previous
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

    # -- blobs ------------------------------------------------------------------------------
    def blob(self, row: RawBlob) -> None:
        """A value kept apart: measured, and compared with the version before it for the
        bytes it repeats."""
        if not self._counts(row.checkpoint_ns):
            return
        self._close_group()
        self.blob_sizes[row.thread_id, row.checkpoint_ns, row.channel, row.version] = row.size
        group = self.blob_groups.setdefault((row.thread_id, row.checkpoint_ns), [0, 0])
        group[0] += 1
        group[1] += row.size
        self._name_bytes(row.checkpoint_ns, row.size)
        layout = (
            value_layout(row.type, row.data, self.aes_key)
            if row.data is not None and row.type != "empty"
            else ValueLayout(row.size)
        )
        slot = (row.thread_id, row.checkpoint_ns, row.channel)
        previous = self.previous_blob
        if slot not in previous:  # blobs come channel by channel: keep only this one's
            previous.clear()
        repeated = min(shared_prefix(previous.get(slot), layout), row.size)
        previous[slot] = layout
        self._channel(row.thread_id, row.channel, row.size, repeated)

    # -- writes -----------------------------------------------------------------------------
    def write(self, row: RawWrite) -> None:
        """Measured by channel and namespace; it goes with its checkpoint in a prune."""
        if not self._counts(row.checkpoint_ns):
            return
        self._close_group()
        counted = self.write_channels.get(row.channel)
        if counted is None:
            counted = self.write_channels[row.channel] = [0, 0]
        counted[0] += 1
        counted[1] += row.size
        self._name_bytes(row.checkpoint_ns, row.size)
        newest, kept = self.kept.get((row.thread_id, row.checkpoint_ns), (None, set()))
        for prune, stays in (
            (self.keep_latest, row.checkpoint_id == newest),
            (self.keep_last, row.checkpoint_id in kept),
        ):
            if not stays:
                prune.writes += 1
                prune.write_bytes += row.size

    # -- the end of a batch -----------------------------------------------------------------
    def end_batch(self, threads: Sequence[str]) -> None:
        self._close_group()
        blobs = self.blob_sizes
        for row in self.waiting:
            state = row.size + sum(
                blobs.get((row.thread_id, row.checkpoint_ns, channel, version), 0)
                for channel, version in (row.channel_versions or {}).items()
            )
            self._sized(row, state)
        for prune in (self.keep_latest, self.keep_last):
            for n, size in self.blob_groups.values():
                prune.blobs += n
                prune.blob_bytes += size
        for group in self.closed:
            self._keep(group)
        self.waiting.clear()
        self.closed.clear()
        self.blob_sizes.clear()
        self.blob_groups.clear()
        self.previous_blob.clear()
        self.previous.clear()
        self.kept.clear()

    def _keep(self, group: _Group) -> None:
        """Take what each prune keeps (checkpoints, and the blobs they name) out of what it
        would delete."""
        recent = list(group.recent)
        blobs = self.blob_sizes
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

    # -- accumulators -----------------------------------------------------------------------
    def _sized(self, row: RawCheckpoint, state: int) -> None:
        """A checkpoint with the bytes of its state (its row and the blobs it names)."""
        self._largest(row, state)
        self._grow(row, state)

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
        entry = (state, row.thread_id, row.checkpoint_ns, row.checkpoint_id, step_of(row))
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
        if thread.points is None:
            thread.points = []
        thread.points.append(
            {"checkpoint_id": row.checkpoint_id, "step": step_of(row), "bytes": state}
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
                "share": share(sizes[thread_id].total, total),
                "repeated_bytes": self.repeated[thread_id],
                "repeated_share": share(self.repeated[thread_id], sizes[thread_id].total),
            }
            for thread_id in self.listed
        ]
        channels: list[ChannelBytesRecord] = [
            {
                "channel": name,
                "bytes": c.bytes,
                "share": share(c.bytes, total),
                "stored": c.stored,
                "threads": c.threads,
                "repeated_bytes": c.repeated,
                "repeated_share": share(c.repeated, c.bytes),
            }
            for name, c in _largest_first(self.channels, lambda c: c.bytes)
        ]
        write_channels: list[WriteChannelRecord] = [
            {"channel": name, "writes": n, "bytes": size, "share": share(size, total)}
            for name, (n, size) in _largest_first(self.write_channels, lambda w: w[1])
        ]
        names: list[NamespaceBytesRecord] = [
            {
                "namespace": name,
                "namespaces": runs,
                "checkpoints": checkpoints,
                "bytes": size,
                "share": share(size, total),
            }
            for name, (runs, checkpoints, size) in _largest_first(self.names, lambda n: n[2])
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
        "repeated_share": share(thread.repeated, total),
        "channel": channel or None,
        "channel_repeated_share": share(repeated, total),
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


def share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0
