"""The integrity visitor of the one pass (ckpt.scan.rows): what is wrong with each row and
with the links between rows, judged the way LangGraph reads them (docs/json.md "ckpt check").

It follows the type census (ckpt.scan.census), which decodes every value and tells it, as
the census's Watcher, of each body it read and each value it could not. Per row: every part
has the shape LangGraph's loader needs (ckpt.scan.shapes). Per namespace, once its
checkpoints are read: parent links (dangling, cyclic, out of time order, two roots), each
checkpoint following from its parent (its step and its channels' versions never go back).
Per thread: the subgraph namespaces hang on checkpoints of the thread. Per batch, once its
blobs and writes are read: the blobs each version needs, the blobs and writes nothing uses,
writes naming a checkpoint newer than any left, runaway growth. Across the store: a
checkpoint id met in two threads (a Bloom filter of every id, each hit looked up by id),
and the thread a checkpoint that fits no parent was moved from (by its versions, among
the open ends: forks and checkpoints whose step ran with no child; ckpt.scan.copies).

A row is judged by itself and its thread's rows only, except for the look-ups by id (at
most LOOKUPS a run) that tell a row copied from another thread from a row deleted, and a
write newer than the read from a live run's. Memory is one batch's ids and versions, the
filter's bits (IdIndex) and a few records per finding.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any, Final

from ckpt.records.model import (
    UNREADABLE_IDX,
    CheckpointKey,
    DumpQuery,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    StoreHealth,
    ThreadBytes,
)
from ckpt.records.plans import (
    in_flight,
    lost_checkpoint,
    recent,
    version_number,
)
from ckpt.records.types import FindingCode, PlaceRecord
from ckpt.scan.chains import IdIndex, Node, Pair, ThreadChain, cycles
from ckpt.scan.copies import (
    OpenEnd,
    at_home,
    met_twice,
    misplaced_writes,
    moved_from,
    open_ends,
    version_misfit,
)
from ckpt.scan.findings import PLACES_SHOWN, RUNAWAY_BYTES, Finding, Findings
from ckpt.scan.places import (
    RowKey,
    aggregated_write,
    key_place,
    mention,
    needs_blob,
    next_power,
    place,
    row_key,
    row_place,
    unread,
)
from ckpt.scan.rows import RawRow, Visitor
from ckpt.scan.shapes import (
    blob_problem,
    body_problem,
    body_tag_problem,
    is_uuid,
    parse_metadata,
    stored_problem,
    write_problem,
)
from ckpt.scan.sizes import growth_shape
from ckpt.stores.base import Store

LOOKUPS: Final = 200  # find_exact look-ups per run (copied rows, writes ahead of their checkpoint)
ID_LOOKUPS: Final = 50  # of those, for ids met in an earlier thread (one per thread)
MISFITS: Final = 200  # checkpoints that fit no parent, whose origin is looked for (`origins`)
OPEN_ENDS: Final = 4096  # forks and step-ran leaves kept for `origins` (copies.open_ends)
SETTLE: Final = 2.0  # seconds a recent checkpoint some writes name may take to be committed
# Serde tags that carry no encryption because nothing is serialized (format.md §5.2, 7.1).
_UNSERIALIZED: Final = frozenset({"empty", "jsonb"})
_NUMBER: Final = (int, float)
_MEMO_TEXT: Final = 1024  # bytes: metadata texts up to this long are parsed once each
_MEMO_ENTRIES: Final = 4096  # distinct texts kept


class Integrity(Visitor):
    """The integrity checks fed by one pass over the rows; the census reports to it (as its
    census.Watcher). `sizes` are the threads read (Store.sizes), for runaway growth and the
    size of the id filter; `now` dates the blobs a run may be saving."""

    def __init__(
        self,
        store: Store,
        sizes: dict[str, ThreadBytes],
        *,
        now: dt.datetime,
        keep_namespaces: bool = False,
    ) -> None:
        self.store = store
        self.keep_namespaces = keep_namespaces  # for `health()`: every (thread, ns) read
        self.sizes = sizes
        self.now = now
        self.findings = Findings()
        self.policy = store.blob_policy
        self.untyped = store.era == "0.1"
        self.index = IdIndex(sum(s.checkpoints for s in sizes.values()))
        self.encrypted_rows = 0  # rows whose tag says encrypted
        self.lookups = 0
        self.shared_lookups = 0  # ids met in two threads, looked up (at most ID_LOOKUPS)
        # What Store.health counts, counted here: the test compares the two.
        self.tally = StoreHealth(orphan_blobs=0, orphan_blob_bytes=0)
        self.tally_threads: dict[str, set[str]] = {"writes": set(), "parents": set()}
        # The batch: checkpoints by (thread, ns) -> (oldest, newest id) and the ids, the
        # blobs their versions need and name, the newest version of each channel named,
        # the blobs' sizes, the threads whose growth is measured.
        self.groups: dict[tuple[str, str], list[str]] = {}
        self.ids: set[tuple[str, str, str]] = set()
        self.required: dict[Pair, tuple[str, str]] = {}  # blob -> (ns, checkpoint id) needing it
        self.named: set[Pair] = set()
        self.named_channels: set[tuple[str, str, str]] = set()
        self.top: dict[tuple[str, str], int] = {}  # (thread, ns) -> highest version counter
        self.blob_sizes: dict[Pair, int] = {}
        self.growing: dict[str, list[tuple[int, tuple[Pair, ...]]]] = {}
        # The namespace being read: its DeltaChannels, and the inline `true`s that are their
        # snapshot markers if those channels are (PostgresSaver).
        self.deltas: set[str] = set()
        self.snapshots: list[tuple[Pair, str]] = []
        # To look up by id at the end of the batch: (what, thread, ns, checkpoint id, the id
        # to look up) for a parent gone from the middle of a chain, a second root, an id
        # met before, subgraph parents gone; and writes newer than every
        # checkpoint read: (thread, ns, checkpoint id) -> [rows, bytes].
        self.suspects: list[tuple[str, str, str, str, str, Node | None]] = []
        self.ahead: dict[tuple[str, str, str], list[int]] = {}
        # The checkpoint ids of each (thread, ns) of the batch, in the order read (where a
        # misplaced write's checkpoint is); each write of the batch by (thread, ns,
        # checkpoint id, task id, idx); per task of a checkpoint, [writes, highest index];
        # and the writes whose checkpoint is not in their thread and namespace: (thread,
        # ns, checkpoint id) -> [(task id, idx, channel)].
        self.group_ids: list[tuple[tuple[str, str], list[str]]] = []
        self.write_keys: set[tuple[str, str, str, str, int]] = set()
        self.task_writes: dict[tuple[str, str, str, str], list[int]] = {}
        self.strays: dict[tuple[str, str, str], list[tuple[str, int, str]]] = {}
        self.unsettled: list[tuple[str, str, str, int]] = []  # see `settle`
        self.copied: set[tuple[str, str, str]] = set()  # copied checkpoints said this batch
        # Where a checkpoint that fits no parent came from (`origins`): those checkpoints;
        # the batch's checkpoints no other names as its parent, and those two or more name
        # (forks), by (thread, ns); and the open ends kept (`ends`), as (thread, ns,
        # checkpoint id, step, string versions).
        self.misfits: list[tuple[str, str, Node]] = []
        self.leaves: list[tuple[tuple[str, str], Node]] = []
        self.forks: list[tuple[tuple[str, str], Node]] = []
        self.open_ends: list[OpenEnd] = []
        # The batch's threads: [encrypted values, plain values, their bytes], and the first
        # plain rows of each. A thread holding both has unencrypted rows among encrypted ones;
        # a thread holding plain values only is said once the store is known to hold
        # encrypted ones (kept in `plain_threads` till the end).
        self.tags_of: dict[str, list[int]] = {}
        self.plain_rows: dict[str, list[tuple[RowKey, str | None]]] = {}  # the first few a thread
        self.plain_threads = Finding(self.findings.get("unencrypted-thread").kind)
        del self.findings.by_code["unencrypted-thread"]
        self.thread: ThreadChain | None = None
        self.group: list[Node] = []
        self.group_key: tuple[str, str] | None = None
        self.last_body: tuple[RawCheckpoint, Any, bool] | None = None
        # The versions of the last checkpoint read, with its thread and namespace (`_fresh`).
        self.last_versions: tuple[str, str, dict[str, str]] | None = None
        self.troubled: RawRow | None = None  # the last row the census could not read
        # Each row brings its own copy of its thread id: what is kept holds one per thread
        # (a hostile store's 10 MB id, kept per checkpoint, would be 10 MB each).
        self.names: dict[str, str] = {}
        # The MySQL saver on MariaDB: each checkpoint's writes as the length of the JSON
        # aggregate its read builds, against the server's group_concat_max_len.
        self.aggregate_limit = store.aggregate_limit
        self.aggregates: dict[tuple[str, str, str], int] = {}
        # JSON metadata text -> what parse_metadata made of it (see `_metadata`).
        self.metadata_read: dict[bytes, tuple[dict[str, Any] | None, str | None]] = {}
        # `tag`'s counts and places of the thread it counted last (tags_of, plain_rows).
        self.tag_thread: str | None = None
        self.tag_counts: list[int] = []
        self.tag_places: list[tuple[RowKey, str | None]] = []

    # -- findings -----------------------------------------------------------------------------
    def found(
        self,
        code: FindingCode,
        thread_id: str,
        where: PlaceRecord | None,
        *,
        count: int = 1,
        size: int = 0,
    ) -> None:
        thread_id = self.name(thread_id)
        if where is not None:
            where["thread_id"] = thread_id
        self.findings.found(code, thread_id, where, count=count, size=size)

    def name(self, thread_id: str) -> str:
        """The one copy of a thread id kept (see `names`)."""
        return self.names.setdefault(thread_id, thread_id)

    # -- the census's reports (census.Watcher) ------------------------------------------------
    def body(self, row: RawCheckpoint, body: Any, *, plain: bool = False) -> None:
        self.last_body = (row, body, plain)

    def problem(self, row: RawRow, at: str, tag: str | None, error: str, *, large: bool) -> None:
        if type(row) is RawWrite and write_problem(row, untyped=self.untyped) is not None:
            return  # no tag, or one no serializer reads: said as such by `write`
        if type(row) is RawBlob and blob_problem(row) is not None:
            return
        self.troubled = row
        code: FindingCode = "too-large" if large else "undecodable"
        self.found(code, row.thread_id, row_place(row, at, f"{tag}: {error}"))

    def unverified(self, row: RawRow, at: str, tag: str | None) -> None:
        self.troubled = row
        self.found("unverified", row.thread_id, row_place(row, at, tag))

    def strict(self, row: RawRow, at: str, names: list[str]) -> None:
        self.found("strict-msgpack", row.thread_id, row_place(row, at, ", ".join(names)))

    def pickled(self, row: RawRow, at: str, names: list[str]) -> None:
        detail = ", ".join(names) if names else "no globals"
        self.found("pickle-values", row.thread_id, row_place(row, at, detail))

    # -- checkpoints --------------------------------------------------------------------------
    def checkpoint(self, row: RawCheckpoint) -> None:
        self.tag(row, row.type)
        last = self.last_body
        delivered = last is not None and last[0] is row
        body, plain = (last[1], last[2]) if delivered else (None, False)  # type: ignore[index]
        self.last_body = None
        thread = self.thread
        if thread is None or thread.thread_id != row.thread_id:
            self.end_thread()
            thread = self.thread = ThreadChain(self.name(row.thread_id))
        thread_id = thread.thread_id
        ns, checkpoint_id = row.checkpoint_ns, row.checkpoint_id
        key = (thread_id, ns)
        if key != self.group_key:
            self.end_group()
            self.group_key = key
        metadata, wrong = self._metadata(row)
        if wrong is not None and not (row.metadata_type == "msgpack" and self.troubled is row):
            self._malformed("malformed-metadata", row, wrong)
        if row.misfiled is not None:
            self._malformed("malformed-checkpoint", row, row.misfiled)
        stored = stored_problem(row.type, row.flaws) if row.flaws else None
        if stored is not None:
            self._malformed("malformed-checkpoint", row, stored)
        elif delivered:
            shape = body_problem(body, values_apart=row.channel_versions is not None, plain=plain)
            if shape is not None:
                self._malformed("malformed-checkpoint", row, shape)
            stored_id = body.get("id") if type(body) is dict else None
            if type(stored_id) is str and stored_id != checkpoint_id:
                self._malformed("id-mismatch", row, f"the body says {stored_id}")
        elif self.troubled is not row and not unread(row):
            shape = body_tag_problem(row, untyped=self.untyped)
            if shape is not None:
                self._malformed("malformed-checkpoint", row, shape)
        parent_id = row.parent_checkpoint_id
        if parent_id is not None and not is_uuid(parent_id):
            detail = f"its parent id {str(parent_id)[:60]!r} is no checkpoint id"
            self._malformed("malformed-checkpoint", row, detail)
        if metadata is not None:
            parents, source, step = (
                metadata.get("parents"),
                metadata.get("source"),
                metadata.get("step"),
            )
        else:
            parents = source = step = None
        versions = body.get("channel_versions") if type(body) is dict else None
        self.group.append(
            Node(
                checkpoint_id,
                parent_id,
                source if isinstance(source, str) else None,
                (
                    ({str(k): str(v) for k, v in parents.items()} if parents else {})
                    if isinstance(parents, dict)
                    else None
                ),
                step if isinstance(step, _NUMBER) and not isinstance(step, bool) else None,
                versions if isinstance(versions, dict) else row.channel_versions,
            )
        )
        self.ids.add((thread_id, ns, checkpoint_id))
        if (
            self.index.add(checkpoint_id)
            and not thread.shares
            and self.shared_lookups < ID_LOOKUPS
            and not any(checkpoint_id in ids for ids in thread.ids.values())
        ):
            # One look-up per thread: a thread copied whole meets every id again.
            thread.shares = True
            self.shared_lookups += 1
            self.suspects.append(("id", thread_id, ns, checkpoint_id, checkpoint_id, None))
        pairs = (
            self.versions(thread_id, row, body, metadata)
            if row.channel_versions is not None
            else ()
        )
        if not ns:
            thread.growth.append((row.body_size + row.metadata_size, pairs))

    def _metadata(self, row: RawCheckpoint) -> tuple[dict[str, Any] | None, str | None]:
        """parse_metadata, once per distinct JSON text (a graph's checkpoints repeat their
        metadata but for the step): the parsed map is only read, never changed."""
        data, tag = row.metadata, row.metadata_type
        if (tag != "json" and tag != "jsonb") or not data or len(data) > _MEMO_TEXT:
            return parse_metadata(row)
        known = self.metadata_read.get(data)
        if known is None:
            if len(self.metadata_read) >= _MEMO_ENTRIES:
                self.metadata_read.clear()
            known = self.metadata_read[data] = parse_metadata(row)
        return known

    def _malformed(self, code: FindingCode, row: RawCheckpoint, detail: str) -> None:
        where = place(row.thread_id, row.checkpoint_ns, row.checkpoint_id, detail=detail)
        self.found(code, row.thread_id, where)

    def versions(
        self, thread_id: str, row: RawCheckpoint, body: Any, metadata: dict[str, Any] | None
    ) -> tuple[Pair, ...]:
        """Note the blobs a checkpoint's versions name, and those it needs (blob_policy);
        returns the pairs (for its size with its values)."""
        versions = row.channel_versions
        if versions is None or self.policy == "none":
            return ()
        ns = row.checkpoint_ns
        pairs = tuple(zip(repeat(thread_id), repeat(ns), versions, versions.values()))
        # What the namespace's previous checkpoint named is noted already: most versions
        # are the same from one checkpoint to the next (only a step's updates change).
        fresh = self._fresh(thread_id, ns, versions)
        top = self.top.get((thread_id, ns))
        for channel, version in fresh:
            self.named.add((thread_id, ns, channel, version))
            self.named_channels.add((thread_id, ns, channel))
            counter = version_number(version)
            if counter is not None and (top is None or counter > top):
                top = counter
        if top is not None:
            self.top[thread_id, ns] = top
        if self.policy == "every":
            needed: Iterable[str] = [channel for channel, _ in fresh]
        else:  # "updated": PostgresSaver keeps a blob for the values it does not inline
            needed, snapshots, deltas = needs_blob(body, metadata, versions)
            self.deltas |= deltas
            self.snapshots.extend(
                ((thread_id, ns, c, versions[c]), row.checkpoint_id) for c in snapshots
            )
        for channel in needed:
            pair = (thread_id, ns, channel, versions[channel])
            self.required.setdefault(pair, (ns, row.checkpoint_id))
        return pairs

    def _fresh(
        self, thread_id: str, ns: str, versions: dict[str, str]
    ) -> Iterable[tuple[str, str]]:
        """The (channel, version) items of a checkpoint's versions that the checkpoint read
        before it, in the same namespace, did not have (all of them for the first), in
        their order."""
        last, self.last_versions = self.last_versions, (thread_id, ns, versions)
        if last is None or last[0] != thread_id or last[1] != ns:
            return versions.items()
        try:
            fresh = versions.items() - last[2].items()
        except TypeError:  # a version that does not hash
            return versions.items()
        if len(fresh) < 2:
            return fresh
        return [item for item in versions.items() if item in fresh]

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
        ids = [n.checkpoint_id for n in nodes]
        by_id = dict(zip(ids, nodes, strict=True))
        oldest, newest = min(ids), max(ids)
        span = self.groups.get(key)
        if span is None:
            self.groups[key] = [oldest, newest]
        else:  # the namespace met again in the batch (rows not sorted by it)
            span[0], span[1] = min(span[0], oldest), max(span[1], newest)
        self.group_ids.append((key, ids))
        parent_ids = [n.parent_id for n in nodes]
        named = set(parent_ids)
        self.leaves.extend((key, n) for n in nodes if n.checkpoint_id not in named)
        if len(named) < len(parent_ids):
            counted = Counter(parent_ids)
            self.forks.extend((key, by_id[i]) for i, n in counted.items() if n > 1 and i in by_id)
        self.thread.ids[ns] = set(by_id)
        self.thread.oldest[ns] = oldest
        if ns:
            self.thread.subgraphs[ns] = nodes
        roots: list[Node] = []
        older: list[Node] = []  # parent gone, and older than every checkpoint left
        later: list[Node] = []  # id sorting before its parent's
        missing = 0
        for node in nodes:
            parent = node.parent_id
            if parent is None:
                roots.append(node)
            elif parent not in by_id:
                missing += 1
                self.tally.missing_parent_oldest += node.checkpoint_id == oldest
                if parent < oldest:
                    older.append(node)
                else:
                    self._suspect("parent", thread_id, ns, node, parent)
            elif node.checkpoint_id < parent:
                later.append(node)
            else:
                self._follows(thread_id, ns, node, by_id[parent])
        if missing:
            self.tally.missing_parents += missing
            self.tally_threads["parents"].add(thread_id)
        in_cycles: set[str] = set()
        # A circle of parent links has a link to a later id, or is a checkpoint its own
        # parent: without either there is none to look for.
        circled = later or any(n.parent_id == n.checkpoint_id for n in nodes)
        for cycle in cycles(by_id) if circled else ():
            in_cycles.update(cycle)
            self.found(
                "cycle", thread_id, place(thread_id, ns, min(cycle), detail=" -> ".join(cycle))
            )
        for node in later:  # a circle has one such link at least: said as the circle
            if node.checkpoint_id not in in_cycles:
                self.found(
                    "out-of-order",
                    thread_id,
                    place(thread_id, ns, node.checkpoint_id, detail=f"parent {node.parent_id}"),
                )
                self._misfit(thread_id, ns, node)
        started = sorted(
            (n for n in roots if n.source in ("input", None)), key=lambda n: n.checkpoint_id
        )
        if started:
            self.thread.started.add(ns)
        for node in older:
            # Older than everything left: what a prune leaves, unless the namespace still
            # has its first checkpoint (no prune keeps that and deletes older ones).
            if started:
                self._suspect("parent", thread_id, ns, node, node.parent_id or "")
            else:  # looked up: a parent in another thread is a row moved or copied here
                self._suspect("pruned", thread_id, ns, node, node.parent_id or "")
        # The namespace's first checkpoint is there: any other checkpoint without a parent
        # lost its link, or was added (a prune that clears parents leaves no first one).
        if started:
            for node in roots:
                if node is not started[0]:
                    self._suspect("root", thread_id, ns, node, node.checkpoint_id)

    def _suspect(self, what: str, thread_id: str, ns: str, node: Node, wanted: str) -> None:
        self.suspects.append((what, thread_id, ns, node.checkpoint_id, wanted, node))

    def _follows(self, thread_id: str, ns: str, node: Node, parent: Node) -> None:
        """A checkpoint follows from its parent: its step is later, and each channel keeps
        its parent's version or has a later one (LangGraph only ever increments them)."""
        detail = None
        if node.step is not None and parent.step is not None and node.step <= parent.step:
            detail = f"step {node.step} after its parent's step {parent.step}"
        elif node.versions is not None and parent.versions is not None:
            detail = version_misfit(node.versions, parent.versions)
        if detail is not None:
            self.found(
                "chain-mismatch",
                thread_id,
                place(
                    thread_id, ns, node.checkpoint_id, detail=f"{detail} ({parent.checkpoint_id})"
                ),
            )
            self._misfit(thread_id, ns, node)

    def _misfit(self, thread_id: str, ns: str, node: Node | None) -> None:
        """A checkpoint that does not follow from its parent: where it came from is looked
        for among the open ends once the pass is over (`origins`)."""
        if node is not None and node.versions and len(self.misfits) < MISFITS:
            self.misfits.append((thread_id, ns, node))

    def end_thread(self) -> None:
        """The thread's checkpoints are all read: its subgraph namespaces must hang on
        checkpoints of the thread."""
        self.end_group()
        self.group_key = None
        thread = self.thread
        self.thread = None
        if thread is None:
            return
        self.growing[thread.thread_id] = thread.growth
        for ns, nodes in sorted(thread.subgraphs.items()):
            head = min(nodes, key=lambda n: n.checkpoint_id)
            if not any(n.parents for n in nodes):  # before metadata named them
                if ns.rpartition("|")[0] not in thread.ids:
                    self.found(
                        "orphan-subgraph",
                        thread.thread_id,
                        place(
                            thread.thread_id, ns, head.checkpoint_id, detail="no parent namespace"
                        ),
                    )
                continue
            self._ancestors(thread, ns, nodes)

    def _ancestors(self, thread: ThreadChain, ns: str, nodes: list[Node]) -> None:
        """Each checkpoint of a subgraph namespace names the checkpoints its run hangs on
        (metadata `parents`): they are the thread's, or older than its oldest (pruned)."""
        for node in sorted(nodes, key=lambda n: n.checkpoint_id):
            for ancestor_ns, ancestor_id in sorted((node.parents or {}).items()):
                # A subgraph that saves no checkpoint of its own (a middle one of nested
                # subgraphs) is named with the checkpoint of the namespace above it.
                if any(ancestor_id in ids for ids in thread.ids.values()):
                    continue
                held = ancestor_ns if ancestor_ns in thread.ids else ""
                left = thread.oldest.get(held)
                # Older than everything left in a namespace that lost its first checkpoint:
                # what a prune leaves.
                if left is not None and ancestor_id < left and held not in thread.started:
                    self.found(
                        "pruned-history",
                        thread.thread_id,
                        place(
                            thread.thread_id,
                            ns,
                            node.checkpoint_id,
                            detail=f"ran from {ancestor_id} ({ancestor_ns or 'root'} namespace)",
                        ),
                    )
                else:
                    self._suspect("ran-from", thread.thread_id, ns, node, ancestor_id)
                return  # one per namespace: the run's first checkpoint says it

    # -- blobs and writes ---------------------------------------------------------------------
    def blob(self, row: RawBlob) -> None:
        if self.thread is not None:  # else there is nothing to end
            self.end_thread()
        self.tag(row, row.type)
        thread_id = self.name(row.thread_id)
        if self.troubled is not row:
            wrong = blob_problem(row)
            if wrong is not None:
                self.found("malformed-blob", thread_id, row_place(row, "blob", wrong))
        pair = (thread_id, row.checkpoint_ns, row.channel, row.version)
        self.blob_sizes[pair] = row.size
        slot = (thread_id, row.checkpoint_ns, row.channel)
        named = pair in self.named if row.version is not None else slot in self.named_channels
        if named:
            return
        self.tally.orphan_blobs = (self.tally.orphan_blobs or 0) + 1
        self.tally.orphan_blob_bytes = (self.tally.orphan_blob_bytes or 0) + row.size
        span = self.groups.get((thread_id, row.checkpoint_ns))
        top = self.top.get((thread_id, row.checkpoint_ns))
        if span is not None and in_flight(row.version, top, span[1], self.now):
            return  # may be the value of a checkpoint being saved now
        self.found(
            "orphan-blobs",
            thread_id,
            place(
                thread_id, row.checkpoint_ns, channel=row.channel, detail=f"version {row.version}"
            ),
            size=row.size,
        )

    def write(self, row: RawWrite) -> None:
        if self.thread is not None:  # else there is nothing to end
            self.end_thread()
        self.tag(row, row.type)
        if self.aggregate_limit is not None:
            key = (self.name(row.thread_id), row.checkpoint_ns, row.checkpoint_id)
            self.aggregates[key] = self.aggregates.get(key, 0) + aggregated_write(row)
        if row.misfiled is not None:
            self.found("malformed-write", row.thread_id, row_place(row, "write", row.misfiled))
        elif self.troubled is not row:
            wrong = write_problem(row, untyped=self.untyped)
            if wrong is not None:
                self.found("malformed-write", row.thread_id, row_place(row, "write", wrong))
        key = (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        idx, task_id = row.idx, row.task_id
        if type(idx) is int and idx != UNREADABLE_IDX and type(task_id) is str:
            self.write_keys.add((*key, task_id, idx))
            task = (*key, task_id)
            counted = self.task_writes.get(task)
            if counted is None:
                self.task_writes[task] = [1, idx]
            else:
                counted[0] += 1
                if idx > counted[1]:
                    counted[1] = idx
        if key in self.ids:
            return
        if type(row.checkpoint_id) is not str or not is_uuid(row.checkpoint_id):
            # A key cut short or changed: the checkpoint it was written for lost it.
            detail = f"it names {str(row.checkpoint_id)[:60]!r}, no checkpoint id"
            self.found("malformed-write", row.thread_id, row_place(row, "write", detail))
        else:
            self.strays.setdefault(key, []).append((row.task_id, row.idx, row.channel))
        if not self.store.raw_writes_complete:
            return  # a store whose orphans `health` counts (orphan_writes_of)
        self.tally.orphan_writes += 1
        self.tally_threads["writes"].add(self.name(row.thread_id))
        span = self.groups.get((row.thread_id, row.checkpoint_ns))
        if span is not None and row.checkpoint_id > span[1]:
            # Newer than every checkpoint read: it may be committed since. Looked up again.
            counted = self.ahead.setdefault(
                (self.name(row.thread_id), row.checkpoint_ns, row.checkpoint_id), [0, 0]
            )
            counted[0] += 1
            counted[1] += row.size
            return
        self.orphan_write(row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.size)

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
        health = self.store.orphan_writes(query)
        self.tally.orphan_writes += health.orphan_writes
        if not health.orphan_writes:
            return
        finding = self.findings.get("orphan-writes")
        finding.count += health.orphan_writes
        for key in health.orphan_write_examples:
            finding.batch_threads.add(key.thread_id)
            self.tally_threads["writes"].add(key.thread_id)
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
        if tag is None or tag in _UNSERIALIZED or type(tag) is not str:
            return
        thread_id = row.thread_id
        if thread_id == self.tag_thread:  # rows come by thread: most are the last one's
            counts, places = self.tag_counts, self.tag_places
        else:
            if thread_id not in self.tags_of:
                self.tags_of[self.name(thread_id)] = [0, 0, 0]
            if thread_id not in self.plain_rows:
                self.plain_rows[thread_id] = []
            counts, places = self.tags_of[thread_id], self.plain_rows[thread_id]
            self.tag_thread, self.tag_counts, self.tag_places = thread_id, counts, places
        if "+" in tag and tag.partition("+")[2]:
            counts[0] += 1
            self.encrypted_rows += 1
            return
        counts[1] += 1
        counts[2] += row.size
        if len(places) < PLACES_SHOWN:
            # Where it is, not the row (its bytes would stay until the batch ends), nor
            # yet its place record: most are never shown.
            places.append((row_key(row), row.type))

    # -- the end of a batch --------------------------------------------------------------------
    def end_batch(self, threads: Sequence[str]) -> None:
        self.end_thread()
        if not self.store.raw_writes_complete:
            self.orphan_writes_of(DumpQuery(thread_ids=tuple(threads)))
        if self.keep_namespaces:
            self.tally.namespaces.extend(self.groups)
        for pair, (ns, checkpoint_id) in self.required.items():
            if pair in self.blob_sizes or (pair[0], pair[1], pair[2], None) in self.blob_sizes:
                continue
            self.found(
                "missing-blob",
                pair[0],
                place(pair[0], ns, checkpoint_id, channel=pair[2], detail=f"version {pair[3]}"),
            )
        for thread_id, growth in self.growing.items():
            known = self.sizes[thread_id].total if thread_id in self.sizes else None
            if known is not None and known < RUNAWAY_BYTES:
                continue  # its size with its values is not asked for
            sizes = [size + sum(self.blob_sizes.get(p, 0) for p in pairs) for size, pairs in growth]
            stored = known if known is not None else sum(sizes)
            if (
                stored >= RUNAWAY_BYTES
                and sizes
                and growth_shape(len(sizes), sizes, sizes[0], sizes[-1]) == "growing"
            ):
                self.found(
                    "quadratic-growth",
                    thread_id,
                    place(
                        thread_id,
                        "",
                        detail=f"{sizes[0]:,} B -> {sizes[-1]:,} B over {len(sizes)} "
                        f"checkpoints, {stored:,} B stored",
                    ),
                    size=stored,
                )
        limit = self.aggregate_limit
        for (thread_id, ns, checkpoint_id), length in self.aggregates.items():
            if limit is not None and length + 2 > limit:
                self.found(
                    "aggregate-too-long",
                    thread_id,
                    place(
                        thread_id,
                        ns,
                        checkpoint_id,
                        detail=f"its writes aggregate to about {length + 2:,} bytes, "
                        f"group_concat_max_len is {limit:,}: SET GLOBAL "
                        f"group_concat_max_len = {next_power(length + 2):,}",
                    ),
                )
        self.gaps()
        self.misplaced()
        self.look_up()
        self.ends()
        newest = {key: span[1] for key, span in self.groups.items()}
        for thread_id, ns, checkpoint_id, said in self.store.latest_problems(newest, settle=SETTLE):
            where = place(thread_id, ns, checkpoint_id, detail=said)
            self.found("wrong-latest", thread_id, where)
        for name in ("groups", "required", "named", "named_channels", "top", "blob_sizes",
                     "growing", "aggregates", "group_ids", "write_keys", "task_writes",
                     "strays", "leaves", "forks"):  # fmt: skip
            getattr(self, name).clear()
        self.ids.clear()
        self.last_versions = None
        self.names.clear()
        self.copied.clear()
        self.unencrypted()
        self.findings.close_batch()
        self.tally.missing_parent_threads += len(self.tally_threads["parents"])
        self.tally.orphan_write_threads += len(self.tally_threads["writes"])
        for seen in self.tally_threads.values():
            seen.clear()

    def gaps(self) -> None:
        """A task's writes are numbered from 0 in one put_writes call (special channels
        get negative indexes): an index past the task's count is a row added or changed."""
        for (thread_id, ns, checkpoint_id, task_id), (count, top) in self.task_writes.items():
            if top >= count:
                detail = f"task {task_id[:40]}: index {top}, of {count} write{'s' * (count != 1)}"
                self.found("malformed-write", thread_id, place(thread_id, ns, checkpoint_id,
                           detail=detail))  # fmt: skip

    def misplaced(self) -> None:
        """Writes whose checkpoint is in another thread or namespace (`misplaced_writes`)."""

        def look_up(checkpoint_id: str) -> list[CheckpointKey] | None:
            return self._look_up(checkpoint_id) if self.lookups < LOOKUPS // 2 else None

        for home_thread, home_ns, checkpoint_id, detail in misplaced_writes(
            self.store, self.strays, self.group_ids, self.write_keys, look_up
        ):
            where = place(home_thread, home_ns, checkpoint_id, detail=detail)
            self.found("misplaced-write", home_thread, where)

    def _look_up(self, checkpoint_id: str) -> list[CheckpointKey] | None:
        if self.lookups >= LOOKUPS:
            return None
        self.lookups += 1
        return self.store.find_exact(checkpoint_id)

    def look_up(self) -> None:
        """Checkpoints that may belong to another thread, and writes that may be newer
        than the read: asked of the store by id (at most LOOKUPS per run)."""
        ahead, self.ahead = self.ahead, {}
        for (thread_id, ns, checkpoint_id), (writes, size) in ahead.items():
            keys = self._look_up(checkpoint_id)
            if keys is not None and CheckpointKey(thread_id, ns, checkpoint_id) in keys:
                continue  # committed after the read: a live run, not damage
            if not lost_checkpoint(checkpoint_id) or at_home(self.store, thread_id, keys or []):
                # A made-up id, or a checkpoint of another thread (writes copied from
                # there): LangGraph never reads them, no checkpoint of this thread is lost.
                self.orphan_write(thread_id, ns, checkpoint_id, size, count=writes)
                continue
            if recent(checkpoint_id, self.now):
                # Recent: LangGraph's async durability saves a step's writes beside its
                # checkpoint, not after it. Asked again once the pass is over (`settle`).
                self.unsettled.append((self.name(thread_id), ns, checkpoint_id, writes))
                continue
            self._lost(thread_id, ns, checkpoint_id, writes)
        suspects, self.suspects = self.suspects, []
        for what, thread_id, ns, checkpoint_id, wanted, node in suspects:
            keys = self._look_up(wanted) or []
            others = sorted({k.thread_id for k in keys} - {thread_id})
            here = place(thread_id, ns, checkpoint_id)
            if what == "id":
                self._met_twice(thread_id, ns, checkpoint_id, keys)
            elif others:
                said = {
                    "parent": "its parent",
                    "pruned": "its parent",
                    "root": "its id",
                    "ran-from": "the checkpoint it ran from",
                }
                here["detail"] = (
                    f"{said[what]} {wanted} is a checkpoint of thread {mention(others[0])}"
                )
                self._copied(here)
                if what in ("parent", "pruned"):
                    self._moved_away(thread_id, ns, checkpoint_id, wanted, others)
            elif what in ("parent", "pruned") and any(k.checkpoint_ns != ns for k in keys):
                # Each namespace chains its own checkpoints: a parent in another namespace
                # of the thread is a row whose namespace changed.
                moved = next(k.checkpoint_ns for k in keys if k.checkpoint_ns != ns)
                here["detail"] = f"parent {wanted} is a checkpoint of namespace {moved!r}"
                self.found("dangling-parent", thread_id, here)
                self._misfit(thread_id, ns, node)
            elif what == "pruned":
                here["detail"] = f"parent {wanted}"
                self.found("pruned-history", thread_id, here)
            elif what == "parent":
                self.found("dangling-parent", thread_id, {**here, "detail": f"parent {wanted}"})
                self._misfit(thread_id, ns, node)
            elif what == "root":
                here["detail"] = "no parent, beside the namespace's first checkpoint"
                self.found("two-roots", thread_id, here)
            else:
                here["detail"] = f"ran from {wanted}, which is not in the thread"
                self.found("orphan-subgraph", thread_id, here)

    def _moved_away(
        self, thread_id: str, ns: str, checkpoint_id: str, parent_id: str, others: list[str]
    ) -> None:
        """A checkpoint whose parent is in another thread, and which that thread does not
        hold itself: moved from there (its thread_id changed), not copied. That thread lost
        it: LangGraph reads its history without it."""
        keys = self._look_up(checkpoint_id)
        if keys is None:
            return
        holders = {k.thread_id for k in keys}
        for other in others:
            if other not in holders:
                self._left(other, ns, checkpoint_id, parent_id, thread_id)

    def _left(self, other: str, ns: str, checkpoint_id: str, parent_id: str, into: str) -> None:
        """Thread `other` lost its checkpoint `checkpoint_id`, a child of its `parent_id`,
        now filed under thread `into`."""
        detail = f"a child of {parent_id}, filed under thread {mention(into)}"
        self.found("missing-checkpoint", other, place(other, ns, checkpoint_id, detail=detail))

    def _copied(self, where: PlaceRecord) -> None:
        """A copied checkpoint, said once however many signs point at it."""
        key = (where["thread_id"], where["checkpoint_ns"] or "", where["checkpoint_id"] or "")
        if key not in self.copied:
            self.copied.add(key)
            self.found("copied-checkpoint", where["thread_id"], where)

    def _lost(self, thread_id: str, ns: str, checkpoint_id: str, writes: int) -> None:
        self.found(
            "missing-checkpoint",
            thread_id,
            place(
                thread_id,
                ns,
                checkpoint_id,
                detail=f"{writes} pending write{'s' * (writes != 1)} name it; it is not there",
            ),
        )

    def ends(self) -> None:
        """The batch's open ends (`open_ends`), at most OPEN_ENDS a pass."""
        room = OPEN_ENDS - len(self.open_ends)
        if room > 0:
            written = {key[:3] for key in self.task_writes}
            self.open_ends += open_ends(self.leaves, self.forks, written)[:room]

    def origins(self) -> None:
        """The threads the checkpoints that fit no parent were moved from (`moved_from`):
        each lost one, and LangGraph reads its history without it."""
        for other, ns, checkpoint_id, parent_id, thread_id in moved_from(
            self.misfits, self.open_ends
        ):
            self._left(other, ns, checkpoint_id, parent_id, thread_id)
        self.misfits = []
        self.findings.close_batch()

    def settle(self) -> None:
        """The recent checkpoints some writes named and the pass did not find: a run may be
        saving them now (async durability commits a step's writes and its checkpoint side
        by side). Asked again for up to SETTLE seconds; those still missing are lost."""
        self.origins()
        pending = self.unsettled
        deadline = time.monotonic() + SETTLE
        while pending:
            pending = [
                (thread_id, ns, checkpoint_id, writes)
                for thread_id, ns, checkpoint_id, writes in pending
                if CheckpointKey(thread_id, ns, checkpoint_id)
                not in self.store.find_exact(checkpoint_id)
            ]
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(SETTLE / 40)
        for thread_id, ns, checkpoint_id, writes in pending:
            self._lost(thread_id, ns, checkpoint_id, writes)
        self.unsettled = []
        self.findings.close_batch()

    def _met_twice(
        self, thread_id: str, ns: str, checkpoint_id: str, keys: list[CheckpointKey]
    ) -> None:
        """A checkpoint id met in another thread too: each copy that does not fit its
        thread is a copied checkpoint (ckpt.scan.copies)."""
        for where in met_twice(self.store, thread_id, checkpoint_id, keys):
            self._copied(where)

    def unencrypted(self) -> None:
        """Plain values of the batch's threads: among encrypted ones in the same thread (a
        row written without the key), or in threads holding none (said at the end)."""
        for thread_id, (encrypted, plain, size) in self.tags_of.items():
            if not plain:
                continue
            finding = self.plain_threads if not encrypted else self.findings.get("unencrypted-row")
            finding.count += plain
            finding.bytes += size
            finding.batch_threads.add(thread_id)
            for key, tag in self.plain_rows.get(thread_id, ()):
                if len(finding.places) < PLACES_SHOWN:
                    finding.places.append(key_place(key, key[0], tag))
        self.plain_threads.close_batch()
        self.tags_of.clear()
        self.plain_rows.clear()
        self.tag_thread = None

    def health(self) -> StoreHealth:
        """What Store.health answers, as this scan counted it (namespaces sorted)."""
        tally = self.tally
        return StoreHealth(
            orphan_writes=tally.orphan_writes,
            orphan_write_threads=tally.orphan_write_threads,
            missing_parents=tally.missing_parents,
            missing_parent_threads=tally.missing_parent_threads,
            missing_parent_oldest=tally.missing_parent_oldest,
            orphan_blobs=tally.orphan_blobs if self.policy != "none" else None,
            orphan_blob_bytes=tally.orphan_blob_bytes if self.policy != "none" else None,
            namespaces=sorted(set(tally.namespaces)),
        )
