"""Generated damage for the fixture stores (issue 42 §1), and LangGraph as the oracle.

A store is a list of rows (`Row`: a checkpoint, its metadata and body, a pending write, a
blob, or a store's other records), each a mapping of its fields as the store keeps them.
`generate` makes every damage of one row at a time: each field (and each key of a field
that holds a map: the checkpoint body, the metadata, a document) nulled, emptied,
truncated, retyped, its bytes flipped; the row deleted, duplicated, moved into another
thread with its parent link kept or relinked onto that thread's newest checkpoint. A
`Kind` (tests/damage_stores.py) writes those changes into a real store.

`thread_view` is what LangGraph's own saver makes of one thread: `get_tuple`, `list` and
`get_state_history` through the thread's compiled graph. `judge` compares it with the
undamaged store's: "raises", "shape" (a checkpoint or pending write missing, added or
linked elsewhere, or a loaded value of another type or shape), "values" (the same shape,
other values: one valid value changed into another, out of reach of any check without
encryption) or "same".
"""

from __future__ import annotations

import json
import random
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.base.id import uuid6

__all__ = [
    "Damage",
    "Kind",
    "Refused",
    "Row",
    "Tally",
    "generate",
    "judge",
    "run",
    "sample",
    "thread_view",
]


@dataclass(frozen=True)
class Row:
    """One row of a store: `table` names its type ("checkpoints", "writes", "blobs", or a
    store's own), `ref` finds it again in the store, `fields` are its values."""

    table: str
    ref: Any
    thread: str
    fields: dict[str, Any]

    @property
    def checkpoint_id(self) -> str | None:
        found = self.fields.get("checkpoint_id")
        return found if isinstance(found, str) else None


@dataclass(frozen=True)
class Update:
    row: Row
    fields: dict[str, Any]  # the fields that change, with their new values


@dataclass(frozen=True)
class Delete:
    row: Row


@dataclass(frozen=True)
class Insert:
    table: str
    fields: dict[str, Any]
    like: Row  # the row it was made from (its store-specific parts)


Op = Update | Delete | Insert


@dataclass(frozen=True)
class Damage:
    """One damage: a name saying what it does, the threads it touches, its changes."""

    name: str
    threads: frozenset[str]
    ops: tuple[Op, ...]
    # A thread whose oldest checkpoint of a namespace this damage takes away (deleted, or
    # moved to another thread): the shape retention leaves (TTL, a hand DELETE), a note.
    pruned: str | None = None
    # The thread that loses a checkpoint no other names as its parent, or a pending write
    # (deleted, or moved to another thread): what is left there is a whole chain of valid
    # parts (a thread rewound, a task that wrote less), out of reach like a value changed
    # into another (unless what is left, or the row moved, gives it away).
    leaf: str | None = None


class Kind(Protocol):
    """A store kind as the damage test drives it (tests/damage_stores.py)."""

    name: str
    thread_field: str  # the field that names a row's thread

    def rows(self) -> list[Row]: ...
    def apply(self, ops: Sequence[Op]) -> None: ...  # raises: the store refuses the damage
    def reset(self) -> None: ...  # back to the undamaged store
    def target(self) -> str: ...  # what `ckpt check` is given
    def saver(self) -> AbstractContextManager[BaseCheckpointSaver[Any]]: ...
    def moved(self, row: Row, thread: str) -> dict[str, Any]: ...  # fields of row in thread


# -- the damages -----------------------------------------------------------------------------


def _flip(data: bytes, at: float) -> bytes:
    if not data:
        return b"\xff"
    index = min(int(len(data) * at), len(data) - 1)
    return data[:index] + bytes([data[index] ^ 0xFF]) + data[index + 1 :]


