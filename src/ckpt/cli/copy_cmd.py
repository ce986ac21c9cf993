"""`ckpt copy`: threads from any store into a SQLite file, a Postgres or MongoDB database or
a Redis server, as their savers write them.

Without --apply it prints the plan and changes nothing (ckpt.ops.copy)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ckpt.cli.common import opened, state
from ckpt.cli.options import (
    ApplyOpt,
    JsonOpt,
    QuietOpt,
    StoreOptions,
    store_options,
    thread_selection,
)


@store_options
@thread_selection
def copy(
    ctx: typer.Context,
    src: Annotated[
        str | None,
        typer.Argument(
            metavar="[SRC]",
            help="The store to copy from (any store ckpt reads). Default: --db, then "
            "$CKPT_DB, then the one store in the current folder; DST alone is then given.",
            show_default=False,
        ),
    ] = None,
    dst: Annotated[
        str | None,
        typer.Argument(
            metavar="DST",
            help="A SQLite file (created when missing), a postgresql:// or mongodb:// "
            "database (its path names the database) or a redis:// server.",
            show_default=False,
        ),
    ] = None,
    rename: Annotated[
        list[str] | None,
        typer.Option(
            "--rename",
            metavar="OLD=NEW",
            help="Give thread OLD the id NEW on the target (repeatable).",
        ),
    ] = None,
    on_conflict: Annotated[
        str,
        typer.Option(
            "--on-conflict",
            metavar="fail|skip|replace",
            help="A thread already on the target: stop before copying anything (fail), "
            "leave it (skip), or delete and copy it in the same transaction (replace).",
        ),
    ] = "fail",
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace every string and bytes value by a placeholder of the same length "
            "and shape; keep structure, ids, types (a store for a bug report).",
        ),
    ] = False,
    keep_key: Annotated[
        list[str] | None,
        typer.Option(
            "--keep-key",
            metavar="KEY",
            help="With --redact: keep the values of this dict key as they are (repeatable).",
        ),
    ] = None,
    keep_errors: Annotated[
        bool, typer.Option("--keep-errors", help="With --redact: keep error type names.")
    ] = False,
    renumber_versions: Annotated[
        bool,
        typer.Option(
            "--renumber-versions",
            help="Write channel versions as the target's saver counts them, their order "
            "kept, so the copy can resume: MongoDBSaver's 1, 2, 3 as SqliteSaver's strings, "
            "or those as MongoDBSaver's integers.",
        ),
    ] = False,
    shallow: Annotated[
        bool,
        typer.Option(
            "--shallow",
            help="Into Redis: ShallowRedisSaver's layout, each namespace's newest "
            "checkpoint and its writes only.",
        ),
    ] = False,
    apply: ApplyOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    *,
    store_options: StoreOptions,
    selected: dict[str, Any],
) -> None:
    """Copy threads into a SQLite, Postgres, MongoDB or Redis store, as its saver writes.

    Every checkpoint, parent link, namespace, pending write and metadata is carried. Between
    SQLite, Postgres, MongoDB and `langgraph dev` values move as the bytes they are; into
    Redis they become RedisSaver's JSON, and out of Redis they are encoded again as
    LangGraph's serializer encodes what RedisSaver reads (the plan says which threads). A
    thread ckpt cannot carry exactly is left out and named (exit 12). Each thread is one
    transaction on the target (Redis: MULTI/EXEC; MongoDB: a multi-document transaction,
    so a replica set): a copy stopped midway leaves every thread whole or absent. The
    target may not be the source. Prints the plan and changes nothing unless --apply; a
    missing SQLite file, PostgresSaver schema, MongoDBSaver indexes or RediSearch indexes
    are created then, as setup() makes them. Exit 12: threads already on the target (see
    --on-conflict), or a thread refused.
    Example: ckpt copy .langgraph_api postgresql://localhost/app --all --apply
    """
    from ckpt.cli.common import render_run, source
    from ckpt.render.copy_view import copy_lines
    from ckpt.render.progress import advancing

    renames = dict(parse_rename(r) for r in rename or ())
    output = state(ctx).output
    if dst is None:  # one positional: the target; the source is --db, $CKPT_DB or found
        if src is None:
            raise typer.BadParameter("give the store to copy into", param_hint="DST")
        dst = src
        src = None
    with opened(ctx, store_options, source(output, src, store_options)) as checkpoints:
        show_progress = apply and not quiet and output.stderr.isatty()
        with advancing(enabled=show_progress, label="copying", unit="rows") as tick:
            with checkpoints.iter_copy(
                dst,
                **selected,
                rename=renames,
                on_conflict=on_conflict,  # type: ignore[arg-type]
                redact=redact,
                keep_keys=keep_key or (),
                keep_errors=keep_errors,
                renumber_versions=renumber_versions,
                shallow=shallow,
                apply=apply,
                timeout=store_options.timeout,
                on_rows=tick,
            ) as run:
                render_run(output, run, json_out=json_out, lines=copy_lines)


def parse_rename(text: str) -> tuple[str, str]:
    """A --rename OLD=NEW, or the usage error that says what is wrong with it."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise typer.BadParameter(f"{text!r}: give OLD=NEW (two thread ids)", param_hint="--rename")
    return old, new


def register(app: typer.Typer) -> None:
    app.command()(copy)
