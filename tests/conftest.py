"""Session fixtures: stores written by real LangGraph runs (fixtures/), the checked-in
samples (tests/data/), and throwaway PostgreSQL databases."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.build import DEV_FOLDER, ENCRYPTION_KEY, build_all
from hypothesis import settings

from pg import PgStore
from runs import (
    LONG_ENV,
    RUN_ENV,
    SERVERS_ENV,
    NewDatabase,
    built_once,
    compile_once,
    drop_databases,
    long_run,
    run_prefix,
    served_once,
    stop_served,
)

DATA_DIR = Path(__file__).parent / "data"

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 set (execnet does it); a test
# process of `make test -n 2` must see what a lone `pytest` sees, so that the width every
# view, CliRunner and child process picks up does not depend on how the suite was run.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

# --------------------------------------------------------------------------------------
# Hypothesis: the same examples on every run of `make test` (derandomized: seeded by each
# test's own source), and no time limit per example (two test processes share two cores),
# so that a fresh clone passes or fails the same way every time. `make fuzz` explores with
# new seeds (HYPOTHESIS_PROFILE=fuzz; failures are kept in .hypothesis/ and replayed first
# on the next fuzz run); what it finds goes back into the test as an @example.
# --------------------------------------------------------------------------------------
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Override with a libpq URI of a role that may CREATE DATABASE.
PG_ADMIN_ENV = "CKPT_TEST_PG_ADMIN"
PG_HOST = "127.0.0.1:5432"


# --------------------------------------------------------------------------------------
# One run, several test processes (`make test`: pytest-xdist, one per core). The run's
# first process names the run; stores that take long to build are built once per run by
# whichever process asks first, and read by the others (`built_once`).
# --------------------------------------------------------------------------------------
def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the first process: its children inherit it
        os.environ[RUN_ENV] = uuid.uuid4().hex[:8]
        os.environ[SERVERS_ENV] = tempfile.mkdtemp(prefix="ckpt-test-servers-")
        if _selects_long(config):
            os.environ[LONG_ENV] = "1"
        if config.getoption("numprocesses", None) and config.getoption("dist", "no") != "no":
            compile_once(config, [Path(__file__).parent, Path(__file__).parent.parent / "fixtures"])


# --------------------------------------------------------------------------------------
# A long run (`make test-long`: CKPT_TEST_LONG=1, or `-m long`) runs the exhaustive
# variants `make test` leaves out to stay within its time budget: the tests marked `long`
# (deselected otherwise), and every case of the matrices and Hypothesis example counts
# that `make test` samples (runs.long_run, runs.examples). The normal suite keeps a
# representative, deterministic sample of each.
# --------------------------------------------------------------------------------------
def _selects_long(config: pytest.Config) -> bool:
    """Whether `-m` selects the `long` marker."""
    expression = " ".join((config.option.markexpr or "").split())
    return "long" in expression and "not long" not in expression


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if long_run() or _selects_long(config):
        return
    left_out = [item for item in items if item.get_closest_marker("long") is not None]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.get_closest_marker("long") is None]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In the run's first process, once every test process is done: stop the servers
    started once for the run, and drop the databases of the run that are left (the shared
    ones, and any a killed process left)."""
    if hasattr(session.config, "workerinput"):
        return
    stop_served()
    try:
        import psycopg

        dsn = next(iter(_reachable_admins()), None)
        if dsn is None:
            return
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            names = conn.execute(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %s)",
                (run_prefix(),),
            ).fetchall()
        drop_databases(dsn, [name for (name,) in names])
    except Exception as exc:  # the run's result stands; say what was left behind
        print(f"\ncould not drop this run's test databases: {exc}")


# --------------------------------------------------------------------------------------
# Stores built by fixtures/build.py, once per test session.
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding everything fixtures/build.py writes (see its docstring), built
    once per run and shared by its test processes (`built_once`): tests only read it."""

    def build(folder: Path) -> str:
        build_all(folder)
        return str(folder)

    return Path(built_once(tmp_path_factory, "stores", build))


@pytest.fixture(scope="session")
def sqlite_store(fixture_dir: Path) -> Path:
    """chat.sqlite: every scenario through SqliteSaver."""
    return fixture_dir / "chat.sqlite"


@pytest.fixture(scope="session")
def manifest(fixture_dir: Path) -> dict[str, Any]:
    """chat.sqlite's manifest: thread ids by role (fixtures.graphs.Manifest)."""
    loaded: dict[str, Any] = json.loads((fixture_dir / "manifest.json").read_text())
    return loaded


