"""`ckpt prune` and `ckpt vacuum`: choose the threads, plan each one, and, only when asked,
carry the plans out one thread per transaction (ckpt.writers).

A dry run reads through the store's read-only connection and changes nothing. `apply`
opens a separate writable connection; each thread is planned again inside its own
transaction, so what is deleted is planned on the state it deletes from.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt.api import CheckpointStore
from ckpt.errors import BadOption, NotFound, Unsafe
from ckpt.prune import Strategy, ThreadPlan, ThreadRows, plan_thread
from ckpt.records import NamespacePlanRecord, ThreadPlanRecord, ThreadRecord
from ckpt.vocabulary import Status

DEV_FOLDER_REFUSAL = (
    "a langgraph dev store (PersistentDict pickles): the dev server rewrites these files "
    "every few seconds, so editing them under it loses data, and ckpt does not change "
    "them. Delete threads through the server's API (DELETE /threads/{id}), or stop it "
    "and start afresh"
)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which threads a prune touches; every given condition must hold."""

    threads: tuple[str, ...] = ()
    older_than: dt.timedelta | None = None
    status: Status | None = None
    where: tuple[tuple[str, str], ...] = ()
    everything: bool = False

    @property
    def given(self) -> bool:
        return bool(self.threads or self.older_than or self.status or self.where)


def parse_age(text: str) -> dt.timedelta:
    """`30d`, `12h`, `2w`, `90m`: how old a thread's latest checkpoint must be."""
    match = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", text)
    if not match:
        raise BadOption(f"--older-than {text!r}: give a number and m, h, d or w (e.g. 30d)")
    amount, unit = int(match.group(1)), match.group(2)
    return {"m": dt.timedelta(minutes=1), "h": dt.timedelta(hours=1)}.get(
        unit, dt.timedelta(days=7 if unit == "w" else 1)
    ) * amount


def select(store: CheckpointStore, selection: Selection) -> list[str]:
    """The ids of the threads a selection names, in thread id order. The records are
    streamed and dropped (a store of 100,000 threads holds only their ids here)."""
    if not selection.given and not selection.everything:
        raise BadOption(
            "say which threads: --thread, --older-than, --status, --where, or --all for every "
            "thread"
        )
    wanted = set(selection.threads)
    for thread_id in selection.threads:
        if not store.raw.thread_exists(thread_id):  # a key lookup, not a listing
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
        if cutoff is not None and not ((updated := _updated(record)) and updated < cutoff):
            continue
        chosen.append(record["thread_id"])
    return chosen


def _updated(record: ThreadRecord) -> dt.datetime | None:
    text = record["updated_at"]
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def rows_reader(store: CheckpointStore) -> Callable[[str], ThreadRows]:
    """Read a thread's bookkeeping on the store's read-only connection (the dry run)."""
    raw = store.raw
    if raw.kind == "sqlite":
        from ckpt.writers.sqlite import thread_rows

        conn = raw.conn  # type: ignore[attr-defined]
        return lambda thread_id: thread_rows(conn, thread_id, raw.aes_key)
    if raw.kind == "postgres":
        from ckpt.writers import postgres

        def read(thread_id: str) -> ThreadRows:
            with raw.conn.transaction():  # type: ignore[attr-defined]
                return postgres.thread_rows(raw, raw.conn, thread_id)  # type: ignore[arg-type, attr-defined]

        return read
    raise Unsafe(f"{store.location}: {DEV_FOLDER_REFUSAL}")


@dataclass
class PruneRun:
    """A prune as it runs: iterating it plans (with `applied`, prunes) one selected
    thread at a time and yields its record, so that no more than one thread's plan is
    held; `totals` are complete once the iteration ends. `head` is the rest of the
    record (docs/json.md): store, strategy, keep, applied, backup."""

    head: dict[str, Any]
    plans: Iterator[tuple[ThreadPlan, bool]]
    totals: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("checkpoints", "writes", "blobs", "bytes", "threads", "refused"), 0
        )
    )

    def __iter__(self) -> Iterator[ThreadPlanRecord]:
        totals = self.totals
        for plan, done in self.plans:
            record = plan_record(plan, done)
            for key in ("checkpoints", "writes", "blobs", "bytes"):
                totals[key] += record[key]
            totals["threads"] += bool(record["checkpoints"] or record["writes"] or record["blobs"])
            totals["refused"] += bool(record["refused"])
            yield record


