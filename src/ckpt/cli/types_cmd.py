"""`types`: which classes a store's values name, checked against LangGraph's strict mode,
with the allowlist to paste (the work is ckpt.scan.census; the view is ckpt.render.types_view)."""

from __future__ import annotations

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
def types(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: ThreadsOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """List every (module, class) pair the stored values name, for LangGraph's strict mode.

    Each class is marked safe (LangGraph's built-in list), allowlist (strict mode gives
    back a plain dict or value unless allowed), blocked (a method call no allowlist
    unblocks), ungated or langchain; then the allowed_msgpack_modules list and the
    langgraph.json snippet to paste. Nothing named is imported. Exits 6 after printing
    when encrypted values hide their classes (no key, or a wrong one).

    Example: ckpt types chat.sqlite --json | jq -r '.allowlist.python'
    """
    from ckpt.records.encode import dump_document
    from ckpt.render.types_view import types_view

    run = state(ctx)
    with opened(ctx, store_options, store) as checkpoints:
        with reading_rows(run.output, checkpoints, thread or (), quiet=quiet) as tick:
            record = checkpoints.types(threads=thread or (), progress=tick)
        if json_out:
            run.output.lines(dump_document(record))
        else:
            run.output.show(types_view(record, run.output))


def register(app: typer.Typer) -> None:
    app.command("types")(types)
