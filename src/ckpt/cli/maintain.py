"""`prune` and `vacuum`: the only commands that change a store, and only with --apply.

Without --apply they print the plan and change nothing; with it they change one thread
per transaction and print what they did (ckpt.ops.maintain, ckpt.writers).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ckpt.cli.common import opened, render_run, state
from ckpt.cli.options import (
    ApplyOpt,
    JsonOpt,
    StoreOptions,
    WritableStoreArg,
    store_options,
    thread_selection,
)

if TYPE_CHECKING:
    from ckpt.records.runs import ThreadPlanRecord


@store_options
@thread_selection
def prune(
    ctx: typer.Context,
    store: WritableStoreArg = None,
    keep_latest: Annotated[
        bool,
        typer.Option(
            "--keep-latest", help="Keep each namespace's latest checkpoint (the default)."
        ),
    ] = False,
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last", metavar="N", min=1, help="Keep each namespace's last N checkpoints."
        ),
    ] = None,
    delete: Annotated[
        bool, typer.Option("--delete", help="Delete the whole threads (as delete_thread does).")
    ] = False,
    orphans: Annotated[
        bool,
        typer.Option(
            "--orphans",
            help="Delete no checkpoint: only pending writes whose checkpoint is gone and "
            "blobs no checkpoint names (what `ckpt check` reports as orphans).",
        ),
    ] = False,
    apply: ApplyOpt = False,
    backup: Annotated[
        Path | None,
        typer.Option(
            "--backup",
            metavar="FILE",
            help="SQLite: copy the store to FILE (online backup) before pruning.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
    selected: dict[str, Any],
) -> None:
    """Delete old checkpoints safely: keep what resuming each thread needs.

    Prints the plan and changes nothing unless --apply. Stores: SQLite, Postgres,
    RedisSaver (not ShallowRedisSaver), MongoDBSaver; a `langgraph dev` folder is refused.
    Each thread is pruned in its own transaction (all or nothing: a Redis MULTI/EXEC, a
    MongoDB transaction); what stays and why is listed. Delta snapshots and the
    chain to them, the parent a pre-v4 checkpoint reads its Sends from, persistent
    subgraph heads stay; subgraph calls of deleted checkpoints go. Exit 11: the store was
    locked (that thread rolled back); 12: refused as unsafe (nothing changed).
    Example: ckpt prune chat.sqlite --older-than 30d --keep-latest --apply
    """
    from ckpt.errors import BadOption
    from ckpt.render.maintain_view import plan_line, prune_lines

    chosen = [name for name, on in (("--keep-latest", keep_latest), ("--keep-last", keep_last),
              ("--delete", delete), ("--orphans", orphans)) if on]  # fmt: skip
    if len(chosen) > 1:
        raise BadOption(f"{' and '.join(chosen)}: choose one strategy")
    strategy = (
        "delete"
        if delete
        else "orphans"
        if orphans
        else "keep_last"
        if keep_last
        else "keep_latest"
    )
    output = state(ctx).output
    with opened(ctx, store_options, store) as checkpoints:

        def said(plan: ThreadPlanRecord) -> None:  # progress on stderr, a line per thread
            if apply and not json_out and output.stderr.isatty():
                output.stderr.write(plan_line(plan) + "\n")

        run = checkpoints.iter_prune(
            **selected,
            strategy=strategy,  # type: ignore[arg-type]
            keep=keep_last or 1,
            backup=backup,
            apply=apply,
            timeout=store_options.timeout,
            on_thread=said,
        )
        # A thread at a time, in flat memory; nothing is printed before the last thread is
        # done (the table lays out its spooled rows only then; the JSON is spooled whole),
        # so a run that stops (a lock, a refusal) prints its one error line alone.
        render_run(output, run, json_out=json_out, lines=prune_lines)


@store_options
def vacuum(
    ctx: typer.Context,
    store: WritableStoreArg = None,
    apply: ApplyOpt = False,
    into: Annotated[
        Path | None,
        typer.Option(
            "--into",
            metavar="FILE",
            help="SQLite: write the compacted copy to FILE (VACUUM INTO), the store untouched.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Give the space of deleted rows back: report what VACUUM would free; --apply runs it.

    SQLite: free pages, the disk room VACUUM needs, and with --apply a VACUUM (refused
    while another connection holds the store) then a WAL truncate, or VACUUM INTO FILE.
    Postgres: dead rows and bloat of the checkpoint tables and the VACUUM (ANALYZE)
    statement, run with --apply (no lock that blocks the application).
    Redis: deleted keys' memory is free at once; the memory used and held, and MEMORY
    PURGE (the allocator's freed pages back to the system) with --apply.
    MongoDB: the collections' storage and what `compact` may give back; --apply runs it.
    """
    from ckpt.records.encode import dump_document
    from ckpt.render.maintain_view import vacuum_view

    output = state(ctx).output
    with opened(ctx, store_options, store) as checkpoints:
        record = checkpoints.vacuum(apply=apply, into=into, timeout=store_options.timeout)
        if json_out:
            output.lines(dump_document(record))
        else:
            output.show(vacuum_view(record))


def register(app: typer.Typer) -> None:
    app.command()(prune)
    app.command()(vacuum)
