"""`ckpt prune` and `ckpt vacuum`: choose the threads, plan each one, and, only when asked,
carry the plans out one thread per transaction (the store's Writer, ckpt.stores.base).

A dry run reads through the store's read-only connection and changes nothing. `apply`
opens a separate writable connection; each thread is planned again inside its own
transaction, so what is deleted is planned on the state it deletes from. What a kind of
store allows is its own to say (Store.check_prune, vacuum_report, writer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt.api import CheckpointStore
from ckpt.errors import BadOption, NotFound
from ckpt.prune import Strategy, ThreadPlan, plan_thread
from ckpt.records import NamespacePlanRecord, ThreadPlanRecord
from ckpt.threads import parse_age as parse_age  # `ckpt prune --older-than`, `copy --since`
from ckpt.threads import updated_time
from ckpt.vocabulary import Status


@dataclass(frozen=True, slots=True)
class Selection:
    """Which threads a prune touches; every given condition must hold."""

    threads: tuple[str, ...] = ()
    older_than: dt.timedelta | None = None
    status: Status | None = None
    where: tuple[tuple[str, str], ...] = ()
    everything: bool = False
    since: dt.datetime | None = None  # latest checkpoint at or after (`ckpt copy --since`)

    @property
    def given(self) -> bool:
        return bool(self.threads or self.older_than or self.status or self.where or self.since)


def parse_since(text: str) -> dt.datetime:
    """`2026-11-01`, `2026-11-01T12:00`, or an age (`7d`): the oldest latest checkpoint a
    selected thread may have."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            return dt.datetime.now(dt.UTC) - parse_age(text)
        except BadOption:
            raise BadOption(
                f"--since {text!r}: give a date (2026-11-01), a time (2026-11-01T12:00) or an "
                "age (7d)"
            ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def select(store: CheckpointStore, selection: Selection) -> list[str]:
    """The ids of the threads a selection names, in thread id order. The records are
    streamed and dropped (a store of 100,000 threads holds only their ids here)."""
    if not selection.given and not selection.everything:
        raise BadOption(
            "say which threads: --thread, --older-than, --since, --status, --where, or --all "
            "for every thread"
        )
    wanted = set(selection.threads)
    for thread_id in selection.threads:
        if not store.thread_exists(thread_id):  # a key lookup, not a listing
            raise NotFound(f"no thread {thread_id!r} in {store.location}")
    cutoff = None
    if selection.older_than is not None:
        cutoff = dt.datetime.now(dt.UTC) - selection.older_than
    chosen: list[str] = []
    for record in store.iter_threads(
        status=selection.status, where=dict(selection.where) or None, sort="thread"
    ):
        if wanted and record["thread_id"] not in wanted:
            continue
        if cutoff is not None and not ((updated := updated_time(record)) and updated < cutoff):
            continue
        if selection.since is not None and not (
            (updated := updated_time(record)) and updated >= selection.since
        ):
            continue
        chosen.append(record["thread_id"])
    return chosen


@dataclass
class PruneRun:
    """A prune as it runs: iterating it plans (with `applied`, prunes) one selected
    thread at a time and yields its record, so that no more than one thread's plan is
    held; `totals` are complete once the iteration ends. `head` is the rest of the
    record (docs/json.md): store, strategy, keep, applied, backup."""

    head: dict[str, Any]
    plans: Iterator[tuple[ThreadPlan, bool]]
    on_thread: Callable[[ThreadPlanRecord], None] | None = None  # hears of each when done
    totals: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("checkpoints", "writes", "blobs", "bytes", "threads", "refused"), 0
        )
    )

    def __iter__(self) -> Iterator[ThreadPlanRecord]:
        totals = self.totals
        for plan, done in self.plans:
            record = plan_record(plan, done)
            if self.on_thread is not None:
                self.on_thread(record)
            for key in ("checkpoints", "writes", "blobs", "bytes"):
                totals[key] += record[key]
            totals["threads"] += bool(record["checkpoints"] or record["writes"] or record["blobs"])
            totals["refused"] += bool(record["refused"])
            yield record


def prune_run(
    store: CheckpointStore,
    selection: Selection,
    *,
    strategy: Strategy,
    keep: int = 1,
    apply: bool = False,
    backup: Path | None = None,
    timeout: float | None = None,
    on_thread: Callable[[ThreadPlanRecord], None] | None = None,
) -> PruneRun:
    """Plan (and with `apply`, carry out) the prune of the selected threads, a thread at a
    time. The selection is checked and the threads chosen here; each thread is planned (or
    pruned, in its own transaction) as the run is iterated (PruneRun)."""
    store.backend.check_prune(strategy, backup=backup is not None)
    threads = select(store, selection)
    head: dict[str, Any] = {
        "store": {"kind": store.kind, "location": store.location},
        "strategy": strategy,
        "keep": keep,
        "applied": apply,
        "backup": str(backup) if apply and backup else None,
    }
    plans: Iterator[tuple[ThreadPlan, bool]]
    if apply:
        plans = _applied(store, threads, strategy, keep, backup, timeout)
    else:
        plans = (
            (plan_thread(store.backend.thread_rows(thread_id), strategy, keep), False)
            for thread_id in threads
        )
    return PruneRun(head, plans, on_thread)


def _applied(
    store: CheckpointStore,
    threads: list[str],
    strategy: Strategy,
    keep: int,
    backup: Path | None,
    timeout: float | None,
) -> Iterator[tuple[ThreadPlan, bool]]:
    """Prune each thread in its own transaction, as the caller asks for the next."""
    with store.backend.writer(timeout=timeout) as writer:
        if backup is not None:
            writer.backup(backup)
        for thread_id in threads:
            plan = writer.prune(thread_id, strategy, keep)
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


def vacuum(
    store: CheckpointStore, *, apply: bool, into: Path | None, timeout: float | None
) -> dict[str, Any]:
    """What VACUUM would give back (SQLite) or the dead rows and bloat (Postgres); with
    `apply`, run it (docs/json.md, `ckpt vacuum`)."""
    head = {"store": {"kind": store.kind, "location": store.location}}
    if not apply:
        return {**head, "applied": False, **store.backend.vacuum_report(into=into)}
    with store.backend.writer(timeout=timeout) as writer:
        return {**head, "applied": True, **writer.vacuum(into)}