def mutations(value: Any) -> Iterator[tuple[str, Any]]:
    """Every damaged value of `value`: (what was done, the new value)."""
    if value is not None:
        yield "null", None
    if isinstance(value, bool):
        yield "flipped", not value
        yield "retyped", str(value).lower()
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        if data:
            yield "empty", b""
            yield "truncated", data[: len(data) // 2]
            yield "cut-last", data[:-1]
        yield "retyped", data.decode("latin-1")
        for at in (0.0, 0.5, 0.99):
            yield f"flipped@{at}", _flip(data, at)
    elif isinstance(value, str):
        if value:
            yield "empty", ""
            yield "truncated", value[: len(value) // 2]
            yield "flipped", value[:-1] + ("x" if value[-1:] != "x" else "y")
        yield "retyped", 7
    elif isinstance(value, (int, float)):
        yield "retyped", str(value)
        yield "flipped", value + 1
        yield "negated", -value - 1
    elif isinstance(value, dict):
        if value:
            yield "empty", {}
        yield "retyped", "x"
        yield "retyped-list", list(value.values())
    elif isinstance(value, (list, tuple)):
        if value:
            yield "empty", type(value)()
            yield "truncated", type(value)(value[:-1])
        yield "retyped", "x"
    elif value is None:
        yield "retyped", "x"
        yield "retyped-int", 0


# A field holding a map, encoded: how to take it apart and put it back the same way.
Codec = tuple[Callable[[Any], dict[str, Any] | None], Callable[[dict[str, Any], Any], Any]]


def _msgpack_map(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, (bytes, bytearray)) or not value:
        return None
    try:
        decoded = ormsgpack.unpackb(
            bytes(value), ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS
        )
    except Exception:
        return None
    return decoded if isinstance(decoded, dict) else None


def _json_map(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, (bytes, bytearray, str)) or not value:
        return None
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _plain_map(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


CODECS: tuple[Codec, ...] = (
    (_plain_map, lambda changed, _was: changed),
    (
        _msgpack_map,
        lambda changed, _was: ormsgpack.packb(changed, option=ormsgpack.OPT_NON_STR_KEYS),
    ),
    (
        _json_map,
        lambda changed, was: (
            json.dumps(changed).encode() if isinstance(was, bytes) else json.dumps(changed)
        ),
    ),
)


def _inner(value: Any, depth: int) -> Iterator[tuple[str, Any]]:
    """Damages inside a field that holds a map (plain, msgpack or JSON): each key removed,
    each key's value damaged, and one level further down."""
    for unpack, pack in CODECS:
        decoded = unpack(value)
        if decoded is None:
            continue

        changes: list[tuple[str, Any]] = []
        for key, inner in decoded.items():
            changes.append((f"[{key}]:deleted", {k: v for k, v in decoded.items() if k != key}))
            for what, changed in mutations(inner):
                changes.append((f"[{key}]:{what}", {**decoded, key: changed}))
            if depth > 1 and isinstance(inner, (dict, list, tuple)):
                for what, changed in _inner(inner, depth - 1):
                    changes.append((f"[{key}]{what}", {**decoded, key: changed}))
        for what, changed in changes:
            try:
                encoded = pack(changed, value)
            except (TypeError, ValueError):  # not encodable the same way: not generated
                continue
            yield what, encoded
        return
    if isinstance(value, (list, tuple)) and 0 < len(value) <= 4:  # a typed pair: (type, bytes)
        for index, inner in enumerate(value):
            for what, changed in mutations(inner):
                yield (
                    f"[{index}]:{what}",
                    type(value)([*value[:index], changed, *value[index + 1 :]]),
                )


def _newest(rows: Sequence[Row], thread: str) -> Row | None:
    checkpoints = [r for r in rows if r.table == "checkpoints" and r.thread == thread]
    root = [r for r in checkpoints if not r.fields.get("checkpoint_ns")]
    return max(root or checkpoints, key=lambda r: str(r.checkpoint_id), default=None)


def _is_oldest(rows: Sequence[Row], row: Row) -> bool:
    if row.table != "checkpoints":
        return False
    ns = row.fields.get("checkpoint_ns")
    same = [
        r.checkpoint_id
        for r in rows
        if r.table == "checkpoints"
        and r.thread == row.thread
        and r.fields.get("checkpoint_ns") == ns
    ]
    return row.checkpoint_id == min(i for i in same if i is not None)


def generate(kind: Kind, rows: Sequence[Row], depth: int = 2) -> Iterator[Damage]:
    """Every damage of one row of `rows` at a time (see the module docstring)."""
    threads = sorted({r.thread for r in rows})
    for index, row in enumerate(rows):
        where = f"{row.table}#{index}@{row.thread}"
        one = frozenset({row.thread})
        pruned = row.thread if _is_oldest(rows, row) else None
        leaf = (
            "writes" in row.table
            or row.table == "checkpoints"
            and not any(
                r.table == "checkpoints"
                and r.thread == row.thread
                and r.fields.get("parent_checkpoint_id") == row.checkpoint_id
                for r in rows
            )
        )
        left = row.thread if leaf and pruned is None else None
        for name, value in row.fields.items():
            if name.startswith("_"):
                continue
            # Its thread changed: the row leaves its thread (for another, or for none).
            leaves = name == kind.thread_field
            for what, changed in mutations(value):
                yield Damage(
                    f"{where}.{name}:{what}",
                    one,
                    (Update(row, {name: changed}),),
                    pruned if leaves else None,
                    left if leaves else None,
                )
            for what, changed in _inner(value, depth):
                yield Damage(f"{where}.{name}{what}", one, (Update(row, {name: changed}),))
        yield Damage(f"{where}:deleted", one, (Delete(row),), pruned, left)
        duplicate = dict(row.fields)
        if row.table == "checkpoints":
            duplicate["checkpoint_id"] = str(uuid6())
        elif "idx" in duplicate and isinstance(duplicate["idx"], int):
            duplicate["idx"] = duplicate["idx"] + 1000
        elif "version" in duplicate and isinstance(duplicate["version"], str):
            duplicate["version"] = duplicate["version"] + "0"
        yield Damage(f"{where}:duplicated", one, (Insert(row.table, duplicate, row),))
        other = threads[(threads.index(row.thread) + 1 + index % (len(threads) - 1)) % len(threads)]
        both = frozenset({row.thread, other})
        moved = kind.moved(row, other)
        yield Damage(
            f"{where}:moved-to:{other}",
            both,
            (Delete(row), Insert(row.table, moved, row)),
            pruned,
            left,
        )
        yield Damage(f"{where}:copied-to:{other}", both, (Insert(row.table, moved, row),))
        newest = _newest(rows, other)
        if row.table == "checkpoints" and newest is not None and "parent_checkpoint_id" in moved:
            linked = {**moved, "parent_checkpoint_id": newest.checkpoint_id}
            yield Damage(
                f"{where}:moved-linked-to:{other}",
                both,
                (Delete(row), Insert(row.table, linked, row)),
                pruned,
                left,
            )


def sample(damages: Iterable[Damage], count: int, seed: int = 42) -> list[Damage]:
    """`count` of `damages`, the same ones on every run."""
    every = list(damages)
    return random.Random(seed).sample(every, min(count, len(every)))


def batches(damages: Sequence[Damage], threads: Sequence[str]) -> Iterator[list[Damage]]:
    """Damages grouped so that no two in a group touch one thread, and at least a third of
    the threads stay undamaged in each group (the controls no error may name)."""
    limit = max(1, (len(threads) * 2) // 3)
    pending = list(damages)
    while pending:
        group: list[Damage] = []
        touched: set[str] = set()
        rest: list[Damage] = []
        for damage in pending:
            if not (damage.threads & touched) and len(touched | damage.threads) <= limit:
                group.append(damage)
                touched |= damage.threads
            else:
                rest.append(damage)
        yield group
        pending = rest


# -- the oracle -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {repr(k) if not isinstance(k, str) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        with warnings.catch_warnings():  # a damaged message's fields warn as they dump
            warnings.simplefilter("ignore")
            dumped = value.model_dump()
        return [type(value).__name__, _plain(dumped)]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return [type(value).__name__, _plain(vars(value))]
    return value


def _text(value: Any) -> str:
    return json.dumps(_plain(value), default=repr, sort_keys=True)


def _types(values: Any) -> list[str]:
    return sorted({type(v).__name__ for v in values})


# LangGraph's Checkpoint (langgraph.checkpoint.base): what a saver passes through beside
# them (RedisSaver's "type") is the saver's own.
CHECKPOINT_FIELDS = frozenset(
    {"v", "id", "ts", "channel_values", "channel_versions", "versions_seen",
     "updated_channels", "pending_sends"}
)  # fmt: skip


def _frame(checkpoint: Any, checkpoint_id: str, metadata: Any) -> Any:
    """The parts of a loaded checkpoint whose shape LangGraph itself defines (format.md
    §2): the body's keys and their types, its format version, the types of its versions
    and of the channel names in `updated_channels`, whether its id is the row's; whether
    metadata is a map with a number `step`, (if any) a string `source` and (if any) a map
    of `parents` (LangGraph writes checkpoints without `source` itself: a DeltaChannel's
    exit snapshot has `{"step": -2}` alone). Channel values, write values, which channels
    and nodes the versions name and the application's own metadata keys are values: any
    that loads is valid."""
    if not isinstance(checkpoint, dict):
        return type(checkpoint).__name__
    optional = ("updated_channels", "pending_sends")
    frame: dict[str, Any] = {
        k: type(v).__name__
        for k, v in checkpoint.items()
        if k in CHECKPOINT_FIELDS and (k not in optional or not isinstance(v, (list, type(None))))
    }
    frame["v"] = checkpoint.get("v")
    frame["id"] = checkpoint.get("id") == checkpoint_id
    versions = checkpoint.get("channel_versions")
    seen = checkpoint.get("versions_seen")
    every = list(versions.values()) if isinstance(versions, dict) else []
    if isinstance(seen, dict):
        frame["versions_seen"] = [t for t in _types(seen.values()) if t != "dict"]
        every += [x for m in seen.values() if isinstance(m, dict) for x in m.values()]
    kinds = _types(every)  # of one kind, strings or numbers
    frame["versions"] = kinds if len(kinds) > 1 or set(kinds) - {"str", "int", "float"} else "ok"
    updated = checkpoint.get("updated_channels")
    if updated is None or isinstance(updated, list):  # else its type, named above
        frame["updated_channels"] = [t for t in _types(updated or []) if t != "str"]
    if not isinstance(metadata, dict):
        frame["metadata"] = type(metadata).__name__
    else:
        frame["metadata"] = [
            type(metadata.get("source", "")).__name__,
            type(metadata.get("step")).__name__,
            type(metadata.get("parents", {})).__name__,
        ]
    return frame


@dataclass(frozen=True)
class View:
    """What LangGraph makes of one thread: its shape (which checkpoints, linked how, with
    which pending writes, each of the shape LangGraph writes), and the values it loaded."""

    shape: str
    values: str


def thread_view(saver: BaseCheckpointSaver[Any], graph: Any, thread: str) -> View | str:
    """One thread through LangGraph, or the name of what it raised."""
    config: Any = {"configurable": {"thread_id": thread}}
    try:
        latest = saver.get_tuple(config)
        listed = list(saver.list(config))
        history = list(graph.get_state_history(config)) if graph is not None else []
    except Exception as exc:  # the damage makes LangGraph raise
        return type(exc).__name__
    shape: list[Any] = []
    values: list[Any] = []
    for tup in ([latest] if latest else []) + listed:
        configurable = tup.config["configurable"]
        parent = tup.parent_config["configurable"] if tup.parent_config else {}
        writes = [list(w) for w in tup.pending_writes or []]
        shape.append(
            [
                configurable.get("checkpoint_ns", ""),
                configurable["checkpoint_id"],
                parent.get("checkpoint_id"),
                parent.get("checkpoint_ns"),
                _frame(tup.checkpoint, configurable["checkpoint_id"], tup.metadata),
                sorted(_text([w[0], type(w[1]).__name__]) for w in writes),
            ]
        )
        values.append(
            {
                "checkpoint": (
                    {k: v for k, v in tup.checkpoint.items() if k != "ts"}
                    if isinstance(tup.checkpoint, dict)
                    else tup.checkpoint  # a body that loads as no map: its shape says so
                ),
                "metadata": tup.metadata,
                # Sorted: RedisSaver's order is its search index's, which changes as
                # documents are written back (a reader's order, not the store's).
                "writes": sorted(writes, key=_text),
            }
        )
    for snapshot in history:
        parent = snapshot.parent_config["configurable"] if snapshot.parent_config else {}
        shape.append(
            [snapshot.config["configurable"]["checkpoint_id"], parent.get("checkpoint_id")]
        )
        values.append(
            {
                "values": snapshot.values,
                "metadata": snapshot.metadata,
                "next": snapshot.next,
                "tasks": [(t.name, t.error is not None, len(t.interrupts)) for t in snapshot.tasks],
            }
        )
    return View(_text(shape), _text(values))


def judge(before: View | str, after: View | str) -> str:
    """How LangGraph's reading of a thread changed: "raises", "shape", "values" or "same"."""
    if isinstance(after, str):
        return "same" if after == before else "raises"
    if isinstance(before, str):
        return "shape"
    if after.shape != before.shape:
        return "shape"
    return "values" if after.values != before.values else "same"


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """What a run of damages found, for one store kind."""

    kind: str
    tried: int = 0
    refused: int = 0  # the store would not hold the damaged value (a typed column)
    store_refused: int = 0  # ckpt refuses the whole store (exit 4, one line): never a pass
    harmless: int = 0  # LangGraph reads every thread as before
    broken: int = 0  # LangGraph raises or reads a history of another shape
    caught: int = 0  # ... and check marks the thread with an error
    out_of_reach: int = 0  # valid values changed into other valid values, not caught
    leaves_unnamed: int = 0  # threads left as whole chains (a leaf gone) check did not name
    values_caught: int = 0  # ... caught anyway (another part gave it away)
    pruned: int = 0  # the oldest checkpoint deleted: retention's shape, a note
    flagged_harmless: int = 0  # check names a damaged thread LangGraph reads the same
    misses: list[str] = field(default_factory=list)  # broken, not marked with an error
    false_alarms: list[str] = field(default_factory=list)  # undamaged thread marked
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"{self.kind}: {self.tried} damages, {self.refused} refused by the store, "
            f"{self.store_refused} stores refused by ckpt, "
            f"{self.broken} broken, {self.caught} caught, {self.pruned} pruned (note), "
            f"{self.out_of_reach} out of reach (+{self.values_caught} value changes caught; "
            f"{self.leaves_unnamed} threads left whole not named), "
            f"{self.harmless} harmless ({self.flagged_harmless} flagged), "
            f"{len(self.misses)} missed, {len(self.false_alarms)} false alarms, "
            f"{self.seconds:.1f} s"
        )


def run(
    kind: Kind,
    damages: Sequence[Damage],
    error_threads: Callable[[str], set[str] | None],
    graphs: Callable[[BaseCheckpointSaver[Any]], dict[str, Any]],
) -> Tally:
    """Apply `damages` to `kind`'s store a group at a time (one damage per thread), run
    `error_threads` (the threads `ckpt check` marks with an error; None when ckpt refuses
    the whole store, exit 4) and LangGraph on each damaged store, and tally what each
    damage did and whether check caught it."""
    tally = Tally(kind.name)
    started = time.process_time()
    kind.reset()
    with kind.saver() as saver:
        compiled = graphs(saver)
        threads = sorted({r.thread for r in kind.rows()})
        baseline = {t: thread_view(saver, compiled.get(t), t) for t in threads}
    assert error_threads(kind.target()) == set(), "errors on the undamaged store"
    pending = list(batches(damages, threads))
    while pending:
        group = pending.pop(0)
        applied: list[Damage] = []
        for damage in group:
            try:
                kind.apply(damage.ops)
            except Refused:
                tally.refused += 1
                continue
            applied.append(damage)
        flagged = error_threads(kind.target())
        if flagged is None and len(applied) > 1:  # which one? each alone
            kind.reset()
            pending[:0] = [[d] for d in applied]
            continue
        with kind.saver() as saver:
            compiled = graphs(saver)
            after = {t: thread_view(saver, compiled.get(t), t) for t in threads}
        kind.reset()
        if flagged is None:
            tally.tried += len(applied)
            tally.store_refused += len(applied)
            continue
        _tally(tally, applied, flagged, baseline, after)
    tally.seconds = time.process_time() - started
    return tally


def _tally(
    tally: Tally,
    applied: Sequence[Damage],
    flagged: set[str],
    baseline: dict[str, View | str],
    after: dict[str, View | str],
) -> None:
    touched = set().union(*(d.threads for d in applied)) if applied else set()
    for thread in sorted(set(baseline) - touched):
        assert judge(baseline[thread], after[thread]) == "same", (
            f"{thread}, undamaged, reads otherwise beside {[d.name for d in applied]}: "
            f"{_first_difference(baseline[thread], after[thread])}"
        )
        if thread in flagged:
            tally.false_alarms.append(f"{thread} (beside {[d.name for d in applied]})")
    for damage in applied:
        tally.tried += 1
        verdicts = {t: judge(baseline[t], after[t]) for t in damage.threads if t in after}
        must = {t for t, v in verdicts.items() if v in ("raises", "shape")}
        if damage.pruned in must:
            must.discard(damage.pruned)
            tally.pruned += 1
        if damage.leaf in must and damage.leaf not in flagged:
            # Left as a whole chain: judged as the other threads are, if any.
            must.discard(damage.leaf)
            tally.leaves_unnamed += 1
            if not must:
                tally.out_of_reach += 1
                continue
        if must:
            tally.broken += 1
            if must <= flagged:
                tally.caught += 1
            else:
                missed = sorted(must - flagged)
                tally.misses.append(
                    f"{damage.name}: {missed} "
                    + ", ".join(f"{t}={verdicts[t]}/{_said(after[t])}" for t in missed)
                )
        elif "values" in verdicts.values():
            if damage.threads & flagged:
                tally.values_caught += 1
            else:
                tally.out_of_reach += 1
        elif damage.pruned is None:
            tally.harmless += 1
            if damage.threads & flagged:
                tally.flagged_harmless += 1


def _first_difference(before: View | str, after: View | str) -> str:
    if isinstance(before, str) or isinstance(after, str):
        return f"{_said(before)} -> {_said(after)}"
    for part in ("shape", "values"):
        old, new = json.loads(getattr(before, part)), json.loads(getattr(after, part))
        for was, now in zip(old, new, strict=False):
            path = ""
            while was != now and type(was) is type(now) and isinstance(was, (dict, list)):
                keys = list(was) if isinstance(was, dict) else list(range(len(was)))
                if isinstance(was, list) and len(was) != len(now):
                    break
                if isinstance(was, dict) and set(was) != set(now):
                    break
                key = next(k for k in keys if was[k] != now[k])
                path, was, now = f"{path}/{key}", was[key], now[key]
            if was != now:
                return f"{part} at {path}: {json.dumps(was)[:200]} -> {json.dumps(now)[:200]}"
        if len(old) != len(new):
            return f"{part}: {len(old)} -> {len(new)} entries"
    return "the same"


def _said(view: View | str) -> str:
    return view if isinstance(view, str) else "read"


class Refused(Exception):
    """The store would not hold a damaged value (a typed column, a constraint)."""
