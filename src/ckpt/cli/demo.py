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
    from ckpt.errors import CkptError, MissingDependency

    if path.exists() and not force:
        raise CkptError(f"{path} exists; pass --force to replace it")
    try:
        from ckpt.demo import write_demo_store
    except ImportError as exc:
        raise MissingDependency(
            f"ckpt demo needs LangGraph: pip install 'ckpt[demo]' ({exc})"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    threads = write_demo_store(path)
    typer.echo(f"wrote {path} with {len(threads)} threads: {', '.join(threads)}", err=True)
    typer.echo(f"next: ckpt threads {path}", err=True)


def register(app: typer.Typer) -> None:
    app.command()(demo)
