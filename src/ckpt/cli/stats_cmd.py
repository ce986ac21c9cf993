"""`ckpt stats`: where the bytes of a store go, how its threads grow, and its health."""

from __future__ import annotations

from typing import Annotated

import typer

from ckpt.cli.common import opened, reading_rows, state
from ckpt.cli.options import (
    JsonOpt,
    QuietOpt,
    StoreArg,
    StoreOptions,
    ThreadsOpt,
    store_options,
)


@store_options
def stats(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: ThreadsOpt = None,
    ns: Annotated[
        str | None,
        typer.Option(
            "--ns",
            metavar="NS",
            help="Only this checkpoint namespace ('' is the root; default: all).",
            show_default=False,
        ),
    ] = None,
    top: Annotated[
        int,
        typer.Option("--top", metavar="N", min=0, help="Rows per list (0: all of them)."),
    ] = 10,
    keep: Annotated[
        int,
        typer.Option("--keep", metavar="N", min=1, help="The N of the keep-last-N prune estimate."),
    ] = 10,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Where the bytes go: by thread, channel, subgraph and write; growth; prune; health.

    Reads every row once (a progress bar shows on stderr for long scans), in the same pass
    as `ckpt check`, whose findings are the health section. Exits 6 after printing when
    encrypted bodies could not be split by channel.
    Example: ckpt stats chat.sqlite --json | jq '.channels[0]'
    """
    from ckpt.cli.options import fix_line
    from ckpt.records.encode import dump_document
    from ckpt.render.stats_view import stats_view

    output = state(ctx).output
    with opened(ctx, store_options, store) as checkpoints:
        with reading_rows(output, checkpoints, thread or (), quiet=quiet) as tick:
            record = checkpoints.stats(
                threads=thread or (), ns=ns, top=top, keep=keep, progress=tick
            )
        if json_out:
            output.lines(dump_document(record))
        else:
            output.show(stats_view(record, output, fix_line=fix_line), crop=False)


def register(app: typer.Typer) -> None:
    app.command()(stats)
