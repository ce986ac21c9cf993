"""`ckpt check`: read every row of a store once and say what is wrong with it, and how to
fix it where ckpt can.

One pass over the raw rows (`Store.raw_checkpoints`, `raw_blobs`, `raw_writes`), a batch of
threads at a time as `ckpt stats` reads them (ckpt.scan.stats.thread_batches: flat memory, the
rows of a batch bounded), feeds two readers:

* the type census of `ckpt types` (ckpt.scan.census), which decodes every value, counts tags,
  versions, encrypted values and the classes strict mode refuses, and tells this module
  of each row it could not read (census.Watcher);
* the chain and value checks below, which keep a few ids per checkpoint of the batch:
  parent links (dangling, cyclic, out of time order, two roots), the id inside a body,
  the blobs a version names and the blobs no version names, writes without their
  checkpoint, subgraph namespaces without the checkpoint that ran them.

Within a batch, checkpoints are read before blobs and writes: a graph writing meanwhile
commits a checkpoint's blobs before it and its writes after it, so a live store shows
at most blobs and writes that are newer than the checkpoints read (never reported as
damage: a write ahead of its checkpoint is looked up again before it is reported).

Then per thread, from its `ckpt threads` record: failed threads, threads waiting on an
interrupt (for longer than `stale`), and DeltaChannel values whose snapshot is gone
(ckpt.scan.stats.delta_channels, as `ckpt stats` finds them). Nothing is changed, and no fix
is applied: each finding names the command that would make it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from ckpt.records.model import CheckpointKey, DumpQuery, RawBlob, RawCheckpoint, RawWrite
from ckpt.records.types import (
    SEVERITIES,
    CheckRecord,
    FindingRecord,
    PlaceRecord,
    SaverRecord,
    Severity,
    ThreadRecord,
    TypesRecord,
)
from ckpt.records.when import updated_at
from ckpt.scan.census import Census, RawRow, census_record
from ckpt.scan.stats import delta_channels, growth_shape, metadata_of, thread_batches
from ckpt.stores.base import Store

# A finding's `fix` is a command line to run, not a message: in the CLI's own words
# (tests/test_layers.py lets these, and only these, name flags in the library).
FIX_COMMANDS: Final = {
    "restore": "ckpt copy BACKUP {store} {threads} --on-conflict replace --apply",
    "thread": "--thread {}",
}
THREADS_SHOWN: Final = 20  # thread ids listed per finding (thread_count counts them all)
PLACES_SHOWN: Final = 20  # occurrences listed per finding (count counts them all)
LOOKUPS: Final = 200  # find_exact look-ups per run (copied rows, writes ahead of their checkpoint)
TICK: Final = 256  # rows between progress reports
DELTA_SNAPSHOT_EXT: Final = 7  # format.md §2.3, 3.8
COUNTERS: Final = "counters_since_delta_snapshot"  # format.md §3.2, 3.8
# Serde tags that carry no encryption because nothing is serialized (format.md §5.2, 7.1).
_UNSERIALIZED: Final = frozenset({"empty", "jsonb"})
# Who writes each checkpoint format version (format.md §3.1).
FORMATS: Final[dict[int, str]] = {
    1: "langgraph before 0.3.19",
    2: "langgraph 0.3.19 - 0.3.23",
    3: "langgraph 0.3.24 - 0.4.x",
    4: "langgraph 0.5.0 or later",
}

Progress = Callable[[int], None]
Pair = tuple[str, str, str, str | None]  # (thread, ns, channel, version) of a blob


# -- what each finding says ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of finding: its code, what it counts, its severity, the one line that
    explains it, and which fix applies ("restore": copy the threads back from a backup)."""

    code: str
    unit: str  # what `count` counts: "checkpoint", "value", "thread" ...
    severity: Severity
    reason: str
    fix: str | None = None


