"""Every command's output on a fixed set of stores, to hold a refactor to "no output changed".

    python bench/outputs.py build STORES [--pg-admin DSN]   # write the stores once
    python bench/outputs.py run STORES OUT                  # every command, into OUT/
    diff -r OUT_BEFORE OUT_AFTER                            # nothing, or what changed

`build` writes the fixture stores of fixtures/build.py (SQLite, encrypted, dev folder,
PersistentDict file), copies the checked-in samples of tests/data, and, with a Postgres
admin DSN, fills two new databases through PostgresSaver and ShallowPostgresSaver (their
URLs go into STORES/postgres.txt; drop them by hand when done). The stores are written
once and only read afterwards, so ids and times stay the same between runs.

`run` runs each read command (human view at 120 columns and --json), on each store and on
each of its first threads, plus the dry runs of prune and vacuum, through the real CLI in
forked children (tests/ckpt_runner.py), and writes OUT/<store>/<command>.txt: the exit code,
stdout and stderr. Paths of STORES are written as `STORES`, the disk's free bytes as N.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "src")]

THREADS_PER_STORE = 8
ENV: dict[str, str | None] = {"COLUMNS": "120", "NO_COLOR": "1", "TZ": "UTC", "CKPT_DB": None}
KEY = "0123456789abcdef"  # fixtures.build.ENCRYPTION_KEY and the samples' key


def build(stores: Path, pg_admin: str | None) -> None:
    from fixtures.build import build_all

    stores.mkdir(parents=True, exist_ok=False)
    build_all(stores / "fixtures")
    shutil.copytree(ROOT / "tests" / "data", stores / "samples")
    if pg_admin:
        import uuid

        import psycopg
        from fixtures.js_stores import node_dsn
        from fixtures.postgres import build_postgres, build_postgres_shallow
        from psycopg.conninfo import make_conninfo

        urls = []
        for build_one in (build_postgres, build_postgres_shallow):
            name = f"ckpt_outputs_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(pg_admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            dsn = make_conninfo(pg_admin, dbname=name)
            build_one(dsn)
            urls.append(node_dsn(dsn))
        (stores / "postgres.txt").write_text("\n".join(urls) + "\n")


def store_specs(stores: Path) -> dict[str, list[str]]:
    """name -> the store's arguments (its location, and the key where it needs one)."""
    fixtures = stores / "fixtures"
    specs = {
        "chat": [str(fixtures / "chat.sqlite")],
        "encrypted": [str(fixtures / "encrypted.sqlite"), "--aes-key", KEY],
        "encrypted-nokey": [str(fixtures / "encrypted.sqlite")],
        "dev": [str(fixtures / ".langgraph_api")],
        "memory": [str(fixtures / "memory.pkl")],
    }
    for path in sorted((stores / "samples").iterdir()):
        if path.suffix in (".db", ".pkl"):
            extra = ["--aes-key", KEY] if "encrypted" in path.name else []
            specs[f"sample-{path.name}"] = [str(path), *extra]
    urls = stores / "postgres.txt"
    if urls.exists():
        for name, url in zip(
            ("postgres", "postgres-shallow"), urls.read_text().split(), strict=True
        ):
            specs[name] = [url]
    return specs


def commands(runner: object, spec: list[str]) -> dict[str, list[str]]:
    """Every command line to run on one store."""
    from ckpt_runner import Runner

    assert isinstance(runner, Runner)
    store, options = spec[0], spec[1:]
    db = ["--db", store, *options]
    lines = {
        "threads": ["threads", store, *options],
        "threads --json --size": ["threads", store, *options, "--json", "--size"],
        "dump --json": ["dump", store, *options, "--json", "-q"],
        "stats": ["stats", store, *options],
        "stats --json": ["stats", store, *options, "--json"],
        "types": ["types", store, *options],
        "types --json": ["types", store, *options, "--json"],
        "prune --all": ["prune", store, *options, "--all"],
        "prune --all --json": ["prune", store, *options, "--all", "--json"],
        "vacuum": ["vacuum", store, *options],
        "vacuum --json": ["vacuum", store, *options, "--json"],
    }
    listed = runner.run(["threads", store, *options, "--json", "--sort", "thread"], env=ENV)
    try:
        threads = [t["thread_id"] for t in json.loads(listed.stdout)][:THREADS_PER_STORE]
    except ValueError:
        threads = []
    if listed.exit_code != 0:  # said, so that a failed listing is not a shorter snapshot
        print(f"{store}: threads exited {listed.exit_code}: {listed.stderr!r}", file=sys.stderr)
    for thread in threads:
        lines |= {
            f"history {thread}": ["history", thread, *db],
            f"history {thread} --json": ["history", thread, *db, "--json"],
            f"show {thread}": ["show", thread, *db, "--writes"],
            f"show {thread} --blobs": ["show", thread, *db, "--blobs", "--full"],
            f"show {thread} --json": ["show", thread, *db, "--json", "--blobs", "--writes"],
            f"versions {thread}": ["versions", thread, *db],
            f"versions {thread} --json": ["versions", thread, *db, "--json"],
            f"diff {thread}": ["diff", thread, *db],
            f"diff {thread} --json": ["diff", thread, *db, "--json"],
        }
    return lines


def run(stores: Path, out: Path) -> None:
    from ckpt_runner import Runner

    out.mkdir(parents=True, exist_ok=True)
    root = str(stores.resolve())
    with Runner() as runner:
        for name, spec in store_specs(stores.resolve()).items():
            folder = out / name
            folder.mkdir(exist_ok=True)
            for label, args in commands(runner, spec).items():
                result = runner.run(args, env=ENV, timeout=120)
                text = (
                    f"exit {result.exit_code}\n--- stdout\n"
                    + result.stdout.decode("utf-8", "replace")
                    + "--- stderr\n"
                    + result.stderr.decode("utf-8", "replace")
                ).replace(root, "STORES")
                # The one figure that is not the store's: the free space of the disk.
                text = re.sub(r'"disk_free_bytes": \d+', '"disk_free_bytes": N', text)
                text = re.sub(r"disk: [\d.]+ [KMGT]?B free", "disk: N free", text)
                safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)
                (folder / f"{safe}.txt").write_text(text)
            print(f"{name}: done", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    build_verb = verbs.add_parser("build")
    build_verb.add_argument("stores", type=Path)
    build_verb.add_argument("--pg-admin")
    run_verb = verbs.add_parser("run")
    run_verb.add_argument("stores", type=Path)
    run_verb.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.verb == "build":
        build(args.stores, args.pg_admin)
    else:
        run(args.stores, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
