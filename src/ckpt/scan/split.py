"""`check`'s one pass (ckpt.scan.rows) on several cores, with the answer of one process.

The pass's batches of threads are cut into `jobs` runs of consecutive batches with about
the same number of rows. The main process reads the first run itself, with the visitors of
the check; each other run is read by a forked worker (its own reader of the store,
`Store.fork`) with visitors of its own, from the same starting point as a single pass
would have there: empty, but for what the whole store decides (the id filter's size, the
time, the threads' sizes).

A run's work is taken as it is only when it is *clean*: no finding at all, no look-up by
id, nothing undecodable, no pickle and no class named. Then what it adds is counts
(rows, tags, versions, bytes), the plain threads that a store holding encrypted values
names, its open ends (ckpt.scan.copies `moved_from`) and the bits of its checkpoint ids;
those are added in the order of the runs, so every count, list and example is the one a
single pass makes. Whether one of its ids was met in an earlier run (a copied row) is
asked by reading the run's ids again (keys only) and testing them against the filter of
the runs before it. A run that is not clean,
whose worker failed, or one of whose ids may have been met before, is read again by the
main process, after the runs before it: its findings, errors and look-ups are then
exactly those of one process. Damage costs time, never a difference in the answer.

What passes between the processes is msgpack of counts, strings and bytes, made by this
program (ckpt.scan.rows's rows never leave the worker that read them); nothing from the
store is run, imported or unpickled.
"""

from __future__ import annotations

import gc
import os
import select
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, astuple, fields
from typing import TYPE_CHECKING, Any, Final

from ckpt.records.model import DumpQuery, StoreHealth, ThreadBytes
from ckpt.scan.rows import scan, thread_batches

if TYPE_CHECKING:
    from ckpt.records.types import PlaceRecord
    from ckpt.scan.check import Checkup
    from ckpt.scan.findings import Finding
    from ckpt.stores.base import Store

Progress = Callable[[int], None]

PROGRESS_ROWS: Final = 4096  # rows a worker reads between two reports to the main process
KEEP_ALIVE_SECONDS: Final = 10.0  # the main process's read kept open while it waits


def runs_of(sizes: dict[str, ThreadBytes], jobs: int) -> list[dict[str, ThreadBytes]]:
    """The pass's batches (thread_batches) cut into at most `jobs` runs of consecutive
    batches with about the same number of rows (each cut between the two batches nearest
    to its share); each run as the `sizes` of its threads, so that a pass over it makes
    the same batches a pass over everything makes there."""
    batches = list(thread_batches(sizes))
    weights = [sum(_rows(sizes[t]) for t in batch) for batch in batches]
    total = sum(weights)
    runs: list[dict[str, ThreadBytes]] = []
    run: dict[str, ThreadBytes] = {}
    filled = 0
    for batch, weight in zip(batches, weights, strict=True):
        cut = total * (len(runs) + 1) / jobs  # where the run being filled should end
        if run and len(runs) < jobs - 1 and filled + weight / 2 > cut:
            runs.append(run)
            run = {}
        run.update((t, sizes[t]) for t in batch)
        filled += weight
    if run:
        runs.append(run)
    return runs


def _rows(sized: ThreadBytes) -> int:
    return sized.checkpoints + sized.blobs + sized.writes


