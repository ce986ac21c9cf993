"""MongoDB stores (issue 27): a real MongoDBSaver store on the nx-27017 test server
(fixtures/mongo_server.py: MongoDB's wire protocol over SQLite, since no mongod installs
here), every read command on it leaving every document, index and database as it was and
sending only read commands, and one line for each way the server can be missing a part.

What ckpt says about each checkpoint is compared with MongoDBSaver's own answers in
tests/test_fidelity_mongo.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fixtures.graphs import SCENARIO_STATUS
from fixtures.mongo_server import MongoServer
from fixtures.mongo_stores import DATABASE, document_snapshot

from ckpt.errors import ExitCode
from ckpt.records.encode import dumps
from ckpt_runner import run_ckpt

READ_COMMANDS_RUN = [
    ["threads"],
    ["threads", "--json"],
    ["threads", "--size"],
    ["history", "subgraph-1"],
    ["history", "fork-1", "--json"],
    ["show", "approval-1", "--writes", "--json"],
    ["show", "rich-1", "--blobs"],
    ["versions", "support-1"],
    ["diff", "approval-1"],
    ["dump"],
    ["dump", "--thread", "delta-1", "--latest"],
    ["stats"],
    ["stats", "--json"],
    ["types"],
    ["types", "--json"],
    ["check", "--json"],
]


def ckpt(*args: str) -> subprocess.CompletedProcess[str]:
    return run_ckpt(*args)


def test_mongodb_saver_writes_the_documented_layout(mongo_url: str) -> None:
    snapshot = document_snapshot(mongo_url)
    assert DATABASE in snapshot["databases"]
    checkpoints = snapshot["checkpoints"]["documents"]
    writes = snapshot["checkpoint_writes"]["documents"]
    assert {d["thread_id"] for d in checkpoints} == set(SCENARIO_STATUS)
    doc = checkpoints[0]
    assert doc["type"] == "msgpack" and isinstance(doc["checkpoint"], bytes)
    assert all(
        isinstance(pair, list) and pair[0] == "msgpack"
        for key, pair in doc["metadata"].items()
        if key != "parents"
    )
    assert {"task_path", "idx", "channel", "type", "value"} <= set(writes[0])
    assert "created_at" not in doc  # no ttl given to the saver


def test_every_read_command_reads_and_changes_nothing(mongo_url: str) -> None:
    before = document_snapshot(mongo_url)
    for args in READ_COMMANDS_RUN:
        done = ckpt(*args, "--db", mongo_url)
        expected = ExitCode.DIFFERENT if args[0] == "diff" else ExitCode.OK
        assert done.returncode == expected, (args, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, args
        assert done.stdout, args
    assert document_snapshot(mongo_url) == before


def test_only_read_commands_are_sent(mongo_url: str) -> None:
    """Every command the driver sends for ckpt, seen by pymongo's own command monitoring."""
    from pymongo import monitoring

    import ckpt as api

    class Listener(monitoring.CommandListener):
        def __init__(self) -> None:
            self.commands: set[str] = set()
            self.stages: set[str] = set()

        def started(self, event: monitoring.CommandStartedEvent) -> None:
            self.commands.add(event.command_name)
            for stage in event.command.get("pipeline", []):  # aggregate: reading stages only
                self.stages.update(stage)

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            pass

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    listener = Listener()
    monitoring.register(listener)
    with api.open(mongo_url) as store:
        for thread in store.threads():
            store.history(thread["thread_id"])
            store.checkpoint(thread["thread_id"])
        list(store.dump())
        store.stats()
        store.types()
    reads = {"find", "getMore", "aggregate", "listDatabases", "listCollections", "collStats"}
    reads |= {"killCursors"}
    reads |= {"endSessions", "ping", "hello", "isMaster", "ismaster"}
    assert {"find", "aggregate", "listDatabases"} <= listener.commands <= reads, listener.commands
    assert listener.stages <= {"$match", "$group", "$sort", "$limit"}, listener.stages


def test_threads_lists_every_thread_with_its_status(mongo_url: str) -> None:
    done = ckpt("threads", "--json", "--db", mongo_url)
    assert done.returncode == 0, done.stderr
    rows = {row["thread_id"]: row for row in json.loads(done.stdout)}
    assert {t: rows[t]["status"] for t in rows} == dict(SCENARIO_STATUS)


