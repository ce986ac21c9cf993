"""The records ckpt shows: one TypedDict per shape (docs/json.md).

Every view takes these records: the JSON and NDJSON outputs print them as they are, the
human views (ckpt.render) lay them out, and the Python API (`ckpt.open`) returns them.
They are built in ckpt.analysis.records (checkpoints, threads) and by the scans and
operations that own each command; no view derives them again.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

from ckpt.records.vocabulary import Status


class WriteRecord(TypedDict):
    """A pending write: a task's output stored on the checkpoint it started from."""

    task_id: str
    task_path: str
    task: str  # who wrote it as every view names it: node, node[i], update_state, input ...
    idx: int
    channel: str
    type: str | None
    value: Any


class InterruptRecord(TypedDict):
    """An `interrupt()`: the id `Command(resume={id: ...})` needs, and its answer."""

    id: str | None
    value: Any
    response_schema: Any
    answered: bool
    answer: NotRequired[Any]  # only when the task's __resume__ write holds it


class TaskRecord(TypedDict):
    """A task due at a checkpoint (LangGraph's PregelTask) with what its writes say."""

    id: str
    name: str
    path: str
    state: str  # done | failed | interrupted | to_run
    finished: bool
    error: Any
    interrupts: list[InterruptRecord]
    send_index: int | None
    input: Any
    subgraph_ns: str | None


class DeltaWriteRecord(TypedDict):
    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    value: Any


class DeltaRecord(TypedDict):
    """A DeltaChannel rebuilt from its snapshot and the writes since (ckpt.analysis.delta)."""

    snapshot_checkpoint_id: str | None
    writes: list[DeltaWriteRecord]
    reducer: str | None
    complete: bool
    value: NotRequired[Any]  # only when ckpt could apply the reducer


class ThreadRecord(TypedDict):
    """One thread of `ckpt threads`: aggregates and its latest state (`get_state()`)."""

    thread_id: str
    namespaces: list[str]
    checkpoints: int
    pending_writes: int
    writes: int | None  # None unless measured (`threads --size`)
    checkpoint_id: str | None
    step: int | None
    source: str | None
    updated_at: str | None
    status: Status
    next: list[str] | None
    errors: list[Any]
    failed_tasks: list[TaskRecord]  # the tasks behind `errors`, as `show` has them
    interrupts: list[InterruptRecord]
    size: int | None  # None unless measured (`threads --size`)
    metadata: dict[str, Any]


class ConfigRecord(TypedDict):
    """LangGraph's RunnableConfig of one checkpoint: paste it into get_state or invoke."""

    configurable: dict[str, str]


# What began a branch of a thread's history (where a checkpoint has several children, the
# trunk goes on through the one whose line holds the newest checkpoint; each other child
# starts a branch): an `update_state` call; a copy of the checkpoint (metadata source
# "fork"); the run the trunk left behind, older than the trunk's child (an update or a
# fork went on from the same checkpoint later); or a run started again from the
# checkpoint, newer than the trunk's child (a replay: `invoke(None, config)`).
BranchKind = Literal["update_state", "fork", "earlier_run", "replay"]


class BranchRecord(TypedDict):
    """How the branch a checkpoint starts began (ckpt.analysis.history): on the first checkpoint of
    each branch of `history`, beside its parent's child the trunk goes on through."""

    kind: BranchKind
    trunk_checkpoint_id: str  # the parent's child the trunk goes on through


