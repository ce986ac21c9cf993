"""`ckpt prune` and `ckpt vacuum` on a store: plan each thread the API chose, and, only when
asked, carry the plans out one thread per transaction (the store's Writer, ckpt.stores.base).

A dry run reads through the store's read-only connection and changes nothing. `apply`
opens a separate writable connection; each thread is planned again inside its own
transaction, so what is deleted is planned on the state it deletes from. What a kind of
store allows is its own to say (Store.check_prune, vacuum_report, writer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ckpt.errors import BadOption
from ckpt.ops.prune import plan_thread
from ckpt.ops.run import Run
from ckpt.records.plans import Strategy, ThreadPlan
from ckpt.records.runs import NamespacePlanRecord, PruneHead, PruneTotals, ThreadPlanRecord
from ckpt.records.types import StoreRecord, VacuumRecord
from ckpt.stores.base import Store


@dataclass
class PruneRun(Run):
    """A prune as it runs: iterating it plans (with `applied`, prunes) one selected
    thread at a time and yields its record, so that no more than one thread's plan is
    held; `totals` are complete once the iteration ends. `head` is the rest of the
    record (docs/json.md): store, strategy, keep, applied, backup."""

    head: PruneHead
    plans: Iterator[tuple[ThreadPlan, bool]]
    on_thread: Callable[[ThreadPlanRecord], None] | None = None  # hears of each when done
    totals: PruneTotals = field(
        default_factory=lambda: PruneTotals(
            checkpoints=0, writes=0, blobs=0, bytes=0, threads=0, refused=0
        )
    )

    def __iter__(self) -> Iterator[ThreadPlanRecord]:
        totals = self.totals
        for plan, done in self.plans:
            record = plan_record(plan, done)
            if self.on_thread is not None:
                self.on_thread(record)
            totals["checkpoints"] += record["checkpoints"]
            totals["writes"] += record["writes"]
            totals["blobs"] += record["blobs"]
            totals["bytes"] += record["bytes"]
            totals["threads"] += bool(record["checkpoints"] or record["writes"] or record["blobs"])
            totals["refused"] += bool(record["refused"])
            yield record


def prune_run(
    store: Store,
    choose: Callable[[], Sequence[str]],
    *,
    strategy: Strategy,
    keep: int = 1,
    apply: bool = False,
    backup: Path | None = None,
    timeout: float | None = None,
    on_thread: Callable[[ThreadPlanRecord], None] | None = None,
) -> PruneRun:
    """Plan (and with `apply`, carry out) the prune of the threads `choose` names, a thread
    at a time. The store says first whether it can be pruned that way, then the threads
    are chosen; each is planned (or pruned, in its own transaction) as the run is
    iterated (PruneRun)."""
    if strategy not in ("keep_latest", "keep_last", "delete", "orphans"):
        raise BadOption(
            f"`strategy` must be keep_latest, keep_last, delete or orphans, not {strategy!r}"
        )
    if keep < 1:
        raise BadOption(f"`keep` must be 1 or more, not {keep}")
    store.check_prune(strategy, backup=backup is not None)
    threads = list(choose())
    head: PruneHead = {
        "store": {"kind": store.kind, "location": store.location},
        "strategy": strategy,
        "keep": keep,
        "applied": apply,
        "backup": str(backup) if apply and backup else None,
        "reclaim": store.reclaim,
    }
    plans: Iterator[tuple[ThreadPlan, bool]]
    if apply:
        plans = _applied(store, threads, strategy, keep, backup, timeout)
    else:
        plans = ((plan_thread(store.thread_rows(t), strategy, keep), False) for t in threads)
    return PruneRun(head, plans, on_thread)


def _applied(
    store: Store,
    threads: list[str],
    strategy: Strategy,
    keep: int,
    backup: Path | None,
    timeout: float | None,
) -> Iterator[tuple[ThreadPlan, bool]]:
    """Prune each thread in its own transaction, as the caller asks for the next."""
    with store.writer(timeout=timeout) as writer:
        if backup is not None:
            writer.backup(backup)
        for thread_id in threads:
            plan = writer.prune(thread_id, partial(plan_thread, strategy=strategy, keep=keep))
            yield plan, plan.changes


def plan_record(plan: ThreadPlan, applied: bool) -> ThreadPlanRecord:
    namespaces: list[NamespacePlanRecord] = []
    for ns in plan.namespaces:
        namespaces.append(
            {
                "checkpoint_ns": ns.checkpoint_ns,
                "checkpoints": len(ns.deleted),
                "checkpoint_bytes": ns.deleted_bytes,
                "writes": ns.writes,
                "write_bytes": ns.write_bytes,
                "blobs": len(ns.blobs),
                "blob_bytes": ns.blob_bytes,
                "bytes": ns.deleted_bytes + ns.write_bytes + ns.blob_bytes,
                "kept": [
                    {"checkpoint_id": cid, "reasons": reasons}
                    for cid, reasons in sorted(ns.kept.items())
                ],
                "parents_cleared": ns.parents_cleared,
                "whole": ns.whole,
                "why": ns.why,
            }
        )
    refused = plan.refused is not None
    return {
        "thread_id": plan.thread_id,
        "refused": plan.refused,
        "applied": applied,
        "checkpoints": 0 if refused else sum(n["checkpoints"] for n in namespaces),
        "writes": 0 if refused else sum(n["writes"] for n in namespaces),
        "blobs": 0 if refused else sum(n["blobs"] for n in namespaces),
        "bytes": 0 if refused else sum(n["bytes"] for n in namespaces),
        "namespaces": [] if refused else namespaces,
    }


def vacuum(store: Store, *, apply: bool, into: Path | None, timeout: float | None) -> VacuumRecord:
    """What VACUUM would give back (SQLite) or the dead rows and bloat (Postgres); with
    `apply`, run it (docs/json.md, `ckpt vacuum`): one shape for every kind of store."""
    where: StoreRecord = {"kind": store.kind, "location": store.location}
    if not apply:
        return {"store": where, "applied": False, **store.vacuum_report(into=into)}
    with store.writer(timeout=timeout) as writer:
        return {"store": where, "applied": True, **writer.vacuum(into)}
