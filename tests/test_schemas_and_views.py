"""Thread and history JSON against their schemas, and the human views against snapshots."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode

DOCS = Path(__file__).parent.parent / "docs"
SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = bool(os.environ.get("CKPT_UPDATE_SNAPSHOTS"))
runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "100"})


@cache
def validator(name: str) -> Draft202012Validator:
    schemas = {
        n: json.loads((DOCS / n).read_text())
        for n in ("thread.schema.json", "checkpoint.schema.json", "value.schema.json")
    }
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    registry: Registry[Any] = Registry().with_resources(
        (n, Resource.from_contents(s)) for n, s in schemas.items()
    )
    return Draft202012Validator(schemas[name], registry=registry)


def stores(fixture_dir: Path, samples: Path) -> list[tuple[str, list[str]]]:
    key = ["--aes-key", "0123456789abcdef"]
    return [
        (str(fixture_dir / "chat.sqlite"), []),
        (str(fixture_dir / "encrypted.sqlite"), key),
        (str(fixture_dir / ".langgraph_api"), []),
        (str(fixture_dir / "memory.pkl"), []),
        *((str(p), key if "encrypted" in p.name else []) for p in sorted(samples.glob("*.db"))),
        *((str(p), []) for p in sorted(samples.glob("*.pkl"))),
    ]


def test_thread_and_history_records_follow_their_schemas(fixture_dir: Path, samples: Path) -> None:
    for store, extra in stores(fixture_dir, samples):
        result = run("threads", store, "--json", *extra)
        assert result.exit_code == 0, (store, result.stderr)
        threads = json.loads(result.stdout)
        assert threads, store
        for thread in threads:
            validator("thread.schema.json").validate(thread)
            history = run("history", thread["thread_id"], "--db", store, "--json", *extra)
            assert history.exit_code == 0, (store, history.stderr)
            for record in json.loads(history.stdout):
                validator("checkpoint.schema.json").validate(record)


def test_a_value_nested_too_deep_to_print_is_one_line(samples: Path, tmp_path: Path) -> None:
    store = tmp_path / "deep.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        thread, ns, checkpoint_id = conn.execute(
            "SELECT thread_id, checkpoint_ns, max(checkpoint_id) FROM checkpoints "
            "WHERE checkpoint_ns = '' GROUP BY thread_id LIMIT 1"
        ).fetchone()
        # An object holding an object ... four levels of ext 2, each field 500 arrays deep:
        # every msgpack document stays within its own limits, the value is 2,000 deep.
        deep = b"\xc0"
        for _ in range(4):
            payload = b"\x93\xa3mod\xa1K" + b"\x81\xa1a" + b"\x91" * 500 + deep
            deep = b"\xc9" + len(payload).to_bytes(4, "big") + b"\x02" + payload
        conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "
            "idx, channel, type, value) VALUES (?, ?, ?, 'deep-task', '', 0, 'x', 'msgpack', ?)",
            (thread, ns, checkpoint_id, deep),
        )
    for args in (["show", thread, "--json"], ["show", thread]):
        result = run(*args, "--db", str(store))
        assert result.exit_code == ExitCode.CORRUPT, result.stdout[-300:]
        assert result.stderr.startswith("ckpt: error:") and result.stderr.count("\n") == 1


# -- snapshots of the human views, on a checked-in store whose ids and times never change ------

VIEWS = {
    "threads": ["threads", "{store}"],
    "threads_size": ["threads", "{store}", "--size"],
    "history": ["history", "{thread}", "--db", "{store}"],
    "show": ["show", "{thread}", "--db", "{store}"],
    "show_blobs": ["show", "{thread}", "--blobs", "--db", "{store}"],
    "show_parent_writes": ["show", "{thread}~1", "--writes", "--db", "{store}"],
    "versions": ["versions", "{thread}", "--db", "{store}"],
    "diff": ["diff", "{thread}", "--db", "{store}"],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_human_view_snapshot(samples: Path, view: str) -> None:
    store = str(samples / "sqlite_checkpoints.db")
    thread = json.loads(run("threads", store, "--json").stdout)[0]["thread_id"]
    args = [a.format(store=store, thread=thread) for a in VIEWS[view]]
    result = run(*args)
    assert result.exit_code in (0, 1), result.stderr  # diff exits 1 when they differ
    text = result.stdout.replace(store, "<store>")
    snapshot = SNAPSHOTS / f"{view}.txt"
    if UPDATE or not snapshot.exists():
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(text)
        if not UPDATE:
            pytest.fail(f"wrote the missing snapshot {snapshot.name}; check it and commit it")
    assert text == snapshot.read_text(), f"run CKPT_UPDATE_SNAPSHOTS=1 pytest to accept ({view})"
    assert "\x1b[" not in text