class CheckpointRecord(TypedDict):
    """One checkpoint of `show`, `history`, `dump`: LangGraph's own key names, and what
    `get_state(checkpoint_id)` says of it. Body fields ckpt does not model are added
    under their own names (docs/json.md)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    v: int | None
    ts: str | None
    metadata: dict[str, Any]
    channel_versions: dict[str, Any]
    versions_seen: dict[str, Any]
    updated_channels: list[str] | None
    next: list[str] | None
    next_unknown: NotRequired[str]  # why `next` is null
    tasks: list[TaskRecord] | None
    interrupts: list[InterruptRecord]
    pending_sends: list[Any]
    pending_writes: list[WriteRecord] | None
    size: int
    config: ConfigRecord  # what graph.get_state(config) / graph.invoke take for it
    channel_values: NotRequired[dict[str, Any] | None]  # with values only
    delta_channels: NotRequired[dict[str, DeltaRecord]]  # with values, when there are some
    checkpoint: NotRequired[Any]  # the body, when it could not be read
    branch: NotRequired[BranchRecord | None]  # `history` only: the branch it starts, if any


class FollowWritesRecord(TypedDict):
    """`history --follow`: writes that landed on a checkpoint already shown (a task's
    output, its error, its interrupt), with its tasks and interrupts as they now stand."""

    event: Literal["writes"]
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    pending_writes: list[WriteRecord]  # the new ones only
    tasks: list[TaskRecord] | None
    interrupts: list[InterruptRecord]


class SubgraphRecord(TypedDict):
    checkpoint_ns: str
    chain: list[HistoryNodeRecord]


class HistoryNodeRecord(TypedDict):
    """One checkpoint in the history tree: its record, the forks that leave it, and the
    subgraph runs its tasks made (ckpt.analysis.history). The first checkpoint of each fork says
    how that branch began (its record's `branch`)."""

    checkpoint: CheckpointRecord
    note: str | None  # odd lineage drawn as such: a parent cycle, a dangling or own parent
    forks: list[list[HistoryNodeRecord]]
    subgraphs: list[SubgraphRecord]


class LineageRecord(TypedDict):
    """What `ckpt history` draws of a thread (CheckpointStore.lineage): the tree, the values
    its update_state checkpoints wrote (the newest few: two edits of one checkpoint differ
    on screen), and how many older checkpoints a `last` window left unread."""

    thread_id: str
    chains: list[list[HistoryNodeRecord]]
    written: dict[str, dict[str, Any]]  # update_state checkpoint id -> its channel values
    earlier: int  # checkpoints older than the `last` read (0 when all were read, or unknown)


def history_nodes(chain: list[HistoryNodeRecord]) -> list[HistoryNodeRecord]:
    """Every node of a history chain: its forks and subgraph runs too, at any depth
    (without recursion)."""
    found: list[HistoryNodeRecord] = []
    stack = list(chain)
    while stack:
        node = stack.pop()
        found.append(node)
        for fork in node["forks"]:
            stack.extend(fork)
        for sub in node["subgraphs"]:
            stack.extend(sub["chain"])
    return found


class VersionColumn(TypedDict):
    checkpoint_id: str
    short_id: str
    step: int | None
    source: str | None


class BlobRecord(TypedDict):
    version: str
    type: str | None
    size: int


class VersionCell(TypedDict):
    version: Any
    counter: int | None
    moved: bool
    by: list[str]  # the tasks whose writes moved it
    blob: NotRequired[BlobRecord]
    shared_blob: NotRequired[bool]


class VersionRow(TypedDict):
    channel: str
    versions: list[VersionCell | None]


class VersionMatrix(TypedDict):
    """`ckpt versions`: which step moved each channel's version, and who moved it."""

    earlier_checkpoints: int
    thread_id: str | None
    checkpoint_ns: str
    checkpoints: list[VersionColumn]
    channels: list[VersionRow]


class PatchOperation(TypedDict):
    """One RFC 6902 operation of `ckpt diff --json`."""

    op: Literal["add", "remove", "replace"]
    path: str
    value: NotRequired[Any]


# -- ckpt stats (docs/json.md "ckpt stats") ---------------------------------------------------


class StoreRecord(TypedDict):
    """Which store a record is of: `stats`, `prune` and `vacuum` name it so."""

    kind: str  # sqlite | postgres | pickle | redis | mongodb
    location: str


class FilePagesRecord(TypedDict):
    """A database file and its pages (SQLite): null for a store kept otherwise."""

    file_bytes: int | None
    page_size: int | None
    pages: int | None
    free_pages: int | None
    free_bytes: int | None  # the freelist: what VACUUM gives back at least
    wal_bytes: int | None


class TableBytesRecord(TypedDict):
    """A table as the server sizes it (Postgres): the planner's row counts are estimates,
    -1 or null before the table was first analyzed."""

    table: str
    total_bytes: int
    table_bytes: int
    index_bytes: int
    toast_bytes: int | None  # Postgres's TOAST; None where the kind has none
    rows_estimate: int | None
    live_rows: int | None
    dead_rows: int | None


class ServerRecord(TypedDict):
    """A key-value server (Redis): what it holds, and how ckpt reads it."""

    product: str
    version: str
    keys: int
    used_memory_bytes: int
    modules: list[str]
    indexed: bool  # the saver's RediSearch indexes are there
    key_families: dict[str, int]  # keys by name prefix; "other": not the saver's, never read
    note: str  # how ckpt reads it when not by the saver's index; "" when it does


class CollectionRecord(TypedDict):
    """A collection as `collStats` sizes it (MongoDB)."""

    collection: str
    documents: int
    bytes: int
    storage_bytes: int


class StoreFileRecord(TypedDict):
    """A file of a `langgraph dev` folder (or a single PersistentDict file)."""

    file: str
    role: Literal["storage", "writes", "blobs"]
    bytes: int


class StorageRecord(FilePagesRecord):
    """What a store takes, as its backend reports it (`Store.storage`): the same keys for
    every kind, null where a kind has no such part (docs/json.md, "ckpt stats")."""

    total_bytes: int  # the store's footprint: file and WAL, tables, memory or collections
    tables: list[TableBytesRecord] | None
    server: ServerRecord | None
    database: str | None
    collections: list[CollectionRecord] | None
    other_collections: list[str] | None  # the database's others: listed, never read
    files: list[StoreFileRecord] | None


NO_PAGES: Final[FilePagesRecord] = {
    "file_bytes": None,
    "page_size": None,
    "pages": None,
    "free_pages": None,
    "free_bytes": None,
    "wal_bytes": None,
}


def storage_record(
    total_bytes: int,
    *,
    pages: FilePagesRecord | None = None,
    tables: list[TableBytesRecord] | None = None,
    server: ServerRecord | None = None,
    database: str | None = None,
    collections: list[CollectionRecord] | None = None,
    other_collections: list[str] | None = None,
    files: list[StoreFileRecord] | None = None,
) -> StorageRecord:
    """A StorageRecord of the parts a store has, every other part null."""
    return {
        **(pages or NO_PAGES),
        "total_bytes": total_bytes,
        "tables": tables,
        "server": server,
        "database": database,
        "collections": collections,
        "other_collections": other_collections,
        "files": files,
    }


class UnmeasuredBodies(TypedDict):
    """Checkpoint bodies whose inline values could not be measured (encrypted without the
    key, a pickle, damaged): counted whole as body bytes."""

    checkpoints: int
    bytes: int
    encrypted: int


class StatsTotals(TypedDict):
    threads: int
    checkpoints: int
    blobs: int
    writes: int
    bytes: int  # checkpoint_bytes + blob_bytes + write_bytes: what `threads` sizes add up to
    checkpoint_bytes: int  # checkpoint rows: body_bytes + inline_value_bytes + metadata_bytes
    body_bytes: int
    inline_value_bytes: int
    metadata_bytes: int
    blob_bytes: int
    write_bytes: int
    value_bytes: int  # channel values wherever they live: inline_value_bytes + blob_bytes
    unmeasured_bodies: UnmeasuredBodies


class ThreadBytesRecord(TypedDict):
    thread_id: str
    checkpoints: int
    writes: int
    bytes: int
    share: float
    repeated_bytes: int
    repeated_share: float


class NamespaceBytesRecord(TypedDict):
    namespace: str  # subgraph path without task ids: "" root, "researcher|writer"
    namespaces: int  # distinct (thread, namespace) runs of it
    checkpoints: int
    bytes: int
    share: float


class ChannelBytesRecord(TypedDict):
    channel: str
    bytes: int
    share: float
    stored: int  # values stored: one per checkpoint inline, one per version as blobs
    threads: int
    repeated_bytes: int  # bytes that repeat the value stored before (same version, or
    repeated_share: float  # the leading elements of a list)


class WriteChannelRecord(TypedDict):
    channel: str
    writes: int
    bytes: int
    share: float


class LargestCheckpointRecord(TypedDict):
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    step: int | None
    bytes: int  # the row, plus the blobs it names where values live apart


class GrowthPoint(TypedDict):
    checkpoint_id: str
    step: int | None
    bytes: int


class GrowthRecord(TypedDict):
    thread_id: str
    checkpoints: int  # of the root namespace, the ones charted
    first_bytes: int
    last_bytes: int
    bytes: int
    repeated_bytes: int
    repeated_share: float
    channel: str | None  # the channel with the most repeated bytes
    channel_repeated_share: float
    shape: Literal["growing", "flat", "too_short"]
    statement: str | None
    points: list[GrowthPoint]
    sampled: bool


class PruneEstimate(TypedDict):
    keep: int
    checkpoints: int
    writes: int
    blobs: int
    bytes: int
    share: float
    strategy: Literal["keep_latest", "keep_last"]


class PruneEstimates(TypedDict):
    keep_latest: PruneEstimate
    keep_last: PruneEstimate


class DeltaHealthRecord(TypedDict):
    thread_id: str
    channel: str
    snapshot_checkpoint_id: str | None  # the nearest ancestor holding its snapshot
    writes_to_replay: int
    updates_since_snapshot: int | None  # from counters_since_delta_snapshot
    complete: bool  # False: the walk back met a missing ancestor


class HealthRecord(TypedDict):
    """What is wrong with the store: the findings of `ckpt check` (the same scan makes
    both), and what each delta channel of a thread's newest checkpoint replays."""

    findings: list[FindingRecord]
    summary: FindingSummaryRecord
    status: Verdict
    delta_channels: list[DeltaHealthRecord]


class StatsRecord(TypedDict):
    """`ckpt stats --json` (docs/json.md, docs/stats.schema.json)."""

    store: StoreRecord
    selection: dict[str, Any]
    storage: StorageRecord
    totals: StatsTotals
    threads: list[ThreadBytesRecord]
    namespaces: list[NamespaceBytesRecord]
    channels: list[ChannelBytesRecord]
    write_channels: list[WriteChannelRecord]
    largest_checkpoints: list[LargestCheckpointRecord]
    growth: list[GrowthRecord]
    prune: PruneEstimates
    health: HealthRecord


# -- ckpt types (docs/json.md "ckpt types") ---------------------------------------------------

TypeStatus = Literal["safe", "allowlist", "blocked", "ungated", "langchain"]


class TypesStoreRecord(TypedDict):
    """Which store was scanned, and its schema era (format.md §4.1, 5.1, 6, 7)."""

    location: str
    kind: str
    era: str
    era_note: str


class TypesScannedRecord(TypedDict):
    """How much was read: rows of each part, and the serde values among them."""

    threads: int
    checkpoints: int
    blobs: int
    writes: int
    values: int
    undecodable: int


class TypeExampleRecord(TypedDict):
    """Where one occurrence of a type is stored."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None  # None: a blob no checkpoint refers to
    part: Literal["checkpoint", "blob", "write", "metadata"]
    channel: str | None
    version: NotRequired[str | None]  # blobs only


class UsesRecord(TypedDict):
    """How often a type or a global is named, where, and one place it is."""

    count: int
    threads: int
    channels: list[str]
    writes: list[str]
    elsewhere: list[str]
    example: TypeExampleRecord


class TypeUseRecord(UsesRecord):
    """One (module, class) pair the stored values name, and how LangGraph treats it."""

    module: str
    name: str
    method: str | None  # ext 3 payloads only: the method LangGraph would call
    serde: Literal["msgpack", "json"]
    ext: list[int]  # msgpack ext codes it is stored with; [] under the json tag
    lc: int | None  # json tag: the envelope's lc (1 or 2)
    status: TypeStatus
    becomes: str | None  # what strict mode gives instead when it does not rebuild it


class PickleGlobalRecord(UsesRecord):
    """A global a `pickle`-tagged value would import when LangGraph unpickles it."""

    name: str  # "module.name" as pickletools reads it


class PickleRecord(TypedDict):
    values: int
    globals: list[PickleGlobalRecord]


class TagCountRecord(TypedDict):
    """Stored values of one serde tag in one part of the store, plain and encrypted."""

    tag: str | None  # the inner tag ("msgpack" for "msgpack+aes"); None: untyped 0.1 rows
    part: Literal["checkpoints", "blobs", "writes", "metadata"]
    plain: int
    encrypted: int
    ciphers: list[str]


class VersionCountRecord(TypedDict):
    v: int | None  # None: the body was not read (encrypted, undecodable)
    checkpoints: int


class ExtCodeRecord(TypedDict):
    code: int
    count: int
    malformed: int  # payloads not of the layout the code promises


class DegradeRecord(TypedDict):
    """Values strict mode would not rebuild: what comes back instead, and how often."""

    module: str
    name: str
    method: str | None
    serde: Literal["msgpack", "json"]
    count: int
    becomes: str
    fixed_by_allowlist: bool


class AllowlistRecord(TypedDict):
    """What to give LangGraph so that strict mode rebuilds every stored class it may."""

    msgpack: list[list[str]]  # [module, name] pairs for allowed_msgpack_modules
    json: list[list[str]]  # lc:2 ids for allowed_json_modules
    pickle_fallback: bool  # pickle-tagged values need JsonPlusSerializer(pickle_fallback=True)
    python: str
    langgraph_json: dict[str, Any]


class TypesEncryptionRecord(TypedDict):
    encrypted: int  # values stored with a cipher tag (<inner>+aes)
    key: bool  # a key was given
    decrypted: int
    hidden: int  # encrypted values whose types stay unknown (no key, wrong key, other cipher)
    note: str | None


class UndecodableRecord(TypedDict):
    part: Literal["checkpoint", "blob", "write", "metadata"]
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    channel: str | None
    tag: str | None
    error: str


class TypesRecord(TypedDict):
    """`ckpt types --json`: the type census of a store (docs/json.md "ckpt types")."""

    store: TypesStoreRecord
    safe_list: str  # the LangGraph release whose SAFE_MSGPACK_TYPES the statuses follow
    scanned: TypesScannedRecord
    checkpoint_versions: list[VersionCountRecord]
    tags: list[TagCountRecord]
    ext_codes: list[ExtCodeRecord]
    types: list[TypeUseRecord]
    pickle: PickleRecord
    would_degrade: list[DegradeRecord]
    allowlist: AllowlistRecord
    encryption: TypesEncryptionRecord
    undecodable: list[UndecodableRecord]  # the first few; scanned.undecodable counts all


# -- ckpt vacuum (docs/json.md "ckpt vacuum") --------------------------------------------


# How VACUUM gives the space of deleted rows back: "file", it rewrites the database file,
# whose free pages go back to the file system (SQLite; `--into` writes the compacted copy
# elsewhere); "reuse", it makes the space of dead rows reusable by the same tables, whose
# files keep their size (Postgres: only VACUUM FULL, which locks, would shrink them).
Reclaim = Literal["file", "reuse", "memory", "compact"]


class VacuumTableRecord(TableBytesRecord):
    bloat_estimate_bytes: int  # the heap's share of dead row versions: what VACUUM reuses


class VacuumMemoryRecord(TypedDict):
    """A Redis server's memory, as INFO memory counts it: what its data takes (`used`),
    what the process holds from the system (`rss`), and the allocator's freed pages it
    has not given back yet (what MEMORY PURGE asks it to return)."""

    used_bytes: int
    rss_bytes: int
    allocator: str
    reclaimable_bytes: int  # allocator pages free but held: rss beyond what data uses


class VacuumSpaceRecord(FilePagesRecord):
    """The store as VACUUM finds or leaves it: a file, its pages and the disk room VACUUM
    needs (SQLite), or tables and their dead rows (Postgres); null where there is none."""

    disk_free_bytes: int | None
    disk_needed_bytes: int | None  # VACUUM writes a copy of the file: up to twice its size
    tables: list[VacuumTableRecord] | None
    memory: VacuumMemoryRecord | None  # Redis: its memory; null for other kinds


class VacuumStateRecord(VacuumSpaceRecord):
    """The store before or after `vacuum --apply`, as the writer saw it."""

    journal_mode: str | None  # SQLite's, from the writer's connection


class VacuumReport(VacuumSpaceRecord):
    """What a store says of VACUUM (`Store.vacuum_report`, `Writer.vacuum`): every field of
    `ckpt vacuum --json` but `store` and `applied`. The fields above are the store when
    the report was made: now for a dry run, before VACUUM once applied."""

    reclaim: Reclaim
    statement: str  # what runs: VACUUM, VACUUM INTO 'file', VACUUM (ANALYZE) tables
    into: str | None  # --into: the compacted copy's file (SQLite)
    before: VacuumStateRecord | None  # applied: the store before VACUUM
    after: VacuumStateRecord | None  # applied in place: the store after (null with --into)


def server_vacuum_report(
    reclaim: Reclaim, statement: str, tables: list[VacuumTableRecord]
) -> VacuumReport:
    """The VacuumReport of a dry run on a database server's tables (no file of its own)."""
    return {
        "reclaim": reclaim,
        "statement": statement,
        "into": None,
        **NO_PAGES,
        "disk_free_bytes": None,
        "disk_needed_bytes": None,
        "tables": tables,
        "memory": None,
        "before": None,
        "after": None,
    }


def vacuum_state(report: VacuumReport) -> VacuumStateRecord:
    """A report's space as the state before or after `vacuum --apply` (no journal)."""
    return {
        "file_bytes": report["file_bytes"],
        "page_size": report["page_size"],
        "pages": report["pages"],
        "free_pages": report["free_pages"],
        "free_bytes": report["free_bytes"],
        "wal_bytes": report["wal_bytes"],
        "disk_free_bytes": report["disk_free_bytes"],
        "disk_needed_bytes": report["disk_needed_bytes"],
        "tables": report["tables"],
        "memory": report["memory"],
        "journal_mode": None,
    }


class VacuumRecord(VacuumReport):
    """`ckpt vacuum --json` (docs/json.md, docs/vacuum.schema.json): one shape for every kind
    of store, null where a kind has no such part."""

    store: StoreRecord
    applied: bool


# -- ckpt check -----------------------------------------------------------------------------

# A finding's severity (docs/json.md "ckpt check"): "error", LangGraph cannot load a
# checkpoint or loads a state other than the one written; "warning", the store costs or
# risks something; "note", everything else worth knowing.
Severity = Literal["error", "warning", "note"]
SEVERITIES: Final[tuple[Severity, ...]] = ("error", "warning", "note")
# What a finding's `count` counts.
Unit = Literal[
    "checkpoint", "cycle", "namespace", "blob", "channel", "value", "write", "thread", "store"
]
# Every code a finding may have, in the order findings of one severity are listed.
FindingCode = Literal[
    "dangling-parent",
    "copied-checkpoint",
    "chain-mismatch",
    "two-roots",
    "cycle",
    "out-of-order",
    "id-mismatch",
    "missing-checkpoint",
    "wrong-latest",
    "orphan-subgraph",
    "pruned-history",
    "malformed-checkpoint",
    "malformed-metadata",
    "malformed-write",
    "misplaced-write",
    "malformed-blob",
    "missing-blob",
    "missing-snapshot",
    "orphan-blobs",
    "orphan-writes",
    "undecodable",
    "too-large",
    "unverified",
    "unencrypted-row",
    "unencrypted-thread",
    "encrypted-unchecked",
    "key-unused",
    "schema-migration",
    "unreadable-schema",
    "strict-msgpack",
    "pickle-values",
    "failed-thread",
    "stale-interrupt",
    "waiting",
    "quadratic-growth",
    "aggregate-too-long",
]


class PlaceRecord(TypedDict):
    """Where one occurrence of a finding is: a checkpoint, a value (channel) of one, a
    write, a blob (no checkpoint of its own: `checkpoint_id` null) or a whole thread."""

    thread_id: str
    checkpoint_ns: str | None
    checkpoint_id: str | None
    channel: str | None
    detail: str | None  # what is wrong there: the missing parent, the decoder's error ...


class FixRecord(TypedDict):
    """The ckpt command that repairs a finding, as data: the API verb (`ckpt.copy`,
    `CheckpointStore.prune`), its positional arguments and keyword options in the API's
    own words; the CLI says it as a command line. Never run by check."""

    verb: Literal["copy", "prune"]
    arguments: list[str]  # copy: [backup, store]; prune: [store]
    options: dict[str, Any]  # {"threads": [...], "on_conflict": "replace", "apply": true} ...
    placeholders: list[str]  # arguments and values the user fills in: "BACKUP", "THREAD"
    applies: bool  # whether ckpt can carry it out on this kind of store


class FindingRecord(TypedDict):
    """One kind of problem found by the scan of `ckpt check` (and of the health section of
    `ckpt stats`), with every occurrence counted and the first of them listed (a store
    with a million stays small)."""

    code: FindingCode  # stable (docs/json.md)
    severity: Severity
    unit: Unit  # what `count` counts
    reason: str  # one line
    count: int  # occurrences: checkpoints, rows, values or threads, as `unit` says
    threads: list[str]  # the first affected threads, in id order
    thread_count: int  # all of them
    places: list[PlaceRecord]  # the first occurrences
    bytes: int | None  # the bytes concerned, where that matters
    fix: FixRecord | None  # the ckpt command that repairs it (never run by check), or null


class FindingSummaryRecord(TypedDict):
    """Findings by severity."""

    error: int
    warning: int
    note: int


Verdict = Literal["error", "warning", "note", "ok"]  # the worst severity found, or "ok"


class SaverRecord(TypedDict):
    """Which saver and releases wrote the store, and what the current one does with it."""

    saver: str
    releases: str
    evidence: list[str]
    formats: list[str]  # the checkpoint format versions stored, and who writes each
    langgraph: Literal["reads", "migrates", "cannot", "unknown"]
    note: str


class CheckScannedRecord(TypedDict):
    threads: int
    checkpoints: int
    blobs: int
    writes: int
    values: int  # values decoded (bodies, blobs, writes, serde metadata)
    bytes: int


class CheckRecord(TypedDict):
    """`ckpt check --json` (docs/json.md, docs/check.schema.json)."""

    store: TypesStoreRecord
    saver: SaverRecord
    selection: dict[str, Any]
    scanned: CheckScannedRecord
    tags: list[TagCountRecord]
    encryption: TypesEncryptionRecord
    findings: list[FindingRecord]  # errors first, then warnings, then notes
    summary: FindingSummaryRecord
    status: Verdict
