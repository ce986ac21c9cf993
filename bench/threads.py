"""`ckpt threads` at size: warm and cold, against the bare GROUP BY floor and LangGraph.

    python bench/threads.py [STORE ...] [--pairs N] [--cold] [--langgraph] [--size]
                            [--compare-src SRC]

Each STORE (default bench/out/b250.sqlite, made if missing) is timed side by side with
the floor, a bare `SELECT thread_id, count(*), max(checkpoint_id) ... GROUP BY thread_id`
in its own process: pairs of runs (A B A B ...), medians. `--cold` drops the page cache
before every run (root only: /proc/sys/vm/drop_caches). For each run the table gives the
wall time, the peak RSS and the bytes read from disk (/proc/self/io of a wrapper process,
which counts its waited-for child). `--langgraph` adds `SqliteSaver.list(None)`, `--size`
adds `ckpt threads --size` (the per-thread size scan). Beside the file size it prints what
the listing needs to read at least: the two key indexes (dbstat) plus every latest root
checkpoint and its writes.

    python bench/make_store.py bench/out/b2g.sqlite --threads 1000 --turns 20          # 2.2 GB
    python bench/make_store.py bench/out/b2g-mixed.sqlite --threads 1000 --turns 20 --mixed

A STORE that is a folder is a `langgraph dev` folder (or the project holding one): its
floor is reading its three pickle files through once, in 1 MB reads, and nothing else.

    python bench/make_store.py --dev-folder bench/out/dev --checkpoints 100000         # 1.8 GB
    python bench/threads.py bench/out/dev

`--compare-src SRC` adds the same `ckpt threads --json` run with PYTHONPATH=SRC (another
checkout's `src`, say `git archive main src | tar -x -C /tmp/main`), paired with this one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CKPT = str(Path(sys.executable).with_name("ckpt"))
DEFAULT_STORE = HERE / "out" / "b250.sqlite"

# Runs one command and reports what it cost: a fresh wrapper per run, so RSS and the
# bytes read are that command's alone.
WRAPPER = """
import json, resource, subprocess, sys, time
def read_bytes():
    with open("/proc/self/io") as io:
        return next(int(l.split()[1]) for l in io if l.startswith("read_bytes"))
before = read_bytes()
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - start
if done.returncode:
    sys.exit(done.stderr.decode()[-400:])
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall": wall, "rss_mb": rss / 1024, "read_mb": (read_bytes() - before) / 1e6}))
"""

FLOOR = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = conn.execute(
    "SELECT thread_id, count(*), max(checkpoint_id) FROM checkpoints GROUP BY thread_id"
).fetchall()
print(len(rows))
"""

READ_FILES = """
import sys
from pathlib import Path
folder = Path(sys.argv[1])
if (folder / ".langgraph_api").is_dir():
    folder = folder / ".langgraph_api"
total = 0
for n in (1, 2, 3):
    path = folder / f".langgraph_checkpoint.{n}.pckl"
    if path.exists():
        with path.open("rb", buffering=0) as f:
            while chunk := f.read(1 << 20):
                total += len(chunk)
print(total)
"""

LANGGRAPH = """
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, check_same_thread=False)
print(len({t.config["configurable"]["thread_id"] for t in SqliteSaver(conn).list(None)}))
"""


NEEDED = """
SELECT (SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'sqlite_autoindex_%'),
       (SELECT sum(length(c.checkpoint) + length(c.metadata)) FROM checkpoints c
        JOIN (SELECT thread_id, max(checkpoint_id) AS id FROM checkpoints
              WHERE checkpoint_ns = '' GROUP BY thread_id) l
        ON c.thread_id = l.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = l.id),
       (SELECT sum(length(w.value)) FROM writes w
        JOIN (SELECT thread_id, max(checkpoint_id) AS id FROM checkpoints
              WHERE checkpoint_ns = '' GROUP BY thread_id) l
        ON w.thread_id = l.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = l.id)
"""


def needed_mb(store: Path) -> str:
    """What the listing must read: key indexes, latest root checkpoints, their writes."""
    import sqlite3

    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        index, latest, writes = conn.execute(NEEDED).fetchone()
    except sqlite3.Error as exc:  # no dbstat in this build
        return f"needed: unknown ({exc})"
    finally:
        conn.close()
    return (
        f"needed {((index or 0) + (latest or 0) + (writes or 0)) / 1e6:,.1f} MB "
        f"(key indexes {(index or 0) / 1e6:,.1f}, latest checkpoints {(latest or 0) / 1e6:,.1f}, "
        f"their writes {(writes or 0) / 1e6:,.1f})"
    )


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def run(argv: list[str], *, cold: bool, src: str | None = None) -> dict[str, float]:
    if cold and not drop_caches():
        raise SystemExit("--cold needs root (writes /proc/sys/vm/drop_caches)")
    env = dict(os.environ, PYTHONPATH=src) if src else None
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr[-400:]}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="*", type=Path, default=[DEFAULT_STORE])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--langgraph", action="store_true")
    parser.add_argument("--size", action="store_true")
    parser.add_argument("--compare-src", metavar="SRC", help="also run ckpt from this src")
    options = parser.parse_args()
    for store in options.stores:
        if not store.exists():
            store.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [sys.executable, str(HERE / "make_store.py"), str(store), "--threads", "1000"]
                + ["--turns", "6"],
                check=True,
            )
        dev = store.is_dir()
        sides = {
            "ckpt threads --json": [CKPT, "threads", str(store), "--json"],
            "read the files (floor)" if dev else "GROUP BY floor": [
                sys.executable,
                "-c",
                READ_FILES if dev else FLOOR,
                str(store),
            ],
        }
        if options.compare_src:
            sides["ckpt threads --json (SRC)"] = sides["ckpt threads --json"]
        if options.size:
            sides["ckpt threads --size --json"] = [CKPT, "threads", str(store), "--size", "--json"]
        if options.langgraph:
            sides["SqliteSaver.list(None)"] = [sys.executable, "-c", LANGGRAPH, str(store)]
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for i in range(options.pairs):
            for name, argv in sides.items():
                if name.startswith("SqliteSaver") and i >= 1:
                    continue  # minutes per run on big stores: once is enough
                src = options.compare_src if name.endswith("(SRC)") else None
                runs[name].append(run(argv, cold=options.cold, src=src))
        mode = "cold" if options.cold else "warm"
        size = sum(p.stat().st_size for p in store.rglob("*.pckl")) if dev else store.stat().st_size
        print(f"{store.name}: {size / 1e6:,.0f} MB, {mode}, medians")
        if options.compare_src:
            print(f"  SRC = {options.compare_src}")
        print(f"  load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        if not dev:
            print(f"  {needed_mb(store)}")
        for name, samples in runs.items():
            wall = statistics.median(s["wall"] for s in samples)
            rss = max(s["rss_mb"] for s in samples)
            read = statistics.median(s["read_mb"] for s in samples)
            print(f"  {name:26} {wall:7.2f} s  peak {rss:6.0f} MB  read {read:8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
