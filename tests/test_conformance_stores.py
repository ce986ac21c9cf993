"""ckpt's JSON on the stores LangGraph's checkpointer conformance suite writes.

fixtures/conformance.py runs `langgraph-checkpoint-conformance` against SqliteSaver (a
file) and PostgresSaver (a fresh database) and keeps both the stores and the rows its
delete / prune cases removed. The oracle is the saver itself: `saver.get_tuple` for every
checkpoint (fixtures.conformance.tuple_oracle). Every checkpoint that `ckpt dump --json`
prints is compared with it field by field, and `ckpt threads`, `ckpt history` and
`ckpt show THREAD` run on every thread, through the installed CLI as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from fixtures.conformance import (
    DELETED_SCHEMA,
    build_conformance_postgres,
    build_conformance_sqlite,
    deleted_sqlite_path,
    implemented_capabilities,
    open_postgres_saver,
    open_sqlite_saver,
    tuple_oracle,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.conformance.spec import test_copy_thread as spec_copy_thread
from langgraph.checkpoint.conformance.spec import test_delete_for_runs as spec_delete_for_runs
from langgraph.checkpoint.conformance.spec import test_delete_thread as spec_delete_thread
from langgraph.checkpoint.conformance.spec import test_get_tuple as spec_get_tuple
from langgraph.checkpoint.conformance.spec import test_list as spec_list
from langgraph.checkpoint.conformance.spec import test_prune as spec_prune
from langgraph.checkpoint.conformance.spec import test_put as spec_put
from langgraph.checkpoint.conformance.spec import test_put_writes as spec_put_writes
from psycopg.conninfo import conninfo_to_dict

from ckpt_runner import Runner
from marks import postgres_marked
from runs import thinned

NOT_FOUND = 7  # ckpt.errors.ExitCode.NOT_FOUND, as docs/cli.md documents it
STORE_NAMES = ["sqlite", "sqlite-deleted", "postgres", "postgres-deleted"]

MAX_LINES = 60  # mismatch lines shown in a failure message

# Every case of the suite, per capability (what a full run must report).
SUITE_CASES: dict[Capability, list[Any]] = {
    Capability.PUT: spec_put.ALL_PUT_TESTS,
    Capability.PUT_WRITES: spec_put_writes.ALL_PUT_WRITES_TESTS,
    Capability.GET_TUPLE: spec_get_tuple.ALL_GET_TUPLE_TESTS,
    Capability.LIST: spec_list.ALL_LIST_TESTS,
    Capability.DELETE_THREAD: spec_delete_thread.ALL_DELETE_THREAD_TESTS,
    Capability.DELETE_FOR_RUNS: spec_delete_for_runs.ALL_DELETE_FOR_RUNS_TESTS,
    Capability.COPY_THREAD: spec_copy_thread.ALL_COPY_THREAD_TESTS,
    Capability.PRUNE: spec_prune.ALL_PRUNE_TESTS,
}

Key = tuple[str, str, str]  # (thread_id, checkpoint_ns, checkpoint_id)
T = TypeVar("T")


@dataclass
class ConformanceStore:
    """One store as ckpt is pointed at it, with what the saver reports about it."""

    name: str
    args: list[str]  # the store for ckpt: [path] or [url, "--schema", name]
    summary: dict[str, Any]
    oracle: list[dict[str, Any]]
    latest: dict[tuple[str, str], str | None]  # (thread, ns) -> get_tuple id without an id
    saver_class: type[BaseCheckpointSaver[Any]]
    outputs: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = field(default_factory=dict)

    @property
    def db_args(self) -> list[str]:
        """The store as `--db` options, for the commands that take a THREAD argument."""
        return ["--db", *self.args]

    def by_key(self) -> dict[Key, dict[str, Any]]:
        return {key_of(r): r for r in self.oracle}

    def threads(self) -> list[str]:
        return sorted({r["thread_id"] for r in self.oracle})

    def namespaces(self) -> list[str]:
        return sorted({r["checkpoint_ns"] for r in self.oracle})

    def sample(self, items: Iterable[T], every: int) -> list[T]:
        """What the per-thread and per-checkpoint commands run on: everything in a long
        run (runs.thinned); in make test every `every`-th on SQLite and every `2 * every`-th
        on Postgres (a connection per run), a sample spread over the whole store."""
        return thinned(sorted(items), every * (2 if self.name.startswith("postgres") else 1))


def key_of(record: dict[str, Any]) -> Key:
    return (record["thread_id"], record["checkpoint_ns"], record["checkpoint_id"])


def latest_ids(
    saver: BaseCheckpointSaver[Any], oracle: list[dict[str, Any]]
) -> dict[tuple[str, str], str | None]:
    """get_tuple without a checkpoint id, for every thread and namespace: the checkpoint
    `show THREAD [--ns NS]` and `dump --latest` name. Every thread's root namespace is
    asked too, so a thread without root checkpoints maps ("t", "") to None."""
    pairs = {(r["thread_id"], r["checkpoint_ns"]) for r in oracle}
    pairs |= {(thread_id, "") for thread_id, _ in pairs}
    latest: dict[tuple[str, str], str | None] = {}
    for thread_id, checkpoint_ns in sorted(pairs):
        config: RunnableConfig = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        }
        tup = saver.get_tuple(config)
        latest[(thread_id, checkpoint_ns)] = (
            tup.config["configurable"]["checkpoint_id"] if tup else None
        )
    return latest


def url_of(dsn: str) -> str:
    """The libpq key=value DSN conftest hands out, as the postgresql:// URL ckpt takes."""
    params = conninfo_to_dict(dsn)
    secret = f":{params['password']}" if params.get("password") else ""
    port = f":{params['port']}" if params.get("port") else ""
    host = params.get("host", "")
    return f"postgresql://{params.get('user', '')}{secret}@{host}{port}/{params.get('dbname', '')}"