def shared_scan(
    store: Store,
    sizes: dict[str, ThreadBytes],
    checkup: Checkup,
    *,
    counted: bool,
    jobs: int,
    progress: Progress | None = None,
) -> None:
    """`scan(store, sizes, visitors)` for `checkup` (with RowSizes first when `counted`),
    its runs read by up to `jobs` processes (see the module's docstring). Called inside
    `store.reading()`: the workers read the view the main process reads, where the kind
    shares one (Postgres)."""
    tick = progress or (lambda n: None)
    visitors = checkup.pass_visitors(sizes, counted=counted)
    runs = runs_of(sizes, jobs)
    if len(runs) < 2:
        scan(store, sizes, visitors, progress=tick)
        return
    workers: list[_Worker] = []
    try:
        for run in runs[1:]:
            others = [fd for worker in workers for fd in worker.descriptors()]
            try:
                workers.append(_Worker(store, sizes, checkup, run, counted=counted, others=others))
            except OSError:  # no process to be had (a limit reached): the rest read here
                break

        def heard(n: int) -> None:
            tick(n)
            for worker in workers:
                worker.hear(tick, wait=False)

        scan(store, runs[0], visitors, progress=heard)
        for number, run in enumerate(runs[1:]):
            worker = workers[number] if number < len(workers) else None
            partial = worker.result(tick) if worker is not None else None
            if partial is None or not _merge(store, sizes, checkup, run, partial):
                # Read here, after the runs before it: as one process reads it. The rows
                # the worker said it read are not counted twice.
                done = worker.reported if worker is not None else 0
                scan(store, run, visitors, progress=_beyond(done, tick))
    finally:
        for worker in workers:
            worker.stop()


def _beyond(done: int, tick: Progress) -> Progress:
    """`tick` for a run read again: silent for the first `done` rows (already counted)."""
    left = [done]

    def heard(n: int) -> None:
        skipped = min(left[0], n)
        left[0] -= skipped
        if n > skipped:
            tick(n - skipped)

    return heard


class _Worker:
    """A forked process that checks one run of threads and says what it found."""

    def __init__(
        self,
        store: Store,
        sizes: dict[str, ThreadBytes],
        checkup: Checkup,
        run: dict[str, ThreadBytes],
        *,
        counted: bool,
        others: list[int],
    ) -> None:
        """Fork the worker; `others`: the descriptors of the workers forked before, which
        it closes."""
        from ckpt.analysis.fanout import memory_file

        said_r, said_w = os.pipe()
        self.slot = memory_file("ckpt-check")
        try:
            self.pid = os.fork()
        except OSError:
            for descriptor in (said_r, said_w, self.slot):
                os.close(descriptor)
            raise
        if self.pid == 0:  # the worker: never returns
            status = 1
            try:
                for descriptor in (said_r, *others):
                    os.close(descriptor)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                # What the parent had is never collected here: no finalizer of its
                # objects (a child process's handle, a file) runs in the worker.
                gc.freeze()
                _work(store, sizes, checkup, run, counted, self.slot, said_w)
                status = 0
            finally:
                os._exit(status)
        os.close(said_w)
        self.store = store
        self.said: int | None = said_r
        self.heard = b""  # what the worker said that was not read yet
        self.reported = 0  # rows it said it read
        self.size: int | None = None  # the size of its answer, once said

    def descriptors(self) -> list[int]:
        return [self.slot, *([] if self.said is None else [self.said])]

    def hear(self, tick: Progress, *, wait: bool) -> bool:
        """Read what the worker said (waiting for it with `wait`): its progress goes to
        `tick`. False once it said all it will."""
        if self.said is None:
            return False
        ready, _, _ = select.select([self.said], [], [], KEEP_ALIVE_SECONDS if wait else 0)
        if not ready:
            if wait:
                self.store.keep_alive()  # a Postgres read idle too long is ended
            return True
        more = os.read(self.said, 4096)
        if not more:
            os.close(self.said)
            self.said = None
            return False
        self.heard += more
        *lines, self.heard = self.heard.split(b"\n")
        for line in lines:
            if line[:1] == b"p" and line[1:].isdigit():
                rows = int(line[1:])
                self.reported += rows
                tick(rows)
            elif line[:1] == b"r" and line[1:].isdigit():
                self.size = int(line[1:])
        return True

    def result(self, tick: Progress) -> dict[str, Any] | None:
        """What the worker found, once it is done; None when its run is not clean or it
        failed (the main process then reads the run itself)."""
        while self.hear(tick, wait=True):
            pass
        if self.size is None:
            return None
        import ormsgpack

        data = os.pread(self.slot, self.size, 0)
        if len(data) != self.size:
            return None
        found: dict[str, Any] = ormsgpack.unpackb(data, option=ormsgpack.OPT_NON_STR_KEYS)
        return found

    def stop(self) -> None:
        if self.said is not None:
            os.close(self.said)
            self.said = None
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)  # a reader: nothing of the store to finish
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0
            os.close(self.slot)


