"""`ckpt migrate`: rename, drop or add a graph's channels and nodes in saved threads, the
plan first, then one thread per transaction, read back before it commits.

A step changes every place its name lives (docs/migrate.md): channel values, versions,
`updated_channels`, `versions_seen` (keys are nodes, inner keys channels), separately kept
blobs, pending writes, metadata that names channels or nodes, and for a renamed node its
trigger channel `branch:to:NAME`, the task path and task id LangGraph derives for it
(`langgraph/pregel/_algo.py`: xxh3-128 over the checkpoint id, the task namespace, the
step, the node, `__pregel_pull` and the sorted triggers) and the ids of the interrupts it
raised (`langgraph/types.py` `_interrupt_id`: xxh3-128 of `namespace:task_id`), so that
LangGraph finds the saved writes and answers on resume and runs no node twice.

Each migrated checkpoint lists the names of the steps it went through in its metadata
(MIGRATED_KEY): a step a checkpoint lists is skipped, so a second run changes nothing.
What each step does to the rows is in ckpt.ops.migrate_steps; here, the rewrite of one
thread and the run over the threads.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt.decoders import decode
from ckpt.decoders.repack import encode_value
from ckpt.errors import CkptError, CopyRefused, DecodeError, MigrationMismatch, Unsafe
from ckpt.ops.migrate_steps import (
    add_channel,
    drop_channel,
    names_in,
    primitive_bytes,
    rename_channel,
    rename_node,
)
from ckpt.ops.run import Run
from ckpt.ops.user_graph import graph_loader
from ckpt.records.migration import (
    MIGRATED_KEY,
    Blob,
    BlobKey,
    MigCheckpoint,
    MigrationRows,
    MigWrite,
    Step,
    check_steps,
    step_record,
)
from ckpt.records.runs import MigrateHead, MigrateThreadRecord, MigrateTotals
from ckpt.stores.base import Store

# -- rewriting one thread ------------------------------------------------------------------


@dataclass
class Outcome:
    """What a rewrite changed in one thread."""

    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    steps: list[str] = field(default_factory=list)
    example: tuple[MigCheckpoint, MigCheckpoint, list[MigWrite], list[MigWrite]] | None = None


class Rewriter:
    """The plan's steps applied to one thread's rows (a pure function of them: the store
    calls it inside its transaction, the dry run on what its reader read)."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        latest: bool,
        aes_key: bytes | None = None,
        example: bool = True,
    ):
        self.steps = list(steps)
        self.example = example  # keep one checkpoint before and after, for the diff
        self.latest = latest
        self.aes_key = aes_key
        self.outcome = Outcome()
        self.blob_changed = False

    def __call__(self, rows: MigrationRows) -> MigrationRows | None:
        self.outcome = outcome = Outcome()
        new = _clone_rows(rows)
        chosen = self._chosen(new)
        writes_at: dict[tuple[str, str], list[MigWrite]] = {}
        for write in new.writes:
            writes_at.setdefault((write.checkpoint_ns, write.checkpoint_id), []).append(write)
        touched: set[str] = set()
        transformed: dict[BlobKey, Blob] = {}
        names_before = {s.name for s in self.steps}
        for checkpoint in new.checkpoints:
            if checkpoint.checkpoint_id not in chosen.get(checkpoint.checkpoint_ns, ()):
                continue
            done = checkpoint.metadata.get(MIGRATED_KEY)
            done = list(done) if isinstance(done, list) else []
            due = [s for s in self.steps if s.name not in done]
            if not due:
                continue
            key = (checkpoint.checkpoint_ns, checkpoint.checkpoint_id)
            original = _clone_checkpoint(checkpoint)
            writes = writes_at.get(key, [])
            original_writes = [_clone_write(w) for w in writes]
            self.blob_changed = False
            if isinstance(new.blobs, _Blobs):
                new.blobs.changed = False
            for step in due:
                touched |= self._apply(step, checkpoint, writes, new, transformed)
            writes_at[key] = writes
            if (
                checkpoint.fields == original.fields
                and checkpoint.metadata == original.metadata
                and writes == original_writes
                and not self.blob_changed
                and not (isinstance(new.blobs, _Blobs) and new.blobs.changed)
            ):
                continue  # no step names anything here: the checkpoint stays as it is
            checkpoint.metadata[MIGRATED_KEY] = done + [s.name for s in due]
            outcome.checkpoints += 1
            outcome.writes += sum(
                1 for a, b in zip(original_writes, writes, strict=False) if a != b
            ) + abs(len(original_writes) - len(writes))
            for s in due:
                if s.name not in outcome.steps and s.name in names_before:
                    outcome.steps.append(s.name)
            if self.example and (
                outcome.example is None
                or (
                    checkpoint.checkpoint_ns == ""
                    and checkpoint.checkpoint_id > outcome.example[0].checkpoint_id
                )
            ):
                outcome.example = (
                    original,
                    _clone_checkpoint(checkpoint),
                    original_writes,
                    list(writes),
                )
        if not outcome.checkpoints:
            return None
        new.writes = [w for ws in writes_at.values() for w in ws]
        new.writes.sort(key=lambda w: (w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx))
        _close_gaps(new.writes, rows.writes)
        if new.split:
            outcome.blobs = self._settle_blobs(rows, new, touched)
        self._check_no_old_names(new, chosen)
        return new

    def _chosen(self, rows: MigrationRows) -> dict[str, set[str]]:
        by_ns: dict[str, set[str]] = {}
        for checkpoint in rows.checkpoints:
            by_ns.setdefault(checkpoint.checkpoint_ns, set()).add(checkpoint.checkpoint_id)
        if self.latest:
            return {ns: {max(ids)} for ns, ids in by_ns.items()}
        return by_ns

    # -- the steps ---------------------------------------------------------------------------
    def _apply(
        self,
        step: Step,
        checkpoint: MigCheckpoint,
        writes: list[MigWrite],
        rows: MigrationRows,
        transformed: dict[BlobKey, Blob],
    ) -> set[str]:
        """Apply one step to a checkpoint and its writes; the channel names whose blobs
        may now be unused."""
        if step.kind == "rename_channel":
            assert step.new is not None
            return rename_channel(checkpoint, writes, rows, step.old, step.new)
        if step.kind == "drop_channel":
            drop_channel(checkpoint, writes, rows, step.old)
            return {step.old}
        if step.kind == "rename_node":
            assert step.new is not None
            return rename_node(checkpoint, writes, rows, step.old, step.new)
        if step.kind == "add_channel":
            add_channel(checkpoint, rows, step.old, step.value)
            return set()
        self._transform(step, checkpoint, rows, transformed)
        return set()

    def _transform(
        self,
        step: Step,
        checkpoint: MigCheckpoint,
        rows: MigrationRows,
        transformed: dict[BlobKey, Blob],
    ) -> None:
        channel, function = step.old, step.function
        assert function is not None
        where = f"checkpoint {checkpoint.checkpoint_id}: channel {channel!r}"
        values = checkpoint.values
        version = checkpoint.versions.get(channel)
        key = (checkpoint.checkpoint_ns, channel, str(version))
        if channel in values:
            result = self._transformed(values[channel], function, where)
            if rows.split and not primitive_bytes(result[1] or b""):
                # A store that keeps only primitives inline keeps this one as a blob.
                del values[channel]
                rows.blobs[key] = result
                self.blob_changed = True
            else:
                values[channel] = result
        elif rows.split and key in rows.blobs:
            if key not in transformed:
                transformed[key] = self._transformed(rows.blobs[key], function, where)
                rows.blobs[key] = transformed[key]
            self.blob_changed = True

    def _transformed(self, blob: Blob, function: Callable[[Any], Any], where: str) -> Blob:
        tag, data = blob
        if tag == "empty":
            return blob
        if tag == "json":
            raise CopyRefused(
                f"{where}: a LangGraph.js value (JSON); transforms are not supported for "
                "LangGraph.js stores yet"
            )
        try:
            value = decode(tag, data, aes_key=self.aes_key)
        except DecodeError as exc:
            raise CopyRefused(f"{where}: cannot decode it for the transform ({exc})") from None
        try:
            result = function(value)
        except Exception as exc:
            raise Unsafe(
                f"{where}: the transform raised {type(exc).__name__}: {exc}; nothing changed"
            ) from None
        return ("msgpack", encode_value(result, where))

    # -- blobs and the final check -----------------------------------------------------------
    def _settle_blobs(self, before: MigrationRows, after: MigrationRows, touched: set[str]) -> int:
        """Delete the blobs of renamed or dropped channels no checkpoint names any more;
        the number of blob rows changed."""
        named = {
            (c.checkpoint_ns, ch, str(v)) for c in after.checkpoints for ch, v in c.versions.items()
        }
        for key in list(after.blobs):
            if key[1] in touched and key not in named:
                del after.blobs[key]
        changed = sum(1 for k, v in after.blobs.items() if before.blobs.get(k) != v)
        return changed + sum(1 for k in before.blobs if k not in after.blobs)

    def _check_no_old_names(self, rows: MigrationRows, chosen: dict[str, set[str]]) -> None:
        """A renamed or dropped channel left anywhere in a migrated checkpoint is a bug in
        ckpt: refuse the thread rather than write it half done."""
        gone: set[str] = set()
        for step in self.steps:
            if step.kind in ("rename_channel", "drop_channel"):
                gone.add(step.old)
            elif step.kind == "rename_node":
                gone.add(f"branch:to:{step.old}")
        if not gone:
            return
        left: dict[tuple[str, str], set[str]] = {}  # old names pending writes still use
        for write in rows.writes:
            if write.channel in gone:
                left.setdefault((write.checkpoint_ns, write.checkpoint_id), set()).add(
                    write.channel
                )
        for checkpoint in rows.checkpoints:
            if checkpoint.checkpoint_id not in chosen.get(checkpoint.checkpoint_ns, ()):
                continue
            found = names_in(checkpoint) & gone
            found |= left.get((checkpoint.checkpoint_ns, checkpoint.checkpoint_id), set())
            if found:
                raise CopyRefused(
                    f"checkpoint {checkpoint.checkpoint_id}: {sorted(found)[0]!r} is still "
                    "named after the migration (a bug in ckpt); nothing changed"
                )


