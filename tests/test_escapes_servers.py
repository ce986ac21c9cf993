"""An escape in any string field of a Redis or MongoDB store never reaches a terminal
(issue 29, for the server stores of issue 27): tests/test_escapes.py's field-by-field
property, on a copy of the fixture store with one field of thread fanout-1 (writes, Sends,
an error) rewritten to hold HOSTILE (OSC 52, CSI, bidi and tag characters)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.redis_server import RedisServer
from typer.testing import CliRunner

from ckpt.cli import app
from hostile import HOSTILE, OWN_STYLES, unsafe_left

runner = CliRunner()
THREAD = "fanout-1"


def _views(url: str, thread: str) -> list[list[str]]:
    db = ["--db", url]
    return [
        ["threads", url],
        ["history", thread, *db],
        ["show", thread, "--blobs", "--full", "--writes", *db],
        ["versions", thread, *db],
        ["diff", thread, *db],
        ["stats", url, "--quiet"],
        ["types", url, "--quiet"],
        ["check", url, "--quiet"],
        ["show", f"{thread}x", *db],  # an error message naming it
    ]


def _check(url: str, thread: str, field: str) -> None:
    env = {"COLUMNS": "100", "CKPT_FORCE_TTY": "1"}
    for args in _views(url, thread):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code in (0, 1, 5, 7), (field, args, result.stderr, result.exception)
        assert unsafe_left(OWN_STYLES.sub("", result.stdout)) == [], (field, args)
        assert unsafe_left(result.stderr) == [], (field, args)


# -- Redis --------------------------------------------------------------------------------


def _redis_docs(client: Any, pattern: str) -> Iterator[bytes]:
    yield from client.scan_iter(match=pattern, count=1000)


def _redis_set(client: Any, pattern: str, path: str, value: Any) -> None:
    for key in _redis_docs(client, pattern):
        client.execute_command("JSON.SET", key, path, json.dumps(value))


def _redis_metadata(client: Any, key_of: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    for key in _redis_docs(client, f"checkpoint:{THREAD}:*"):
        metadata = json.loads(json.loads(client.execute_command("JSON.GET", key, "$.metadata"))[0])
        client.execute_command(
            "JSON.SET", key, "$.metadata", json.dumps(json.dumps(key_of(metadata)))
        )


def _redis_rename_thread(client: Any) -> None:
    for key in list(_redis_docs(client, f"*:{THREAD}:*")):
        new = key.replace(f":{THREAD}:".encode(), f":{HOSTILE}:".encode(), 1)
        client.rename(key, new)
        if client.type(new) == b"ReJSON-RL":
            client.execute_command("JSON.SET", new, "$.thread_id", json.dumps(HOSTILE))


REDIS_FIELDS: dict[str, Callable[[Any], None]] = {
    "thread id": _redis_rename_thread,
    "body ts": lambda c: _redis_set(c, f"checkpoint:{THREAD}:*", "$.checkpoint.ts", HOSTILE),
    "metadata value": lambda c: _redis_metadata(c, lambda m: {**m, "k": HOSTILE}),
    "metadata key": lambda c: _redis_metadata(c, lambda m: {**m, HOSTILE: 1}),
    "write task_path": lambda c: _redis_set(
        c, f"checkpoint_write:{THREAD}:*", "$.task_path", HOSTILE
    ),
    "write channel": lambda c: _redis_set(c, f"checkpoint_write:{THREAD}:*", "$.channel", HOSTILE),
    "write type": lambda c: _redis_set(c, f"checkpoint_write:{THREAD}:*", "$.type", HOSTILE),
    "write task id": lambda c: _redis_set(c, f"checkpoint_write:{THREAD}:*", "$.task_id", HOSTILE),
}


@pytest.fixture(scope="module")
def redis_copy_server() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.mark.parametrize("field", sorted(REDIS_FIELDS))
def test_an_escape_in_any_redis_field_never_reaches_a_terminal(
    redis_url: str, redis_copy_server: str, field: str
) -> None:
    import redis

    source = redis.Redis.from_url(redis_url)
    target = redis.Redis.from_url(redis_copy_server)
    try:
        target.flushall()
        for key in source.scan_iter(count=1000):
            target.restore(key, 0, source.dump(key))
        REDIS_FIELDS[field](target)
    finally:
        source.close()
        target.close()
    _check(redis_copy_server, HOSTILE if field == "thread id" else THREAD, field)


# -- MongoDB ------------------------------------------------------------------------------

MONGO_FIELDS: dict[str, tuple[str, dict[str, Any]]] = {
    "thread id": ("both", {"thread_id": HOSTILE}),
    "namespace": ("both", {"checkpoint_ns": HOSTILE}),
    "metadata value": ("checkpoints", {"metadata.k": ["json", json.dumps(HOSTILE).encode()]}),
    "metadata key": ("checkpoints", {f"metadata.{HOSTILE}": ["json", b"1"]}),
    "body type": ("checkpoints", {"type": HOSTILE}),
    "write task_path": ("checkpoint_writes", {"task_path": HOSTILE}),
    "write channel": ("checkpoint_writes", {"channel": HOSTILE}),
    "write type": ("checkpoint_writes", {"type": HOSTILE}),
    "write task id": ("checkpoint_writes", {"task_id": HOSTILE}),
}


@pytest.mark.parametrize("field", sorted(MONGO_FIELDS))
def test_an_escape_in_any_mongodb_field_never_reaches_a_terminal(
    mongo_url: str, mongo_new_database: Callable[[], str], field: str
) -> None:
    import pymongo

    where, change = MONGO_FIELDS[field]
    url = mongo_new_database()  # a database of its own on this process's empty server
    database = url.rsplit("/", 1)[1]
    source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
    target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url)
    try:
        for name in ("checkpoints", "checkpoint_writes"):
            docs = list(source["checkpointing_db"][name].find({}, {"_id": 0}))
            for doc in docs:
                if doc["thread_id"] == THREAD and where in (name, "both"):
                    for path, value in change.items():
                        if "." in path:  # metadata.<key>: set in the nested document
                            doc["metadata"][path.split(".", 1)[1]] = value
                        else:
                            doc[path] = value
            target[database][name].insert_many(docs)
    finally:
        source.close()
        target.close()
    _check(url, HOSTILE if field == "thread id" else THREAD, field)


# -- Postgres -----------------------------------------------------------------------------

PG_FIELDS: dict[str, list[str]] = {
    "thread id": [
        f"UPDATE {table} SET thread_id = %(h)s WHERE thread_id = %(t)s"
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    ],
    "namespace": [
        f"UPDATE {table} SET checkpoint_ns = %(h)s WHERE thread_id = %(t)s"
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    ],
    "metadata value": [
        "UPDATE checkpoints SET metadata = metadata || jsonb_build_object('k', %(h)s::text) "
        "WHERE thread_id = %(t)s"
    ],
    "metadata key": [
        "UPDATE checkpoints SET metadata = metadata || jsonb_build_object(%(h)s::text, 1) "
        "WHERE thread_id = %(t)s"
    ],
    "body ts": [
        "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{ts}', to_jsonb(%(h)s::text)) "
        "WHERE thread_id = %(t)s"
    ],
    "blob channel": [
        "UPDATE checkpoint_blobs SET channel = %(h)s WHERE thread_id = %(t)s AND channel = 'items'"
    ],
    "write task_path": ["UPDATE checkpoint_writes SET task_path = %(h)s WHERE thread_id = %(t)s"],
    "write channel": ["UPDATE checkpoint_writes SET channel = %(h)s WHERE thread_id = %(t)s"],
    "write type": ["UPDATE checkpoint_writes SET type = %(h)s WHERE thread_id = %(t)s"],
    "write task id": [
        "UPDATE checkpoint_writes SET task_id = task_id || %(h)s WHERE thread_id = %(t)s"
    ],
}


@pytest.mark.postgres
@pytest.mark.parametrize("field", sorted(PG_FIELDS))
def test_an_escape_in_any_postgres_field_never_reaches_a_terminal(
    pg_new_database: Callable[[], str], field: str
) -> None:
    """Postgres keeps NULs out of text: HOSTILE without them, the rest as in SQLite."""
    import psycopg
    from fixtures.build import fixture_warnings
    from fixtures.graphs import run_scenarios
    from fixtures.js_stores import node_dsn
    from langgraph.checkpoint.postgres import PostgresSaver

    dsn = pg_new_database()
    with fixture_warnings(), PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        run_scenarios(saver, ("fanout",))
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in PG_FIELDS[field]:
            conn.execute(statement, {"h": HOSTILE, "t": THREAD})  # type: ignore[arg-type]
    _check(node_dsn(dsn), HOSTILE if field == "thread id" else THREAD, field)


# -- the `langgraph dev` folder (pickles) --------------------------------------------------


def test_an_escape_in_a_dev_folders_fields_never_reaches_a_terminal(tmp_path: Path) -> None:
    """The pickle files hold what the app gave LangGraph: HOSTILE as thread ids, metadata
    keys and values, an error's message and an interrupt's value, written by the real
    saver of `langgraph dev`."""
    from typing import TypedDict

    from fixtures.build import DevServerSaver, fixture_warnings
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict):
        note: str

    def fail(state: State) -> State:
        raise ValueError(HOSTILE)

    def ask(state: State) -> State:
        return {"note": str(interrupt({HOSTILE: HOSTILE}))}

    folder = tmp_path / ".langgraph_api"
    with fixture_warnings(), DevServerSaver(folder) as saver:
        for name, node in (("fail", fail), ("ask", ask)):
            graph = StateGraph(State)
            graph.add_node(name, node)  # type: ignore[call-overload]
            graph.add_edge(START, name)
            graph.add_edge(name, END)
            compiled = graph.compile(checkpointer=saver)
            config: Any = {
                "configurable": {"thread_id": f"{HOSTILE}-{name}"},
                "metadata": {HOSTILE: HOSTILE},
            }
            try:
                compiled.invoke({"note": HOSTILE}, config)
            except ValueError:
                pass
    listed = runner.invoke(app, ["threads", str(folder), "--json"])
    rows = {row["thread_id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {f"{HOSTILE}-fail", f"{HOSTILE}-ask"}  # JSON keeps them exactly
    assert rows[f"{HOSTILE}-fail"]["status"] == "error"
    assert rows[f"{HOSTILE}-ask"]["status"] == "interrupted"
    for name in ("fail", "ask"):
        _check(str(folder), f"{HOSTILE}-{name}", f"dev folder {name}")
