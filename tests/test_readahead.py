"""stores.readahead: the reading generator runs one item ahead, always in one thread of its
own, its errors reach the caller at their item, and an early stop closes it there."""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator

import pytest

from ckpt.stores.readahead import read_ahead


def _numbers(n: int, seen: list[tuple[str, int | str]]) -> Generator[int, None, None]:
    try:
        for i in range(n):
            seen.append((threading.current_thread().name, i))
            yield i
    finally:
        seen.append((threading.current_thread().name, "closed"))


def test_every_item_in_order_from_one_other_thread() -> None:
    seen: list[tuple[str, int | str]] = []
    assert list(read_ahead(_numbers(5, seen))) == [0, 1, 2, 3, 4]
    threads = {name for name, _ in seen}
    assert len(threads) == 1 and threading.current_thread().name not in threads
    assert [item for _, item in seen] == [0, 1, 2, 3, 4, "closed"]


def test_reads_one_ahead_of_the_caller() -> None:
    seen: list[tuple[str, int | str]] = []
    items = read_ahead(_numbers(10, seen))
    assert next(items) == 0
    # The next item is asked for as soon as the first is handed over: by the time the
    # caller asks, it is read (and not more than it).
    assert next(items) == 1
    assert [item for _, item in seen][:2] == [0, 1]
    assert len(seen) <= 3
    items.close()
    assert seen[-1][1] == "closed"
    assert {name for name, _ in seen} != {threading.current_thread().name}


def test_an_early_stop_closes_the_generator_in_its_thread() -> None:
    seen: list[tuple[str, int | str]] = []
    for item in read_ahead(_numbers(1000, seen)):
        if item == 3:
            break
    names = {name for name, _ in seen}
    assert len(names) == 1  # closed where it ran, not in the caller's thread
    assert seen[-1][1] == "closed"
    assert len(seen) <= 6  # it read at most one item past the stop


def test_an_error_reaches_the_caller_at_its_item() -> None:
    def failing() -> Generator[int, None, None]:
        yield 1
        yield 2
        raise ValueError("row 3 is damaged")

    got: list[int] = []
    with pytest.raises(ValueError, match="row 3 is damaged"):
        for item in read_ahead(failing()):
            got.append(item)
    assert got == [1, 2]


def test_the_switch_interval_comes_back() -> None:
    before = sys.getswitchinterval()
    items = read_ahead(_numbers(3, []))
    next(items)
    assert sys.getswitchinterval() <= before
    items.close()
    assert sys.getswitchinterval() == before


def test_overlapping_readers_restore_the_interval_in_any_order() -> None:
    before = sys.getswitchinterval()
    first, second = read_ahead(_numbers(3, [])), read_ahead(_numbers(3, []))
    next(first)
    next(second)
    first.close()  # the first to start ends first: the second still reads
    assert sys.getswitchinterval() <= before
    second.close()
    assert sys.getswitchinterval() == before


def test_a_reader_the_collector_finalizes_does_not_wait_for_its_thread() -> None:
    # The collector runs wherever an allocation triggers it: inside an import, holding the
    # import lock the reading thread may be waiting for. Finalizing an abandoned reader then
    # must not wait for that thread (here: a lock the collecting side holds).
    import gc

    lock = threading.Lock()
    closed = threading.Event()

    def steps() -> Generator[int, None, None]:
        try:
            yield 1
            with lock:
                yield 2
        finally:
            closed.set()

    lock.acquire()
    try:
        reader = read_ahead(steps())
        assert next(reader) == 1  # the thread now waits for `lock`, reading item 2
        cycle: list[object] = [reader]
        cycle.append(cycle)
        del reader, cycle
        collected = threading.Event()
        collector = threading.Thread(target=lambda: (gc.collect(), collected.set()))
        collector.start()
        assert collected.wait(10), "finalizing the reader waited for its thread"
    finally:
        lock.release()
    assert closed.wait(10)  # the thread closed the generator itself once it could


def test_the_callers_statements_wait_for_the_step_under_way() -> None:
    # A dump's progress bar counts on the dump's own connection while the reading thread
    # runs the next batch (or ends the transaction): the lock keeps the two apart.
    import time

    lock = threading.RLock()
    events: list[str] = []

    def steps() -> Generator[int, None, None]:
        for i in range(3):
            events.append(f"start {i}")
            time.sleep(0.05)  # a statement under way
            events.append(f"end {i}")
            yield i

    reader = read_ahead(steps(), lock)
    assert next(reader) == 0
    time.sleep(0.01)  # the thread is inside step 1 now
    with lock:
        events.append("caller")
    assert list(reader) == [1, 2]
    at = events.index("caller")
    assert events[at - 1].startswith("end") and events[at + 1].startswith("start"), events