def _plain_copy(value: Any) -> Any:
    """A copy of plain data (dicts, lists, JSON values); bytes, tuples and Packed are
    immutable and shared."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def _clone_checkpoint(checkpoint: MigCheckpoint) -> MigCheckpoint:
    return MigCheckpoint(
        checkpoint.checkpoint_ns,
        checkpoint.checkpoint_id,
        checkpoint.parent_checkpoint_id,
        _plain_copy(checkpoint.fields),
        _plain_copy(checkpoint.metadata),
        checkpoint.serde,
    )


def _clone_write(write: MigWrite) -> MigWrite:
    return MigWrite(
        write.checkpoint_ns, write.checkpoint_id, write.task_id, write.task_path,
        write.idx, write.channel, write.type, write.data,
    )  # fmt: skip


class _Blobs(dict[BlobKey, Blob]):
    """A thread's blobs that note whether a step changed one (a blob can change while its
    checkpoint's own fields do not: the input under `__start__`, pending Sends)."""

    changed = False

    def __setitem__(self, key: BlobKey, value: Blob) -> None:
        if self.get(key) != value:
            self.changed = True
        super().__setitem__(key, value)

    def __delitem__(self, key: BlobKey) -> None:
        self.changed = True
        super().__delitem__(key)


def _clone_rows(rows: MigrationRows) -> MigrationRows:
    """A copy the steps may change: the stored values' bytes are shared, never changed."""
    return MigrationRows(
        rows.thread_id,
        [_clone_checkpoint(c) for c in rows.checkpoints],
        [_clone_write(w) for w in rows.writes],
        _Blobs(rows.blobs),
        rows.split,
    )


