"""`ckpt browse`: time from launch to a usable screen, in a real terminal.

    python bench/browse.py [STORE] [--runs N]     (make bench-browse)

STORE defaults to bench/out/b250.sqlite, generated if missing (1000 threads x 6 turns of a
growing chat, 248 MB; `bench/make_store.py --threads 1000 --turns 25` gives 3.4 GB). Each
run starts the installed `ckpt browse STORE` in a tmux window of 120x40 and polls the
screen (tmux capture-pane) every 10 ms: the time until the threads table shows all the
store's threads, and until the checkpoint pane shows the newest thread's newest
checkpoint. The goal of issue 13 is under 1 s to the threads table on the 248 MB store.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CKPT = str(Path(sys.executable).with_name("ckpt"))
DEFAULT_STORE = HERE / "out" / "b250.sqlite"
GOAL = 1.0  # seconds to the threads table


def one_run(store: Path, threads: int) -> tuple[float, float]:
    server = ["tmux", "-L", "ckpt-bench-browse", "-f", "/dev/null"]
    subprocess.run([*server, "kill-server"], capture_output=True, check=False)
    command = f"{shlex.quote(CKPT)} browse {shlex.quote(str(store))}"
    start = time.perf_counter()
    subprocess.run(
        [*server, "new-session", "-d", "-s", "b", "-x", "120", "-y", "40", command],
        check=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    table = pane = 0.0
    try:
        while time.perf_counter() - start < 30:
            screen = subprocess.run(
                [*server, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True
            ).stdout
            now = time.perf_counter() - start
            if not table and f"Threads {threads} " in screen:
                table = now
            if not pane and "channel versions" in screen:
                pane = now
            if table and pane:
                break
            time.sleep(0.01)
    finally:
        subprocess.run([*server, "send-keys", "-t", "b", "q"], capture_output=True, check=False)
        time.sleep(0.3)
        subprocess.run([*server, "kill-server"], capture_output=True, check=False)
    if not (table and pane):
        raise SystemExit("the browser never showed its threads and checkpoint in 30 s")
    return table, pane


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("bench/browse.py needs tmux")
    store: Path = options.store
    if not store.exists():
        store.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(HERE / "make_store.py"), str(store), "--threads", "1000"]
            + ["--turns", "6"],
            check=True,
        )
    listed = subprocess.run(
        [CKPT, "threads", str(store), "--json"], capture_output=True, text=True, check=True
    )
    threads = len(json.loads(listed.stdout))
    size = store.stat().st_size / 1e6
    runs = [one_run(store, threads) for _ in range(options.runs)]
    table = statistics.median(t for t, _ in runs)
    pane = statistics.median(p for _, p in runs)
    print(f"{store.name}: {size:,.0f} MB, {threads:,} threads, {options.runs} runs (medians)")
    print(f"  threads table on screen   {table:.2f} s   (goal < {GOAL:.1f} s)")
    print(f"  newest checkpoint shown   {pane:.2f} s")
    if table >= GOAL:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