KINDS: Final[dict[str, Kind]] = {
    k.code: k
    for k in (
        # -- chains ---------------------------------------------------------------------
        Kind(
            "dangling-parent",
            "checkpoint",
            "error",
            "a checkpoint's parent is not in the store, and checkpoints older than the "
            "parent are: rows were deleted from the middle of the chain",
            "restore",
        ),
        Kind(
            "copied-checkpoint",
            "checkpoint",
            "error",
            "a checkpoint whose parent (or own id) belongs to another thread: a row copied "
            "from another thread, whose state LangGraph would resume from",
            "restore",
        ),
        Kind(
            "cycle",
            "cycle",
            "error",
            "parent links that go round in a circle: LangGraph's history never ends",
            "restore",
        ),
        Kind(
            "out-of-order",
            "checkpoint",
            "error",
            "a checkpoint whose id sorts before its parent's: LangGraph takes the largest "
            "id as the latest, so the thread resumes from the parent (rows reordered, or "
            "two writers whose clocks disagree)",
            "restore",
        ),
        Kind(
            "id-mismatch",
            "checkpoint",
            "error",
            "the id inside a checkpoint's body is not the id of its row: the row holds "
            "another checkpoint's body (rows tampered with or swapped)",
            "restore",
        ),
        Kind(
            "orphan-subgraph",
            "namespace",
            "error",
            "a subgraph namespace whose parent checkpoint is gone (and checkpoints older "
            "than it are there): the subgraph run belongs to nothing",
            "restore",
        ),
        Kind(
            "two-roots",
            "checkpoint",
            "warning",
            "a namespace with two first checkpoints (no parent, source input): two graphs "
            "or savers wrote one thread, or a row was added",
        ),
        Kind(
            "pruned-history",
            "checkpoint",
            "info",
            "the oldest checkpoints left point at parents that are gone, as a prune leaves "
            "them (LangGraph's, ckpt's, or deleted rows): not damage",
        ),
        # -- values -----------------------------------------------------------------------
        Kind(
            "missing-blob",
            "blob",
            "error",
            "a channel version names a stored value that is not there: LangGraph reads the "
            "channel as empty",
            "restore",
        ),
        Kind(
            "missing-snapshot",
            "channel",
            "error",
            "a DeltaChannel value cannot be rebuilt: the checkpoint holding its snapshot is "
            "gone, so LangGraph resumes with a partial value",
            "restore",
        ),
        Kind(
            "orphan-blobs",
            "blob",
            "info",
            "stored values no checkpoint names: LangGraph never reads them; neither "
            "`ckpt prune` nor `ckpt vacuum` deletes them (a run may be writing them)",
        ),
        Kind(
            "orphan-writes",
            "write",
            "warning",
            "pending writes whose checkpoint is not in the store: LangGraph never reads "
            "them (a deletion that left them, or a run that stopped before its checkpoint)",
        ),
        # -- bytes ------------------------------------------------------------------------
        Kind(
            "undecodable",
            "value",
            "error",
            "stored bytes that do not decode (truncated or tampered): LangGraph fails on them",
            "restore",
        ),
        Kind(
            "too-large",
            "value",
            "warning",
            "values past ckpt's resource caps (docs/security.md): not read, so not checked",
        ),
        Kind(
            "unverified",
            "value",
            "error",
            "encrypted values the key does not open: their authentication failed "
            "(tampered bytes, or written with another key)",
            "restore",
        ),
        Kind(
            "unencrypted-row",
            "value",
            "error",
            "values stored without encryption among a thread's encrypted ones: "
            "EncryptedSerializer reads them silently (rows written without the key: forged, "
            "or from before encryption)",
            "restore",
        ),
        Kind(
            "unencrypted-thread",
            "value",
            "warning",
            "threads holding no encrypted value in a store that holds encrypted ones: "
            "EncryptedSerializer reads them silently (written without the key: by another "
            "application, before encryption, or forged)",
        ),
        Kind(
            "encrypted-unchecked",
            "value",
            "info",
            "encrypted values were counted but not checked: give the AES key "
            "(LANGGRAPH_AES_KEY) to verify each one",
        ),
        Kind(
            "key-unused",
            "store",
            "info",
            "a key was given, but the store holds no encrypted value",
        ),
        # -- saver and settings -----------------------------------------------------------
        Kind(
            "schema-migration",
            "store",
            "warning",
            "the current saver reads this store only after its setup() changes the schema",
        ),
        Kind(
            "unreadable-schema",
            "store",
            "error",
            "no current LangGraph saver reads this store",
        ),
        Kind(
            "strict-msgpack",
            "value",
            "warning",
            "values naming classes LangGraph's strict msgpack mode (LANGGRAPH_STRICT_MSGPACK=1) "
            "does not rebuild: they come back as plain dicts or values unless allowlisted "
            "(`ckpt types` prints the allowlist)",
        ),
        Kind(
            "pickle-values",
            "value",
            "warning",
            "values stored as pickles: LangGraph loads them only with pickle_fallback=True, "
            "and loading a pickle runs the code it names",
        ),
        # -- threads ----------------------------------------------------------------------
        Kind(
            "failed-thread",
            "thread",
            "warning",
            "threads whose latest step failed and was not retried: they resume only when "
            "invoked again",
        ),
        Kind(
            "stale-interrupt",
            "thread",
            "warning",
            "threads waiting on an interrupt() for longer than the stale age given",
        ),
        Kind(
            "waiting",
            "thread",
            "info",
            "threads waiting on an interrupt() for Command(resume=...)",
        ),
        Kind(
            "quadratic-growth",
            "thread",
            "warning",
            "threads whose checkpoints keep growing: each step stores the whole state again, "
            "so their bytes grow with the square of their steps",
        ),
    )
}


