"""`ckpt demo`: write a real store by running real LangGraph graphs, to explore with ckpt."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def demo(
    path: Annotated[
        Path, typer.Argument(metavar="[PATH]", help="Where to write the SQLite store.")
    ] = Path("ckpt-demo.sqlite"),
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace the file if it exists.")
    ] = False,
) -> None:
    """Write a demo store (chat with tools, interrupts, a failed fan-out, a subgraph, a fork).

    Needs LangGraph: pip install 'langgraph-ckpt[demo]'.
    Example: ckpt demo && ckpt threads ckpt-demo.sqlite
    """
    import sqlite3

    from ckpt.api import require_demo, write_demo
    from ckpt.errors import BadOption, CkptError

    if path.is_dir():
        raise BadOption(f"{path} is a folder; give the path of the SQLite file to write")
    if path.exists() and not force:
        raise BadOption(f"{path} exists; pass --force to replace it")
    require_demo()  # before anything is removed
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        threads = write_demo(path)
    except (OSError, sqlite3.Error) as exc:
        raise CkptError(f"cannot write {path}: {exc}") from None
    typer.echo(f"wrote {path} with {len(threads)} threads: {', '.join(threads)}", err=True)
    typer.echo(f"next: {_this_command()} threads {path}", err=True)


def _this_command() -> str:
    """How the user can run ckpt again: `ckpt` when that is on PATH and is this one, else
    the path this one was started by (`.venv/bin/ckpt` after `make demo`)."""
    import os
    import shutil
    import sys

    started = sys.argv[0]
    on_path = shutil.which("ckpt")
    if on_path and os.path.exists(started) and os.path.samefile(on_path, started):
        return "ckpt"
    if os.sep in started and os.path.exists(started):
        return os.path.relpath(started)
    return f"{os.path.relpath(sys.executable)} -m ckpt"


def register(app: typer.Typer) -> None:
    app.command(short_help="Write a demo store of real LangGraph runs to try ckpt on.")(demo)