# -- the run ---------------------------------------------------------------------------------


def names_view(checkpoint: MigCheckpoint, writes: list[MigWrite]) -> list[str]:
    """The names a checkpoint holds, as lines for a before/after diff."""
    view = {
        "channel_values": list(checkpoint.values),
        "channel_versions": dict(checkpoint.versions),
        "versions_seen": checkpoint.fields.get("versions_seen"),
        "updated_channels": checkpoint.fields.get("updated_channels"),
        "metadata": checkpoint.metadata,
        "writes": [
            {"task_id": w.task_id, "task_path": w.task_path, "idx": w.idx, "channel": w.channel}
            for w in writes
        ],
    }
    return json.dumps(view, indent=1, sort_keys=False, default=str).splitlines()


def diff_lines(outcome: Outcome) -> list[str] | None:
    if outcome.example is None:
        return None
    before, after, before_writes, after_writes = outcome.example
    return list(
        difflib.unified_diff(
            names_view(before, before_writes),
            names_view(after, after_writes),
            f"before {before.checkpoint_id}",
            f"after {after.checkpoint_id}",
            n=1,
            lineterm="",
        )
    )


@dataclass
class MigrateRun(Run):
    """A migration as it runs: iterating it plans (with `apply`, migrates) one thread at a
    time and yields its record; `totals` are complete once it ends."""

    head: MigrateHead
    records: Iterator[MigrateThreadRecord]
    totals: MigrateTotals = field(
        default_factory=lambda: MigrateTotals(
            threads=0, checkpoints=0, writes=0, blobs=0, unchanged=0, refused=0
        )
    )
    first_refused: MigrateThreadRecord | None = None
    unloadable: list[MigrateThreadRecord] = field(default_factory=list)  # --graph failed

    def __iter__(self) -> Iterator[MigrateThreadRecord]:
        for record in self.records:
            if record["graph_error"] is not None:
                self.unloadable.append(record)
            self.count(record, {"unchanged": "unchanged"}, ("checkpoints", "writes", "blobs"))
            yield record

    def refusal(self) -> CkptError | None:
        """The error a run ends with once it has run: threads refused (exit 12), or
        migrated threads the new graph cannot load (`graph`: exit 14)."""
        if self.unloadable:
            first, more = self.unloadable[0], len(self.unloadable) - 1
            return MigrationMismatch(
                f"the new graph cannot load migrated thread {first['thread_id']!r}: "
                f"{first['graph_error']}" + (f" (and {more} more threads)" if more else "")
            )
        return self.refused(self.first_refused, self.totals["refused"])


