"""Whether a checkpoint found in two threads belongs where it is: what the integrity visitor
(ckpt.scan.integrity) asks of the store, by key, of a checkpoint id it met twice or of one
that some writes name and their thread lacks."""

from __future__ import annotations

from ckpt.errors import CkptError, NotFound
from ckpt.records.model import CheckpointKey
from ckpt.records.plans import version_after
from ckpt.records.types import PlaceRecord
from ckpt.scan.places import mention, place
from ckpt.stores.base import Store


def met_twice(
    store: Store, thread_id: str, checkpoint_id: str, keys: list[CheckpointKey]
) -> list[PlaceRecord]:
    """A checkpoint id met in another thread too: where a copy of it is to be said. A
    thread copied whole keeps its checkpoints' parents (a shared history, not damage); a
    row copied alone sits on a parent it does not follow from, or on another parent than
    the original's: each copy that does not fit its thread is said, and both when both fit."""
    if not any(k.thread_id != thread_id for k in keys):
        return []  # the filter's false hit
    fitting: dict[CheckpointKey, tuple[bool, str | None]] = {}
    try:
        for key in sorted(keys, key=lambda k: k.thread_id != thread_id)[:4]:
            fitting[key] = fits(store, key)
    except CkptError:
        return []
    parents = {p for _, p in fitting.values() if p is not None}
    misfits = [k for k, (fit, _) in fitting.items() if not fit]
    if not misfits and len(parents) < 2:
        return []  # one history, in several threads
    said = misfits or list(fitting)
    places: list[PlaceRecord] = []
    for key in said:
        other = next((k.thread_id for k in fitting if k.thread_id != key.thread_id), thread_id)
        places.append(
            place(
                key.thread_id,
                key.checkpoint_ns,
                checkpoint_id,
                detail=f"the same checkpoint id is in thread {mention(other)}"
                + (
                    "; it does not follow from its parent here"
                    if misfits
                    else ", with another parent"
                ),
            )
        )
    return places


def at_home(store: Store, thread_id: str, keys: list[CheckpointKey]) -> bool:
    """Whether the checkpoint some writes name, found in another thread, belongs there
    (it follows from its parent there): the writes were copied from that thread, and
    no checkpoint of this one is lost. One that does not was moved away from here."""
    try:
        return any(fits(store, k)[0] for k in keys if k.thread_id != thread_id)
    except CkptError:
        return False


def fits(store: Store, key: CheckpointKey) -> tuple[bool, str | None]:
    """Whether the checkpoint at `key` follows from its parent in its own thread (or has
    none), and that parent."""
    child = store.load(key, values=False)
    parent_id = child.parent_checkpoint_id
    if parent_id is None:
        return True, None
    try:
        parent = store.load(
            CheckpointKey(key.thread_id, key.checkpoint_ns, parent_id), values=False
        )
    except NotFound:
        return False, parent_id
    if child.step is not None and parent.step is not None and child.step <= parent.step:
        return False, parent_id
    for channel, before in parent.channel_versions.items():
        now = child.channel_versions.get(channel)
        if now is not None and version_after(before, now):
            return False, parent_id
    return True, parent_id
