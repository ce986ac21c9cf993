"""ckpt: inspect and dump LangGraph checkpoint stores without running any code from them.

As a library::

    import ckpt
    with ckpt.open("chat.sqlite") as store:
        for thread in store.threads(status="interrupted"):
            print(thread["thread_id"], thread["interrupts"])

`open` returns a CheckpointStore whose methods return the records `--json` prints
(ckpt.records); `diff` compares two of them. Errors are ckpt.errors exceptions. The names
load on first use, so `ckpt --help` starts without them. See docs/api.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Ambiguous",
    "CheckpointRecord",
    "CheckpointStore",
    "CkptError",
    "DecodeError",
    "EncryptedError",
    "ExitCode",
    "NotACheckpointStore",
    "NotFound",
    "NotSupported",
    "RefusedGlobal",
    "StoreCorrupt",
    "StoreNotFound",
    "StoreUnreadable",
    "ThreadRecord",
    "__version__",
    "copy",
    "diff",
    "open",
]

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore, copy, diff, open
    from ckpt.errors import (
        Ambiguous,
        CkptError,
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
    )
    from ckpt.records import CheckpointRecord, ThreadRecord

_HOMES = {
    "CheckpointStore": "ckpt.api",
    "copy": "ckpt.api",
    "diff": "ckpt.api",
    "open": "ckpt.api",
    "CheckpointRecord": "ckpt.records",
    "ThreadRecord": "ckpt.records",
}


def __getattr__(name: str) -> Any:
    # PEP 562: the API loads on first use; the CLI's start-up never pays for it.
    if name in _HOMES:
        from ckpt import api, records

        module = api if _HOMES[name] == "ckpt.api" else records
        return getattr(module, name)
    if name in __all__:
        from ckpt import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'ckpt' has no attribute {name!r}")


def __dir__() -> list[str]:
    # What `dir(ckpt)` and a notebook's completion offer: the API, not this module's imports.
    return sorted(__all__)
