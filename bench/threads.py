"""`ckpt threads` at size: warm and cold, against the bare GROUP BY floor and LangGraph.

    python bench/threads.py [STORE ...] [--pairs N] [--cold] [--langgraph] [--size]
                            [--baseline OTHER_CKPT] [--compare-src SRC]

Each STORE (default bench/out/b250.sqlite, made if missing) is timed side by side with
the floor, a bare `SELECT thread_id, count(*), max(checkpoint_id) ... GROUP BY thread_id`
in its own process: pairs of runs (A B A B ...), medians. `--cold` drops the page cache
before every run (root only: /proc/sys/vm/drop_caches). For each run the table gives the
wall time, the CPU time (user + system: steadier than the wall on a loaded machine), the
peak RSS and the bytes read from disk (/proc/self/io of a wrapper process, which counts
its waited-for child). `--langgraph` adds `SqliteSaver.list(None)`, `--size` adds `ckpt
threads --size` (the per-thread size scan), `--baseline` another ckpt executable (another
checkout's venv) in the same pairs. Beside the file size it prints what the listing needs
to read at least: the two key indexes (dbstat) plus every latest root checkpoint and its
writes.

    python bench/make_store.py bench/out/b2g.sqlite --threads 1000 --turns 20          # 2.2 GB
    python bench/make_store.py bench/out/b2g-mixed.sqlite --threads 1000 --turns 20 --mixed
    python bench/make_store.py bench/out/b8g-mixed.sqlite --threads 4000 --turns 19 --mixed
    python bench/make_store.py bench/out/t100k.sqlite --threads 100000 --turns 1     # 1.7 GB

Measured 2026-12-01 (issue 14, branch speed14), 2 shared CPUs, load average 2.5-4.6 from
other jobs throughout, so walls run above CPU times. "before" is main at d94d47d run from
a copy of its src/ (`--baseline`, a `python` with PYTHONPATH set); both sides with
compiled .pyc files. Medians of paired runs (pairs in brackets); wall / CPU seconds, peak
RSS. The Postgres rows come from the same A B A B runs by hand (`ckpt threads DSN
--json`), its floor a bare GROUP BY through psycopg in its own process.

    store                          before               after                floor
    248 MB, warm [9]               0.40 / 0.39 s 33 MB  0.33 / 0.33 s 29 MB  0.05 s
      SqliteSaver.list(None) 8.73 s (one run): 21.8x before, 26.5x after
    8.0 GB mixed, warm [5]         1.55 / 1.49 s 43 MB  1.37 / 1.34 s 39 MB  0.20 s
    8.0 GB mixed, cold [3]         6.09 / 2.61 s 43 MB  6.03 / 2.66 s 38 MB  1.03 s
      read 206.8 / 207.6 MB of 8,016 MB; needed <= 233 MB (both key indexes counted
      whole, 153 MB of latest bodies); measured at 6eef6ce, before the shape cache
    100,000 threads x 5, warm [3]  31.1 / 19.5 s 31 MB  24.4 / 16.6 s 27 MB  0.61 s
    Postgres 1,000 x 100 [3]       1.53 / 0.63 s 47 MB  0.76 / 0.59 s 45 MB  0.54 s
    Postgres 10,000 x 100 [3]      4.35 / 2.57 s 97 MB  3.08 / 1.72 s 45 MB  0.92 s
      (6.5 GB database; before, memory grew with the thread count: every summary was
      kept to be sorted)

Measured again 2026-12-01 on a quiet machine (load average 0.6-1.0, nothing else
running), main at 814f809, `ckpt threads --json`, medians of paired runs [pairs]:

    store                          ckpt                 floor    other
    248 MB, warm [5]               0.19 s 29 MB         0.03 s   SqliteSaver.list 5.00 s: 26.3x
    8.0 GB mixed, warm [5]         0.67-0.73 s 39 MB    0.10 s   (0.55-0.65 s by /usr/bin/time)
    8.0 GB mixed, cold [2]         3.88 s 39 MB         0.59 s   read 215 MB of 8,014; needed 233
    100,000 threads x 5, warm [3]  6.62 s 27 MB         0.21 s
    dev folder 1.8 GB              2.9 s 43 MB          (show/history of a thread 3.5-3.9 s 43 MB)

The 100,000-thread store is made again since 9ef6a92: before, a third of its copied bodies
were invalid msgpack (see make_store._new_id). Per thread there (in-process, 65 us): the
latest rows' statements and row checks ~20 us, building the checkpoint ~26 us, its record
~11 us, its JSON ~13 us.

Where `threads` spends its CPU (in-process, 8 GB store, per thread): reading the latest
body through SQLite ~65 us (38 KB each), decoding its skeleton ~85 us (ormsgpack over 76
messages as opaque exts ~20 us of it), the key-index aggregate ~50 us, the record and its
JSON ~45 us; start-up (imports: Typer ~70 ms of ~150 ms) is fixed.



Measured 2026-12-02 (load average ~1, this machine slower than on 12-01: the same old
code ran 8.0 GB warm in 0.73-0.98 s), `ckpt threads --json` at f91bb01 against
bc95406 (`--compare-src`), medians of paired runs [pairs]:

    store                          after            before           floor
    248 MB, warm [5]               0.36 s 29 MB     0.42 s 29 MB     0.05 s
      SqliteSaver.list(None) 9.21 s: 25.6x after
    8.0 GB mixed, warm [5]         0.68 s 39 MB     0.73 s 39 MB     0.11 s
    8.0 GB mixed, cold [3]         3.17 s 39 MB     3.07 s 39 MB     0.61 s
      read 217.4 MB of 8,014 MB; needed 233 MB (as before)
    100,000 threads x 5, warm [2]  6.84 s 27 MB     7.92 s 27 MB     0.31 s

The one streamed statement (latest row joined to each thread's aggregate) saves the
VALUES batches' ~1 s per 100,000 threads; orjson writes the indented records (json's
indenting encoder is pure Python, ~14 us a record) and reads plain metadata. The page
cache here holds about 8 GB in all: run a store's cold and warm benches apart from the
others' (a warm run right after another store's cold one reads from disk).

Measured 2026-12-02, second session (this machine ran about 2x slower than on 12-01: a
10M-step Python loop took 1.9 s; the session's starting code 955418b ran 8.0 GB warm in
1.51 s, against 0.68 s the day before). `ckpt threads --json` at 8a46b45 against 955418b
(`--compare-src`), medians of paired runs [pairs]:

    store                          after            before           floor
    248 MB, warm [5]               0.42 s 29 MB     0.57 s 29 MB     0.05 s
      SqliteSaver.list(None) 15.54 s: 37x after
    8.0 GB mixed, warm [5]         1.33 s 39 MB     1.51 s 39 MB     0.24 s
    8.0 GB mixed, cold [3]         3.65 s 39 MB     3.33 s 39 MB     0.62 s
      cpu 1.92 / 2.01 s; read 214.5 MB of 8,015 MB; needed 233 MB
    100,000 threads x 5, warm [3]  14.84 s 27 MB    17.14 s 27 MB    0.61 s
    Postgres 1,000 x 100 [3]       0.90-1.00 s 47 MB  0.99-1.03 s 47 MB  0.08 s
    Postgres 10,000 x 100 [3]      3.85-4.01 s 48 MB  4.63-4.68 s 47 MB  0.52 s
      cold (caches dropped) [3]    5.38-5.93 s      6.30-6.54 s
      --limit 3                    1.48 s           2.00 s

Per listed thread now (in-process, 100,000-thread store, this machine): the SQL statement
~24 us, the peek at the body ~14 us (ormsgpack ~5), metadata ~5, the checkpoint ~17, its
record ~18, its JSON ~14 (the orjson test walk ~9). A Python walk costs ~0.3 us a value
here whatever its form: a per-container check (set(map(type, ...))) and a one-pass check
of a record's flat fields were both no faster, and were not kept. Postgres: each latest
checkpoint's blob rows come by a lateral join in the listing's statement (the keys no
longer travel out and back: 1.3 s -> 0.35 s of server time on 10,000 threads), and the
cursor sorts the narrow aggregates before joining, so each FETCH does its own rows' work.

Measured 2026-12-02, third session (a faster machine than that morning's: a 10M-step loop
0.2 s), main at 6b8a22d, `ckpt threads --json`, medians of paired runs [pairs], beside the
floor, the floor plus the latest rows (one statement), and the bound of the target: 2 x
(floor + the latest checkpoints loaded as SqliteSaver loads them, import taken off):

    store                         ckpt            floor  +latest  bound
    248 MB, warm [7]              0.24 s 28 MB    0.03   0.05     0.66 s
      SqliteSaver.list(None) 5.24 s: 21.8x
    8.0 GB mixed, warm [5]        0.75 s 39 MB    0.12   0.23     8.02 s
    8.0 GB mixed, cold [2]        4.16 s 38 MB    0.71   1.55    11.22 s
      cpu 2.00 s; read 214 MB of 8,015 MB, needed 233 MB
    100,000 threads x 5, warm [2] 5.65 s 27 MB    0.26   0.70     9.53 s
    dev folder 1.8 GB, warm [3]   3.39 s 44 MB    0.14 (reading the three files through)

Every store is within its bound; against the bare rows (floor + latest rows) ckpt is 3-8x
off: what remains is Python's decoding of each latest body (~50-100 us a thread) and the
fixed start-up (~0.1 s, Typer's import 70 ms of it), which is also why the 248 MB ratio to
SqliteSaver.list fell below 25x on this faster machine (26-37x on the earlier ones).
Cold, ckpt's CPU (2.0 s) and its reads (2.2 s of waiting) add up rather than overlap:
fetching the rows ahead on a second thread (sqlite3 lets go of the GIL while it steps)
would bring the wall towards the larger of the two. The dev folder's pickle pass is
Python's per opcode: compiled as is with Cython it ran 1.4x faster, with mypyc 1.1x; under
1 s needs a typed, compiled scanner.

Memory at 100,000 threads x 5 (1.7 GB), every command: threads 27 MB (59 MB with `--sort
step`, which held 465 MB before: records now wait in a temporary file), prune --all 40 MB
(665 MB and 97 s before, 16 s now), stats 160 MB (311 before), types 28 MB, dump 26 MB.
On the 8 GB store: threads 40 MB, history/show 24-31 MB, stats 51-58 MB, types 35 MB,
prune --all 42 MB (95 MB before; 30 -> 22 s). The dev folder: stats 186 MB, types 174 MB.

Measured 2026-12-02, fourth session (quiet machine, load average ~1; a 10M-step loop
0.2 s), main at f71146d, `ckpt threads --json`, medians of paired runs [pairs]:

    store                         ckpt            floor  +latest  bound
    248 MB, warm [5]              0.16 s 28 MB    0.02   0.04     0.51 s
      SqliteSaver.list(None) 5.75 s: 36x
    2.2 GB mixed, warm [5]        0.20 s 39 MB    0.03   0.06     1.51 s
    8.0 GB mixed, warm [7]        0.45 s 39 MB    0.08   0.14     5.57 s
    8.0 GB mixed, cold [3]        2.75 s 39 MB    0.57   1.32     9.63 s
      cpu 1.43 s; read 215 MB of 8,015 MB, needed 233 MB
    dev folder 1.8 GB, warm [3]   0.95 s 45 MB    0.34 (reading the three files through)
      compiled pass (setup.py); as Python (CKPT_PURE_PYTHON=1) 2.27 s, by hand [5]
    Postgres 1,000 x 100 [3]      0.36 s 45 MB    0.17   PostgresSaver.get_tuple each 1.17 s
    Postgres 10,000 x 100 [3]     1.63 s 48 MB    0.43   ... 14.4 s; --limit 3 0.66 s
      cold (OS cache dropped) [2] 4.43 s          1.20

The Postgres rows by hand (A B A B: `ckpt threads DSN --json`, a bare GROUP BY through
psycopg in its own process, each thread's latest loaded by PostgresSaver.get_tuple). A
fetch-ahead thread for the listing statement (sqlite3 lets go of the GIL while it steps)
was tried and measured slower, warm and cold: the rows' Python and the steps take the GIL
in turns, one row each, and cold the wall here is the disk's, not the CPU's. Memory at
100,000 threads x 5: threads 27 MB, --sort step 52 MB, stats 85 MB (160 before: state is
kept only for the threads its record lists), types 28 MB, dump 26 MB, prune --all
--keep-last 2 40 MB; on 8 GB every command 21-50 MB.

Measured 2026-12-04 (issue 30: the Cython build dropped; load average ~1.2), the 1.8 GB
dev folder (`make_store.py --dev-folder ... --checkpoints 100000`), `ckpt threads --json`,
medians of 5 pairs, warm:

    pass                                     wall    peak   in-process: storage, writes, blobs
    compiled (Cython, at b394026)            0.78 s  46 MB  0.15 + 0.18 + 0.30 s
    the same as Python (CKPT_PURE_PYTHON=1)  1.89 s  46 MB  0.48 + 0.59 + 0.70 s
    Python, ckpt.stores.pickle.lean today    1.86 s  42 MB
    reading the three files through (floor)  0.22 s  12 MB

The target (within 1.5x of the compiled pass: 1.17 s) is not reached: the pass is one
Python loop over every opcode (millions here), already fused so that each object and
the BINPUT after it take one turn; what remains is the interpreter's cost per opcode.
A development-only format at 1.9 s for 100,000 checkpoints was judged worth a wheel that
installs anywhere without a compiler. What would reach it without C: scanning the three
files in parallel processes (about max(0.48, 0.59, 0.70) + start-up on two cores).

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
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                  "rss_mb": usage.ru_maxrss / 1024, "read_mb": (read_bytes() - before) / 1e6}))
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

# The floor plus what the listing must read beyond the key index: each (thread, namespace)'s
# latest checkpoint row and its writes, in one streamed statement. With a second argument
# each latest checkpoint, its metadata and its writes are also loaded the way SqliteSaver
# loads them (serde.loads_typed, json.loads): the time "to read the latest checkpoints"
# by LangGraph's own decoding, which the target's bound adds to the bare GROUP BY. Its
# import of LangGraph is timed apart ("import") and taken off.
FLOOR_LATEST = """
import json, sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
load = len(sys.argv) > 2
if load:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    loads_typed = JsonPlusSerializer().loads_typed
    if sys.argv[2] == "import":
        sys.exit()
