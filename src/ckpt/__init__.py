"""ckpt: inspect and dump LangGraph checkpoint stores without running any code from them.

As a library::

    import ckpt
    with ckpt.open("chat.sqlite") as store:
        for thread in store.threads(status="interrupted"):
            print(thread["thread_id"], thread["interrupts"])

`open` returns a CheckpointStore whose methods return the records `--json` prints
(ckpt.records.types); `diff` compares two checkpoints, `copy`, `prune` and `vacuum` are the
commands that write (only when told to apply). Errors are ckpt.errors exceptions. The names
load on first use, so `ckpt --help` starts without them. See docs/api.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Ambiguous",
    "BadOption",
    "CheckpointRecord",
    "CheckpointStore",
    "CkptError",
    "Comparison",
    "CopyInterrupted",
    "CopyRecord",
    "DecodeError",
    "EncryptedError",
    "ExitCode",
    "NotACheckpointStore",
    "NotFound",
    "NotSupported",
    "PruneRecord",
    "RefusedGlobal",
    "StoreCorrupt",
    "StoreNotFound",
    "StoreUnreadable",
    "ThreadRecord",
    "Unsafe",
    "__version__",
    "copy",
    "diff",
    "migrate",
    "open",
    "prune",
    "vacuum",
]

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore, Comparison, copy, diff, migrate, open, prune, vacuum
    from ckpt.errors import (
        Ambiguous,
        BadOption,
        CkptError,
        CopyInterrupted,
        DecodeError,
        EncryptedError,
        ExitCode,
        NotACheckpointStore,
        NotFound,
        NotSupported,
        RefusedGlobal,
        StoreCorrupt,
        StoreNotFound,
        StoreUnreadable,
        Unsafe,
    )
    from ckpt.records.runs import CopyRecord, PruneRecord
    from ckpt.records.types import CheckpointRecord, ThreadRecord

_HOMES = {
    "CheckpointStore": "ckpt.api",
    "Comparison": "ckpt.api",
    "copy": "ckpt.api",
    "diff": "ckpt.api",
    "migrate": "ckpt.api",
    "open": "ckpt.api",
    "prune": "ckpt.api",
    "vacuum": "ckpt.api",
    "CheckpointRecord": "ckpt.records.types",
    "CopyRecord": "ckpt.records.runs",
    "PruneRecord": "ckpt.records.runs",
    "ThreadRecord": "ckpt.records.types",
}


def __getattr__(name: str) -> Any:
    # PEP 562: the API loads on first use; the CLI's start-up never pays for it.
    if name in _HOMES:
        from ckpt import api
        from ckpt.records import runs, types

        homes = {"ckpt.api": api, "ckpt.records.runs": runs, "ckpt.records.types": types}
        return getattr(homes[_HOMES[name]], name)
    if name in __all__:
        from ckpt import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'ckpt' has no attribute {name!r}")


def __dir__() -> list[str]:
    # What `dir(ckpt)` and a notebook's completion offer: the API, not this module's imports.
    return sorted(__all__)
