"""Redis stores (issue 27): a real RedisSaver store on a real Redis 8.2 with RedisJSON and
RediSearch (fixtures/redis_server.py), its layout as docs/format.md §7b describes it, every
read command on it leaving every key, TTL and index as it was and sending only read
commands, and one line for every way the server can be missing a part.

What ckpt says about each checkpoint is compared with RedisSaver's own answers in
tests/test_fidelity_redis.py."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.graphs import SCENARIO_STATUS
from fixtures.redis_server import RedisServer
from fixtures.redis_stores import (
    KEY_FAMILIES,
    REDIS_SCENARIOS,
    build_redis,
    build_redis_shallow,
    key_snapshot,
)

from ckpt.errors import ExitCode
from ckpt.records.encode import dumps
from ckpt.records.model import CheckpointKey
from ckpt.stores.redis.session import READ_COMMANDS
from ckpt_runner import run_ckpt

READ_COMMANDS_RUN = [
    ["threads"],
    ["threads", "--json"],
    ["threads", "--size"],
    ["history", "subgraph-1"],
    ["history", "pending-1", "--json"],
    ["show", "approval-1", "--writes", "--json"],
    ["show", "fanout-1", "--writes"],
    ["versions", "support-1"],
    ["diff", "approval-1", "approval-2"],
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


def command_counts(url: str) -> Counter[str]:
    """How often the server ran each command (INFO commandstats)."""
    import redis

    # RESP2 and no driver info: this client sends no HELLO or CLIENT SETINFO of its own.
    client = redis.Redis.from_url(url, protocol=2, driver_info=None)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return Counter(
        {name.removeprefix("cmdstat_").lower(): int(v["calls"]) for name, v in stats.items()}
    )


def test_redis_saver_writes_the_documented_layout(redis_url: str) -> None:
    snapshot = key_snapshot(redis_url)
    assert snapshot["indexes"] == [b"checkpoint", b"checkpoint_write"]
    keys = [key for key in snapshot if key != "indexes"]
    assert set(Counter(key.split(":")[0] for key in keys)) == set(KEY_FAMILIES)
    threads = {key.split(":")[1] for key in keys}
    expected = set(SCENARIO_STATUS) - {"rich-1"}  # the one scenario RedisSaver cannot write
    assert threads == expected, threads ^ expected
    assert "rich" not in REDIS_SCENARIOS
    kind, ttl, document = snapshot[next(k for k in keys if k.startswith("checkpoint:"))]
    assert (kind, ttl) == ("ReJSON-RL", -1)
    assert document["checkpoint"]["type"] == "json"  # channel values inline, as JSON
    assert {key.split(":")[2] for key in keys if key.startswith("checkpoint:")} >= {"__empty__"}
    kind, _, write = snapshot[next(k for k in keys if k.startswith("checkpoint_write:"))]
    assert kind == "ReJSON-RL" and {"type", "blob", "task_path", "idx"} <= set(write)


@pytest.mark.parametrize("saver", ["RedisSaver", "ShallowRedisSaver"])
def test_every_read_command_reads_and_changes_nothing(saver: str) -> None:
    # A server of its own: it counts the commands the server ran, and the run's shared
    # servers (conftest) serve other test processes meanwhile.
    build = build_redis if saver == "RedisSaver" else build_redis_shallow
    with RedisServer() as server:
        build(server.url)
        reads_and_changes_nothing(server.url)


def reads_and_changes_nothing(redis_url: str) -> None:
    before = key_snapshot(redis_url)
    counts = command_counts(redis_url)
    for args in READ_COMMANDS_RUN:
        done = ckpt(*args, "--db", redis_url)
        expected = ExitCode.DIFFERENT if args[0] == "diff" else ExitCode.OK
        assert done.returncode == expected, (args, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, args
        assert done.stdout, args
    sent = command_counts(redis_url) - counts
    # This test's own INFO and key_snapshot's reads aside, only READ_COMMANDS ran.
    allowed = {c.lower() for c in READ_COMMANDS} | {"module|list", "json.debug|memory"}
    ran = {name for name in sent if sent[name]}
    assert ran <= allowed, ran - allowed
    assert {"scan", "json.mget", "ft.search", "zrange"} <= ran
    assert key_snapshot(redis_url) == before


def test_threads_lists_every_thread_with_its_status(redis_url: str) -> None:
    done = ckpt("threads", "--json", "--db", redis_url)
    assert done.returncode == 0, done.stderr
    rows = {row["thread_id"]: row for row in json.loads(done.stdout)}
    assert set(rows) == set(SCENARIO_STATUS) - {"rich-1"}
    assert rows["fanout-1"]["status"] == "error"
    assert rows["subgraph-2"]["status"] == "interrupted"
    assert rows["support-1"]["checkpoints"] == 15
    assert rows["subgraph-1"]["namespaces"][0] == "" and len(rows["subgraph-1"]["namespaces"]) == 2


@pytest.mark.parametrize("command", [["prune", "--all", "--keep-last", "1"], ["vacuum"]])
def test_prune_and_vacuum_plan_and_change_nothing(redis_url: str, command: list[str]) -> None:
    """Without --apply, prune and vacuum only read (tests/test_prune_servers.py applies)."""
    before = key_snapshot(redis_url)
    done = ckpt(*command, "--db", redis_url)
    assert done.returncode == 0, done.stderr
    assert key_snapshot(redis_url) == before


def test_a_password_is_never_shown(redis_url: str) -> None:
    secret_url = redis_url.replace("redis://", "redis://:hunter2@")
    done = ckpt("threads", secret_url)
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ckpt: error: ")
    assert "hunter2" not in done.stderr


def test_a_refused_connection_is_one_line() -> None:
    from fixtures.servers import free_port

    done = ckpt("threads", f"redis://127.0.0.1:{free_port()}/0")
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "cannot connect" in done.stderr, done.stderr


def test_a_server_that_does_not_answer_in_time_is_one_line(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.execute_command("CLIENT", "PAUSE", 3000, "ALL")
        done = ckpt("threads", redis_url, "--timeout", "0.5")
    finally:
        client.execute_command("CLIENT", "UNPAUSE")
        client.close()
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "no answer within 0.5 s" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def json_only_url(redis_url: str) -> Iterator[str]:
    """A Redis with RedisJSON but no RediSearch, holding the same keys (DUMP / RESTORE)."""
    import redis

    with RedisServer(modules=("rejson.so",)) as server:
        source = redis.Redis.from_url(redis_url)
        target = redis.Redis.from_url(server.url)
        for key in source.scan_iter(count=1000):
            target.restore(key, 0, source.dump(key))
        source.close()
        target.close()
        yield server.url


def test_without_redisearch_ckpt_reads_by_scan_and_says_so(
    redis_url: str, json_only_url: str
) -> None:
    indexed = ckpt("threads", "--json", "--db", redis_url)
    scanned = ckpt("threads", "--json", "--db", json_only_url)
    assert scanned.returncode == 0, scanned.stderr
    assert json.loads(scanned.stdout) == json.loads(indexed.stdout)
    assert "SCAN" in scanned.stderr and "no RediSearch" in scanned.stderr
    history = ckpt("history", "subgraph-1", "--json", "--db", json_only_url)
    assert (
        history.returncode == 0
        and history.stdout == ckpt("history", "subgraph-1", "--json", "--db", redis_url).stdout
    )


def test_without_redisjson_it_is_one_line_naming_the_module() -> None:
    with RedisServer(modules=False) as server:
        done = ckpt("threads", server.url)
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "RedisJSON" in done.stderr, done.stderr


def test_an_empty_server_is_not_a_checkpoint_store() -> None:
    with RedisServer(modules=("rejson.so",)) as server:
        done = ckpt("threads", server.url)
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stderr.count("\n") == 1 and "not a RedisSaver store" in done.stderr


def test_the_python_api_reads_redis_as_the_cli_does(redis_url: str) -> None:
    import ckpt as api

    def plain(record: Any) -> Any:
        return json.loads(dumps(record))

    def cli(*args: str) -> Any:
        done = ckpt(*args, "--db", redis_url, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    with api.open(redis_url) as store:
        assert store.kind == "redis"
        threads = store.threads(sort="thread")
        assert plain(threads) == cli("threads", "--sort", "thread")
        for thread in threads:
            thread_id = thread["thread_id"]
            assert plain(store.history(thread_id)) == cli("history", thread_id), thread_id
            shown = cli("show", thread_id, "--blobs")
            assert plain(store.checkpoint(thread_id)) == shown, thread_id


def test_diff_across_store_kinds(redis_url: str, sqlite_store: Path) -> None:
    """A thread in Redis against the same scenario through SqliteSaver: only ids, versions
    (random suffixes) and sizes differ; values, metadata, next and tasks do not."""
    done = ckpt("diff", "approval-1", "--db", redis_url, "--db2", str(sqlite_store), "--json")
    assert done.returncode == ExitCode.DIFFERENT, done.stderr
    paths = {op["path"].split("/")[1] for op in json.loads(done.stdout)}
    assert paths, done.stdout
    assert paths <= {"checkpoint_id", "parent_checkpoint_id", "ts", "channel_versions",
                     "versions_seen", "config", "size", "pending_writes"}, paths  # fmt: skip


def test_a_custom_key_prefix(tmp_path: Path) -> None:
    """RedisSaver(checkpoint_prefix=..., checkpoint_write_prefix=...): --prefix finds it,
    and the default prefix finds nothing there."""
    from fixtures.build import fixture_warnings
    from fixtures.graphs import run_scenarios
    from langgraph.checkpoint.redis import RedisSaver

    with RedisServer() as server:
        with (
            fixture_warnings(),
            RedisSaver.from_conn_string(
                server.url, checkpoint_prefix="agents", checkpoint_write_prefix="agents_w"
            ) as saver,
        ):
            saver.setup()
            run_scenarios(saver, ("approval",))
        done = ckpt("threads", server.url, "--prefix", "agents,agents_w", "--json")
        assert done.returncode == 0, done.stderr
        rows = {row["thread_id"]: row for row in json.loads(done.stdout)}
        assert set(rows) == {"approval-1", "approval-2"}
        assert rows["approval-1"]["status"] == "done" and rows["approval-1"]["checkpoints"] == 5
        shown = ckpt("show", "approval-1", "--db", server.url, "--prefix", "agents,agents_w")
        assert shown.returncode == 0 and "pending writes" in shown.stdout, shown.stderr
        default = ckpt("threads", server.url)
        assert default.returncode == ExitCode.UNREADABLE and "not a RedisSaver store" in (
            default.stderr
        )


def test_keys_with_a_ttl_keep_it(tmp_path: Path) -> None:
    """RedisSaver(ttl=...) refreshes a key's TTL when it reads it (refresh_on_read); ckpt
    reads every key and never touches one: no TTL grows back, no key loses its TTL."""
    import redis
    from fixtures.build import fixture_warnings
    from fixtures.graphs import run_scenarios
    from langgraph.checkpoint.redis import RedisSaver

    with RedisServer() as server:
        ttl = {"default_ttl": 60, "refresh_on_read": True}
        with fixture_warnings(), RedisSaver.from_conn_string(server.url, ttl=ttl) as saver:
            saver.setup()
            run_scenarios(saver, ("approval", "subgraph"))
        client = redis.Redis.from_url(server.url, protocol=2, driver_info=None)

        def ttls() -> dict[bytes, int]:
            return {key: client.pttl(key) for key in client.scan_iter(count=1000)}

        before = ttls()
        assert before and all(0 < ms <= 3_600_000 for ms in before.values()), before
        for args in READ_COMMANDS_RUN:
            if "fork-1" in args or "support-1" in args or "fanout-1" in args:
                continue
            ckpt(*args, "--db", server.url)
        after = ttls()
        client.close()
    assert after.keys() == before.keys()
    grown = {key: (before[key], after[key]) for key in after if after[key] > before[key]}
    assert not grown, grown


def test_keys_that_are_not_the_savers_are_listed_and_never_read(redis_url: str) -> None:
    """Another application's keys in the same database, and junk under the saver's own
    prefix: every command still answers, stats counts them as other, nothing crashes."""
    import redis

    with RedisServer() as server:
        source = redis.Redis.from_url(redis_url)
        target = redis.Redis.from_url(server.url)
        for key in source.scan_iter(count=1000):
            target.restore(key, 0, source.dump(key))
        target.set("session:1", "x")
        target.hset("user:7", mapping={"name": "a"})
        target.lpush("queue", "job")
        target.set("checkpoint:junk", "not json")
        target.execute_command("JSON.SET", "checkpoint:odd:doc", "$", '{"a": 1}')
        source.close()
        target.close()
        expected = json.loads(ckpt("threads", redis_url, "--json").stdout)
        for args in READ_COMMANDS_RUN:
            done = ckpt(*args, "--db", server.url)
            assert done.returncode in (0, 1), (args, done.stderr)
            assert "internal error" not in done.stderr, args
        assert json.loads(ckpt("threads", server.url, "--json").stdout) == expected
        stats = json.loads(ckpt("stats", server.url, "--json").stdout)
        families = stats["storage"]["server"]["key_families"]
        assert families["other"] == 3 and families["checkpoint"] > 70, families


def test_stats_finds_missing_parents_and_orphan_writes(redis_url: str) -> None:
    """A checkpoint deleted under its child and its writes: health says so."""
    import redis

    with RedisServer() as server:
        source = redis.Redis.from_url(redis_url)
        target = redis.Redis.from_url(server.url)
        for key in source.scan_iter(count=1000):
            target.restore(key, 0, source.dump(key))
        source.close()
        # approval-1's second checkpoint: its child loses its parent, its writes their home.
        keys = sorted(k.decode() for k in target.scan_iter(match="checkpoint:approval-1:*"))
        target.delete(keys[1])
        target.close()
        stats = json.loads(ckpt("stats", server.url, "--json").stdout)
    found = {f["code"]: f for f in stats["health"]["findings"]}
    assert found["dangling-parent"]["count"] == 1, found
    assert found["orphan-writes"]["count"] >= 1, found


def test_check_counts_the_bytes_stats_counts(redis_url: str) -> None:
    """check measures each document as its pass reads it (JSON.DEBUG MEMORY asked with
    the JSON.MGET), stats by Store.sizes: the same bytes."""
    check = json.loads(ckpt("check", redis_url, "--json").stdout)
    stats = json.loads(ckpt("stats", redis_url, "--json").stdout)
    assert check["scanned"]["bytes"] == stats["totals"]["bytes"] > 0, (check, stats["totals"])


def test_junk_under_the_savers_prefix_alone_is_no_crash() -> None:
    import redis

    with RedisServer(modules=("rejson.so",)) as server:
        client = redis.Redis.from_url(server.url)
        client.set("checkpoint:junk", "not json")
        client.close()
        done = ckpt("threads", server.url, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [] and "internal error" not in done.stderr


def test_a_failed_task_says_what_redis_kept_of_its_error(redis_url: str) -> None:
    """RedisSaver keeps an error as an object (its type and attributes, not its message):
    the view says so, not that LangGraph stored its repr (what the msgpack savers keep)."""
    record = json.loads(ckpt("show", "fanout-1", "--db", redis_url, "--json").stdout)
    (error,) = [w["value"] for w in record["pending_writes"] if w["channel"] == "__error__"]
    assert isinstance(error, dict) and error["__type__"] == "builtins.ValueError"
    shown = ckpt("show", "fanout-1", "--db", redis_url, "--writes").stdout
    assert "the saver stores only the error's fields shown below: there is no traceback" in shown
    assert "repr only" not in shown
    # Its one-line form says there is no message, not a dict that reads as data (§3).
    listed = ckpt("threads", redis_url).stdout
    assert "): ValueError (no message: RedisSaver keeps none)" in listed, listed
    assert '{"__type__": "builtins.ValueError"' not in listed


def test_documents_the_search_index_leaves_out_are_errors_on_their_thread() -> None:
    """A field RediSearch indexes as a TAG that became a number drops its document out of
    the saver's index: RedisSaver, which finds checkpoints and writes only through it,
    loses them (tests/test_damage.py asks LangGraph). Check finds them by their key
    names once the server counts an indexing failure, and marks their own thread."""
    import redis
    from fixtures.redis_stores import build_redis

    from checking import check, errors

    with RedisServer() as server:
        build_redis(server.url)  # with the saver's indexes (a copy by RESTORE has none)
        target = redis.Redis.from_url(server.url)
        assert not errors(check(server.url))
        write = sorted(target.scan_iter(match="checkpoint_write:approval-2:*"))[0]
        checkpoint = sorted(target.scan_iter(match="checkpoint:approval-1:*"))[1]
        for key, field_name in ((write, "checkpoint_id"), (checkpoint, "thread_id")):
            doc = target.json().get(key)
            doc[field_name] = 7
            target.execute_command("JSON.SET", key, "$", json.dumps(doc))
        target.close()
        record = check(server.url)
    found = errors(record)
    assert found == {
        "malformed-write": {"approval-2"},
        "malformed-checkpoint": {"approval-1"},
    }, record["findings"]
    details = json.dumps(record["findings"])

    assert "its `checkpoint_id` is int: the saver's search index leaves it out" in details


def test_a_latest_pointer_gone_or_changed_is_an_error_on_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RedisSaver's get_tuple (every resume) starts from `checkpoint_latest:{thread}:{ns}`:
    gone, or naming an older checkpoint, LangGraph finds none or resumes from that one.
    (Nothing writes here: a pointer behind a recent checkpoint is asked again at once.)"""
    import redis
    from fixtures.redis_stores import build_redis

    from checking import check, errors

    with RedisServer() as server:
        build_redis(server.url)
        monkeypatch.setattr("ckpt.scan.integrity.SETTLE", 0.0)
        client = redis.Redis.from_url(server.url)
        assert not errors(check(server.url))
        client.delete("checkpoint_latest:approval-1:__empty__")
        older = sorted(client.scan_iter(match="checkpoint:approval-2:__empty__:*"))[0]
        client.set("checkpoint_latest:approval-2:__empty__", older)
        client.close()
        record = check(server.url)
    assert errors(record) == {"wrong-latest": {"approval-1", "approval-2"}}, record["findings"]
    details = json.dumps(record["findings"])
    assert "the saver's latest pointer is gone" in details and older.decode() in details


