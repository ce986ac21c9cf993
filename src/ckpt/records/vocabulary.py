"""Names and limits defined once: thread statuses and sort orders, the Postgres statement
timeout, how many matches an ambiguous id lists, and the file names of a `langgraph dev`
folder (which finding a store and reading one both need). Imported by the CLI at start-up: keep
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


# The three PersistentDict files of a `langgraph dev` folder: storage, writes, blobs.
PICKLE_NAMES: Final = (
    ".langgraph_checkpoint.1.pckl",
    ".langgraph_checkpoint.2.pckl",
    ".langgraph_checkpoint.3.pckl",
)
DEFAULT_TIMEOUT: Final = 5.0  # seconds: the Postgres statement timeout
FIND_LIMIT: Final = 50  # candidates a store returns for an id fragment

# What a store reads instead of a metadata value or body too large to fetch, followed by its
# size in bytes (ckpt.stores.sqlite.store: METADATA_LIMIT, BODY_LIMIT): no JSON starts with
# a NUL, nor does a serialized checkpoint.
TOO_LARGE: Final = b"\x00ckpt-too-large "
