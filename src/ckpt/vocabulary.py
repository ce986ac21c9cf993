"""Names and limits defined once: thread statuses and sort orders, the Postgres statement
timeout, and how many matches an ambiguous id lists. Imported by the CLI at start-up: keep
it tiny."""

from __future__ import annotations

from typing import Final, Literal

Status = Literal["done", "interrupted", "error", "pending", "unknown"]
# The order `threads --sort status` uses: what needs attention first.
STATUSES: Final[tuple[Status, ...]] = ("error", "interrupted", "pending", "unknown", "done")
ThreadSort = Literal["updated", "thread", "checkpoints", "size", "step", "status"]
THREAD_SORTS: Final[tuple[ThreadSort, ...]] = (
    "updated",
    "thread",
    "checkpoints",
    "size",
    "step",
    "status",
)
# What `pip install` takes (the PyPI project `ckpt` is an unrelated one): install hints.
DISTRIBUTION: Final = "langgraph-ckpt"


def install_hint(extra: str) -> str:
    """`pip install 'langgraph-ckpt[EXTRA]'`: the one spelling of every install hint."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


DEFAULT_TIMEOUT: Final = 5.0  # seconds: the Postgres statement timeout
FIND_LIMIT: Final = 50  # candidates a store returns for an id fragment