def test_a_shallow_store_is_not_pruned(redis_shallow_url: str) -> None:
    done = ckpt("prune", "--db", redis_shallow_url, "--all", "--keep-latest", "--apply")
    assert done.returncode == ExitCode.UNSUPPORTED
    assert done.stderr.count("\n") == 1 and "ShallowRedisSaver" in done.stderr


def test_namespaces_whose_names_hold_a_colon_are_read_under_their_thread(
    redis_empty: str,
) -> None:
    """Keys of a namespace `crawl:<uuid>|fetch:page:<uuid>` (a task named `fetch:page`),
    and of threads whose ids hold `:` (`user`, `user:42`), split at the right colon: ckpt
    lists the threads RedisSaver lists, with the checkpoints and writes it reads (issue 46
    §5: they were listed under bogus ids such as `t1:crawl:<uuid>|fetch`); a copy that
    replaces thread `user` leaves `user:42` whole."""
    import uuid

    import redis
    from fixtures.build import fixture_warnings
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.redis import RedisSaver

    def ns_of(*names: str) -> str:
        return "|".join(f"{name}:{uuid.uuid4()}" for name in names)

    placed = {
        "t1": ["", ns_of("crawl", "fetch:page"), ns_of("fetch:page")],
        "user": ["", ns_of("node")],
        "user:42": ["", ns_of("node"), ns_of("crawl", "fetch:page")],
    }
    url = redis_empty
    with fixture_warnings():
        with RedisSaver.from_conn_string(url) as saver:
            saver.setup()
            for thread_id, namespaces in placed.items():
                for ns in namespaces:
                    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
                    checkpoint = empty_checkpoint()
                    saved = saver.put(config, checkpoint, {"source": "loop", "step": 0}, {})
                    saver.put_writes(saved, [("x", ns or "root")], str(uuid.uuid4()))
            said = {}  # what RedisSaver reads: each namespace's checkpoint and its writes
            for thread_id, namespaces in placed.items():
                tuples = [
                    saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
                    for ns in namespaces
                ]
                said[thread_id] = sorted(
                    (t.config["configurable"]["checkpoint_ns"], len(t.pending_writes or []))
                    for t in tuples
                    if t is not None
                )
        listed = ckpt("threads", url, "--json")
        assert listed.returncode == 0, listed.stderr
        assert {row["thread_id"] for row in json.loads(listed.stdout)} == set(placed)
        dumped = ckpt("dump", url)
        assert dumped.returncode == 0, dumped.stderr
        mine: dict[str, list[tuple[str, int]]] = {thread_id: [] for thread_id in placed}
        for record in map(json.loads, dumped.stdout.splitlines()):
            pair = (record["checkpoint_ns"], len(record["pending_writes"]))
            mine[record["thread_id"]].append(pair)
        assert {t: sorted(pairs) for t, pairs in mine.items()} == said
        assert sum(map(len, mine.values())) == sum(map(len, placed.values()))
        assert all(n == 1 for pairs in mine.values() for _, n in pairs), mine
        # A copy out and back with `replace` of thread `user`: `user:42` keeps every key.
        client = redis.Redis.from_url(url, protocol=2, driver_info=None)
        before = {k for k in client.scan_iter(count=1000) if b":user:42:" in k}
        aside = url.rsplit("/", 1)[0] + "/5"
        assert ckpt("copy", url, aside, "-t", "user", "--apply").returncode == 0
        back = ckpt("copy", aside, url, "-t", "user", "--on-conflict", "replace", "--apply")
        assert back.returncode == 0, back.stderr
        after = {k for k in client.scan_iter(count=1000) if b":user:42:" in k}
        client.close()
        assert after == before


