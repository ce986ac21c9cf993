"""The kinds of finding `ckpt check` reports (and the health section of `ckpt stats`): each
code with its unit, severity, the line that explains it and the fix that applies, and the
tally that turns occurrences into FindingRecords (docs/json.md "ckpt check").

Severities say what the finding means for LangGraph: an **error** where LangGraph cannot
load a checkpoint, or loads a state other than the one written; a **warning** where the
store costs or risks something (rows nothing reads, runaway growth, values a setting
would refuse or a key would not protect); a **note** for everything else worth knowing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from ckpt.records.types import (
    SEVERITIES,
    FindingCode,
    FindingRecord,
    FindingSummaryRecord,
    FixRecord,
    PlaceRecord,
    Severity,
    Unit,
    Verdict,
)

THREADS_SHOWN: Final = 20  # thread ids listed per finding (thread_count counts them all)
PLACES_SHOWN: Final = 20  # occurrences listed per finding (count counts them all)
# A thread whose checkpoints keep growing is runaway growth from this many stored bytes on
# (an ordinary chat of a few dozen turns stores well under a megabyte).
RUNAWAY_BYTES: Final = 64 << 20
# The placeholders a fix leaves for the user: the backup to restore from, and "a thread"
# when a finding names more threads than it lists.
BACKUP: Final = "BACKUP"
THREAD: Final = "THREAD"

Fix = Literal["restore", "orphans"]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of finding: its code, what it counts, its severity, the one line that
    explains it, and which fix applies ("restore": copy the threads back from a backup;
    "orphans": prune the rows nothing uses)."""

    code: FindingCode
    unit: Unit
    severity: Severity
    reason: str
    fix: Fix | None = None


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
            "a checkpoint whose parent, own id or subgraph parents belong to another thread: "
            "a row copied from another thread, whose state LangGraph would load",
            "restore",
        ),
        Kind(
            "chain-mismatch",
            "checkpoint",
            "error",
            "a checkpoint that does not follow from its parent: its step or a channel's "
            "version goes back, or is another thread's (a row moved in from elsewhere, its "
            "parent link rewritten)",
            "restore",
        ),
        Kind(
            "two-roots",
            "checkpoint",
            "error",
            "a checkpoint without a parent in a namespace that holds its first checkpoint: a "
            "parent link lost, or a row added, which LangGraph lists as a history of its own",
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
            "wrong-latest",
            "checkpoint",
            "error",
            "the saver's own pointer to the newest checkpoint of a namespace (RedisSaver's "
            "`checkpoint_latest`) is gone or names another checkpoint: LangGraph resumes "
            "from that one, or finds none",
            "restore",
        ),
        Kind(
            "missing-checkpoint",
            "checkpoint",
            "error",
            "a checkpoint of the thread is gone: pending writes name it, newer than every "
            "checkpoint of their namespace, or it shows in another thread (moved there); "
            "LangGraph reads the history without it",
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
            "pruned-history",
            "checkpoint",
            "note",
            "the oldest checkpoints left point at parents that are gone, as a prune leaves "
            "them (LangGraph's, ckpt's, or deleted rows): not damage",
        ),
        # -- the parts of each row --------------------------------------------------------
        Kind(
            "malformed-checkpoint",
            "checkpoint",
            "error",
            "a checkpoint body that is missing, null, or lacks what LangGraph reads of it "
            "(v, id, ts, channel_values, channel_versions, versions_seen): loading it fails",
            "restore",
        ),
        Kind(
            "malformed-metadata",
            "checkpoint",
            "error",
            "checkpoint metadata that is missing, does not decode, or is not what LangGraph "
            "reads (a map; `step` a number, `parents` a map of checkpoint ids)",
            "restore",
        ),
        Kind(
            "malformed-write",
            "write",
            "error",
            "a pending write without a task id, channel, index or serde tag, or whose tag "
            "no LangGraph serializer reads: loading its checkpoint fails",
            "restore",
        ),
        Kind(
            "misplaced-write",
            "checkpoint",
            "error",
            "pending writes of this checkpoint are filed under another thread or namespace "
            "(moved there, or their keys changed): LangGraph loads the checkpoint without them",
            "restore",
        ),
        Kind(
            "malformed-blob",
            "blob",
            "error",
            "a stored channel value without a serde tag or bytes, or whose tag no LangGraph "
            "serializer reads: loading the checkpoints that name it fails",
            "restore",
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
            "warning",
            "stored values no checkpoint names: LangGraph never reads them; they only take space",
            "orphans",
        ),
        Kind(
            "orphan-writes",
            "write",
            "warning",
            "pending writes whose checkpoint is not in the store: LangGraph never reads "
            "them (a deletion that left them behind)",
            "orphans",
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
            "note",
            "encrypted values were counted but not checked: give the AES key "
            "(LANGGRAPH_AES_KEY) to verify each one",
        ),
        Kind(
            "key-unused",
            "store",
            "note",
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
            "note",
            "threads whose latest step failed and was not retried: the application's state, "
            "not damage; they resume when invoked again",
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
            "note",
            "threads waiting on an interrupt() for Command(resume=...)",
        ),
        Kind(
            "quadratic-growth",
            "thread",
            "warning",
            "threads whose checkpoints keep growing and already hold 64 MiB or more: each "
            "step stores the whole state again, so their bytes grow with the square of "
            "their steps",
        ),
        Kind(
            "aggregate-too-long",
            "checkpoint",
            "warning",
            "checkpoints whose pending writes the MySQL saver reads through one JSON "
            "aggregate that this MariaDB server cuts at group_concat_max_len: LangGraph's "
            "get_state and history raise JSONDecodeError on them (ckpt reads the rows one by "
            "one); raise the server's group_concat_max_len above the size shown",
        ),
    )
}


