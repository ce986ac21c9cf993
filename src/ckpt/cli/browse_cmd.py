"""`browse`: the interactive browser (ckpt.browse, the `tui` extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from ckpt.cli.common import opened
from ckpt.cli.options import StoreArg, StoreOptions, store_options


@store_options
def browse(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="THREAD",
            help="Open at this thread.",
            show_default=False,
        ),
    ] = None,
    *,
    store_options: StoreOptions,
) -> None:
    """Browse a store interactively: threads, history, checkpoints, diffs (langgraph-ckpt[tui]).

    Read-only, keyboard first: ? shows the keys of every pane, ctrl+p the commands, q quits.
    Example: ckpt browse chat.sqlite --thread support-1
    """
    from ckpt.browse import require_textual, run
    from ckpt.browse.session import StoreSpec
    from ckpt.cli.common import source, state
    from ckpt.cli.options import in_flags

    require_textual()  # before the store opens: the one line names the extra
    spec = source(state(ctx).output, store, store_options)
    with opened(ctx, store_options, spec, hidden_exit=False) as checkpoints:
        spec_of = StoreSpec.of(
            spec,
            checkpoints.location,
            store_options.schema,
            store_options.prefix,
            store_options.database,
        )
        code = run(checkpoints, spec_of, thread_id=thread, words=in_flags)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command()(browse)