def test_pending_writes_come_in_the_order_redis_saver_hands_langgraph(redis_empty: str) -> None:
    """RedisSaver's get_tuple() gives a checkpoint's writes in its registry's order (a task's
    `__interrupt__` before its `__resume__`, tasks interleaved as they wrote), not sorted:
    `show` and `dump` give the same order (issue 46 §5)."""
    import uuid

    from fixtures.build import fixture_warnings
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.redis import RedisSaver

    config = {"configurable": {"thread_id": "order-1", "checkpoint_ns": ""}}
    tasks = [str(uuid.uuid4()) for _ in range(2)]
    with fixture_warnings(), RedisSaver.from_conn_string(redis_empty) as saver:
        saver.setup()
        saved = saver.put(config, empty_checkpoint(), {"source": "loop", "step": 1}, {})
        saver.put_writes(saved, [("b", 1), ("a", 2)], tasks[1], "~__pregel_pull, z")
        saver.put_writes(saved, [("__interrupt__", [])], tasks[0], "~__pregel_pull, y")
        saver.put_writes(saved, [("c", 3)], tasks[1], "~__pregel_pull, z")  # idx 0 again
        saver.put_writes(saved, [("__resume__", "ok")], tasks[0], "~__pregel_pull, y")
        said = [(w[0], w[1]) for w in saver.get_tuple(config).pending_writes]  # type: ignore[union-attr]
    shown = ckpt("show", "order-1", "--db", redis_empty, "--writes", "--json")
    assert shown.returncode == 0, shown.stderr
    mine = [(w["task_id"], w["channel"]) for w in json.loads(shown.stdout)["pending_writes"]]
    assert mine == said and len(mine) == 4, (mine, said)
    assert said != sorted(said)  # the registry's order is not a sort of them