@dataclass(slots=True)
class _Finding:
    """Occurrences of one kind, counted whole, the first ones kept."""

    kind: Kind
    count: int = 0
    bytes: int = 0
    threads: list[str] = field(default_factory=list)
    thread_count: int = 0
    batch_threads: set[str] = field(default_factory=set)
    places: list[PlaceRecord] = field(default_factory=list)
    detail: str | None = None  # a reason more precise than the kind's

    def add(self, thread_id: str, place: PlaceRecord | None, *, count: int, size: int) -> None:
        self.count += count
        self.bytes += size
        self.batch_threads.add(thread_id)
        if place is not None and len(self.places) < PLACES_SHOWN and place not in self.places:
            self.places.append(place)

    def close_batch(self) -> None:
        """The batch's threads: counted, the first in id order kept."""
        if self.batch_threads:
            self.thread_count += len(self.batch_threads)
            if len(self.threads) < THREADS_SHOWN:
                self.threads = sorted({*self.threads, *self.batch_threads})[:THREADS_SHOWN]
            self.batch_threads.clear()


def place(
    thread_id: str,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    *,
    channel: str | None = None,
    detail: str | None = None,
) -> PlaceRecord:
    return {
        "thread_id": thread_id,
        "checkpoint_ns": checkpoint_ns,
        "checkpoint_id": checkpoint_id,
        "channel": channel,
        "detail": detail,
    }


# -- the pass ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    """One checkpoint of the namespace being read: what its chain checks need."""

    checkpoint_id: str
    parent_id: str | None
    source: str | None
    parents: dict[str, str] | None  # metadata "parents": ancestor namespace -> checkpoint id


@dataclass(slots=True)
class _Thread:
    """The current thread's namespaces, while its checkpoints stream by."""

    thread_id: str
    ids: dict[str, set[str]] = field(default_factory=dict)  # ns -> checkpoint ids
    oldest: dict[str, str] = field(default_factory=dict)  # ns -> its smallest id
    heads: dict[str, _Node] = field(default_factory=dict)  # subgraph ns -> its oldest checkpoint
    growth: list[tuple[int, tuple[Pair, ...]]] = field(default_factory=list)  # root checkpoints


