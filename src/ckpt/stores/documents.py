"""What the document stores share (Redis, MongoDB): one document per checkpoint, found by
thread. A kind of such store says how to count its threads (`_catalog`), list a thread's
checkpoints (`_thread_keys`) and load some (`_load_keys`); listing, finding, dumping and
refusing changes are the same for all of them, here."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from ckpt.errors import BadOption, NotFound, NotSupported
from ckpt.records.model import (
    UNREADABLE_IDX,
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawWrite,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
)
from ckpt.records.vocabulary import FIND_LIMIT
from ckpt.stores.base import Store, Writer
from ckpt.stores.body import checkpoint_from_body

if TYPE_CHECKING:
    from ckpt.records.plans import Strategy, ThreadRows
    from ckpt.records.types import VacuumReport

BATCH: Final = 200  # threads, or checkpoints, loaded per round of queries
# Checkpoint keys of the threads listed last, kept for the next listing of the same threads
# (a scan's batch lists its threads for the checkpoints, the writes and `health`): at most
# as many as a scan's batch reads (ckpt.scan.rows.BATCH_ROWS), so memory stays flat.
KEPT_KEYS: Final = 20_000
T = TypeVar("T")


@dataclass(slots=True)
class ThreadInfo:
    """One thread in a listing's catalog: kept small, one per thread of the store."""

    checkpoints: int = 0
    subgraphs: set[str] | None = None  # namespaces besides the root, when there are any
    root: bool = False  # has root checkpoints
    latest_root: str | None = None  # the newest root checkpoint id

    @property
    def namespaces(self) -> set[str]:
        return ({""} if self.root else set()) | (self.subgraphs or set())

    def add(self, key: CheckpointKey) -> None:
        """Count one checkpoint of the thread."""
        self.checkpoints += 1
        if key.checkpoint_ns:
            if self.subgraphs is None:
                self.subgraphs = set()
            self.subgraphs.add(key.checkpoint_ns)
        else:
            self.root = True
            if self.latest_root is None or key.checkpoint_id > self.latest_root:
                self.latest_root = key.checkpoint_id


