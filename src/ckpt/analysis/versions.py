"""The channel-by-checkpoint matrix behind `ckpt versions`: which step moved which channel."""

from __future__ import annotations

from ckpt.analysis.selector import short_id
from ckpt.analysis.status import checkpoint_tasks, task_labels
from ckpt.decoders import parse_version
from ckpt.records.model import Checkpoint
from ckpt.records.types import VersionCell, VersionMatrix, VersionRow


def version_matrix(checkpoints: list[Checkpoint], *, last: int | None = None) -> VersionMatrix:
    """One row per channel, one column per checkpoint (id order = time order in one process).

    A version "moved" when it differs from the parent's (parent link, not the column to
    the left). The writes that moved it hang off the parent (format.md §3.7 attachment rule).
    """
    by_id = {c.checkpoint_id: c for c in checkpoints}
    ordered = sorted(checkpoints, key=lambda c: c.checkpoint_id)
    earlier = max(len(ordered) - last, 0) if last is not None else 0
    ordered = ordered[earlier:]
    channels: list[str] = []
    for cp in ordered:
        for name in cp.channel_versions:
            if name not in channels:
                channels.append(name)
    rows: list[VersionRow] = []
    for name in channels:
        cells: list[VersionCell | None] = []
        for cp in ordered:
            version = cp.channel_versions.get(name)
            if version is None:
                cells.append(None)
                continue
            parent = by_id.get(cp.parent_checkpoint_id or "")
            before = parent.channel_versions.get(name) if parent else None
            moved = before != version
            cell: VersionCell = {
                "version": version,
                "counter": parse_version(version),
                "moved": moved,
                "by": _writers(parent, name, cp) if moved and parent else [],
            }
            if cp.blobs is not None and name in cp.blobs:
                blob = cp.blobs[name]
                cell["blob"] = {"version": blob.version, "type": blob.type, "size": blob.size}
                cell["shared_blob"] = not moved
            cells.append(cell)
        rows.append({"channel": name, "versions": cells})
    return {
        "earlier_checkpoints": earlier,
        "thread_id": ordered[0].thread_id if ordered else None,
        "checkpoint_ns": ordered[0].checkpoint_ns if ordered else "",
        "checkpoints": [
            {
                "checkpoint_id": c.checkpoint_id,
                "short_id": short_id(c.checkpoint_id),
                "step": c.step,
                "source": c.source,
            }
            for c in ordered
        ],
        "channels": rows,
    }


def _writers(parent: Checkpoint, channel: str, child: Checkpoint) -> list[str]:
    """Names of the tasks whose writes on the parent set this channel in the child."""
    if child.source in {"update", "fork"}:
        return ["update_state"]
    names: list[str] = []
    labels = task_labels(parent, checkpoint_tasks(parent))
    for write in parent.pending_writes or []:
        if write.channel != channel:
            continue
        name = labels[write.task_id]
        if name not in names:
            names.append(name)
    if not names and child.source == "input":
        names.append("input")
    if not names and _bumped(child, channel):
        # A version moved only to store a DeltaChannel snapshot (format.md §11): not a write.
        names.append("snapshot bump")
    return names


def _bumped(checkpoint: Checkpoint, channel: str) -> bool:
    marks = checkpoint.versions_seen.get("__snapshot_bumps__")
    if not isinstance(marks, dict):
        return False
    version = checkpoint.channel_versions.get(channel)
    return any(key.endswith(f"|{channel}") and value == version for key, value in marks.items())
