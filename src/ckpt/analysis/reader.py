"""What each checkpoint means when views read them one at a time (show, dump, diff):
its due tasks, and its DeltaChannel values rebuilt from the ancestors.

`history` reads a whole thread and learns each graph's shape from all of it
(`history.thread_tasks`); a single checkpoint mostly carries its own shape (its trigger
channels, `versions_seen` and the writes of the tasks that ran). The exception is a
v1/v2 checkpoint, whose triggers LangGraph renames from static edges that only other
checkpoints show: for those the reader learns the shape from the thread once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

from ckpt.analysis.delta import DeltaValue, is_snapshot, rebuild
from ckpt.analysis.history import graph_key
from ckpt.analysis.status import why_next_unknown
from ckpt.analysis.tasks import Shape, ShapeLearner, Task, due_tasks, shape_of
from ckpt.errors import NotFound
from ckpt.records.model import Checkpoint, CheckpointKey, DumpQuery
from ckpt.records.plans import COUNTERS
from ckpt.records.types import CheckpointRecord
from ckpt.stores.base import Store

# Streamed checkpoints of the current thread kept for delta replays (only their delta
# values and writes): a child's replay then needs no store round trip.
_KEEP = 20_000
# A dump of whole threads holds each thread's checkpoints until the thread ends (at most
# this many, and this many bytes), to learn its namespaces and its graphs' shapes from them
# instead of reading the thread again; a longer thread streams and is read again.
_HOLD_CHECKPOINTS = 2_000
_HOLD_BYTES = 32_000_000
# Threads whose namespaces and shapes stay cached (a dump meets each thread once).
_CACHED_THREADS = 1_000
K = TypeVar("K")
V = TypeVar("V")


def _cache(cache: dict[K, V], key: K, value: V) -> None:
    """`cache[key] = value`, the cache emptied first once it holds _CACHED_THREADS."""
    if len(cache) > _CACHED_THREADS:
        cache.clear()
    cache[key] = value


class CheckpointReader:
    """Tasks and delta values of checkpoints of one store, with what it learned cached."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._namespaces: dict[str, list[str]] = {}
        self._shapes: dict[tuple[str, str], Shape] = {}
        self._recent: dict[CheckpointKey, Checkpoint] = {}
        self._recent_thread: str | None = None

    def tasks(self, checkpoint: Checkpoint) -> list[Task] | None:
        """The tasks due at `checkpoint`, as LangGraph's get_state(checkpoint_id) names them."""
        if why_next_unknown(checkpoint):
            return None
        namespaces = self._thread_namespaces(checkpoint.thread_id)
        shape = self._thread_shape(checkpoint) if _needs_thread_shape(checkpoint) else None
        # checkpoint_tasks, without asking why_next_unknown again
        return due_tasks(
            checkpoint, shape=shape, keeps_order=checkpoint.keeps_order, namespaces=namespaces
        )

    def with_deltas(self, checkpoint: Checkpoint) -> Checkpoint:
        """The checkpoint with `deltas`: its DeltaChannels absent from channel_values,
        rebuilt from its ancestors."""
        if not self._remember(checkpoint):
            return checkpoint  # no delta channel named: nothing to rebuild
        deltas: dict[str, DeltaValue] = rebuild(checkpoint, self._parent)
        return replace(checkpoint, deltas=deltas) if deltas else checkpoint

    def learn_thread(self, thread: Sequence[Checkpoint]) -> None:
        """Learn the namespaces and graph shapes of a thread from all of its checkpoints,
        already read (a dump of whole threads), so that no one reads the thread again."""
        if not thread:
            return
        thread_id = thread[0].thread_id
        _cache(self._namespaces, thread_id, sorted({str(c.checkpoint_ns) for c in thread}))
        if not any(_needs_thread_shape(c) for c in thread):
            return
        learners: dict[str, ShapeLearner] = {}
        for checkpoint in thread:
            graph = graph_key(checkpoint.checkpoint_ns)
            learner = learners.get(graph)
            if learner is None:
                learner = learners[graph] = ShapeLearner()
            learner.add(checkpoint)
        for graph, learner in learners.items():
            _cache(self._shapes, (thread_id, graph), learner.shape())

    # -- caches ----------------------------------------------------------------------------
    def _thread_namespaces(self, thread_id: str) -> list[str]:
        if thread_id not in self._namespaces:
            _cache(self._namespaces, thread_id, self.store.namespaces(thread_id))
        return self._namespaces[thread_id]

    def _thread_shape(self, checkpoint: Checkpoint) -> Shape:
        key = (checkpoint.thread_id, graph_key(checkpoint.checkpoint_ns))
        if key not in self._shapes:
            same_graph = [
                c
                for c in self.store.checkpoints(checkpoint.thread_id, values=False)
                if graph_key(c.checkpoint_ns) == key[1]
            ]
            _cache(self._shapes, key, shape_of(same_graph or [checkpoint]))
        return self._shapes[key]

    def _remember(self, checkpoint: Checkpoint) -> bool:
        """Keep what a descendant's replay needs of this checkpoint: the values and writes
        of its delta channels only (named in its counters, or held as snapshots). Whether
        its values are loaded and its counters name delta channels (rebuild's candidates:
        without, it has none)."""
        if checkpoint.thread_id != self._recent_thread or len(self._recent) > _KEEP:
            self._recent.clear()
            self._recent_thread = checkpoint.thread_id
        values = checkpoint.values
        if values is None:
            return False
        counters = checkpoint.metadata.get(COUNTERS)
        names = set(counters) if isinstance(counters, dict) else set()
        named = bool(names)
        names |= {k for k, v in values.items() if is_snapshot(v)}
        if not names:
            return False  # nothing known to be a delta channel here: read it again if needed
        self._recent[checkpoint.key] = replace(
            checkpoint,
            channel_values={k: v for k, v in values.items() if k in names},
            pending_writes=[w for w in checkpoint.pending_writes or [] if w.channel in names],
            deltas={},
        )
        return named

    def _parent(self, key: CheckpointKey) -> Checkpoint | None:
        found = self._recent.get(key)
        if found is not None and found.values is not None:
            return found
        try:
            loaded = self.store.load(key, values=True)
        except NotFound:
            return None
        self._remember(loaded)
        return loaded