@dataclass(frozen=True, slots=True)
class WriteFields:
    """One stored write's fields, as its document holds them (value still encoded)."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    data: bytes | None
    size: int
    # The (thread, namespace, checkpoint id) the document itself names, where the saver
    # finds writes by those fields (RedisSaver searches them): None when they agree with
    # the key it is stored under.
    home: tuple[str, str, str] | None = None
    # Why the saver never finds the document where its key files it (a RedisSaver write
    # whose `checkpoint_ns` is not spelled as the saver spells it): None when it does.
    misfiled: str | None = None

    @classmethod
    def judged(cls, doc: dict[str, Any], data: bytes | None) -> WriteFields:
        """A write document's own fields (RedisSaver's JSON, MongoDBSaver's BSON), its
        value `data`: a task id or channel of another type is what LangGraph gets, judged
        as such; an idx that is not a number sorts last (UNREADABLE_IDX)."""
        idx = doc.get("idx")
        task_id, channel = doc.get("task_id"), doc.get("channel")
        return cls(
            task_id=task_id if isinstance(task_id, str) else "",
            task_path=str(doc.get("task_path", "")),
            idx=idx if type(idx) is int else UNREADABLE_IDX,
            channel=channel if isinstance(channel, str) else "",
            type=serde_tag(doc),
            data=data,
            size=len(data) if data is not None else 0,
        )

    def pending(self, value: Any) -> PendingWrite:
        return PendingWrite.of(self, value)

    def raw(self, key: CheckpointKey, *, data: bool, measured: int | None = None) -> RawWrite:
        thread_id, ns, checkpoint_id = self.home or (
            key.thread_id,
            key.checkpoint_ns,
            key.checkpoint_id,
        )
        return RawWrite(
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint_id,
            task_id=self.task_id,
            idx=self.idx,
            channel=self.channel,
            type=self.type,
            data=self.data if data else None,
            size=self.size,
            task_path=self.task_path,
            misfiled=self.misfiled,
            measured=measured,
        )


def parent_id(doc: dict[str, Any]) -> str | None:
    """The parent a checkpoint document names (`parent_checkpoint_id`); None for none, an
    empty one or one of another type."""
    parent = doc.get("parent_checkpoint_id")
    return parent if isinstance(parent, str) and parent else None


def serde_tag(doc: dict[str, Any]) -> str | None:
    """The serde tag a document names (`type`); None for none or one of another type."""
    tag = doc.get("type")
    return tag if isinstance(tag, str) else None


def refuse_int_versions(
    location: str, saver: str, *, renumber_versions: bool, counted_versions: bool = False
) -> None:
    """`copy` from a saver that counts channel versions 1, 2, 3 (LangGraph's default
    get_next_version): SqliteSaver and PostgresSaver cannot resume a thread from those
    (format.md 3.4), so the copy needs `renumber_versions`, unless the target counts
    them too (`counted_versions`: MongoDBSaver, RedisSaver)."""
    if not renumber_versions and not counted_versions:
        raise NotSupported(
            f"{location}: {saver} counts channel versions 1, 2, 3, and "
            "SqliteSaver and PostgresSaver cannot resume a thread from those (format.md "
            "3.4): pass `renumber_versions=True` to write them in their format"
        )


def catalog_threads(
    catalog: dict[str, ThreadInfo],
    measured: dict[str, ThreadBytes],
    load: Callable[[list[CheckpointKey]], list[Checkpoint]],
    *,
    sizes: bool,
    batch: int,
) -> Iterator[ThreadSummary]:
    """`threads` from a catalog of threads (in thread order): their sizes from `measured`
    (with `sizes`), their latest root checkpoints loaded `batch` threads at a time by
    `load` (without values)."""
    thread_ids = sorted(catalog)
    for start in range(0, len(thread_ids), batch):
        chunk = thread_ids[start : start + batch]
        keys = [
            CheckpointKey(t, "", root)
            for t in chunk
            if (root := catalog[t].latest_root) is not None
        ]
        latest = {c.thread_id: c for c in load(keys)}
        for thread_id in chunk:
            info = catalog[thread_id]
            found = measured.get(thread_id)
            yield ThreadSummary(
                thread_id=thread_id,
                namespaces=sorted(info.namespaces),
                checkpoints=info.checkpoints,
                writes=found.writes if found is not None else (0 if sizes else None),
                size=found.total if found is not None else (0 if sizes else None),
                latest=latest.get(thread_id),
            )


def catalog_count(catalog: dict[str, ThreadInfo], query: DumpQuery) -> int | None:
    """How many checkpoints a dump of the whole store reads, from the thread catalog; None
    for a narrower query (counting it would read what the dump reads)."""
    if query.thread_ids or query.checkpoint_ns is not None or query.since_id or query.until_id:
        return None
    if query.latest_only:
        return sum(len(info.namespaces) for info in catalog.values())
    return sum(info.checkpoints for info in catalog.values())


def newest_per_namespace(keys: list[CheckpointKey]) -> list[CheckpointKey]:
    """The last key of each namespace among `keys` (sorted oldest first)."""
    newest: dict[str, CheckpointKey] = {}
    for key in keys:
        newest[key.checkpoint_ns] = key
    return list(newest.values())


def in_rounds(groups: Iterable[list[T]]) -> Iterator[list[T]]:
    """The items of `groups` (each thread's keys or names, in thread order) in rounds of
    BATCH across groups: a store of short threads is read in rounds of BATCH checkpoints,
    not one (or two) per thread."""
    batch: list[T] = []
    for group in groups:
        batch.extend(group)
        while len(batch) >= BATCH:
            yield batch[:BATCH]
            del batch[:BATCH]
    if batch:
        yield batch


def key_order(key: CheckpointKey) -> tuple[str, str, str]:
    return (key.thread_id, key.checkpoint_ns, key.checkpoint_id)


class Kept(Generic[T]):
    """Lists of the threads listed last (oldest first), KEPT_KEYS items in all at most."""

    def __init__(self) -> None:
        self.lists: dict[str, list[T]] = {}
        self.count = 0

    def get(self, thread_id: str) -> list[T] | None:
        return self.lists.get(thread_id)

    def put(self, thread_id: str, items: list[T]) -> None:
        if len(items) > KEPT_KEYS:
            return
        while self.lists and self.count + len(items) > KEPT_KEYS:
            self.count -= len(self.lists.pop(next(iter(self.lists))))
        self.lists[thread_id] = items
        self.count += len(items)

    def clear(self) -> None:
        self.lists.clear()
        self.count = 0


class DocumentStore(Store):
    label: ClassVar[str]  # "Redis", "MongoDB": for messages
    raw_writes_complete = False  # writes are found through their checkpoints' keys
    # The saver, when it keeps LangGraph's default get_next_version (channel versions 1, 2,
    # 3: MongoDBSaver, DynamoDBSaver), which `copy` renumbers for SqliteSaver and
    # PostgresSaver (refuse_int_versions); None when its versions need no renumbering.
    int_versions_saver: ClassVar[str | None] = None

    def __init__(self, location: str, *, aes_key: bytes | None = None) -> None:
        super().__init__(location, aes_key=aes_key)
        self._catalog_cache: dict[str, ThreadInfo] | None = None
        self._kept_keys: Kept[CheckpointKey] = Kept()  # in one_pass
        self._keeping = False
        self._measuring = False  # in one_pass(measure=True)

    # -- what each kind says ---------------------------------------------------------------
    @abstractmethod
    def _read_catalog(self) -> dict[str, ThreadInfo]:
        """Every thread's count, namespaces and newest root id, as cheaply as the store
        can say it."""

    @abstractmethod
    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        """The thread's checkpoints, by (checkpoint id, namespace)."""

    @abstractmethod
    def _all_keys(self) -> Iterator[CheckpointKey]:
        """Every checkpoint's key, in no order (what `find` without a thread reads)."""

    @abstractmethod
    def _load_keys(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Checkpoint]:
        """The checkpoints at `keys`, in that order, with their writes; missing ones left
        out."""

    @abstractmethod
    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        """The parent id each of one thread's checkpoints names (None: none, or a layout
        that keeps none, as a shallow saver's)."""

    @abstractmethod
    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        """The checkpoint each of the thread's stored writes belongs to (one per write)."""

    def _threads_write_keys(self, thread_ids: list[str]) -> dict[str, list[CheckpointKey]]:
        """`_write_keys` of each of a run of threads (a store may read them at once)."""
        return {thread_id: self._write_keys(thread_id) for thread_id in thread_ids}

    def _checkpoint(
        self,
        key: CheckpointKey,
        parent: str | None,
        tag: str | None,
        body: bytes,
        metadata: dict[str, Any],
        writes: list[PendingWrite],
        *,
        values: bool,
        size: int,
    ) -> Checkpoint:
        """A checkpoint document's body decoded as its saver loads it: a damaged one marked,
        not raised; its writes in the order the document keeps them."""
        return checkpoint_from_body(
            key,
            parent,
            tag,
            body,
            metadata,
            writes=writes,
            values=values,
            aes_key=self.aes_key,
            size=size,
            tolerant=True,
            keeps_order=True,
        )

    def check_copy(
        self, *, renumber_versions: bool = False, counted_versions: bool = False
    ) -> None:
        if self.int_versions_saver is not None:
            refuse_int_versions(
                self.location,
                self.int_versions_saver,
                renumber_versions=renumber_versions,
                counted_versions=counted_versions,
            )

    def change_token(self) -> Hashable | None:
        # The server cannot say cheaply whether anything changed: every poll reads, with
        # the thread catalog read again (a new thread, a new latest checkpoint).
        self._catalog_cache = None
        return None

    @contextmanager
    def one_pass(self, *, measure: bool = False) -> Iterator[None]:
        self._forget_kept()
        self._keeping, self._measuring = True, measure
        try:
            yield
        finally:
            self._keeping = self._measuring = False
            self._forget_kept()

    def _forget_kept(self) -> None:
        self._kept_keys.clear()

    def _catalog(self) -> dict[str, ThreadInfo]:
        if self._catalog_cache is None:
            self._catalog_cache = self._read_catalog()
        return self._catalog_cache

    # -- listing ---------------------------------------------------------------------------
    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        catalog = self._catalog()
        measured = self.sizes(DumpQuery()) if sizes else {}
        load = partial(self._load_keys, values=False)
        yield from catalog_threads(catalog, measured, load, sizes=sizes, batch=BATCH)

    def thread_counts(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        if not self.sizes_from_rows:
            return self.sizes(query)
        catalog = self._catalog()
        thread_ids = sorted(set(query.thread_ids)) if query.thread_ids else sorted(catalog)
        return {
            t: ThreadBytes(checkpoints=catalog[t].checkpoints if t in catalog else 0)
            for t in thread_ids
        }

    def thread_exists(self, thread_id: str) -> bool:
        if self._catalog_cache is not None:
            return thread_id in self._catalog_cache
        return bool(self._thread_keys(thread_id))

    def thread_ids(self) -> list[str]:
        return sorted(self._catalog())

    def namespaces(self, thread_id: str) -> list[str]:
        return sorted({k.checkpoint_ns for k in self._thread_keys(thread_id)})

    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        keys = self._thread_keys(thread_id)
        if last is not None:
            keys = keys[-last:] if last > 0 else []
        return self._load_keys(keys, values=values)

    def iter_thread(self, thread_id: str) -> Iterator[Checkpoint]:
        keys = self._thread_keys(thread_id)
        for start in range(0, len(keys), BATCH):
            yield from self._load_keys(keys[start : start + BATCH], values=False)

    # -- finding ---------------------------------------------------------------------------
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        keys = iter(self._thread_keys(thread_id)) if thread_id is not None else self._all_keys()
        found: list[CheckpointKey] = []
        for key in keys:
            if key.checkpoint_id.startswith(fragment) or key.checkpoint_id.endswith(fragment):
                found.append(key)
                if len(found) >= FIND_LIMIT:
                    break
        return sorted(found, key=key_order)

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        keys = [k for k in self._thread_keys(thread_id) if k.checkpoint_ns == checkpoint_ns]
        return max(keys, key=lambda k: k.checkpoint_id) if keys else None

    # -- loading ---------------------------------------------------------------------------
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        found = self._load_keys([key], values=values)
        if not found:
            raise NotFound(
                f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}"
                + (f" namespace {key.checkpoint_ns!r}" if key.checkpoint_ns else "")
            )
        return found[0]

    def load_many(self, keys: Sequence[CheckpointKey], *, values: bool = True) -> list[Checkpoint]:
        return self._load_keys(keys, values=values)

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        return catalog_count(self._catalog(), query)

    def _selected_keys(self, query: DumpQuery) -> Iterator[list[CheckpointKey]]:
        """The query's checkpoints, a thread at a time, in (thread, ns, id) order."""
        thread_ids = sorted(set(query.thread_ids)) if query.thread_ids else sorted(self._catalog())
        for _, thread_keys in self._listed_keys(thread_ids):
            keys = [
                k
                for k in thread_keys
                if (query.checkpoint_ns is None or k.checkpoint_ns == query.checkpoint_ns)
                and (query.since_id is None or k.checkpoint_id >= query.since_id)
                and (query.until_id is None or k.checkpoint_id <= query.until_id)
            ]
            keys.sort(key=key_order)
            if query.latest_only:
                keys = newest_per_namespace(keys)
            if keys:
                yield keys

    def _listed_keys(self, thread_ids: list[str]) -> Iterator[tuple[str, list[CheckpointKey]]]:
        """`_threads_keys`; in one_pass, the threads listed last (KEPT_KEYS) not listed
        again."""
        if not self._keeping:
            yield from self._threads_keys(thread_ids)
            return
        kept = {t: keys for t in thread_ids if (keys := self._kept_keys.get(t)) is not None}
        listed = self._threads_keys([t for t in thread_ids if t not in kept])
        for thread_id in thread_ids:
            keys = kept.get(thread_id)
            if keys is None:
                listed_id, keys = next(listed)
                assert listed_id == thread_id
                self._kept_keys.put(thread_id, keys)
            yield thread_id, keys

    def _threads_keys(self, thread_ids: list[str]) -> Iterator[tuple[str, list[CheckpointKey]]]:
        """`_thread_keys` of each thread, in that order (a store may read several at once)."""
        for thread_id in thread_ids:
            yield thread_id, self._thread_keys(thread_id)

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        for batch in in_rounds(self._selected_keys(query)):
            yield from self._load_keys(batch, values=values)

    def orphan_writes(self, query: DumpQuery) -> StoreHealth:
        return self._health(query, parents=False)

    def health(self, query: DumpQuery) -> StoreHealth:
        return self._health(query, parents=True)

    def _health(self, query: DumpQuery, *, parents: bool) -> StoreHealth:
        """`health`; without `parents`, only its orphan writes (no parent read)."""
        health = StoreHealth()
        parents_missing: list[CheckpointKey] = []
        orphans: list[CheckpointKey] = []
        selected = self._selected_keys(DumpQuery(thread_ids=query.thread_ids))
        for keys, write_keys in self._with_write_keys(selected):
            thread_id = keys[0].thread_id
            by_ns: dict[str, set[str]] = {}
            for key in keys:
                by_ns.setdefault(key.checkpoint_ns, set()).add(key.checkpoint_id)
            health.namespaces.extend((thread_id, ns) for ns in sorted(by_ns))
            oldest = {ns: min(ids) for ns, ids in by_ns.items()}
            named = self._parents(keys) if parents else {}
            for key in keys:
                parent = named.get(key)
                if parent and parent not in by_ns[key.checkpoint_ns]:
                    parents_missing.append(key)
                    if key.checkpoint_id == oldest[key.checkpoint_ns]:
                        health.missing_parent_oldest += 1
            orphans.extend(
                key
                for key in write_keys
                if key.checkpoint_id not in by_ns.get(key.checkpoint_ns, ())
            )
        health.missing_parents = len(parents_missing)
        health.missing_parent_threads = len({k.thread_id for k in parents_missing})
        health.missing_parent_examples = parents_missing[:5]
        health.orphan_writes = len(orphans)
        health.orphan_write_threads = len({k.thread_id for k in orphans})
        health.orphan_write_examples = sorted(set(orphans), key=key_order)[:5]
        return health

    def _with_write_keys(
        self, selected: Iterator[list[CheckpointKey]]
    ) -> Iterator[tuple[list[CheckpointKey], list[CheckpointKey]]]:
        """Each thread's keys with its `_write_keys`, those read for BATCH threads at once."""
        while run := list(islice(selected, BATCH)):
            found = self._threads_write_keys([keys[0].thread_id for keys in run])
            for keys in run:
                yield keys, found[keys[0].thread_id]

    # -- changing it: prune (ckpt.stores.{mongo,redis}.writer), vacuum -------------------
    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        if backup:
            raise BadOption(f"{self.location}: `backup` is for SQLite stores")

    def thread_rows(self, thread_id: str) -> ThreadRows:
        return self._prune_rows(thread_id)

    def _prune_rows(self, thread_id: str) -> ThreadRows:
        raise NotSupported(f"{self.location}: prune is not supported on {self.label} stores yet")

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        raise NotSupported(f"{self.location}: vacuum is not supported on {self.label} stores yet")

    def writer(self, *, timeout: float | None) -> Writer:
        raise NotSupported(
            f"{self.location}: prune and vacuum are not supported on {self.label} stores yet"
        )
