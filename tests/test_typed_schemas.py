"""Each record's TypedDict (ckpt.records.types, .runs) and its JSON Schema (docs/*.schema.json)
say the same: the same keys at every depth, the same required ones, the same Literal
choices as enums. The records are checked against the schemas on real output elsewhere
(tests/schemas.py); this holds the two descriptions to each other, so that neither drifts
on a key no fixture happens to print."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

import pytest

from ckpt.records import runs
from ckpt.records import types as records

DOCS = Path(__file__).resolve().parent.parent / "docs"
ROOTS = {
    "thread.schema.json": records.ThreadRecord,
    "checkpoint.schema.json": records.CheckpointRecord,
    "check.schema.json": records.CheckRecord,
    "copy.schema.json": runs.CopyRecord,
    "migrate.schema.json": runs.MigrateRecord,
    "behind.schema.json": runs.MigrationBehindRecord,
    "prune.schema.json": runs.PruneRecord,
    "stats.schema.json": records.StatsRecord,
    "types.schema.json": records.TypesRecord,
    "vacuum.schema.json": records.VacuumRecord,
}


def other_schema(file: str) -> dict[str, Any]:
    """Another schema of docs/, its own `#/...` refs made to point into it."""

    def moved(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (f"{file}{v}" if k == "$ref" and v.startswith("#") else moved(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [moved(v) for v in node]
        return node

    loaded: dict[str, Any] = moved(json.loads((DOCS / file).read_text()))
    return loaded


def has(kind: Any, name: str) -> bool:
    """Whether a schema `type` (one name or a list of them) admits `name`."""
    return kind == name or (isinstance(kind, list) and name in kind)


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def strip(tp: Any) -> Any:
    """The annotation without NotRequired/Required/Final wrappers."""
    while get_origin(tp) in (NotRequired, Required):
        tp = get_args(tp)[0]
    return tp


class Walk:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self.problems: list[str] = []
        self.seen: set[tuple[int, int]] = set()

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """A node with its `$ref`s followed, into another schema file of docs/ too."""
        while "$ref" in node:
            file, _, fragment = node["$ref"].partition("#")
            if file and not fragment:
                return {}  # a whole other schema (value.schema.json: decoded values)
            target: Any = other_schema(file) if file else self.root
            for part in fragment.strip("/").split("/"):
                target = target[part]
            node = target
        return node

    def branches(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The alternatives of a node (anyOf/oneOf), each resolved; a node without any is one."""
        node = self.resolve(node)
        for word in ("anyOf", "oneOf"):
            if word in node:
                return [b for sub in node[word] for b in self.branches(sub)]
        return [node]

    def typed(self, tp: Any, node: dict[str, Any], where: str) -> None:
        """An annotation against a schema node."""
        tp = strip(tp)
        origin = get_origin(tp)
        if origin in (Union, types.UnionType):
            options = [a for a in get_args(tp) if a is not type(None)]
            if len(options) == 1:
                tp, origin = options[0], get_origin(options[0])
            else:
                return  # a union of several shapes: the real-output checks hold it
        nodes = [b for b in self.branches(node) if b.get("type") != "null"]
        kinds = [b.get("type") for b in nodes]
        if is_typeddict(tp):
            objects = [b for b in nodes if "properties" in b]
            if len(objects) != 1:
                self.problems.append(f"{where}: {tp.__name__} has no one object schema")
                return
            self.typed_dict(tp, objects[0], where)
        elif origin is list:
            (item,) = get_args(tp)
            arrays = [
                b for b, k in zip(nodes, kinds, strict=True) if has(k, "array") and "items" in b
            ]
            if is_typeddict(strip(item)) or get_origin(strip(item)) is Literal:
                if len(arrays) != 1:
                    self.problems.append(f"{where}: a list with no one array schema")
                    return
                self.typed(item, arrays[0]["items"], f"{where}[]")
        elif origin is dict:
            _, value = get_args(tp)
            maps = [b for b in nodes if isinstance(b.get("additionalProperties"), dict)]
            if is_typeddict(strip(value)) and len(maps) == 1:
                self.typed(value, maps[0]["additionalProperties"], f"{where}{{}}")
        elif origin is Literal:
            enums = [b for b in nodes if "enum" in b or "const" in b]
            if not enums:
                self.problems.append(f"{where}: Literal {get_args(tp)} has no enum in the schema")
                return
            allowed = {v for b in enums for v in b.get("enum", [b.get("const")])}
            if set(get_args(tp)) != allowed - {None}:
                self.problems.append(
                    f"{where}: Literal {sorted(map(str, get_args(tp)))} != enum "
                    f"{sorted(map(str, allowed - {None}))}"
                )

    def typed_dict(self, td: Any, node: dict[str, Any], where: str) -> None:
        key = (id(td), id(node))
        if key in self.seen:
            return
        self.seen.add(key)
        hints = typing.get_type_hints(td, include_extras=True)
        props = node.get("properties", {})
        if set(hints) != set(props):
            missing = sorted(set(hints) - set(props))
            extra = sorted(set(props) - set(hints))
            self.problems.append(
                f"{where} ({td.__name__}): not in the schema {missing}, "
                f"not in the TypedDict {extra}"
            )
        required = set(node.get("required", []))
        # Python 3.11 cannot see NotRequired in postponed annotations (__required_keys__
        # counts every key): read it from the resolved hints.
        must = {
            k
            for k, tp in hints.items()
            if get_origin(tp) is Required or (td.__total__ and get_origin(tp) is not NotRequired)
        }
        only_schema = sorted((required & set(hints)) - must)
        if must != required & set(hints):
            self.problems.append(
                f"{where} ({td.__name__}): required in the TypedDict but not the schema "
                f"{sorted(must - required)}, required in the schema only {only_schema}"
            )
        for name, tp in hints.items():
            if name in props:
                self.typed(tp, props[name], f"{where}.{name}")


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_typeddict_and_the_schema_say_the_same(name: str) -> None:
    schema = json.loads((DOCS / name).read_text())
    walk = Walk(schema)
    walk.typed(ROOTS[name], schema, name.removesuffix(".schema.json"))
    assert walk.problems == []


def test_every_record_schema_is_compared() -> None:
    # value.schema.json describes decoded values (marked records), not a TypedDict.
    assert {p.name for p in DOCS.glob("*.schema.json")} == set(ROOTS) | {"value.schema.json"}


def test_the_comparison_finds_a_drift() -> None:
    class Probe(typing.TypedDict):
        a: int
        b: NotRequired[Literal["x", "y"]]

    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"enum": ["x"]}, "c": {}},
    }
    walk = Walk(schema)
    walk.typed(Probe, schema, "probe")
    assert len(walk.problems) == 3
