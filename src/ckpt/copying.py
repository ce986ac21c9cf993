"""`ckpt copy`: carry threads from any store into a SqliteSaver file or a PostgresSaver
database, exactly, one thread per transaction on the target.

The source is read through its read-only raw scans (the stored bytes, nothing decoded);
ckpt.stores.transfer moves each checkpoint into the target's layout by byte spans. A dry
run does the same work without a target transaction, so its plan names every refusal the
copy would meet; only `apply` creates the target's schema and writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ckpt import stores
from ckpt.api import CheckpointStore
from ckpt.errors import BadOption, CopyRefused, Unsafe
from ckpt.maintenance import Selection, select
from ckpt.model import TASKS, DumpQuery
from ckpt.stores.base import Store, Target, ThreadSink

if TYPE_CHECKING:
    from ckpt.stores import Redactor

OnConflict = Literal["fail", "skip", "replace"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """`--redact`: more keys to keep as they are (`--keep-key`), and error type names."""

    keep_keys: frozenset[str] = frozenset()
    keep_errors: bool = False


ON_CONFLICT: tuple[OnConflict, ...] = ("fail", "skip", "replace")


def parse_rename(pairs: tuple[str, ...]) -> dict[str, str]:
    """`OLD=NEW` pairs: the thread ids to give copied threads on the target."""
    renames: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise BadOption(f"--rename {pair!r}: give OLD=NEW (two thread ids)")
        renames[old] = new
    return renames


@dataclass
class CopyRun:
    """A copy as it runs: iterating it copies (or plans) one thread at a time and yields
    its record (docs/json.md, `ckpt copy`); `totals` are complete once it ends."""

    head: dict[str, Any]
    records: Iterator[dict[str, Any]]
    totals: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "threads",
                "checkpoints",
                "writes",
                "blobs",
                "bytes",
                "skipped",
                "refused",
                "conflicts",
            ),
            0,
        )  # fmt: skip
    )
    first_refused: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for record in self.records:
            totals = self.totals
            totals["conflicts"] += record["action"] == "conflict"
            if record["action"] == "refused":
                totals["refused"] += 1
                self.first_refused = self.first_refused or record
            elif record["action"] == "skip":
                totals["skipped"] += 1
            else:
                totals["threads"] += 1
                for key in ("checkpoints", "writes", "blobs", "bytes"):
                    totals[key] += record[key]
            yield record

    def refusal(self) -> Unsafe | None:
        """The error a run that refused threads ends with (exit 12), once it has run."""
        first = self.first_refused
        if first is None:
            return None
        more = self.totals["refused"] - 1
        return Unsafe(
            f"{first['thread_id']}: {first['refused']}"
            + (f" (and {more} more threads refused)" if more else "")
        )


def copy_run(
    store: CheckpointStore,
    target: Target,
    selection: Selection,
    *,
    on_conflict: OnConflict = "fail",
    renames: Mapping[str, str] | None = None,
    apply: bool = False,
    redaction: Redaction | None = None,
    renumber_versions: bool = False,
    on_rows: Callable[[int], None] | None = None,
) -> CopyRun:
    """Plan (and with `apply`, carry out) the copy of the selected threads into `target`.

    Conflicts are settled before anything is written: with `on_conflict="fail"` an applied
    copy that would meet a thread already on the target changes nothing. `on_rows` hears
    of every row moved (the progress bar)."""
    if on_conflict not in ON_CONFLICT:
        raise BadOption(f"--on-conflict {on_conflict!r}: choose fail, skip or replace")
    if target.location == store.location or _same_file(target.location, store.location):
        raise Unsafe(
            f"{target.location}: the source and the target are the same store; nothing copied"
        )
    source = store.backend
    source.check_copy(renumber_versions=renumber_versions)
    redactor = (
        stores.redactor(
            keep_keys=redaction.keep_keys,
            keep_errors=redaction.keep_errors,
            aes_key=source.aes_key,
        )
        if redaction is not None
        else None
    )
    renames = dict(renames or {})
    threads = select(store, selection)
    unknown = sorted(set(renames) - set(threads))
    if unknown:
        raise BadOption(f"--rename {unknown[0]}=...: that thread is not among those copied")
    names = {t: renames.get(t, t) for t in threads}
    if len(set(names.values())) < len(names):
        raise BadOption("--rename: two threads would get the same id on the target")
    existing = target.existing(list(names.values()))
    if existing and on_conflict == "fail" and apply:
        shown = ", ".join(repr(t) for t in sorted(existing)[:3])
        more = f" and {len(existing) - 3} more" if len(existing) > 3 else ""
        raise Unsafe(
            f"{target.location} already holds {len(existing)} of these threads ({shown}{more}): "
            "pass --on-conflict skip or replace; nothing copied"
        )
    head: dict[str, Any] = {
        "source": {"kind": store.kind, "location": store.location},
        "target": {"layout": target.layout, "location": target.location, "state": target.state},
        "applied": apply,
        "on_conflict": on_conflict,
        "redacted": redaction is not None,
        "renumbered_versions": renumber_versions,
    }
    if apply:
        target.setup()

    def records() -> Iterator[dict[str, Any]]:
        for thread_id in threads:
            to = names[thread_id]
            conflict = to in existing
            record: dict[str, Any] = {
                "thread_id": thread_id,
                "to": to,
                "conflict": conflict,
                "action": "replace" if conflict and on_conflict == "replace" else "copy",
                "applied": False,
                "refused": None,
                "checkpoints": 0,
                "writes": 0,
                "blobs": 0,
                "bytes": 0,
            }
            if conflict and on_conflict == "skip":
                record["action"] = "skip"
                yield record
                continue
            if conflict and on_conflict == "fail":
                record["action"] = "conflict"
            sink = (
                target.thread(to, replace=conflict)
                if apply and record["action"] != "conflict"
                else None
            )
            try:
                _copy_thread(
                    source, target, thread_id, sink, record, redactor, renumber_versions, on_rows
                )
                if sink is not None:
                    sink.commit()
                    record["applied"] = True
            except CopyRefused as refusal:
                if sink is not None:
                    sink.rollback()
                record.update(action="refused", refused=str(refusal), applied=False)
                for key in ("checkpoints", "writes", "blobs", "bytes"):
                    record[key] = 0
            except BaseException:
                if sink is not None:
                    sink.rollback()
                raise
            yield record

    return CopyRun(head, records())


def _copy_thread(
    source: Store,
    target: Target,
    thread_id: str,
    sink: ThreadSink | None,
    record: dict[str, Any],
    redactor: Redactor | None,
    renumber: bool,
    on_rows: Callable[[int], None] | None,
) -> None:
    """Move one thread's rows into `sink` (None: count them only, the dry run)."""
    query = DumpQuery(thread_ids=(thread_id,))
    # The thread's separately stored values (Postgres, the dev folder), by version.
    blobs = {
        (b.checkpoint_ns, b.channel, b.version or ""): (
            redactor.value(
                b.channel, b.type, b.data, f"channel {b.channel!r} at version {b.version}"
            )
            if redactor is not None
            else (b.type, b.data)
        )
        for b in source.raw_blobs(query)  # version None: ShallowPostgresSaver's, one a channel
    }
    # Writes first (the same transaction: nothing sees them before the checkpoints), and
    # with them the `__pregel_tasks` writes where Postgres keeps pre-v4 Sends.
    sends: dict[str, list[tuple[tuple[str, str, int], Any]]] = {}
    for write in source.raw_writes(query):
        if redactor is not None:
            write = redactor.write(write)
        if write.channel == TASKS:
            order = (write.task_path, write.task_id, write.idx)
            sends.setdefault(write.checkpoint_id, []).append((order, (write.type, write.data)))
        record["writes"] += 1
        record["bytes"] += len(write.data or b"")
        if sink is not None:
            sink.write(write)
        if on_rows is not None:
            on_rows(1)
    ordered = {cid: [blob for _, blob in sorted(found)] for cid, found in sends.items()}
    seen: dict[tuple[str, str, str], bytes] = {}
    for raw in source.raw_checkpoints(query):
        if redactor is not None:
            raw = redactor.checkpoint(raw)
        carried = target.carry(raw, blobs, ordered, renumber=renumber)
        record["bytes"] += carried.size
        for key, data in carried.blobs.items():
            digest = hashlib.blake2b(data or b"", digest_size=16).digest()
            if key not in seen:
                seen[key] = digest
                record["blobs"] += 1
                record["bytes"] += len(data or b"")
            elif seen[key] != digest:
                # One value per (namespace, channel, version) in the target: two checkpoints
                # that hold different values under one version (forks, in a store that
                # counts versions 1, 2, 3) cannot both be carried exactly.
                raise CopyRefused(
                    f"checkpoint {raw.checkpoint_id}: channel {key[1]!r} holds another value "
                    f"than an earlier checkpoint under the same version {key[2]}, and the "
                    "target keeps one value per version"
                )
        record["checkpoints"] += 1
        if sink is not None:
            sink.checkpoint(carried.row)
        if on_rows is not None:
            on_rows(1)


def _same_file(a: str, b: str) -> bool:
    """Whether two locations name one file (a relative and an absolute path, a symlink)."""
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, ValueError):
        return False