def test_values_redis_saver_did_not_keep_show_what_langgraph_reads(redis_empty: str) -> None:
    """RedisSaver stores an object its JSON encoder does not know as a type envelope
    without its data (a Decimal, a timedelta, a frozenset, a time zone, an IP address, a
    numpy scalar). ckpt shows what LangGraph reads in its place (`read_as`), marked
    `not_kept` (issue 46 §5; docs/json.md); a kept value (a set) is shown as it is."""
    import datetime
    import decimal
    import ipaddress
    from zoneinfo import ZoneInfo

    import numpy as np
    from fixtures.build import fixture_warnings
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.redis import RedisSaver

    values: dict[str, Any] = {
        "decimal": decimal.Decimal("1.5"),
        "timedelta": datetime.timedelta(seconds=3),
        "frozenset": frozenset({1, 2}),
        "zone": ZoneInfo("Europe/Paris"),
        "offset": datetime.UTC,
        "address": ipaddress.ip_address("10.0.0.1"),
        "network": ipaddress.ip_network("10.0.0.0/8"),
        "int64": np.int64(3),
        "set": {1, 2},
    }
    config = {"configurable": {"thread_id": "lost-1", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    with fixture_warnings(), RedisSaver.from_conn_string(redis_empty) as saver:
        saver.setup()
        saved = saver.put(config, checkpoint, {"source": "loop", "step": 1}, {})
        saver.put_writes(saved, [("decimal", decimal.Decimal("2"))], "task-1")
        read = saver.get_tuple(config)
    assert read is not None

    def as_ckpt_json(value: Any) -> Any:  # LangGraph's value in ckpt's JSON (docs/json.md)
        if isinstance(value, decimal.Decimal):
            return str(value)
        if isinstance(value, datetime.timedelta):
            return value.total_seconds()
        if isinstance(value, set | frozenset):
            return sorted(value)
        return value

    shown = ckpt("show", "lost-1", "--db", redis_empty, "--blobs", "--json")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    for channel, value in read.checkpoint["channel_values"].items():
        mine = record["channel_values"][channel]
        if channel == "set":
            assert mine == as_ckpt_json(value) == [1, 2]
            continue
        assert mine["__ckpt__"] == "not_kept", (channel, mine)
        assert (
            mine["type"] == f"{type(values[channel]).__module__}.{type(values[channel]).__name__}"
        )
        assert mine["read_as"] == as_ckpt_json(value), (channel, mine, value)
    [write] = record["pending_writes"]
    assert write["value"]["read_as"] == as_ckpt_json(read.pending_writes[0][2]) == "0"
    human = ckpt("show", "lost-1", "--db", redis_empty, "--blobs")
    assert human.returncode == 0, human.stderr
    assert '<decimal.Decimal not kept by the saver; LangGraph reads "0">' in human.stdout


def test_a_parsed_body_is_what_reading_its_text_gives() -> None:
    """raw_checkpoint hands the census the body it parsed with the document (one parse,
    not two), only where that is what json_document(body) reads: not past 64 bits."""
    from ckpt.decoders.jsontext import json_document
    from ckpt.stores.redis.fields import name, raw_checkpoint

    key = name(CheckpointKey("t", "", "1"))
    plain = b'{"checkpoint": {"v": 4, "channel_values": {"n": 1.5, "l": [1, null, true]}}}'
    row = raw_checkpoint(key, plain, data=True)
    assert row.parsed is not None and row.parsed == json_document(row.body)
    assert raw_checkpoint(key, plain, data=False).parsed is None
    huge = b'{"checkpoint": {"v": 4, "channel_values": {"n": 123456789012345678901234}}}'
    assert raw_checkpoint(key, huge, data=True).parsed is None  # the census reads the text
