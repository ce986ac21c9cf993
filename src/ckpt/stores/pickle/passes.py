"""The lean passes over PersistentDict files (lean.py), as PickleStore uses them: the
threads-only index, one thread's entries, and the whole dicts with their bytes left in the
file; each None (or Unsupported) where the file needs the full read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ckpt.stores.pickle.index import Namespaces, PickleFile, StoredText, Summary, Unsupported
from ckpt.stores.pickle.lean import materialize, scan_kept, scan_storage
from ckpt.stores.pickle.unpickler import (
    collector_paused,
)

if TYPE_CHECKING:
    from ckpt.stores.pickle.store import PickleStore


def spanned(fd: int, role: str) -> dict[Any, Any] | None:
    """The whole storage or writes dict from the pass of pickle_lean, its bytes values left
    in the file as StoredText: stats, types and dump on a big `langgraph dev` folder hold
    the dicts' keys, not their values. None when the file needs the full read, which
    accepts, refuses or reports it as before."""
    try:
        with collector_paused():
            if role == "storage":
                root = scan_storage(fd, whole=True)
            else:
                root = scan_kept(fd, None, check=True)
    except (Unsupported, OSError):
        return None
    if type(root) is not dict:
        return None
    return root if (spanned_storage if role == "storage" else spanned_writes)(root) else None


def stored_pair(value: Any) -> bool:
    """A (tag, bytes) pair as the scan gives it: a StoredText may stand only where a
    payload goes. Anywhere else the full read shows it as the text it is, so any other
    shape is read the full way."""
    return (
        type(value) is tuple
        and len(value) == 2
        and type(value[0]) is str
        and (type(value[1]) is StoredText or type(value[1]) is bytes or type(value[1]) is str)
    )


def spanned_storage(root: dict[Any, Any]) -> bool:
    """thread -> ns -> checkpoint_id -> (body pair, metadata pair, parent id) (the scan
    checks the entries' ids and parents, pickle_lean._entries)."""
    try:
        for _, _, entries in namespace_items(root):
            for entry in entries.values():
                if not (stored_pair(entry[0]) and stored_pair(entry[1])):
                    return False
    except Unsupported:
        return False
    return True


def spanned_writes(root: dict[Any, Any]) -> bool:
    """(thread, ns, checkpoint_id) -> {(task_id, idx): (task_id, channel, pair, task_path)}."""
    for key, task_writes in root.items():
        if (
            type(key) is not tuple
            or len(key) != 3
            or any(type(part) is not str for part in key)
            or type(task_writes) is not dict
        ):
            return False
        for inner_key, stored in task_writes.items():
            if not (
                type(inner_key) is tuple
                and len(inner_key) == 2
                and type(inner_key[0]) is str
                and type(inner_key[1]) is int
                and type(stored) is tuple
                and len(stored) in (3, 4)
                and type(stored[0]) is str
                and type(stored[1]) is str
                and stored_pair(stored[2])
                and (len(stored) == 3 or type(stored[3]) is str)
            ):
                return False
    return True


def lean_storage(path: Path) -> tuple[dict[str, dict[str, Summary]], int] | None:
    """The storage index from the threads-only pass (pickle_lean): thread -> ns -> Summary,
    empty ones dropped as storage_index drops them, the kept entries' bytes read back as
    the restricted unpickler gives them; and the file, still open, for a full read later.
    None when the file needs the full read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        index = lean_index(fd)
    except (Unsupported, OSError):
        index = None
    if index is None:
        os.close(fd)
        return None
    return index, fd


def lean_thread(
    fd: int, thread_id: str
) -> dict[str, dict[str, tuple[Any, Any, str | None]]] | None:
    """One thread's namespaces and entries from a pass over the storage file that keeps
    that thread only, read back as the restricted unpickler gives them (storage_index
    checks); None when the file needs the full read."""
    try:
        with collector_paused():
            root = scan_storage(fd, thread_id)
            namespaces = root.get(thread_id) if isinstance(root, dict) else None
            if type(namespaces) is not Namespaces:
                return None
            kept: dict[str, dict[str, tuple[Any, Any, str | None]]] = {}
            for ns, entries in namespaces.items():
                if type(ns) is not str or type(entries) is not dict:
                    return None
                if entries:
                    kept[ns] = {cid: materialize(fd, entry) for cid, entry in entries.items()}
            return kept
    except (Unsupported, OSError):
        return None


def lean_index(fd: int) -> dict[str, dict[str, Summary]]:
    """thread -> ns -> Summary, empty ones dropped; raises Unsupported (see lean_storage)."""
    with collector_paused():
        index: dict[str, dict[str, Summary]] = {}
        for thread_id, ns, summary in namespace_items(scan_storage(fd)):
            if summary is not None:
                index.setdefault(thread_id, {})[ns] = Summary(
                    summary.count,
                    (summary.first[0], materialize(fd, summary.first[1])),
                    (summary.latest[0], materialize(fd, summary.latest[1])),
                )
        return index


def namespace_items(root: Any) -> Iterator[tuple[str, str, Any]]:
    """(thread, ns, what the pass kept of it) from a storage pass's root; Unsupported
    where a thread or namespace is not a string, or a thread not a namespaces dict (the
    full read accepts, refuses or reports those)."""
    if type(root) is not dict:
        raise Unsupported("root")
    for thread_id, namespaces in root.items():
        if type(thread_id) is not str or type(namespaces) is not Namespaces:
            raise Unsupported("thread")
        for ns, kept in namespaces.items():
            if type(ns) is not str:
                raise Unsupported("namespace")
            yield thread_id, ns, kept


# Threads read by one-thread passes before a store reads its whole index (PickleStore._thread).
LEAN_THREADS: Final = 2


class Kept:
    """The writes and blobs of some checkpoints (the latest ones, or every one of a thread
    id), each file read on first need (as the full listing reads `_writes` and `_blobs`),
    through PickleStore._kept."""

    def __init__(
        self, store: PickleStore, write_keys: set[Any] | str, blob_keys: set[Any] | str
    ) -> None:
        self.store = store
        self.write_keys = write_keys
        self.blob_keys = blob_keys
        self._writes: tuple[dict[Any, Any] | None, PickleFile | None] | None = None
        self._blobs: tuple[dict[Any, Any] | None, PickleFile | None] | None = None

    def writes(self) -> dict[Any, Any] | None:
        if self._writes is None:
            self._writes = self.store._kept("writes", self.write_keys)
        return self._writes[0]

    def blobs(self) -> tuple[dict[Any, Any] | None, PickleFile | None]:
        if self._blobs is None:
            self._blobs = self.store._kept("blobs", self.blob_keys)
        return self._blobs
