"""The CLI run in-process as the tests run it (Typer's CliRunner): exit code, stdout and
stderr apart."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from ckpt.cli import app

runner = CliRunner()


def ckpt(*args: str) -> Any:
    """`ckpt ARGS` in the environment as it is."""
    return runner.invoke(app, list(args))


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    """`ckpt ARGS` at 120 columns (`env` adds to the environment)."""
    return runner.invoke(app, list(args), env={"COLUMNS": "120", **(env or {})})


def run_json(*args: str, env: dict[str, str] | None = None) -> Any:
    """`ckpt ARGS --json`, which must succeed and say nothing on stderr: the parsed JSON."""
    result = run(*args, "--json", env=env)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert result.stderr == ""
    return json.loads(result.stdout)
