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

import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ckpt.errors import BadOption
from ckpt.records.runs import MigrateStepRecord

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
    data, any other field is Packed (SQLite) or plain JSON (Postgres, a JSON body).
    `serde`: how its body and values are stored, "msgpack" (Python LangGraph) or "json"
    (LangGraph.js's SqliteSaver: a JSON body, each value JSON; format.md §11)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    fields: dict[str, Any]
    metadata: dict[str, Any]
    serde: str = "msgpack"

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


def json_bytes(value: Any) -> bytes:
    """`value` as LangGraph.js's serializer writes JSON (`JSON.stringify`: no spaces, no
    escapes of non-ASCII); a lone surrogate, which UTF-8 cannot hold, escaped as JS does."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def json_value(blob: Blob) -> tuple[bool, Any]:
    """(True, the value) of a JSON-tagged value (LangGraph.js), else (False, None)."""
    tag, data = blob
    if tag != "json" or data is None:
        return False, None
    try:
        return True, json.loads(data)
    except ValueError:
        return False, None


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


# -- the plan ----------------------------------------------------------------------------------


def load_plan(path: Path) -> list[Step]:
    """A plan file: TOML, `[[step]]` tables in order, each with a `name` and a `kind`
    (docs/migrate.md)."""
    try:
        document = tomllib.loads(path.read_text())
    except OSError as exc:
        raise BadOption(f"{path}: cannot read the plan ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadOption(f"{path}: not a TOML plan ({exc})") from None
    tables = document.get("step")
    if not isinstance(tables, list) or not tables:
        raise BadOption(f"{path}: no [[step]] tables")
    steps = []
    for number, table in enumerate(tables, 1):
        where = f"{path}: step {number}"
        name, kind = table.get("name"), table.get("kind")
        if not isinstance(name, str) or not name:
            raise BadOption(f'{where}: give it a name (name = "...")')
        if kind not in STEP_KINDS or kind == "transform":
            raise BadOption(
                f"{where}: `kind` must be rename_channel, drop_channel, rename_node or "
                f"add_channel, not {kind!r}"
            )
        if kind in ("rename_channel", "rename_node"):
            old, new = table.get("from"), table.get("to")
            if not isinstance(old, str) or not isinstance(new, str) or old == new:
                raise BadOption(f"{where}: give `from` and `to` (two different names)")
            steps.append(Step(name, kind, old, new))
        else:
            channel = table.get("channel")
            if not isinstance(channel, str) or not channel:
                raise BadOption(f"{where}: give its `channel`")
            if kind == "add_channel" and "value" not in table:
                raise BadOption(f"{where}: give its value (value = ...)")
            steps.append(Step(name, kind, channel, value=table.get("value")))
    check_steps(steps)
    return steps


def check_steps(steps: Sequence[Step]) -> None:
    if not steps:
        raise BadOption(
            "give at least one step: `rename_channel`, `drop_channel`, `rename_node`, "
            "`add_channel` or `plan`"
        )
    names = [s.name for s in steps]
    if len(set(names)) < len(names):
        raise BadOption("two steps have the same name")
    for step in steps:
        if step.kind == "transform" and step.function is None:
            raise BadOption(f"step {step.name!r}: a transform needs its function")


def step_record(step: Step) -> MigrateStepRecord:
    return {
        "name": step.name,
        "kind": step.kind,
        "old": step.old,
        "new": step.new,
        "value": step.value if step.kind == "add_channel" else None,
    }


def steps_of(
    rename_channel: Mapping[str, str] | None,
    drop_channel: Sequence[str],
    rename_node: Mapping[str, str] | None,
    add_channel: Mapping[str, Any] | None,
    transform: Mapping[str, Callable[[Any], Any]] | None,
    plan: str | os.PathLike[str] | Sequence[Step] | None,
) -> list[Step]:
    """The steps of a migration, from a plan or from the options (ckpt.ops.migrate)."""
    given = bool(rename_channel or drop_channel or rename_node or add_channel or transform)
    if plan is not None:
        if given:
            raise BadOption("give the steps either as a plan or as options, not both")
        if isinstance(plan, (str, os.PathLike)):
            return load_plan(Path(plan))
        steps = list(plan)
        check_steps(steps)
        return steps
    steps = [
        *(
            Step(f"rename_channel:{o}={n}", "rename_channel", o, n)
            for o, n in (rename_channel or {}).items()
        ),
        *(Step(f"drop_channel:{c}", "drop_channel", c) for c in drop_channel),
        *(
            Step(f"rename_node:{o}={n}", "rename_node", o, n)
            for o, n in (rename_node or {}).items()
        ),
        *(
            Step(f"add_channel:{c}", "add_channel", c, value=v)
            for c, v in (add_channel or {}).items()
        ),
        *(Step(f"transform:{c}", "transform", c, function=f) for c, f in (transform or {}).items()),
    ]
    check_steps(steps)
    return steps
