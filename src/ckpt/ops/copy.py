"""`ckpt copy`: carry threads from any store into a SqliteSaver file, a PostgresSaver or
MongoDBSaver database or a RedisSaver server, one thread per transaction on the target.

The source is read through its read-only raw scans (the stored bytes, nothing decoded);
ckpt.stores.transfer moves each checkpoint into the target's layout by byte spans. A dry
run does the same work without a target transaction, so its plan names every refusal the
copy would meet; only `apply` creates the target's schema and writes.
"""

from __future__ import annotations

import hashlib
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ckpt import stores
from ckpt.errors import BadOption, CopyInterrupted, CopyRefused, NotSupported, Unsafe
from ckpt.ops.run import Run
from ckpt.records.model import TASKS, DumpQuery
from ckpt.records.runs import CopyHead, CopyThreadRecord, CopyTotals
from ckpt.stores.base import Store, Target, ThreadSink

if TYPE_CHECKING:
    from ckpt.stores import Redactor

OnConflict = Literal["fail", "skip", "replace"]
ON_CONFLICT: tuple[OnConflict, ...] = ("fail", "skip", "replace")


@dataclass(frozen=True, slots=True)
class Redaction:
    """`redact`: more keys to keep as they are (`keep_keys`), and error type names."""

    keep_keys: frozenset[str] = frozenset()
    keep_errors: bool = False

    @classmethod
    def given(cls, redact: bool, keep_keys: Sequence[str], keep_errors: bool) -> Redaction | None:
        """The redaction the API's `redact`, `keep_keys` and `keep_errors` ask for, if any."""
        if (keep_keys or keep_errors) and not redact:
            raise BadOption("`keep_keys` and `keep_errors` are for `redact=True`")
        return cls(keep_keys=frozenset(keep_keys), keep_errors=keep_errors) if redact else None


@dataclass
class CopyRun(Run):
    """A copy as it runs: iterating it copies (or plans) one thread at a time and yields
    its record (docs/json.md, `ckpt copy`); `totals` are complete once it ends. Ctrl-C
    during an applied copy ends it with CopyInterrupted, which counts the threads
    committed (`committed`): each whole, the one in flight rolled back."""

    head: CopyHead
    records: Iterator[CopyThreadRecord]
    selected: int = 0
    totals: CopyTotals = field(
        default_factory=lambda: CopyTotals(
            threads=0,
            checkpoints=0,
            writes=0,
            blobs=0,
            bytes=0,
            skipped=0,
            refused=0,
            conflicts=0,
        )  # fmt: skip
    )
    committed: int = 0
    first_refused: CopyThreadRecord | None = None
    target: Target | None = None  # closed with the run

    @property
    def notices(self) -> list[str]:
        """What the target has to say (read and cleared by the caller)."""
        return self.target.notices if self.target is not None else []

    def close(self) -> None:
        if self.target is not None:
            self.target.close()

    def __enter__(self) -> CopyRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[CopyThreadRecord]:
        try:
            for record in self.records:
                self.count(
                    record,
                    {"skip": "skipped", "conflict": "conflicts"},
                    ("checkpoints", "writes", "blobs", "bytes"),
                )
                yield record
        except KeyboardInterrupt:
            if not self.head["applied"]:
                raise
            raise self.interrupted() from None

    def interrupted(self) -> CopyInterrupted:
        """What Ctrl-C during an applied copy ends it with."""
        copied, selected = self.committed, self.selected
        if not copied:
            message = f"interrupted before any of {selected} threads was copied: nothing changed"
            return CopyInterrupted(message, copied=0, selected=selected)
        return CopyInterrupted(
            f"interrupted: {copied} of {selected} threads copied, each whole, none partial; "
            "copy again with `on_conflict='skip', apply=True` to copy the rest",
            copied=copied,
            selected=selected,
        )

    def refusal(self) -> Unsafe | None:
        """The error a run that refused threads ends with (exit 12), once it has run."""
        return self.refused(self.first_refused, self.totals["refused"])