@pytest.fixture(scope="session")
def encrypted_store(fixture_dir: Path) -> Path:
    """encrypted.sqlite: every scenario, EncryptedSerializer AES-EAX with `encryption_key`."""
    return fixture_dir / "encrypted.sqlite"


@pytest.fixture(scope="session")
def encryption_key() -> bytes:
    return ENCRYPTION_KEY


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No AES key in the environment: a store opened without `aes_key` has none."""
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)


@pytest.fixture(scope="session")
def dev_folder(fixture_dir: Path) -> Path:
    """The `.langgraph_api` folder: storage, writes, blobs in .langgraph_checkpoint.{1,2,3}.pckl."""
    return fixture_dir / DEV_FOLDER


@pytest.fixture(scope="session")
def memory_pkl(fixture_dir: Path) -> Path:
    """memory.pkl: the single-file PersistentDict pattern; holds only storage."""
    return fixture_dir / "memory.pkl"


@pytest.fixture(scope="session")
def oracles(fixture_dir: Path) -> dict[str, dict[str, Any]]:
    """What LangGraph's own savers reported for each built store, keyed by
    "chat", "encrypted", "dev_folder", "memory": {"manifest": ..., "checkpoints": [...]}."""
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted((fixture_dir / "oracle").glob("*.json"))
    }


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of tests/data (legacy and reference stores copied from the format research
    samples), made once per session. Reading a WAL store with no -shm beside it makes
    SQLite create -wal and -shm files (docs/security.md), which must never appear in
    tests/data itself."""
    copy = tmp_path_factory.mktemp("samples")
    for path in DATA_DIR.iterdir():
        shutil.copy2(path, copy / path.name)
    return copy


# --------------------------------------------------------------------------------------
# PostgreSQL: a uniquely named database per request, dropped at the end of the session.
# Tests that use these fail (not skip) when the server is unreachable.
# --------------------------------------------------------------------------------------


def _admin_candidates() -> list[str]:
    if override := os.environ.get(PG_ADMIN_ENV):
        return [override]
    return [
        f"postgresql://{user}@{PG_HOST}/{dbname}"
        for user in dict.fromkeys(["postgres", getpass.getuser()])
        for dbname in ("postgres", user)
    ]


def _reachable_admins(errors: list[str] | None = None) -> Iterator[str]:
    import psycopg

    for dsn in _admin_candidates():
        try:
            with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
                conn.execute("SELECT 1")
            yield dsn
        except psycopg.Error as exc:
            if errors is not None:
                errors.append(f"{dsn}: {str(exc).strip()}")


@pytest.fixture(scope="session")
def pg_admin() -> str:
    """A DSN of a role allowed to create databases on the test server."""
    errors: list[str] = []
    for dsn in _reachable_admins(errors):
        return dsn
    pytest.fail(
        f"PostgreSQL is not reachable (set {PG_ADMIN_ENV} to a DSN that can CREATE DATABASE):\n  "
        + "\n  ".join(errors),
        pytrace=False,
    )