def _needs_thread_shape(checkpoint: Checkpoint) -> bool:
    """A v1/v2 checkpoint, whose triggers LangGraph renames from edges only the thread shows."""
    return checkpoint.writer == "python" and (checkpoint.v or 1) < 3


def whole_threads(
    reader: CheckpointReader, checkpoints: Iterator[Checkpoint]
) -> Iterator[Checkpoint]:
    """`checkpoints` (every checkpoint of each thread, thread after thread, as a dump of
    whole threads streams them) unchanged, each thread held until it ends so that `reader`
    learns it from them; a thread past _HOLD_CHECKPOINTS or _HOLD_BYTES streams on (the
    reader then reads it again for what it needs)."""
    held: list[Checkpoint] = []
    held_bytes = 0
    streaming: str | None = None  # a thread too long to hold
    for checkpoint in checkpoints:
        thread_id = checkpoint.thread_id
        if thread_id == streaming:
            yield checkpoint
            continue
        if held and held[0].thread_id != thread_id:
            reader.learn_thread(held)
            yield from held
            held, held_bytes = [], 0
        held.append(checkpoint)
        held_bytes += checkpoint.size or 0
        if len(held) > _HOLD_CHECKPOINTS or held_bytes > _HOLD_BYTES:
            streaming = thread_id
            yield from held
            held, held_bytes = [], 0
    reader.learn_thread(held)
    yield from held


def annotate(
    reader: CheckpointReader, checkpoint: Checkpoint, *, values: bool
) -> tuple[Checkpoint, list[Task] | None]:
    """The checkpoint with its delta values rebuilt (when values were loaded), and its due
    tasks."""
    if values and checkpoint.values is not None:
        checkpoint = reader.with_deltas(checkpoint)
    return checkpoint, reader.tasks(checkpoint)


def load_checkpoint(
    store: Store, key: CheckpointKey, *, values: bool, channels: Sequence[str] = ()
) -> tuple[Checkpoint, list[Task] | None]:
    """One checkpoint as the API gives it: its delta values rebuilt, its due tasks, and
    only `channels`' values and writes when some are named."""
    from ckpt.analysis.encryption import pick_channels

    checkpoint, tasks = annotate(
        CheckpointReader(store), store.load(key, values=values), values=values
    )
    if channels:
        checkpoint = pick_channels(checkpoint, list(channels))
    return checkpoint, tasks


