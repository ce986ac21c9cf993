"""`ckpt check` on the stores of servers and folders: Postgres (one database, a damage per
thread, and threads pruned by LangGraph's own prune and by ckpt's), every Postgres sample
(what check says PostgresSaver reads, proven with PostgresSaver), the `langgraph dev`
folder, Redis and MongoDB. The Redis and MongoDB stores are the session's: each test
damages its store, checks it and puts every document back before anything else runs."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from checking import by_code, check, errors
from ckpt.cli import app
from ckpt.cli.options import fix_line
from invoke import runner
from pg import url_of

ROWS = (
    "SELECT (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM checkpoint_blobs), "
    "(SELECT count(*) FROM checkpoint_writes)"
)


# -- Postgres ----------------------------------------------------------------------------------


# The Redis and MongoDB tests below damage a store and put it back: on servers of this
# module's own, not on the run's shared ones (conftest), which other test processes read
# meanwhile.
@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    from fixtures.redis_server import RedisServer
    from fixtures.redis_stores import build_redis

    with RedisServer() as server:
        build_redis(server.url)
        yield server.url


@pytest.fixture(scope="module")
def mongo_url() -> Iterator[str]:
    from fixtures.mongo_server import MongoServer
    from fixtures.mongo_stores import build_mongo

    with MongoServer() as server:
        build_mongo(server.url)
        yield server.url


def damage_postgres(dsn: str) -> dict[str, set[str]]:
    """Damage a PostgresSaver store of every scenario, a thread per damage; prune two
    threads with LangGraph's prune and one with ckpt's. The error findings expected."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(dsn, autocommit=True) as conn:

        def ids(thread: str) -> list[str]:
            return [
                i
                for (i,) in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND "
                    "checkpoint_ns = '' ORDER BY checkpoint_id",
                    (thread,),
                )
            ]

        def newest_version(thread: str, channel: str) -> str:
            (version,) = conn.execute(
                "SELECT checkpoint->'channel_versions'->>%s FROM checkpoints WHERE thread_id = %s "
                "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1",
                (channel, thread),
            ).fetchone()
            return str(version)

        # A missing blob: the messages support-1's newest checkpoint names.
        conn.execute(
            "DELETE FROM checkpoint_blobs WHERE thread_id = 'support-1' AND channel = 'messages' "
            "AND version = %s",
            (newest_version("support-1", "messages"),),
        )
        # A removed snapshot: the DeltaChannel snapshot delta-1's newest checkpoint marks.
        deleted = conn.execute(
            "DELETE FROM checkpoint_blobs WHERE thread_id = 'delta-1' AND channel = 'log' "
            "AND version = %s",
            (newest_version("delta-1", "log"),),
        )
        assert deleted.rowcount == 1
        # Orphan blobs: two versions no checkpoint names.
        conn.execute(
            "INSERT INTO checkpoint_blobs SELECT thread_id, checkpoint_ns, channel, "
            "'v-' || version, type, blob FROM checkpoint_blobs WHERE thread_id = 'support-2' "
            "AND type = 'msgpack' ORDER BY channel, version LIMIT 2"
        )
        # Truncated bytes: one of support-3's message blobs cut short.
        conn.execute(
            "UPDATE checkpoint_blobs SET blob = substring(blob from 1 for 5) "
            "WHERE thread_id = 'support-3' AND channel = 'messages' AND version = %s",
            (newest_version("support-3", "messages"),),
        )
        # A forged row: support-2's newest checkpoint copied into approval-1 (its blobs stay
        # behind, in support-2).
        conn.execute(
            "INSERT INTO checkpoints SELECT 'approval-1', checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
            "WHERE thread_id = 'support-2' AND checkpoint_id = %s",
            (ids("support-2")[-1],),
        )
        # Deleted rows: the parent of fork-1's newest checkpoint.
        (parent,) = conn.execute(
            "SELECT parent_checkpoint_id FROM checkpoints WHERE checkpoint_id = %s",
            (ids("fork-1")[-1],),
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = %s", (parent,))
        # A tampered body: the id inside one of subgraph-1's checkpoints changed.
        conn.execute(
            "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{id}', to_jsonb(%s::text))"
            " WHERE checkpoint_id = %s",
            (ids("subgraph-1")[0], ids("subgraph-1")[1]),
        )
        # A blob LangGraph cannot load: a tag no serializer reads, on a value fanout-1's
        # newest checkpoint names; and one without its bytes, in subgraph-2.
        (channel, version) = conn.execute(
            "SELECT b.channel, b.version FROM checkpoint_blobs b WHERE b.thread_id = 'fanout-1' "
            "AND b.type = 'msgpack' ORDER BY b.version DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoint_blobs SET type = 'garbage' WHERE thread_id = 'fanout-1' "
            "AND channel = %s AND version = %s",
            (channel, version),
        )
        (channel, version) = conn.execute(
            "SELECT b.channel, b.version FROM checkpoint_blobs b WHERE b.thread_id = 'subgraph-2' "
            "AND b.type = 'msgpack' ORDER BY b.version DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoint_blobs SET blob = NULL WHERE thread_id = 'subgraph-2' "
            "AND channel = %s AND version = %s",
            (channel, version),
        )
    with PostgresSaver.from_conn_string(dsn) as saver:
        for thread in ("fanout-1", "subgraph-2"):  # LangGraph cannot load them
            with pytest.raises((NotImplementedError, TypeError, ValueError)):
                list(saver.list({"configurable": {"thread_id": thread}}))
        saver.prune(["pending-1", "approval-2"], strategy="keep_latest")
    pruned = runner.invoke(app, ["prune", url_of(dsn), "--thread", "rich-1", "--apply"])
    assert pruned.exit_code == 0, pruned.output
    return {
        "missing-blob": {"support-1", "delta-1", "approval-1"},
        "undecodable": {"support-3"},
        "copied-checkpoint": {"approval-1"},
        "dangling-parent": {"fork-1"},
        "id-mismatch": {"subgraph-1"},
        "malformed-blob": {"fanout-1", "subgraph-2"},
    }


@pytest.mark.postgres
def test_postgres_damage_is_found_and_prunes_are_not(pg_new_database: Callable[[], str]) -> None:
    from fixtures.postgres import build_postgres

    dsn = pg_new_database()
    build_postgres(dsn)
    url = url_of(dsn)
    clean = check(url)
    assert clean["summary"]["error"] == 0, clean["findings"]
    assert clean["saver"]["saver"] == "PostgresSaver" and clean["saver"]["langgraph"] == "reads"
    assert "checkpoint_migrations v0-9" in clean["saver"]["evidence"]
    expected = damage_postgres(dsn)
    with psycopg.connect(dsn) as conn:
        before = conn.execute(ROWS).fetchone()
    record = check(url)
    assert errors(record) == expected
    found = by_code(record)
    orphans = found["orphan-blobs"]
    assert orphans["severity"] == "warning" and "support-2" in orphans["threads"]
    assert orphans["bytes"] and orphans["fix"] == {
        "verb": "prune",
        "arguments": [url],
        "options": {"threads": orphans["threads"], "strategy": "orphans", "apply": True},
        "placeholders": [],
        "applies": True,
    }
    (copied,) = found["copied-checkpoint"]["places"]
    assert "thread support-2" in copied["detail"]
    assert fix_line(found["missing-blob"]["fix"]) == (
        f"ckpt copy BACKUP {url} --thread approval-1 --thread delta-1 --thread support-1 "
        "--on-conflict replace --apply"
    )
    with psycopg.connect(dsn) as conn:  # check changed nothing
        assert conn.execute(ROWS).fetchone() == before


@pytest.mark.postgres
@pytest.mark.parametrize("name", ["current", "legacy", "shallow"])
def test_what_postgres_savers_read_is_what_check_says(
    name: str, pg_dump_loader: Callable[[str], str], tmp_path: Path
) -> None:
    from fixtures.legacy_graphs import LEGACY_SAVERS

    dsn = pg_dump_loader(name)
    record = check(url_of(dsn), "--aes-key", "0123456789abcdef")
    assert record["summary"]["error"] == 0, record["findings"]
    assert record["saver"]["langgraph"] == "reads"
    assert record["saver"]["saver"] == (
        "ShallowPostgresSaver" if name == "shallow" else "PostgresSaver"
    )
    sample = f"postgres_{name}_pg_dump.sql"
    with LEGACY_SAVERS[sample](dsn, tmp_path) as saver:
        assert list(saver.list(None))


@pytest.mark.postgres
def test_a_schema_setup_has_not_migrated(
    pg_new_database: Callable[[], str],
) -> None:
    """The current dump without migration 9: check says PostgresSaver reads it only after
    setup(), and so it does."""
    from fixtures.postgres import load_pg_dump
    from langgraph.checkpoint.postgres import PostgresSaver

    dsn = pg_new_database()
    load_pg_dump(dsn, Path(__file__).parent / "data" / "postgres_current_pg_dump.sql")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_writes DROP COLUMN task_path")
        conn.execute("DELETE FROM checkpoint_migrations WHERE v = 9")
    record = check(url_of(dsn), "--aes-key", "0123456789abcdef")
    assert record["saver"]["langgraph"] == "migrates"
    assert by_code(record)["schema-migration"]["severity"] == "warning"
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    aes = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn, serde=aes)  # thread e1 is encrypted
        with pytest.raises(psycopg.errors.UndefinedColumn):
            list(saver.list(None))
        saver.setup()
        assert list(saver.list(None))
    assert check(url_of(dsn), "--aes-key", "0123456789abcdef")["saver"]["langgraph"] == "reads"


