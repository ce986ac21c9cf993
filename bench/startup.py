"""Start-up time of `ckpt --help` and `ckpt threads` (median of interleaved runs), against a
git revision, and the modules `threads` imports: the numbers behind "start-up stays as fast
as today".

    python bench/startup.py [STORE] [--against REV]

STORE defaults to demo/chat.sqlite (`make demo`). With --against, the revision's src/ is
checked out into a temporary worktree and both trees run alternately from the same venv
(PYTHONPATH puts the old src/ first), so load on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 40
CKPT = str(Path(sys.executable).with_name("ckpt"))
ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - started


def imported(args: list[str]) -> list[str]:
    """Top-level packages imported by a run, from `python -X importtime`."""
    code = "import sys; from ckpt.cli import main; sys.argv = ['ckpt', *sys.argv[1:]]; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return sorted(names)


def measure(trees: dict[str, dict[str, str]], store: str) -> None:
    commands = {"--help": [CKPT, "--help"], "threads": [CKPT, "threads", store]}
    for name, args in commands.items():
        samples: dict[str, list[float]] = {tree: [] for tree in trees}
        for _ in range(3):  # warm the page cache and write the .pyc files
            for env in trees.values():
                timed(args, env)
        for _ in range(RUNS):
            for tree, env in trees.items():
                samples[tree].append(timed(args, env))
        for tree, times in samples.items():
            print(
                f"ckpt {name:8} {tree:>12}  median {statistics.median(times) * 1000:6.1f} ms"
                f"  (min {min(times) * 1000:.1f}, {RUNS} runs)"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", default="demo/chat.sqlite")
    parser.add_argument("--against", metavar="REV", help="a git revision to compare with")
    options = parser.parse_args()
    trees = {"working tree": dict(os.environ)}
    with tempfile.TemporaryDirectory() as scratch:
        if options.against:
            old = Path(scratch) / "old"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), options.against],
                check=True,
                capture_output=True,
            )
            trees = {options.against: dict(os.environ, PYTHONPATH=str(old / "src")), **trees}
        try:
            measure(trees, options.store)
        finally:
            if options.against:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                    check=False,
                )
    print("threads imports:", " ".join(imported(["threads", options.store])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