def dump_records(
    store: Store,
    query: DumpQuery,
    *,
    values: bool,
    hidden: list[CheckpointRecord],
    shared: bool = False,
) -> Iterator[CheckpointRecord]:
    """`dump`'s records, streamed; the first whose values stay encrypted is put in
    `hidden`. A namespace that matches nothing is NotFound, as an unknown thread is.
    `shared`: a message met again in the next checkpoint is not decoded again, the record
    holds the same object as the one before (shared_exts: for records only read)."""
    for _, record in _dumped(store, query, values=values, hidden=hidden, shared=shared):
        yield record


def dump_lines(
    store: Store, query: DumpQuery, *, values: bool, hidden: list[CheckpointRecord]
) -> Iterator[bytes]:
    """`dump_records(..., shared=True)` as the lines of `dump --ndjson` (UTF-8, each with
    its newline). The record of a small checkpoint of a store whose values all come from
    ckpt's decoders (`Store.values_decoded`) goes straight to orjson (ndjson_line)."""
    from ckpt.records.encode import ndjson_line

    decoded = store.values_decoded
    for checkpoint, record in _dumped(store, query, values=values, hidden=hidden, shared=True):
        yield ndjson_line(record, decoded=decoded and _small(checkpoint))


# Stored bytes (body, metadata and writes) of a checkpoint whose record orjson may write
# without a look at its size first: a decoded value is at most a few tens of times its
# stored size, so such a record is a few MB at most.
SMALL_RECORD = 1 << 16


def _small(checkpoint: Checkpoint) -> bool:
    """Whether the record of `checkpoint` is small: SMALL_RECORD stored bytes or fewer,
    its ids and its writes' names counted (each stands in the record twice or more: a
    10 MB thread id is no small record), and no DeltaChannel value rebuilt from its
    ancestors."""
    if checkpoint.deltas:
        return False
    size = checkpoint.size + 2 * (
        len(checkpoint.thread_id)
        + len(checkpoint.checkpoint_ns)
        + len(checkpoint.checkpoint_id)
        + len(checkpoint.parent_checkpoint_id or "")
    )
    for write in checkpoint.pending_writes or ():
        size += write.size + 2 * (len(write.task_id) + len(write.task_path) + len(write.channel))
    return size <= SMALL_RECORD


def _dumped(
    store: Store,
    query: DumpQuery,
    *,
    values: bool,
    hidden: list[CheckpointRecord],
    shared: bool,
) -> Iterator[tuple[Checkpoint, CheckpointRecord]]:
    """Each checkpoint `dump` streams, with its record (dump_records)."""
    if not shared:
        yield from _dump_records(store, query, values=values, hidden=hidden)
        return
    from ckpt.decoders.memo import shared_exts

    with shared_exts():
        yield from _dump_records(store, query, values=values, hidden=hidden)


def _dump_records(
    store: Store, query: DumpQuery, *, values: bool, hidden: list[CheckpointRecord]
) -> Iterator[tuple[Checkpoint, CheckpointRecord]]:
    from ckpt.analysis.encryption import record_hides_values
    from ckpt.analysis.records import checkpoint_record

    reader = CheckpointReader(store)
    count = 0
    checkpoints = store.iter_checkpoints(query, values=values)
    if query.checkpoint_ns is None and not (query.since_id or query.until_id or query.latest_only):
        checkpoints = whole_threads(reader, checkpoints)
    for checkpoint in checkpoints:
        checkpoint, tasks = annotate(reader, checkpoint, values=values)
        record = checkpoint_record(checkpoint, values=values, tasks=tasks)
        if not hidden and record_hides_values(record):
            hidden.append(record)
        yield checkpoint, record
        count += 1
    if not count and query.checkpoint_ns is not None and not (query.since_id or query.until_id):
        # Like an unknown thread: a namespace that matches nothing is a mistake (often
        # `node` instead of `node:<task id>`), not an empty store.
        raise NotFound(
            f"no checkpoints in namespace {query.checkpoint_ns!r}; the thread records "
            "list their namespaces"
        )
