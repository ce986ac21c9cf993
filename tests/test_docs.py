"""Every command has help, and docs/cli.md is the current --help of every command."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ckpt.cli import app

DOCS = Path(__file__).parent.parent / "docs"


def _gen_cli() -> object:
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_has_help_and_a_docs_entry() -> None:
    gen = _gen_cli()
    names = gen.command_names()  # type: ignore[attr-defined]
    assert {"threads", "history", "show", "versions", "demo"} <= set(names)
    cli_md = (DOCS / "cli.md").read_text()
    for name in names:
        result = CliRunner().invoke(app, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage: " in result.stdout
        assert f"## ckpt {name}\n" in cli_md, f"{name} is missing from docs/cli.md"


def test_usage_lines_show_arguments_as_typed() -> None:
    """`ckpt show SELECTOR`, not Typer's `{SELECTOR}`; brackets only on what may be left
    out; copy's DST shown as needed (issue 46 §3)."""
    gen = _gen_cli()
    usages = {}
    for name in gen.command_names():  # type: ignore[attr-defined]
        usage = CliRunner().invoke(app, [name, "--help"]).stdout.splitlines()[0]
        assert "{" not in usage, usage
        usages[name] = usage.split("[OPTIONS]")[1].strip()
    assert usages["show"] == "SELECTOR" and usages["history"] == "THREAD"
    assert usages["diff"] == "A [B]" and usages["copy"] == "SRC DST"
    assert usages["threads"] == "[STORE]"


def test_writing_commands_list_only_the_stores_they_change() -> None:
    """prune, vacuum and migrate name the kinds they change, not every kind ckpt reads."""
    for name, kinds in (("prune", 4), ("vacuum", 4), ("migrate", 2)):
        text = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}).stdout
        store = " ".join(text.split("Arguments:")[1].split("Options:")[0].split())
        assert "valkey://" not in store and "dynamodb://" not in store and "mysql" not in store
        assert ".langgraph_api" not in store
        said = ["SQLite", "postgresql://", "mongodb://", "redis://"][:kinds]
        assert all(kind in store for kind in said), store


def test_cli_reference_is_up_to_date() -> None:
    gen = _gen_cli()
    assert (DOCS / "cli.md").read_text() == gen.render(), "run `make docs`"  # type: ignore[attr-defined]


def test_python_dash_m_and_lazy_startup() -> None:
    # `ckpt --help` must not import the decoders, stores, Rich renderers or the browser's
    # Textual (start-up time).
    # What was imported is told at exit (the CLI leaves by os._exit, after atexit).
    code = (
        "import atexit, sys, runpy; sys.argv = ['ckpt', '--help']\n"
        "heavy = lambda: [m for m in ('ckpt.decoders', 'ckpt.stores.sqlite', "
        "'ckpt.render.human', 'sqlite3', 'ormsgpack', 'ckpt.browse', 'textual') "
        "if m in sys.modules]\n"
        "atexit.register(lambda: print('HEAVY', heavy()))\n"
        "runpy.run_module('ckpt', run_name='__main__')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage: ckpt" in out.stdout
    assert "HEAVY []" in out.stdout


def test_install_hints_name_this_distribution_and_its_extras() -> None:
    """Every `pip install` hint names the distribution of pyproject.toml (not `ckpt`, an
    unrelated PyPI project) and an extra it defines."""
    import re
    import tomllib

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    from ckpt.records.vocabulary import DISTRIBUTION, install_hint

    assert project["name"] == DISTRIBUTION
    texts = {
        str(p.relative_to(root)): p.read_text()
        for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        + sorted((root / "src" / "ckpt").rglob("*.py"))
    }
    found = 0
    for name, text in texts.items():
        assert not re.search(r"[\s'`(]ckpt\[", text), f"{name}: an install hint names `ckpt`"
        for extras_named in re.findall(rf"{re.escape(DISTRIBUTION)}\[([a-z,]+)\]", text):
            assert set(extras_named.split(",")) <= extras, (name, extras_named)
            found += 1
    assert found >= 5
    assert install_hint("tui") == f"pip install '{DISTRIBUTION}[tui]'"