def make_store(
    name: str,
    args: list[str],
    summary: dict[str, Any],
    saver: BaseCheckpointSaver[Any],
) -> ConformanceStore:
    oracle = tuple_oracle(saver)
    return ConformanceStore(
        name=name,
        args=args,
        summary=summary,
        oracle=oracle,
        latest=latest_ids(saver, oracle),
        saver_class=type(saver),
    )


@pytest.fixture(scope="session")
def conformance_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ConformanceStore]:
    path = tmp_path_factory.mktemp("conformance") / "conformance.sqlite"
    summary = build_conformance_sqlite(path)
    stores = {}
    for name, store_path in (("sqlite", path), ("sqlite-deleted", deleted_sqlite_path(path))):
        with open_sqlite_saver(store_path) as saver:
            stores[name] = make_store(name, [str(store_path)], summary, saver)
    return stores


@pytest.fixture(scope="session")
def conformance_postgres(pg_new_database: Callable[[], str]) -> dict[str, ConformanceStore]:
    dsn = pg_new_database()
    summary = build_conformance_postgres(dsn)
    url = url_of(dsn)
    stores = {}
    with open_postgres_saver(dsn) as saver:
        stores["postgres"] = make_store("postgres", [url], summary, saver)
    with open_postgres_saver(dsn, DELETED_SCHEMA) as saver:
        stores["postgres-deleted"] = make_store(
            "postgres-deleted", [url, "--schema", DELETED_SCHEMA], summary, saver
        )
    return stores


@pytest.fixture(params=postgres_marked(STORE_NAMES))
def store(request: pytest.FixtureRequest) -> ConformanceStore:
    family = (
        "conformance_postgres" if request.param.startswith("postgres") else "conformance_sqlite"
    )
    stores: dict[str, ConformanceStore] = request.getfixturevalue(family)
    return stores[request.param]


# --------------------------------------------------------------------------------------
# Running ckpt
# --------------------------------------------------------------------------------------


_RUNNER: list[Runner] = []  # one per test process, started on first use


@pytest.fixture(scope="module", autouse=True)
def _stop_runner() -> Iterator[None]:
    yield
    while _RUNNER:
        _RUNNER.pop().close()


