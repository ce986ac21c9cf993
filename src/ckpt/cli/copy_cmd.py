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
            metavar="SRC",
            help="The store to copy from (any store ckpt reads). Or --db SRC, and DST alone: "
            "copy never takes its source from $CKPT_DB or the current folder.",
            show_default=False,
        ),
    ] = None,
    dst: Annotated[
        str | None,
        typer.Argument(
            metavar="DST",
            help="The store to copy into: a SQLite file (created when missing), a "
            "postgresql:// or mongodb:// database (its path names the database) or a "
            "redis:// server. Never the source (exit 12).",
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
    from ckpt.cli.common import render_run
    from ckpt.render.copy_view import copy_lines
    from ckpt.render.progress import advancing

    renames = dict(parse_rename(r) for r in rename or ())
    output = state(ctx).output
    src, dst = copy_stores(ctx, src, dst, store_options.db)
    with opened(ctx, store_options, src) as checkpoints:
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


def copy_stores(
    ctx: typer.Context, src: str | None, dst: str | None, db: str | None
) -> tuple[str, str]:
    """(source, target) as the user named them: `SRC DST`, or `--db SRC DST`. One store
    alone is never taken as the target of a source found for it ($CKPT_DB, the one store in
    the folder): with --on-conflict replace --apply that overwrote the wrong store."""
    from ckpt.errors import BadOption

    source_given = db is not None and ctx.get_parameter_source("db").name != "ENVIRONMENT"  # type: ignore[union-attr]
    if src is not None and dst is not None:
        if source_given and db != src:
            raise BadOption(f"two sources, --db {db} and {src}: give SRC DST or --db SRC DST")
        return src, dst
    if src is not None and db is not None and source_given:
        return db, src
    alone = f"{src} alone" if src is not None else "no store given"
    raise BadOption(
        f"{alone}: copy needs both stores, SRC DST or --db SRC DST (it takes no source from "
        "$CKPT_DB or the current folder); nothing copied"
    )


def parse_rename(text: str) -> tuple[str, str]:
    """A --rename OLD=NEW, or the usage error that says what is wrong with it."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise typer.BadParameter(f"{text!r}: give OLD=NEW (two thread ids)", param_hint="--rename")
    return old, new


def register(app: typer.Typer) -> None:
    app.command()(copy)
