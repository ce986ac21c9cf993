"""Run the README's examples and bring their output up to date (run: make docs).

Every fenced block of README.md that shows a shell session is a sequence of commands
(`$ ...`, and the `.venv/bin/...` lines `make` echoes) each followed by what it printed.
`check()` runs them on a fresh demo store (`ckpt demo`, as `chat.sqlite` and as
`demo/chat.sqlite`) and compares what they print now, modulo checkpoint ids, interrupt
ids, times and byte sizes (channel versions end in a random number), which every demo
run makes anew, and the spaces that align columns; a line `...` in the README stands for
any number of lines. A command the README shows without output is parsed by ckpt's own
command line (its options must exist) but not run: it names a store that is not here.
`make test`'s block is held to the commands `make -n test` would run.

`python docs/gen_readme.py` rewrites the blocks that no longer match (those without a
`...`: those are edited by hand) with what the commands print now; tests/test_readme.py
fails while one does not match.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
WIDTH = "100"  # COLUMNS for the tour's examples; `make demo` prints unwrapped (a pipe)
SESSION_LANGUAGES = ("text", "console")

_VARYING = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<interrupt>"),
    (re.compile(r"\b[0-9a-f]{8}\b"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<time>"),
    # Channel versions end in a random float of varying length: sizes move by a few bytes.
    (re.compile(r"\b\d+(\.\d+)? (B|KB|MB|GB)\b"), "<size>"),
    (re.compile(r"\b\d+(\.\d+)?%"), "<share>"),
    (re.compile(r"\b\d+ pages\b"), "<pages>"),  # and so, a page more or less
    (re.compile("[\u2581-\u2588]+"), "<sparkline>"),  # bars of those sizes
    (re.compile(r" +"), " "),  # so that a size one digit wider keeps a table's lines equal
]


@dataclass
class Step:
    command: str  # as shown, without the `$ ` prompt
    echoed: bool  # a line `make` echoes (it is part of the output too)
    output: list[str] = field(default_factory=list)


@dataclass
class Block:
    start: int  # index of its first content line in README.md's lines
    end: int  # index of the closing fence
    language: str
    lines: list[str]

    @property
    def steps(self) -> list[Step]:
        steps: list[Step] = []
        for line in self.lines:
            if line.startswith("$ "):
                steps.append(Step(line[2:], echoed=False))
            elif line.startswith(".venv/bin/ckpt ") and steps:
                steps.append(Step(line, echoed=True))
            elif steps:
                steps[-1].output.append(line)
        return steps

    @property
    def is_session(self) -> bool:
        return (
            self.language in SESSION_LANGUAGES
            and bool(self.lines)
            and (self.lines[0].startswith("$ "))
        )


def blocks(text: str) -> list[Block]:
    lines = text.split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\w*)$", lines[index])
        if fence:
            end = lines.index("```", index + 1)
            found.append(Block(index + 1, end, fence.group(1), lines[index + 1 : end]))
            index = end
        index += 1
    return found


def normalize(line: str) -> str:
    for pattern, stand_in in _VARYING:
        line = pattern.sub(stand_in, line)
    return line.rstrip()


def matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` (a `...` line: any lines) against `actual`, both normalized."""
    want = [normalize(line) for line in expected]
    got = [normalize(line) for line in actual]

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and want[i] == got[j] and match(i + 1, j + 1)

    return match(0, 0)


def ckpt_words(command: str) -> list[str] | None:
    """The ckpt part of a shell line (before a pipe), as words; None: not a ckpt command."""
    shell = command.split(" | ")[0].split("  #")[0]
    words = shlex.split(re.split(r"; |&& ", shell)[-1])
    if words and words[0].endswith("ckpt"):
        return words[1:]
    return None


def parses(words: list[str]) -> str | None:
    """Why ckpt's command line rejects `words` (None: it takes them). With `--help` last,
    the line is parsed (an unknown command or option is an error) and nothing runs."""
    from typer.testing import CliRunner

    from ckpt.cli import app

    result = CliRunner().invoke(app, [*words, "--help"], prog_name="ckpt")
    if result.exit_code != 0:
        return (result.output.strip().splitlines() or ["rejected"])[-1]
    return None


