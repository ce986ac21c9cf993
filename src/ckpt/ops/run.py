"""What every writing verb of the API returns (`prune`, `copy`, `migrate`): one run object.

A run is iterated to do its work a thread at a time (or, without `apply`, to plan it),
yielding each thread's record; around those records it holds the rest of the command's
record: `head` (what was asked, known before the first thread), `totals` (complete once
the iteration ends), `notices` (what the store or target had to say), `hidden` (values it
could not show) and `refusal()` (the error the run ends with, known once it has run).
A command only renders a run (ckpt.cli.common.render_run); `record()` is the whole
record at once, for the library's own callers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from ckpt.errors import CkptError, Unsafe


class Run:
    """The part every run shares: a subclass (a dataclass) sets `head` and `totals` and
    yields its thread records from `__iter__`."""

    head: Mapping[str, Any]
    totals: Mapping[str, Any]
    first_refused: Mapping[str, Any] | None = None  # kept by `count`, for `refusal()`

    def __iter__(self) -> Iterator[Any]:  # pragma: no cover - every run defines it
        raise NotImplementedError

    @property
    def notices(self) -> list[str]:
        """What the store or target had to say, read and cleared by the caller."""
        return []

    @property
    def hidden(self) -> list[str]:
        """Values the run could not show (encrypted without a key), one line each."""
        return []

    def refusal(self) -> CkptError | None:
        """The error the run ends with once it has run (threads refused), or None."""
        return None

    def count(
        self, record: Mapping[str, Any], aside: Mapping[str, str], parts: tuple[str, ...]
    ) -> None:
        """One thread's record counted into `totals`: refused (the first one kept), set
        aside (`aside`: its action -> the total that counts it), or done (one more thread,
        and the record's `parts` added to theirs)."""
        totals = cast("dict[str, int]", self.totals)
        action = record["action"]
        if action == "refused":
            totals["refused"] += 1
            self.first_refused = self.first_refused or record
        elif action in aside:
            totals[aside[action]] += 1
        else:
            totals["threads"] += 1
            for part in parts:
                totals[part] += record[part]

    @staticmethod
    def refused(first: Mapping[str, Any] | None, count: int) -> Unsafe | None:
        """The refusal of a run that refused `count` threads, `first` the first of them
        (exit 12): its reason, and how many more there were."""
        if first is None:
            return None
        more = count - 1
        return Unsafe(
            f"{first['thread_id']}: {first['refused']}"
            + (f" (and {more} more threads refused)" if more else "")
        )

    def record(self) -> dict[str, Any]:
        """The whole record (`--json`): the head, every thread's record, the totals. Runs
        the iteration; raises nothing of its own (see `refusal()`)."""
        threads = list(self)
        return {**self.head, "threads": threads, "totals": self.totals}
