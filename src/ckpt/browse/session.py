"""The browser's side of the store: every query runs on one thread of its own, in order,
so that the screen never waits for the store and no connection is used by two threads at
once. Queries go through the library (ckpt.api) and come back as records.

Each query belongs to a lane ("threads", "history", "checkpoint" ...); a query that a newer
one of its lane replaced before it started is skipped (`Superseded`), so scrolling through
a history queues no backlog.
"""

from __future__ import annotations

import re
import shlex
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ckpt.browse.model import History, Key, key_of
from ckpt.errors import Ambiguous, NotFound

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore
    from ckpt.records.types import CheckpointRecord, ThreadRecord

T = TypeVar("T")
CACHED_CHECKPOINTS = 16  # records with their values: the diff's parent and a step back and forth
CACHED_HISTORIES = 4
PREFETCH_LIMIT = 2_000  # checkpoints: read a thread this long only when the screen asks


class Superseded(Exception):
    """A newer query of the same lane was asked for before this one started."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """One checkpoint as `ckpt show --json --blobs` gives it, and whether it is its
    namespace's newest (then `next` is also what the thread still has to run)."""

    record: CheckpointRecord
    latest: bool


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """How the store was named, to write command lines that open it again."""

    location: str  # what the user gave (a path or a URL)
    shown: str  # for titles: the file or folder name, or the URL without its password
    schema: str | None = None
    prefix: str | None = None
    database: str | None = None

    @classmethod
    def of(
        cls,
        given: str,
        location: str,
        schema: str | None = None,
        prefix: str | None = None,
        database: str | None = None,
    ) -> StoreSpec:
        """The store as the user named it (`given`), opened at `location`. A URL is
        named by its location, without its password (libpq finds it again in PGPASSWORD
        or ~/.pgpass): command lines, the clipboard and the screen never show it. A file
        or folder keeps the path as given, and shows its name."""
        if "://" in given:
            return cls(location, location, schema, prefix, database)
        from pathlib import Path

        return cls(given, Path(given).name or given, schema, prefix, database)

    def options(self) -> list[str]:
        words = ["--db", self.location]
        if self.schema:
            words += ["--schema", self.schema]
        if self.prefix:
            words += ["--prefix", self.prefix]
        if self.database:
            words += ["--database", self.database]
        return words


