"""A migration as data: a thread's rows in a form every writable store reads into and
writes back from (ckpt.stores), and the steps of a plan (ckpt.ops.migrate rewrites the one
with the other).

The form keeps each stored value as the bytes it is, `(serde tag, bytes)`: a step renames
the names a value is kept under, never the value, so nothing is decoded that the step does
not change. The fields that hold names are plain data: a checkpoint's `channel_versions`,
`versions_seen` and `updated_channels`, its metadata, and a pending write's channel, task
id and task path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

# (serde tag, bytes) of one stored value; inside a SQLite body a value is ("msgpack", its
# bytes), an inline Postgres primitive the same (ckpt.stores.postgres packs it).
Blob = tuple[str | None, bytes | None]
BlobKey = tuple[str, str, str]  # (checkpoint_ns, channel, version)

# The metadata key where a migrated checkpoint lists the names of the steps it went
# through, in order: a second run of the same plan skips them (docs/migrate.md).
MIGRATED_KEY: Final = "ckpt_migrations"

StepKind = Literal["rename_channel", "drop_channel", "rename_node", "add_channel", "transform"]
STEP_KINDS: Final[tuple[StepKind, ...]] = (
    "rename_channel", "drop_channel", "rename_node", "add_channel", "transform"
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Packed:
    """A body field kept as its msgpack bytes (`v`, `ts`, `id`, `pending_sends`, ...)."""

    data: bytes


@dataclass(slots=True)
class MigCheckpoint:
    """One checkpoint. `fields` are its body's fields in stored order: `channel_values`
    is channel -> Blob, `channel_versions` / `versions_seen` / `updated_channels` are plain
    data, any other field is Packed (SQLite) or plain JSON (Postgres)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    fields: dict[str, Any]
    metadata: dict[str, Any]

    @property
    def values(self) -> dict[str, Blob]:
        found = self.fields.get("channel_values")
        return found if isinstance(found, dict) else {}

    @property
    def versions(self) -> dict[str, Any]:
        found = self.fields.get("channel_versions")
        return found if isinstance(found, dict) else {}


@dataclass(slots=True)
class MigWrite:
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    data: bytes | None


@dataclass(slots=True)
class MigrationRows:
    """Every row of one thread. `blobs`: the values a store keeps apart (Postgres), one
    row per (namespace, channel, version), shared by every checkpoint at that version."""

    thread_id: str
    checkpoints: list[MigCheckpoint]
    writes: list[MigWrite]
    blobs: dict[BlobKey, Blob] = field(default_factory=dict)
    # The store keeps non-primitive values apart (Postgres): a value a step adds goes there.
    split: bool = False


def changed_groups(
    before: list[MigWrite], after: list[MigWrite]
) -> dict[tuple[str, str], list[MigWrite]]:
    """The writes of each checkpoint whose writes changed, as they are to be: a store
    deletes that checkpoint's writes and inserts these."""
    old: dict[tuple[str, str], list[MigWrite]] = {}
    new: dict[tuple[str, str], list[MigWrite]] = {}
    for write in before:
        old.setdefault((write.checkpoint_ns, write.checkpoint_id), []).append(write)
    for write in after:
        new.setdefault((write.checkpoint_ns, write.checkpoint_id), []).append(write)
    return {
        key: new.get(key, []) for key in old.keys() | new.keys() if old.get(key) != new.get(key)
    }


@dataclass(frozen=True, slots=True)
class Step:
    """One named step of a plan. `old`/`new`: the names a rename changes (a drop or an
    add names its channel in `old`); `value`: the JSON value an add gives; `function`:
    the user's transform (the Python API only), from the decoded value to the new one."""

    name: str
    kind: StepKind
    old: str
    new: str | None = None
    value: Any = None
    function: Callable[[Any], Any] | None = None


# A store's writer is given this: the rows it read, inside the transaction it writes them
# in; it writes back what it returns (None: nothing to change).
Rewrite = Callable[[MigrationRows], "MigrationRows | None"]