def test_the_python_api_reads_mongodb_as_the_cli_does(mongo_url: str) -> None:
    import ckpt as api

    def plain(record: Any) -> Any:
        return json.loads(dumps(record))

    def cli(*args: str) -> Any:
        done = ckpt(*args, "--db", mongo_url, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    with api.open(mongo_url) as store:
        assert store.kind == "mongodb"
        threads = store.threads(sort="thread")
        assert plain(threads) == cli("threads", "--sort", "thread")
        # A CLI run costs 0.6 s here (pymongo's monitor threads stop at exit): four threads.
        for thread_id in ("approval-1", "fanout-1", "subgraph-2", "rich-1"):
            assert plain(store.history(thread_id)) == cli("history", thread_id), thread_id
            shown = cli("show", thread_id, "--blobs")
            assert plain(store.checkpoint(thread_id)) == shown, thread_id


def test_diff_against_the_same_scenario_in_sqlite(mongo_url: str, sqlite_store: Path) -> None:
    done = ckpt("diff", "approval-1", "--db", mongo_url, "--db2", str(sqlite_store), "--json")
    assert done.returncode == ExitCode.DIFFERENT, done.stderr
    paths = {op["path"].split("/")[1] for op in json.loads(done.stdout)}
    assert paths <= {"checkpoint_id", "parent_checkpoint_id", "ts", "channel_versions",
                     "versions_seen", "config", "size", "pending_writes"}, paths  # fmt: skip


@pytest.mark.parametrize("command", [["prune", "--all", "--keep-last", "1"], ["vacuum"]])
def test_prune_and_vacuum_plan_and_change_nothing(mongo_url: str, command: list[str]) -> None:
    """Without --apply, prune and vacuum only read (tests/test_prune_servers.py applies)."""
    before = document_snapshot(mongo_url)
    done = ckpt(*command, "--db", mongo_url)
    assert done.returncode == 0, done.stderr
    assert document_snapshot(mongo_url) == before


def test_a_missing_database_is_one_line_and_is_not_created(mongo_url: str) -> None:
    other = mongo_url.rstrip("/") + "/no_such_db"
    done = ckpt("threads", other)
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "no database 'no_such_db'" in done.stderr
    assert "no_such_db" not in document_snapshot(mongo_url)["databases"]


def test_a_server_without_the_store_is_not_a_checkpoint_store() -> None:
    with MongoServer() as server:
        done = ckpt("threads", server.url)
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "no database 'checkpointing_db'" in done.stderr


@pytest.mark.parametrize("query", ["", "?bogusOption=1"])  # pymongo warns of the second
def test_a_refused_connection_is_one_line_and_names_no_password(query: str) -> None:
    from fixtures.servers import free_port

    url = f"mongodb://ckpt:hunter2@127.0.0.1:{free_port()}/{query}"
    done = ckpt("threads", url, "--timeout", "1")
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "no answer within 1 s" in done.stderr, done.stderr
    assert "hunter2" not in done.stderr


def test_each_query_agrees_with_a_plain_reading_of_every_document(mongo_url: str) -> None:
    """ckpt's finds ($eq and $in filters, projections) give what Python finds in a full
    read of the collections: nothing rests on the stand-in server answering as MongoDB."""
    from ckpt.records.model import CheckpointKey
    from ckpt.stores.mongo import MongoStore

    snapshot = document_snapshot(mongo_url)
    docs = snapshot["checkpoints"]["documents"]
    writes = snapshot["checkpoint_writes"]["documents"]

    def key(doc: dict[str, Any]) -> CheckpointKey:
        return CheckpointKey(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])

    with MongoStore(mongo_url) as store:
        assert isinstance(store, MongoStore)
        catalog = store._catalog()
        assert set(catalog) == {d["thread_id"] for d in docs}
        for thread_id, info in catalog.items():
            mine = [d for d in docs if d["thread_id"] == thread_id]
            assert info.checkpoints == len(mine)
            assert info.namespaces == {d["checkpoint_ns"] for d in mine}
            roots = [d["checkpoint_id"] for d in mine if d["checkpoint_ns"] == ""]
            assert info.latest_root == (max(roots) if roots else None)
            assert store._thread_keys(thread_id) == sorted(
                (key(d) for d in mine), key=lambda k: (k.checkpoint_id, k.checkpoint_ns)
            )
        some = [key(d) for d in docs[::7]]
        found = list(store._by_keys(store.checkpoints_coll, some))
        low, high = min(k.thread_id for k in some), max(k.thread_id for k in some)
        wanted_ids = {k.checkpoint_id for k in some}

        def wanted(d: dict[str, Any]) -> bool:
            return low <= d["thread_id"] <= high and d["checkpoint_id"] in wanted_ids

        expected = [d for d in docs if wanted(d)]
        assert sorted(map(key, found), key=str) == sorted(map(key, expected), key=str)
        assert store.writes_coll is not None
        got = list(store._by_keys(store.writes_coll, some))
        expected_writes = [w for w in writes if wanted(w)]
        assert len(got) == len(expected_writes) > 0
        for fragment in (docs[5]["checkpoint_id"][:20], docs[3]["checkpoint_id"][-8:]):
            matching = [
                key(d)
                for d in docs
                if d["checkpoint_id"].startswith(fragment) or d["checkpoint_id"].endswith(fragment)
            ]
            assert 0 < len(matching) < 50
            order = sorted(matching, key=lambda k: (k.thread_id, k.checkpoint_ns, k.checkpoint_id))
            assert store.find(fragment) == order