class Session:
    """A read-only store and the thread that reads it."""

    def __init__(
        self, store: CheckpointStore, spec: StoreSpec, *, thread_id: str | None = None
    ) -> None:
        self.store = store
        self.spec = spec
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-browse-store")
        self._asked: dict[str, int] = {}
        self._records: OrderedDict[Key, Loaded] = OrderedDict()
        self._histories: OrderedDict[str, History] = OrderedDict()
        # The first queries start now, while the caller is still importing Textual: the
        # threads, then the history and newest checkpoint of the thread the screen opens
        # at, so that they are ready when it asks.
        self.first_threads = self.submit("threads", self.read_threads)
        self._pool.submit(self._prefetch, thread_id)

    def submit(self, lane: str, work: Callable[..., T], *args: object) -> Future[T]:
        """Run `work(*args)` on the store's thread after the queries already asked for."""
        ticket = self._asked[lane] = self._asked.get(lane, 0) + 1

        def job() -> T:
            if self._asked[lane] != ticket:
                raise Superseded(lane)
            return work(*args)

        return self._pool.submit(job)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- queries: these run on the store's thread ----------------------------------------------
    def read_threads(self) -> tuple[list[ThreadRecord], list[str]]:
        """Every thread (`ckpt threads --json`), and what the store has to say about them
        (encrypted threads without a key ...), said once."""
        records = self.store.threads()
        notices = list(self.store.notices)
        self.store.notices.clear()
        return records, notices

    def read_history(self, thread_id: str) -> History:
        """The thread's tree (`ckpt history`), checkpoints without values."""
        history = self._histories.get(thread_id)
        if history is None:
            history = History.from_tree(thread_id, self.store.history_tree(thread_id))
            self._histories[thread_id] = history
            while len(self._histories) > CACHED_HISTORIES:
                self._histories.popitem(last=False)
        else:
            self._histories.move_to_end(thread_id)
        return history

    def _prefetch(self, thread_id: str | None) -> None:
        """The history and newest checkpoint of the thread the browser opens at: the one
        asked for, else the most recently updated (the first of `ckpt threads`)."""
        try:
            records, _ = self.first_threads.result()
            thread = next((r for r in records if r["thread_id"] == thread_id), None)
            thread = thread or (records[0] if records else None)
            if thread is None or thread["checkpoint_id"] is None:
                return
            if thread["checkpoints"] > PREFETCH_LIMIT:
                return  # a long history would hold the GIL while the screen starts
            self.read_history(thread["thread_id"])
            self.read_checkpoint(Key(thread["thread_id"], "", thread["checkpoint_id"]))
        except Exception:  # a guess only: the screen's own query reports it
            return

    def read_checkpoint(self, key: Key) -> Loaded:
        """One checkpoint with its values, by its full key: ids are unique per thread only
        (a copied store repeats them), so the thread and namespace are part of the query."""
        cached = self._records.get(key)
        if cached is not None:
            self._records.move_to_end(key)
            return cached
        found = list(
            self.store.dump(
                threads=[key.thread_id],
                ns=key.checkpoint_ns,
                since_id=key.checkpoint_id,
                until_id=key.checkpoint_id,
            )
        )
        if not found:
            raise NotFound(
                f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r} is no longer "
                f"in {self.store.location}"
            )
        loaded = Loaded(found[0], self.store.is_latest(found[0]))
        self._records[key] = loaded
        while len(self._records) > CACHED_CHECKPOINTS:
            self._records.popitem(last=False)
        return loaded

    def forget(self) -> None:
        """Drop the cached records (a reload: the store may have changed). Called from the
        screen: the store thread clears them before its next query."""
        self._pool.submit(self._forget)

    def _forget(self) -> None:
        self._records.clear()
        self._histories.clear()

    def selector(self, record: CheckpointRecord, history: History | None) -> Selector:
        """What `ckpt show` takes to find this checkpoint again: its id, when that names it
        alone in the store; else THREAD~N back from its namespace's newest checkpoint."""
        key = key_of(record)
        try:
            found = self.store.resolve(key.checkpoint_id)
        except Ambiguous:
            found = None
        if (
            found is not None
            and Key(found.thread_id, found.checkpoint_ns, found.checkpoint_id) == key
        ):
            return Selector(key.checkpoint_id, key.checkpoint_ns)
        if history is not None:
            newest = self.store.resolve(key.thread_id, ns=key.checkpoint_ns)
            back = history.generations(
                Key(newest.thread_id, newest.checkpoint_ns, newest.checkpoint_id), key
            )
            if back is not None:
                text = key.thread_id if back == 0 else f"{key.thread_id}~{back}"
                return Selector(text, key.checkpoint_ns, by_thread=True)
        return Selector(key.checkpoint_id, key.checkpoint_ns, ambiguous=True)


@dataclass(frozen=True, slots=True)
class Selector:
    """A checkpoint as the CLI names it: its id, or THREAD / THREAD~N with its namespace."""

    text: str
    checkpoint_ns: str = ""
    by_thread: bool = False  # THREAD~N: needs --ns when the namespace is not the root
    ambiguous: bool = False  # the id is in several threads and no THREAD~N reaches it

    def words(self) -> list[str]:
        if self.by_thread and self.checkpoint_ns:
            return [self.text, "--ns", self.checkpoint_ns]
        return [self.text]


# Words a shell reads as they are: shlex's own safe set, and `~` after the first character
# (THREAD~N: a tilde expands only at the start of a word).
_PLAIN_WORD = re.compile(r"[\w@%+=:,./-][\w@%+=:,./~-]*", re.ASCII)


def shell_join(words: list[str]) -> str:
    """Words as one command line that a POSIX shell splits back into the same words."""
    return " ".join(w if _PLAIN_WORD.fullmatch(w) else shlex.quote(w) for w in words)


def show_command(spec: StoreSpec, selector: Selector) -> str:
    """The `ckpt show` line that prints this checkpoint with its values."""
    return shell_join(["ckpt", "show", *selector.words(), "--blobs", *spec.options()])


def diff_command(spec: StoreSpec, a: Selector, b: Selector) -> str | None:
    """The `ckpt diff A B` line, or None when no line can name both: one --ns serves A and
    B, so THREAD~N selectors of two namespaces cannot share one."""
    words = ["ckpt", "diff", a.text, b.text]
    wanted = {s.checkpoint_ns for s in (a, b) if s.by_thread}
    if len(wanted) > 1:
        return None
    if wanted and (ns := wanted.pop()):
        if any(s.checkpoint_ns != ns for s in (a, b)):
            return None  # --ns would hide the other checkpoint from its id
        words += ["--ns", ns]
    return shell_join([*words, *spec.options()])
