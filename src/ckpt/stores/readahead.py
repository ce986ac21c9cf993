"""Reading a server's next batch while the caller decodes this one.

A server store's dump alternates two waits: ckpt waits for the server to answer a batch's
queries, then the server waits for ckpt to decode the batch. `read_ahead` runs the reading
generator one item ahead in a thread of its own, so the server works on the next batch
(on another core, or while the network carries it) as ckpt decodes the current one.

The generator runs in that one thread from its first step to its close, so a transaction it
opens or a cursor it holds stays in one thread. Its exceptions reach the caller at the item
where they happened. A caller that stops early (`--limit`, a closed pipe, Ctrl-C) waits for
the step in flight and the generator's close, so the connection is free when it goes on;
but never while the garbage collector finalizes an abandoned reader: that runs wherever an
allocation happened to trigger it (inside an import, holding the import lock the reading
thread may need), so then the thread is only told to stop, and closes the generator itself.
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Final, TypeVar

T = TypeVar("T")
_END: Final = object()
_NO_LOCK: Final[AbstractContextManager[Any]] = nullcontext()
_NEXT: Final = "next"
_STOP: Final = "stop"
# The interpreter hands the GIL to a waiting thread every switch interval (5 ms by default):
# a reader woken by the server's answer waits that long behind the decoding thread, once
# per round trip. A shorter interval while reading ahead keeps the server busy.
SWITCH_INTERVAL: Final = 0.0005


def read_ahead(
    items: Generator[T, None, None], lock: AbstractContextManager[Any] = _NO_LOCK
) -> Iterator[T]:
    """`items`, each produced in a worker thread while the caller works on the one before.
    The thread holds `lock` for each step and for the close: the caller's own statements on
    the same connection take it too, so they never land in the middle of one."""
    asks: queue.SimpleQueue[str] = queue.SimpleQueue()
    answers: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    worker = threading.Thread(
        target=_serve, args=(items, lock, asks, answers), name="ckpt-read", daemon=True
    )
    with _quick_switch():
        asks.put(_NEXT)
        worker.start()
        try:
            while True:
                ok, item = answers.get()
                if not ok:
                    raise item
                if item is _END:
                    return
                asks.put(_NEXT)  # the next item is read while the caller has this one
                yield item
        finally:
            asks.put(_STOP)
            if not _collecting:
                worker.join()


def _serve(
    items: Generator[Any, None, None],
    lock: AbstractContextManager[Any],
    asks: queue.SimpleQueue[str],
    answers: queue.SimpleQueue[tuple[bool, Any]],
) -> None:
    try:
        while asks.get() == _NEXT:
            try:
                with lock:
                    item = next(items, _END)
            except BaseException as exc:  # to the caller, at its item
                answers.put((False, exc))
                return
            answers.put((True, item))
            if item is _END:
                return
    finally:
        with lock:
            items.close()


# Whether the cyclic garbage collector runs (in any thread): a reader finalized then must
# not wait for its thread.
_collecting = False


def _gc_phase(phase: str, info: dict[str, int]) -> None:
    global _collecting
    _collecting = phase == "start"


gc.callbacks.append(_gc_phase)

_switch_lock = threading.RLock()
_readers = 0  # read_ahead calls under way (in any thread)
_interval_before = 0.005


@contextmanager
def _quick_switch() -> Iterator[None]:
    """The shorter switch interval while any read_ahead runs: set by the first, restored
    by the last (two may overlap in any order, as an MCP server's calls do)."""
    global _readers, _interval_before
    with _switch_lock:
        if _readers == 0:
            _interval_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_interval_before, SWITCH_INTERVAL))
        _readers += 1
    try:
        yield
    finally:
        with _switch_lock:
            _readers -= 1
            if _readers == 0:
                sys.setswitchinterval(_interval_before)
