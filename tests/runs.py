"""What the test processes of one run share (`make test` runs several, pytest-xdist): the
run's name, the stores that are built once per run, and the servers started once per run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pytest

if TYPE_CHECKING:
    from fixtures.servers import ServerProcess

T = TypeVar("T")
S = TypeVar("S", bound="ServerProcess")
SERVERS_ENV = "CKPT_TEST_SERVERS"  # the run's folder of server pids (conftest.pytest_configure)
RUN_ENV = "CKPT_TEST_RUN"  # set by the run's first process (conftest.pytest_configure)
LONG_ENV = "CKPT_TEST_LONG"  # set when the run selects the `long` tests (make test-long)


def long_run() -> bool:
    """Whether this run is a long one (make test-long: CKPT_TEST_LONG=1, or `-m long`)."""
    return os.environ.get(LONG_ENV, "") not in ("", "0")


def thinned(items: Iterable[T], every: int) -> list[T]:
    """`items` in a long run; in make test every `every`-th of them, from the first (a
    deterministic sample spread over the whole list)."""
    kept = list(items)
    return kept if long_run() else kept[::every]


def examples(normal: int, long: int | None = None) -> int:
    """A Hypothesis example count: `normal` in `make test`, `long` (by default 5 x normal)
    in a long run and under `make fuzz` (HYPOTHESIS_PROFILE=fuzz)."""
    if long_run() or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz":
        return long if long is not None else 5 * normal
    return normal


class NewDatabase(Protocol):
    """conftest's pg_new_database: the DSN of a new empty database (or of a copy of the
    database named `template`)."""

    def __call__(self, *, shared: bool = False, template: str | None = None) -> str: ...


def drop_databases(admin: str, names: Iterable[str]) -> None:
    """DROP DATABASE ... WITH (FORCE) each of `names`, all at once: every DROP DATABASE
    waits for a checkpoint of the whole server (PostgreSQL 15 forces one), and drops that
    wait side by side share one, where one after another each waits for its own (30 drops:
    20 s on a server other test runs keep busy, against well under one)."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    def drop(name: str) -> None:
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    unique = list(dict.fromkeys(names))
    if unique:
        with ThreadPoolExecutor(max_workers=min(16, len(unique))) as pool:
            list(pool.map(drop, unique))  # the first error, if any, is raised here


def run_prefix() -> str:
    """What the name of every test database of this run starts with."""
    return f"ckpt_test_{os.environ.get(RUN_ENV, 'solo')}_"


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]
) -> Any:
    """`build(folder)` run once per test run: its JSON-ready result, and what it wrote in
    `folder`. With several test processes, the first to ask builds into a folder they all
    share while the others wait on a lock, then read its result."""
    import fcntl

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent / "built-once"  # the run's, not a worker's
    shared.mkdir(exist_ok=True)
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = shared / f"{name}.json"
        if result.exists():
            return json.loads(result.read_text())
        folder = shared / name
        shutil.rmtree(folder, ignore_errors=True)  # a build that failed half way
        folder.mkdir()
        value = build(folder)
        result.write_text(json.dumps(value))
        return value


@contextmanager
def served_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], S]
) -> Iterator[S]:
    """A server (`make()`, not yet started) for this test process, started once per run:
    with several test processes, the first to ask starts it for good in a folder of the run
    (its pid in the run's SERVERS_ENV folder, which the run's first process stops once
    every test process is done: `stop_served`), the others attach to it. Tests that
    empty or reconfigure a server keep one of their own."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        with make() as server:
            yield server
        return

    def start(folder: Path) -> dict[str, Any]:
        server = make().keep_running(folder / "server")
        (Path(os.environ[SERVERS_ENV]) / f"{name}.pid").write_text(str(server.pid))
        return {"port": server.port, "folder": str(server.folder)}

    found = built_once(tmp_path_factory, f"server-{name}", start)
    yield make().attach(found["port"], Path(found["folder"]))


def compile_once(config: pytest.Config, folders: Iterable[Path]) -> None:
    """In the run's first process, before it starts its test processes: the bytecode of the
    modules in `folders`, written once where every process of the run finds it. pytest
    rewrites the asserts of each test module it imports and caches the result beside it
    (__pycache__/*-pytest-*.pyc), but not under PYTHONDONTWRITEBYTECODE, nor before a
    fresh clone's test processes, which all start at once, have each rewritten every
    module (about 5 s of a core each: half of a test process's start). Written here, the
    test processes only read it, as pytest reads its own cache (checked against the
    source's hash: an edited module is rewritten where it is imported). The other
    modules get the interpreter's own bytecode, as `make` writes it for src/ckpt. What
    cannot be written here (a read-only checkout, a module that does not parse) is left
    to the test processes, which do as they would without this."""
    import compileall

    try:  # pytest's own rewriter (pinned in the lock; a newer pytest may move it)
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            try_makedirs,
        )
    except ImportError:
        return  # each test process rewrites what it imports, as without this

    rewrites = config.getoption("assertmode") == "rewrite"
    state = config.stash[assertstate_key] if rewrites else None
    for folder in folders:
        for source in sorted(folder.glob("*.py")):
            if not source.name.startswith("test_") and source.name != "conftest.py":
                compileall.compile_file(source, quiet=2)
            elif state is not None:
                pyc = source.parent / "__pycache__" / (source.name[:-3] + PYC_TAIL)
                if _read_pyc(source, pyc) is None and try_makedirs(pyc.parent):
                    try:
                        source_hash, code = _rewrite_test(source, config)
                    except SyntaxError:
                        continue  # its test process reports it, as a collection error
                    _write_pyc(state, code, source_hash, pyc)


def stop_served() -> None:
    """In the run's first process, at its end: stop the servers `served_once` started."""
    from fixtures.servers import stop

    folder = Path(os.environ.get(SERVERS_ENV, ""))
    if not os.environ.get(SERVERS_ENV) or not folder.is_dir():
        return
    from concurrent.futures import ThreadPoolExecutor

    pids = [int(path.read_text()) for path in folder.glob("*.pid")]
    with ThreadPoolExecutor(max_workers=max(1, len(pids))) as pool:
        list(pool.map(stop, pids))
    shutil.rmtree(folder, ignore_errors=True)
