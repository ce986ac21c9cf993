"""`ckpt demo`: write a real store by running real LangGraph graphs, to explore with ckpt."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def demo(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="Where to write the SQLite store.")
    ] = Path("ckpt-demo.sqlite"),
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace the file if it exists.")
    ] = False,
) -> None:
    """Write a demo store (chat with tools, interrupts, a failed fan-out, a subgraph, a fork).

    Needs LangGraph: pip install 'ckpt[demo]'. Example: ckpt demo && ckpt threads ckpt-demo.sqlite
    """
    import sqlite3

    from ckpt.errors import BadOption, CkptError, MissingDependency

    if path.is_dir():
        raise BadOption(f"{path} is a folder; give the path of the SQLite file to write")
    if path.exists() and not force:
        raise BadOption(f"{path} exists; pass --force to replace it")
    try:
        from ckpt.demo import write_demo_store
    except ImportError as exc:
        raise MissingDependency(
            f"ckpt demo needs LangGraph: pip install 'ckpt[demo]' ({exc})"
        ) from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        threads = write_demo_store(path)
    except (OSError, sqlite3.Error) as exc:
        raise CkptError(f"cannot write {path}: {exc}") from None
    typer.echo(f"wrote {path} with {len(threads)} threads: {', '.join(threads)}", err=True)
    typer.echo(f"next: ckpt threads {path}", err=True)


def register(app: typer.Typer) -> None:
    app.command()(demo)