def test_writes_filed_under_another_thread_are_found_by_the_thread_they_name(
    mongo_url: str,
) -> None:
    """raw_writes gives each thread its own writes and those naming its checkpoints under
    any other thread (moved within the threads read, or outside them), as a plain reading
    of every document finds them."""
    import pymongo

    from ckpt.records.model import DumpQuery
    from ckpt.stores.mongo import MongoStore

    with MongoServer() as server:
        source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
        target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.url)
        for name in ("checkpoints", "checkpoint_writes"):
            target[DATABASE][name].insert_many(list(source[DATABASE][name].find({}, {"_id": 0})))
        source.close()
        writes = target[DATABASE]["checkpoint_writes"]
        threads = sorted({w["thread_id"] for w in writes.find({}, {"thread_id": 1})})
        first, second, *_ = threads
        moved = [w["_id"] for w in writes.find({"thread_id": {"$eq": first}}).limit(2)]
        writes.update_one({"_id": moved[0]}, {"$set": {"thread_id": second}})  # read too
        writes.update_one({"_id": moved[1]}, {"$set": {"thread_id": "zz-elsewhere"}})
        every = list(writes.find({}))
        checkpoints = list(target[DATABASE]["checkpoints"].find({}))
        target.close()
        with MongoStore(server.url) as store:
            for selected in ([first], [first, second]):
                rows = list(store.raw_writes(DumpQuery(thread_ids=tuple(selected))))
                expected = 0
                for thread_id in selected:
                    ids = {c["checkpoint_id"] for c in checkpoints if c["thread_id"] == thread_id}
                    expected += sum(
                        w["thread_id"] == thread_id or w["checkpoint_id"] in ids for w in every
                    )
                assert len(rows) == expected, selected
                assert sum(r.thread_id in (second, "zz-elsewhere") for r in rows) >= 2


def test_collections_that_are_not_the_savers_are_listed_and_never_read(mongo_url: str) -> None:
    import pymongo

    with MongoServer() as server:
        source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
        target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.url)
        for name in ("checkpoints", "checkpoint_writes"):
            docs = list(source[DATABASE][name].find({}, {"_id": 0}))
            target[DATABASE][name].insert_many(docs)
        target[DATABASE]["sessions"].insert_one({"user": "a"})
        target[DATABASE]["checkpoints"].insert_one({"thread_id": 7, "junk": True})
        source.close()
        target.close()
        done = ckpt("threads", server.url, "--json")
        assert done.returncode == 0, done.stderr
        assert {row["thread_id"] for row in json.loads(done.stdout)} == set(SCENARIO_STATUS)
        stats = json.loads(ckpt("stats", server.url, "--json").stdout)
        assert stats["storage"]["other_collections"] == ["sessions"]
        for args in (["history", "approval-1"], ["dump"], ["types"]):
            again = ckpt(*args, "--db", server.url)
            assert again.returncode == 0 and "internal error" not in again.stderr, args