def prune_run(
    store: CheckpointStore,
    spec: str,
    selection: Selection,
    *,
    strategy: Strategy,
    keep: int = 1,
    apply: bool = False,
    backup: Path | None = None,
    timeout: float | None = None,
    on_thread: Callable[[ThreadPlan], None] | None = None,
) -> PruneRun:
    """Plan (and with `apply`, carry out) the prune of the selected threads, a thread at a
    time. The selection is checked and the threads chosen here; each thread is planned (or
    pruned, in its own transaction) as the run is iterated (PruneRun)."""
    if store.kind == "pickle":
        raise Unsafe(f"{store.location}: {DEV_FOLDER_REFUSAL}")
    if backup is not None and store.kind != "sqlite":
        raise BadOption("--backup is for SQLite stores (use pg_dump for Postgres)")
    if store.kind == "postgres":
        from ckpt.writers.postgres import refuse_shallow_keep

        refuse_shallow_keep(store.raw, strategy)  # type: ignore[arg-type]
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
        plans = _applied(store, spec, threads, strategy, keep, backup, timeout)
    else:
        read = rows_reader(store)
        plans = ((plan_thread(read(thread_id), strategy, keep), False) for thread_id in threads)
    if on_thread:
        plans = _reported(plans, on_thread)
    return PruneRun(head, plans)


def _reported(
    plans: Iterator[tuple[ThreadPlan, bool]], on_thread: Callable[[ThreadPlan], None]
) -> Iterator[tuple[ThreadPlan, bool]]:
    for plan, done in plans:
        on_thread(plan)
        yield plan, done


def _applied(
    store: CheckpointStore,
    spec: str,
    threads: list[str],
    strategy: Strategy,
    keep: int,
    backup: Path | None,
    timeout: float | None,
) -> Iterator[tuple[ThreadPlan, bool]]:
    """Prune each thread in its own transaction, as the caller asks for the next."""
    writer: Any
    if store.kind == "sqlite":
        from ckpt.writers.sqlite import SqliteWriter

        # The reader is done (the threads are chosen). It must not stay open beside the
        # writer: SQLite shares one wal-index mapping per file and process, and a reader
        # that mapped it read-only would make the writer's first write fail.
        store.raw.close()
        writer = SqliteWriter(store.raw.path, busy_timeout=timeout or 5.0)  # type: ignore[attr-defined]
        if backup is not None:
            writer.backup(backup)

        def run(thread_id: str) -> ThreadPlan:
            plan: ThreadPlan = writer.prune(thread_id, strategy, keep, store.raw.aes_key)
            return plan
    else:
        from ckpt.writers.postgres import PostgresWriter

        writer = PostgresWriter(store.raw, spec, timeout=timeout)  # type: ignore[arg-type]

        def run(thread_id: str) -> ThreadPlan:
            plan: ThreadPlan = writer.prune(thread_id, strategy, keep)
            return plan

    try:
        for thread_id in threads:
            plan = run(thread_id)
            yield plan, plan.changes
    finally:
        writer.close()


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
    store: CheckpointStore, spec: str, *, apply: bool, into: Path | None, timeout: float | None
) -> dict[str, Any]:
    """What VACUUM would give back (SQLite) or the dead rows and bloat (Postgres); with
    `apply`, run it."""
    if store.kind == "pickle":
        raise Unsafe(f"{store.location}: {DEV_FOLDER_REFUSAL}")
    if store.kind == "sqlite":
        from ckpt.writers.sqlite import SqliteWriter

        if not apply:
            import shutil

            space = store.raw.storage()
            space["disk_free_bytes"] = shutil.disk_usage(store.raw.path.parent).free  # type: ignore[attr-defined]
            # VACUUM writes a copy of the database, then the journal or WAL: up to twice.
            space["disk_needed_bytes"] = 2 * space["file_bytes"]
            return {
                "store": {"kind": "sqlite", "location": store.location},
                "applied": False,
                "into": str(into) if into else None,
                **space,
            }
        store.raw.close()  # see prune: no reader beside the writer in one process
        lite = SqliteWriter(store.raw.path, busy_timeout=timeout or 5.0)  # type: ignore[attr-defined]
        try:
            before = lite.space()
            lite.vacuum(into)
            after = lite.space() if into is None else None
        finally:
            lite.close()
        return {
            "store": {"kind": "sqlite", "location": store.location},
            "applied": True,
            "into": str(into) if into else None,
            "before": before,
            "after": after,
        }
    if into is not None:
        raise BadOption("--into is for SQLite stores")
    storage = store.raw.storage()
    for table in storage["tables"]:
        live, dead = table["live_rows"] or 0, table["dead_rows"] or 0
        # The heap's share of dead row versions: what VACUUM makes reusable (not what
        # it gives back to the file system; that takes VACUUM FULL, which locks).
        table["bloat_estimate_bytes"] = (
            round(table["table_bytes"] * dead / (live + dead)) if live + dead else 0
        )
    statement = "VACUUM (ANALYZE) " + ", ".join(t["table"] for t in storage["tables"])
    record: dict[str, Any] = {
        "store": {"kind": "postgres", "location": store.location},
        "applied": False,
        "statement": statement,
        "tables": storage["tables"],
    }
    if apply:
        from ckpt.writers.postgres import PostgresWriter

        writer = PostgresWriter(store.raw, spec, timeout=timeout)  # type: ignore[arg-type]
        try:
            writer.vacuum()
        finally:
            writer.close()
        record["applied"] = True
        record["after"] = store.raw.storage()["tables"]
    return record
