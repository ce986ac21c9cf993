"""What ckpt says of a URL before any server answers (issue 43): an unknown scheme names the
schemes ckpt reads, a kind whose extra is not installed names the install command, and the
new kinds are not copy targets. One line each, a documented exit code, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ckpt.errors import ExitCode
from ckpt.stores import SCHEMES
from invoke import run


@pytest.mark.parametrize("url", ["mssql://sa@db/agents", "s3://bucket/key", "dynamo://t"])
def test_an_unknown_scheme_names_the_schemes_ckpt_reads(url: str) -> None:
    done = run("threads", url)
    assert done.exit_code == ExitCode.USAGE, done.output
    assert done.stderr.count("\n") == 1 and "no such file" not in done.stderr
    assert all(scheme in done.stderr for scheme in SCHEMES), done.stderr


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("mysql://root@127.0.0.1:1/db", "pymysql", "mysql"),
        ("valkey://127.0.0.1:1/0", "valkey", "valkey"),
        ("dynamodb://table?region=us-east-1", "boto3", "dynamodb"),
    ],
)
def test_a_missing_extra_names_the_install_command(
    url: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    done = run("threads", url)
    assert done.exit_code == ExitCode.MISSING_DEPENDENCY, done.output
    assert f"pip install 'langgraph-ckpt[{extra}]'" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "target", ["mysql://root@127.0.0.1:1/db", "valkey://127.0.0.1:1/0", "dynamodb://table"]
)
def test_the_new_kinds_are_not_copy_targets(sqlite_store: Path, target: str) -> None:
    done = run("copy", str(sqlite_store), target, "--all")
    assert done.exit_code == ExitCode.UNSUPPORTED, done.output
    assert "targets are not supported" in done.stderr and done.stderr.count("\n") == 1