def _close_gaps(writes: list[MigWrite], before: Sequence[MigWrite]) -> None:
    """A task that lost writes (a dropped channel) has its other writes numbered 0, 1, 2 ...
    again, in their order: as LangGraph's put_writes numbers what a task wrote (negative
    indexes, its special channels', stay). Sorted writes, renumbered in place."""

    def task(write: MigWrite) -> tuple[str, str, str]:
        return (write.checkpoint_ns, write.checkpoint_id, write.task_id)

    had = Counter(task(w) for w in before)
    left = Counter(task(w) for w in writes)
    shrunk = {key for key, count in left.items() if count < had[key]}
    number: dict[tuple[str, str, str], int] = {}
    for write in writes:
        key = task(write)
        if key in shrunk and write.idx >= 0:
            write.idx = number.get(key, 0)
            number[key] = write.idx + 1


def _record(
    thread_id: str, outcome: Outcome | None, refused: str | None, applied: bool
) -> MigrateThreadRecord:
    if refused is not None or outcome is None:
        return {
            "thread_id": thread_id, "action": "refused", "applied": False, "refused": refused,
            "checkpoints": 0, "writes": 0, "blobs": 0, "steps": [], "diff": None,
            "graph_error": None,
        }  # fmt: skip
    return {
        "thread_id": thread_id,
        "action": "migrate" if outcome.checkpoints else "unchanged",
        "applied": applied and bool(outcome.checkpoints),
        "refused": None,
        "checkpoints": outcome.checkpoints,
        "writes": outcome.writes,
        "blobs": outcome.blobs,
        "steps": outcome.steps,
        "diff": diff_lines(outcome),
        "graph_error": None,
    }


