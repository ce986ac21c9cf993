"""The one scan's promises, as the tests check them on any store: `ckpt stats` and `ckpt
check` say the same of it (the same visitors fed by the same pass), and the store's own SQL
shortcut (`Store.health`) counts what the scan counts."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ckpt.cli import app
from ckpt.records.model import DumpQuery, StoreHealth
from ckpt.scan.check import Checkup
from ckpt.scan.rows import scan
from ckpt.stores import open_store
from invoke import runner


def cli_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.stdout, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, parsed


def assert_stats_and_check_agree(location: str, *options: str) -> dict[str, Any]:
    """`ckpt stats` health and `ckpt check` on one store: the same findings, summary and
    status; check's exit code says its errors. Returns the check record."""
    code, checked = cli_json("check", location, *options, "--quiet")
    assert code == (1 if checked["summary"]["error"] else 0), checked["findings"]
    _, stats = cli_json("stats", location, *options, "--top", "0")
    health = stats["health"]
    assert health["findings"] == checked["findings"]
    assert (health["summary"], health["status"]) == (checked["summary"], checked["status"])
    return checked


def scanned_health(location: str, aes_key: bytes | None = None) -> StoreHealth:
    """What Store.health answers, as the one pass's integrity visitor counts it."""
    with open_store(location, aes_key=aes_key) as store:
        sizes = store.sizes(DumpQuery())
        checkup = Checkup(store, sizes, now=dt.datetime.now(dt.UTC), keep_namespaces=True)
        scan(store, sizes, checkup.visitors)
        return checkup.integrity.health()


def assert_health_agrees(location: str, aes_key: bytes | None = None) -> StoreHealth:
    """Store.health (SQL where there is SQL) and the scan count the same rows pointing at
    rows that are gone. Returns the store's answer."""
    with open_store(location, aes_key=aes_key) as store:
        shortcut = store.health(DumpQuery())
    counted = scanned_health(location, aes_key)
    fields = (
        "orphan_writes",
        "orphan_write_threads",
        "missing_parents",
        "missing_parent_threads",
        "missing_parent_oldest",
        "orphan_blobs",
        "orphan_blob_bytes",
    )
    assert {f: getattr(counted, f) for f in fields} == {f: getattr(shortcut, f) for f in fields}
    assert counted.namespaces == sorted(set(shortcut.namespaces))
    return shortcut
