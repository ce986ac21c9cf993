"""What `ckpt prune` deletes and what it keeps, planned from a thread's bookkeeping alone.

The rules are LangGraph's own `keep_latest` (PostgresSaver 3.2.0, `_keep_latest`), made
to work where LangGraph refuses, and for a last-N variant:

* Each namespace keeps its newest checkpoint (or newest N) and the writes on it.
* A checkpoint older than format v4 reads the Sends it still has to run from its
  parent's `__pregel_tasks` writes: that parent stays too.
* A DeltaChannel value is rebuilt from the nearest ancestor holding its snapshot plus
  every write on the way (format.md §3.8; the 4.2 fix reads the seed's own writes): the
  ancestors back to and including that one stay, with their writes. LangGraph refuses to
  prune such threads; ckpt keeps the chain instead.
* A subgraph *call* (a namespace with a task id, `node:<id>`) belongs to the root
  checkpoint it started from: when that root checkpoint is deleted, the call's whole
  namespace goes. A persistent subgraph (`checkpointer=True`, no task id) keeps its head.
* A kept checkpoint whose parent is deleted gets `parent_checkpoint_id` NULL, as
  LangGraph leaves it; writes go only with the checkpoints deleted (a run may commit a
  superstep's writes before its checkpoint), and a blob goes when no kept checkpoint of
  its namespace names its version.

The "orphans" strategy deletes no checkpoint, only what nothing uses (what `ckpt check`
calls orphan writes and orphan blobs): pending writes whose checkpoint is gone, and blobs
no checkpoint of their namespace names. Writes naming a checkpoint newer than any left
stay (they are what says the newest checkpoint was lost: `ckpt check` reports it), unless
that checkpoint is another thread's (the writes were copied from there), and so
do blobs newer than every version named while the namespace's newest checkpoint is recent
(a run may be saving its next checkpoint, whose blobs PostgresSaver commits first).

The plan is data (ckpt.records.plans): each store's Writer reads the rows inside the
transaction that deletes them, calls the planner there and carries the plan out, so what
is deleted is what was planned on that snapshot.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from ckpt.records.model import TASKS
from ckpt.records.plans import (
    CheckpointRow,
    NamespacePlan,
    Strategy,
    ThreadPlan,
    ThreadRows,
    in_flight,
    lost_checkpoint,
    version_number,
)


def plan_thread(
    rows: ThreadRows, strategy: Strategy, keep: int = 1, now: dt.datetime | None = None
) -> ThreadPlan:
    """The plan for one thread. `keep` is the N of keep_last (keep_latest keeps 1); `now`
    dates the blobs a run may be saving (the orphans strategy)."""
    plan = ThreadPlan(rows.thread_id, strategy)
    if strategy == "orphans":
        return _orphans(plan, rows, now or dt.datetime.now(dt.UTC))
    by_ns: dict[str, list[CheckpointRow]] = {}
    for row in sorted(rows.checkpoints, key=lambda r: (r.checkpoint_ns, r.checkpoint_id)):
        by_ns.setdefault(row.checkpoint_ns, []).append(row)
    if strategy == "delete":
        for ns in sorted(by_ns.keys() | {w.checkpoint_ns for w in rows.writes}):
            plan.namespaces.append(_whole(ns, by_ns.get(ns, []), rows, "the thread is deleted"))
        return plan
    if any(r.js_delta for r in rows.checkpoints):
        plan.refused = (
            "a LangGraph.js DeltaChannel thread: its snapshots cannot be told apart, so the "
            "chain a resume replays is unknown"
        )
        return plan
    count = 1 if strategy == "keep_latest" else max(keep, 1)
    writes_at = {(w.checkpoint_ns, w.checkpoint_id, w.channel) for w in rows.writes}
    kept: dict[str, dict[str, list[str]]] = {}
    for ns, chain in by_ns.items():
        found = _kept(ns, chain, count, writes_at)
        if isinstance(found, str):
            plan.refused = found
            return plan
        kept[ns] = found
    root_kept = set(kept.get("", {}))
    root_ids = {r.checkpoint_id for r in by_ns.get("", [])}
    for ns, chain in sorted(by_ns.items()):
        head = chain[-1]
        if (
            ":" in ns
            and head.root_id is not None
            and head.root_id in root_ids
            and head.root_id not in root_kept
        ):
            plan.namespaces.append(
                _whole(ns, chain, rows, "a subgraph call from a deleted root checkpoint")
            )
            continue
        plan.namespaces.append(_namespace(ns, chain, kept[ns], rows))
    # Writes and blobs of namespaces with no checkpoint left are not ours to judge: a run
    # may be committing them. They stay.
    return plan


def _kept(
    ns: str,
    chain: list[CheckpointRow],
    count: int,
    writes_at: set[tuple[str, str, str]],
) -> dict[str, list[str]] | str:
    """The checkpoints of one namespace that stay, each with its reasons; or why the
    thread cannot be planned."""
    by_id = {r.checkpoint_id: r for r in chain}
    kept: dict[str, list[str]] = {}

    def keep(checkpoint_id: str, why: str) -> None:
        reasons = kept.setdefault(checkpoint_id, [])
        if why not in reasons:
            reasons.append(why)

    newest = chain[-count:]
    head = "latest" if not ns else "subgraph head"
    for row in newest:
        keep(row.checkpoint_id, head if row is chain[-1] else f"one of the last {count}")
    for row in newest:
        parent = by_id.get(row.parent_id) if row.parent_id else None
        if (
            parent is not None
            and (row.v is None or row.v < 4)
            and (ns, parent.checkpoint_id, TASKS) in writes_at
        ):
            keep(parent.checkpoint_id, "its child (checkpoint v<4) reads the Sends to run here")
        if not row.delta_channels:
            continue
        if row.values is None:
            return (
                "a DeltaChannel thread whose checkpoints are encrypted: finding the snapshots "
                "a resume replays from needs the AES key (LANGGRAPH_AES_KEY)"
            )
        for channel in sorted(row.delta_channels - row.values):
            ancestor = by_id.get(row.parent_id) if row.parent_id else None
            seen = {row.checkpoint_id}
            while ancestor is not None and ancestor.checkpoint_id not in seen:
                seen.add(ancestor.checkpoint_id)
                if ancestor.values is None:
                    return (
                        "a DeltaChannel chain through an encrypted checkpoint: needs the AES "
                        "key (LANGGRAPH_AES_KEY)"
                    )
                if channel in ancestor.values:
                    keep(ancestor.checkpoint_id, f"delta snapshot of {channel}")
                    break
                keep(ancestor.checkpoint_id, f"delta chain of {channel}")
                ancestor = by_id.get(ancestor.parent_id) if ancestor.parent_id else None
    return kept


def _namespace(
    ns: str, chain: list[CheckpointRow], kept: dict[str, list[str]], rows: ThreadRows
) -> NamespacePlan:
    plan = NamespacePlan(ns, kept=kept)
    deleted = {r.checkpoint_id for r in chain if r.checkpoint_id not in kept}
    plan.deleted = sorted(deleted)
    plan.deleted_bytes = sum(r.size for r in chain if r.checkpoint_id in deleted)
    for write in rows.writes:
        if write.checkpoint_ns == ns and write.checkpoint_id in deleted:
            plan.writes += 1
            plan.write_bytes += write.size
    plan.parents_cleared = sorted(
        r.checkpoint_id
        for r in chain
        if r.checkpoint_id in kept and r.parent_id is not None and r.parent_id in deleted
    )
    freed = {(c, v) for r in chain if r.checkpoint_id in deleted for c, v in r.versions.items()}
    used = {(c, v) for r in chain if r.checkpoint_id in kept for c, v in r.versions.items()}
    for blob in rows.blobs:
        key = (blob.channel, blob.version)
        if blob.checkpoint_ns == ns and key in freed and key not in used:
            plan.blobs.append(key)
            plan.blob_bytes += blob.size
    return plan


def _whole(ns: str, chain: Iterable[CheckpointRow], rows: ThreadRows, why: str) -> NamespacePlan:
    chain = list(chain)
    plan = NamespacePlan(ns, whole=True, why=why)
    plan.deleted = [r.checkpoint_id for r in chain]
    plan.deleted_bytes = sum(r.size for r in chain)
    for write in rows.writes:
        if write.checkpoint_ns == ns:
            plan.writes += 1
            plan.write_bytes += write.size
    for blob in rows.blobs:
        if blob.checkpoint_ns == ns:
            plan.blobs.append((blob.channel, blob.version))
            plan.blob_bytes += blob.size
    return plan


def _orphans(plan: ThreadPlan, rows: ThreadRows, now: dt.datetime) -> ThreadPlan:
    """The rows of a thread nothing uses, namespace by namespace (see the module)."""
    by_ns: dict[str, list[CheckpointRow]] = {}
    for row in rows.checkpoints:
        by_ns.setdefault(row.checkpoint_ns, []).append(row)
    spaces = by_ns.keys() | {w.checkpoint_ns for w in rows.writes}
    spaces |= {b.checkpoint_ns for b in rows.blobs}
    for ns in sorted(spaces):
        chain = by_ns.get(ns, [])
        ids = {r.checkpoint_id for r in chain}
        newest = max(ids) if ids else None
        found = NamespacePlan(ns)
        gone: set[str] = set()
        for write in rows.writes:
            if write.checkpoint_ns != ns or write.checkpoint_id in ids:
                continue
            if (
                newest is not None
                and write.checkpoint_id > newest
                and lost_checkpoint(write.checkpoint_id)
                and write.checkpoint_id not in rows.foreign
            ):
                continue  # names a checkpoint newer than any left: the lost one's trace
            gone.add(write.checkpoint_id)
            found.writes += 1
            found.write_bytes += write.size
        found.orphan_writes = sorted(gone)
        named = {(c, v) for r in chain for c, v in r.versions.items()}
        counters = [version_number(v) for r in chain for v in r.versions.values()]
        top = max((c for c in counters if c is not None), default=None)
        for blob in rows.blobs:
            if blob.checkpoint_ns != ns or blob.version is None:
                continue  # the shallow schema's one blob per channel: its checkpoint's own
            if (blob.channel, blob.version) in named:
                continue
            if in_flight(blob.version, top, newest, now):
                continue  # may be the value of a checkpoint being saved now
            found.blobs.append((blob.channel, blob.version))
            found.blob_bytes += blob.size
        if found.orphan_writes or found.blobs:
            plan.namespaces.append(found)
    return plan
