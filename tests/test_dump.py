"""`ckpt dump` on every kind of real store: round trip with `show`, filters, schema, pipes."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from psycopg.conninfo import conninfo_to_dict
from referencing import Registry, Resource
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.decoders import uuid6_lower_bound, uuid6_time
from ckpt.errors import ExitCode
from ckpt.render.progress import counting
from store_files import with_thread_copies

runner = CliRunner()
DOCS = Path(__file__).parent.parent / "docs"
CKPT = Path(sys.executable).parent / "ckpt"


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "120"})


def dump(store: str, *args: str) -> list[dict[str, Any]]:
    result = run("dump", store, *args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "" or result.stderr.startswith("ckpt: note:"), result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def url_of(dsn: str) -> str:
    """conftest's libpq key=value DSN as the URL a user types."""
    params = conninfo_to_dict(dsn)
    port = f":{params['port']}" if params.get("port") else ""
    return (
        f"postgresql://{params.get('user', '')}@{params.get('host', '')}{port}/{params['dbname']}"
    )


@cache
def validator() -> Draft202012Validator:
    """docs/checkpoint.schema.json, whose values refer to docs/value.schema.json."""
    schemas = {
        name: json.loads((DOCS / name).read_text())
        for name in ("checkpoint.schema.json", "value.schema.json")
    }
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in schemas.items()
    )
    return Draft202012Validator(schemas["checkpoint.schema.json"], registry=registry)