@dataclass(slots=True)
class Finding:
    """Occurrences of one kind, counted whole, the first ones kept."""

    kind: Kind
    count: int = 0
    bytes: int = 0
    threads: list[str] = field(default_factory=list)
    thread_count: int = 0
    batch_threads: set[str] = field(default_factory=set)
    places: list[PlaceRecord] = field(default_factory=list)
    detail: str | None = None  # a reason more precise than the kind's
    severity: Severity | None = None  # another severity than the kind's, for this run

    def add(self, thread_id: str, where: PlaceRecord | None, *, count: int, size: int) -> None:
        self.count += count
        self.bytes += size
        self.batch_threads.add(thread_id)
        if where is not None and len(self.places) < PLACES_SHOWN and where not in self.places:
            self.places.append(where)

    def close_batch(self) -> None:
        """The batch's threads: counted, the first in id order kept."""
        if self.batch_threads:
            self.thread_count += len(self.batch_threads)
            if len(self.threads) < THREADS_SHOWN:
                self.threads = sorted({*self.threads, *self.batch_threads})[:THREADS_SHOWN]
            self.batch_threads.clear()


class Findings:
    """Every finding of one scan, by code."""

    def __init__(self) -> None:
        self.by_code: dict[str, Finding] = {}

    def get(self, code: FindingCode) -> Finding:
        finding = self.by_code.get(code)
        if finding is None:
            finding = self.by_code[code] = Finding(KINDS[code])
        return finding

    def found(
        self,
        code: FindingCode,
        thread_id: str,
        where: PlaceRecord | None,
        *,
        count: int = 1,
        size: int = 0,
    ) -> None:
        self.get(code).add(thread_id, where, count=count, size=size)

    def close_batch(self) -> None:
        for finding in self.by_code.values():
            finding.close_batch()

    def records(
        self, store: str, *, restores: bool, prunes: bool, renumbers: bool = False
    ) -> list[FindingRecord]:
        """Errors first, then warnings, then notes; in each, in the order of KINDS. `store`
        is the store's location as a fix names it; `restores`: `ckpt copy` can write this
        kind of store; `prunes`: `ckpt prune` can change it; `renumbers`: its saver counts
        channel versions 1, 2, 3 (MongoDBSaver), so a restore from a SQLite or Postgres
        backup renumbers them (`--renumber-versions`; integers stay as they are)."""
        order = {s: i for i, s in enumerate(SEVERITIES)}
        codes = list(KINDS)
        found = sorted(
            (f for f in self.by_code.values() if f.count or f.thread_count),
            key=lambda f: (order[f.severity or f.kind.severity], codes.index(f.kind.code)),
        )
        return [
            {
                "code": f.kind.code,
                "severity": f.severity or f.kind.severity,
                "unit": f.kind.unit,
                "reason": f.detail or f.kind.reason,
                "count": f.count,
                "threads": f.threads,
                "thread_count": f.thread_count,
                "places": f.places,
                "bytes": f.bytes or None,
                "fix": fix(f, store, restores=restores, prunes=prunes, renumbers=renumbers),
            }
            for f in found
        ]


def summary(findings: list[FindingRecord]) -> tuple[FindingSummaryRecord, Verdict]:
    """Findings by severity, and the worst one found ("ok" when none)."""
    counted: FindingSummaryRecord = {"error": 0, "warning": 0, "note": 0}
    for finding in findings:
        counted[finding["severity"]] += 1
    worst: Verdict = next((s for s in SEVERITIES if counted[s]), "ok")
    return counted, worst


def fix(
    finding: Finding, store: str, *, restores: bool, prunes: bool, renumbers: bool = False
) -> FixRecord | None:
    """The command that repairs the threads, as data: copied back whole from a backup
    over the damaged ones (`ckpt copy` writes SqliteSaver, PostgresSaver, MongoDBSaver and
    RedisSaver stores), or the rows nothing uses pruned from each thread, in its own
    transaction."""
    how = finding.kind.fix
    if how is None or not finding.threads:
        return None
    every = finding.thread_count <= len(finding.threads)
    threads = list(finding.threads) if every else [THREAD]
    placeholders = [] if every else [THREAD]
    if how == "restore":
        return {
            "verb": "copy",
            "arguments": [BACKUP, store],
            "options": {
                "threads": threads,
                "on_conflict": "replace",
                **({"renumber_versions": True} if renumbers else {}),
                "apply": True,
            },
            "placeholders": [BACKUP, *placeholders],
            "applies": restores,
        }
    # Pruning orphans from every thread is as safe as from the few: `all` when they are
    # more than the finding lists.
    selected: dict[str, object] = {"threads": threads} if every else {"all": True}
    return {
        "verb": "prune",
        "arguments": [store],
        "options": {**selected, "strategy": "orphans", "apply": True},
        "placeholders": [],
        "applies": prunes,
    }