def migrate_run(
    store: Store,
    choose: Callable[[], Sequence[str]],
    steps: Sequence[Step],
    *,
    latest: bool = False,
    apply: bool = False,
    backup: Path | None = None,
    timeout: float | None = None,
    graph: Any = None,
) -> MigrateRun:
    """Plan (and with `apply`, carry out) the migration of the threads `choose` names.
    `graph`: the user's new compiled graph; each migrated thread is then loaded through
    it (get_state, get_state_history) and what it raises is the thread's `graph_error`.

    Every thread is planned first on the read-only reader (a step that cannot be carried
    out, a transform that raises, is found before anything is written: an applied run
    that meets one changes nothing); then, with `apply`, each thread is migrated in its
    own transaction, planned again there, and read back before it commits."""
    check_steps(steps)
    store.check_migrate()
    threads = list(choose())
    head: MigrateHead = {
        "store": {"kind": store.kind, "location": store.location},
        "applied": apply,
        "latest": latest,
        "backup": str(backup) if apply and backup else None,
        "steps": [step_record(s) for s in steps],
    }

    def plan(thread_id: str, rewriter: Rewriter) -> MigrateThreadRecord:
        try:
            rewriter(store.migration_rows(thread_id, latest=latest))
        except CopyRefused as refusal:
            return _record(thread_id, None, str(refusal), False)
        return _record(thread_id, rewriter.outcome, None, False)

    if not apply:  # the plan, a thread at a time, each with its diff
        shown = Rewriter(steps, latest=latest, aes_key=store.aes_key)
        return MigrateRun(head, (plan(t, shown) for t in threads))
    # Every thread is planned before any is written (no diffs kept: memory stays small).
    quiet = Rewriter(steps, latest=latest, aes_key=store.aes_key, example=False)
    planned = [plan(t, quiet) for t in threads]
    if any(r["action"] == "refused" for r in planned):
        # Nothing is written when a thread cannot be migrated: fix the plan first.
        return MigrateRun(head, iter(planned))

    def applied() -> Iterator[MigrateThreadRecord]:
        with store.writer(timeout=timeout) as writer, graph_loader(store, graph) as loads:
            if backup is not None:
                if writer.backs_up_whole:
                    writer.backup(backup)
                else:
                    _copy_backup(store, backup, threads, timeout)
            for record in planned:
                if record["action"] != "migrate":
                    yield record
                    continue
                thread_rewriter = Rewriter(
                    steps, latest=latest, aes_key=store.aes_key, example=False
                )
                writer.migrate(record["thread_id"], thread_rewriter, latest=latest)
                done = _record(record["thread_id"], thread_rewriter.outcome, None, True)
                done["graph_error"] = loads(record["thread_id"])
                yield done

    return MigrateRun(head, applied())


def _copy_backup(store: Store, backup: Path, threads: list[str], timeout: float | None) -> None:
    """The selected threads copied, byte for byte, into a new SqliteSaver file (ckpt copy):
    the backup of a store that has no whole-file one (Postgres)."""
    from ckpt.ops.copy import copy_run
    from ckpt.stores import open_target

    if backup.exists():
        raise Unsafe(f"{backup} exists; give a new file for `backup`")
    with open_target(str(backup), timeout=timeout) as target:
        run = copy_run(store, target, lambda: threads, apply=True)
        for _ in run:
            pass
        if (refusal := run.refusal()) is not None:
            raise Unsafe(f"the backup could not copy every thread ({refusal}); nothing changed")


def behind(
    store: Store,
    choose: Callable[[], Sequence[str]],
    steps: Sequence[Step],
    *,
    latest: bool = False,
) -> list[str]:
    """The threads a plan would still change (`ckpt check --plan`)."""
    check_steps(steps)
    store.check_migrate()
    rewriter = Rewriter(steps, latest=latest, aes_key=store.aes_key)
    found = []
    for thread_id in choose():
        try:
            if rewriter(store.migration_rows(thread_id, latest=latest)) is not None:
                found.append(thread_id)
        except CopyRefused:
            found.append(thread_id)
    return found
