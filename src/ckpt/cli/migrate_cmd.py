"""`ckpt migrate`: rename, drop and add channels and nodes in saved threads so that a
changed graph resumes them. Without --apply it prints the plan and changes nothing
(ckpt.ops.migrate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ckpt.cli.common import opened, render_run, state
from ckpt.cli.options import (
    ApplyOpt,
    JsonOpt,
    MigratableStoreArg,
    StoreOptions,
    store_options,
    thread_selection,
)


@store_options
@thread_selection
def migrate(
    ctx: typer.Context,
    store: MigratableStoreArg = None,
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
            help="Back up first: SQLite: the whole file (online backup); Postgres: the "
            "selected threads copied into a new SQLite FILE.",
            show_default=False,
        ),
    ] = None,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            metavar="MODULE:ATTR",
            help="Your new compiled graph (e.g. my_app.graph:graph, imported: your code): "
            "with --apply, load each migrated thread through it and name those it cannot "
            "(exit 14).",
            show_default=False,
        ),
    ] = None,
    apply: ApplyOpt = False,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
    selected: dict[str, Any],
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
    from ckpt.render.migrate_view import migrate_lines

    output = state(ctx).output
    steps: dict[str, Any] = {
        "rename_channel": dict(pair(t, "--rename-channel") for t in rename_channel or ()),
        "drop_channel": [name(t, "--drop-channel") for t in drop_channel or ()],
        "rename_node": dict(pair(t, "--rename-node") for t in rename_node or ()),
        "add_channel": dict(json_value(t) for t in add_channel or ()),
    }
    if plan is not None:
        if any(steps.values()):
            raise typer.BadParameter(
                "give the steps as options or in a plan file, not both", param_hint="--plan"
            )
        steps = {"plan": plan}
    with opened(ctx, store_options, store) as checkpoints:
        run = checkpoints.iter_migrate(
            **selected,
            **steps,
            latest=latest,
            backup=backup,
            apply=apply,
            graph=graph,
            timeout=store_options.timeout,
        )
        render_run(output, run, json_out=json_out, lines=migrate_lines)


def pair(text: str, flag: str) -> tuple[str, str]:
    """An OLD=NEW option, or the usage error that says what is wrong with it."""
    old, sep, new = text.partition("=")
    if not sep or not old.strip() or not new.strip() or old == new:
        raise typer.BadParameter(f"{text!r}: give OLD=NEW (two different names)", param_hint=flag)
    return old, new


def name(text: str, flag: str) -> str:
    if not text.strip() or "=" in text:
        raise typer.BadParameter(f"{text!r}: give a channel name", param_hint=flag)
    return text


def json_value(text: str) -> tuple[str, Any]:
    """A NAME=JSON option."""
    import json

    channel, sep, raw = text.partition("=")
    if not sep or not channel.strip():
        raise typer.BadParameter(f"{text!r}: give NAME=JSON", param_hint="--add-channel")
    try:
        return channel, json.loads(raw)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r}: the value is not JSON", param_hint="--add-channel"
        ) from None


def register(app: typer.Typer) -> None:
    app.command()(migrate)