def _work(
    store: Store,
    sizes: dict[str, ThreadBytes],
    checkup: Checkup,
    run: dict[str, ThreadBytes],
    counted: bool,
    slot: int,
    said: int,
) -> None:
    """The worker: check the run as a single pass would from its first batch on; write
    what it found into `slot` and its size on `said` when it is clean."""
    import ormsgpack

    from ckpt.scan.check import Checkup

    parent = os.getppid()
    reader = store.fork()
    if reader is None:
        return
    unsaid = [0]

    def tick(n: int) -> None:
        unsaid[0] += n
        if unsaid[0] >= PROGRESS_ROWS:
            if os.getppid() != parent:
                os._exit(1)  # the main process is gone: nobody waits for the answer
            os.write(said, b"p%d\n" % unsaid[0])
            unsaid[0] = 0

    with reader.reading():
        mine = Checkup(reader, sizes, now=checkup.now)
        scan(reader, run, mine.pass_visitors(sizes, counted=counted), progress=tick)
    if unsaid[0]:
        os.write(said, b"p%d\n" % unsaid[0])
    found = _partial(mine, sizes, run, counted=counted)
    if found is None:
        return
    try:
        data = ormsgpack.packb(found, option=ormsgpack.OPT_NON_STR_KEYS)
    except (TypeError, ValueError):  # what msgpack cannot carry (a damaged store's id)
        return
    offset = 0
    while offset < len(data):
        offset += os.pwrite(slot, data[offset:], offset)
    os.write(said, b"r%d\n" % len(data))


def _partial(
    checkup: Checkup, sizes: dict[str, ThreadBytes], run: dict[str, ThreadBytes], *, counted: bool
) -> dict[str, Any] | None:
    """What a run adds to the pass, as plain data; None when it cannot be added as it is
    (it asked the store about rows of other threads, or holds pickles)."""
    census, integrity = checkup.census, checkup.integrity
    if (
        integrity.lookups
        or integrity.shared_lookups
        or integrity.unsettled
        or census.pickles
        or census.pickle_values
        or census.types
    ):
        return None
    tally = integrity.tally
    return {
        "census": {name: getattr(census, name) for name in _CENSUS_COUNTS},
        "refusing": census.refusing,
        "tags": [
            [tag, part, t.plain, t.encrypted, sorted(t.ciphers)]
            for (tag, part), t in census.tags.items()
        ],  # fmt: skip
        "versions": list(census.versions.items()),
        "ext_counts": list(census.ext_counts.items()),
        "problems": census.problems,
        "encrypted_rows": integrity.encrypted_rows,
        "tally": {name: getattr(tally, name) or 0 for name in _TALLY_COUNTS},
        "findings": [_finding(f) for f in integrity.findings.by_code.values()],
        "plain": _finding(integrity.plain_threads),
        "sizes": [[t, *astuple(sizes[t])] for t in run] if counted else [],
        "bits": bytes(integrity.index.bits),
        "ends": integrity.open_ends,
    }


def _finding(finding: Finding) -> list[Any]:
    return [finding.kind.code, finding.count, finding.bytes, finding.thread_count,
            finding.threads, finding.places]  # fmt: skip


_CENSUS_COUNTS: Final = (
    "checkpoints",
    "blobs",
    "writes",
    "values",
    "threads",
    "encrypted",
    "decrypted",
    "hidden",
    "wrong_key",
    "undecodable",
)
# StoreHealth's counts (its lists, examples and namespaces, are `stats`' alone).
_TALLY_COUNTS: Final = tuple(f.name for f in fields(StoreHealth) if f.default_factory is MISSING)


