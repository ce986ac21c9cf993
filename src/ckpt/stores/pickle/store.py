"""Read InMemorySaver's PersistentDict pickles: the `langgraph dev` folder and single files."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from ckpt.decoders import ABSENT, decode, is_marked, undecodable_record
from ckpt.errors import (
    DecodeError,
    NotACheckpointStore,
    NotFound,
    NotSupported,
    StoreUnreadable,
    Unsafe,
)
from ckpt.records.model import (
    TASKS,
    UNREADABLE_IDX,
    BlobRef,
    Checkpoint,
    CheckpointKey,
    DumpQuery,
    PendingWrite,
    RawBlob,
    RawCheckpoint,
    RawWrite,
    SaverFacts,
    StoreHealth,
    ThreadBytes,
    ThreadSummary,
)
from ckpt.records.types import StorageRecord, StoreFileRecord, VacuumReport, storage_record
from ckpt.records.vocabulary import FIND_LIMIT, PICKLE_NAMES
from ckpt.stores.base import Store, Writer
from ckpt.stores.body import checkpoint_from_dict, decode_value, sort_writes
from ckpt.stores.pickle.health import store_health
from ckpt.stores.pickle.index import PickleFile, Summary, Unsupported
from ckpt.stores.pickle.layout import DEV_FOLDER as DEV_FOLDER
from ckpt.stores.pickle.layout import ROLE_WORDS as _ROLE_WORDS
from ckpt.stores.pickle.layout import file_stamp as _file_stamp
from ckpt.stores.pickle.layout import locate as _locate
from ckpt.stores.pickle.layout import role_of as _role_of
from ckpt.stores.pickle.layout import storage_index as _storage_index
from ckpt.stores.pickle.lean import materialize, scan_kept, scan_storage
from ckpt.stores.pickle.passes import LEAN_THREADS
from ckpt.stores.pickle.passes import Kept as _Kept
from ckpt.stores.pickle.passes import lean_storage as _lean_storage
from ckpt.stores.pickle.passes import lean_thread as _lean_thread
from ckpt.stores.pickle.passes import namespace_items as _namespace_items
from ckpt.stores.pickle.passes import spanned as _spanned
from ckpt.stores.pickle.raw import entry_size as _entry_size
from ckpt.stores.pickle.raw import is_plain_dict as _is_plain_dict
from ckpt.stores.pickle.raw import not_a_pair as _not_a_pair
from ckpt.stores.pickle.raw import pair as _pair
from ckpt.stores.pickle.raw import pair_size as _pair_size
from ckpt.stores.pickle.raw import selected as _selected
from ckpt.stores.pickle.raw import tag as _tag
from ckpt.stores.pickle.raw import text_flaw as _text_flaw
from ckpt.stores.pickle.raw import write_size as _write_size
from ckpt.stores.pickle.unpickler import (
    Refused,
    build_target,
    collector_paused,
    load_pickle,
    refused_record,
)

if TYPE_CHECKING:
    from ckpt.records.plans import Strategy, ThreadRows

DEV_FOLDER_REFUSAL: Final = (
    "a langgraph dev store (PersistentDict pickles): the dev server rewrites these files "
    "every few seconds, so editing them under it loses data, and ckpt does not change "
    "them. Delete threads through the server's API (DELETE /threads/{id}), or stop it "
    "and start afresh"
)


class PickleStore(Store):
    """InMemorySaver dicts saved by PersistentDict (format.md §7): joined back into checkpoints.

    The storage dict holds checkpoint bodies without channel values, metadata and parent
    ids; the writes dict holds pending writes; the blobs dict holds every channel value by
    (thread, namespace, channel, version). Each file is read once, on first need.
    """

    kind = "pickle"

    def __init__(self, path: str | os.PathLike[str], *, aes_key: bytes | None = None) -> None:
        self._given = Path(path)
        self._stamps: tuple[object, ...] | None = None  # change_token's last look
        self.layout = _locate(Path(path))
        super().__init__(str(self.layout.location), aes_key=aes_key)
        storage = self.layout.storage
        # The threads-only reading of the storage file (pickle_lean): each namespace's
        # count, first and latest entries. The full index is read when a command needs more;
        # a file the lean pass does not read is read in full now, as before.
        lean = _lean_storage(storage)
        self._lean: dict[str, dict[str, Summary]] | None = None
        self._storage_fd: int | None = None  # the storage file the lean pass read, kept open
        if lean is not None:
            self._lean, self._storage_fd = lean
        self._storage_dict = (
            None
            if self._lean is not None
            else _storage_index(self._load(storage, "storage"), storage)
        )
        # The storage and writes files a whole read left the bytes values in (_spanned).
        self._storage_file: PickleFile | None = None
        self._writes_file: PickleFile | None = None
        self._writes_dict: dict[Any, Any] | None = None
        self._blobs_dict: dict[Any, Any] | None = None
        self._blobs_file: PickleFile | None = None
        self._lean_files: list[PickleFile] = []  # blobs files a threads listing kept open
        # One thread's entries and sources, for the commands that read one thread (show,
        # history) while the whole index is not loaded (_thread, _thread_sources).
        self._kept_threads: dict[str, dict[str, dict[str, tuple[Any, Any, str | None]]]] = {}
        self._kept_sources: dict[str, _Kept] = {}
        self._inline_values = self._has_inline_values()
        self._say_what_is_missing()

    # -- files -----------------------------------------------------------------------------
    @property
    def _storage(self) -> dict[str, dict[str, dict[str, tuple[Any, Any, str | None]]]]:
        """thread -> ns -> checkpoint_id -> (body pair, metadata pair, parent id)."""
        if self._storage_dict is None:
            storage = self.layout.storage
            fd, self._storage_fd = self._storage_fd, None
            spanned = _spanned(fd, "storage") if fd is not None else None
            if fd is not None and spanned is not None:
                self._storage_file = PickleFile(str(storage), source=str(storage), fd=fd)
                loaded = self._checked(spanned, storage, "storage")
                self._storage_dict = _storage_index(loaded, storage)
                return self._storage_dict
            try:
                self._storage_dict = _storage_index(self._load(storage, "storage", fd), storage)
            finally:
                if fd is not None:
                    os.close(fd)
        return self._storage_dict

    def _load(self, path: Path, role: str, fd: int | None = None) -> dict[Any, Any]:
        """Unpickle one file (restricted, format.md §7.2) and check it holds the dict `role` says.

        The blobs file is scanned instead: its values stay in the file (StoredText) and are
        read when a checkpoint needs them (see PickleFile); so is the writes file, when the
        stricter pass of pickle_lean reads it (_spanned). `fd`: the storage file as the
        threads-only pass read it (the same file, even if one was renamed over it since),
        whose shared references that pass has bounded, so they are not counted again.
        """
        top: list[str] = []  # the storage file's own dict refused (load_pickle)
        try:
            if role == "blobs":
                if self._blobs_file is not None:  # a failed load, tried again
                    self._blobs_file.close()
                self._blobs_file = PickleFile(str(path), source=str(path))
                try:  # values left in the file (StoredText) by the pass of lean.py
                    with collector_paused():
                        loaded = scan_kept(self._blobs_file.fd, None, check=False)
                except (Unsupported, OSError):  # not the plain shape: the full read
                    loaded = self._blobs_file.load(self.refused)
            elif role == "writes":
                if self._writes_file is not None:  # a failed load, tried again
                    self._writes_file.close()
                    self._writes_file = None
                writes_file = PickleFile(str(path), source=str(path))
                loaded = _spanned(writes_file.fd, "writes")
                if loaded is not None:
                    self._writes_file = writes_file
                else:
                    with open(os.dup(writes_file.fd), "rb") as handle:
                        writes_file.close()
                        loaded = load_pickle(handle, source=str(path), refused=self.refused)
            elif fd is not None:
                with open(os.dup(fd), "rb") as handle:
                    handle.seek(0)
                    loaded = load_pickle(
                        handle, source=str(path), refused=self.refused, counted=False, top=top
                    )
            else:
                with path.open("rb") as handle:
                    loaded = load_pickle(handle, source=str(path), refused=self.refused, top=top)
        except OSError as exc:
            raise StoreUnreadable(f"{path}: cannot read ({exc.strerror})") from None
        if top:
            # The dict that holds every thread is under a refused BUILD (LangGraph cannot
            # load the file at all): what it holds is read, but a thread not among it may
            # be hidden by the refusal, so a lookup that misses says it (issue 46 §4).
            self.threads_refused = (
                f"the dict of threads in {path} was refused ({top[0]}), so the thread may be "
                "hidden by it; nothing was run"
            )
        return self._checked(loaded, path, role)

    def _checked(self, loaded: Any, path: Path, role: str) -> dict[Any, Any]:
        """`loaded`, if it is the dict `role` says (told by its first key, _role_of)."""
        if not isinstance(loaded, dict):
            raise NotACheckpointStore(
                f"{path}: a pickled {type(loaded).__name__}, not LangGraph checkpoints"
            )
        found = _role_of(loaded, path)
        if found not in (role, "empty"):
            if self.layout.single_file or role == "storage":
                raise NotACheckpointStore(
                    f"{path}: holds LangGraph {_ROLE_WORDS[found]} but no checkpoints; "
                    f"open the folder that holds all of {', '.join(PICKLE_NAMES)}"
                )
            raise NotACheckpointStore(
                f"{path}: holds {_ROLE_WORDS[found]}, where {_ROLE_WORDS[role]} were expected"
            )
        return loaded

    @property
    def _writes(self) -> dict[Any, Any] | None:
        """(thread, ns, checkpoint_id) -> {(task_id, idx): (task_id, channel, pair, path)}."""
        if self._writes_dict is None and self.layout.writes is not None:
            self._writes_dict = self._load(self.layout.writes, "writes")
        return self._writes_dict

    @property
    def _blobs(self) -> dict[Any, Any] | None:
        """(thread, ns, channel, version) -> (tag, payload); tag `empty` means no value."""
        if self._blobs_dict is None and self.layout.blobs is not None:
            self._blobs_dict = self._load(self.layout.blobs, "blobs")
        return self._blobs_dict

    def _kept(
        self, role: str, wanted: set[Any] | str
    ) -> tuple[dict[Any, Any] | None, PickleFile | None]:
        """The writes or blobs dict with only the `wanted` keys (pickle_lean), and the open
        blobs file its values are read from; the whole dict, read as before, when the lean
        pass does not read the file (which then accepts, refuses or reports it)."""
        path = self.layout.writes if role == "writes" else self.layout.blobs
        if path is None:
            return None, None
        try:
            kept_file = PickleFile(str(path), source=str(path))
        except OSError:
            kept_file = None
        if kept_file is not None:
            try:
                with collector_paused():
                    root = scan_kept(kept_file.fd, wanted, check=role == "writes")
                    if role == "writes":
                        root = {key: materialize(kept_file.fd, v) for key, v in root.items()}
            except (Unsupported, OSError):
                root = None
            if root is not None:
                if role == "writes":
                    kept_file.close()
                    return self._checked(root, path, role), None
                self._lean_files.append(kept_file)
                return self._checked(root, path, role), kept_file
            kept_file.close()
        if role == "writes":
            return self._writes, None
        return self._blobs, self._blobs_file

    def _has_inline_values(self) -> bool:
        """Bodies written by checkpoint 2.0.21 and older keep channel_values (format.md §7.2)."""
        entry = self._first_entry()
        if entry is None:
            return False
        pair = _pair(entry[0], self._storage_file)
        if pair is None:
            return False
        try:
            body = decode(pair[0], pair[1], aes_key=self.aes_key, shallow=True)
        except DecodeError:
            return False
        return isinstance(body, dict) and "channel_values" in body

    def _first_entry(self) -> tuple[Any, Any, str | None] | None:
        """The storage dict's first entry (of its first thread and namespace)."""
        if self._lean is not None:
            for summaries in self._lean.values():
                for summary in summaries.values():
                    first: tuple[Any, Any, str | None] = summary.first[1]
                    return first
            return None
        for namespaces in self._storage.values():
            for entries in namespaces.values():
                for entry in entries.values():
                    return entry
        return None

    def _say_what_is_missing(self) -> None:
        layout = self.layout
        name = layout.location.name
        if layout.single_file:
            if self._inline_values:
                self.notices.append(
                    f"{name} is a single-file PersistentDict: it holds no pending writes "
                    "(its channel values are inline: langgraph-checkpoint 2.0.21 or older)"
                )
            else:
                self.notices.append(
                    f"{name} is a single-file PersistentDict: it holds checkpoints and "
                    "metadata only, no channel values and no pending writes (InMemorySaver "
                    "saves all three of its dicts over this one file, checkpoints last)"
                )
            return
        if not layout.missing:
            return
        lost = []
        if layout.writes is None:
            lost.append("pending writes")
        if layout.blobs is None and not self._inline_values:
            lost.append("channel values")
        missing = " and ".join(layout.missing)
        verb = "is" if len(layout.missing) == 1 else "are"
        shown = f": no {' and no '.join(lost)} to show" if lost else ""
        self.notices.append(f"{missing} {verb} missing from {layout.location}{shown}")

    # -- listing ---------------------------------------------------------------------------
    @property
    def era(self) -> str:
        return "persistent-dict" if self.layout.single_file else "dev-folder"

    @property
    def era_note(self) -> str:
        if self.layout.single_file:
            return "one PersistentDict file: checkpoints only"
        return "the `langgraph dev` folder: storage, writes, blobs"

    @property
    def blob_policy(self) -> str:
        # InMemorySaver.put stores a blob for each new version, `empty` ones too.
        return "every" if self._blobs is not None and not self._inline_values else "none"

    def saver(self) -> SaverFacts:
        if self.layout.single_file:
            return SaverFacts(
                saver="InMemorySaver with PersistentDict",
                releases=(
                    "langgraph-checkpoint 2.0.5 - 2.0.21 (values inside the bodies)"
                    if self._inline_values
                    else "langgraph-checkpoint 2.0.22 or later (no values, no writes)"
                ),
                evidence=("one PersistentDict pickle holding the storage dict",),
                langgraph="reads",
                note=(
                    "nothing in LangGraph loads the file back by itself: PersistentDict.load() "
                    "does, by hand, for an InMemorySaver"
                ),
            )
        return SaverFacts(
            saver="InMemorySaver of `langgraph dev` (langgraph-runtime-inmem)",
            releases="langgraph-runtime-inmem",
            evidence=(".langgraph_checkpoint.1/.2/.3.pckl: storage, writes, blobs",),
            langgraph="unknown",
            note="the `langgraph dev` server loads these files when it starts (not checked here)",
        )

    def threads(self, *, sizes: bool = False, order: str = "thread") -> Iterator[ThreadSummary]:
        if not sizes and self._lean is not None:
            yield from self._lean_threads(self._lean)
            return
        # Aggregates come from the raw dicts; only each thread's latest root checkpoint is
        # decoded, shallowly.
        # Sizes and write totals (`sizes=True`) come from the dicts' index (spans, no value
        # read), but building it scans the blobs file: without them it is never opened
        # unless a latest checkpoint needs its blob references.
        counted = self.sizes(DumpQuery()) if sizes else {}
        for thread_id in sorted(self._storage):
            namespaces = self._storage[thread_id]
            sized = counted.get(thread_id) or ThreadBytes(
                checkpoints=sum(len(entries) for entries in namespaces.values())
            )
            # A thread with only subgraph checkpoints has no state of its own: no latest.
            latest = self.latest_key(thread_id) if "" in namespaces else None
            yield ThreadSummary(
                thread_id=thread_id,
                namespaces=sorted(namespaces),
                checkpoints=sized.checkpoints,
                writes=sized.writes if sizes else None,
                size=sized.total if sizes else None,
                latest=self._load_one(latest, values=False, tolerant=True) if latest else None,
            )

    def _lean_threads(self, lean: dict[str, dict[str, Summary]]) -> Iterator[ThreadSummary]:
        """threads() from the threads-only pass (pickle_lean): the same summaries, from
        each namespace's count and latest entry, and of the writes and blobs files only the
        entries of the latest root checkpoints. Each file is read when the full listing
        would first read it, so a damaged one is reported as before."""
        latest = {
            thread_id: (CheckpointKey(thread_id, "", namespaces[""].latest[0]), namespaces[""])
            for thread_id, namespaces in lean.items()
            if "" in namespaces
        }
        blob_keys: set[Any] = set()
        for key, summary in latest.values():
            body = self._body(key, summary.latest[1][0], values=False, tolerant=True)
            versions = body.get("channel_versions") if _is_plain_dict(body) else None
            for channel, version in versions.items() if _is_plain_dict(versions) else ():
                if isinstance(channel, str) and isinstance(version, str | int | float):
                    blob_keys.add((key.thread_id, key.checkpoint_ns, channel, version))
        sources = _Kept(
            self,
            {(k.thread_id, k.checkpoint_ns, k.checkpoint_id) for k, _ in latest.values()},
            blob_keys,
        )
        for thread_id in sorted(lean):
            namespaces = lean[thread_id]
            found = latest.get(thread_id)
            yield ThreadSummary(
                thread_id=thread_id,
                namespaces=sorted(namespaces),
                checkpoints=sum(summary.count for summary in namespaces.values()),
                writes=None,
                size=None,
                latest=(
                    self._load_one(
                        found[0],
                        values=False,
                        tolerant=True,
                        entry=found[1].latest[1],
                        sources=sources,
                    )
                    if found
                    else None
                ),
            )

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        """From the dicts' index alone: a blob's size is its span in the file (PickleFile)."""
        found: dict[str, ThreadBytes] = {}
        for thread_id, _, _, entry in self._entries(query):
            sized = found.setdefault(thread_id, ThreadBytes())
            sized.checkpoints += 1
            sized.checkpoint_bytes += _entry_size(entry)
        # Every writes entry counts, as a SQL count would, whether or not its checkpoint
        # is still there.
        for key, task_writes in (self._writes or {}).items():
            if type(key) is not tuple or len(key) != 3 or not isinstance(task_writes, dict):
                continue  # not a writes entry; loading that checkpoint's writes says so
            if not isinstance(key[0], str) or not _selected(query, key[0], key[1], key[2]):
                continue  # a thread no string names: LangGraph never finds these writes
            sized = found.setdefault(key[0], ThreadBytes())
            sized.writes += len(task_writes)
            sized.write_bytes += sum(_write_size(w) for w in task_writes.values())
        for key, pair in (self._blobs or {}).items():
            if type(key) is not tuple or len(key) != 4:
                continue
            if not isinstance(key[0], str) or not _selected(query, key[0], key[1], None):
                continue  # a thread no string names: LangGraph never finds this value
            sized = found.setdefault(key[0], ThreadBytes())
            sized.blobs += 1
            sized.blob_bytes += _pair_size(pair)
        return found

    def thread_exists(self, thread_id: str) -> bool:
        if self._storage_dict is None and self._lean is not None:
            return thread_id in self._lean
        return thread_id in self._storage

    def namespaces(self, thread_id: str) -> list[str]:
        return sorted(self._thread(thread_id) or {})

    def checkpoints(
        self, thread_id: str, *, values: bool = False, last: int | None = None
    ) -> list[Checkpoint]:
        keys = [
            CheckpointKey(thread_id, ns, checkpoint_id)
            for ns, entries in (self._thread(thread_id) or {}).items()
            for checkpoint_id in entries
        ]
        keys.sort(key=lambda k: (k.checkpoint_id, k.checkpoint_ns))
        if last is not None:
            keys = keys[-last:] if last > 0 else []
        sources = self._thread_sources(thread_id)
        return [self._load_one(key, values=values, tolerant=True, sources=sources) for key in keys]

    def _thread(self, thread_id: str) -> dict[str, dict[str, tuple[Any, Any, str | None]]] | None:
        """One thread's namespaces and entries, as the whole index holds them. While that
        index is not loaded, a pass over the storage file keeps this thread's entries only
        (pickle_lean): `show` and `history` on a big `langgraph dev` folder hold one
        thread, not the folder. A file that pass does not read is read whole, as before."""
        if self._storage_dict is not None or self._lean is None or self._storage_fd is None:
            return self._storage.get(thread_id)
        if thread_id not in self._lean:
            return None
        kept = self._kept_threads.get(thread_id)
        if kept is None:
            if len(self._kept_threads) >= LEAN_THREADS:
                # More threads than a command compares (the browser going from thread to
                # thread): one whole read now beats three file passes per thread.
                return self._storage.get(thread_id)
            kept = _lean_thread(self._storage_fd, thread_id)
            if kept is None:
                return self._storage.get(thread_id)
            self._kept_threads[thread_id] = kept
        return kept

    def _thread_sources(self, thread_id: str) -> _Kept | None:
        """The writes and blobs of one thread (pickle_lean), when its entries came from
        the one-thread pass; None (the whole dicts) otherwise."""
        if thread_id not in self._kept_threads or self._storage_dict is not None:
            return None
        sources = self._kept_sources.get(thread_id)
        if sources is None:
            sources = self._kept_sources[thread_id] = _Kept(self, thread_id, thread_id)
        return sources

    # -- finding ---------------------------------------------------------------------------
    def find(self, fragment: str, *, thread_id: str | None = None) -> list[CheckpointKey]:
        found: list[CheckpointKey] = []
        if not fragment:
            return found
        if thread_id is None and self._storage_dict is None and self._lean is not None:
            lean = self._lean_find(fragment)
            if lean is not None:
                return lean
        threads = [thread_id] if thread_id is not None else list(self._storage)
        for thread in threads:
            for ns, entries in (self._thread(thread) or {}).items():
                for checkpoint_id in entries:
                    if checkpoint_id.startswith(fragment) or checkpoint_id.endswith(fragment):
                        found.append(CheckpointKey(thread, ns, checkpoint_id))
                        if len(found) >= FIND_LIMIT:
                            return found
        return found

    def _lean_find(self, fragment: str) -> list[CheckpointKey] | None:
        """`find` over every thread from a pass over the storage file that keeps only the
        checkpoint ids (pickle_lean): a checkpoint named by id, in a big `langgraph dev`
        folder, without the whole index. None when the file needs the full read."""
        if self._storage_fd is None:
            return None
        found: list[CheckpointKey] = []
        try:
            with collector_paused():
                root = scan_storage(self._storage_fd, ids=True)
            for thread, ns, checkpoint_ids in _namespace_items(root):
                for checkpoint_id in checkpoint_ids:
                    if len(found) < FIND_LIMIT and (
                        checkpoint_id.startswith(fragment) or checkpoint_id.endswith(fragment)
                    ):
                        found.append(CheckpointKey(thread, ns, checkpoint_id))
        except (Unsupported, OSError):
            return None
        return found

    def latest_key(self, thread_id: str, checkpoint_ns: str = "") -> CheckpointKey | None:
        entries = (self._thread(thread_id) or {}).get(checkpoint_ns)
        # Max id, as InMemorySaver.get_tuple picks it (format.md §3.3).
        return CheckpointKey(thread_id, checkpoint_ns, max(entries)) if entries else None

    # -- loading ---------------------------------------------------------------------------
    def load(self, key: CheckpointKey, *, values: bool = True) -> Checkpoint:
        namespaces = self._thread(key.thread_id) or {}
        entry = namespaces.get(key.checkpoint_ns, {}).get(key.checkpoint_id)
        if entry is None:
            raise NotFound(f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}")
        return self._load_one(
            key,
            values=values,
            tolerant=not values,
            entry=entry,
            sources=self._thread_sources(key.thread_id),
        )

    def count_checkpoints(self, query: DumpQuery) -> int | None:
        # The keys come from the loaded index (the dicts), never from a value.
        return len(self._dump_keys(query))

    def iter_checkpoints(self, query: DumpQuery, *, values: bool = True) -> Iterator[Checkpoint]:
        for key in self._dump_keys(query):
            yield self._load_one(key, values=values, tolerant=False)

    def _dump_keys(self, query: DumpQuery) -> list[CheckpointKey]:
        if query.latest_only:
            # The newest of each (thread, ns), then the id range (as SqliteStore filters).
            newest = DumpQuery(thread_ids=query.thread_ids, checkpoint_ns=query.checkpoint_ns)
            last: dict[tuple[str, str], str] = {}
            for thread_id, ns, checkpoint_id, _ in self._entries(newest):
                last[thread_id, ns] = checkpoint_id
            keys = [
                CheckpointKey(t, ns, i)
                for (t, ns), i in last.items()
                if (query.since_id is None or i >= query.since_id)
                and (query.until_id is None or i <= query.until_id)
            ]
        else:
            keys = [CheckpointKey(t, ns, i) for t, ns, i, _ in self._entries(query)]
        return keys

    def _load_one(
        self,
        key: CheckpointKey,
        *,
        values: bool,
        tolerant: bool,
        entry: tuple[Any, Any, str | None] | None = None,
        sources: _Kept | None = None,
    ) -> Checkpoint:
        """One checkpoint joined with its writes and blobs; `entry` and `sources` are the
        threads-only pass's latest entry and its writes and blobs (_lean_threads), or one
        thread's (_thread_sources)."""
        if entry is None:
            namespaces = self._thread(key.thread_id) or {}
            entry = namespaces.get(key.checkpoint_ns, {}).get(key.checkpoint_id)
        if entry is None:
            raise NotFound(f"no checkpoint {key.checkpoint_id} in thread {key.thread_id!r}")
        raw_body, raw_metadata, parent_id = entry
        body = self._body(key, raw_body, values=values, tolerant=tolerant)
        channel_values, blob_refs = self._channel_values(key, body, values=values, kept=sources)
        # Neither a blobs file nor inline values: the store keeps none (format.md §8.17).
        kept = channel_values is not None or (isinstance(body, dict) and "channel_values" in body)
        return checkpoint_from_dict(
            key,
            parent_id,
            body,
            self._metadata(raw_metadata),
            writes=self._pending_writes(key, sources),
            values=values,
            size=_entry_size(entry),
            channel_values=channel_values,
            blobs=blob_refs,
            values_kept=kept,
        )

    def _body(self, key: CheckpointKey, raw: Any, *, values: bool, tolerant: bool) -> Any:
        pair = _pair(raw, self._storage_file)
        if pair is None:
            return _not_a_pair(raw)
        try:
            return decode(pair[0], pair[1], aes_key=self.aes_key, shallow=not values)
        except DecodeError as exc:
            if not tolerant:
                raise DecodeError(
                    f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r}: {exc}"
                ) from None
            return undecodable_record(pair[1], str(exc), tag=pair[0])

    def _metadata(self, raw: Any) -> dict[str, Any]:
        # Memory metadata is serde-typed msgpack, not JSON text as in SQLite (format.md §8.6).
        pair = _pair(raw, self._storage_file)
        if pair is None:
            return _not_a_pair(raw)
        metadata = decode_value(pair[0], pair[1], self.aes_key)
        if metadata is None or metadata is ABSENT:
            return {}
        return metadata if isinstance(metadata, dict) else {"value": metadata}

    def _channel_values(
        self, key: CheckpointKey, body: Any, *, values: bool, kept: _Kept | None = None
    ) -> tuple[dict[str, Any] | None, dict[str, BlobRef] | None]:
        """Join the body's channel versions with the blobs dict, as InMemorySaver does.

        A channel is looked up by (thread, ns, channel, version); a missing key or an
        `empty` blob means no value (cp/memory `_load_blobs`, format.md §7.1). Without
        `values`, only presence is recorded, and only the `__pregel_tasks` value (the
        pending Sends, which `next` needs) is read from the file and decoded, shallowly.
        """
        if kept is not None:
            blobs, blobs_file = kept.blobs()
        else:
            blobs, blobs_file = self._blobs, self._blobs_file
        if blobs is None or not isinstance(body, dict) or is_marked(body):
            return None, None
        inline = body.get("channel_values")
        joined: dict[str, Any] = dict(inline) if _is_plain_dict(inline) else {}
        refs: dict[str, BlobRef] = {}
        versions = body.get("channel_versions")
        for channel, version in versions.items() if _is_plain_dict(versions) else ():
            if not isinstance(channel, str) or not isinstance(version, str | int | float):
                continue
            raw = blobs.get((key.thread_id, key.checkpoint_ns, channel, version))
            if raw is None:
                continue
            tag = raw[0] if type(raw) is tuple and len(raw) == 2 else None
            # The size as stored, read from the index only (see PickleFile, _pair_size).
            refs[channel] = BlobRef(
                str(version), tag if isinstance(tag, str) else None, _pair_size(raw)
            )
            if tag == "empty":
                joined.pop(channel, None)
            elif not values and channel != TASKS and isinstance(tag, str):
                joined[channel] = None  # holds a value, which is not loaded
            elif (pair := _pair(raw, blobs_file)) is None:
                joined[channel] = _not_a_pair(raw)
            elif values:
                joined[channel] = decode_value(pair[0], pair[1], self.aes_key)
            else:
                joined[channel] = self._shallow(pair[0], pair[1])
        return joined, refs

    def _shallow(self, tag: str, payload: bytes) -> Any:
        try:
            return decode(tag, payload, aes_key=self.aes_key, shallow=True)
        except DecodeError as exc:
            return undecodable_record(payload, str(exc), tag=tag)

    def _pending_writes(
        self, key: CheckpointKey, kept: _Kept | None = None
    ) -> list[PendingWrite] | None:
        writes = kept.writes() if kept is not None else self._writes
        if writes is None:
            return None
        task_writes = writes.get((key.thread_id, key.checkpoint_ns, key.checkpoint_id))
        if isinstance(task_writes, Refused) and isinstance(build_target(task_writes), dict):
            task_writes = dict(task_writes)  # a BUILD on the dict: its writes are read
        if isinstance(task_writes, Refused):  # the checkpoint's writes: one refused value
            return [PendingWrite("", "", 0, "", None, refused_record(task_writes))]
        if not isinstance(task_writes, dict):
            return []
        return sort_writes(
            self._write(inner_key, stored) for inner_key, stored in task_writes.items()
        )

    def _write(self, inner_key: Any, stored: Any) -> PendingWrite:
        # Key (task_id, idx); value (task_id, channel, (tag, bytes), task_path), without the
        # task_path before checkpoint 2.0.x added it (cp/memory put_writes, format.md §7.1).
        if isinstance(stored, Refused) and type(inner_key) is tuple and len(inner_key) == 2:
            # A refused write: its value shows so, under its task and channel when a BUILD
            # on the write's tuple was refused (build_target).
            target = build_target(stored)
            if type(target) is tuple and len(target) in (3, 4) and isinstance(target[1], str):
                stored = (inner_key[0], target[1], stored, target[3] if len(target) == 4 else "")
            else:
                stored = (inner_key[0], "", stored, "")
        if (
            not isinstance(inner_key, tuple)
            or len(inner_key) != 2
            or not isinstance(stored, tuple)
            or len(stored) not in (3, 4)
        ):
            raise NotACheckpointStore(f"{self.layout.writes}: not a LangGraph writes dict")
        task_id, channel, raw_value = stored[:3]
        task_path = stored[3] if len(stored) == 4 else ""
        idx = inner_key[1]
        pair = _pair(raw_value, self._writes_file)
        return PendingWrite(
            task_id=str(task_id),
            task_path=task_path if isinstance(task_path, str) else "",
            idx=idx if isinstance(idx, int) else 0,
            channel=str(channel),
            type=pair[0] if pair else None,
            value=(
                decode_value(pair[0], pair[1], self.aes_key) if pair else _not_a_pair(raw_value)
            ),
            size=len(pair[1]) if pair else 0,
        )

    def storage(self) -> StorageRecord:
        layout = self.layout
        files: list[StoreFileRecord] = []
        roles: tuple[tuple[Literal["storage", "writes", "blobs"], Path | None], ...] = (
            ("storage", layout.storage),
            ("writes", layout.writes),
            ("blobs", layout.blobs),
        )
        for role, path in roles:
            if path is None:
                continue
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise StoreUnreadable(f"{path}: cannot read ({exc.strerror})") from None
            files.append({"file": str(path), "role": role, "bytes": size})
        return storage_record(sum(f["bytes"] for f in files), files=files)

    def health(self, query: DumpQuery) -> StoreHealth:
        return store_health(self, query)

    # -- raw scans -------------------------------------------------------------------------
    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        for thread_id, ns, checkpoint_id, entry in self._entries(query):
            raw_body, raw_metadata, parent_id = entry
            body_pair = _pair(raw_body, self._storage_file) if data else None
            meta_pair = _pair(raw_metadata, self._storage_file) if data else None
            key = CheckpointKey(thread_id, ns, checkpoint_id)
            body = self._body(key, raw_body, values=False, tolerant=True)
            versions = body.get("channel_versions") if isinstance(body, dict) else None
            # InMemorySaver loads the metadata as a (tag, bytes) pair: anything else is none.
            metadata_type = _tag(raw_metadata) if _tag(raw_metadata) is not None else "msgpack"
            yield RawCheckpoint(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=parent_id if isinstance(parent_id, str) else None,
                type=_tag(raw_body),
                body=body_pair[1] if body_pair else b"",
                metadata_type=metadata_type,
                metadata=meta_pair[1] if meta_pair else b"",
                body_size=_pair_size(raw_body),
                metadata_size=_pair_size(raw_metadata),
                flaws=_text_flaw(raw_body),
                # None when the body keeps its values inline (checkpoint 2.0.21 and older).
                channel_versions=(
                    {str(c): str(v) for c, v in versions.items()}
                    if _is_plain_dict(versions) and not self._inline_values
                    else None
                ),
            )

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        blobs = self._blobs or {}
        keys = [
            key
            for key in blobs
            if type(key) is tuple and len(key) == 4 and _selected(query, key[0], key[1], None)
        ]
        keys.sort(key=lambda k: tuple(str(part) for part in k))
        for key in keys:
            raw = blobs[key]
            pair = _pair(raw, self._blobs_file) if data else None
            yield RawBlob(
                thread_id=str(key[0]),
                checkpoint_ns=str(key[1]),
                channel=str(key[2]),
                version=str(key[3]),
                type=_tag(raw),
                data=pair[1] if pair else None,
                size=_pair_size(raw),
            )

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        writes = self._writes or {}
        keys = [(t, ns, i) for t, ns, i, _ in self._entries(query)]
        # And the writes nothing in storage holds, of these threads or naming one of their
        # checkpoints (moved, or a key part changed): check judges them, `health` counts them.
        threads, ids, held = {k[0] for k in keys}, {k[2] for k in keys}, set(keys)
        keys += sorted(
            (
                key
                for key in writes
                if type(key) is tuple
                and len(key) == 3
                and key not in held
                and (key[0] in threads or key[2] in ids)
            ),
            key=str,
        )
        for key in keys:
            task_writes = writes.get(key)
            if not isinstance(task_writes, dict):
                continue
            thread_id, ns, checkpoint_id = (str(part) for part in key)
            for inner_key in sorted(task_writes, key=str):
                stored = task_writes[inner_key]
                if type(stored) is not tuple or len(stored) < 3:
                    continue
                pair = _pair(stored[2], self._writes_file) if data else None
                # InMemorySaver sorts a checkpoint's writes by (task path, task id, index)
                # from this key: parts of other types make it raise.
                idx = (
                    inner_key[1]
                    if type(inner_key) is tuple
                    and len(inner_key) == 2
                    and isinstance(inner_key[0], str)
                    and type(inner_key[1]) is int
                    else UNREADABLE_IDX
                )
                task_path = stored[3] if len(stored) > 3 else ""
                yield RawWrite(
                    thread_id=thread_id,
                    checkpoint_ns=ns,
                    checkpoint_id=checkpoint_id,
                    task_id=stored[0] if isinstance(stored[0], str) else "",
                    idx=idx if isinstance(task_path, str) else UNREADABLE_IDX,
                    channel=stored[1] if isinstance(stored[1], str) else "",
                    type=_tag(stored[2]),
                    data=pair[1] if pair else None,
                    size=_pair_size(stored[2]),
                    task_path=task_path if isinstance(task_path, str) else "",
                    flaws=_text_flaw(stored[2]),
                )

    def _entries(self, query: DumpQuery) -> Iterator[tuple[str, str, str, Any]]:
        """(thread, ns, id, storage entry) in (thread, ns, id) order, as `query` selects."""
        threads = query.thread_ids or tuple(self._storage)
        for thread_id in sorted(set(threads)):
            namespaces = self._storage.get(thread_id, {})
            for ns in sorted(namespaces):
                if query.checkpoint_ns is not None and ns != query.checkpoint_ns:
                    continue
                for checkpoint_id in sorted(namespaces[ns]):
                    if query.since_id is not None and checkpoint_id < query.since_id:
                        continue
                    if query.until_id is not None and checkpoint_id > query.until_id:
                        continue
                    yield thread_id, ns, checkpoint_id, namespaces[ns][checkpoint_id]

    # -- changing it: never (the dev server rewrites these files) ----------------------------
    def check_copy(
        self, *, renumber_versions: bool = False, counted_versions: bool = False
    ) -> None:
        if self.layout.single_file and not self._inline_values:
            raise NotSupported(
                f"{self.location}: this PersistentDict file keeps no channel values and no "
                "pending writes (format.md 7.2); a copy could not resume"
            )

    def check_prune(self, strategy: Strategy, *, backup: bool) -> None:
        raise Unsafe(f"{self.location}: {DEV_FOLDER_REFUSAL}")

    def thread_rows(self, thread_id: str) -> ThreadRows:
        raise Unsafe(f"{self.location}: {DEV_FOLDER_REFUSAL}")

    def vacuum_report(self, *, into: Path | None) -> VacuumReport:
        raise Unsafe(f"{self.location}: {DEV_FOLDER_REFUSAL}")

    def writer(self, *, timeout: float | None) -> Writer:
        raise Unsafe(f"{self.location}: {DEV_FOLDER_REFUSAL}")

    def change_token(self) -> Hashable | None:
        # `langgraph dev` rewrites a file whole when it saves: its inode, size or time
        # change. A file read at open (or since) is then read again, from scratch: this
        # reader is opened anew in place (notices and refusals said once).
        stamps = tuple(
            _file_stamp(path)
            for path in (self.layout.storage, self.layout.writes, self.layout.blobs)
        )
        if self._stamps is not None and stamps != self._stamps:
            notices, refused = self.notices, self.refused
            self.close()
            self.__init__(self._given, aes_key=self.aes_key)  # type: ignore[misc]
            self.notices, self.refused = notices, sorted({*refused, *self.refused})
        self._stamps = stamps
        return stamps

    def close(self) -> None:
        self._writes_dict = None
        self._blobs_dict = None
        for opened in (self._blobs_file, self._storage_file, self._writes_file):
            if opened is not None:
                opened.close()
        for kept_file in self._lean_files:
            kept_file.close()
        self._lean_files.clear()
        if self._storage_fd is not None:
            os.close(self._storage_fd)
            self._storage_fd = None
