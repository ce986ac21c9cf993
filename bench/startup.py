"""Start-up time of `ckpt --help` and `ckpt threads` (median of paired runs), and the
modules `threads` imports: the numbers behind "start-up stays as fast as today".

    python bench/startup.py [STORE]        # STORE defaults to demo/chat.sqlite
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 25
CKPT = str(Path(sys.executable).with_name("ckpt"))


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
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


def main() -> int:
    store = sys.argv[1] if len(sys.argv) > 1 else "demo/chat.sqlite"
    commands = {"--help": [CKPT, "--help"], "threads": [CKPT, "threads", store]}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):  # interleaved, so load on the machine hits both alike
        for name, args in commands.items():
            samples[name].append(timed(args))
    for name, times in samples.items():
        print(
            f"ckpt {name:8} median {statistics.median(times) * 1000:6.1f} ms  "
            f"(min {min(times) * 1000:.1f}, {RUNS} runs)"
        )
    print("threads imports:", " ".join(imported(["threads", store])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
