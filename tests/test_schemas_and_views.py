"""Thread and history JSON against their schemas, and the human views against snapshots."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode
from ckpt.render.text import cell_width

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


@pytest.mark.parametrize(
    "fixture",
    [
        "sqlite_store",
        pytest.param("pg_store", marks=pytest.mark.postgres),
        "redis_url",
        "mongo_url",
        "dev_folder",
    ],
)
def test_history_json_tells_the_branches_the_tree_draws(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """`history --json` streams a thread with branches after reading its lineage once more
    (ids and parents, the store's raw scan): each record's `branch` is the tree's, on
    every kind of store, and as `--last` (the records read whole) has it."""
    import ckpt
    from ckpt.records.types import history_nodes
    from pg import url_of

    found = request.getfixturevalue(fixture)
    store = url_of(found.dsn) if fixture == "pg_store" else str(found)
    streamed = json.loads(run("history", "fork-1", "--db", store, "--json").stdout)
    listed = json.loads(run("history", "fork-1", "--db", store, "--json", "--last", "999").stdout)
    with ckpt.open(store) as opened:
        tree = opened.history_tree("fork-1")
    drawn = {
        node["checkpoint"]["checkpoint_id"]: node["checkpoint"]["branch"]
        for chain in tree
        for node in history_nodes(chain)
    }
    branches = {r["checkpoint_id"]: r["branch"] for r in streamed}
    assert branches == {r["checkpoint_id"]: r["branch"] for r in listed} == drawn
    kinds = sorted(b["kind"] for b in branches.values() if b)
    assert kinds == ["earlier_run", "update_state"], branches


def test_a_value_nested_deeper_than_json_allows_is_printed(samples: Path, tmp_path: Path) -> None:
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
    # The JSON writer keeps its own stack: the whole value is printed, strict JSON.
    result = run("show", thread, "--json", "--db", str(store))
    assert result.exit_code == ExitCode.OK, result.stderr
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # json's own reader recurses
    try:
        record = json.loads(result.stdout)
    finally:
        sys.setrecursionlimit(limit)
    (write,) = [w for w in record["pending_writes"] if w["task_id"] == "deep-task"]
    assert result.stdout.count("[") >= 2_000 and write["channel"] == "x"
    # The human view shows its start and its length, as it does any long value.
    result = run("show", thread, "--db", str(store))
    assert result.exit_code == ExitCode.OK, result.stderr
    assert '"__type__": "mod.K"' in result.stdout and " chars)" in result.stdout


# -- snapshots of the human views -----------------------------------------------------------
#
# Each store's views at 80 and 120 columns, rendered as on a terminal without colour
# (CKPT_FORCE_TTY, NO_COLOR), one file per store and width. The checked-in samples keep
# their ids and times; the fixture store is written fresh each session, so its ids, task
# ids and times are masked with stand-ins of the same width (the layout stays what it is).

SNAPSHOT_VIEWS: dict[str, list[list[str]]] = {
    "sample": [
        ["threads", "{store}"],
        ["threads", "{store}", "--size"],
        ["history", "thread-1", "--db", "{store}"],
        ["history", "thread-1", "--last", "3", "--db", "{store}"],
        ["show", "thread-1", "--db", "{store}"],
        ["show", "thread-1", "--blobs", "--db", "{store}"],
        ["show", "thread-1~1", "--writes", "--db", "{store}"],
        ["versions", "thread-1", "--db", "{store}"],
        ["diff", "thread-1", "--db", "{store}"],
    ],
    "delta": [
        ["history", "d1", "--db", "{store}"],
        ["show", "d1", "--blobs", "--db", "{store}"],
        ["versions", "d1", "--db", "{store}"],
        ["diff", "d1", "--db", "{store}"],
    ],
    "legacy": [
        ["threads", "{store}"],
        ["history", "thread-1", "--db", "{store}"],
        ["show", "thread-1~3", "--db", "{store}"],
    ],
    "lineage": [["history", "thread-1", "--db", "{store}"]],
    "demo": [
        ["threads", "{store}"],
        ["history", "fork-1", "--db", "{store}"],
        ["history", "fanout-1", "--db", "{store}"],
        ["history", "approval-1", "--db", "{store}"],
        ["history", "subgraph-2", "--db", "{store}"],
        ["show", "fanout-1", "--db", "{store}"],
        ["show", "approval-2", "--db", "{store}"],
        ["show", "subgraph-1~1", "--db", "{store}"],
        ["show", "support-1", "--blobs", "--db", "{store}"],
        ["show", "support-2", "--blobs", "--last", "3", "--db", "{store}"],
        ["versions", "support-1", "--db", "{store}"],
        ["diff", "fork-1", "--db", "{store}"],
        ["diff", "fanout-1~1", "fanout-1", "--db", "{store}"],
        ["diff", "support-1", "--db", "{store}"],
    ],
}
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _lineage_store(samples: Path, tmp_path: Path) -> Path:
    """thread-1 with a parent cycle and a dangling parent (issue 15, item 6)."""
    store = tmp_path / "lineage.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE checkpoint_ns = '' "
                "ORDER BY checkpoint_id"
            )
        ]
        update = "UPDATE checkpoints SET parent_checkpoint_id = ? WHERE checkpoint_id = ?"
        conn.execute(update, (ids[5], ids[2]))  # 2 -> 1 becomes 2 -> 5 -> 4 -> 3 -> 2
        conn.execute(update, ("1f1ec72c-ffff-6000-8000-00000000dead", ids[6]))
    conn.close()
    return store


def _masker(store: str) -> Callable[[str], str]:
    """Stand-ins for a fresh store's ids and times: each checkpoint id becomes a fixed id
    in creation order (its short form the stand-in's last 8 characters), other uuids and
    32-hex ids become x's, clock times hh:mm:ss, sizes #.# KB."""
    ids = sorted(
        {
            c["checkpoint_id"]
            for t in json.loads(run("threads", store, "--json").stdout)
            for c in json.loads(run("history", t["thread_id"], "--db", store, "--json").stdout)
        }
    )
    fake = {cid: f"1f000000-0000-6000-8000-{i:012d}" for i, cid in enumerate(ids)}
    short = {cid[-8:]: f[-8:] for cid, f in fake.items()}

    def mask(text: str) -> str:
        text = re.sub(
            _UUID, lambda m: fake.get(m.group(), "x" * 8 + "-xxxx-xxxx-xxxx-" + "x" * 12), text
        )
        text = re.sub(r"\b[0-9a-f]{32}\b", "x" * 32, text)
        text = re.sub(r"\b[0-9a-f]{8}\b", lambda m: short.get(m.group(), m.group()), text)
        text = re.sub(
            r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d",
            lambda m: "YYYY-MM-DD" + m.group()[10] + "hh:mm:ss",
            text,
        )
        text = re.sub(r"\b\d\d:\d\d:\d\d\b", "hh:mm:ss", text)
        text = re.sub(r"(hh:mm:ss)\.\d{6}", r"\1.ffffff", text)
        # Sizes and the random part of channel versions change from run to run.
        text = re.sub(
            r"\b\d+(?:\.\d)? (?:B|KB|MB)\b", lambda m: re.sub(r"\d", "#", m.group()), text
        )
        return re.sub(r"(\.0\.)\d{6,}", r"\1<random>", text)

    return mask


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", sorted(SNAPSHOT_VIEWS))
def test_human_view_snapshot(
    samples: Path, sqlite_store: Path, tmp_path: Path, name: str, width: int
) -> None:
    store = {
        "sample": samples / "sqlite_checkpoints.db",
        "delta": samples / "sqlite_delta.db",
        "legacy": samples / "legacy_lg0.3.20_cp2.0.21_sqlite.db",
        "lineage": _lineage_store(samples, tmp_path),
        "demo": sqlite_store,
    }[name]
    mask = _masker(str(store)) if name == "demo" else (lambda text: text)
    env = {"COLUMNS": str(width), "CKPT_FORCE_TTY": "1", "NO_COLOR": "1"}
    text = ""
    for view in SNAPSHOT_VIEWS[name]:
        args = [a.format(store=store) for a in view]
        result = runner.invoke(app, args, env=env)
        assert result.exit_code in (0, 1), (args, result.stderr)  # diff exits 1: they differ
        assert "\x1b[" not in result.stdout, args  # NO_COLOR: no bold, dim or underline either
        for line in result.stdout.splitlines():
            assert line == line.rstrip(), (args, line)
            assert cell_width(line) <= width, (args, line)
        shown = " ".join("<store>" if a == str(store) else a for a in args)
        text += f"$ ckpt {shown}\n{mask(result.stdout.replace(str(store), '<store>'))}\n"
    snapshot = SNAPSHOTS / f"{name}-{width}.txt"
    if UPDATE or not snapshot.exists():
        snapshot.write_text(text)
        if not UPDATE:
            pytest.fail(f"wrote the missing snapshot {snapshot.name}; check it and commit it")
    assert text == snapshot.read_text(), f"run CKPT_UPDATE_SNAPSHOTS=1 pytest to accept ({name})"


def test_every_snapshot_file_is_made_by_a_test() -> None:
    expected = {f"{name}-{width}.txt" for name in SNAPSHOT_VIEWS for width in (80, 120)}
    # tests/snapshots/browse holds the browser's SVGs (tests/test_browse.py checks those).
    assert {p.name for p in SNAPSHOTS.iterdir() if p.is_file()} == expected
