"""`ckpt diff` of 16 MB channel values answers under a 1 GB address-space limit (issue 38).

Each run goes through tests/ckpt_runner.py: the real CLI in a forked child under
RLIMIT_AS = 1 GB (MEMORY_CAP), its own peak RSS measured. The store is written once, by a
real graph run (fixtures/values.py). bench/diff_bench.py runs every shape and mode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.values import ABSENT, two_values_store

from ckpt.errors import ExitCode
from ckpt_runner import Result, Runner

SIZE = 16 << 20
PEAK_MB = 600  # what the runs below stay under, with room (they peak at 100-410 MB)


def _nested(bump: int) -> dict[str, Any]:
    """100 lists of 2,000 small dicts (16 MB of msgpack): every dict changes with `bump`."""
    return {
        f"g{g}": [{"k": i, "v": [i, i + bump, {"s": "x" * 10}]} for i in range(2000)]
        for g in range(100)
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff-memory") / "sixteen.sqlite"
    two_values_store(
        path,
        {
            "nested": (_nested(1), _nested(2)),
            "lines": ("a\n" * (SIZE // 2), "b\n" * (SIZE // 2)),
            "numbers": (ABSENT, list(range(SIZE // 5))),
        },
    )
    return path


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    with Runner() as started:
        yield started


def answered(result: Result) -> str:
    """The run's stdout, once it is known to be an answer: exit 1 (the checkpoints
    differ), nothing on stderr, within the time guard and the memory bound."""
    assert not result.timed_out and result.exit_code == ExitCode.DIFFERENT, (
        result.exit_code,
        result.stderr[-300:],
    )
    assert result.stderr == b""
    assert result.peak_mb < PEAK_MB, result.peak_mb
    return result.stdout.decode("utf-8")


def test_a_16_mb_channel_diffs_under_the_limit(runner: Runner, store: Path) -> None:
    """200,000 changed dicts: the human view ended in MemoryError after 34-43 s (exit 70).
    The lists are aligned while the diff's budget of pairs lasts and the others read as
    one change each; the view lists the first 1,000 changes and counts the rest."""
    db = ["--db", str(store)]
    view = answered(runner.run(["diff", "nested", *db], env={"COLUMNS": "120"}, timeout=60))
    assert "~ [1]  0 → 1" not in view  # g0[0]'s v[1] went 1 -> 2
    assert "~ [1]  1 → 2" in view
    assert "more changes in channel_values (--json lists every one)" in view


def test_a_16_mb_patch_across_two_stores(runner: Runner, store: Path) -> None:
    """--json across --db2 (the same file opened twice): the patch holds B's whole text."""
    db = ["--db", str(store), "--db2", str(store), "--json"]
    patch = json.loads(answered(runner.run(["diff", "lines~1", "lines", *db], timeout=60)))
    replaced = [op for op in patch if op["path"] == "/channel_values/value"]
    assert len(replaced) == 1 and replaced[0]["value"] == "b\n" * (SIZE // 2)


def test_full_of_16_mb_values_under_the_limit(runner: Runner, store: Path) -> None:
    """--full: two texts of 8 million lines ended in MemoryError (exit 70), and [] ->
    3.3 million numbers ran past 60 s. Each is laid out as far as the view's room goes,
    the text named by its size and sha256, the list cut, and a last line says so."""
    db = ["--db", str(store), "--full"]
    env = {"COLUMNS": "120"}
    text = answered(runner.run(["diff", "lines", *db], env=env, timeout=60))
    assert "value changed (16.0 MB, sha256" in text and "too large to lay out here" in text
    numbers = answered(runner.run(["diff", "numbers", *db], env=env, timeout=60))
    assert "+ value  [0, 1, 2, 3" in numbers and "3355442" not in numbers
    assert "the rest are cut here" in " ".join(numbers.split())