def test_stats_finds_missing_parents_and_orphan_writes(mongo_url: str) -> None:
    import pymongo

    with MongoServer() as server:
        source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
        target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.url)
        for name in ("checkpoints", "checkpoint_writes"):
            docs = list(source[DATABASE][name].find({}, {"_id": 0}))
            target[DATABASE][name].insert_many(docs)
        ids = sorted(
            d["checkpoint_id"]
            for d in source[DATABASE]["checkpoints"].find({"thread_id": {"$eq": "approval-1"}})
        )
        target[DATABASE]["checkpoints"].delete_one(
            {"thread_id": {"$eq": "approval-1"}, "checkpoint_id": {"$eq": ids[1]}}
        )
        source.close()
        target.close()
        stats = json.loads(ckpt("stats", server.url, "--json").stdout)
    found = {f["code"]: f for f in stats["health"]["findings"]}
    assert found["dangling-parent"]["count"] == 1, found
    assert found["orphan-writes"]["count"] >= 1, found


def test_another_database_and_collections(mongo_url: str) -> None:
    """MongoDBSaver(db_name=..., checkpoint_collection_name=..., writes_collection_name=...):
    --database (or the URL's path) and --collection find them."""
    import pymongo

    with MongoServer() as server:
        source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
        target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.url)
        for name, other in (("checkpoints", "agent_cps"), ("checkpoint_writes", "agent_w")):
            target["agents"][other].insert_many(list(source[DATABASE][name].find({}, {"_id": 0})))
        source.close()
        target.close()
        expected = json.loads(ckpt("threads", mongo_url, "--json").stdout)
        for args in (
            ["--database", "agents", "--collection", "agent_cps,agent_w"],
            ["--prefix", "agent_cps,agent_w"],
        ):
            url = server.url if args[0] == "--database" else server.url.rstrip("/") + "/agents"
            done = ckpt("threads", url, "--json", *args)
            assert done.returncode == 0, (args, done.stderr)
            assert json.loads(done.stdout) == expected
        missing = ckpt("threads", server.url, "--database", "agents")
        assert missing.returncode == ExitCode.UNREADABLE and "'checkpoints'" in missing.stderr


def test_a_checkpoint_whose_id_or_namespace_is_not_text_is_an_error_on_its_thread(
    mongo_url: str,
) -> None:
    """MongoDBSaver lists a thread's checkpoints by `thread_id`: one whose checkpoint_id
    or checkpoint_ns became a number is still listed with it, and cannot be read as a
    checkpoint (tests/test_damage.py asks LangGraph). Check reads it, on its thread."""
    import pymongo

    from checking import check, errors

    with MongoServer() as server:
        source: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(mongo_url)
        target: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(server.url)
        for name in ("checkpoints", "checkpoint_writes"):
            docs = list(source[DATABASE][name].find({}, {"_id": 0}))
            target[DATABASE][name].insert_many(docs)
        source.close()
        checkpoints = target[DATABASE]["checkpoints"]
        for thread_id, field_name in (
            ("approval-1", "checkpoint_id"),
            ("approval-2", "checkpoint_ns"),
        ):
            newest = max(
                d["checkpoint_id"] for d in checkpoints.find({"thread_id": {"$eq": thread_id}})
            )
            checkpoints.update_one(
                {"thread_id": {"$eq": thread_id}, "checkpoint_id": {"$eq": newest}},
                {"$set": {field_name: 7}},
            )
        target.close()
        record = check(server.url)
    found = errors(record)
    assert found.get("malformed-checkpoint") == {"approval-1", "approval-2"}, record["findings"]
    assert set().union(*found.values()) == {"approval-1", "approval-2"}, found
    details = json.dumps(record["findings"])
    assert "its `checkpoint_id` is int, not a string" in details
    assert "its `checkpoint_ns` is int, not a string" in details