def ckpt(store: ConformanceStore, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI once per distinct command line and store (cached), in a child
    forked from a process that imported ckpt once (tests/ckpt_runner.py): every checkpoint
    of every store is shown, and an interpreter start for each would cost ~0.1 s."""
    if args not in store.outputs:
        if not _RUNNER:
            _RUNNER.append(Runner(preload=("psycopg",)))  # half the stores are Postgres
        env: dict[str, str | None] = {
            k: None for k in os.environ if k.startswith(("CKPT_", "PG", "LANGGRAPH_AES_KEY"))
        }
        env.update({"NO_COLOR": "1", "COLUMNS": "120"})
        done = _RUNNER[0].run(list(args), env=env, timeout=120)
        store.outputs[args] = subprocess.CompletedProcess(
            ["ckpt", *args],
            done.exit_code if done.exit_code is not None else -(done.signal or 1),
            done.stdout.decode("utf-8"),
            done.stderr.decode("utf-8", "replace"),
        )
    return store.outputs[args]


def ckpt_many(store: ConformanceStore, commands: list[tuple[str, ...]]) -> None:
    """Run many commands (kept for the checks that read them back)."""
    for command in dict.fromkeys(commands):
        ckpt(store, *command)


def crash_of(result: subprocess.CompletedProcess[str]) -> str | None:
    """Why a run counts as a crash: an internal error or a traceback on stderr."""
    if "internal error" in result.stderr.lower():
        return "internal error"
    if "Traceback (most recent call last)" in result.stderr:
        return "traceback"
    return None


def described(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}, stderr: {result.stderr.strip()[-2000:]!r}"


def dump_records(store: ConformanceStore) -> list[dict[str, Any]]:
    result = ckpt(store, "dump", *store.args, "--json", "--quiet")
    assert result.returncode == 0 and crash_of(result) is None, described(result)
    records: list[dict[str, Any]] = json.loads(result.stdout)
    return records


def dumped(store: ConformanceStore) -> dict[Key, dict[str, Any]]:
    records = dump_records(store)
    by_key = {key_of(r): r for r in records}
    assert len(by_key) == len(records), "ckpt dump printed a checkpoint twice"
    return by_key


def show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


def fail_on(mismatches: list[str], what: str) -> None:
    if mismatches:
        shown = "\n".join(mismatches[:MAX_LINES])
        more = (
            f"\n... and {len(mismatches) - MAX_LINES} more" if len(mismatches) > MAX_LINES else ""
        )
        pytest.fail(f"{len(mismatches)} {what}:\n{shown}{more}", pytrace=False)


def compare_fields(
    store: ConformanceStore,
    fields: Callable[[dict[str, Any]], dict[str, Any]],
    oracle_fields: Callable[[dict[str, Any]], dict[str, Any]],
    what: str,
) -> None:
    """Compare `fields(ckpt record)` with `oracle_fields(oracle record)` on every
    checkpoint both know of (the sets themselves: test_dump_has_every_checkpoint)."""
    got = dumped(store)
    mismatches = []
    for key, expected_record in store.by_key().items():
        record = got.get(key)
        if record is None:
            continue
        mine, theirs = fields(record), oracle_fields(expected_record)
        for name in theirs:
            if mine.get(name, "<missing>") != theirs[name]:
                mismatches.append(
                    f"{'/'.join(key)} {name}: ckpt={show(mine.get(name, '<missing>'))} "
                    f"oracle={show(theirs[name])}"
                )
    fail_on(mismatches, f"{what} mismatches in {store.name}")


# --------------------------------------------------------------------------------------
# The suite itself
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", postgres_marked(["conformance_sqlite", "conformance_postgres"]))
def test_suite_ran_and_passed(request: pytest.FixtureRequest, family: str) -> None:
    """Every case of every capability the saver implements ran and passed, and the
    stores hold what it wrote (so a change in the suite shows up here first)."""
    stores: dict[str, ConformanceStore] = request.getfixturevalue(family)
    main = next(s for s in stores.values() if not s.name.endswith("-deleted"))
    summary = main.summary
    implemented = implemented_capabilities(main.saver_class)
    assert summary["not_implemented"] == sorted({c.value for c in Capability} - implemented)
    expected = sorted(
        (cap.value, case.__name__)
        for cap, cases in SUITE_CASES.items()
        if cap.value in implemented
        for case in cases
    )
    ran = sorted((case["capability"], case["case"]) for case in summary["cases"])
    assert ran == expected
    failed = [
        f"{c['capability']}/{c['case']}: {c['error']}" for c in summary["cases"] if not c["passed"]
    ]
    assert not failed, "\n".join(failed)
    assert summary["store"]["checkpoints"] == len(main.oracle) > 0
    deleted = stores[f"{main.name}-deleted"]
    assert summary["deleted_store"]["checkpoints"] == len(deleted.oracle) > 0
    # Every thread a destructive case named and that had rows is in the keep-store.
    wrote = {t for case in summary["cases"] for t in case["threads"]}
    assert {t for t in summary["kept_threads"] if t in wrote} == set(deleted.threads())


# --------------------------------------------------------------------------------------
# dump: every checkpoint against get_tuple
# --------------------------------------------------------------------------------------


def test_dump_has_every_checkpoint(store: ConformanceStore) -> None:
    got = set(dumped(store))
    expected = set(store.by_key())
    fail_on(
        [f"ckpt only: {'/'.join(k)}" for k in sorted(got - expected)]
        + [f"missing in ckpt: {'/'.join(k)}" for k in sorted(expected - got)],
        f"checkpoint set differences in {store.name}",
    )


def test_dump_ids_and_parents(store: ConformanceStore) -> None:
    compare_fields(
        store,
        lambda r: {"body_id": r["checkpoint_id"], "parent": r["parent_checkpoint_id"]},
        lambda o: {"body_id": o["body_id"], "parent": o["parent_checkpoint_id"]},
        "id/parent",
    )


def test_dump_metadata(store: ConformanceStore) -> None:
    compare_fields(
        store,
        lambda r: {"metadata": r["metadata"]},
        lambda o: {"metadata": o["metadata"]},
        "metadata",
    )


BODY_FIELDS = ("v", "ts", "channel_versions", "versions_seen")


def test_dump_body_fields(store: ConformanceStore) -> None:
    def oracle(o: dict[str, Any]) -> dict[str, Any]:
        # ckpt prints null where the body recorded no updated_channels (docs/json.md).
        return {**{f: o[f] for f in BODY_FIELDS}, "updated_channels": o.get("updated_channels")}

    compare_fields(
        store,
        lambda r: {f: r.get(f, "<missing>") for f in (*BODY_FIELDS, "updated_channels")},
        oracle,
        "body field",
    )


def test_dump_channel_values(store: ConformanceStore) -> None:
    compare_fields(
        store,
        lambda r: {"channel_values": r.get("channel_values")},
        lambda o: {"channel_values": o["channel_values"]},
        "channel value",
    )


def test_dump_pending_writes(store: ConformanceStore) -> None:
    def writes(record: dict[str, Any]) -> dict[str, Any]:
        pending = record.get("pending_writes")
        if pending is None:
            return {"pending_writes": None}
        return {"pending_writes": [[w["task_id"], w["channel"], w.get("value")] for w in pending]}

    compare_fields(
        store, writes, lambda o: {"pending_writes": o["pending_writes"]}, "pending-write"
    )


# --------------------------------------------------------------------------------------
# threads, history, show THREAD: every thread
# --------------------------------------------------------------------------------------


def test_threads(store: ConformanceStore) -> None:
    result = ckpt(store, "threads", *store.args, "--size", "--json")
    assert result.returncode == 0 and crash_of(result) is None, described(result)
    records = {r["thread_id"]: r for r in json.loads(result.stdout)}
    by_thread: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in store.oracle:
        by_thread[record["thread_id"]].append(record)
    mismatches = [f"ckpt only: thread {t}" for t in sorted(set(records) - set(by_thread))]
    mismatches += [f"missing in ckpt: thread {t}" for t in sorted(set(by_thread) - set(records))]
    for thread_id, checkpoints in sorted(by_thread.items()):
        if thread_id not in records:
            continue
        latest_id = store.latest[(thread_id, "")]
        latest = next(
            (
                c
                for c in checkpoints
                if c["checkpoint_ns"] == "" and c["checkpoint_id"] == latest_id
            ),
            None,
        )
        expected = {
            "checkpoints": len(checkpoints),
            "namespaces": sorted({c["checkpoint_ns"] for c in checkpoints}),
            "writes": sum(len(c["pending_writes"]) for c in checkpoints),
            "checkpoint_id": latest_id,
            "pending_writes": len(latest["pending_writes"]) if latest else 0,
            "metadata": latest["metadata"] if latest else {},
            "step": latest["metadata"].get("step") if latest else None,
            "source": latest["metadata"].get("source") if latest else None,
            "updated_at": latest["ts"] if latest else None,
        }
        got = records[thread_id]
        got_fields = {**got, "namespaces": sorted(got.get("namespaces", []))}
        for name, value in expected.items():
            if got_fields.get(name, "<missing>") != value:
                mismatches.append(
                    f"thread {thread_id} {name}: ckpt={show(got_fields.get(name, '<missing>'))} "
                    f"oracle={show(value)}"
                )
    fail_on(mismatches, f"`ckpt threads` mismatches in {store.name}")


def test_history_every_thread(store: ConformanceStore) -> None:
    threads = store.sample(store.threads(), 3)
    commands = [("history", t, *store.db_args, "--json") for t in threads]
    ckpt_many(store, commands)
    by_key = store.by_key()
    mismatches = []
    for thread_id, command in zip(threads, commands, strict=True):
        result = ckpt(store, *command)
        if result.returncode != 0 or crash_of(result):
            mismatches.append(f"history {thread_id}: {described(result)}")
            continue
        records = json.loads(result.stdout)
        expected = sorted(k for k in by_key if k[0] == thread_id)
        got = [key_of(r) for r in records]
        if sorted(got) != expected:
            mismatches.append(f"history {thread_id}: checkpoints ckpt={got} oracle={expected}")
        for record in records:
            oracle = by_key.get(key_of(record))
            if oracle is None:
                continue
            for name, theirs in (
                ("parent_checkpoint_id", oracle["parent_checkpoint_id"]),
                ("metadata", oracle["metadata"]),
                ("channel_versions", oracle["channel_versions"]),
                ("versions_seen", oracle["versions_seen"]),
            ):
                if record.get(name, "<missing>") != theirs:
                    mismatches.append(
                        f"history {'/'.join(key_of(record))} {name}: "
                        f"ckpt={show(record.get(name, '<missing>'))} oracle={show(theirs)}"
                    )
    fail_on(mismatches, f"`ckpt history` problems in {store.name}")


def test_show_thread_is_get_tuple_latest(store: ConformanceStore) -> None:
    """`ckpt show THREAD` is the checkpoint `saver.get_tuple({thread_id})` returns (root
    namespace); a thread with no root checkpoint is "not found", as get_tuple gives None."""
    threads = store.sample(store.threads(), 2)
    commands = [("show", t, *store.db_args, "--blobs", "--json") for t in threads]
    ckpt_many(store, commands)
    by_key = store.by_key()
    mismatches = []
    for thread_id, command in zip(threads, commands, strict=True):
        result = ckpt(store, *command)
        latest_id = store.latest[(thread_id, "")]
        if crash_of(result):
            mismatches.append(f"show {thread_id}: {described(result)}")
            continue
        if latest_id is None:
            if result.returncode != NOT_FOUND:
                mismatches.append(
                    f"show {thread_id} (no root checkpoint): expected exit {NOT_FOUND}, "
                    f"{described(result)}"
                )
            continue
        if result.returncode != 0:
            mismatches.append(f"show {thread_id}: {described(result)}")
            continue
        record = json.loads(result.stdout)
        if record["checkpoint_id"] != latest_id:
            mismatches.append(
                f"show {thread_id}: checkpoint ckpt={record['checkpoint_id']} oracle={latest_id}"
            )
            continue
        oracle = by_key[(thread_id, "", latest_id)]
        if record.get("channel_values") != oracle["channel_values"]:
            mismatches.append(
                f"show {thread_id} channel_values: ckpt={show(record.get('channel_values'))} "
                f"oracle={show(oracle['channel_values'])}"
            )
    fail_on(mismatches, f"`ckpt show THREAD` problems in {store.name}")


def test_dump_latest(store: ConformanceStore) -> None:
    """`dump --latest`: per thread and namespace, the checkpoint get_tuple returns."""
    result = ckpt(store, "dump", *store.args, "--json", "--quiet", "--latest")
    assert result.returncode == 0 and crash_of(result) is None, described(result)
    got = sorted(key_of(r) for r in json.loads(result.stdout))
    expected = sorted((t, ns, i) for (t, ns), i in store.latest.items() if i is not None)
    fail_on(
        [f"ckpt only: {'/'.join(k)}" for k in sorted(set(got) - set(expected))]
        + [f"missing in ckpt: {'/'.join(k)}" for k in sorted(set(expected) - set(got))],
        f"`dump --latest` differences in {store.name}",
    )


def test_dump_by_namespace(store: ConformanceStore) -> None:
    """`dump --ns NS` for every namespace holds exactly that namespace's checkpoints."""
    mismatches = []
    for namespace in store.namespaces():
        result = ckpt(store, "dump", *store.args, "--json", "--quiet", "--ns", namespace)
        if result.returncode != 0 or crash_of(result):
            mismatches.append(f"dump --ns {namespace!r}: {described(result)}")
            continue
        got = sorted(key_of(r) for r in json.loads(result.stdout))
        expected = sorted(k for k in store.by_key() if k[1] == namespace)
        if got != expected:
            mismatches.append(f"dump --ns {namespace!r}: ckpt={got} oracle={expected}")
    fail_on(mismatches, f"`dump --ns` problems in {store.name}")


def test_show_every_checkpoint_is_its_dump_record(store: ConformanceStore) -> None:
    """`show ID --ns NS --blobs --json` prints the record `dump` prints (docs/json.md), for
    every checkpoint; the dump records are checked against the oracle above."""
    records = dumped(store)
    commands = {
        key: ("show", key[2], "--ns", key[1], *store.db_args, "--blobs", "--json")
        for key in store.sample(store.by_key(), 3)
    }
    ckpt_many(store, list(commands.values()))
    mismatches = []
    for key, command in commands.items():
        result = ckpt(store, *command)
        if result.returncode != 0 or crash_of(result):
            mismatches.append(f"show {'/'.join(key)}: {described(result)}")
            continue
        record = json.loads(result.stdout)
        if key in records and record != records[key]:
            changed = sorted(
                name
                for name in set(record) | set(records[key])
                if record.get(name, "<missing>") != records[key].get(name, "<missing>")
            )
            mismatches.append(
                f"show {'/'.join(key)}: differs from its dump record in {changed}: "
                + "; ".join(
                    f"{name}: show={show(record.get(name, '<missing>'))} "
                    f"dump={show(records[key].get(name, '<missing>'))}"
                    for name in changed
                )
            )
    fail_on(mismatches, f"`show ID` problems in {store.name}")


def test_versions_every_namespace(store: ConformanceStore) -> None:
    """`versions THREAD --ns NS --json`: the namespace's checkpoints in id order, and each
    channel's version at each of them as the checkpoint's channel_versions has it."""
    by_ns: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in store.oracle:
        by_ns[(record["thread_id"], record["checkpoint_ns"])].append(record)
    commands = {
        pair: ("versions", pair[0], "--ns", pair[1], *store.db_args, "--json")
        for pair in store.sample(by_ns, 2)
    }
    ckpt_many(store, list(commands.values()))
    mismatches = []
    for pair, command in sorted(commands.items()):
        where = f"versions {pair[0]} --ns {pair[1]!r}"
        result = ckpt(store, *command)
        if result.returncode != 0 or crash_of(result):
            mismatches.append(f"{where}: {described(result)}")
            continue
        report = json.loads(result.stdout)
        expected = sorted(by_ns[pair], key=lambda r: r["checkpoint_id"])
        ids = [c["checkpoint_id"] for c in report["checkpoints"]]
        if ids != [r["checkpoint_id"] for r in expected]:
            mismatches.append(
                f"{where}: checkpoints ckpt={ids} oracle={[r['checkpoint_id'] for r in expected]}"
            )
            continue
        channels = {c["channel"]: c["versions"] for c in report["channels"]}
        wanted = sorted({ch for r in expected for ch in r["channel_versions"]})
        if sorted(channels) != wanted:
            mismatches.append(f"{where}: channels ckpt={sorted(channels)} oracle={wanted}")
        for channel, cells in channels.items():
            got = [None if cell is None else cell.get("version") for cell in cells]
            theirs = [r["channel_versions"].get(channel) for r in expected]
            if got != theirs:
                mismatches.append(f"{where} {channel}: ckpt={got} oracle={theirs}")
    fail_on(mismatches, f"`ckpt versions` problems in {store.name}")