class _Checker:
    """The checks fed by one pass over the rows; the census reports to it (Watcher)."""

    def __init__(self, store: Store, *, progress: Progress | None) -> None:
        self.store = store
        self.progress = progress or (lambda n: None)
        self.findings: dict[str, _Finding] = {}
        self.census = Census(store.aes_key, watcher=self)
        self.policy = store.blob_policy
        self.encrypted_rows = 0  # rows whose tag says encrypted
        self.lookups = 0
        self.read = 0
        # The batch: checkpoints by (thread, ns) -> (oldest, newest id) and the ids, the
        # blobs their versions need and name, the threads whose growth is measured.
        self.groups: dict[tuple[str, str], list[str]] = {}
        self.ids: set[tuple[str, str, str]] = set()
        self.required: dict[Pair, tuple[str, str]] = {}  # blob -> (ns, checkpoint id) needing it
        self.named: set[Pair] = set()
        self.named_channels: set[tuple[str, str, str]] = set()
        self.blob_sizes: dict[Pair, int] = {}
        self.growing: dict[str, list[tuple[int, tuple[Pair, ...]]]] = {}
        # The namespace being read: its DeltaChannels, and the inline `true`s that are their
        # snapshot markers if those channels are (PostgresSaver).
        self.deltas: set[str] = set()
        self.snapshots: list[tuple[Pair, str]] = []
        # To look up by id at the end of the batch: (what, thread, ns, checkpoint id, the id
        # to look up) for a parent gone from the middle of a chain or a second root; and
        # writes newer than every checkpoint read: (thread, ns, checkpoint id) -> [rows, bytes].
        self.suspects: list[tuple[str, str, str, str, str]] = []
        self.ahead: dict[tuple[str, str, str], list[int]] = {}
        # The batch's threads: [encrypted values, plain values, their bytes], and the first
        # plain rows of each. A thread holding both has unencrypted rows among encrypted ones;
        # a thread holding plain values only is said once the store is known to hold
        # encrypted ones (kept in `plain_threads` till the end).
        self.tags_of: dict[str, list[int]] = {}
        self.plain_rows: dict[str, list[RawRow]] = {}
        self.plain_threads = _Finding(KINDS["unencrypted-thread"])
        self.thread: _Thread | None = None
        self.group: list[_Node] = []
        self.group_key: tuple[str, str] | None = None
        self.last_body: tuple[RawCheckpoint, Any] | None = None
        # Each row brings its own copy of its thread id: what is kept holds one per thread
        # (a hostile store's 10 MB id, kept per checkpoint, would be 10 MB each).
        self.names: dict[str, str] = {}

    # -- findings -----------------------------------------------------------------------------
    def found(
        self, code: str, thread_id: str, where: PlaceRecord | None, *, count: int = 1, size: int = 0
    ) -> None:
        finding = self.findings.get(code)
        if finding is None:
            finding = self.findings[code] = _Finding(KINDS[code])
        thread_id = self.name(thread_id)
        if where is not None:
            where["thread_id"] = thread_id
        finding.add(thread_id, where, count=count, size=size)

    def name(self, thread_id: str) -> str:
        """The one copy of a thread id kept (see `names`)."""
        return self.names.setdefault(thread_id, thread_id)

    def tick(self) -> None:
        self.read += 1
        if self.read % TICK == 0:
            self.progress(TICK)

    # -- the census's reports (census.Watcher) ------------------------------------------------
    def body(self, row: RawCheckpoint, body: Any) -> None:
        self.last_body = (row, body)

    def problem(self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool) -> None:
        code = "too-large" if large else "undecodable"
        self.found(code, row.thread_id, _row_place(row, at, f"{tag}: {error}"))

    def unverified(self, row: RawRow, at: str, tag: str | None) -> None:
        self.found("unverified", row.thread_id, _row_place(row, at, tag))

    def strict(self, row: RawRow, at: str, names: list[str]) -> None:
        self.found("strict-msgpack", row.thread_id, _row_place(row, at, ", ".join(names)))

    def pickled(self, row: RawRow, at: str, names: list[str]) -> None:
        detail = ", ".join(names) if names else "no globals"
        self.found("pickle-values", row.thread_id, _row_place(row, at, detail))

    # -- a batch --------------------------------------------------------------------------------
    def batch(self, query: DumpQuery) -> None:
        store = self.store
        for checkpoint in store.raw_checkpoints(query):
            self.census.row(checkpoint)
            self.checkpoint(checkpoint)
        self.end_thread()
        for blob in store.raw_blobs(query):
            self.census.row(blob)
            self.blob(blob)
        for write in store.raw_writes(query):
            self.census.row(write)
            self.write(write)
        if not store.raw_writes_complete:
            self.orphan_writes_of(query)
        self.progress(self.read % TICK)
        self.read = 0
        self.end_batch()
        self.census.flush()

    def checkpoint(self, row: RawCheckpoint) -> None:
        self.tick()
        self.tag(row, row.type)
        body = (
            self.last_body[1] if self.last_body is not None and self.last_body[0] is row else None
        )
        self.last_body = None
        thread = self.thread
        if thread is None or thread.thread_id != row.thread_id:
            self.end_thread()
            thread = self.thread = _Thread(self.name(row.thread_id))
        thread_id = thread.thread_id
        key = (thread_id, row.checkpoint_ns)
        if key != self.group_key:
            self.end_group()
            self.group_key = key
        metadata = metadata_of(row)
        parents = metadata.get("parents") if metadata is not None else None
        source = metadata.get("source") if metadata is not None else None
        self.group.append(
            _Node(
                row.checkpoint_id,
                row.parent_checkpoint_id,
                source if isinstance(source, str) else None,
                {str(k): str(v) for k, v in parents.items()} if isinstance(parents, dict) else None,
            )
        )
        self.ids.add((thread_id, row.checkpoint_ns, row.checkpoint_id))
        span = self.groups.setdefault(key, [row.checkpoint_id, row.checkpoint_id])
        span[0], span[1] = min(span[0], row.checkpoint_id), max(span[1], row.checkpoint_id)
        if isinstance(body, dict):
            stored_id = body.get("id")
            if isinstance(stored_id, str) and stored_id != row.checkpoint_id:
                self.found(
                    "id-mismatch",
                    row.thread_id,
                    place(
                        row.thread_id,
                        row.checkpoint_ns,
                        row.checkpoint_id,
                        detail=f"the body says {stored_id}",
                    ),
                )
        pairs = self.versions(thread_id, row, body, metadata)
        if not row.checkpoint_ns:
            thread.growth.append((row.size, pairs))

    def versions(
        self, thread_id: str, row: RawCheckpoint, body: Any, metadata: dict[str, Any] | None
    ) -> tuple[Pair, ...]:
        """Note the blobs a checkpoint's versions name, and those it needs (blob_policy);
        returns the pairs (for its size with its values)."""
        versions = row.channel_versions
        if versions is None or self.policy == "none":
            return ()
        ns = row.checkpoint_ns
        pairs = tuple((thread_id, ns, channel, version) for channel, version in versions.items())
        self.named.update(pairs)
        self.named_channels.update((thread_id, ns, channel) for channel in versions)
        if self.policy == "every":
            needed: Iterable[str] = versions
        else:  # "updated": PostgresSaver keeps a blob for the values it does not inline
            needed, snapshots, deltas = _needs_blob(body, metadata, versions)
            self.deltas |= deltas
            self.snapshots.extend(
                ((thread_id, ns, c, versions[c]), row.checkpoint_id) for c in snapshots
            )
        for channel in needed:
            pair = (thread_id, ns, channel, versions[channel])
            self.required.setdefault(pair, (ns, row.checkpoint_id))
        return pairs

    def end_group(self) -> None:
        """The namespace's checkpoints are all read: check its chain."""
        nodes, key = self.group, self.group_key
        self.group = []
        # An inline `true` of a channel the namespace counts as a DeltaChannel is a snapshot
        # marker: its value is a blob (format.md §3.8); of any other channel, a boolean.
        for pair, checkpoint_id in self.snapshots:
            if pair[2] in self.deltas:
                self.required.setdefault(pair, (pair[1], checkpoint_id))
        self.snapshots.clear()
        self.deltas.clear()
        if not nodes or key is None or self.thread is None:
            return
        thread_id, ns = key
        by_id = {n.checkpoint_id: n for n in nodes}
        oldest = min(by_id)
        self.thread.ids[ns] = set(by_id)
        self.thread.oldest[ns] = oldest
        if ns:
            self.thread.heads[ns] = by_id[oldest]
        roots: list[_Node] = []
        older: list[_Node] = []  # parent gone, and older than every checkpoint left
        later: list[_Node] = []  # id sorting before its parent's
        for node in nodes:
            parent = node.parent_id
            if parent is None:
                roots.append(node)
            elif parent not in by_id:
                if parent < oldest:
                    older.append(node)
                else:
                    self.suspects.append(("parent", thread_id, ns, node.checkpoint_id, parent))
            elif node.checkpoint_id < parent:
                later.append(node)
        in_cycles: set[str] = set()
        for cycle in _cycles(by_id):
            in_cycles.update(cycle)
            self.found(
                "cycle",
                thread_id,
                place(thread_id, ns, min(cycle), detail=" -> ".join(cycle)),
            )
        for node in later:  # a circle has one such link at least: said as the circle
            if node.checkpoint_id not in in_cycles:
                self.found(
                    "out-of-order",
                    thread_id,
                    place(thread_id, ns, node.checkpoint_id, detail=f"parent {node.parent_id}"),
                )
        started = sorted(n.checkpoint_id for n in roots if n.source in ("input", None))
        for node in older:
            # Older than everything left: what a prune leaves, unless the namespace still
            # has its first checkpoint (no prune keeps that and deletes older ones).
            if started:
                self.suspects.append(
                    ("parent", thread_id, ns, node.checkpoint_id, node.parent_id or "")
                )
            else:
                self.found(
                    "pruned-history",
                    thread_id,
                    place(thread_id, ns, node.checkpoint_id, detail=f"parent {node.parent_id}"),
                )
        for checkpoint_id in started[1:]:
            self.suspects.append(("root", thread_id, ns, checkpoint_id, checkpoint_id))

    def end_thread(self) -> None:
        """The thread's checkpoints are all read: its subgraph namespaces must hang on
        checkpoints that exist."""
        self.end_group()
        self.group_key = None
        thread = self.thread
        self.thread = None
        if thread is None:
            return
        self.growing[thread.thread_id] = thread.growth
        for ns, head in sorted(thread.heads.items()):
            ancestors = head.parents or {}
            if not ancestors:  # before metadata named them: the parent namespace alone
                parent_ns = ns.rpartition("|")[0]
                if parent_ns not in thread.ids:
                    self.found(
                        "orphan-subgraph",
                        thread.thread_id,
                        place(
                            thread.thread_id, ns, head.checkpoint_id, detail="no parent namespace"
                        ),
                    )
                continue
            for ancestor_ns, ancestor_id in sorted(ancestors.items()):
                if ancestor_id in thread.ids.get(ancestor_ns, ()):
                    continue
                here = place(
                    thread.thread_id,
                    ns,
                    head.checkpoint_id,
                    detail=f"ran from {ancestor_id} ({ancestor_ns or 'root'} namespace)",
                )
                left = thread.oldest.get(ancestor_ns)
                pruned = left is not None and ancestor_id < left
                self.found(
                    "pruned-history" if pruned else "orphan-subgraph", thread.thread_id, here
                )

    def blob(self, blob: RawBlob) -> None:
        self.tick()
        self.tag(blob, blob.type)
        pair = (self.name(blob.thread_id), blob.checkpoint_ns, blob.channel, blob.version)
        self.blob_sizes[pair] = blob.size
        named = (
            pair in self.named
            if blob.version is not None
            else (blob.thread_id, blob.checkpoint_ns, blob.channel) in self.named_channels
        )
        if not named:
            self.found(
                "orphan-blobs",
                blob.thread_id,
                place(
                    blob.thread_id,
                    blob.checkpoint_ns,
                    channel=blob.channel,
                    detail=f"version {blob.version}",
                ),
                size=blob.size,
            )

    def write(self, write: RawWrite) -> None:
        self.tick()
        self.tag(write, write.type)
        if (write.thread_id, write.checkpoint_ns, write.checkpoint_id) in self.ids:
            return
        span = self.groups.get((write.thread_id, write.checkpoint_ns))
        if span is not None and write.checkpoint_id > span[1]:
            # Newer than every checkpoint read: it may be committed since. Looked up again.
            counted = self.ahead.setdefault(
                (self.name(write.thread_id), write.checkpoint_ns, write.checkpoint_id), [0, 0]
            )
            counted[0] += 1
            counted[1] += write.size
            return
        self.orphan_write(write.thread_id, write.checkpoint_ns, write.checkpoint_id, write.size)

    def orphan_write(
        self, thread_id: str, ns: str, checkpoint_id: str, size: int, *, count: int = 1
    ) -> None:
        self.found(
            "orphan-writes",
            thread_id,
            place(thread_id, ns, checkpoint_id, detail="no such checkpoint"),
            count=count,
            size=size,
        )

    def orphan_writes_of(self, query: DumpQuery) -> None:
        """Stores whose scans find writes through their checkpoints count the others in
        `health` (count and examples only)."""
        health = self.store.health(query)
        if not health.orphan_writes:
            return
        finding = self.findings.setdefault("orphan-writes", _Finding(KINDS["orphan-writes"]))
        finding.count += health.orphan_writes
        for key in health.orphan_write_examples:
            finding.batch_threads.add(key.thread_id)
            if len(finding.places) < PLACES_SHOWN:
                finding.places.append(
                    place(
                        key.thread_id,
                        key.checkpoint_ns,
                        key.checkpoint_id,
                        detail="no such checkpoint",
                    )
                )
        # The examples name some threads; the rest are counted.
        finding.thread_count += max(health.orphan_write_threads - len(finding.batch_threads), 0)

    def tag(self, row: RawRow, tag: str | None) -> None:
        """Count the row's value as encrypted or plain, by thread (see `tags_of`)."""
        if tag is None or tag in _UNSERIALIZED:
            return
        counts = self.tags_of.get(row.thread_id)
        if counts is None:
            counts = self.tags_of[self.name(row.thread_id)] = [0, 0, 0]
        if tag.partition("+")[2]:
            counts[0] += 1
            self.encrypted_rows += 1
            return
        counts[1] += 1
        counts[2] += row.size
        rows = self.plain_rows.setdefault(row.thread_id, [])
        if len(rows) < PLACES_SHOWN:
            rows.append(row)

    # -- the end of a batch --------------------------------------------------------------------
    def end_batch(self) -> None:
        for pair, (ns, checkpoint_id) in self.required.items():
            if pair in self.blob_sizes or (pair[0], pair[1], pair[2], None) in self.blob_sizes:
                continue
            self.found(
                "missing-blob",
                pair[0],
                place(pair[0], ns, checkpoint_id, channel=pair[2], detail=f"version {pair[3]}"),
            )
        for thread_id, growth in self.growing.items():
            sizes = [size + sum(self.blob_sizes.get(p, 0) for p in pairs) for size, pairs in growth]
            if sizes and growth_shape(len(sizes), sizes, sizes[0], sizes[-1]) == "growing":
                self.found(
                    "quadratic-growth",
                    thread_id,
                    place(
                        thread_id,
                        "",
                        detail=f"{sizes[0]:,} B -> {sizes[-1]:,} B over {len(sizes)} checkpoints",
                    ),
                    size=sum(sizes),
                )
        self.look_up()
        self.names.clear()
        self.groups.clear()
        self.ids.clear()
        self.required.clear()
        self.named.clear()
        self.named_channels.clear()
        self.blob_sizes.clear()
        self.growing.clear()
        self.unencrypted()
        for finding in self.findings.values():
            finding.close_batch()

    def look_up(self) -> None:
        """Checkpoints that may belong to another thread, and writes that may be newer
        than the read: asked of the store by id (at most LOOKUPS per run)."""
        ahead, self.ahead = self.ahead, {}
        for (thread_id, ns, checkpoint_id), (writes, size) in ahead.items():
            if self.lookups < LOOKUPS:
                self.lookups += 1
                keys = self.store.find_exact(checkpoint_id)
                if CheckpointKey(thread_id, ns, checkpoint_id) in keys:
                    continue  # committed after the read: a live run, not damage
            self.orphan_write(thread_id, ns, checkpoint_id, size, count=writes)
        suspects, self.suspects = self.suspects, []
        for kind, thread_id, ns, checkpoint_id, wanted in suspects:
            others: list[str] = []
            if self.lookups < LOOKUPS:
                self.lookups += 1
                others = sorted({k.thread_id for k in self.store.find_exact(wanted)} - {thread_id})
            if others:
                what = "its parent" if kind == "parent" else "its id"
                self.found(
                    "copied-checkpoint",
                    thread_id,
                    place(
                        thread_id,
                        ns,
                        checkpoint_id,
                        detail=f"{what} {wanted} is a checkpoint of thread {others[0]}",
                    ),
                )
            elif kind == "parent":
                self.found(
                    "dangling-parent",
                    thread_id,
                    place(thread_id, ns, checkpoint_id, detail=f"parent {wanted}"),
                )
            else:
                self.found(
                    "two-roots",
                    thread_id,
                    place(thread_id, ns, checkpoint_id, detail="a second root"),
                )

    def unencrypted(self) -> None:
        """Plain values of the batch's threads: among encrypted ones in the same thread (a
        row written without the key), or in threads holding none (said at the end)."""
        for thread_id, (encrypted, plain, size) in self.tags_of.items():
            if not plain:
                continue
            finding = self.plain_threads
            if encrypted:
                finding = self.findings.setdefault(
                    "unencrypted-row", _Finding(KINDS["unencrypted-row"])
                )
            finding.count += plain
            finding.bytes += size
            finding.batch_threads.add(thread_id)
            for row in self.plain_rows.get(thread_id, ()):
                if len(finding.places) < PLACES_SHOWN:
                    finding.places.append(_row_place(row, _part(row), row.type))
        self.plain_threads.close_batch()
        self.tags_of.clear()
        self.plain_rows.clear()


