"""Options shared by every command, declared once so each command spells them the same."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


def _finite(value: float, name: str) -> float:
    if value != value:  # NaN passes every range check
        raise typer.BadParameter("must be a number of seconds", param_hint=name)
    return value


StoreArg = Annotated[
    str | None,
    typer.Argument(
        metavar="STORE",
        help="SQLite file, .langgraph_api folder or .pckl file, or postgresql:// URL. "
        "Default: --db, then $CKPT_DB, then the one store in the current folder.",
        show_default=False,
    ),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="CKPT_DB",
        metavar="STORE",
        help="The store (path or postgresql:// URL); also $CKPT_DB.",
        show_default=False,
    ),
]
AesKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--aes-key",
        metavar="KEY",
        help="Key for EncryptedSerializer stores (16, 24 or 32 bytes); also $LANGGRAPH_AES_KEY.",
        show_default=False,
    ),
]
SchemaOpt = Annotated[
    str | None,
    typer.Option(
        "--schema",
        metavar="NAME",
        help="Postgres schema holding the checkpoint tables.",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Postgres statement timeout in seconds.",
        min=0.1,
        max=86_400.0,  # also refuses inf and, through the callback, nan
        callback=lambda value: _finite(value, "--timeout"),
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema in docs/json.md).")]
NdjsonOpt = Annotated[bool, typer.Option("--ndjson", help="Print one JSON object per line.")]
NsOpt = Annotated[
    str | None,
    typer.Option(
        "--ns",
        metavar="NS",
        help="Checkpoint namespace (default: the root namespace '').",
        show_default=False,
    ),
]
FullOpt = Annotated[bool, typer.Option("--full", help="Show long values whole instead of cut.")]


class ThreadSort(StrEnum):
    updated = "updated"
    thread = "thread"
    checkpoints = "checkpoints"
    size = "size"
    step = "step"
    status = "status"


class ThreadStatus(StrEnum):
    done = "done"
    interrupted = "interrupted"
    error = "error"
    pending = "pending"
    unknown = "unknown"
