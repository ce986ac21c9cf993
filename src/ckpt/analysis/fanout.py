"""`dump`'s NDJSON lines made on several cores: the store's threads cut into runs of
consecutive threads, each run dumped by one of `jobs` processes, the lines written out in
the store's own order, as one process writes them.

The main process dumps every `jobs`-th run itself and reads the others from workers
forked at the start. A worker opens its own reader of the store (`Store.fork`), writes
each run's lines into a file in memory (an unlinked temporary file where the system has
none), and says on a pipe when the run is
done; it writes at most AHEAD runs before the main process has read them, so memory and
disk stay bounded whatever the store's size. Anything but a clean run (an error, values
that stay encrypted, a notice, a refused global) is not shipped: the main process dumps
that run and every one after it itself, so errors, notices and exit codes are exactly
those of one process. Nothing here runs code from the store: the workers are this
program, forked; what passes between them is JSON text and byte counts.

Each process reads the store in one read transaction (`Store.reading`): every thread is
read whole from one snapshot. On Postgres it is one snapshot for all (the workers take
the one the main process exports); on SQLite a store written during the dump may show
the threads of different processes a moment apart. `jobs=1` reads it all from one.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ckpt.records.model import DumpQuery
    from ckpt.records.types import CheckpointRecord
    from ckpt.stores.base import Store

MAX_AUTO_JOBS: Final = 4
AUTO_MIN_CHECKPOINTS: Final = 5_000  # below this one process is as fast: no workers
RUNS_PER_JOB: Final = 8  # runs of threads per process, so none waits long on another
RUN_CHECKPOINTS: Final = (100, 2_000)  # the bounds of a run's size, in checkpoints
AHEAD: Final = 2  # runs a worker may have written that the main process has not read
FLUSH_BYTES: Final = 1 << 20  # a worker writes its lines out a MB at a time
PIECE_BYTES: Final = 1 << 16  # the main process's lines, joined, a write at a time
WRITE_BUFFERS: Final = 1024  # lines per write, at most (IOV_MAX)
KEEP_ALIVE_SECONDS: Final = 10.0  # the main process's read kept open while it waits


def auto_jobs() -> int:
    """One process per core this process may run on, up to MAX_AUTO_JOBS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_AUTO_JOBS))


def can_fork() -> bool:
    """Whether this system has what the workers need: fork (not Windows), and positioned
    reads and writes of several buffers (Linux, the BSDs, macOS 11 on)."""
    return all(hasattr(os, name) for name in ("fork", "preadv", "pwritev"))


