"""RedisSaver stores (langgraph-checkpoint-redis 0.5, format.md §7b), read-only.

Every checkpoint is a RedisJSON document, found by its key name: through the saver's
RediSearch index when the server has it (one query per thread), else by SCAN. Key names
alone give what `threads` counts; only the documents shown are fetched (JSON.MGET), and a
checkpoint's writes are the keys of its `write_keys_zset`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Final

import orjson
import ormsgpack

from ckpt.errors import (
    BadOption,
    CopyRefused,
    NotACheckpointStore,
    NotSupported,
    StoreUnreadable,
)
from ckpt.records.model import (
    UNREADABLE_IDX,
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    ThreadBytes,
)
from ckpt.records.plans import CheckpointRow, Strategy, ThreadRows, WriteRow, recent
from ckpt.records.types import (
    NO_PAGES,
    StorageRecord,
    VacuumReport,
)
from ckpt.stores.base import Writer
from ckpt.stores.documents import BATCH, DocumentStore, Kept, ThreadInfo, in_rounds
from ckpt.stores.readahead import read_ahead
from ckpt.stores.redis.fields import (
    NAME_PATHS,
    WRITE_NAME_PATHS,
    stray_queries,
    writes_of,
)
from ckpt.stores.redis.fields import first as _first
from ckpt.stores.redis.fields import index_fields as _index_fields
from ckpt.stores.redis.fields import indexing_failures as _indexing_failures
from ckpt.stores.redis.fields import left_out_why as _left_out_why
from ckpt.stores.redis.fields import metadata as _metadata
from ckpt.stores.redis.fields import name as _name
from ckpt.stores.redis.fields import name_from_fields as _name_from_fields
from ckpt.stores.redis.fields import paths as _paths
from ckpt.stores.redis.fields import raw_checkpoint as _raw_checkpoint
from ckpt.stores.redis.fields import write_fields as _write_fields
from ckpt.stores.redis.fields import write_name_from_fields as _write_name_from_fields
from ckpt.stores.redis.keys import (
    EMPTY_NS,
    FIXED_FAMILIES,
    CheckpointName,
    WriteName,
    checkpoint_key,
    checkpoint_name,
    from_storage_id,
    js_checkpoint_key,
    latest_key,
    to_storage_id,
    write_name,
)
from ckpt.stores.redis.loading import RedisLoading
from ckpt.stores.redis.session import (
    RedisSession,
    glob_escape,
    named_keys,
    server_storage,
    thread_query,
)

PREFIX: Final = "checkpoint"
REDIS_RELEASE: Final = "langgraph-checkpoint-redis 0.5.2"  # the saver `ckpt check` speaks for
_SEARCH_PAGE: Final = 5000


class RedisStore(RedisLoading, DocumentStore):
    kind = "redis"
    label = "Redis"
    reclaim = "memory"

    def __init__(
        self,
        spec: str,
        *,
        aes_key: bytes | None = None,
        timeout: float | None = None,
        prefix: str = PREFIX,
        write_prefix: str | None = None,
    ) -> None:
        session = RedisSession(spec, timeout=timeout)
        super().__init__(session.location, aes_key=aes_key)
        self.session = session
        self._spec, self._timeout = spec, timeout  # for a fork's own connection
        # "--prefix P" or "P,W": RedisSaver's checkpoint_prefix and checkpoint_write_prefix
        # (default P_write, as "checkpoint" has "checkpoint_write").
        given, _, given_writes = prefix.partition(",")
        self.prefix = given or PREFIX
        self.write_prefix = write_prefix or given_writes or f"{self.prefix}_write"
        self.identity = session.identity(self.prefix)
        try:
            if not session.has_json:
                raise StoreUnreadable(
                    f"{self.location}: the server has no RedisJSON module, which RedisSaver "
                    "stores need (load ReJSON, or use Redis 8 or Redis Stack)"
                )
            # The saver's indexes, when the server has them: one query per thread. Python's
            # RedisSaver names them by its prefixes, LangGraph.js's by their plurals.
            python_indexes = (self.prefix, self.write_prefix)
            js_indexes = (self.prefix + "s", self.write_prefix + "s")
            self.js = False
            self.search_names = python_indexes
            if set(js_indexes) <= session.indexes and not set(python_indexes) <= session.indexes:
                self.js, self.search_names = True, js_indexes
            self.indexed = set(self.search_names) <= session.indexes
            if not self.indexed:
                first = next(self._first_key(), None)
                if first is None:
                    raise NotACheckpointStore(
                        f"{self.location}: not a RedisSaver store (no {self.prefix}:* keys "
                        "and no RediSearch index)"
                    )
                # LangGraph.js keeps has_writes as the string "true" or "false".
                # (In a pipeline: a key of another type there answers an error, not raises.)
                (answer,) = session.pipeline([("JSON.GET", first, "$.has_writes")])
                flag = _first(answer)
                self.js = isinstance(flag, str)
                why = "no RediSearch" if "search" not in session.modules else "no saver index"
                self.notices.append(
                    f"{why} on this server: ckpt finds the checkpoints by SCAN over every "
                    "key name, which is slower on a large store"
                )
        except BaseException:
            session.close()
            raise
        self._told_ignored = False
        self._read_writes: dict[CheckpointName, bool] = {}  # has_writes, for copy_write
        self._odd_keys: dict[CheckpointName, str] = {}
        # The write keys of the threads listed last (as DocumentStore keeps their checkpoint
        # keys): a scan's batch lists them for the writes and for `health`.
        self._kept_writes: Kept[tuple[str, WriteName]] = Kept()
        self._left_out: dict[str, dict[str, list[bytes]]] | None = None
        # The top-level fields each index reads and their types ("TAG", "NUMERIC" ...).
        self.index_fields: dict[str, list[tuple[str, str]]] = {}
        # How keys spell the root namespace: `__empty__`, or LangGraph.js's empty segment.
        self.root = "" if self.js else EMPTY_NS

    def _key(self, name: CheckpointName) -> str:
        """The key of the checkpoint document `name` (as found, or as the saver makes it)."""
        odd = self._odd_keys.get(name)
        if odd is not None:
            return odd
        return (
            js_checkpoint_key(self.prefix, *name) if self.js else checkpoint_key(self.prefix, *name)
        )

    def _shallow(self, name: CheckpointName) -> bool:
        """ShallowRedisSaver's one checkpoint per (thread, namespace), keyed without its id."""
        odd = self._odd_keys.get(name)
        return odd is not None and not odd.endswith(":" + name.checkpoint_id)

    def _first_key(self) -> Iterator[bytes]:
        for key in self.session.scan(glob_escape(self.prefix) + ":*"):
            yield key
            return

    @property
    def era(self) -> str:
        if self.js:
            return "js"
        self._catalog()  # reads every key name: what tells the shallow layout
        return "shallow" if any(map(self._shallow, self._odd_keys)) else "redis"

    @property
    def copy_target(self) -> bool:
        # RedisSaver's layout; not ShallowRedisSaver's nor LangGraph.js's (ckpt.stores.
        # redis.target writes the one).
        return not self.js and self.era != "shallow"

    @property
    def era_note(self) -> str:
        how = "RediSearch index" if self.indexed else "SCAN (no RediSearch index)"
        if self.js:
            return (
                "LangGraph.js RedisSaver (@langchain/langgraph-checkpoint-redis) JSON "
                f"documents and blobs, found by {how}"
            )
        saver = "ShallowRedisSaver" if self.era == "shallow" else "RedisSaver"
        return f"{saver} (langgraph-checkpoint-redis) JSON documents, found by {how}"

    def saver(self) -> SaverFacts:
        how = (
            "RediSearch indexes " + ", ".join(sorted(self.search_names))
            if self.indexed
            else ("no RediSearch index")
        )
        if self.js:
            return SaverFacts(
                saver="RedisSaver of LangGraph.js",
                releases="@langchain/langgraph-checkpoint-redis (the layout of 1.0.11)",
                evidence=("checkpoint_blob documents", how),
                langgraph="unknown",
                note="the Python RedisSaver does not read this layout; LangGraph.js's does",
            )
        shallow = self.era == "shallow"
        saver = "ShallowRedisSaver" if shallow else "RedisSaver"
        return SaverFacts(
            saver=saver,
            releases="langgraph-checkpoint-redis (the layout of 0.5.2)",
            evidence=(
                "checkpoint:{thread}:{ns}" + ("" if shallow else ":{id}") + " JSON documents",
                how,
            ),
            langgraph="reads" if self.indexed else "migrates",
            note=(
                f"{saver} of {REDIS_RELEASE} reads it"
                + ("" if self.indexed else " once its setup() creates the RediSearch indexes")
            ),
        )

    # -- key names -------------------------------------------------------------------------
    def _names(self, keys: Iterable[bytes]) -> Iterator[tuple[str, CheckpointName]]:
        """Checkpoint key names read (those that do not read are looked up)."""
        parse = partial(checkpoint_name, prefix=self.prefix, root=self.root)
        for key, name, looked_up in named_keys(
            self.session, keys, parse, NAME_PATHS, _name_from_fields
        ):
            if looked_up:
                # ShallowRedisSaver's `checkpoint:{thread}:{ns}` (no id), or a key of a
                # shape no saver writes: reached by its own name from now on.
                self._odd_keys[name] = key
            yield key, name

    def _read_catalog(self) -> dict[str, ThreadInfo]:
        """Every thread's count, namespaces and newest root id, from one pass over the key
        names (nothing fetched)."""
        threads: dict[str, ThreadInfo] = {}
        for _, name in self._names(self.session.scan(glob_escape(self.prefix) + ":*")):
            info = threads.get(name.thread_id)
            if info is None:
                info = threads[name.thread_id] = ThreadInfo()
            info.add(CheckpointKey(*name))
        return threads

    def _searchable(self, thread_id: str) -> bool:
        # A TAG splits at "," and trims spaces: such ids are found by SCAN.
        return self.indexed and "," not in thread_id and thread_id == thread_id.strip()

    def _search(self, index: str, thread_id: str) -> Iterator[bytes]:
        query = thread_query(thread_id)
        offset = 0
        while True:
            answer = self.session.execute(
                "FT.SEARCH", index, query, "NOCONTENT", "LIMIT", offset, _SEARCH_PAGE,
                "DIALECT", 2,
            )  # fmt: skip
            keys = answer[1:] if isinstance(answer, list) else []
            yield from keys
            offset += _SEARCH_PAGE
            if not keys or offset >= int(answer[0]):
                return

    def _thread_key_names(self, prefix: str, thread_id: str) -> Iterable[bytes]:
        """The key names under `prefix` of (at least) the thread: by its index (and the
        thread's documents the index left out), or SCAN."""
        if self._searchable(thread_id):
            index = self.search_names[0 if prefix == self.prefix else 1]
            left_out = self.left_out(prefix).get(thread_id, [])
            if not left_out:
                return self._search(index, thread_id)
            return [*self._search(index, thread_id), *left_out]
        return self.session.scan(f"{glob_escape(prefix)}:{glob_escape(to_storage_id(thread_id))}:*")

    def left_out(self, prefix: str) -> dict[str, list[bytes]]:
        """The documents under `prefix` that the saver's search index left out, by the
        thread their key names: a field it indexes as a TAG holding a number, an object
        or a list fails indexing, so RedisSaver (which finds checkpoints and writes only
        through the index) never reads them. Looked for only when the server counts an
        indexing failure (FT.INFO `hash_indexing_failures`, which never goes down): then
        by one SCAN of the key names against the index's own."""
        if self._left_out is None:
            self._left_out = {self.prefix: {}, self.write_prefix: {}}
            if self.indexed:
                for index, under in zip(
                    self.search_names, (self.prefix, self.write_prefix), strict=True
                ):
                    info = self.session.execute("FT.INFO", index)
                    if _indexing_failures(info):
                        self.index_fields[under] = _index_fields(info)
                        self._left_out[under] = self._unindexed(index, under)
        return self._left_out.get(prefix, {})

    def _is_left_out(self, prefix: str, name: CheckpointName) -> bool:
        keys = self.left_out(prefix).get(name.thread_id)
        return bool(keys) and self._key(name).encode("utf-8", "surrogateescape") in (keys or ())

    def _unindexed(self, index: str, prefix: str) -> dict[str, list[bytes]]:
        indexed: set[bytes] = set()
        offset = 0
        while True:
            answer = self.session.execute(
                "FT.SEARCH", index, "*", "NOCONTENT", "LIMIT", offset, _SEARCH_PAGE,
                "DIALECT", 2,
            )  # fmt: skip
            keys = answer[1:] if isinstance(answer, list) else []
            indexed.update(keys)
            offset += _SEARCH_PAGE
            if not keys or offset >= int(answer[0]):
                break
        found: dict[str, list[bytes]] = {}
        for raw in self.session.scan(glob_escape(prefix) + ":*"):
            if raw in indexed:
                continue
            key = raw.decode("utf-8", "surrogateescape")
            name: CheckpointName | WriteName | None = (
                checkpoint_name(key, prefix, self.root)
                if prefix == self.prefix
                else write_name(key, prefix, self.root)
            )
            if name is not None:
                found.setdefault(name.thread_id, []).append(raw)
        return found

    def _thread_names(self, thread_id: str) -> list[tuple[str, CheckpointName]]:
        """The thread's checkpoint keys, by (checkpoint id, namespace)."""
        return self._sorted_names(self._thread_key_names(self.prefix, thread_id), thread_id)

    def _sorted_names(
        self, keys: Iterable[bytes], thread_id: str
    ) -> list[tuple[str, CheckpointName]]:
        found = [(k, n) for k, n in self._names(keys) if n.thread_id == thread_id]
        found.sort(key=lambda item: (item[1].checkpoint_id, item[1].checkpoint_ns))
        return found

    def _thread_keys(self, thread_id: str) -> list[CheckpointKey]:
        return [CheckpointKey(*name) for _, name in self._thread_names(thread_id)]

    def _threads_keys(self, thread_ids: list[str]) -> Iterator[tuple[str, list[CheckpointKey]]]:
        """`_thread_keys` of each thread, the index searched for a run of threads in one
        round trip (each search's first page; one with more hits pages on as _search)."""
        for start in range(0, len(thread_ids), BATCH):
            run = [t for t in thread_ids[start : start + BATCH] if self._searchable(t)]
            index = self.search_names[0] if run else ""
            queries = [thread_query(t) for t in run]
            found = self.session.first_pages(index, queries, _SEARCH_PAGE)
            pages = dict(zip(run, found, strict=True))
            for thread_id in thread_ids[start : start + BATCH]:
                if thread_id not in pages:
                    yield thread_id, self._thread_keys(thread_id)
                    continue
                page = pages[thread_id]
                keys = [
                    *(self._search(index, thread_id) if page is None else page),
                    *self.left_out(self.prefix).get(thread_id, []),
                ]
                yield thread_id, [CheckpointKey(*n) for _, n in self._sorted_names(keys, thread_id)]

    def _all_keys(self) -> Iterator[CheckpointKey]:
        for _, name in self._names(self.session.scan(glob_escape(self.prefix) + ":*")):
            yield CheckpointKey(*name)

    def _load_keys(self, keys: Sequence[CheckpointKey], *, values: bool) -> list[Checkpoint]:
        return self._load_names([_name(k) for k in keys], values=values)

    # -- a dump shared between processes (analysis.fanout) ----------------------------------
    def dump_threads(self) -> list[tuple[str, int]] | None:
        # The dump's order (_selected_keys): every thread of the catalog, sorted.
        self._before_reading(DumpQuery())  # read once here: each fork has them
        catalog = self._catalog()
        return [(thread_id, catalog[thread_id].checkpoints) for thread_id in sorted(catalog)]

    def shares_reading(self) -> bool:
        return True  # no snapshot: the forks list the keys this one listed

    def fork(self) -> RedisStore:
        # Made in the worker after os.fork: its own connection, and what this store had
        # read of the key names before (a Redis read has no snapshot to share).
        other = RedisStore(
            self._spec,
            aes_key=self.aes_key,
            timeout=self._timeout,
            prefix=self.prefix,
            write_prefix=self.write_prefix,
        )
        other._catalog_cache, other._odd_keys = self._catalog_cache, self._odd_keys
        other._left_out, other.index_fields = self._left_out, self.index_fields
        return other

    def _before_reading(self, query: DumpQuery) -> None:
        """What the reading thread and this one both look up, read here first, so neither
        finds it half built: the catalog and the documents the index left out."""
        if not query.thread_ids:
            self._catalog()
        self.left_out(self.prefix)

    def _selected_names(self, query: DumpQuery) -> Iterator[list[CheckpointName]]:
        for keys in self._selected_keys(query):
            yield [_name(k) for k in keys]

    def _thread_write_names(self, thread_id: str) -> list[tuple[str, WriteName]]:
        kept = self._kept_writes.get(thread_id)
        if kept is not None:
            return kept
        return self._own_writes(thread_id, self._thread_key_names(self.write_prefix, thread_id))

    def _threads_write_names(self, thread_ids: list[str]) -> list[list[tuple[str, WriteName]]]:
        """`_thread_write_names` of a run of threads: the index searched for all of them in
        one round trip (each search's first page; one with more hits pages on)."""
        run = [t for t in thread_ids if self._kept_writes.get(t) is None and self._searchable(t)]
        index = self.search_names[1] if run else ""
        pages = self.session.first_pages(index, [thread_query(t) for t in run], _SEARCH_PAGE)
        left_out = self.left_out(self.write_prefix) if run else {}
        listed = {
            thread_id: self._own_writes(thread_id, [*page, *left_out.get(thread_id, [])])
            for thread_id, page in zip(run, pages, strict=True)
            if page is not None
        }
        return [listed[t] if t in listed else self._thread_write_names(t) for t in thread_ids]

    def _own_writes(self, thread_id: str, keys: Iterable[bytes]) -> list[tuple[str, WriteName]]:
        found = [(k, n) for k, n in self._write_names(keys) if n.thread_id == thread_id]
        found.sort(key=lambda item: item[1])
        if self._keeping:
            self._kept_writes.put(thread_id, found)
        return found

    def _forget_kept(self) -> None:
        super()._forget_kept()
        self._kept_writes.clear()

    def _write_names(self, keys: Iterable[bytes]) -> Iterator[tuple[str, WriteName]]:
        """Write key names read, as _names: a key whose thread and namespace can split
        more than one way (keys.py) is named by its document's fields."""
        parse = partial(write_name, prefix=self.write_prefix, root=self.root)
        for key, name, _ in named_keys(
            self.session, keys, parse, WRITE_NAME_PATHS, _write_name_from_fields
        ):
            yield key, name

    # -- listing ---------------------------------------------------------------------------

    # -- finding ---------------------------------------------------------------------------

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        # The saver's pointer is what its get_state() reads: the last checkpoint put
        # (LangGraph.js's keeps none).
        pointer = (
            None
            if self.js
            else self.session.execute("GET", latest_key(self.prefix, thread_id, checkpoint_ns))
        )
        if isinstance(pointer, bytes):
            name = checkpoint_name(pointer.decode("utf-8", "surrogateescape"), self.prefix)
            if name is not None and name.thread_id == thread_id:
                return CheckpointKey(*name)
        ids = [
            n.checkpoint_id
            for _, n in self._thread_names(thread_id)
            if n.checkpoint_ns == checkpoint_ns
        ]
        return CheckpointKey(thread_id, checkpoint_ns, max(ids)) if ids else None

    def latest_problems(
        self, newest: dict[tuple[str, str], str], *, settle: float = 0.0
    ) -> list[tuple[str, str, str, str]]:
        # RedisSaver's get_tuple without an id reads `checkpoint_latest:{thread}:{ns}` and
        # the document it names: none, or another, is what it resumes from.
        if self.js or not newest or self.era == "shallow":
            return []
        found: list[tuple[str, str, str, str]] = []
        behind = self._pointers(sorted(newest), newest, found, live=True)
        if behind:
            time.sleep(settle)  # put() sets the pointer after the document
            self._pointers(behind, newest, found, live=False)
        return found

    def _pointers(
        self,
        pairs: list[tuple[str, str]],
        newest: dict[tuple[str, str], str],
        found: list[tuple[str, str, str, str]],
        *,
        live: bool,
    ) -> list[tuple[str, str]]:
        """Adds to `found` the (thread, ns) whose pointer is wrong; returns those (`live`)
        one step behind a recent checkpoint, to ask again."""
        behind: list[tuple[str, str]] = []
        now = dt.datetime.now(dt.UTC)
        for start in range(0, len(pairs), 500):
            batch = pairs[start : start + 500]
            answers = self.session.pipeline(
                [("GET", latest_key(self.prefix, thread_id, ns)) for thread_id, ns in batch]
            )
            for (thread_id, ns), answer in zip(batch, answers, strict=True):
                checkpoint_id = newest[thread_id, ns]
                if isinstance(answer, bytes):
                    pointer = answer.decode("utf-8", "surrogateescape")
                    if pointer == self._key(CheckpointName(thread_id, ns, checkpoint_id)):
                        continue
                    named = checkpoint_name(pointer, self.prefix, self.root)
                    if (
                        live
                        and named is not None
                        and (named.thread_id, named.checkpoint_ns) == (thread_id, ns)
                        and named.checkpoint_id < checkpoint_id
                        and recent(checkpoint_id, now)
                    ):
                        behind.append((thread_id, ns))
                        continue
                    said = f"the saver's latest pointer names {pointer[:80]!r}"
                elif answer is None:
                    said = "the saver's latest pointer is gone"
                else:
                    said = "the saver's latest pointer is not a string"
                found.append((thread_id, ns, checkpoint_id, said))
        return behind

    # -- loading ---------------------------------------------------------------------------

    # -- sizes, storage, health ------------------------------------------------------------
    # A pass that counts sizes from its rows (`check`) has each document's memory asked
    # with it (`_documents`), in the same round trips, not in a listing of its own.
    sizes_from_rows = True

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        # The documents of a run of BATCH threads measured in one round trip (or a few).
        found: dict[str, ThreadBytes] = {}
        selected = self._selected_names(query)
        while run := list(islice(selected, BATCH)):
            writes = [
                [k for k, _ in writes_of(names, listed)]
                for names, listed in zip(run, self._run_write_names(run), strict=True)
            ]
            keys = [[self._key(n) for n in names] for names in run]
            flat = [k for pair in zip(keys, writes, strict=True) for part in pair for k in part]
            memory = iter(self.session.memory(flat))
            for names, thread_writes in zip(run, writes, strict=True):
                measured = found[names[0].thread_id] = ThreadBytes()
                measured.checkpoints, measured.writes = len(names), len(thread_writes)
                measured.checkpoint_bytes = sum(next(memory) for _ in names)
                measured.write_bytes = sum(next(memory) for _ in thread_writes)
        return found

    def _run_write_names(
        self, run: list[list[CheckpointName]]
    ) -> list[list[tuple[str, WriteName]]]:
        return self._threads_write_names([names[0].thread_id for names in run])

    def storage(self) -> StorageRecord:
        families = {self.prefix, self.write_prefix, f"{self.prefix}_latest", *FIXED_FAMILIES}
        note = "" if self.indexed else "no RediSearch index: read by SCAN"
        return server_storage(
            self.session, families, product="Redis", indexed=self.indexed, note=note
        )

    def _parents(self, keys: list[CheckpointKey]) -> dict[CheckpointKey, str | None]:
        names = [_name(k) for k in keys]
        answers = self.session.pipeline(
            [("JSON.GET", self._key(n), "$.parent_checkpoint_id") for n in names]
        )
        found: dict[CheckpointKey, str | None] = {}
        for key, name, answer in zip(keys, names, answers, strict=True):
            parent = _first(answer)
            # ShallowRedisSaver keeps no parent: not a missing one.
            shallow = self._shallow(name)
            found[key] = (
                from_storage_id(parent) if isinstance(parent, str) and not shallow else None
            )
        return found

    def _write_keys(self, thread_id: str) -> list[CheckpointKey]:
        return [
            CheckpointKey(w.thread_id, w.checkpoint_ns, w.checkpoint_id)
            for _, w in self._thread_write_names(thread_id)
        ]

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        # Each round's documents read (a thread of their own) while the one before is checked.
        self._before_reading(query)
        rounds = (
            (batch, self._documents([self._key(n) for n in batch]))
            for batch in in_rounds(self._selected_names(query))
        )
        for batch, found in read_ahead(rounds):
            yield from self._raw_checkpoints(batch, found, data=data)

    def _raw_checkpoints(
        self,
        batch: list[CheckpointName],
        found: Sequence[tuple[bytes | None, int | None]],
        *,
        data: bool,
    ) -> Iterator[RawCheckpoint]:
        for name, (text, measured) in zip(batch, found, strict=True):
            if text is None:
                continue
            raw = _raw_checkpoint(name, text, data=data, measured=measured)
            if raw.misfiled is None and self._is_left_out(self.prefix, name):
                why = _left_out_why(text, self.index_fields[self.prefix])
                raw = dataclasses.replace(raw, misfiled=why)
            yield raw

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        # A run of BATCH threads at a time: their listings, stray searches and documents
        # read in a few round trips, not a few for each thread; the next documents read (a
        # thread of their own) while these are checked.
        self._before_reading(query)
        self.left_out(self.write_prefix)
        for batch, found in read_ahead(self._write_documents(query)):
            for (thread_id, key, w, counted), (text, memory) in zip(batch, found, strict=True):
                left_out = self.left_out(self.write_prefix).get(thread_id, ())
                if text is None:
                    continue
                measured = None if memory is None else memory if counted else 0
                if left_out and key.encode("utf-8", "surrogateescape") in left_out:
                    # Never read by RedisSaver: lost to the checkpoint its key names.
                    why = _left_out_why(text, self.index_fields[self.write_prefix])
                    raw = _write_fields(text).raw(
                        CheckpointKey(*w[:3]), data=data, measured=measured
                    )
                    yield dataclasses.replace(raw, misfiled=why)
                    continue
                fields = _write_fields(text, CheckpointKey(*w[:3]), root=self.root)
                if (
                    not self.js
                    and fields.home is None
                    and fields.misfiled is None
                    and fields.idx != UNREADABLE_IDX
                    and fields.idx != w.idx
                ):
                    # RedisSaver keys a write by the index it stores in it.
                    why = f"its `idx` is {fields.idx}, its key says {w.idx}"
                    fields = dataclasses.replace(fields, misfiled=why)
                yield fields.raw(CheckpointKey(*w[:3]), data=data, measured=measured)

    def _write_documents(
        self, query: DumpQuery
    ) -> Generator[
        tuple[list[tuple[str, str, WriteName, bool]], Sequence[tuple[bytes | None, int | None]]],
        None,
        None,
    ]:
        """`raw_writes`' round trips: each batch of (thread, key, name, counted in `sizes`)
        with its documents."""
        selected = self._selected_names(query)
        while run := list(islice(selected, BATCH)):
            keyed_run = []
            for names, listed in zip(run, self._run_write_names(run), strict=True):
                keyed = writes_of(names, listed)
                keyed.sort(key=lambda item: (item[1].checkpoint_ns, item[1].checkpoint_id))
                keyed_run.append(keyed)
            strays = self._strays(run, [{key for key, _ in keyed} for keyed in keyed_run])
            # (`sizes` counts a thread's own writes, not the strays.)
            flat = [
                (names[0].thread_id, key, w, counted)
                for names, keyed, more in zip(run, keyed_run, strays, strict=True)
                for (key, w), counted in (*((k, True) for k in keyed), *((k, False) for k in more))
            ]
            for start in range(0, len(flat), BATCH):
                batch = flat[start : start + BATCH]
                yield batch, self._documents([key for _, key, _, _ in batch])

    def _documents(self, keys: list[str]) -> Sequence[tuple[bytes | None, int | None]]:
        """The documents at `keys` as JSON text, each with its JSON.DEBUG MEMORY (as
        `sizes` counts it) in a pass that measures (one_pass(measure=True)), else None."""
        if self._measuring:
            return self.session.measured_documents(keys)
        return [(text, None) for text in self.session.json_mget(keys)]

    def _strays(
        self, run: list[list[CheckpointName]], seen: list[set[str]]
    ) -> list[list[tuple[str, WriteName]]]:
        """For each thread of a run, the write documents naming its checkpoint ids under
        another thread (moved, or their thread_id changed): RedisSaver finds writes by
        those fields, so these are lost to the checkpoints they name. Found by the index,
        50 ids a search, the run's searches in one round trip."""
        if not self.indexed:
            return [[] for _ in run]
        queries = stray_queries(run)
        hits = self.session.hits(self.search_names[1], [q for _, q in queries], _SEARCH_PAGE)
        found: list[list[tuple[str, WriteName]]] = [[] for _ in run]
        for (at, _), keys in zip(queries, hits, strict=True):
            found[at].extend((k, n) for k, n in self._write_names(keys) if k not in seen[at])
        return found

    # -- prune (ckpt.stores.redis.writer) -----------------------------------------------
    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        super().check_prune(strategy, backup=backup)
        if self.js or self.era == "shallow":
            raise NotSupported(
                f"{self.location}: prune works on RedisSaver's layout, not "
                + ("LangGraph.js's" if self.js else "ShallowRedisSaver's (one checkpoint each)")
            )

    def _prune_rows(self, thread_id: str) -> ThreadRows:
        from ckpt.decoders.spans import body_layout
        from ckpt.stores.prune_rows import metadata_facts

        names = self._thread_names(thread_id)
        checkpoints = []
        for start in range(0, len(names), BATCH):
            batch = names[start : start + BATCH]
            for (_, name), text in zip(
                batch, self.session.json_mget([k for k, _ in batch]), strict=True
            ):
                if text is None:
                    continue
                try:
                    doc = orjson.loads(text)
                except orjson.JSONDecodeError:
                    doc = None
                doc = doc if isinstance(doc, dict) else {}
                body = doc.get("checkpoint")
                layout = body_layout("json", orjson.dumps(body)) if isinstance(body, dict) else None
                root, delta, js_delta = metadata_facts(_metadata(doc.get("metadata")))
                parent = doc.get("parent_checkpoint_id")
                checkpoints.append(
                    CheckpointRow(
                        checkpoint_ns=name.checkpoint_ns,
                        checkpoint_id=name.checkpoint_id,
                        parent_id=from_storage_id(parent) or None
                        if isinstance(parent, str)
                        else None,
                        v=layout.v if layout else None,
                        root_id=root,
                        delta_channels=delta,
                        values=frozenset(layout.values) if layout else None,
                        versions={},
                        size=len(text),
                        js_delta=js_delta,
                    )
                )
        writes = []
        keyed = self._thread_write_names(thread_id)
        for start in range(0, len(keyed), BATCH):
            chunk = keyed[start : start + BATCH]
            answers = self.session.pipeline(
                [("JSON.GET", key, "$.channel", "$.blob") for key, _ in chunk]
            )
            for (_, wname), answer in zip(chunk, answers, strict=True):
                fields = _paths(answer)
                channel, blob = fields.get("$.channel"), fields.get("$.blob")
                writes.append(
                    WriteRow(
                        wname.checkpoint_ns,
                        wname.checkpoint_id,
                        channel if isinstance(channel, str) else "",
                        len(blob) if isinstance(blob, str) else 0,
                    )
                )
        return ThreadRows(thread_id, checkpoints, writes)

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        """What Redis can give back: a deleted key's memory is free at once; the allocator
        may hold the freed pages (rss beyond used), which MEMORY PURGE asks it to return
        (jemalloc does; another allocator gives nothing back, and the report says so)."""
        if into is not None:
            raise BadOption("`into` is for SQLite stores")
        info = self.session.execute("INFO", "memory")
        info = info if isinstance(info, dict) else {}
        used, rss = int(info.get("used_memory", 0)), int(info.get("used_memory_rss", 0))
        allocator = str(info.get("mem_allocator", "unknown"))
        return {
            "reclaim": "memory",
            "statement": "MEMORY PURGE",
            "into": None,
            **NO_PAGES,
            "disk_free_bytes": None,
            "disk_needed_bytes": None,
            "tables": None,
            "memory": {
                "used_bytes": used,
                "rss_bytes": rss,
                "allocator": allocator,
                "reclaimable_bytes": max(rss - used, 0) if allocator.startswith("jemalloc") else 0,
            },
            "before": None,
            "after": None,
        }

    def writer(self, *, timeout: float | None) -> Writer:
        from ckpt.stores.redis.writer import RedisWriter

        return RedisWriter(self)

    reencodes = True

    def check_copy(
        self, *, renumber_versions: bool = False, counted_versions: bool = False
    ) -> None:
        if self.js:
            raise NotSupported(
                f"{self.location}: copy reads Python's RedisSaver layout, not LangGraph.js's"
            )
        if self.era == "shallow":
            raise NotSupported(
                f"{self.location}: copy reads RedisSaver's layout, not ShallowRedisSaver's "
                "(one checkpoint per namespace, no parents)"
            )

    def copy_checkpoint(self, row: RawCheckpoint) -> RawCheckpoint:
        """The checkpoint as SqliteSaver would store what RedisSaver reads from it: a
        msgpack body in LangGraph's field order, its values encoded again
        (ckpt.stores.redis.reencode); `type` and the `pending_sends` RedisSaver adds gone."""
        from ckpt.stores.redis.reencode import reencode_value
        from ckpt.stores.transfer import _pack_map

        where = f"checkpoint {row.checkpoint_id}"
        try:
            body = orjson.loads(row.body)
        except orjson.JSONDecodeError:
            raise CopyRefused(f"{where}: its document is not JSON") from None
        if not isinstance(body, dict):
            raise CopyRefused(f"{where}: its document holds no checkpoint")
        entries: list[tuple[str, bytes]] = []
        legacy = not isinstance(body.get("v"), int) or body["v"] < 4
        for key, value in body.items():
            if key == "type" or (key == "pending_sends" and not legacy):
                continue
            if key == "channel_values" and isinstance(value, dict):
                values = [
                    (channel, reencode_value(v, f"{where}: channel {channel!r}",
                                             channel_values=True))
                    for channel, v in value.items()
                ]  # fmt: skip
                entries.append((key, _pack_map(values)))
            else:
                entries.append((key, ormsgpack.packb(value)))
        packed = _pack_map(entries)
        return dataclasses.replace(row, type="msgpack", body=packed, body_size=len(packed))

    def copy_write(self, write: RawWrite) -> RawWrite | None:
        """The write as LangGraph's serializer writes what RedisSaver's `loads_typed`
        reads from its JSON; `msgpack`, `bytes` and `null` values are carried as stored."""
        from ckpt.stores.redis.reencode import reencode_value

        at = CheckpointName(write.thread_id, write.checkpoint_ns, write.checkpoint_id)
        if at not in self._read_writes:
            (answer,) = self.session.pipeline([("JSON.GET", self._key(at), "$.has_writes")])
            self._read_writes[at] = _first(answer) in (True, "true")
        if not self._read_writes[at]:
            return None  # RedisSaver never reads it (format.md §7b): nor does the copy
        if write.type != "json" or write.data is None:
            return write
        where = f"a pending write of checkpoint {write.checkpoint_id} (channel {write.channel!r})"
        try:
            value = orjson.loads(write.data)
        except orjson.JSONDecodeError:
            raise CopyRefused(f"{where} is not JSON") from None
        if value is None:
            return dataclasses.replace(write, type="null", data=b"", size=0)
        data = reencode_value(value, where, channel_values=False)
        return dataclasses.replace(write, type="msgpack", data=data, size=len(data))

    def close(self) -> None:
        self.session.close()


# -- documents -------------------------------------------------------------------------------
