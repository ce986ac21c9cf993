"""Sorting and filtering thread records for `ckpt threads`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ckpt.records import ThreadRecord
from ckpt.vocabulary import STATUSES

_STATUS_ORDER = {status: i for i, status in enumerate(STATUSES)}


def select_threads(
    records: Iterable[ThreadRecord],
    *,
    sort: str = "updated",
    limit: int | None = None,
    where: dict[str, str] | None = None,
    status: str | None = None,
) -> list[ThreadRecord]:
    """Filter on latest metadata (values compared as text) and status, sort, then cut."""
    kept = [r for r in records if matches(r, where=where, status=status)]
    keys: dict[str, Any] = {
        # The latest root checkpoint's id: a uuid6 holds the time it was written (the
        # order SQLite streams from its key index, so every store sorts alike).
        "updated": lambda r: (r["checkpoint_id"] or "", r["thread_id"]),
        "thread": lambda r: r["thread_id"],
        "checkpoints": lambda r: (r["checkpoints"], r["thread_id"]),
        "size": lambda r: (r["size"] or 0, r["thread_id"]),
        "step": lambda r: (r["step"] if r["step"] is not None else -10, r["thread_id"]),
        "status": lambda r: (_STATUS_ORDER.get(r["status"], 9), r["thread_id"]),
    }
    reverse = sort in {"updated", "checkpoints", "size", "step"}
    kept.sort(key=keys[sort], reverse=reverse)
    return kept[:limit] if limit else kept


def matches(
    record: ThreadRecord, *, where: dict[str, str] | None = None, status: str | None = None
) -> bool:
    """Whether a thread passes `--status` and every `--where KEY=VALUE`."""
    return (status is None or record["status"] == status) and all(
        _matches(record["metadata"].get(k), v) for k, v in (where or {}).items()
    )


def _matches(actual: Any, wanted: str) -> bool:
    if actual is None:
        return False
    if isinstance(actual, bool):
        return str(actual).lower() == wanted.lower()
    return str(actual) == wanted
