"""The dev folder's health (Store.health): parents and checkpoints that are gone, from the
storage, writes and blobs dicts as PickleStore holds them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ckpt.records.model import CheckpointKey, DumpQuery, StoreHealth
from ckpt.stores.pickle.raw import is_plain_dict, pair_size
from ckpt.stores.pickle.raw import selected as selected_in

if TYPE_CHECKING:
    from ckpt.stores.pickle.store import PickleStore


def store_health(store: PickleStore, query: DumpQuery) -> StoreHealth:
    """PickleStore.health: parents missing, orphan writes and blobs no checkpoint names."""
    health = StoreHealth()
    selected = DumpQuery(thread_ids=query.thread_ids)
    parents_missing: list[CheckpointKey] = []
    threads_missing: set[str] = set()
    oldest: dict[tuple[str, str], str] = {}
    # Blobs no checkpoint names, thread by thread: the versions of one thread's
    # checkpoints are held at a time, not those of the whole store.
    counting = store._blobs is not None and not store._inline_values
    blobs_of: dict[Any, list[tuple[Any, ...]]] = {}
    for key in (store._blobs or {}) if counting else {}:
        if type(key) is tuple and len(key) == 4 and selected_in(selected, key[0], key[1], None):
            blobs_of.setdefault(key[0], []).append(key)
    unused_blobs, unused_bytes = 0, 0
    used: set[tuple[Any, ...]] = set()
    current: Any = None

    def count_unused(thread: Any) -> tuple[int, int]:
        unused = [key for key in blobs_of.pop(thread, ()) if key not in used]
        blobs = store._blobs or {}
        return len(unused), sum(pair_size(blobs[key]) for key in unused)

    for thread_id, ns, checkpoint_id, entry in store._entries(selected):
        if thread_id != current:
            if current is not None:
                found = count_unused(current)
                unused_blobs, unused_bytes = unused_blobs + found[0], unused_bytes + found[1]
            used.clear()
            current = thread_id
        ids = store._storage[thread_id][ns]
        oldest.setdefault((thread_id, ns), checkpoint_id)  # entries come oldest first
        parent = entry[2]
        if isinstance(parent, str) and parent not in ids:
            parents_missing.append(CheckpointKey(thread_id, ns, checkpoint_id))
            threads_missing.add(thread_id)
            if checkpoint_id == oldest[thread_id, ns]:
                health.missing_parent_oldest += 1
        if counting:
            key = CheckpointKey(thread_id, ns, checkpoint_id)
            body = store._body(key, entry[0], values=False, tolerant=True)
            versions = body.get("channel_versions") if isinstance(body, dict) else None
            if is_plain_dict(versions):
                used.update((thread_id, ns, c, v) for c, v in versions.items())
    health.missing_parents = len(parents_missing)
    health.missing_parent_threads = len(threads_missing)
    health.missing_parent_examples = parents_missing[:5]
    orphans: list[CheckpointKey] = []
    for key in store._writes or {}:
        if type(key) is not tuple or len(key) != 3 or not selected_in(selected, *key):
            continue
        thread_id, ns, checkpoint_id = key
        if checkpoint_id not in store._storage.get(thread_id, {}).get(ns, {}):
            orphans.append(CheckpointKey(str(thread_id), str(ns), str(checkpoint_id)))
    orphans.sort(key=lambda k: (k.thread_id, k.checkpoint_ns, k.checkpoint_id))
    health.orphan_writes = sum(
        len(store._writes[(k.thread_id, k.checkpoint_ns, k.checkpoint_id)])
        for k in orphans
        if store._writes is not None
    )
    health.orphan_write_threads = len({k.thread_id for k in orphans})
    health.orphan_write_examples = orphans[:5]
    if counting:
        if current is not None:
            found = count_unused(current)
            unused_blobs, unused_bytes = unused_blobs + found[0], unused_bytes + found[1]
        used.clear()
        for thread in list(blobs_of):  # the blobs of threads with no checkpoint left
            found = count_unused(thread)
            unused_blobs, unused_bytes = unused_blobs + found[0], unused_bytes + found[1]
        health.orphan_blobs = unused_blobs
        health.orphan_blob_bytes = unused_bytes
    health.namespaces = [
        (thread_id, ns)
        for thread_id in sorted(store._storage)
        if not query.thread_ids or thread_id in query.thread_ids
        for ns in sorted(store._storage[thread_id])
    ]
    return health
