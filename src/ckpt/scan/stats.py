"""`ckpt stats`: where a store's bytes go, how its threads grow, and what is wrong with it.

Counts and totals come from the store's own aggregates (`Store.sizes`, SQL where there is
SQL: the numbers `ckpt threads` shows). The breakdowns come from the one pass over the rows
(ckpt.scan.rows) that `ckpt check` makes: its sizes visitor (ckpt.scan.sizes) measures
without decoding, and the health section is `ckpt check`'s findings, from the same
visitors (ckpt.scan.check.Checkup) fed by the same pass, so the two cannot disagree.
Memory stays flat in the store's size: a batch of threads is held at a time, and what
outlives a batch is one small record per listed thread, channel and subgraph name.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Callable, Iterable
from typing import Final

from ckpt.records.model import DumpQuery, ThreadBytes
from ckpt.records.types import StatsRecord, ThreadRecord
from ckpt.scan.check import Checkup
from ckpt.scan.rows import scan
from ckpt.scan.sizes import Sizes
from ckpt.stores.base import Store

GROWTH_THREADS: Final = 3  # threads whose growth is charted, the largest first
DEFAULT_TOP: Final = 10
DEFAULT_KEEP: Final = 10

Progress = Callable[[int], None]


def store_stats(
    store: Store,
    query: DumpQuery | None = None,
    *,
    top: int = DEFAULT_TOP,
    keep: int = DEFAULT_KEEP,
    threads: Iterable[ThreadRecord] = (),
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> StatsRecord:
    """Where the bytes of `store` go, or of the threads and namespace `query` selects.

    `top` cuts every list (0 keeps all); `keep` is the N of the keep-last-N estimate;
    `threads` are the thread records (`ckpt threads`) of the threads read, for the health
    section (read once the rows are). `progress(n)` hears of every n rows read.
    """
    query = query or DumpQuery()
    # Whole threads are read (the health of a namespace depends on its parent's), the
    # sizes counted in the namespace asked for.
    everything = store.sizes(DumpQuery(thread_ids=query.thread_ids))
    sizes = everything if query.checkpoint_ns is None else store.sizes(query)
    measured = sizes_visitor(store, query, sizes, top=top, keep=keep)
    checkup = Checkup(store, everything, now=now or dt.datetime.now(dt.UTC))
    scan(store, everything, [measured, *checkup.visitors], progress=progress)
    health = checkup.conclude(threads, snapshots=measured.snapshots)
    return {
        "store": {"kind": store.kind, "location": store.location},
        "selection": {"thread_ids": list(query.thread_ids), "checkpoint_ns": query.checkpoint_ns},
        "storage": store.storage(),
        **measured.record(),  # type: ignore[typeddict-item]
        "health": {
            "findings": health.findings,
            "summary": health.summary,
            "status": health.status,
            "delta_channels": health.delta_channels,
        },
    }


def sizes_visitor(
    store: Store, query: DumpQuery, sizes: dict[str, ThreadBytes], *, top: int, keep: int
) -> Sizes:
    """The sizes visitor of a pass over `sizes`' threads, told the threads the record lists
    (the biggest `top`) and charts, known from their sizes before any row is read: only
    those are followed through the rows (nsmallest is sorted(...)[:n], ties included,
    without a list of every thread)."""
    charts = 1 if query.thread_ids else GROWTH_THREADS
    if top > 0:
        biggest = heapq.nsmallest(max(top, charts), sizes.items(), key=_by_size)
    else:
        biggest = sorted(sizes.items(), key=_by_size)
    listed = [t for t, _ in biggest[:top]] if top > 0 else [t for t, _ in biggest]
    return Sizes(
        sizes,
        aes_key=store.aes_key,
        checkpoint_ns=query.checkpoint_ns,
        keep=keep,
        top=top,
        listed=listed,
        charted={t for t, _ in biggest[:charts]},
    )


def _by_size(item: tuple[str, ThreadBytes]) -> tuple[int, str]:
    """The order threads are listed in: the biggest first, then by id."""
    return -item[1].total, item[0]
