"""Whether a checkpoint found in two threads belongs where it is: what the integrity visitor
(ckpt.scan.integrity) asks of the store, by key, of a checkpoint id it met twice or of one
that some writes name and their thread lacks; and where a checkpoint that fits no parent
came from, by its versions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import compress, repeat
from operator import ne
from typing import Any

from ckpt.errors import CkptError, NotFound
from ckpt.records.model import CheckpointKey
from ckpt.records.plans import version_number
from ckpt.records.types import PlaceRecord
from ckpt.scan.chains import Node
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


def misplaced_writes(
    store: Store,
    strays: dict[tuple[str, str, str], list[tuple[str, int, str]]],
    group_ids: list[tuple[tuple[str, str], list[str]]],
    write_keys: set[tuple[str, str, str, str, int]],
    look_up: Callable[[str], list[CheckpointKey] | None],
) -> Iterator[tuple[str, str, str, str]]:
    """Writes whose checkpoint is in another thread or namespace (`strays`, by (thread,
    ns, checkpoint id) -> [(task id, idx, channel)]): where that checkpoint lacks them,
    they were moved away from it (LangGraph loads it without them). The checkpoint is
    looked for among the batch's (`group_ids`, whose writes are `write_keys`), else by
    `look_up` (None: no more look-ups). Yields (its thread, ns, id, what is wrong)."""
    found_in: dict[str, list[tuple[str, str]]] = {}
    if strays:
        for key, ids in group_ids:
            for checkpoint_id in ids:
                found_in.setdefault(checkpoint_id, []).append(key)
    for (thread_id, ns, checkpoint_id), writes in strays.items():
        homes = found_in.get(checkpoint_id)
        batch = homes is not None
        if homes is None:
            found = look_up(checkpoint_id)
            if found is None:
                continue
            homes = [(k.thread_id, k.checkpoint_ns) for k in found]
        for home_thread, home_ns in homes:
            if (home_thread, home_ns) == (thread_id, ns):
                continue
            if batch:
                lost = [
                    w for w in writes
                    if (home_thread, home_ns, checkpoint_id, w[0], w[1]) not in write_keys
                ]  # fmt: skip
            else:
                try:
                    kept = store.load(
                        CheckpointKey(home_thread, home_ns, checkpoint_id), values=False
                    ).pending_writes
                except CkptError:
                    continue
                have = {(w.task_id, w.idx) for w in kept or []}
                lost = [w for w in writes if (w[0], w[1]) not in have]
            if lost:
                where = f"namespace {ns!r}" if home_thread == thread_id else f"thread {thread_id}"
                yield (
                    home_thread,
                    home_ns,
                    checkpoint_id,
                    f"{len(lost)} of its pending writes are filed under {where}",
                )


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
    return version_misfit(child.channel_versions, parent.channel_versions) is None, parent_id


# A checkpoint that may have been the parent of one moved away (Integrity.ends): thread,
# ns, checkpoint id, step and the versions that are LangGraph's strings with a random part.
OpenEnd = tuple[str, str, str, int | float | None, dict[str, str]]


def version_misfit(versions: dict[Any, Any], before: dict[Any, Any]) -> str | None:
    """What says that a checkpoint with channel versions `versions` is no child of one
    with `before`, or None. Each of its channels keeps the parent's version or has a later
    one: LangGraph gives every channel a step updates one new version, the next after the
    highest of the namespace (format.md §3.4: `get_next_version(max(versions))`), so a
    version that changed and does not pass every version of the parent is another
    thread's. Versions compare by their count: an int, or the integer before the first
    dot of LangGraph's padded strings (`version_number`). Most channels keep theirs, and
    those a step changed share one version: found in C, each new version compared once."""
    values = before.values()
    changed = [*compress(before, map(ne, map(versions.get, before, values), values))]
    if len(versions) > len(before):
        changed += [c for c in versions if c not in before]
    if not changed:
        return None
    try:
        # The highest count (for padded strings, the highest string), or less: a string
        # of a shorter count may sort higher, and its count is one of theirs.
        top = max(values) if values else None
        news = {versions[c] for c in changed}
    except TypeError:  # versions of several types, or one that does not hash
        top, news = None, set()
    if top is not None and all(map(_passes, news, repeat(top))):
        return None
    for channel in changed:  # which one, and how
        now, was = versions[channel], before.get(channel)
        if was is not None and type(now) is type(was):
            try:
                if now < was:
                    return f"channel {channel!r} goes back from version {was} to {now}"
            except TypeError:
                continue
        if top is not None and not _passes(now, top):
            return (
                f"channel {channel!r} has version {now}, which a step after its parent "
                f"cannot give (it would pass the parent's versions, up to {top})"
            )
    return None


def _passes(now: Any, top: Any) -> bool:
    """Whether version `now` counts past `top`; True when either has no count (no
    verdict)."""
    if type(now) is str and type(top) is str:
        count, highest = now.partition(".")[0], top.partition(".")[0]
        if len(count) == len(highest) and count.isdigit() and highest.isdigit():
            return count > highest  # LangGraph's padded counts compare as strings
    number, highest_number = version_number(now), version_number(top)
    return number is None or highest_number is None or number > highest_number


def open_ends(
    leaves: list[tuple[tuple[str, str], Node]],
    forks: list[tuple[tuple[str, str], Node]],
    written: set[tuple[str, str, str]],
) -> list[OpenEnd]:
    """The checkpoints of a batch that may have been the parent of one moved away: those
    with two children or more (forks, `forks`), and those with none (`leaves`, by (thread,
    ns)) that pending writes name (`written`: their step ran; a thread's last checkpoint
    has none); with their versions that LangGraph's savers wrote (padded strings with a
    random part, format.md §3.4)."""
    ran = [(key, n) for key, n in leaves if (*key, n.checkpoint_id) in written]
    ends: list[OpenEnd] = []
    for (thread_id, ns), node in ran + forks:
        versions = {
            str(c): v for c, v in (node.versions or {}).items() if type(v) is str and "." in v
        }
        if versions:
            ends.append((thread_id, ns, node.checkpoint_id, node.step, versions))
    return ends


def moved_from(
    misfits: list[tuple[str, str, Node]], open_ends: list[OpenEnd]
) -> Iterator[tuple[str, str, str, str, str]]:
    """Where each checkpoint that fits no parent (thread, ns, its node) came from: a row
    moved from another thread and linked onto a checkpoint of this one. Its versions are
    its true parent's, or later ones, and LangGraph's version strings hold a random part:
    a checkpoint sharing one with another thread's open end, and following from it, was
    that thread's next checkpoint. Yields (that thread, ns, checkpoint id, the open end's
    id, the thread it is filed under)."""
    if not misfits or not open_ends:
        return
    by_version: dict[str, list[OpenEnd]] = {}
    for end in open_ends:
        for version in end[4].values():
            by_version.setdefault(version, []).append(end)
    for thread_id, ns, node in misfits:
        versions = node.versions or {}
        said: set[str] = set()
        for version in versions.values():
            for other, other_ns, parent_id, step, before in by_version.get(version, ()):
                if (
                    other in said
                    or other == thread_id
                    or other_ns != ns
                    or parent_id >= node.checkpoint_id
                    or (step is not None and node.step is not None and node.step <= step)
                    or version_misfit(versions, before) is not None
                ):
                    continue
                said.add(other)
                yield other, ns, node.checkpoint_id, parent_id, thread_id
