"""`ckpt check` as the tests run it: the JSON record, validated against its schema, and
its findings by code and by severity."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ckpt.cli import app
from invoke import runner

DOCS = Path(__file__).parent.parent / "docs"
SCHEMA = Draft202012Validator(json.loads((DOCS / "check.schema.json").read_text()))


def check(*args: str, code: int | None = None) -> dict[str, Any]:
    """`ckpt check ARGS --json`: the record, validated against its schema; stderr holds
    the store's notices only."""
    result = runner.invoke(app, ["check", *args, "--json", "--quiet"])
    assert all(line.startswith("ckpt: note: ") for line in result.stderr.splitlines())
    record: dict[str, Any] = json.loads(result.stdout)
    SCHEMA.validate(record)
    expected = 1 if record["summary"]["error"] else 0
    assert record["status"] == next(
        (s for s in ("error", "warning", "note") if record["summary"][s]), "ok"
    )
    assert result.exit_code == (expected if code is None else code), result.stdout[-2000:]
    return record


def by_code(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in record["findings"]}


def errors(record: dict[str, Any]) -> dict[str, set[str]]:
    """Error findings: code -> the threads named."""
    return {f["code"]: set(f["threads"]) for f in record["findings"] if f["severity"] == "error"}


def moved_and_relinked(store: Path, path: Path, source: str, destination: str) -> str:
    """`store` copied to `path`, with the last root checkpoint of thread `source` (which
    no pending write names) moved into thread `destination` and linked onto its newest:
    the moved checkpoint's id."""
    shutil.copy(store, path)
    newest = "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
    with closing(sqlite3.connect(path)) as conn, conn:
        ((moved,),) = conn.execute(newest, (source,))
        ((target,),) = conn.execute(newest, (destination,))
        ((writes,),) = conn.execute("SELECT count(*) FROM writes WHERE checkpoint_id = ?", (moved,))
        assert not writes
        conn.execute(
            "UPDATE checkpoints SET thread_id = ?, parent_checkpoint_id = ? "
            "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
            (destination, target, source, moved),
        )
    return str(moved)
