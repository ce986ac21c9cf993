"""Reading a server's next batch while the caller decodes this one.

A server store's dump alternates two waits: ckpt waits for the server to answer a batch's
queries, then the server waits for ckpt to decode the batch. `read_ahead` runs the reading
generator one item ahead in a thread of its own, so the server works on the next batch
(on another core, or while the network carries it) as ckpt decodes the current one.

The generator runs in that one thread from its first step to its close, so a transaction it
opens, a cursor it holds, or a lock it takes stays in one thread. Its exceptions reach the
caller at the item where they happened; a caller that stops early (`--limit`, a closed
pipe, Ctrl-C) waits for the step in flight, then the generator is closed in its thread.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Final, TypeVar

T = TypeVar("T")
_END: Final = object()
# The interpreter hands the GIL to a waiting thread every switch interval (5 ms by default):
# a reader woken by the server's answer waits that long behind the decoding thread, once
# per round trip. A shorter interval while reading ahead keeps the server busy.
SWITCH_INTERVAL: Final = 0.0005


def read_ahead(items: Generator[T, None, None]) -> Iterator[T]:
    """`items`, each produced in a worker thread while the caller works on the one before."""
    with ThreadPoolExecutor(1, thread_name_prefix="ckpt-read") as pool, _quick_switch():
        pending = pool.submit(next, items, _END)
        try:
            while True:
                item = pending.result()
                if item is _END:
                    return
                pending = pool.submit(next, items, _END)
                yield item  # type: ignore[misc]
        finally:
            # The step in flight finishes first (a generator cannot be closed while it runs);
            # then it is closed in its own thread, its transaction with it.
            pending.cancel() or pending.exception()
            pool.submit(items.close).result()


_switch_lock = threading.Lock()
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
