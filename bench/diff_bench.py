"""`ckpt diff` of 16 MB channel values, every shape, under a 1 GB address-space limit.

    python bench/diff_bench.py [--store PATH] [--src SRC] [--only SHAPE ...] [--timeout S]
                               [--columns N]

Each shape is a thread of one SqliteSaver store (bench/out/diff-shapes.sqlite, written
once by a real graph run, fixtures/values.py): its channel holds value A, then B, so
`ckpt diff THREAD` compares A with B. Every shape is run as `diff`, `diff --json`,
`diff --full` and `diff --json` across two stores (--db2; the same file opened twice),
through the real CLI in a forked child under tests/ckpt_runner.py's 1 GB RLIMIT_AS (the
limit of issue 38), and the table gives the exit code, the wall time, the child's peak
RSS and the bytes written to stdout. Exit 1 is the answer "they differ"; 70 is an
internal error (MemoryError), "killed" the timeout (--timeout, default 120 s).

`--src` runs another checkout's ckpt (its src/ folder), e.g. the code before a change:

    git archive 5bb96c6 src | tar -x -C /tmp/before
    python bench/diff_bench.py --src /tmp/before/src --timeout 60

Measured 2026-12-04 (issue 38, branch inputs), 2 shared CPUs, COLUMNS=120; "before" is
5bb96c6 (--timeout 60), "after" this branch. Exit, seconds, peak RSS of every run that
failed or changed by more than noise; every other run answered (exit 1) in 0.1-4.6 s
under 510 MB both before and after, and every run answers after:

    shape (a 16 MB channel)                 mode      before                after
    nested: 100 lists of 2,000 dicts, all   diff      70   21.6 s 1002 MB   2.9 s 403 MB
      changed (the issue's)                 --full    70   21.5 s 1002 MB   2.8 s 403 MB
                                            --json         6.5 s  508 MB    3.2 s 403 MB
    dict-all-keys: 700,000 values changed   diff      70   10.2 s 1003 MB   1.3 s 441 MB
                                            --full    70   10.2 s 1003 MB   1.6 s 441 MB
                                            --json         4.2 s  667 MB    1.3 s 442 MB
    tiny-keys: 2 million ints, all changed  all four  70  8.3-10.1 s 1007 MB 4.1-6.6 s 771-804 MB
    rows-all: 560,000 small dicts changed   --full    killed 60 s           2.9 s 503 MB
    rows-added: [] -> those dicts           --full    killed 60 s           1.8 s 345 MB
    numbers-added: [] -> 3.3 million ints   --full    killed 60 s           1.0 s 314 MB
    numbers-removed: the other way          --full    killed 60 s           0.8 s 186 MB
    messages-added: [] -> 140,000 messages  --full    killed 60 s           2.7 s 353 MB
    messages-new: absent -> those messages  diff      12.2 s 634 MB         4.2 s 365 MB
    messages-all: every message edited      --full    killed 60 s           4.5 s 462 MB
    str-lines: 8 million lines changed      --full    70   9.0 s 1004 MB    0.2 s 92 MB
    bytes-changed                           --full    15.6 s 852 MB         0.2 s 173 MB
    str-changed                             --full    6.0 s 519 MB          0.1 s 92 MB
    dict-added: absent -> 700,000 keys      --full    6.7 s 547 MB          1.0 s 326 MB
    pairs: 1,000 lists of 2,000 strings,    all four  killed 60 s           1.7-3.5 s 457-505 MB
      ends changed (4 MB)
    lines-1mb: 500,000 lines changed (1 MB) diff      70   7.5 s 999 MB     1.3 s 84 MB
                                            --full    70   7.4 s 999 MB     1.3 s 84 MB
    words-1mb: 200,000 words, half changed  --full    killed 60 s           0.5 s 57 MB

What is left is the decoded values themselves: a 16 MB dict of 2 million small entries
is ~220 MB in Python, and a child checkpoint's diff holds three of them (A's value, A's
pending write of B, B's value): tiny-keys peaks at 771-804 MB, under the limit.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DEFAULT_STORE = ROOT / "bench" / "out" / "diff-shapes.sqlite"
SIZE = 16 << 20  # the channel's size, roughly, as msgpack


def shapes() -> dict[str, tuple[Any, Any]]:
    """thread -> (value A, value B); ABSENT leaves the channel unwritten."""
    from fixtures.values import ABSENT
    from langchain_core.messages import AIMessage, HumanMessage

    def messages(count: int, salt: str = "") -> list[Any]:
        kinds = (HumanMessage, AIMessage)
        text = "w" * 60
        return [kinds[i % 2](content=f"message {i}{salt} {text}", id=f"m{i}") for i in range(count)]

    rng = random.Random(38)
    keyed = {f"key-{i:07d}": f"value-{i}" for i in range(SIZE // 24)}
    rows = [{"i": i, "name": f"row-{i}", "ok": True} for i in range(SIZE // 32)]
    numbers = list(range(SIZE // 5))
    tiny = {f"{i:x}": i % 100 for i in range(SIZE // 8)}
    chat = messages(SIZE // 120)
    words = [f"w{rng.randrange(5000)}" for _ in range(200_000)]

    def nested(bump: int) -> dict[str, Any]:
        return {
            f"g{g}": [{"k": i, "v": [i, i + bump, {"s": "x" * 10}]} for i in range(2000)]
            for g in range(100)
        }

    return {
        "dict-one-key": (keyed, {**keyed, "key-0000001": "changed"}),
        "dict-all-keys": (keyed, {k: v + "!" for k, v in keyed.items()}),
        "dict-added": (ABSENT, keyed),
        "dict-equal": (keyed, dict(keyed)),
        "tiny-keys": (tiny, {k: v + 1 for k, v in tiny.items()}),
        "rows-all": (rows, [{**row, "ok": False} for row in rows]),
        "rows-added": ([], rows),
        "numbers-added": ([], numbers),
        "numbers-removed": (numbers, []),
        "nested": (nested(1), nested(2)),
        "bytes-changed": (b"a" * SIZE, b"b" * SIZE),
        "bytes-equal": (b"a" * SIZE, b"a" * SIZE),
        "str-changed": ("a" * SIZE, "b" * SIZE),
        "str-added": (ABSENT, "a" * SIZE),
        "str-lines": ("a\n" * (SIZE // 2), "b\n" * (SIZE // 2)),
        "messages-added": ([], chat),
        "messages-new": (ABSENT, chat),
        "messages-grown": (chat, [*chat, AIMessage(content="new", id="new")]),
        "messages-all": (chat, messages(len(chat), "z")),
        "pairs": (
            [["s", *["a"] * 1998, "e"] for _ in range(1000)],
            [["S", *["a"] * 1998, "E"] for _ in range(1000)],
        ),
        "lines-1mb": ("a\n" * 500_000, "b\n" * 500_000),
        "words-1mb": (
            " ".join(words),
            " ".join(w if rng.random() < 0.5 else "x" for w in words),
        ),
    }


def build(store: Path) -> None:
    from fixtures.values import two_values_store

    store.parent.mkdir(parents=True, exist_ok=True)
    two_values_store(store, shapes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--src", type=Path, help="another checkout's src/ to run")
    parser.add_argument("--only", nargs="*", help="these shapes only")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--columns", default="120", help="COLUMNS: the width views lay out for")
    args = parser.parse_args()
    if not args.store.exists():
        print(f"writing {args.store} ...", file=sys.stderr)
        build(args.store)
    from ckpt_runner import Runner

    store = str(args.store)
    modes = {
        "diff": ["--db", store],
        "--json": ["--db", store, "--json"],
        "--full": ["--db", store, "--full"],
        "--db2 --json": ["--db", store, "--db2", store, "--json"],
    }
    print(f"{'shape':18} {'mode':12} {'exit':>6} {'seconds':>8} {'peak MB':>8} {'stdout MB':>9}")
    with Runner(args.src) as runner:
        for thread in args.only or list(shapes()):
            for mode, options in modes.items():
                selectors = [thread] if mode != "--db2 --json" else [f"{thread}~1", thread]
                result = runner.run(
                    ["diff", *selectors, *options],
                    env={"COLUMNS": args.columns},
                    timeout=args.timeout,
                )
                code = "killed" if result.exit_code is None else str(result.exit_code)
                print(
                    f"{thread:18} {mode:12} {code:>6} {result.seconds:8.1f} "
                    f"{result.peak_mb:8.0f} {len(result.stdout) / 1e6:9.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