def thread_runs(counts: Sequence[tuple[str, int]], jobs: int) -> list[tuple[str, ...]]:
    """Consecutive threads grouped into runs of about the same number of checkpoints:
    RUNS_PER_JOB per process, within RUN_CHECKPOINTS (a thread is never split)."""
    total = sum(count for _, count in counts)
    low, high = RUN_CHECKPOINTS
    size = min(max(total // (jobs * RUNS_PER_JOB), low), high)
    runs: list[tuple[str, ...]] = []
    run: list[str] = []
    filled = 0
    for thread_id, count in counts:
        run.append(thread_id)
        filled += count
        if filled >= size:
            runs.append(tuple(run))
            run, filled = [], 0
    if run:
        runs.append(tuple(run))
    return runs


def ndjson_bytes(
    store: Store,
    query: DumpQuery,
    *,
    values: bool,
    hidden: list[CheckpointRecord],
    jobs: int | None,
) -> Iterator[bytes]:
    """The NDJSON of `dump_records(store, query)` as UTF-8, in pieces (up to PIECE_BYTES
    of this process's lines, up to FLUSH_BYTES of a worker's), made by up to `jobs`
    processes (None: auto_jobs() on a store of AUTO_MIN_CHECKPOINTS or more). One process
    when the store's kind cannot be read from several (its `dump_threads` is None) or
    the query names threads or a namespace."""
    if not _may_share(query, jobs):  # the store's own read, as `dump` makes it
        yield from _lines(store, query, values=values, hidden=hidden)
        return
    from ckpt.decoders.memo import shared_exts

    # One read for the threads listed and those the main process reads; one memo of
    # decoded messages for all its runs (threads may share messages: a system prompt).
    with store.reading(), shared_exts():
        planned = _plan(store, query, jobs)
        if planned is None:
            yield from _lines(store, query, values=values, hidden=hidden)
            return
        runs, count = planned
        workers: list[_Worker] = []
        try:
            for index in range(1, count):
                others = [fd for worker in workers for fd in worker.descriptors()]
                workers.append(_Worker(store, query, runs[index::count], values, others))
            alone = False
            for number, run in enumerate(runs):
                if not alone and number % count:
                    block = workers[number % count - 1].take()
                    if block is not None:
                        yield from block
                        continue
                    alone = True  # this run, and every one after it, here
                    _stop(workers)
                part = replace(query, thread_ids=run)
                yield from _lines(store, part, values=values, hidden=hidden)
        finally:
            _stop(workers)


def _plan(
    store: Store, query: DumpQuery, jobs: int | None
) -> tuple[list[tuple[str, ...]], int] | None:
    """(every run of threads in order, how many processes dump them), or None for one."""
    counts = store.dump_threads()
    if counts is None:
        return None
    if jobs is None:
        if sum(count for _, count in counts) < AUTO_MIN_CHECKPOINTS:
            return None
        jobs = auto_jobs()
    runs = thread_runs(counts, jobs)
    jobs = min(jobs, len(runs))
    return (runs, jobs) if jobs > 1 else None


def _may_share(query: DumpQuery, jobs: int | None) -> bool:
    """Whether a dump may be shared at all, before the store is asked anything: more than
    one process asked for or on hand, the whole store (no threads or namespace named), a
    system that can fork."""
    wanted = jobs if jobs is not None else auto_jobs()
    return wanted > 1 and not query.thread_ids and query.checkpoint_ns is None and can_fork()


def _lines(
    store: Store, query: DumpQuery, *, values: bool, hidden: list[CheckpointRecord]
) -> Iterator[bytes]:
    """This process's lines, joined into pieces of about PIECE_BYTES: a write each, not a
    write a line (stdout has no buffer of its own under PYTHONUNBUFFERED)."""
    from ckpt.analysis.reader import dump_lines

    batch: list[bytes] = []
    filled = 0
    try:
        for line in dump_lines(store, query, values=values, hidden=hidden):
            batch.append(line)
            filled += len(line)
            if filled >= PIECE_BYTES:
                piece, batch, filled = b"".join(batch), [], 0
                yield piece
    except Exception:
        if batch:  # the lines before an error are written, as one process writes them
            yield b"".join(batch)
        raise
    if batch:
        yield b"".join(batch)


def _stop(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


class _Worker:
    """A forked process that dumps every `count`-th run of threads into its files."""

    def __init__(
        self,
        store: Store,
        query: DumpQuery,
        runs: list[tuple[str, ...]],
        values: bool,
        others: list[int],
    ) -> None:
        """Fork the worker; `others`: the descriptors of the workers forked before, which
        it closes (one that kept another's `go` pipe open would keep that one waiting
        after the main process is gone)."""
        self.slots = [memory_file("ckpt-dump") for _ in range(AHEAD)]
        self.taken = 0
        done_r, done_w = os.pipe()
        go_r, go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the worker: never returns
            status = 1
            try:
                for descriptor in (done_r, go_w, *others):
                    os.close(descriptor)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                # What the parent had is never collected here: no finalizer of its
                # objects (a child process's handle, a file) runs in the worker.
                gc.freeze()
                _work(store, query, runs, values, self.slots, done_w, go_r)
                status = 0
            finally:
                os._exit(status)
        os.close(done_w)
        os.close(go_r)
        self.store = store
        self.done = done_r
        self.said = b""  # what the worker has said and take() not yet read
        self.go: int | None = go_w

    def descriptors(self) -> list[int]:
        return [self.done, *([] if self.go is None else [self.go]), *self.slots]

    def take(self) -> Iterator[bytes] | None:
        """The lines of this worker's next run, or None when it has none to give (it
        failed, or met something the main process must meet itself)."""
        if self.go is None:
            return None
        while b"\n" not in self.said:
            # While it waits, the main process keeps its own read open (a Postgres session
            # idle in its transaction is ended by the server after a while).
            ready, _, _ = select.select([self.done], [], [], KEEP_ALIVE_SECONDS)
            if not ready:
                self.store.keep_alive()
                continue
            more = os.read(self.done, 4096)
            if not more:
                return None
            self.said += more
        line, self.said = self.said.split(b"\n", 1)
        said = line.split()
        if len(said) != 1 or not said[0].isdigit():
            return None
        slot = self.slots[self.taken % AHEAD]
        self.taken += 1
        return self._read(slot, int(said[0]))

    def _read(self, slot: int, size: int) -> Iterator[bytes]:
        offset = 0
        while offset < size:
            piece = os.pread(slot, min(FLUSH_BYTES, size - offset), offset)
            if not piece:
                raise OSError(f"a dump worker's file ended at {offset:,} of {size:,} bytes")
            offset += len(piece)
            yield piece
        if self.go is not None:
            try:
                os.write(self.go, b".")  # the slot is free again
            except OSError:
                pass

    def stop(self) -> None:
        if self.go is None:
            return
        os.close(self.go)
        self.go = None
        try:
            os.kill(self.pid, signal.SIGKILL)  # a reader: nothing of the store to finish
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.done)
        for slot in self.slots:
            os.close(slot)


def memory_file(name: str) -> int:
    """A file for what a worker hands the main process: in memory where the system has
    them (nothing written to disk), else an unlinked temporary file. Either is gone with
    the last process that holds it."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create(name, os.MFD_CLOEXEC)
    descriptor, path = tempfile.mkstemp(prefix=name + "-")
    os.unlink(path)
    return descriptor


def _work(
    store: Store,
    query: DumpQuery,
    runs: list[tuple[str, ...]],
    values: bool,
    slots: list[int],
    done: int,
    go: int,
) -> None:
    """The worker's loop: each run's lines into the next slot, its size on `done`; a
    run that is not clean ends the loop unsaid (the main process then dumps it)."""
    from ckpt.analysis.reader import dump_lines
    from ckpt.decoders.memo import shared_exts

    reader = store.fork()
    if reader is None:
        return
    with reader.reading(), shared_exts():  # one memo for all its runs, as above
        for number, run in enumerate(runs):
            if number >= AHEAD and not os.read(go, 1):
                return  # the main process stopped reading
            slot = slots[number % AHEAD]
            hidden: list[CheckpointRecord] = []
            said = (len(reader.notices), len(reader.refused))
            offset = 0
            batch: list[bytes] = []
            filled = 0
            part = replace(query, thread_ids=run)
            for line in dump_lines(reader, part, values=values, hidden=hidden):
                batch.append(line)
                filled += len(line)
                if filled >= FLUSH_BYTES or len(batch) >= WRITE_BUFFERS:
                    offset = _write(slot, batch, offset)
                    batch, filled = [], 0
            offset = _write(slot, batch, offset)
            if hidden or (len(reader.notices), len(reader.refused)) != said:
                return
            os.write(done, b"%d\n" % offset)


def _write(slot: int, lines: list[bytes], offset: int) -> int:
    """The lines written at `offset` with one system call (no joined copy of them)."""
    while lines:
        written = os.pwritev(slot, lines, offset)
        offset += written
        while lines and written >= len(lines[0]):
            written -= len(lines.pop(0))
        if written:
            lines[0] = lines[0][written:]
    return offset