def _needs_blob(
    body: Any, metadata: dict[str, Any] | None, versions: dict[str, str]
) -> tuple[list[str], list[str], set[str]]:
    """The channels of a PostgresSaver checkpoint that must have a blob at their version
    (format.md §5.2, 3.8): those its step updated (`updated_channels`: they hold a value)
    whose value is not inline. Then the channels whose inline `true` is a snapshot marker
    if they are DeltaChannels, and the DeltaChannels its metadata counts (the checkpoint
    holding a snapshot counts none: the caller decides for the whole namespace). A
    channel left out may rightly have no blob: an empty one, or a DeltaChannel between
    snapshots. Bodies without `updated_channels` (before langgraph 0.6.4) say nothing."""
    if not isinstance(body, dict):
        return [], [], set()
    inline = body.get("channel_values")
    inline = inline if isinstance(inline, dict) else {}
    counters = metadata.get(COUNTERS) if metadata is not None else None
    deltas = {str(c) for c in counters} if isinstance(counters, dict) else set()
    marked = [c for c, value in inline.items() if value is True and c in versions]
    updated = body.get("updated_channels")
    needed = []
    if isinstance(updated, list):
        needed = [
            c
            for c in updated
            if isinstance(c, str) and c in versions and c not in deltas and c not in inline
        ]
    return needed, marked, deltas