def _merge(
    store: Store,
    sizes: dict[str, ThreadBytes],
    checkup: Checkup,
    run: dict[str, ThreadBytes],
    found: dict[str, Any],
) -> bool:
    """Add a run's answer to the pass's, as if its rows had been read here; False
    (nothing added) when one of its ids may have been met in the runs read before."""
    from ckpt.scan.census import MAX_UNDECODABLE, TagCount
    from ckpt.scan.integrity import OPEN_ENDS

    census, integrity = checkup.census, checkup.integrity
    index = integrity.index
    if len(found["bits"]) != len(index.bits) or any(
        index.holds(checkpoint_id) for checkpoint_id in _ids(store, run)
    ):
        return False
    for name, count in found["census"].items():
        setattr(census, name, getattr(census, name) + count)
    census.refusing = census.refusing or found["refusing"]
    for tag, part, plain, encrypted, ciphers in found["tags"]:
        entry = census.tags.setdefault((tag, part), TagCount())
        entry.plain += plain
        entry.encrypted += encrypted
        entry.ciphers.update(ciphers)
    for version, count in found["versions"]:
        census.versions[version] = census.versions.get(version, 0) + count
    for code, (count, malformed) in found["ext_counts"]:
        tally = census.ext_counts.setdefault(code, [0, 0])
        tally[0] += count
        tally[1] += malformed
    census.problems.extend(found["problems"][: MAX_UNDECODABLE - len(census.problems)])
    integrity.encrypted_rows += found["encrypted_rows"]
    for name, count in found["tally"].items():
        setattr(integrity.tally, name, (getattr(integrity.tally, name) or 0) + count)
    for code, *counts in found["findings"]:
        _add(integrity.findings.get(code), *counts)
    _add(integrity.plain_threads, *found["plain"][1:])
    for thread_id, *counts in found["sizes"]:
        sizes[thread_id] = ThreadBytes(*counts)
    room = max(OPEN_ENDS - len(integrity.open_ends), 0)
    integrity.open_ends.extend(
        (thread_id, ns, checkpoint_id, step, versions)
        for thread_id, ns, checkpoint_id, step, versions in found["ends"][:room]
    )
    bits = index.bits
    bits[:] = (int.from_bytes(bits, "little") | int.from_bytes(found["bits"], "little")).to_bytes(
        len(bits), "little"
    )
    return True


def _add(
    finding: Finding,
    count: int,
    size: int,
    thread_count: int,
    threads: list[str],
    places: list[PlaceRecord],
) -> None:
    """A later run's occurrences of a finding after those read before, as one pass adds
    them (Finding.add, close_batch): its threads all come after those before in id order,
    and its first places include the first ones not said before."""
    from ckpt.scan.findings import PLACES_SHOWN, THREADS_SHOWN

    finding.count += count
    finding.bytes += size
    finding.thread_count += thread_count
    if threads and len(finding.threads) < THREADS_SHOWN:
        finding.threads = sorted({*finding.threads, *threads})[:THREADS_SHOWN]
    for where in places:
        if len(finding.places) < PLACES_SHOWN and where not in finding.places:
            finding.places.append(where)


def _ids(store: Store, run: dict[str, ThreadBytes]) -> Iterator[Any]:
    """The run's checkpoint ids again, a batch at a time."""
    for batch in thread_batches(run):
        yield from store.checkpoint_ids(DumpQuery(thread_ids=tuple(batch)))


def processes(query: DumpQuery, jobs: int | None) -> int:
    """How many processes may share a check of `query` (1: one): more than one asked for
    or on hand, the whole store, a system that can fork."""
    from ckpt.analysis.fanout import auto_jobs, can_fork

    wanted = jobs if jobs is not None else auto_jobs()
    if wanted < 2 or query.thread_ids or query.checkpoint_ns is not None or not can_fork():
        return 1
    return wanted


def enough(sizes: dict[str, ThreadBytes], jobs: int | None) -> bool:
    """Whether a store this size is worth sharing when no number was asked for."""
    from ckpt.analysis.fanout import AUTO_MIN_CHECKPOINTS

    return jobs is not None or sum(s.checkpoints for s in sizes.values()) >= AUTO_MIN_CHECKPOINTS


__all__: Sequence[str] = ("enough", "processes", "runs_of", "shared_scan")
