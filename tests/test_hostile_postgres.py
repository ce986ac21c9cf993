"""Every read command on hostile Postgres schemas, and a connection killed mid-dump (issue 15).

One database holds the checked-in dump of a current PostgresSaver store; each case is a
schema made from a copy of its tables (CREATE TABLE AS: no constraints, so NULLs fit)
and then damaged: NULLs in every column, columns of the wrong type, garbage metadata,
hostile ids, expansion bombs in blobs, a migrations table from the future or none. ckpt
reads each with `--schema`, under the promises of tests/test_hostile_stores.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fixtures.js_stores import node_dsn

from ckpt.errors import ExitCode
from ckpt_runner import Runner, run_ckpt
from hostile import MSGPACK, Built, nested_ext
from promises import ALLOWED, CHECK_COMMANDS, COMMANDS, problems

pytestmark = pytest.mark.postgres

TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
THREAD = "thread-1"
CKPT = str(Path(sys.executable).with_name("ckpt"))

# name -> SQL run in the case's schema after the copy (psycopg placeholders: none).
CASES: dict[str, list[str]] = {
    "intact": [],
    "future-migrations": ["INSERT INTO checkpoint_migrations VALUES (1000)"],
    "no-migrations": ["DROP TABLE checkpoint_migrations"],
    "no-blobs-table": ["DROP TABLE checkpoint_blobs"],
    "no-writes-table": ["DROP TABLE checkpoint_writes"],
    "checkpoint-as-text": [
        "ALTER TABLE checkpoints ALTER COLUMN checkpoint TYPE text USING checkpoint::text"
    ],
    "checkpoint-text-garbage": [
        "ALTER TABLE checkpoints ALTER COLUMN checkpoint TYPE text USING checkpoint::text",
        "UPDATE checkpoints SET checkpoint = 'not json {'",
    ],
    "metadata-as-bytea": [
        "ALTER TABLE checkpoints ALTER COLUMN metadata TYPE bytea"
        " USING convert_to(metadata::text, 'UTF8')"
    ],
    "metadata-scalar": ["UPDATE checkpoints SET metadata = '42'"],
    "metadata-parents-garbage": [
        'UPDATE checkpoints SET metadata = \'{"parents": 5, "step": "x"}\''
    ],
    "checkpoint-scalar": ["UPDATE checkpoints SET checkpoint = '\"a string\"'"],
    "blob-as-text": [
        "ALTER TABLE checkpoint_blobs ALTER COLUMN blob TYPE text USING encode(blob, 'hex')"
    ],
    "writes-blob-as-text": [
        "ALTER TABLE checkpoint_writes ALTER COLUMN blob TYPE text USING encode(blob, 'hex')"
    ],
    "idx-as-text": [
        "ALTER TABLE checkpoint_writes ALTER COLUMN idx TYPE text USING idx::text",
        "UPDATE checkpoint_writes SET idx = 'x' WHERE task_id IN"
        " (SELECT task_id FROM checkpoint_writes LIMIT 1)",
    ],
    "version-as-int": [
        "ALTER TABLE checkpoint_blobs ALTER COLUMN version TYPE bigint"
        " USING CASE WHEN version ~ '^[0-9]+$' THEN version::bigint ELSE 7 END"
    ],
    "thread-id-esc": [
        f"UPDATE {table} SET thread_id = E'\\x1b[31mred\\x1b]0;t\\x07' || thread_id"
        for table in TABLES[:3]
    ],
    "thread-id-c1-bidi": [
        f"UPDATE {table} SET thread_id = thread_id || U&'\\009B\\202E\\2066\\2028\\FEFF'"
        for table in TABLES[:3]
    ],
    "lineage-cycle": [
        "UPDATE checkpoints c SET parent_checkpoint_id = (SELECT max(checkpoint_id)"
        " FROM checkpoints WHERE thread_id = c.thread_id) WHERE parent_checkpoint_id IS NULL"
    ],
    "self-parent": ["UPDATE checkpoints SET parent_checkpoint_id = checkpoint_id"],
    **{
        f"null-{table}.{column}": [f"UPDATE {table} SET {column} = NULL"]
        for table, columns in (
            (
                "checkpoints",
                (
                    "thread_id",
                    "checkpoint_ns",
                    "checkpoint_id",
                    "parent_checkpoint_id",
                    "type",
                    "checkpoint",
                    "metadata",
                ),
            ),
            ("checkpoint_blobs", ("thread_id", "channel", "version", "type", "blob")),
            ("checkpoint_writes", ("thread_id", "task_id", "idx", "channel", "type", "blob")),
        )
        for column in columns
    },
    "null-one-thread-id": [
        "UPDATE checkpoints SET thread_id = NULL WHERE checkpoint_id = "
        "(SELECT min(checkpoint_id) FROM checkpoints)"
    ],
}
BLOB_BOMBS = {
    "fixext-8m": MSGPACK["fixext-8m"],
    "many-small-ext-2mb": MSGPACK["many-small-ext-2mb"],
    "ext-50x1000": nested_ext(50, 1_000),
    "array32-4g": MSGPACK["array32-4g"],
}


@pytest.fixture(scope="module")
def hostile_db(pg_new_database: Callable[[], str]) -> Iterator[str]:
    """A database with the current dump in `public` and one damaged schema per case."""
    import psycopg
    from fixtures.postgres import load_pg_dump

    dsn = pg_new_database()
    load_pg_dump(dsn, Path(__file__).parent / "data" / "postgres_current_pg_dump.sql")
    with psycopg.connect(dsn, autocommit=True) as conn:
        (found,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (THREAD,)
        ).fetchone() or (0,)
        assert found, "the dump has no thread " + THREAD
        for index, name in enumerate([*CASES, *(f"bomb-{b}" for b in BLOB_BOMBS)]):
            schema = f"h{index}"
            conn.execute(f"CREATE SCHEMA {schema}")
            for table in TABLES:
                conn.execute(f"CREATE TABLE {schema}.{table} AS TABLE public.{table}")
            conn.execute(f"SET search_path TO {schema}")
            if name.startswith("bomb-"):
                conn.execute(
                    "UPDATE checkpoint_blobs SET blob = %s, type = 'msgpack'"
                    " WHERE (thread_id, channel, version) = (SELECT thread_id, channel, version"
                    " FROM checkpoint_blobs WHERE thread_id = %s AND channel = 'messages'"
                    " ORDER BY version DESC LIMIT 1)",
                    (BLOB_BOMBS[name.removeprefix("bomb-")], THREAD),
                )
            for statement in CASES.get(name, []):
                conn.execute(statement)
            conn.execute("SET search_path TO public")
    yield dsn


def _schemas() -> list[tuple[str, str]]:
    names = [*CASES, *(f"bomb-{b}" for b in BLOB_BOMBS)]
    return [(f"h{index}", name) for index, name in enumerate(names)]


PER_CASE = int(os.environ.get("HOSTILE_PG_COMMANDS", "1"))


def _sampled(index: int, per_case: int) -> list[tuple[str, list[str]]]:
    """`per_case` commands for case `index`, turning through all of them across the cases
    (every command for the intact schema); HOSTILE_PG_COMMANDS=18 runs all everywhere."""
    every = list(COMMANDS.items())
    if index == 0 or per_case >= len(every):
        return every
    return [every[(index * per_case + k) % len(every)] for k in range(per_case)]


SHARDS = 3  # the cases run as this many tests, which make test's processes share
# make test: PER_CASE commands per case; make test-long (`long`): every command on every case.
RUNS = [pytest.param(PER_CASE, shard, id=str(shard)) for shard in range(SHARDS)] + [
    pytest.param(len(COMMANDS), shard, id=f"long-{shard}", marks=pytest.mark.long)
    for shard in range(SHARDS)
]


@pytest.mark.parametrize(("per_case", "shard"), RUNS)
def test_every_command_on_hostile_postgres_schemas(
    hostile_db: str, tmp_path: Path, per_case: int, shard: int
) -> None:
    url = node_dsn(hostile_db)  # the URL form the CLI takes
    built = Built(tmp_path, url, THREAD)  # nothing on disk: the folder stays empty
    failures: list[str] = []
    runs = 0
    with Runner(preload=("psycopg",)) as runner:  # every run reads Postgres
        for index, (schema, name) in enumerate(_schemas()):
            if index % SHARDS != shard:
                continue
            # and `check`, which decodes every value, on every schema
            check = ("check --json", CHECK_COMMANDS["check --json"])
            for command, template in [*_sampled(index, per_case), check]:
                args = [
                    url if p == "{store}" else THREAD if p == "{thread}" else p for p in template
                ]
                result = runner.run([*args, "--schema", schema], timeout=60)
                runs += 1
                failures.extend(
                    f"postgres/{name} | ckpt {command}: {problem}"
                    for problem in problems(command, result, built, {})
                )
    print(f"hostile postgres: {len(_schemas())} cases, {runs} runs, {len(failures)} failures")
    assert runs and not failures, "\n".join(failures[:40])


def test_a_connection_killed_mid_dump_is_one_line(hostile_db: str) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(hostile_db)
    with psycopg.connect(hostile_db, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA big")
        for table in TABLES:
            conn.execute(f"CREATE TABLE big.{table} AS TABLE public.{table}")
        for table in TABLES[:3]:
            conn.execute(f"DELETE FROM big.{table} WHERE thread_id = 'e1'")  # no key needed
        # Enough checkpoints that a dump takes a while: every checkpoint 300 times.
        conn.execute(
            "INSERT INTO big.checkpoints SELECT thread_id || '-' || n, checkpoint_ns,"
            " checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
            " FROM public.checkpoints, generate_series(1, 300) AS n WHERE thread_id <> 'e1'"
        )
    ckpt = Path(sys.executable).with_name("ckpt")
    url = f"postgresql://{params.get('user', '')}@{params.get('host', '127.0.0.1')}:" + (
        f"{params.get('port', 5432)}/{params['dbname']}"
    )
    killed: list[int] = []
    outcomes = []
    for delay in (0.0, 0.3, 0.8):
        process = subprocess.Popen(
            [str(ckpt), "dump", url, "--schema", "big", "--ndjson", "-q"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={"PGAPPNAME": "ckpt-killed", "PATH": "/usr/bin:/bin"},
        )
        stop = threading.Event()

        def killer(wait: float = delay, done: threading.Event = stop) -> None:
            time.sleep(wait)
            with psycopg.connect(hostile_db, autocommit=True) as admin:
                while not done.is_set():
                    rows = admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = 'ckpt-killed'"
                    ).fetchall()
                    killed.extend(1 for (ok,) in rows if ok)
                    time.sleep(0.01)

        thread = threading.Thread(target=killer)
        thread.start()
        _, err = process.communicate(timeout=60)
        stop.set()
        thread.join()
        outcomes.append((process.returncode, err.decode("utf-8")))
    assert killed, "no ckpt connection was ever seen to kill"
    for code, err in outcomes:
        assert code in ALLOWED, (code, err)
        assert "Traceback" not in err and "internal error" not in err, err
        assert len(err.splitlines()) <= 1, err
    assert any(code == ExitCode.UNREADABLE for code, _ in outcomes), outcomes


# A wrong type for each column ckpt decodes (ckpt.stores.postgres.schema.READ_AS): `text`
# for the binary and JSON columns, `bytea` for the text ones, `text` for idx.
def _wrong_type(column: str, types: frozenset[str]) -> tuple[str, str]:
    if "bytea" in types or "jsonb" in types:
        return "text", f"{column}::text"
    if "integer" in types:
        return "text", f"{column}::text"
    return "bytea", f"convert_to({column}, 'UTF8')"


def test_a_column_of_an_unexpected_type_is_one_line_naming_it(
    pg_new_database: Callable[[], str],
) -> None:
    """issue 29: a `checkpoint_blobs.blob` of type text was an internal error. Every column
    ckpt decodes, given another type, is refused at open: exit 4 and one line naming the
    table, the column and its type, for every command (threads and dump here)."""
    import psycopg
    from fixtures.postgres import load_pg_dump

    from ckpt.stores.postgres.schema import READ_AS

    dsn = pg_new_database()
    load_pg_dump(dsn, Path(__file__).parent / "data" / "postgres_current_pg_dump.sql")
    url = node_dsn(dsn)  # the URL form the CLI takes
    cases = [(t, c, types) for t, columns in READ_AS.items() for c, types in columns.items()]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for index, (table, column, types) in enumerate(cases):
            conn.execute(f"CREATE SCHEMA w{index}")
            for name in TABLES[:3]:
                conn.execute(f"CREATE TABLE w{index}.{name} AS TABLE public.{name}")
            kind, using = _wrong_type(column, types)
            conn.execute(
                f"ALTER TABLE w{index}.{table} ALTER COLUMN {column} TYPE {kind} USING {using}"
            )
    failures = []
    for index, (table, column, _) in enumerate(cases):
        for command in (["threads"], ["dump", "-q"]):
            done = run_ckpt(*command, url, "--schema", f"w{index}")
            said = done.stderr.strip()
            if (
                done.returncode != ExitCode.UNREADABLE
                or len(said.splitlines()) != 1
                or f"`{table}.{column}` is " not in said
            ):
                failures.append(f"{table}.{column} {command[0]}: exit {done.returncode} {said!r}")
    assert not failures, "\n".join(failures)


def test_metadata_too_large_to_fetch_is_a_record(pg_new_database: Callable[[], str]) -> None:
    """issue 29: metadata over METADATA_LIMIT is measured on the server and not fetched; the
    checkpoint shows with a `too_large` record in its place, as on SQLite."""
    import psycopg
    from fixtures.postgres import load_pg_dump

    from ckpt.stores.postgres.store import METADATA_LIMIT

    dsn = pg_new_database()
    load_pg_dump(dsn, Path(__file__).parent / "data" / "postgres_current_pg_dump.sql")
    with psycopg.connect(dsn, autocommit=True) as conn:
        (checkpoint,) = conn.execute(
            "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %s", (THREAD,)
        ).fetchone() or (None,)
        conn.execute(
            "UPDATE checkpoints SET metadata = jsonb_build_object('big', repeat('x', %s)) "
            "WHERE checkpoint_id = %s",
            (METADATA_LIMIT, checkpoint),
        )
    url = node_dsn(dsn)  # the URL form the CLI takes
    listed = run_ckpt("threads", url)
    assert listed.returncode == 0, listed.stderr
    shown = run_ckpt("show", str(checkpoint), "--db", url, "--json")
    assert shown.returncode in (0, ExitCode.ENCRYPTED), shown.stderr
    record = json.loads(shown.stdout)
    assert record["metadata"] == {"__ckpt__": "too_large", "size": METADATA_LIMIT + 11}
