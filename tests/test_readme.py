"""Every block of README.md holds: its sessions print what they show (docs/gen_readme.py
runs them on a fresh demo store), its command lines parse, its Python runs, and its
install lines name extras that exist."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _gen_readme() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_readme", ROOT / "docs" / "gen_readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_readme"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gen = _gen_readme()


def test_every_session_in_the_readme_prints_what_it_shows() -> None:
    sessions = [block for block in gen.blocks(README.read_text()) if block.is_session]
    assert len(sessions) >= 12
    problems = gen.check()
    assert not problems, "run `python docs/gen_readme.py` (make docs):\n" + "\n".join(
        f"README.md:{p.block.start}: {p.message}" for p in problems
    )


def test_the_check_fails_on_a_block_that_no_longer_holds() -> None:
    """A changed output line, an option ckpt does not have, a line `make test` does not
    run: each is reported."""
    text = "\n".join(
        [
            "```text",
            "$ ckpt versions support-3 --db demo/chat.sqlite",
            "thread support-3  namespace (main)",
            "...",
            "```",
            "```console",
            "$ ckpt threads prod.sqlite --no-such-option",
            "```",
            "```text",
            "$ make test",
            ".venv/bin/pytest -q --no-such-plugin",
            "1 passed in 1.00s (0:00:01)",
            "```",
            "```text",
            "$ ckpt versions support-3 --db demo/chat.sqlite",
            "thread support-3  namespace (root)",
            "...",
            "```",
        ]
    )
    problems = gen.check(text)
    assert [p.block.start for p in problems] == [1, 6, 9], [p.message for p in problems]
    assert "No such option" in problems[1].message


def test_ids_and_times_are_what_may_differ() -> None:
    shown = "├── 70d46ae4  step 0  loop  14:01:30  waiting 9ef3380f3aba998ebb317500d7b9cb2c"
    now = "├── 14770743  step 0  loop  04:27:46  waiting 69f4c64e4d05212629e6ac3e77cc2ada"
    assert gen.matches([shown], [now])
    assert not gen.matches([shown.replace("step 0", "step 1")], [now])
    assert gen.matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert not gen.matches(["a", "...", "z"], ["a", "b"])


def test_the_python_example_runs(tmp_path: Path) -> None:
    """The ```python blocks run as they are, in a folder holding the demo store."""
    gen.demo_folder(tmp_path)
    codes = [b for b in gen.blocks(README.read_text()) if b.language == "python"]
    assert codes
    previous = Path.cwd()
    os.chdir(tmp_path)
    try:
        for block in codes:
            exec(compile("\n".join(block.lines), f"README.md:{block.start}", "exec"), {})
    finally:
        os.chdir(previous)


def test_install_lines_name_extras_that_exist() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    named = re.findall(r"install '\.\[([a-z,]+)\]'", README.read_text())
    assert len(named) >= 3
    for group in named:
        assert set(group.split(",")) <= extras, group


@pytest.mark.parametrize("line", ["$ ckpt threads chat.sqlite --sort size --limit 5"])
def test_a_command_shown_without_output_is_parsed(line: str) -> None:
    assert gen.parses(gen.ckpt_words(line[2:])) is None
    assert gen.parses(gen.ckpt_words(line[2:] + " --bogus")) is not None


def test_the_exit_code_list_names_every_code() -> None:
    """The README's list of exit codes stops at none the CLI can return (ckpt.errors)."""
    import re

    from ckpt.errors import ExitCode

    section = README.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = {int(n) for n in re.findall(r"(?:^|· )(\d+) ", section, re.M)}
    assert listed == {int(code) for code in ExitCode}