rows = conn.execute(
    "SELECT c.type, c.checkpoint, c.metadata, w.type, w.value FROM"
    " (SELECT thread_id, checkpoint_ns, count(*) AS n, max(checkpoint_id) AS id"
    "  FROM checkpoints GROUP BY thread_id, checkpoint_ns) l"
    " JOIN checkpoints c ON c.thread_id = l.thread_id AND c.checkpoint_ns = l.checkpoint_ns"
    "  AND c.checkpoint_id = l.id"
    " LEFT JOIN writes w ON w.thread_id = l.thread_id AND w.checkpoint_ns = l.checkpoint_ns"
    "  AND w.checkpoint_id = l.id"
)
n = 0
for kind, body, metadata, write_kind, value in rows:
    n += 1
    if load:
        loads_typed((kind, body))
        json.loads(metadata) if metadata is not None else {}
        if write_kind is not None:
            loads_typed((write_kind, value))
print(n)
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
    parser.add_argument(
        "--baseline",
        metavar="CKPT",
        help="another ckpt executable (e.g. main's venv) timed in the same pairs",
    )

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
        if not dev:
            sides["floor + latest rows"] = [sys.executable, "-c", FLOOR_LATEST, str(store)]
            sides["floor + latest, loaded"] = [
                sys.executable,
                "-c",
                FLOOR_LATEST,
                str(store),
                "load",
            ]
            sides["LangGraph's import"] = [sys.executable, "-c", FLOOR_LATEST, str(store), "import"]
        if options.baseline:
            sides["baseline threads --json"] = [options.baseline, "threads", str(store), "--json"]

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
            cpu = statistics.median(s["cpu"] for s in samples)
            rss = max(s["rss_mb"] for s in samples)
            read = statistics.median(s["read_mb"] for s in samples)
            print(
                f"  {name:26} {wall:7.2f} s  cpu {cpu:6.2f} s  peak {rss:6.0f} MB  "
                f"read {read:8.1f} MB"
            )
        if "LangGraph's import" in runs:
            loaded, imported = (
                statistics.median(s["wall"] for s in runs[name])
                for name in ("floor + latest, loaded", "LangGraph's import")
            )
            floor = statistics.median(s["wall"] for s in runs["GROUP BY floor"])
            print(
                f"  bound: 2 x (floor {floor:.2f} + latest loaded, without the import "
                f"{loaded - imported:.2f}) = {2 * (floor + loaded - imported):.2f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
