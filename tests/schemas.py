"""The JSON Schemas of docs/ as the tests hold records to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

DOCS = Path(__file__).resolve().parent.parent / "docs"


def follows_schema(record: Any, name: str) -> None:
    """A record as docs/<name> says (a JSON Schema, itself checked)."""
    schema = json.loads((DOCS / name).read_text())
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(record)
