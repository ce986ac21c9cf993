"""`ckpt check`: read every row of a store once and say what is wrong with it, and how to
fix it where ckpt can (docs/json.md "ckpt check").

The rows are read by the one pass (ckpt.scan.rows) that `ckpt stats` and `ckpt types` make
too, feeding the type census (ckpt.scan.census, which decodes every value) and the
integrity checks (ckpt.scan.integrity); `Checkup` is that pair and what is concluded from
it once the rows are read: per thread, from its `ckpt threads` record, failed threads,
threads waiting on an interrupt (for longer than `stale`) and DeltaChannel values whose
snapshot is gone; then the saver and its schema. `ckpt stats` runs the same Checkup in its
own pass, so its health section and `ckpt check` cannot disagree. Nothing is changed, and
no fix is applied: each finding says, as data, the command that would make it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Final

from ckpt.errors import CkptError
from ckpt.records.model import DumpQuery, ThreadBytes
from ckpt.records.plans import COUNTERS
from ckpt.records.types import (
    CheckRecord,
    DeltaHealthRecord,
    FindingCode,
    FindingRecord,
    FindingSummaryRecord,
    SaverRecord,
    ThreadRecord,
    TypesRecord,
    Verdict,
)
from ckpt.records.when import updated_at
from ckpt.scan.census import Census, CensusVisitor
from ckpt.scan.findings import summary
from ckpt.scan.integrity import Integrity
from ckpt.scan.places import place
from ckpt.scan.rows import RowSizes, Visitor, scan
from ckpt.stores.base import Store

# Who writes each checkpoint format version (format.md §3.1).
FORMATS: Final[dict[int, str]] = {
    1: "langgraph before 0.3.19",
    2: "langgraph 0.3.19 - 0.3.23",
    3: "langgraph 0.3.24 - 0.4.x",
    4: "langgraph 0.5.0 or later",
}

Progress = Callable[[int], None]


@dataclass(slots=True)
class Conclusion:
    """What a Checkup found, once its pass and the thread records are read."""

    types: TypesRecord
    saver: SaverRecord
    findings: list[FindingRecord]
    summary: FindingSummaryRecord
    status: Verdict
    delta_channels: list[DeltaHealthRecord]


class Checkup:
    """The census and integrity visitors of one pass over `sizes`' threads, and what is
    concluded from them (see the module's docstring)."""

    def __init__(
        self,
        store: Store,
        sizes: dict[str, ThreadBytes],
        *,
        now: dt.datetime,
        keep_namespaces: bool = False,
    ) -> None:
        self.store = store
        self.now = now
        # The classes each row names go to the integrity checks (strict-msgpack); their
        # counts and examples (`ckpt types`) are never shown here.
        self.census = Census(store.aes_key, classes=False)
        self.integrity = Integrity(store, sizes, now=now, keep_namespaces=keep_namespaces)
        self.census.watcher = self.integrity

    @property
    def visitors(self) -> list[Visitor]:
        """The census first: the integrity checks read what it decoded of each row."""
        return [CensusVisitor(self.census), self.integrity]

    def pass_visitors(self, sizes: dict[str, ThreadBytes], *, counted: bool) -> list[Visitor]:
        """`visitors`, after RowSizes when the pass counts `sizes` from its rows
        (Store.pass_sizes)."""
        return [RowSizes(sizes), *self.visitors] if counted else self.visitors

    def conclude(
        self,
        threads: Iterable[ThreadRecord],
        *,
        stale: dt.timedelta | None = None,
        snapshots: dict[str, dict[str, str]] | None = None,
    ) -> Conclusion:
        """The findings, once the pass is over. `threads` are the thread records (`ckpt
        threads`) of the threads read; `stale` the age past which a thread waiting on an
        interrupt is a warning; `snapshots` the delta snapshots the pass saw inline."""
        from ckpt.scan.census_record import census_record

        self.integrity.settle()
        types = census_record(self.store, self.census)
        deltas = self._threads(threads, stale=stale, snapshots=snapshots or {})
        self._encryption(types)
        saver = _saver(self.store, types)
        self._schema(saver)
        findings = self.integrity.findings.records(
            self.store.location,
            restores=self.store.copy_target,
            prunes=_prunes(self.store),
            renumbers=self.store.counted_versions,
        )
        counted, worst = summary(findings)
        return Conclusion(types, saver, findings, counted, worst, deltas)

    def _threads(
        self,
        threads: Iterable[ThreadRecord],
        *,
        stale: dt.timedelta | None,
        snapshots: dict[str, dict[str, str]],
    ) -> list[DeltaHealthRecord]:
        """Failed and waiting threads, and delta channels whose snapshot is gone."""
        found = self.integrity.findings
        delta_threads: list[ThreadRecord] = []
        for thread in threads:
            thread_id = thread["thread_id"]
            where = place(thread_id, "", thread["checkpoint_id"])
            if thread["status"] == "error":
                first = thread["errors"][0] if thread["errors"] else None
                where["detail"] = str(first)[:200] if first is not None else None
                found.found("failed-thread", thread_id, where)
            elif thread["status"] == "interrupted":
                updated = updated_at(thread["updated_at"])
                age = self.now - updated if updated is not None else None
                where["detail"] = f"waiting since {thread['updated_at']}"
                late = stale is not None and age is not None and age > stale
                found.found("stale-interrupt" if late else "waiting", thread_id, where)
            if COUNTERS in thread["metadata"] or thread_id in snapshots:
                delta_threads.append(thread)
        latest = {t["thread_id"]: t["checkpoint_id"] for t in delta_threads}
        deltas = delta_channels(self.store, delta_threads, snapshots)
        for delta in deltas:
            if not delta["complete"]:
                found.found(
                    "missing-snapshot",
                    delta["thread_id"],
                    place(
                        delta["thread_id"],
                        "",
                        latest[delta["thread_id"]],
                        channel=delta["channel"],
                        detail="the walk back to its snapshot from the newest checkpoint meets "
                        "a missing checkpoint",
                    ),
                )
        found.close_batch()
        return deltas

    def _encryption(self, types: TypesRecord) -> None:
        integrity = self.integrity
        found = integrity.findings
        encryption = types["encryption"]
        if encryption["hidden"] and not encryption["key"]:
            found.get("encrypted-unchecked").count = encryption["hidden"]
        if encryption["key"] and not encryption["encrypted"]:
            found.get("key-unused").count = 1
        if integrity.encrypted_rows and integrity.plain_threads.count:
            found.by_code["unencrypted-thread"] = integrity.plain_threads
        unencrypted = found.by_code.get("unencrypted-row")
        if unencrypted is not None and not encryption["key"]:
            # Without the key the encrypted values are not verified either: said, not failed.
            unencrypted.severity = "warning"

    def _schema(self, saver: SaverRecord) -> None:
        codes: dict[str, FindingCode] = {
            "migrates": "schema-migration",
            "cannot": "unreadable-schema",
        }
        code = codes.get(saver["langgraph"])
        if code is not None:
            finding = self.integrity.findings.get(code)
            finding.detail = saver["note"]
            finding.count = 1


def check_store(
    store: Store,
    query: DumpQuery | None = None,
    *,
    threads: Iterable[ThreadRecord] = (),
    stale: dt.timedelta | None = None,
    now: dt.datetime | None = None,
    progress: Progress | None = None,
    jobs: int | None = 1,
) -> CheckRecord:
    """Check `store` (or the threads `query` selects): `ckpt check --json`.

    `threads` are the thread records (`ckpt threads`) of the threads checked, read once
    the rows are; `stale` the age past which a thread waiting on an interrupt is a
    warning (measured from `now`, default the current time); `progress(n)` hears of every
    n rows read; up to `jobs` processes share the reading of the whole store where its
    kind allows (None: one per core from AUTO_MIN_CHECKPOINTS; ckpt.scan.split), with the
    answer of one. Raises only what reading the store raises (ckpt.errors)."""
    from ckpt.scan.split import enough, processes, shared_scan

    query = query or DumpQuery()
    selection = DumpQuery(thread_ids=query.thread_ids)
    wanted = processes(query, jobs)
    with store.reading() if wanted > 1 else nullcontext():
        sizes, counted = store.pass_sizes(selection)
        checkup = Checkup(store, sizes, now=now or dt.datetime.now(dt.UTC))
        if wanted > 1 and store.shares_reading() and enough(sizes, jobs):
            shared_scan(store, sizes, checkup, counted=counted, jobs=wanted, progress=progress)
        else:
            scan(store, sizes, checkup.pass_visitors(sizes, counted=counted), progress=progress)
    found = checkup.conclude(threads, stale=stale)
    types = found.types
    return {
        "store": types["store"],
        "saver": found.saver,
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
        "findings": found.findings,
        "summary": found.summary,
        "status": found.status,
    }


def delta_channels(
    store: Store, threads: Sequence[ThreadRecord], snapshots: dict[str, dict[str, str]]
) -> list[DeltaHealthRecord]:
    """Each delta channel of each thread's latest checkpoint: the snapshot a replay starts
    from and the writes it applies (found as LangGraph finds them, ckpt.analysis.delta). Channels
    whose snapshot the latest checkpoint holds itself (the scan saw it) replay nothing."""
    from ckpt.analysis.delta import rebuild, store_loader
    from ckpt.errors import CkptError
    from ckpt.records.model import CheckpointKey
    from ckpt.records.plans import COUNTERS

    found: list[DeltaHealthRecord] = []
    for thread in threads:
        latest = thread["checkpoint_id"]
        for channel, where in sorted(snapshots.get(thread["thread_id"], {}).items()):
            if where == latest:
                found.append(
                    {
                        "thread_id": thread["thread_id"],
                        "channel": channel,
                        "snapshot_checkpoint_id": where,
                        "writes_to_replay": 0,
                        "updates_since_snapshot": 0,
                        "complete": True,
                    }
                )
        counters = thread["metadata"].get(COUNTERS)
        if not isinstance(counters, dict) or latest is None:
            continue
        key = CheckpointKey(thread["thread_id"], "", latest)
        try:
            deltas = rebuild(store.load(key, values=True), store_loader(store))
        except CkptError:
            continue  # damaged or encrypted: the thread's own commands say why
        for channel, delta in sorted(deltas.items()):
            counted = counters.get(channel)
            updates = counted[0] if isinstance(counted, list) and counted else None
            found.append(
                {
                    "thread_id": thread["thread_id"],
                    "channel": channel,
                    "snapshot_checkpoint_id": delta.seed_checkpoint_id,
                    "writes_to_replay": len(delta.writes),
                    "updates_since_snapshot": updates if isinstance(updates, int) else None,
                    "complete": delta.complete,
                }
            )
    return found


def thread_records(store: Store, thread_ids: Sequence[str]) -> Iterator[ThreadRecord]:
    """The `ckpt threads` records of these threads only, each read by key (its namespaces
    and latest root checkpoint): what `check` and `stats` narrowed to a few threads read,
    instead of listing every thread of the store."""
    from ckpt.analysis.records import thread_record
    from ckpt.records.model import ThreadSummary

    sizes = store.sizes(DumpQuery(thread_ids=tuple(thread_ids)))
    for thread_id in thread_ids:
        key = store.latest_key(thread_id)
        try:
            latest = store.load(key, values=False) if key is not None else None
        except CkptError:
            latest = None  # damaged: the scan says why
        sized = sizes.get(thread_id, ThreadBytes())
        yield thread_record(
            ThreadSummary(
                thread_id,
                store.namespaces(thread_id),
                sized.checkpoints,
                sized.writes,
                None,
                latest,
            )
        )


def _prunes(store: Store) -> bool:
    """Whether `ckpt prune` can take the rows nothing uses out of this store."""
    try:
        store.check_prune("orphans", backup=False)
    except CkptError:
        return False
    return True


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


def _many(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"