@pytest.fixture(scope="session")
def pg_new_database(pg_admin: str) -> Iterator[NewDatabase]:
    """Call it to get the DSN of a new empty database; all are dropped at session end.

    `shared=True`: a database that another test process of the run may read too (built
    once, see `built_once`); the run's first process drops it once every process is done
    (pytest_sessionfinish). Every name starts with the run's prefix (run_prefix)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    created: list[str] = []

    def new_database(*, shared: bool = False, template: str | None = None) -> str:
        name = f"{run_prefix()}{os.getpid()}_{uuid.uuid4().hex[:8]}"
        copied = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copied}')
            # A test database is thrown away at the end of the run: its commits need not
            # wait for the disk (the savers commit once a checkpoint, ~3 ms each here).
            conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        if not shared:
            created.append(name)
        return make_conninfo(pg_admin, dbname=name)

    yield new_database
    drop_databases(pg_admin, created)  # side by side (see drop_databases)


@pytest.fixture(scope="session")
def pg_dsn(pg_new_database: NewDatabase) -> str:
    """One empty database for the session."""
    return pg_new_database()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis 8.2 with RedisJSON and RediSearch on a free port, for the run (fixtures/
    redis_server.py, `served_once`), holding every scenario RedisSaver writes."""
    from fixtures.redis_server import RedisServer
    from fixtures.redis_stores import build_redis

    with served_once(tmp_path_factory, "redis", RedisServer) as server:
        yield _filled_once(tmp_path_factory, "redis_url", server.url, build_redis)


@pytest.fixture(scope="session")
def redis_shallow_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Another such server, holding every scenario ShallowRedisSaver writes."""
    from fixtures.redis_server import RedisServer
    from fixtures.redis_stores import build_redis_shallow

    with served_once(tmp_path_factory, "redis-shallow", RedisServer) as server:
        yield _filled_once(tmp_path_factory, "redis_shallow_url", server.url, build_redis_shallow)


@pytest.fixture(scope="session")
def mongo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An nx-27017 server (MongoDB's wire protocol over SQLite, fixtures/mongo_server.py)
    on a free port for the run, holding every scenario MongoDBSaver writes."""
    from fixtures.mongo_server import MongoServer
    from fixtures.mongo_stores import build_mongo

    with served_once(tmp_path_factory, "mongo", MongoServer) as server:
        yield _filled_once(tmp_path_factory, "mongo_url", server.url, build_mongo)


def _filled_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, url: str, fill: Callable[[str], Any]
) -> str:
    """`url`, once `fill(url)` has written it, once per run (built_once): tests only read it."""

    def build(folder: Path) -> str:
        fill(url)
        return url

    filled: str = built_once(tmp_path_factory, name, build)
    return filled


