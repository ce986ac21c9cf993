"""Two checkpoints and what differs between them: the object `ckpt diff` and `browse`
compare with (the changes themselves: ckpt.analysis.changes, imported when asked)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ckpt.decoders import MARK_KEY
from ckpt.errors import NotFound, RefusedGlobal
from ckpt.records.types import CheckpointRecord, PatchOperation

if TYPE_CHECKING:
    from ckpt.analysis.changes import Change


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two checkpoints and what differs between them (`ckpt diff`): `a` and `b` are their
    records (`show --json --blobs`), `changes` every difference in order (ckpt.analysis.changes)."""

    a: CheckpointRecord
    b: CheckpointRecord
    changes: list[Change]

    @property
    def differ(self) -> bool:
        """Whether they differ in anything but the bytes they take on disk (diff's exit 1)."""
        from ckpt.analysis.changes import differs

        return differs(self.changes)

    @property
    def patch(self) -> list[PatchOperation]:
        """The RFC 6902 JSON Patch that turns `a` into `b` (`ckpt diff --json`)."""
        from ckpt.analysis.changes import json_patch

        return json_patch(self.changes)

    @classmethod
    def of(cls, one: CheckpointRecord, other: CheckpointRecord) -> Comparison:
        """Two records in hand (`ckpt browse`), from the older to the newer (uuid6 ids sort
        by time), whichever came first: later messages then read as added, never removed."""
        from ckpt.analysis.changes import diff_records

        a, b = (one, other) if one["checkpoint_id"] <= other["checkpoint_id"] else (other, one)
        return cls(a, b, diff_records(a, b))

    def compares(self, one: CheckpointRecord, other: CheckpointRecord) -> bool:
        """Whether this is the diff of these very records (either way round)."""
        return {id(one), id(other)} == {id(self.a), id(self.b)}


def the_parent(
    record: CheckpointRecord, parent: CheckpointRecord | None, location: str
) -> CheckpointRecord:
    """`parent`, the checkpoint `record` is compared with when `ckpt diff` is given one;
    RefusedGlobal (exit 9) when its parent id is in what was refused, NotFound (exit 7)
    when it has none."""
    if parent is not None:
        return parent
    body = record.get("checkpoint")
    if isinstance(body, dict) and body.get(MARK_KEY) == "refused":
        raise RefusedGlobal(
            f"refused to load {body.get('global')} from {location}: it is where "
            f"checkpoint {record['checkpoint_id']} of thread {record['thread_id']!r} goes, "
            "so its parent cannot be read; give two checkpoints; nothing was run"
        )
    raise NotFound(
        f"checkpoint {record['checkpoint_id']} of thread {record['thread_id']!r} has "
        "no parent to compare with; give two checkpoints"
    )