# -- the langgraph dev folder --------------------------------------------------------------------


def test_dev_folder_damage_is_found(dev_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / ".langgraph_api"
    shutil.copytree(dev_folder, folder)
    storage_file, blobs_file = (folder / f".langgraph_checkpoint.{n}.pckl" for n in (1, 3))
    # The fixture's own files, written by LangGraph's PersistentDict: a test may load them.
    storage = pickle.loads(storage_file.read_bytes())
    blobs = pickle.loads(blobs_file.read_bytes())
    support_1 = storage["support-1"][""]
    newest = max(support_1)
    body = support_1[newest][0]
    # A missing blob: the messages support-1's newest checkpoint names.
    versions = {k: v for k, v in blobs.items() if k[0] == "support-1" and k[2] == "messages"}
    newest_key = max(versions)
    del blobs[newest_key]
    # Orphan blobs and truncated bytes.
    tag, data = blobs[
        (
            "support-2",
            "",
            "messages",
            max(k[3] for k in blobs if k[0] == "support-2" and k[2] == "messages"),
        )
    ]
    blobs[("support-2", "", "messages", "v-none")] = (tag, data)
    key_3 = max(k for k in blobs if k[0] == "support-3" and k[2] == "messages")
    blobs[key_3] = (blobs[key_3][0], blobs[key_3][1][:5])
    # A deleted row: the middle of approval-1's chain.
    approval = storage["approval-1"][""]
    del approval[sorted(approval)[1]]
    # A forged row: support-2's newest checkpoint copied into support-3.
    support_2 = storage["support-2"][""]
    newest_2 = max(support_2)
    storage["support-3"][""][newest_2] = support_2[newest_2]
    storage_file.write_bytes(pickle.dumps(storage, 2))
    blobs_file.write_bytes(pickle.dumps(blobs, 2))
    assert body  # the body names its versions; the blob it needs is gone
    record = check(str(folder))
    found = errors(record)
    assert found["missing-blob"] >= {"support-1"}
    assert found["undecodable"] == {"support-3"}
    assert found["dangling-parent"] == {"approval-1"}
    assert found["copied-checkpoint"] == {"support-3"}
    assert "support-2" in by_code(record)["orphan-blobs"]["threads"]
    # Neither `ckpt copy` nor `ckpt prune` writes a dev folder: the fixes say so.
    assert all(f["fix"] is None or not f["fix"]["applies"] for f in record["findings"])
    human = " ".join(
        runner.invoke(app, ["check", str(folder)], env={"COLUMNS": "80"}).stdout.split()
    )
    assert "ckpt copy BACKUP" not in human and "cannot write this kind of store" in human


# -- Redis and MongoDB: the session's stores, put back as they were -----------------------------


@contextmanager
def redis_damaged(url: str) -> Iterator[dict[str, set[str]]]:
    """support-1 loses a checkpoint from the middle of its chain; support-2's newest
    checkpoint is copied into support-3. Every key is put back afterwards."""
    import redis

    client = redis.Redis.from_url(url)
    keys = sorted(k.decode() for k in client.scan_iter("checkpoint:support-1:__empty__:*"))
    middle = keys[len(keys) // 2]
    kept = client.dump(middle)
    newest_2 = sorted(k.decode() for k in client.scan_iter("checkpoint:support-2:__empty__:*"))[-1]
    document = json.loads(client.execute_command("JSON.GET", newest_2))
    document["thread_id"] = "support-3"
    forged = newest_2.replace("support-2", "support-3")
    try:
        client.delete(middle)
        client.execute_command("JSON.SET", forged, "$", json.dumps(document))
        yield {"dangling-parent": {"support-1"}, "copied-checkpoint": {"support-3"}}
    finally:
        client.delete(forged)
        client.restore(middle, 0, kept, replace=True)
        client.close()


def test_redis_damage_is_found(redis_url: str) -> None:
    assert check(redis_url)["summary"]["error"] == 0
    with redis_damaged(redis_url) as expected:
        record = check(redis_url)
    assert errors(record) == expected
    assert record["saver"]["saver"] == "RedisSaver"
    # `ckpt copy` writes this kind of store: the restore from a backup is offered.
    fixes = [f["fix"] for f in record["findings"] if f["fix"] is not None]
    assert fixes and all(fix["applies"] for fix in fixes)
    restore = by_code(record)["dangling-parent"]["fix"]
    assert fix_line(restore) == f"ckpt copy BACKUP {redis_url} --thread support-1 " + (
        "--on-conflict replace --apply"
    )
    assert check(redis_url)["summary"]["error"] == 0  # put back


@contextmanager
def mongo_damaged(url: str) -> Iterator[dict[str, set[str]]]:
    """support-1 loses a checkpoint from the middle of its chain; support-2's newest is
    copied into support-3; approval-1's newest body is truncated. Put back afterwards."""
    from fixtures.mongo_stores import DATABASE
    from pymongo import MongoClient

    client: MongoClient[dict[str, Any]] = MongoClient(url)
    checkpoints = client[DATABASE]["checkpoints"]
    try:

        def chain(thread: str) -> list[dict[str, Any]]:
            found = checkpoints.find({"thread_id": thread, "checkpoint_ns": ""})
            return sorted(found, key=lambda d: d["checkpoint_id"])

        middle = chain("support-1")[3]
        forged = {k: v for k, v in chain("support-2")[-1].items() if k != "_id"}
        forged["thread_id"] = "support-3"
        newest = chain("approval-1")[-1]
        checkpoints.delete_one({"_id": middle["_id"]})
        inserted = checkpoints.insert_one(forged).inserted_id
        body = bytes(newest["checkpoint"])
        checkpoints.update_one(
            {"_id": newest["_id"]}, {"$set": {"checkpoint": body[: len(body) // 2]}}
        )
        try:
            yield {
                "dangling-parent": {"support-1"},
                "copied-checkpoint": {"support-3"},
                "undecodable": {"approval-1"},
            }
        finally:
            checkpoints.delete_one({"_id": inserted})
            checkpoints.insert_one(middle)
            checkpoints.update_one(
                {"_id": newest["_id"]}, {"$set": {"checkpoint": newest["checkpoint"]}}
            )
    finally:
        client.close()


def test_a_redis_write_whose_blob_is_not_text_is_an_error(redis_url: str) -> None:
    """RedisSaver decodes every write's `blob` as base64 text, a null value's too: a
    write document whose blob became JSON null fails the thread's read."""
    import redis
    from langgraph.checkpoint.redis import RedisSaver

    client = redis.Redis.from_url(redis_url)
    key = next(
        k.decode()
        for k in sorted(client.scan_iter("checkpoint_write:approval-1:*"))
        if json.loads(client.execute_command("JSON.GET", k, "$.type"))[0] == "null"
    )
    kept = client.dump(key)
    try:
        client.execute_command("JSON.SET", key, "$.blob", "null")
        with RedisSaver.from_conn_string(redis_url) as saver:
            saver.setup()
            with pytest.raises(AttributeError):
                list(saver.list({"configurable": {"thread_id": "approval-1"}}))
        record = check(redis_url)
    finally:
        client.restore(key, 0, kept, replace=True)
        client.close()
    assert errors(record) == {"malformed-write": {"approval-1"}}
    (where,) = by_code(record)["malformed-write"]["places"]
    assert where["detail"].endswith("its blob is NoneType, not text")
    assert check(redis_url)["summary"]["error"] == 0  # put back


def test_mongodb_damage_is_found(mongo_url: str) -> None:
    assert check(mongo_url)["summary"]["error"] == 0
    with mongo_damaged(mongo_url) as expected:
        record = check(mongo_url)
    assert errors(record) == expected
    assert record["saver"]["saver"] == "MongoDBSaver"
    # `ckpt copy` writes this kind of store: the restore from a backup is offered.
    fixes = [f["fix"] for f in record["findings"] if f["fix"] is not None]
    assert fixes and all(fix["applies"] for fix in fixes)
    restore = by_code(record)["dangling-parent"]["fix"]
    assert fix_line(restore) == f"ckpt copy BACKUP {mongo_url} --thread support-1 " + (
        "--on-conflict replace --renumber-versions --apply"
    )
    assert check(mongo_url)["summary"]["error"] == 0  # put back


def test_the_mongodb_restore_fix_works_from_a_sqlite_backup(tmp_path: Path) -> None:
    """The restore `check` prints for a damaged MongoDB thread, pasted with a SQLite backup
    (`ckpt copy --renumber-versions`: SqliteSaver's string versions), puts the thread back:
    MongoDBSaver lists the same checkpoints as before the damage, and check finds nothing."""
    import shlex

    from fixtures.mongo_server import MongoServer
    from fixtures.mongo_stores import DATABASE, build_mongo
    from langgraph.checkpoint.mongodb import MongoDBSaver
    from pymongo import MongoClient

    config: Any = {"configurable": {"thread_id": "support-1"}}

    def listed(url: str) -> list[Any]:
        with MongoClient(url) as client:
            saver = MongoDBSaver(client, db_name=DATABASE)
            return [(t.checkpoint, t.metadata, t.parent_config) for t in saver.list(config)]

    with MongoServer() as server:
        url = server.url
        build_mongo(url)
        before = listed(url)
        backup = tmp_path / "backup.sqlite"
        made = runner.invoke(
            app, ["copy", url, str(backup), "-t", "support-1", "--renumber-versions", "--apply"]
        )
        assert made.exit_code == 0, made.output
        with MongoClient(url) as client:
            checkpoints = client[DATABASE]["checkpoints"]
            chain = sorted(
                checkpoints.find({"thread_id": "support-1", "checkpoint_ns": ""}),
                key=lambda d: d["checkpoint_id"],
            )
            checkpoints.delete_one({"_id": chain[3]["_id"]})
        restore = by_code(check(url))["dangling-parent"]["fix"]
        pasted = shlex.split(fix_line(restore).replace("BACKUP", shlex.quote(str(backup))))
        done = runner.invoke(app, pasted[1:])
        assert done.exit_code == 0, done.output
        assert check(url)["summary"]["error"] == 0
        assert listed(url) == before