def _pg_built_once(
    tmp_path_factory: pytest.TempPathFactory,
    pg_new_database: NewDatabase,
    name: str,
    build: Callable[[str], Any],
) -> PgStore:
    """A database `build(dsn)` fills, once per run: the run's test processes share it
    (built_once; the tests only read it)."""

    def built(folder: Path) -> dict[str, Any]:
        dsn = pg_new_database(shared=True)
        # As JSON in every process, the one that built it too.
        return {"dsn": dsn, "manifest": json.loads(json.dumps(build(dsn)))}

    found: dict[str, Any] = built_once(tmp_path_factory, name, built)
    return PgStore(found["dsn"], found["manifest"])


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto's DynamoDB and S3 on a free port, started once per run (fixtures/
    dynamodb_stores.py, `served_once`): each test store is a table of its own in it."""
    from fixtures.dynamodb_stores import MotoServer

    with served_once(tmp_path_factory, "moto", MotoServer) as server:
        yield server


@pytest.fixture(scope="session")
def dynamodb_url(tmp_path_factory: pytest.TempPathFactory, moto_server: Any) -> str:
    """Table `sample` (bucket `offload`): a sample of the scenarios and the large thread
    through DynamoDBSaver with compression, S3 offload and a TTL."""
    from fixtures.dynamodb_stores import DEFAULT_SCENARIOS, build_dynamodb

    def build(url: str) -> None:
        build_dynamodb(
            moto_server,
            "sample",
            "offload",
            scenarios=DEFAULT_SCENARIOS,
            large=True,
            enable_checkpoint_compression=True,
            ttl_seconds=3600,
        )

    return _filled_once(
        tmp_path_factory, "dynamodb_url", moto_server.url("sample", "offload"), build
    )


@pytest.fixture(scope="session")
def valkey_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server without modules on a free port (Valkey's protocol: fixtures/redis_server.py)
    holding every scenario ValkeySaver writes, as ckpt names it (valkey://)."""
    from functools import partial

    from fixtures.redis_server import RedisServer
    from fixtures.valkey_stores import build_valkey, valkey_url

    with served_once(tmp_path_factory, "valkey", partial(RedisServer, modules=False)) as server:
        yield _filled_once(tmp_path_factory, "valkey_url", valkey_url(server.url), build_valkey)


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A MariaDB on a free port, started once per run (fixtures/mysql_server.py,
    `served_once`): each test that needs a store of its own creates a database in it."""
    from fixtures.mysql_server import MariaDBServer, available

    if not available():
        pytest.skip("MariaDB is not installed (apt-get install mariadb-server)")
    with served_once(tmp_path_factory, "mariadb", MariaDBServer) as server:
        yield server


@pytest.fixture(scope="session")
def mysql_url(tmp_path_factory: pytest.TempPathFactory, mariadb: Any) -> str:
    """A database holding every scenario PyMySQLSaver writes (fixtures/mysql_stores.py)."""
    from fixtures.mysql_stores import build_mysql

    def build(folder: Path) -> str:
        url: str = mariadb.database("scenarios")
        build_mysql(url)
        return url

    filled: str = built_once(tmp_path_factory, "mysql_url", build)
    return filled


@pytest.fixture(scope="session")
def mongo_new_database() -> Iterator[Callable[[], str]]:
    """An empty nx-27017 server for this test process; each call names a new database on
    it (the URL of a store nothing has written yet: a `copy` or `prune` target)."""
    from fixtures.mongo_server import MongoServer

    counter = iter(range(1_000_000))
    with MongoServer() as server:
        yield lambda: f"{server.url}scratch{next(counter)}"


@pytest.fixture(scope="session")
def _redis_scratch_server() -> Iterator[str]:
    from fixtures.redis_server import RedisServer

    with RedisServer() as server:
        yield server.url


@pytest.fixture
def redis_empty(_redis_scratch_server: str) -> str:
    """The URL of a Redis 8 server (RedisJSON, RediSearch) emptied for this test: no key,
    no index (one server for the session; a `copy` or `prune` target)."""
    import redis

    with redis.Redis.from_url(_redis_scratch_server, protocol=2) as client:
        for name in client.execute_command("FT._LIST") or ():
            client.execute_command("FT.DROPINDEX", name)
        client.flushall()
    return _redis_scratch_server


@pytest.fixture(scope="session")
def pg_store(tmp_path_factory: pytest.TempPathFactory, pg_new_database: NewDatabase) -> PgStore:
    """Every scenario through PostgresSaver."""
    from fixtures.postgres import build_postgres

    return _pg_built_once(tmp_path_factory, pg_new_database, "pg_store", build_postgres)


@pytest.fixture(scope="session")
def pg_shallow_store(
    tmp_path_factory: pytest.TempPathFactory, pg_new_database: NewDatabase
) -> PgStore:
    """Every scenario through ShallowPostgresSaver (latest checkpoint only)."""
    from fixtures.postgres import build_postgres_shallow

    return _pg_built_once(
        tmp_path_factory, pg_new_database, "pg_shallow_store", build_postgres_shallow
    )


@pytest.fixture(scope="session")
def pg_dump_loader(pg_new_database: NewDatabase) -> Callable[[str], str]:
    """Call with "legacy", "current" or "shallow": loads tests/data/postgres_<name>_pg_dump.sql
    into a new database (once per name) and returns its DSN."""
    from fixtures.postgres import load_pg_dump

    loaded: dict[str, str] = {}

    def load(name: str) -> str:
        if name not in loaded:
            dsn = pg_new_database()
            load_pg_dump(dsn, DATA_DIR / f"postgres_{name}_pg_dump.sql")
            loaded[name] = dsn
        return loaded[name]

    return load


@pytest.fixture(scope="session", autouse=True)
def _checked_in_stores_stay_untouched() -> Iterator[None]:
    """No test, and no ckpt command, may leave -wal/-shm files beside tests/data stores."""
    yield
    side_files = sorted(p.name for p in DATA_DIR.iterdir() if p.name.endswith(("-wal", "-shm")))
    assert not side_files, f"side files appeared in tests/data: {side_files}"
