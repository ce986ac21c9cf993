"""`mcp`: serve the store to a coding agent as read-only MCP tools (ckpt.mcp, the `mcp` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ckpt.cli.options import StoreArg, StoreOptions, store_options

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore


@store_options
def mcp(
    ctx: typer.Context,
    store: StoreArg = None,
    budget: Annotated[
        int,
        typer.Option(
            "--budget",
            metavar="CHARS",
            min=2_000,
            max=10_000_000,
            help="Characters of JSON one answer may hold; lists page with a cursor beyond.",
        ),
    ] = 40_000,
    value_chars: Annotated[
        int,
        typer.Option(
            "--value-chars",
            metavar="CHARS",
            min=100,
            max=10_000_000,
            help="Characters of one string value an answer shows before cutting it.",
        ),
    ] = 2_000,
    *,
    store_options: StoreOptions,
) -> None:
    """Serve the store to a coding agent: read-only MCP tools on stdin/stdout (langgraph-ckpt[mcp]).

    Tools: list_threads, thread_history, show_checkpoint, diff_checkpoints,
    dump_checkpoints, store_stats, store_types, check_store (docs/mcp.md).
    Example: claude mcp add ckpt -- ckpt mcp chat.sqlite
    """
    from ckpt.cli.common import open_store, source, state
    from ckpt.mcp import require_sdk

    require_sdk()  # before the store opens: the one line names the extra
    spec = source(state(ctx).output, store, store_options)

    def opening() -> CheckpointStore:
        return open_store(spec, store_options)

    from ckpt.mcp.budget import Budget
    from ckpt.mcp.server import serve

    # A store that does not open fails here, with its exit code, not at every call; values it
    # refuses or cannot decrypt are marked in the answers instead (ckpt.mcp.server).
    opening().close()
    serve(opening, Budget(chars=budget, value_chars=value_chars))


def register(app: typer.Typer) -> None:
    app.command()(mcp)
