"""Generated damage on the fixture stores of every kind, LangGraph as the oracle (issue 42
§1): every thread LangGraph's own saver cannot read as before is marked with an error by
`ckpt check`, and no undamaged thread is (tests/damage.py says how, and what is out of
reach)."""

from __future__ import annotations

from pathlib import Path

from fixtures.oracle import quiet_serde_log
from fixtures.state_oracle import demo_graphs

from checking import check, errors
from ckpt.cli import app
from ckpt.errors import ExitCode
from damage import Kind, Tally, generate, run, sample
from damage_stores import DevFolderKind, SqliteKind
from invoke import runner

SAMPLE = 40  # damages per kind in the normal suite


def error_threads(target: str) -> set[str] | None:
    """The threads `ckpt check --json` marks with an error; None when it refuses the
    whole store (exit 4: one line on stderr, never a pass)."""
    result = runner.invoke(app, ["check", target, "--json", "--quiet"])
    if result.exit_code == ExitCode.UNREADABLE:
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
        return None
    return set().union(*errors(check(target)).values())


def damage_run(kind: Kind, count: int | None) -> Tally:
    every = list(generate(kind, kind.rows()))
    chosen = every if count is None else sample(every, count)
    with quiet_serde_log():
        tally = run(kind, chosen, error_threads, demo_graphs)
    print(tally.line())
    return tally


def assert_caught(tally: Tally) -> None:
    assert not tally.false_alarms, tally.false_alarms
    assert not tally.misses, "\n".join(tally.misses)


def test_sqlite_damage(sqlite_store: Path, tmp_path: Path) -> None:
    assert_caught(damage_run(SqliteKind(sqlite_store, tmp_path), SAMPLE))


def test_dev_folder_damage(dev_folder: Path, tmp_path: Path) -> None:
    assert_caught(damage_run(DevFolderKind(dev_folder, tmp_path), SAMPLE))