def copy_run(
    source: Store,
    target: Target,
    choose: Callable[[], Sequence[str]],
    *,
    on_conflict: OnConflict = "fail",
    renames: Mapping[str, str] | None = None,
    apply: bool = False,
    redaction: Redaction | None = None,
    renumber_versions: bool = False,
    on_rows: Callable[[int], None] | None = None,
) -> CopyRun:
    """Plan (and with `apply`, carry out) the copy of the threads `choose` names into
    `target`.

    What the source and the target allow is checked before the threads are chosen; a
    target that cannot be written is refused in a dry run too, with the line the copy
    would stop at. Conflicts are settled before anything is written: with
    `on_conflict="fail"` an applied copy that would meet a thread already on the target
    changes nothing. `on_rows` hears of every row moved (the progress bar)."""
    if on_conflict not in ON_CONFLICT:
        raise BadOption(f"`on_conflict` must be fail, skip or replace, not {on_conflict!r}")
    if (
        target.location == source.location
        or _same_file(target.location, source.location)
        or (target.identity is not None and target.identity == source.identity)
    ):
        raise Unsafe(
            f"{target.location}: the source and the target are the same store; nothing copied"
        )
    source.check_copy(renumber_versions=renumber_versions, counted_versions=target.counted_versions)
    if target.counted_versions and not source.counted_versions and not renumber_versions:
        # Checked with LangGraph: MongoDBSaver's get_next_version raises on a string.
        raise NotSupported(
            f"{target.location}: MongoDBSaver counts channel versions 1, 2, 3 and cannot "
            f"resume a thread from the string versions of {source.location}: pass "
            "`renumber_versions=True` to write them as its integers (their order kept)"
        )
    target.check_writable(replace=on_conflict == "replace")
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
    threads = list(choose())
    unknown = sorted(set(renames) - set(threads))
    if unknown:
        raise BadOption(f"`rename` {unknown[0]!r}: that thread is not among those copied")
    names = {t: renames.get(t, t) for t in threads}
    if len(set(names.values())) < len(names):
        raise BadOption("`rename`: two threads would get the same id on the target")
    existing = target.existing(list(names.values()))
    if existing and on_conflict == "fail" and apply:
        shown = ", ".join(repr(t) for t in sorted(existing)[:3])
        more = f" and {len(existing) - 3} more" if len(existing) > 3 else ""
        raise Unsafe(
            f"{target.location} already holds {len(existing)} of these threads ({shown}{more}): "
            "pass `on_conflict` skip or replace; nothing copied"
        )
    head: CopyHead = {
        "source": {"kind": source.kind, "location": source.location},
        "target": {
            "layout": target.layout,  # type: ignore[typeddict-item]
            "location": target.location,
            "state": target.state,  # type: ignore[typeddict-item]
        },
        "applied": apply,
        "on_conflict": on_conflict,
        "redacted": redaction is not None,
        "redaction": (
            {"keep_keys": sorted(redaction.keep_keys), "keep_errors": redaction.keep_errors}
            if redaction is not None
            else None
        ),
        "renumbered_versions": renumber_versions,
    }
    if apply:
        target.setup()
    run = CopyRun(head, iter(()), selected=len(threads), target=target)

    def records() -> Iterator[CopyThreadRecord]:
        for thread_id in threads:
            to = names[thread_id]
            conflict = to in existing
            record: CopyThreadRecord = {
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
                "reencoded": source.reencodes,
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
                    sink.flush()
                    with _interrupts_held():  # committed and counted, or neither
                        sink.commit()
                        record["applied"] = True
                        run.committed += 1
            except CopyRefused as refusal:
                if sink is not None:
                    sink.rollback()
                record["action"], record["refused"] = "refused", str(refusal)
                record["applied"] = False
                record["checkpoints"] = record["writes"] = record["blobs"] = record["bytes"] = 0
            except BaseException:
                if sink is not None:
                    sink.rollback()
                raise
            yield record

    run.records = records()
    return run


def copy_into(
    dst: str,
    start: Callable[[Target], CopyRun],
    *,
    timeout: float | None = None,
    shallow: bool = False,
) -> CopyRun:
    """The run `start` begins on the store at `dst`, opened here as a target (`shallow`: a
    Redis target in ShallowRedisSaver's layout) and closed with the run (CopyRun.target)."""
    target = stores.open_target(dst, timeout=timeout, shallow=shallow)
    try:
        run = start(target)
    except BaseException:
        target.close()
        raise
    run.target = target
    return run


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C held back while a thread commits and is counted: a copy interrupted there
    says exactly how many threads it committed (the signal lands once this ends)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _copy_thread(
    source: Store,
    target: Target,
    thread_id: str,
    sink: ThreadSink | None,
    record: CopyThreadRecord,
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
    for stored in source.raw_writes(query):
        write = source.copy_write(stored)
        if write is None:
            continue
        if redactor is not None:
            write = redactor.write(write)
        write = target.carry_write(write)
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
        raw = source.copy_checkpoint(raw)
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