def _stores(fixture: Callable[[str], Any], samples: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every store the fixtures build or check in: name -> (location, extra options)."""
    key = fixture("encryption_key").decode()
    stores: dict[str, tuple[str, tuple[str, ...]]] = {
        "sqlite": (str(fixture("sqlite_store")), ()),
        "encrypted": (str(fixture("encrypted_store")), ("--aes-key", key)),
        "dev_folder": (str(fixture("dev_folder")), ()),
        "memory_pkl": (str(fixture("memory_pkl")), ()),
    }
    for path in sorted(samples.iterdir()):
        if path.suffix in {".db", ".pkl"}:
            stores[path.name] = (str(path), ())
    return stores


STORE_NAMES = [
    "sqlite",
    "encrypted",
    "dev_folder",
    "memory_pkl",
    "legacy_lg0.1.19_sqlite.db",
    "legacy_lg0.2.16_cp1.0.9_sqlite.db",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db",
    "sqlite_checkpoints.db",
    "sqlite_delta.db",
    "sqlite_encrypted.db",
    "memory_persistentdict.pkl",
    "memory_persistentdict_cp2.0.21.pkl",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("postgres_shallow", marks=pytest.mark.postgres),
]


@pytest.fixture
def store_of(
    request: pytest.FixtureRequest, samples: Path
) -> Callable[[str], tuple[str, tuple[str, ...]]]:
    def get(name: str) -> tuple[str, tuple[str, ...]]:
        if name == "postgres":
            return url_of(request.getfixturevalue("pg_store").dsn), ()
        if name == "postgres_shallow":
            return url_of(request.getfixturevalue("pg_shallow_store").dsn), ()
        if name == "sqlite_encrypted.db":
            return str(samples / name), ("--aes-key", "0123456789abcdef")
        return _stores(request.getfixturevalue, samples)[name]

    return get


# -- round trip ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STORE_NAMES)
def test_every_store_round_trips_with_show(
    name: str, store_of: Callable[[str], tuple[str, tuple[str, ...]]]
) -> None:
    location, options = store_of(name)
    records = dump(location, "--ndjson", *options)
    assert records, name
    check = validator()
    for record in records:
        check.validate(record)
    assert json.loads(json.dumps(records)) == records  # strict JSON: no NaN, no bytes
    ids = Counter(r["checkpoint_id"] for r in records)
    compared = 0
    step = max(1, len(records) // 40)  # every checkpoint of the big stores would be slow
    for record in records[::step]:
        args = ["show", record["checkpoint_id"], "--blobs", "--json", "--db", location, *options]
        if ids[record["checkpoint_id"]] > 1:
            args += ["--ns", record["checkpoint_ns"]]
        shown = run(*args)
        if shown.exit_code == ExitCode.AMBIGUOUS:  # the same id in several threads
            continue
        assert shown.exit_code == 0, (name, record["checkpoint_id"], shown.stderr)
        assert json.loads(shown.stdout) == record, (name, record["checkpoint_id"])
        compared += 1
    assert compared >= min(len(records[::step]), 3)


def test_dump_matches_the_stores_contents(
    sqlite_store: Path, manifest: dict[str, Any], oracles: dict[str, Any]
) -> None:
    records = dump(str(sqlite_store))  # CliRunner's stdout is no terminal: NDJSON by default
    assert {r["thread_id"] for r in records} == set(manifest["threads"])
    expected = {
        (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])
        for c in oracles["chat"]["checkpoints"]
    }
    got = [(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in records]
    assert sorted(got) == got  # thread, namespace, id order
    assert set(got) == expected and len(got) == len(expected)
    as_array = run("dump", str(sqlite_store), "--json")
    assert as_array.exit_code == 0
    assert json.loads(as_array.stdout) == records


# -- filters ------------------------------------------------------------------------------------


def test_filters(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    db = str(sqlite_store)
    everything = dump(db)

    two = dump(db, "--thread", "support-1", "-t", manifest["fork"])
    assert two == [r for r in everything if r["thread_id"] in {"support-1", manifest["fork"]}]

    root = dump(db, "--ns", "")
    assert root == [r for r in everything if r["checkpoint_ns"] == ""]
    sub_ns = next(r["checkpoint_ns"] for r in everything if r["checkpoint_ns"])
    assert dump(db, "--ns", sub_ns) == [r for r in everything if r["checkpoint_ns"] == sub_ns]

    latest = dump(db, "--latest")
    newest: dict[tuple[str, str], str] = {}
    for r in everything:
        key = (r["thread_id"], r["checkpoint_ns"])
        newest[key] = max(newest.get(key, ""), r["checkpoint_id"])
    assert [(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in latest] == sorted(
        (t, ns, cid) for (t, ns), cid in newest.items()
    )

    skeletons = dump(db, "--no-values")
    assert len(skeletons) == len(everything)
    for skeleton, full in zip(skeletons, everything, strict=True):
        assert "channel_values" not in skeleton
        values_only = {"channel_values", "delta_channels"}
        assert skeleton == {k: v for k, v in full.items() if k not in values_only}
        validator().validate(skeleton)


def test_since_and_until(sqlite_store: Path) -> None:
    db = str(sqlite_store)
    everything = dump(db, "--thread", "support-1")
    ids = sorted(r["checkpoint_id"] for r in everything)
    middle = ids[len(ids) // 2]
    by_id = dump(db, "-t", "support-1", "--since", middle)
    assert sorted(r["checkpoint_id"] for r in by_id) == [i for i in ids if i >= middle]
    until = dump(db, "-t", "support-1", "--until", middle)
    assert sorted(r["checkpoint_id"] for r in until) == [i for i in ids if i <= middle]
    short = dump(db, "-t", "support-1", "--since", middle[-8:])  # any selector resolves
    assert short == by_id

    when = uuid6_time(middle)
    assert when is not None
    since_time = dump(db, "-t", "support-1", "--since", when.isoformat())
    bound = uuid6_lower_bound(when)
    assert sorted(r["checkpoint_id"] for r in since_time) == [i for i in ids if i >= bound]
    assert middle in {r["checkpoint_id"] for r in since_time}
    assert ids[0] not in {r["checkpoint_id"] for r in since_time}
    naive = when.replace(tzinfo=None).isoformat()  # no offset: UTC
    assert dump(db, "-t", "support-1", "--since", naive) == since_time
    before = dump(db, "-t", "support-1", "--until", when.isoformat())
    assert {r["checkpoint_id"] for r in before} | {r["checkpoint_id"] for r in since_time} == set(
        ids
    )
    assert dump(db, "--since", "2999-01-01") == []
    assert len(dump(db, "--until", "2999-01-01T00:00:00Z")) == len(dump(db))
    # An age, as copy's --since takes it (one syntax for every --since): the fixture store
    # was written this session, so all of it is from the last week and none from the future.
    assert len(dump(db, "--since", "7d")) == len(dump(db))
    assert dump(db, "--until", "7d") == []
    import ckpt.api

    with ckpt.api.open(db) as store:  # the API takes the same, and timedeltas
        assert len(list(store.dump(since=dt.timedelta(days=7), values=False))) == len(dump(db))


def test_bad_filters(sqlite_store: Path, samples: Path, tmp_path: Path) -> None:
    db = str(sqlite_store)
    unknown = run("dump", db, "--thread", "support-1", "--thread", "no-such-thread")
    assert unknown.exit_code == ExitCode.NOT_FOUND
    assert unknown.stdout == ""
    assert unknown.stderr.startswith("ckpt: error:") and unknown.stderr.count("\n") == 1
    bad_time = run("dump", db, "--since", "2026-13-45")
    assert bad_time.exit_code == ExitCode.USAGE
    assert run("dump", db, "--until", "no-such-checkpoint").exit_code == ExitCode.NOT_FOUND
    assert run("dump", str(tmp_path / "missing.sqlite")).exit_code == ExitCode.NO_STORE
    text = tmp_path / "text.db"
    text.write_text("not a database\n")
    assert run("dump", str(text)).exit_code == ExitCode.UNREADABLE


def test_encrypted_without_key_prints_what_it_can(encrypted_store: Path) -> None:
    result = run("dump", str(encrypted_store))
    assert result.exit_code == ExitCode.ENCRYPTED
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and all(validator().is_valid(r) for r in lines)
    assert "--aes-key" in result.stderr and result.stderr.count("\n") == 1


# -- streaming ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory, sqlite_store: Path) -> Path:
    """chat.sqlite's rows copied to 60 threads: megabytes of NDJSON, more than a pipe holds."""
    return with_thread_copies(sqlite_store, tmp_path_factory.mktemp("big") / "big.sqlite", 60)


def test_head_closes_the_pipe_quietly(big_store: Path, tmp_path: Path) -> None:
    import resource

    def children_cpu() -> float:  # CPU time, not the wall clock: load does not stretch it
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    errors = tmp_path / "stderr.txt"
    started = children_cpu()
    with errors.open("w") as stderr:
        dumper = subprocess.Popen(
            [str(CKPT), "dump", str(big_store), "--ndjson"], stdout=subprocess.PIPE, stderr=stderr
        )
        assert dumper.stdout is not None
        head = subprocess.run(["head", "-1"], stdin=dumper.stdout, capture_output=True, check=True)
        dumper.stdout.close()
        code = dumper.wait(timeout=60)
    elapsed = children_cpu() - started
    first = json.loads(head.stdout)
    validator().validate(first)
    assert code == 0
    assert errors.read_text() == ""  # no traceback, no "Exception ignored"
    full = subprocess.run(
        [str(CKPT), "dump", str(big_store), "--ndjson", "--quiet"], capture_output=True, check=True
    )
    assert len(full.stdout) > 4 * 65536  # more than the pipe could have buffered
    assert elapsed < 30


def test_progress_passes_items_through() -> None:
    items = [{"n": i} for i in range(100)]
    with counting(iter(items), enabled=True, label="dumping", delay=0.0) as counted:
        assert list(counted) == items
    with counting(iter(items), enabled=False, label="dumping") as counted:
        assert list(counted) == items


def test_quiet_and_piped_stderr_stays_empty(sqlite_store: Path) -> None:
    for extra in ((), ("--quiet",)):
        result = run("dump", str(sqlite_store), *extra)
        assert result.exit_code == 0
        assert result.stderr == ""


def test_progress_counts_against_a_total(capsys: pytest.CaptureFixture[str]) -> None:
    items = [{"n": i} for i in range(100)]
    asked: list[bool] = []

    def total() -> int:
        asked.append(True)
        return len(items)

    with counting(iter(items), enabled=True, label="dumping", delay=0.0, total=total) as counted:
        assert [next(counted) for _ in range(64)] == items[:64]  # a pipe closed half-way
    assert asked == [True]  # once, when the bar appears
    assert "dumping 64 of 100 checkpoints" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name",
    [
        "sqlite",
        "legacy_lg0.1.19_sqlite.db",
        "dev_folder",
        "memory_persistentdict.pkl",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres_shallow", marks=pytest.mark.postgres),
    ],
)
def test_dump_total_counts_what_dump_streams(
    name: str, store_of: Callable[[str], tuple[str, tuple[str, ...]]]
) -> None:
    """Every store kind gives dump's bar a total: what the same dump streams."""
    import ckpt.api

    with ckpt.api.open(store_of(name)[0]) as store:
        ids = sorted(r["checkpoint_id"] for r in store.dump(values=False))
        thread = next(iter(store.dump(values=False)))["thread_id"]
        middle = ids[len(ids) // 2]
        for filters in (
            {},
            {"threads": [thread]},
            {"latest": True},
            {"ns": ""},
            {"since_id": middle},
            {"until_id": middle, "latest": True},
        ):
            expected = len(list(store.dump(values=False, **filters)))  # type: ignore[arg-type]
            assert store.dump_total(**filters) == expected, filters  # type: ignore[arg-type]
        # Asked while the dump streams (as the bar does), in the dump's own transaction.
        stream = store.dump(values=False)
        next(stream)
        assert store.dump_total() == len(ids)
        assert 1 + sum(1 for _ in stream) == len(ids)


@pytest.mark.parametrize(
    "name",
    [
        "sqlite",
        "legacy_lg0.1.19_sqlite.db",
        "dev_folder",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres_shallow", marks=pytest.mark.postgres),
    ],
)
def test_load_many_is_load_of_each(
    name: str, store_of: Callable[[str], tuple[str, tuple[str, ...]]]
) -> None:
    """Checkpoints read in a batch (history's update values) are those `load` reads one
    by one, in the order asked, an unknown key left out."""
    from ckpt.records.model import CheckpointKey, DumpQuery
    from ckpt.stores import open_store

    with open_store(store_of(name)[0]) as store:
        keys = [
            CheckpointKey(c.thread_id, c.checkpoint_ns, c.checkpoint_id)
            for c in store.iter_checkpoints(DumpQuery(), values=False)
        ][::-3]
        unknown = CheckpointKey(keys[0].thread_id, "", "no-such-id")
        many = store.load_many([*keys[:2], unknown, *keys[2:]], values=True)
        assert [c.checkpoint_id for c in many] == [k.checkpoint_id for k in keys]
        for key, checkpoint in zip(keys, many, strict=True):
            assert checkpoint == store.load(key, values=True), key


def test_history_reads_update_values_in_a_batch(sqlite_store: Path) -> None:
    """`ckpt history` loads the values of its update checkpoints in one statement for the
    rows and one for their writes, however many updates there are."""
    import ckpt.api

    with ckpt.api.open(str(sqlite_store)) as store:
        records = [r for t in store.threads() for r in store.history(t["thread_id"])]
        updates = [r for r in records if r["metadata"].get("source") == "update"]
        assert len(updates) >= 2
        statements: list[str] = []
        store.backend.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        values = store.channel_values(updates)
        store.backend.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert [s for s in statements if s.startswith("SELECT")] == [
        s for s in statements if "VALUES" in s
    ]
    assert len([s for s in statements if s.startswith("SELECT")]) == 2
    assert set(values) == {r["checkpoint_id"] for r in updates}
    assert all(v for v in values.values())
