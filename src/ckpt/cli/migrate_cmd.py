"""`ckpt migrate`: rename, drop and add channels and nodes in saved threads so that a
changed graph resumes them. Without --apply it prints the plan and changes nothing
(ckpt.ops.migrate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ckpt.cli.common import opened, state
from ckpt.cli.options import (
    AllOpt,
    ApplyOpt,
    JsonOpt,
    OlderThanOpt,
    SinceOpt,
    StatusOpt,
    StoreArg,
    StoreOptions,
    ThreadsOpt,
    WhereOpt,
    selection,
    store_options,
)


@store_options
def migrate(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: ThreadsOpt = None,
    older_than: OlderThanOpt = None,
    since: SinceOpt = None,
    status: StatusOpt = None,
    where: WhereOpt = None,
    every: AllOpt = False,
    rename_channel: Annotated[
        list[str] | None,
        typer.Option("--rename-channel", metavar="OLD=NEW", help="Rename a channel (state key)."),
    ] = None,
    drop_channel: Annotated[
        list[str] | None,
        typer.Option("--drop-channel", metavar="NAME", help="Drop a channel and its writes."),
    ] = None,
    rename_node: Annotated[
        list[str] | None,
        typer.Option(
            "--rename-node",
            metavar="OLD=NEW",
            help="Rename a node: its trigger channel, versions_seen, task ids, interrupt ids.",
        ),
    ] = None,
    add_channel: Annotated[
        list[str] | None,
        typer.Option(
            "--add-channel", metavar="NAME=JSON", help="Give checkpoints without NAME this value."
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="FILE",
            help="The steps from a TOML file ([[step]] name, kind, ...; see docs/migrate.md).",
            show_default=False,
        ),
    ] = None,
    latest: Annotated[
        bool,
        typer.Option(
            "--latest", help="Only each namespace's newest checkpoint (what resuming needs)."
        ),
    ] = False,
    backup: Annotated[
        Path | None,
        typer.Option(
            "--backup",
            metavar="FILE",
            help="SQLite: copy the store to FILE (online backup) before migrating.",
            show_default=False,
        ),
    ] = None,
    apply: ApplyOpt = False,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Migrate saved threads to a changed graph: rename or drop channels, rename nodes.

    Every place a name lives changes: channel values, versions, versions_seen,
    updated_channels, blobs, pending writes, trigger channels (branch:to:NODE), task ids
    and interrupt ids of a renamed node. Prints the plan with a before/after diff of one
    checkpoint per thread and changes nothing unless --apply. Each thread is one
    transaction, read back before it commits. A second run of the same plan changes
    nothing (migrated checkpoints list the steps in metadata `ckpt_migrations`). Exit 12:
    a thread cannot be migrated or a transform raised (nothing changed); 13: not a SQLite
    or Postgres store; 14: a thread read back differed (rolled back).
    Example: ckpt migrate chat.sqlite --all --rename-channel notes=findings --apply
    """
    from ckpt.ops.migrate import step_from_option
    from ckpt.records.encode import dump_document
    from ckpt.render.migrate_view import migrate_lines

    output = state(ctx).output
    options: list[tuple[str, list[str] | None]] = [
        ("rename_channel", rename_channel), ("drop_channel", drop_channel),
        ("rename_node", rename_node), ("add_channel", add_channel),
    ]  # fmt: skip
    steps = [step_from_option(kind, text) for kind, given in options for text in given or ()]
    if plan is not None and steps:
        raise typer.BadParameter(
            "give steps as options or in a plan file, not both", param_hint="--plan"
        )
    chosen: Any = plan if plan is not None else steps
    with opened(ctx, store_options, store) as checkpoints:
        run = checkpoints.iter_migrate(
            **selection(thread, older_than, since, status, where, every),
            plan=chosen,
            latest=latest,
            backup=backup,
            apply=apply,
            timeout=store_options.timeout,
        )
        records = list(run)
        record = {**run.head, "threads": records, "totals": run.totals}
        if json_out:
            output.lines(dump_document(record))
        else:
            output.text(migrate_lines(record, output))  # type: ignore[arg-type]
        if (refusal := run.refusal()) is not None:
            raise refusal


def register(app: typer.Typer) -> None:
    app.command()(migrate)
