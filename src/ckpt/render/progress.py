"""A progress bar on stderr for long streams (`ckpt dump`): it appears only once one runs long."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

T = TypeVar("T")

DELAY = 1.0  # seconds before the bar shows: a short dump stays silent
CHECK_EVERY = 32  # items between looks at the clock; keeps the per-record cost near zero


@contextmanager
def counting(
    items: Iterable[T],
    *,
    enabled: bool,
    label: str,
    unit: str = "checkpoints",
    delay: float = DELAY,
    total: Callable[[], int | None] | None = None,
    weigh: Callable[[T], int] | None = None,
) -> Iterator[Iterator[T]]:
    """Yield `items` back unchanged, counting them on a stderr bar when `enabled`.

    The bar is stopped however the stream ends (a closed pipe included), and it never
    touches stdout: the data goes there. `total` is asked once, when the bar appears (a
    count query a short dump never pays for); with it the bar shows N of M and an ETA.
    `weigh(item)`: how many units an item holds (the lines of a piece of text), else one.
    """
    if not enabled:
        yield iter(items)
        return
    meter = _Meter(label, unit, delay)
    meter.count_total = total
    try:
        yield meter.wrap(items) if weigh is None else meter.weighed(items, weigh)
    finally:
        meter.stop()


@contextmanager
def advancing(
    *, enabled: bool, label: str, unit: str, total: int | None = None, delay: float = DELAY
) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)` for work that is counted rather than iterated (`ckpt stats`
    scans several tables): a stderr bar, with a total when one is known."""
    if not enabled:
        yield lambda n: None
        return
    meter = _Meter(label, unit, delay, total)
    try:
        yield meter.advance
    finally:
        meter.stop()


class _Meter:
    def __init__(self, label: str, unit: str, delay: float, total: int | None = None) -> None:
        self.label = label
        self.unit = unit
        self.total = total
        self.checked = 0
        self.started = time.monotonic()
        self.deadline = self.started + delay
        self.count = 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.count_total: Callable[[], int | None] | None = None

    def wrap(self, items: Iterable[T]) -> Iterator[T]:
        for item in items:
            self.count += 1
            if self.count % CHECK_EVERY == 0:
                self._tick()
            yield item

    def weighed(self, items: Iterable[T], weigh: Callable[[T], int]) -> Iterator[T]:
        for item in items:
            self.advance(weigh(item))
            yield item

    def advance(self, n: int) -> None:
        self.count += n
        if self.count - self.checked >= CHECK_EVERY:
            self.checked = self.count
            self._tick()

    def _tick(self) -> None:
        now = time.monotonic()
        if self.progress is None:
            if now < self.deadline:
                return
            self._start()
        assert self.progress is not None and self.task is not None
        rate = self.count / max(now - self.started, 1e-9)
        of = f" of {self.total:,}" if self.total else ""
        self.progress.update(
            self.task,
            completed=self.count,
            description=f"{self.label} {self.count:,}{of} {self.unit} ({rate:,.0f}/s)",
        )

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if self.total is None and self.count_total is not None:
            self.total = self.count_total()
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            *([TextColumn("eta"), TimeRemainingColumn()] if self.total else []),
            console=Console(stderr=True),
            redirect_stdout=False,  # stdout carries the data; never proxy it
            redirect_stderr=False,
            transient=False,
        )
        self.task = self.progress.add_task(self.label, total=self.total)
        self.progress.start()

    def stop(self) -> None:
        if self.progress is None or self.task is None:
            return
        elapsed = time.monotonic() - self.started
        of = f" of {self.total:,}" if self.total and self.total != self.count else ""
        self.progress.update(
            self.task,
            completed=self.count,
            total=self.count,
            description=f"{self.label} {self.count:,}{of} {self.unit} in {elapsed:.1f}s",
        )
        self.progress.stop()
        self.progress = None
