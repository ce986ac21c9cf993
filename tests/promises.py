"""What every read command promises on any store, however hostile (issue 15), as checks
the hostile-store tests (tests/test_hostile_stores.py, test_hostile_postgres.py) and
`make fuzz` (bench/fuzz_stores.py) share: the commands, the exit codes allowed, the
problems of one run, and the run of a matrix of (case, command) pairs."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Final

from ckpt.errors import ExitCode
from ckpt_runner import Result, Runner
from hostile import Built, Case, build, first_unsafe
from store_files import folder_hashes, unexpected_changes

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).parent / "hostile_corpus.txt"
PEAK_MB = 200
# Documented exit codes a read may end with on a hostile store (docs/cli.md); 4 only
# without "internal error", checked apart.
ALLOWED = {
    ExitCode.OK,
    ExitCode.USAGE,  # e.g. a thread id that is empty: it cannot be named on the command line
    ExitCode.NO_STORE,
    ExitCode.UNREADABLE,
    ExitCode.CORRUPT,
    ExitCode.ENCRYPTED,
    ExitCode.NOT_FOUND,
    ExitCode.AMBIGUOUS,
    ExitCode.REFUSED,
}

# Broken promises known and not fixed yet, by (case family, command prefix, problem
# prefix): printed by the test, not failed on. None at present; a new one is listed here
# and in docs/security.md ("Known gaps") until it is fixed.
KNOWN_GAPS: Final[tuple[tuple[str, str, str], ...]] = ()

COMMANDS: dict[str, list[str]] = {
    "threads": ["threads", "{store}"],
    "threads --json": ["threads", "{store}", "--json"],
    "history": ["history", "{thread}", "--db", "{store}"],
    "history --json": ["history", "{thread}", "--db", "{store}", "--json"],
    "show": ["show", "{thread}", "--db", "{store}"],
    "show --blobs": ["show", "{thread}", "--blobs", "--full", "--db", "{store}"],
    "show --json": ["show", "{thread}", "--db", "{store}", "--json"],
    "show --json --blobs": ["show", "{thread}", "--blobs", "--db", "{store}", "--json"],
    "versions": ["versions", "{thread}", "--db", "{store}"],
    "versions --json": ["versions", "{thread}", "--db", "{store}", "--json"],
    "diff": ["diff", "{thread}", "--db", "{store}"],
    "diff --json": ["diff", "{thread}", "--db", "{store}", "--json"],
    "dump": ["dump", "{store}", "--ndjson", "-q"],
    "dump --json": ["dump", "{store}", "--json", "-q"],
    "stats": ["stats", "{store}"],
    "stats --json": ["stats", "{store}", "--json"],
    "types": ["types", "{store}"],
    "types --json": ["types", "{store}", "--json"],
}
# `ckpt check` reads every row and decodes every value: sampled on its own (CHECK_RUNS
# pairs, the same seed), so that the matrix of the commands above stays the one it was.
CHECK_COMMANDS: dict[str, list[str]] = {
    "check": ["check", "{store}", "-q"],
    "check --json": ["check", "{store}", "--json", "-q"],
}
CHECK_RUNS = int(os.environ.get("HOSTILE_CHECK_RUNS", "48"))


def bases(fixture_dir: Path) -> dict[str, Path]:
    return {
        "checkpoints": DATA / "sqlite_checkpoints.db",
        "delta": DATA / "sqlite_delta.db",
        "legacy019": DATA / "legacy_lg0.1.19_sqlite.db",
        "legacy0216": DATA / "legacy_lg0.2.16_cp1.0.9_sqlite.db",
        "legacy0320": DATA / "legacy_lg0.3.20_cp2.0.21_sqlite.db",
        "chat": fixture_dir / "chat.sqlite",
        "memory": DATA / "memory_persistentdict.pkl",
        "dev": fixture_dir / ".langgraph_api",
    }


def _strict_constant(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


def problems(command: str, result: Result, built: Built, before: dict[str, str]) -> list[str]:
    """Every promise a run broke, as readable lines (empty: none)."""
    found: list[str] = []
    if result.timed_out:
        found.append(f"timed out after {result.seconds:.1f}s")
    elif result.exit_code is None:
        found.append(f"killed by signal {result.signal}")
    else:
        # diff: 1 = the checkpoints differ; check: 1 = it found an error
        findings = command.startswith(("diff", "check"))
        allowed = set(ALLOWED) | ({ExitCode.DIFFERENT} if findings else set())
        if result.exit_code not in allowed:
            found.append(f"exit {result.exit_code}")
    try:
        err = result.stderr.decode("utf-8")
    except UnicodeDecodeError:
        found.append("stderr is not UTF-8")
        err = result.stderr.decode("utf-8", "replace")
    if "internal error" in err or "Traceback" in err:
        found.append(f"stderr: {err.strip()[-300:]!r}")
    if len(err.splitlines()) > 3:
        found.append(f"{len(err.splitlines())} lines on stderr: {err[:300]!r}")
    if first_unsafe(err) is not None:
        found.append(f"raw control characters on stderr: {err[:200]!r}")
    try:
        out = result.stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(f"stdout is not UTF-8: {exc}")
        out = ""
    is_json = "--json" in command or command == "dump"
    if is_json and out and result.exit_code in (0, 1, ExitCode.ENCRYPTED, ExitCode.REFUSED):
        chunks = out.splitlines() if command == "dump" else [out]
        for chunk in chunks:
            try:
                json.loads(chunk, parse_constant=_strict_constant)
            except ValueError as exc:
                found.append(f"output is not strict JSON: {exc}")
                break
    elif not is_json and (bad := first_unsafe(out)) is not None:
        found.append(f"raw U+{ord(bad):04X} on stdout")
    if result.peak_mb > PEAK_MB:
        found.append(f"peak memory {result.peak_mb:.0f} MB")
    size_mb = sum(p.stat().st_size for p in built.folder.rglob("*") if p.is_file()) / 1e6
    # CPU time, not the wall clock: a loaded machine (CI beside other work) stretches the
    # one and not the other, and this promise is about ckpt's own work on hostile input.
    if result.cpu_seconds > 8 + 1.5 * size_mb:
        found.append(f"took {result.cpu_seconds:.1f} s of CPU on {size_mb:.1f} MB")
    found.extend(unexpected_changes(built.folder, before))
    return found


def arguments(command: str, built: Built) -> list[str]:
    return [
        built.store if part == "{store}" else built.thread if part == "{thread}" else part
        for part in {**COMMANDS, **CHECK_COMMANDS}[command]
    ]


def run_matrix(
    runner: Runner,
    pairs: list[tuple[Case, str]],
    base_paths: dict[str, Path],
    work: Path,
    threads: dict[str, str],
) -> tuple[int, list[str]]:
    """Run every (case, command) pair; return the number of runs and the broken promises."""
    failures: list[str] = []
    by_case: dict[str, tuple[Case, list[str]]] = {}
    for case, command in pairs:
        by_case.setdefault(case.name, (case, []))[1].append(command)
    runs = 0
    for index, (case, commands) in enumerate(by_case.values()):
        folder = work / f"case{index}"
        try:
            built = build(case, base_paths, folder, threads.get(case.base, "thread-1"))
        except Exception as exc:  # the generator's own bug: say which case
            failures.append(f"{case.name}: could not be built: {type(exc).__name__}: {exc}")
            continue
        for command in commands:
            before = folder_hashes(folder)
            result = runner.run(arguments(command, built), cwd=str(folder), timeout=30)
            runs += 1
            for problem in problems(command, result, built, before):
                line = f"{case.name} | ckpt {command}: {problem}"
                if any(
                    family in case.name and command.startswith(prefix) and problem.startswith(p)
                    for family, prefix, p in KNOWN_GAPS
                ):
                    print(f"known gap: {line}")
                else:
                    failures.append(line)
        shutil.rmtree(folder, ignore_errors=True)
    return runs, failures


def corpus() -> list[str]:
    """The corpus's case names. A comment starts a line or follows a space: a name's own
    `#N` (the generator's N-th variant of a random family) stays part of it."""
    if not CORPUS.exists():
        return []
    names = (
        re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
        for line in CORPUS.read_text().splitlines()
    )
    return [name for name in names if name]


def corpus_seeds(names: list[str]) -> int:
    """Variants per random family enough to generate every corpus case (`make fuzz`
    makes more than the test suite's 3)."""
    return max([3] + [int(n) + 1 for name in names for n in re.findall(r"#(\d+)$", name)])
