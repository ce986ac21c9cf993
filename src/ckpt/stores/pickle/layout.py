"""Which files make up a `langgraph dev` store (format.md §7.3), and the storage dict's index
checked as InMemorySaver writes it (format.md §7.1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ckpt.errors import NotACheckpointStore, RefusedGlobal, StoreNotFound
from ckpt.records.vocabulary import PICKLE_NAMES
from ckpt.stores.pickle.unpickler import (
    Refused,
    build_target,
    built,
)

# The `langgraph dev` runtime gives storage, writes and blobs one file each, numbered in
# the order InMemorySaver creates them, inside `<project>/.langgraph_api/` (format.md §7.3).
DEV_FOLDER: Final = ".langgraph_api"
STORAGE_NAME, WRITES_NAME, BLOBS_NAME = PICKLE_NAMES


@dataclass(frozen=True, slots=True)
class Layout:
    """Which files make up the store: a dev folder's three, or one PersistentDict file."""

    location: Path
    storage: Path
    writes: Path | None
    blobs: Path | None
    single_file: bool
    missing: tuple[str, ...] = ()


def file_stamp(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def locate(path: Path) -> Layout:
    """The files behind what the user named: a dev folder, a project folder, one file."""
    if not path.exists():
        raise StoreNotFound(f"{path}: no such file or folder")
    if path.is_dir():
        folder = path
        if not any((path / name).is_file() for name in PICKLE_NAMES):
            if (path / DEV_FOLDER).is_dir():
                folder = path / DEV_FOLDER  # a project folder that has run `langgraph dev`
    elif path.name in PICKLE_NAMES:
        folder = path.parent  # one of the three files: open all three (format.md §7.3)
    else:
        return Layout(path, path, None, None, single_file=True)
    storage, writes, blobs = (
        folder / name if (folder / name).is_file() else None for name in PICKLE_NAMES
    )
    if storage is None and writes is None and blobs is None:
        raise StoreNotFound(
            f"{folder}: no checkpoint store here (looked for {DEV_FOLDER}/ and "
            f"{', '.join(PICKLE_NAMES)})"
        )
    if storage is None:
        present = " and ".join(p.name for p in (writes, blobs) if p is not None)
        raise NotACheckpointStore(
            f"{folder}: {STORAGE_NAME} (the checkpoints) is missing; {present} alone "
            "hold no checkpoints"
        )
    missing = tuple(name for name, p in ((WRITES_NAME, writes), (BLOBS_NAME, blobs)) if p is None)
    return Layout(folder, storage, writes, blobs, single_file=False, missing=missing)


ROLE_WORDS: Final = {
    "storage": "checkpoints",
    "writes": "pending writes",
    "blobs": "channel values",
    "empty": "nothing",
}


def role_of(loaded: dict[Any, Any], path: Path) -> str:
    """Which of InMemorySaver's three dicts this is, told by the shape of its keys (7.1)."""
    if not loaded:
        return "empty"
    key, value = next(iter(loaded.items()))
    if isinstance(key, str) and isinstance(value, dict):
        return "storage"  # thread_id -> checkpoint_ns -> checkpoint_id -> entry
    if isinstance(key, tuple) and len(key) == 3 and isinstance(value, dict):
        return "writes"  # (thread_id, ns, checkpoint_id) -> {(task_id, idx): write}
    if isinstance(key, tuple) and len(key) == 4 and isinstance(value, tuple | Refused):
        return "blobs"  # (thread_id, ns, channel, version) -> (tag, bytes)
    raise NotACheckpointStore(f"{path}: a pickled dict, but not one InMemorySaver wrote")


def storage_index(
    loaded: dict[Any, Any], path: Path
) -> dict[str, dict[str, dict[str, tuple[Any, Any, str | None]]]]:
    """thread -> ns -> checkpoint_id -> (body pair, metadata pair, parent id), checked.

    Empty threads and namespaces are dropped: InMemorySaver's defaultdicts grow an empty
    entry whenever a missing thread is looked up, and LangGraph lists nothing for them.
    A refused value where a thread's or a namespace's dict goes is not one of those (a
    Refused is an empty dict): the thread's checkpoints cannot be read, which is said,
    rather than answering that the thread does not exist. A BUILD on that dict is refused
    too, but the dict it was on holds the checkpoints (build_target): they are read, and
    the refusal said (issue 38: the thread was not shown).
    """
    index: dict[str, dict[str, dict[str, tuple[Any, Any, str | None]]]] = {}
    for thread_id, namespaces in loaded.items():
        if not isinstance(thread_id, str) or not isinstance(namespaces, dict):
            raise NotACheckpointStore(
                f"{path}: thread {thread_id!r} is not a LangGraph checkpoints dict"
            )
        namespaces = not_refused(namespaces, path, f"thread {thread_id!r}")
        kept: dict[str, dict[str, tuple[Any, Any, str | None]]] = {}
        for ns, entries in namespaces.items():
            if not isinstance(ns, str) or not isinstance(entries, dict):
                raise NotACheckpointStore(
                    f"{path}: thread {thread_id!r}, namespace {ns!r} is not a dict of checkpoints"
                )
            entries = not_refused(entries, path, f"thread {thread_id!r}, namespace {ns!r}")
            for checkpoint_id, entry in entries.items():
                if isinstance(entry, Refused):
                    # A refused value where the whole entry goes: its checkpoint and its
                    # metadata show as refused; its parent, when a BUILD on the entry was
                    # refused, is the entry's own (so the thread's lineage holds).
                    target = built(entry)
                    parent = target[2] if type(target) is tuple and len(target) == 3 else None
                    entry = entries[checkpoint_id] = (entry, entry, parent_id(parent))
                if type(entry) is tuple and len(entry) == 3 and isinstance(entry[2], Refused):
                    # A refused value where the parent id goes: the id a BUILD on it was
                    # on (an id, not a value: built); no parent for any other.
                    entry = entries[checkpoint_id] = (entry[0], entry[1], parent_id(entry[2]))
                if not (
                    isinstance(checkpoint_id, str)
                    and type(entry) is tuple
                    and len(entry) == 3
                    and (entry[2] is None or isinstance(entry[2], str))
                ):
                    raise NotACheckpointStore(
                        f"{path}: thread {thread_id!r}, checkpoint {checkpoint_id!r} is not a "
                        "(checkpoint, metadata, parent id) entry"
                    )
            if entries:
                kept[ns] = entries
        if kept:
            index[thread_id] = kept
    return index


def parent_id(parent: Any) -> str | None:
    """A parent id as it was built before a refused BUILD on it (built), or None."""
    parent = built(parent)
    return parent if isinstance(parent, str) else None


def not_refused(value: dict[Any, Any], path: Path, where: str) -> dict[Any, Any]:
    """`value`, a thread's or a namespace's dict: the items of a dict a BUILD was on (see
    storage_index); RefusedGlobal for any other refused value."""
    if isinstance(value, Refused) and isinstance(build_target(value), dict):
        return dict(value)
    if isinstance(value, Refused):
        raise RefusedGlobal(
            f"refused to load {value.global_name} from {path}: it is where the checkpoints "
            f"of {where} go, so they cannot be read; nothing was run"
        )
    return value
