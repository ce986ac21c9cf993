"""The records of the commands that change a store, thread by thread: `ckpt prune`, `ckpt
copy` and `ckpt migrate` (docs/json.md, docs/migrate.md). Each run streams one record per
thread after its head, then its totals (ckpt.ops.run.Run); vacuum's records, which read
the store's space, stay with the other space records in ckpt.records.types."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ckpt.records.types import Reclaim, StoreRecord

# -- ckpt prune (docs/json.md "ckpt prune") -----------------------------------------------


class KeptRecord(TypedDict):
    checkpoint_id: str
    reasons: list[str]


class NamespacePlanRecord(TypedDict):
    checkpoint_ns: str
    checkpoints: int  # deleted
    checkpoint_bytes: int
    writes: int
    write_bytes: int
    blobs: int
    blob_bytes: int
    bytes: int
    kept: list[KeptRecord]
    parents_cleared: list[str]  # kept checkpoints whose parent goes: parent set to null
    whole: bool  # the namespace goes entirely
    why: str | None


class ThreadPlanRecord(TypedDict):
    thread_id: str
    refused: str | None  # why this thread is left alone
    applied: bool  # its transaction committed
    checkpoints: int
    writes: int
    blobs: int
    bytes: int
    namespaces: list[NamespacePlanRecord]


class PruneTotals(TypedDict):
    checkpoints: int
    writes: int
    blobs: int
    bytes: int
    threads: int  # threads that lose something
    refused: int  # threads left alone


class PruneHead(TypedDict):
    """A prune record but its threads and totals: what is known before the first thread."""

    store: StoreRecord
    strategy: Literal["keep_latest", "keep_last", "delete", "orphans"]
    keep: int
    applied: bool
    backup: str | None  # the backup file written first
    # How `ckpt vacuum` then gives the space of the deleted rows back
    # (ckpt.records.types.Reclaim):
    # "file" (the file keeps its size until VACUUM rewrites it), "reuse" (the tables reuse
    # it once VACUUM has run; the files do not shrink), "memory" (Redis frees a deleted
    # key's memory at once; the allocator may hold the pages until MEMORY PURGE),
    # "compact" (MongoDB's engine reuses the space; `compact` gives it back); null: not
    # said.
    reclaim: Reclaim | None


class PruneRecord(PruneHead):
    """`ckpt prune --json` (docs/json.md, docs/prune.schema.json): the plan, or what was
    done with `applied`."""

    threads: list[ThreadPlanRecord]
    totals: PruneTotals


# -- ckpt copy (docs/json.md "ckpt copy") -------------------------------------------------

CopyAction = Literal["copy", "replace", "skip", "conflict", "refused"]


class CopyTargetRef(TypedDict):
    # SqliteSaver's and MongoDBSaver's values in the body; PostgresSaver's blobs;
    # RedisSaver's JSON documents
    layout: Literal["inline", "split", "json"]
    location: str
    state: Literal["new", "ready"]  # "new": the saver's schema is made on apply


class RedactionRecord(TypedDict):
    keep_keys: list[str]  # dict keys whose values were kept besides ckpt's own
    keep_errors: bool  # error type names kept


class CopyThreadRecord(TypedDict):
    thread_id: str
    to: str  # its id on the target
    conflict: bool  # the target already holds that id
    action: CopyAction
    applied: bool  # its transaction committed
    refused: str | None  # why it is left out
    checkpoints: int
    writes: int
    blobs: int
    bytes: int
    # Its values encoded again rather than carried as stored (out of RedisSaver's JSON:
    # LangGraph reads them the same, the bytes are new)
    reencoded: bool


class CopyTotals(TypedDict):
    threads: int  # copied (or, in a plan, to copy): conflicts, skips and refusals apart
    checkpoints: int
    writes: int
    blobs: int
    bytes: int
    skipped: int
    refused: int
    conflicts: int  # threads already on the target that `on_conflict="fail"` stops at


class CopyHead(TypedDict):
    """A copy record but its threads and totals."""

    source: StoreRecord
    target: CopyTargetRef
    applied: bool
    on_conflict: Literal["fail", "skip", "replace"]
    redacted: bool
    redaction: RedactionRecord | None  # what `redact` kept, when it redacted
    renumbered_versions: bool


class CopyRecord(CopyHead):
    """`ckpt copy --json` (docs/json.md, docs/copy.schema.json): the plan, or what was done
    with `applied`."""

    threads: list[CopyThreadRecord]
    totals: CopyTotals


# -- ckpt migrate (docs/migrate.md) ----------------------------------------------------------

MigrateAction = Literal["migrate", "unchanged", "refused"]


class MigrateStepRecord(TypedDict):
    name: str  # what migrated checkpoints list in metadata `ckpt_migrations`
    kind: Literal["rename_channel", "drop_channel", "rename_node", "add_channel", "transform"]
    old: str  # the channel or node renamed, dropped, added or transformed
    new: str | None  # the new name of a rename
    value: Any  # the JSON value an add_channel gives; null for the other kinds


class MigrateThreadRecord(TypedDict):
    thread_id: str
    action: MigrateAction  # "unchanged": nothing to do (already migrated, or no such name)
    applied: bool  # its transaction committed
    refused: str | None  # why the plan cannot be carried out on it
    checkpoints: int  # checkpoints changed
    writes: int  # pending writes changed, added or removed
    blobs: int  # separately kept values changed, added or removed (Postgres)
    steps: list[str]  # the steps' names it goes (went) through
    diff: list[str] | None  # a unified diff of the names in one checkpoint, before and after
    graph_error: str | None  # --graph: what the new graph raised loading it (None: it loads)


class MigrateTotals(TypedDict):
    threads: int  # migrated (or, in a plan, to migrate)
    checkpoints: int
    writes: int
    blobs: int
    unchanged: int
    refused: int


class MigrateHead(TypedDict):
    """A migrate record but its threads and totals."""

    store: StoreRecord
    applied: bool
    latest: bool  # only each namespace's newest checkpoint
    backup: str | None  # the backup file written before anything changed
    steps: list[MigrateStepRecord]


class MigrateRecord(MigrateHead):
    """`ckpt migrate --json` (docs/migrate.md, docs/migrate.schema.json): the plan, or
    what was done with `applied`."""

    threads: list[MigrateThreadRecord]
    totals: MigrateTotals


class MigrationBehindRecord(TypedDict):
    """`ckpt check --plan FILE --json` (docs/migrate.md, docs/behind.schema.json)."""

    plan: str  # the plan file
    behind: list[str]  # the threads the plan would still change (or cannot be carried out on)
