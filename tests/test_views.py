"""The human views on odd and large stores: every checkpoint drawn once, in bounded time."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ckpt.cli import app

runner = CliRunner()
ROOT_IDS = "SELECT checkpoint_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY checkpoint_id"
SET_PARENT = "UPDATE checkpoints SET parent_checkpoint_id = ? WHERE checkpoint_id = ?"


def run(*args: str, width: int = 120) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    return result.exit_code, result.stdout, result.stderr


def edited(
    samples: Path, tmp_path: Path, name: str, sql: list[tuple[str, tuple[str, ...]]]
) -> Path:
    store = tmp_path / f"{name}.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        ids = [r[0] for r in conn.execute(ROOT_IDS)]
        for statement, picks in sql:
            conn.execute(statement, tuple(ids[int(p)] if p.isdigit() else p for p in picks))
    conn.close()
    return store


LINEAGE = {
    # name: (edits, the note the tree must carry)
    "cycle": ([(SET_PARENT, ("7", "0"))], "parent cycle"),  # 0 -> 7 -> ... -> 1 -> 0
    "short-cycle": ([(SET_PARENT, ("4", "3"))], "parent cycle"),  # 3 -> 4 -> 3
    "self": (
        [
            (
                "UPDATE checkpoints SET parent_checkpoint_id = checkpoint_id "
                "WHERE checkpoint_id = ?",
                ("3",),
            )
        ],
        "its own parent",
    ),
    "dangling": (
        [(SET_PARENT, ("1f1ec72c-ffff-6000-8000-00000000dead", "4"))],
        "not in this store",
    ),
    "newer": (  # 5 -> 6 -> 7 made a chain of its own, then 1's parent is 6
        [
            ("UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE checkpoint_id = ?", ("5",)),
            (SET_PARENT, ("6", "1")),
        ],
        "newer than this checkpoint",
    ),
}


@pytest.mark.parametrize("name", sorted(LINEAGE))
def test_odd_lineage_draws_every_checkpoint_once(samples: Path, tmp_path: Path, name: str) -> None:
    edits, note = LINEAGE[name]
    store = edited(samples, tmp_path, name, edits)
    code, out, err = run("history", "thread-1", "--db", str(store), "--json")
    assert code == 0, err
    ids = [c["checkpoint_id"][-8:] for c in json.loads(out)]
    code, out, err = run("history", "thread-1", "--db", str(store))
    assert code == 0 and err == "", err
    drawn = re.findall(r"[├└]── ([0-9a-f]{8})  step", out)
    assert sorted(drawn) == sorted(ids)  # each exactly once
    assert note in " ".join(out.split())


def _grown(samples: Path, tmp_path: Path, count: int, *, wide: bool) -> Path:
    """thread-1 with `count` more checkpoints: all children of one (a fork `count` wide),
    or each the child of the one before (a chain `count` long)."""
    store = tmp_path / "grown.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with sqlite3.connect(store) as conn:
        ids = [r[0] for r in conn.execute(ROOT_IDS)]
        row = conn.execute(
            "SELECT * FROM checkpoints WHERE checkpoint_id = ?", (ids[-1],)
        ).fetchone()
        rows, parent = [], ids[-2]
        for i in range(count):
            new = f"1f1ec72d-0000-6000-8000-{i:012x}"  # after every id of the sample
            rows.append((row[0], row[1], new, parent, row[4], row[5], row[6]))
            parent = parent if wide else new
        conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()
    return store


@pytest.mark.parametrize(("count", "wide"), [(20_000, True), (10_000, False)])
def test_a_wide_fork_and_a_long_chain_draw_in_bounded_time(
    samples: Path, tmp_path: Path, count: int, wide: bool
) -> None:
    store = _grown(samples, tmp_path, count, wide=wide)
    started = time.monotonic()
    code, out, err = run("history", "thread-1", "--db", str(store), width=80)
    elapsed = time.monotonic() - started
    assert code == 0 and err == "", err
    drawn = re.findall(r"[├└]── ([0-9a-f]{8})  step", out)
    assert len(drawn) == len(set(drawn)) == 11 + count  # the subgraph's 3 too
    assert elapsed < 30, elapsed  # Rich's Tree took 19 s for the 20,000-wide fork
    code, out, _ = run("history", "thread-1", "--last", "5", "--db", str(store))
    assert code == 0 and len(re.findall(r"[├└]── ([0-9a-f]{8})  step", out)) < 10 + (
        count if wide else 0
    )