def _cycles(by_id: dict[str, _Node]) -> Iterator[list[str]]:
    """Each circle of parent links, once (its ids in parent order)."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in by_id:
        if start in state:
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in by_id and node not in state:
            state[node] = 1
            walk.append(node)
            node = by_id[node].parent_id
        if node is not None and state.get(node) == 1:
            yield walk[walk.index(node) :]
        for visited in walk:
            state[visited] = 2


def _part(row: RawRow) -> str:
    return "blob" if type(row) is RawBlob else "write" if type(row) is RawWrite else "checkpoint"


def _row_place(row: RawRow, at: str, detail: str | None) -> PlaceRecord:
    if type(row) is RawBlob:
        return place(
            row.thread_id,
            row.checkpoint_ns,
            channel=row.channel,
            detail=f"blob version {row.version}: {detail}",
        )
    channel = row.channel if type(row) is RawWrite else None
    what = f"{at} of task {row.task_id}" if type(row) is RawWrite else at
    return place(
        row.thread_id,
        row.checkpoint_ns,
        row.checkpoint_id,  # type: ignore[union-attr]
        channel=channel,
        detail=f"{what}: {detail}" if detail else what,
    )


# -- the run ----------------------------------------------------------------------------------


def check_store(
    store: Store,
    query: DumpQuery | None = None,
    *,
    threads: Iterable[ThreadRecord] = (),
    stale: dt.timedelta | None = None,
    now: dt.datetime | None = None,
    progress: Progress | None = None,
) -> CheckRecord:
    """Check `store` (or the threads `query` selects): `ckpt check --json`.

    `threads` are the thread records (`ckpt threads`) of the threads checked, read once
    the rows are; `stale` the age past which a thread waiting on an interrupt is a
    warning (measured from `now`, default the current time); `progress(n)` hears of every
    n rows read. Raises only what reading the store raises (ckpt.errors)."""
    query = query or DumpQuery()
    checker = _Checker(store, progress=progress)
    sizes = store.sizes(DumpQuery(thread_ids=query.thread_ids))
    for batch in thread_batches(sizes):
        checker.batch(DumpQuery(thread_ids=tuple(batch)))
    types = census_record(store, checker.census)
    _threads(checker, threads, stale=stale, now=now or dt.datetime.now(dt.UTC))
    _bytes_and_settings(checker, types)
    saver = _saver(store, types)
    _schema(checker, saver)
    findings = _records(checker, store)
    summary = {s: sum(1 for f in findings if f["severity"] == s) for s in SEVERITIES}
    worst = next((s for s in SEVERITIES if summary[s]), "ok")
    return {
        "store": types["store"],
        "saver": saver,
        "selection": {"thread_ids": list(query.thread_ids)},
        "scanned": {
            "threads": types["scanned"]["threads"],
            "checkpoints": types["scanned"]["checkpoints"],
            "blobs": types["scanned"]["blobs"],
            "writes": types["scanned"]["writes"],
            "values": types["scanned"]["values"],
            "bytes": sum(s.total for s in sizes.values()),
        },
        "tags": types["tags"],
        "encryption": types["encryption"],
        "findings": findings,
        "summary": summary,  # type: ignore[typeddict-item]
        "status": worst,  # type: ignore[typeddict-item]
    }


def _threads(
    checker: _Checker,
    threads: Iterable[ThreadRecord],
    *,
    stale: dt.timedelta | None,
    now: dt.datetime,
) -> None:
    """Failed and waiting threads, and delta channels whose snapshot is gone."""
    delta_threads: list[ThreadRecord] = []
    for thread in threads:
        thread_id = thread["thread_id"]
        where = place(thread_id, "", thread["checkpoint_id"])
        if thread["status"] == "error":
            first = thread["errors"][0] if thread["errors"] else None
            where["detail"] = str(first)[:200] if first is not None else None
            checker.found("failed-thread", thread_id, where)
        elif thread["status"] == "interrupted":
            updated = updated_at(thread["updated_at"])
            age = now - updated if updated is not None else None
            where["detail"] = f"waiting since {thread['updated_at']}"
            late = stale is not None and age is not None and age > stale
            checker.found("stale-interrupt" if late else "waiting", thread_id, where)
        if COUNTERS in thread["metadata"]:
            delta_threads.append(thread)
    latest = {t["thread_id"]: t["checkpoint_id"] for t in delta_threads}
    for delta in delta_channels(checker.store, delta_threads, {}):
        if not delta["complete"]:
            checker.found(
                "missing-snapshot",
                delta["thread_id"],
                place(
                    delta["thread_id"],
                    "",
                    latest[delta["thread_id"]],
                    channel=delta["channel"],
                    detail="the walk back to its snapshot from the newest checkpoint meets a "
                    "missing checkpoint",
                ),
            )
    for finding in checker.findings.values():
        finding.close_batch()


def _bytes_and_settings(checker: _Checker, types: TypesRecord) -> None:
    encryption = types["encryption"]
    if encryption["hidden"] and not encryption["key"]:
        finding = checker.findings.setdefault(
            "encrypted-unchecked", _Finding(KINDS["encrypted-unchecked"])
        )
        finding.count = encryption["hidden"]
    if encryption["key"] and not encryption["encrypted"]:
        checker.findings.setdefault("key-unused", _Finding(KINDS["key-unused"], count=1))
    if checker.encrypted_rows and checker.plain_threads.count:
        checker.findings["unencrypted-thread"] = checker.plain_threads
    unencrypted = checker.findings.get("unencrypted-row")
    if unencrypted is not None and not encryption["key"]:
        # Without the key the encrypted values are not verified either: said, not failed.
        unencrypted.kind = dataclasses.replace(unencrypted.kind, severity="warning")


def _saver(store: Store, types: TypesRecord) -> SaverRecord:
    facts = store.saver()
    formats = [
        f"v{entry['v']}: {_many(entry['checkpoints'], 'checkpoint')}, {FORMATS[entry['v']]}"
        if entry["v"] in FORMATS
        else f"{'v' + str(entry['v']) if entry['v'] is not None else 'no version'}: "
        f"{_many(entry['checkpoints'], 'checkpoint')}"
        for entry in types["checkpoint_versions"]
    ]
    return {
        "saver": facts.saver,
        "releases": facts.releases,
        "evidence": list(facts.evidence),
        "formats": formats,
        "langgraph": facts.langgraph,  # type: ignore[typeddict-item]
        "note": facts.note,
    }


def _schema(checker: _Checker, saver: SaverRecord) -> None:
    code = {"migrates": "schema-migration", "cannot": "unreadable-schema"}.get(saver["langgraph"])
    if code is not None:
        finding = checker.findings.setdefault(code, _Finding(KINDS[code]))
        finding.detail = saver["note"]
        finding.count = 1


def _records(checker: _Checker, store: Store) -> list[FindingRecord]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    codes = list(KINDS)
    found = sorted(
        checker.findings.values(),
        key=lambda f: (order[f.kind.severity], codes.index(f.kind.code)),
    )
    return [
        {
            "code": f.kind.code,
            "severity": f.kind.severity,
            "unit": f.kind.unit,
            "reason": f.detail or f.kind.reason,
            "count": f.count,
            "threads": f.threads,
            "thread_count": f.thread_count,
            "places": f.places,
            "bytes": f.bytes or None,
            "fix": _fix(f, store),
        }
        for f in found
    ]


def _fix(finding: _Finding, store: Store) -> str | None:
    """The command that repairs the threads: copied back whole from a backup, over the
    damaged ones (`ckpt copy` writes SQLite and PostgresSaver stores)."""
    if finding.kind.fix != "restore" or not store.copy_target or not finding.threads:
        return None
    few = finding.threads if finding.thread_count <= 3 else ["THREAD"]
    threads = " ".join(FIX_COMMANDS["thread"].format(shlex.quote(t)) for t in few)
    return FIX_COMMANDS["restore"].format(store=shlex.quote(store.location), threads=threads)


def _many(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"
