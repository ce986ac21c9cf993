"""Long run of the hostile-store test (`make fuzz`): more cases, every command, for longer.

usage: python bench/fuzz_stores.py [--seconds 600] [--seed N] [--variants 12]

Builds the fixture stores (fixtures/build.py), generates every case of tests/hostile.py
with `--variants` random variants per random family (the test suite uses 3), and runs
the commands of tests/promises.py on them in a seeded random order until the
time is up, checking every promise the test checks. A case that breaks one is printed and
its name added to tests/hostile_corpus.txt, which the test suite runs on every command:
the corpus holds names (the generator rebuilds the store from them), never store files.
Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.build import build_all  # noqa: E402

from ckpt_runner import Runner  # noqa: E402
from hostile import cases  # noqa: E402
from promises import COMMANDS, CORPUS, bases, corpus, run_matrix  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--variants", type=int, default=12)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ckpt-fuzz-stores-") as tmp:
        work = Path(tmp)
        build_all(work / "fixtures")
        base_paths = bases(work / "fixtures")
        every = cases(base_paths, seeds=args.variants)
        pairs = [(case, command) for case in every for command in COMMANDS]
        rng.shuffle(pairs)
        print(f"seed {args.seed}: {len(every)} cases, {len(pairs)} case x command pairs")
        started = time.monotonic()
        total_runs, failed_cases, failures = 0, set(), []
        with Runner() as runner:
            threads = {}
            for name in ("memory", "dev"):
                listed = runner.run(["threads", str(base_paths[name]), "--json"])
                threads[name] = __import__("json").loads(listed.stdout)[0]["thread_id"]
            done = 0
            while done < len(pairs) and time.monotonic() - started < args.seconds:
                chunk = pairs[done : done + 200]
                done += len(chunk)
                runs, found = run_matrix(runner, chunk, base_paths, work / "cases", threads)
                total_runs += runs
                for line in found:
                    print(line[:500], flush=True)
                    failed_cases.add(line.split(" | ")[0].split(": could not")[0])
                failures.extend(found)
                shutil.rmtree(work / "cases", ignore_errors=True)
        seconds = time.monotonic() - started
        cases_run = len({case.name for case, _ in pairs[:done]})
        print(
            f"{cases_run} cases, {total_runs} runs, {len(failures)} failures "
            f"in {len(failed_cases)} cases, {seconds:.0f}s"
        )
        if failed_cases:
            known = set(corpus())
            new = sorted(failed_cases - known)
            if new:
                with CORPUS.open("a") as handle:
                    for name in new:
                        handle.write(f"{name}  # found by make fuzz, seed {args.seed}\n")
                print(f"added {len(new)} cases to {CORPUS.relative_to(ROOT)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
