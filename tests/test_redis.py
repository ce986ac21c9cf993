"""Redis stores (issue 27), first step: a real RedisSaver store on a real Redis 8.2 with
RedisJSON and RediSearch, its layout as docs/format.md describes it, and ckpt's answer
until it reads one: a one-line "not supported yet" (exit 13) that leaves every key as it
was."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from fixtures.graphs import SCENARIO_STATUS
from fixtures.redis_stores import KEY_FAMILIES, REDIS_SCENARIOS, key_snapshot

from ckpt.errors import ExitCode

CKPT = str(Path(sys.executable).with_name("ckpt"))


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


def test_a_redis_url_is_not_read_yet_and_nothing_changes(redis_url: str) -> None:
    before = key_snapshot(redis_url)
    secret_url = redis_url.replace("redis://", "redis://:hunter2@")
    for args in (["threads", secret_url], ["history", "support-1", "--db", secret_url]):
        done = subprocess.run([CKPT, *args], capture_output=True, text=True, check=False)
        assert done.returncode == ExitCode.UNSUPPORTED
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and "Redis stores are not supported yet" in done.stderr
        assert "hunter2" not in done.stderr
    assert key_snapshot(redis_url) == before
