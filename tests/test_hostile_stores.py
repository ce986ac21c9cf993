"""Every read command on hostile, damaged and odd stores keeps every promise (issue 15).

The stores come from tests/hostile.py, built from the real fixture stores at test time.
Each run goes through tests/ckpt_runner.py (the real CLI in a forked child with a memory
cap) and must: exit 0 or a documented code, never with an internal error; write at most
three lines on stderr and no traceback; print strict UTF-8 JSON where JSON was asked for,
and nothing that acts on a terminal elsewhere; leave the store's files byte-identical
(tests/store_files.py); stay under 200 MB and a bounded time.

`make test` runs a deterministic sample of the case x command matrix (HOSTILE_RUNS pairs,
seed HOSTILE_SEED) plus every case of tests/hostile_corpus.txt on a third of the commands
and `check` (turning, so that each command meets several cases: corpus_pairs); `make
test-long` a sample LONG_RUNS pairs big and the corpus on every command, and `make fuzz`
(bench/fuzz_stores.py) far more.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from ckpt_runner import Runner
from hostile import Built, Case, cases, sample, value_in
from promises import (
    CHECK_COMMANDS,
    CHECK_RUNS,
    COMMANDS,
    bases,
    corpus,
    corpus_seeds,
    problems,
    run_matrix,
)
from runs import long_run
from store_files import folder_hashes

DATA = Path(__file__).parent / "data"
SEED = int(os.environ.get("HOSTILE_SEED", "15"))
RUNS = int(os.environ.get("HOSTILE_RUNS", "120"))
LONG_RUNS = 2_000  # the sample of the `long` variant (make test-long)
SHARDS = 4  # the sample and the corpus each run as this many tests (shard_of)
SAMPLES = [pytest.param(RUNS, shard, id=str(shard)) for shard in range(SHARDS)] + [
    pytest.param(LONG_RUNS, shard, id=f"long-{shard}", marks=pytest.mark.long)
    for shard in range(SHARDS)
]


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    with Runner() as started:
        yield started


@pytest.fixture(scope="module")
def base_paths(fixture_dir: Path) -> dict[str, Path]:
    return bases(fixture_dir)


@pytest.fixture(scope="module")
def base_threads(runner: Runner, base_paths: dict[str, Path]) -> dict[str, str]:
    """A thread of each pickle base, as ckpt lists it (SQLite cases name their first row's)."""
    found = {}
    for name in ("memory", "dev"):
        result = runner.run(["threads", str(base_paths[name]), "--json"])
        assert result.exit_code == 0, result.stderr
        found[name] = json.loads(result.stdout)[0]["thread_id"]
    return found


def test_the_generator_covers_every_family(base_paths: dict[str, Path]) -> None:
    names = [case.name for case in cases(base_paths)]
    families = {"/".join(name.split("/")[:3]) for name in names}
    for needed in (
        "sqlite/chat/truncate",
        "sqlite/checkpoints/wal",
        "sqlite/checkpoints/column",
        "sqlite/checkpoints/thread-id",
        "sqlite/checkpoints/lineage",
        "sqlite/checkpoints/value",
        "pickle/memory/replace",
        "dev/dev/truncate",
    ):
        assert needed in families, needed
    assert len(names) > 2_000


def shard_of(pairs: list[tuple[Case, str]], shard: int) -> list[tuple[Case, str]]:
    """Every SHARDS-th pair, from the `shard`-th: the matrix in SHARDS tests, which the
    test processes of `make test` share. A case's runs spread over the shards (each builds
    the case it needs, in milliseconds), so that a slow case (an 8 MB value) costs every
    shard a little rather than one shard a lot."""
    return pairs[shard::SHARDS]


@pytest.mark.parametrize(("size", "shard"), SAMPLES)
def test_every_command_on_a_sample_of_hostile_stores(
    runner: Runner,
    base_paths: dict[str, Path],
    base_threads: dict[str, str],
    tmp_path: Path,
    size: int,
    shard: int,
) -> None:
    every = cases(base_paths)
    pairs = sample(every, list(COMMANDS), SEED, size)
    assert len(pairs) == size
    checks = sample(every, list(CHECK_COMMANDS), SEED, CHECK_RUNS)
    mine = shard_of(pairs, shard) + shard_of(checks, shard)
    runs, failures = run_matrix(runner, mine, base_paths, tmp_path, base_threads)
    print(f"hostile stores: {len(every)} cases, {runs} runs, {len(failures)} failures")
    assert runs == len(mine) and not failures, "\n".join(failures[:40])


def test_the_shards_run_every_sampled_pair_once(base_paths: dict[str, Path]) -> None:
    pairs = sample(cases(base_paths), list(COMMANDS), SEED, RUNS)
    sharded = [pair for shard in range(SHARDS) for pair in shard_of(pairs, shard)]
    assert sorted((c.name, command) for c, command in sharded) == sorted(
        (c.name, command) for c, command in pairs
    )


CORPUS_EVERY = 3  # make test runs each corpus case on every third command (corpus_pairs)


def corpus_pairs(chosen: list[Case]) -> list[tuple[Case, str]]:
    """Every corpus case on every command in a long run; in make test each case on every
    CORPUS_EVERY-th command, from an offset that turns with the case, so that every command
    still meets several cases and every case `check --json` (which decodes every value)."""
    commands = list(COMMANDS)
    if long_run():
        return [(case, command) for case in chosen for command in [*commands, "check --json"]]
    return [
        (case, command)
        for index, case in enumerate(chosen)
        for command in [*commands[index % CORPUS_EVERY :: CORPUS_EVERY], "check --json"]
    ]


def test_the_corpus_sample_meets_every_command_and_case(base_paths: dict[str, Path]) -> None:
    wanted = set(corpus())
    chosen = [c for c in cases(base_paths, seeds=corpus_seeds(sorted(wanted))) if c.name in wanted]
    pairs = corpus_pairs(chosen)
    assert {command for _, command in pairs} == {*COMMANDS, "check --json"}
    assert {case.name for case, _ in pairs} == wanted


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_command_on_the_regression_corpus(
    runner: Runner,
    base_paths: dict[str, Path],
    base_threads: dict[str, str],
    tmp_path: Path,
    shard: int,
) -> None:
    wanted = set(corpus())
    every = cases(base_paths, seeds=corpus_seeds(sorted(wanted)))
    chosen = [case for case in every if case.name in wanted]
    assert {case.name for case in chosen} == wanted, wanted - {case.name for case in chosen}
    pairs = shard_of(corpus_pairs(chosen), shard)
    runs, failures = run_matrix(runner, pairs, base_paths, tmp_path, base_threads)
    assert runs == len(pairs) and not failures, "\n".join(failures[:40])


def test_a_huge_value_prints_in_bounded_memory(runner: Runner, tmp_path: Path) -> None:
    """An 8 MB pending write of 8 million nils: 100 MB of indented JSON, and twice the
    generator's biggest array. Every view of its checkpoint writes the text a piece at a
    time and compares the value where it lies, within the bounds every run keeps."""
    folder = tmp_path / "huge"
    folder.mkdir()
    store = folder / "store.db"
    shutil.copy(DATA / "sqlite_checkpoints.db", store)
    count = 8_000_000
    payload = b"\xdd" + count.to_bytes(4, "big") + b"\xc0" * count
    value_in("writes", "value", "msgpack", payload)(store, random.Random(0))
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        thread, checkpoint = conn.execute(
            "SELECT thread_id, checkpoint_id FROM writes ORDER BY length(value) DESC LIMIT 1"
        ).fetchone()
    built = Built(folder=folder, store=str(store), thread=thread)
    db = ["--db", str(store)]
    commands = {
        "show --json": ["show", checkpoint, "--json", *db],
        "show": ["show", checkpoint, *db],
        "history --json": ["history", thread, "--json", *db],
        "diff": ["diff", checkpoint, *db],
        "diff --json": ["diff", checkpoint, "--json", *db],
        "dump": ["dump", str(store), "--ndjson", "-q"],
    }
    failures = []
    for command, args in commands.items():
        before = folder_hashes(folder)
        result = runner.run(args, cwd=str(folder), timeout=60)
        failures += [f"ckpt {command}: {p}" for p in problems(command, result, built, before)]
        if command == "show --json":  # the whole value, not a stand-in
            writes = json.loads(result.stdout)["pending_writes"]
            assert [w["value"] == [None] * count for w in writes].count(True) == 1
    assert not failures, "\n".join(failures)