def environment(columns: str | None, *, on_path: bool = True) -> dict[str, str]:
    """`on_path`: ckpt is on PATH (the tour's `$ ckpt ...`; make runs `.venv/bin/ckpt`)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CKPT_", "PG", "LANGGRAPH_AES_KEY", "COLUMNS"))
    }
    env.update({"NO_COLOR": "1", "TZ": "UTC"})
    if on_path:
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if columns:
        env["COLUMNS"] = columns
    return env


def run_step(step: Step, folder: Path, columns: str | None, last_status: int) -> tuple[str, int]:
    command = step.command  # `.venv/bin/ckpt` as make runs it: demo_folder links .venv
    if command == "echo $?":
        return f"{last_status}\n", 0
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=folder,
        env=environment(columns, on_path=not step.echoed),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as a terminal shows both
        text=True,
        check=False,
        timeout=120,
    )
    out = done.stdout.replace(f"{BIN}/", ".venv/bin/")
    return out, done.returncode


def demo_folder(folder: Path) -> None:
    from ckpt.demo import write_demo_store

    (folder / "demo").mkdir()
    write_demo_store(folder / "demo" / "chat.sqlite")
    (folder / "chat.sqlite").write_bytes((folder / "demo" / "chat.sqlite").read_bytes())
    (folder / ".venv").symlink_to(BIN.parent)  # `make demo` runs .venv/bin/ckpt


MAKE_ENV = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTEST_ARGS", "TEST_PROCESSES")


def make_commands() -> list[str]:
    """What `make -n test` would run: the lines the README's `make test` block echoes."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "test"],
        cwd=ROOT,
        # As a user types it: not with the flags and variables of a make this runs under
        # (make exports the variables of its command line: `make test PYTEST_ARGS=...`).
        env={k: v for k, v in os.environ.items() if k not in MAKE_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.rstrip() for line in done.stdout.splitlines()]


def _any_processes(line: str) -> str:
    """`line` with its pytest-xdist process count (`-n 4`) left out."""
    return re.sub(r" -n \d+ ", " -n N ", line)


@dataclass
class Problem:
    block: Block
    message: str


def check_block(block: Block, folder: Path) -> Problem | None:
    steps = block.steps
    first = steps[0].command
    if first == "make test":
        # The number of test processes is the machine's (two per core): any will do.
        wanted = [_any_processes(line) for line in make_commands()]
        for line in block.lines:
            if line.startswith(".venv/bin/") and _any_processes(line.rstrip()) not in wanted:
                return Problem(block, f"`make -n test` does not run {line!r}")
        if not any(
            re.fullmatch(r"\d+ passed in [\d.]+s \(\d+:\d\d:\d\d\)", ln) for ln in block.lines
        ):
            return Problem(block, "no `N passed in ...` line")
        return None
    columns = None if first == "make demo" else WIDTH
    status = 0
    for step in steps:
        words = (
            ckpt_words(step.command) if not step.command.startswith(("make ", "echo ")) else None
        )
        if words is not None and (why := parses(words)):
            return Problem(block, f"`{step.command}`: {why}")
        if step.command == "make demo":
            continue
        if not step.output and step.command != "echo $?":
            continue  # shown without output: a store that is not here (parsed above)
        if words is None and step.command != "echo $?" and not step.echoed:
            return Problem(block, f"`{step.command}` prints output but is not a ckpt command")
        out, status = run_step(step, folder, columns, status)
        printed = out.rstrip("\n").split("\n") if out else []
        expected = "\n".join(step.output).rstrip("\n").split("\n") if step.output else []
        if not matches(expected, printed):
            shown = [normalize(line) for line in expected if line != "..."]
            new = next((normalize(line) for line in printed if normalize(line) not in shown), "")
            return Problem(block, f"`{step.command}` prints otherwise now, e.g. {new!r}")
    return None


def rerun(block: Block, folder: Path) -> list[str]:
    """The block as its commands print it now."""
    columns = None if block.steps[0].command == "make demo" else WIDTH
    lines: list[str] = []
    status = 0
    for step in block.steps:
        lines.append(step.command if step.echoed else f"$ {step.command}")
        if step.command == "make demo" or (not step.output and step.command != "echo $?"):
            continue
        out, status = run_step(step, folder, columns, status)
        lines.extend(out.rstrip("\n").split("\n") if out else [])
        blank = len(step.output) - len("\n".join(step.output).rstrip("\n").split("\n"))
        lines.extend([""] * blank)  # the blank line between one example and the next
    return lines


def check(text: str | None = None) -> list[Problem]:
    """Every README block that does not hold: its commands, their options, their output."""
    text = README.read_text() if text is None else text
    problems: list[Problem] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        demo_folder(folder)
        for block in blocks(text):
            if block.is_session and (problem := check_block(block, folder)):
                problems.append(problem)
    return problems


def main() -> int:
    text = README.read_text()
    lines = text.split("\n")
    problems = check(text)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        demo_folder(folder)
        for problem in reversed(problems):
            block = problem.block
            if any(line == "..." for line in block.lines) or block.steps[0].command == "make test":
                sys.stderr.write(f"README.md:{block.start}: {problem.message} (edit by hand)\n")
                continue
            lines[block.start : block.end] = rerun(block, folder)
            sys.stderr.write(f"README.md:{block.start}: rewritten ({problem.message})\n")
    README.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
