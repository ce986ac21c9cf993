"""docs/value.schema.json describes real decoded output, and docs/json.md's examples follow it."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import ormsgpack
import pytest
from hypothesis import HealthCheck, given, settings

from ckpt.decoders import ABSENT, decode
from decode_cases import ENVELOPES, EXT_CASES, MSGPACK_CASES, TAG_CASES
from decode_values import SERDE, values

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
SCHEMA = json.loads((ROOT / "docs" / "value.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def validate(value: Any) -> None:
    errors = sorted(VALIDATOR.iter_errors(value), key=lambda error: list(error.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_the_schema_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_byte_literal_cases() -> None:
    for _, payload, expected in EXT_CASES + MSGPACK_CASES:
        validate(expected)
        validate(decode("msgpack", payload))
    for tag, payload, expected in TAG_CASES:
        if expected is not ABSENT:
            validate(decode(tag, payload))


def test_legacy_envelopes() -> None:
    for _, envelope, _ in ENVELOPES:
        validate(decode("json", json.dumps(envelope).encode()))


@pytest.mark.parametrize(
    "store",
    [
        "sqlite_checkpoints.db",
        "sqlite_delta.db",
        "legacy_lg0.3.20_cp2.0.21_sqlite.db",
        "legacy_lg0.2.16_cp1.0.9_sqlite.db",
        "sqlite_encrypted.db",
    ],
)
def test_every_blob_of_the_sample_stores(store: str) -> None:
    with sqlite3.connect(f"file:{DATA / store}?mode=ro&immutable=1", uri=True) as connection:
        rows = list(
            connection.execute(
                "SELECT type, checkpoint FROM checkpoints UNION ALL SELECT type, value FROM writes"
            )
        )
    for tag, payload in rows:
        for options in ({}, {"shallow": True}, {"aes_key": b"0123456789abcdef"}):
            value = decode(tag, payload, **options)
            if value is not ABSENT:
                validate(value)


def test_marked_records_of_every_kind() -> None:
    pack = ormsgpack.packb
    cases = [
        decode("msgpack", pack([ormsgpack.Ext(5, pack(["m", "M", {"a": 1}]))]), shallow=True),
        decode("msgpack", pack(ormsgpack.Ext(3, pack(["os", "system", "x", "__call__"])))),
        decode("msgpack", pack(ormsgpack.Ext(2, pack(["m", "M", [1]])))),
        decode("msgpack", pack(ormsgpack.Ext(1, pack(["langgraph.types", "Send", [1]])))),
        decode("msgpack", pack(ormsgpack.Ext(2, pack(["numpy", "ndarray", {"dtype": 1}])))),
        decode("msgpack+aes", b"\x00" * 40),
        decode("opaque-tag", b"\x00"),
    ]
    kinds = set()
    for value in cases:
        validate(value)
        kinds.add(value[0]["__ckpt__"] if isinstance(value, list) else value.get("__ckpt__"))
    assert kinds == {"skipped", "method_call", None, "ext", "encrypted", "opaque"}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(values)
def test_decoded_values_of_every_type(value: Any) -> None:
    tag, payload = SERDE.dumps_typed(value)
    validate(decode(tag, payload))


def _doc_examples() -> list[str]:
    text = (ROOT / "docs" / "json.md").read_text()
    section = text.split("## Decoded values", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```json\n(.*?)\n```", section, re.DOTALL)


def test_the_examples_in_docs_json_md() -> None:
    examples = _doc_examples()
    assert len(examples) >= 10
    for example in examples:
        validate(json.loads(example))
