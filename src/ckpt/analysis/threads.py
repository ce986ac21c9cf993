"""Sorting and filtering thread records for `ckpt threads`."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, Final

from ckpt.records.types import ThreadRecord
from ckpt.records.vocabulary import STATUSES, Status, ThreadSort
from ckpt.records.when import When
from ckpt.stores.base import Store

_STATUS_ORDER = {status: i for i, status in enumerate(STATUSES)}
_SPOOL_BYTES: Final = 4 << 20  # records kept in memory before a temporary file


# The sort orders of `threads --sort`: a key per record, newest or biggest first where
# REVERSED says so.
SORT_KEYS: Final[dict[str, Callable[[ThreadRecord], Any]]] = {
    # The latest root checkpoint's id: a uuid6 holds the time it was written (the
    # order SQLite streams from its key index, so every store sorts alike).
    "updated": lambda r: (r["checkpoint_id"] or "", r["thread_id"]),
    "thread": lambda r: r["thread_id"],
    "checkpoints": lambda r: (r["checkpoints"], r["thread_id"]),
    "size": lambda r: (r["size"] or 0, r["thread_id"]),
    "step": lambda r: (r["step"] if r["step"] is not None else -10, r["thread_id"]),
    "status": lambda r: (_STATUS_ORDER.get(r["status"], 9), r["thread_id"]),
}
REVERSED: Final = frozenset({"updated", "checkpoints", "size", "step"})


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
    kept.sort(key=SORT_KEYS[sort], reverse=sort in REVERSED)
    return kept[:limit] if limit else kept


def sorted_threads(
    records: Iterable[ThreadRecord], *, sort: str, limit: int | None = None
) -> Iterator[ThreadRecord]:
    """`select_threads` (without its filter) in flat memory: each record is written to a
    temporary file as it comes, and only its sort key and place stay in memory (a
    100,000-thread store sorted by step held every record: 465 MB). A record is plain data
    ckpt built, packed with msgpack, which gives back exactly what it took: anything else
    (a tuple, a subclass, a non-string key) is refused and that record stays in memory."""
    import tempfile

    import ormsgpack

    # Every type msgpack would change on the way is refused, not converted.
    exact = (
        ormsgpack.OPT_PASSTHROUGH_BIG_INT
        | ormsgpack.OPT_PASSTHROUGH_DATACLASS
        | ormsgpack.OPT_PASSTHROUGH_DATETIME
        | ormsgpack.OPT_PASSTHROUGH_ENUM
        | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
        | ormsgpack.OPT_PASSTHROUGH_TUPLE
        | ormsgpack.OPT_PASSTHROUGH_UUID
    )
    key = SORT_KEYS[sort]
    index: list[tuple[Any, int, int]] = []  # (sort key, offset, size); size -1: in `held`
    held: dict[int, ThreadRecord] = {}
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        offset = 0
        for record in records:
            try:
                data = ormsgpack.packb(record, option=exact)
            except TypeError:
                held[len(index)] = record
                index.append((key(record), len(index), -1))
                continue
            spool.write(data)
            index.append((key(record), offset, len(data)))
            offset += len(data)
        index.sort(key=itemgetter(0), reverse=sort in REVERSED)  # stable, as list.sort is
        for _, place, size in index[:limit] if limit else index:
            if size < 0:
                yield held[place]
                continue
            spool.seek(place)
            yield ormsgpack.unpackb(spool.read(size))


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


def stream_threads(
    store: Store,
    *,
    status: Status | None,
    where: dict[str, str] | None,
    sort: ThreadSort,
    limit: int | None,
    sizes: bool,
    latest: bool = False,
) -> Iterator[ThreadRecord]:
    """The thread records of `ckpt threads`, filtered and sorted (CheckpointStore.iter_threads):
    where the store gives its rows in the order asked they stream (memory flat, reading
    stops after `limit`); otherwise they are sorted first. The encrypted-threads notice is
    added to the store's notices once the stream ends. `latest`: every newest checkpoint
    read even where the listing reads keys only (`stats` and `check` conclude from them)."""
    from ckpt.analysis.encryption import encrypted_threads_notice, hides_thread
    from ckpt.analysis.records import thread_record

    measure = sizes or sort == "size"
    has_key = store.aes_key is not None
    streams = sort in store.thread_orders
    hidden = seen = 0
    # A kind whose listing reads only keys (DynamoDB) tells error and interrupted from
    # them; any other status, a metadata filter or the step order need the latest
    # checkpoints read.
    needs_latest = (
        latest or bool(where) or sort == "step" or status not in (None, "error", "interrupted")
    )
    listing = store.loaded_threads if needs_latest else store.threads

    def kept() -> Iterator[ThreadRecord]:
        nonlocal hidden, seen
        order = sort if streams else "thread"
        for summary in listing(sizes=measure, order=order):
            seen += 1
            if hides_thread(summary):
                hidden += 1
                if has_key:  # a wrong key: say so before anything is shown
                    encrypted_threads_notice(hidden, seen, has_key=True)
            record = thread_record(summary)
            if matches(record, where=where, status=status):
                yield record

    if streams:
        yield from itertools.islice(kept(), limit or None)
        store.notices.extend(encrypted_threads_notice(hidden, seen, has_key=has_key))
        return
    # Any other order needs every record before the first: they wait in a temporary
    # file, only their sort keys in memory (ckpt.analysis.threads.sorted_threads).
    ordered = sorted_threads(kept(), sort=sort, limit=limit)
    # The first record comes once every summary is read: the notice is known then.
    first = next(ordered, None)
    notices = encrypted_threads_notice(hidden, seen, has_key=has_key)
    if first is not None:
        yield first
        yield from ordered
    store.notices.extend(notices)


def chosen_ids(
    records: Iterable[ThreadRecord],
    wanted: set[str],
    *,
    before: dt.datetime | None,
    after: dt.datetime | None,
) -> list[str]:
    """The ids of the threads `prune`, `copy` and `migrate` take: among `wanted` (when any
    are), updated before `before` and at or after `after` (when given). The records are
    streamed and dropped: 100,000 threads cost their ids only."""
    from ckpt.records.when import updated_at

    chosen: list[str] = []
    for record in records:
        if wanted and record["thread_id"] not in wanted:
            continue
        updated = updated_at(record["updated_at"])
        if before is not None and not (updated and updated < before):
            continue
        if after is not None and not (updated and updated >= after):
            continue
        chosen.append(record["thread_id"])
    return chosen


def chooser(
    store: Store,
    known: Callable[[Sequence[str]], tuple[str, ...]],
    listed: Callable[[], Iterable[ThreadRecord]],
    threads: Sequence[str],
    older_than: When | None,
    since: When | None,
    said: bool,
) -> Callable[[], list[str]]:
    """The threads `prune`, `copy` and `migrate` take, chosen when called (once the store
    has said it can do what is asked): their ids in thread id order, among `known(threads)`
    (when any are given) and the `listed()` records, updated before `older_than` and at
    or after `since`. The records are streamed and dropped (100,000 threads: their ids).
    `said`: whether any condition (or `all`) was given; without one, BadOption."""
    from ckpt.analysis.selector import time_of
    from ckpt.errors import BadOption
    from ckpt.records.when import parse_age, parse_when

    now = dt.datetime.now(dt.UTC)

    def choose() -> list[str]:
        if not said:
            raise BadOption(
                "say which threads: `threads`, `older_than`, `since`, `status`, "
                "`where`, or `all=True` for every thread"
            )
        old = parse_age(older_than, "older_than") if older_than is not None else None
        new = parse_when(since, "since") if since is not None else None
        wanted = set(known(threads))
        before = time_of(store, old, "older_than", now) if old is not None else None
        after = time_of(store, new, "since", now) if new is not None else None
        return chosen_ids(listed(), wanted, before=before, after=after)

    return choose
