"""`diff` and `dump`: compare two checkpoints, or stream a whole store as JSON for jq."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from ckpt.cli.common import opened, state, wants_ndjson
from ckpt.cli.options import (
    FullOpt,
    JobsOpt,
    LocalOpt,
    NsOpt,
    StoreArg,
    StoreOptions,
    store_options,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from contextlib import AbstractContextManager

    from ckpt.records.options import DumpFilters

T = TypeVar("T")


@store_options
def diff(
    ctx: typer.Context,
    a: Annotated[
        str,
        typer.Argument(
            metavar="A",
            help="Checkpoint id, unique prefix, short id, THREAD (latest) or THREAD~N.",
        ),
    ],
    b: Annotated[
        str | None,
        typer.Argument(
            metavar="[B]",
            help="The checkpoint to compare A with. Default: A compared with its parent, "
            "or with --db2, A compared with the same selector in that store.",
            show_default=False,
        ),
    ] = None,
    db2: Annotated[
        str | None,
        typer.Option(
            "--db2",
            metavar="STORE",
            help="Read B from this store (path or URL), e.g. a copy after a migration.",
            show_default=False,
        ),
    ] = None,
    ns: NsOpt = None,
    full: FullOpt = False,
    local: LocalOpt = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print an RFC 6902 JSON Patch from A's `show --json --blobs` to B's.",
        ),
    ] = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Compare two checkpoints: channel values, messages by id, versions, metadata, writes.

    A value with more than 10,000 changes inside reads as one change. The view lists 1,000
    changes a section and lays out 4 MB of values (--full too); --json has them all.
    Exit status as diff(1): 0 when they hold the same, 1 when they differ.
    Example: ckpt diff support-1~1 support-1 --db chat.sqlite --json | jq .
    """
    from contextlib import ExitStack
    from dataclasses import replace

    from ckpt.errors import ExitCode
    from ckpt.records.encode import dump_document
    from ckpt.render import diffview

    run = state(ctx)
    with ExitStack() as stack:
        store_a = stack.enter_context(opened(ctx, store_options))
        store_b = None
        if db2 is not None:
            store_b = stack.enter_context(opened(ctx, replace(store_options, db=db2)))
        compared = store_a.diff(a, b, ns=ns, other=store_b)
        if compared.differ:
            run.closed_pipe_status = int(ExitCode.DIFFERENT)
        if json_out:
            run.output.lines(dump_document(compared.patch))
        else:
            view = diffview.diff_view(
                compared.a, compared.b, compared.changes, full=full, local=local
            )
            run.output.show(view)
    if compared.differ:
        raise typer.Exit(int(ExitCode.DIFFERENT))


@store_options
def dump(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: Annotated[
        list[str] | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="THREAD",
            help="Only this thread (repeatable).",
            show_default=False,
        ),
    ] = None,
    ns: Annotated[
        str | None,
        typer.Option(
            "--ns",
            metavar="NS",
            help="Only this checkpoint namespace ('' is the root).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="TIME",
            help="Only checkpoints written at or after TIME: an ISO time (UTC unless it has "
            "an offset) or date, an age (7d, 12h), or a checkpoint id or thread (from it on).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="Only checkpoints written before TIME (as --since), or up to a checkpoint "
            "id or thread.",
            show_default=False,
        ),
    ] = None,
    latest: Annotated[
        bool, typer.Option("--latest", help="Only each thread's newest checkpoint per namespace.")
    ] = False,
    no_values: Annotated[
        bool, typer.Option("--no-values", help="Leave out channel values: skeletons only, fast.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
    ndjson_out: Annotated[
        bool,
        typer.Option(
            "--ndjson", help="One JSON object per line (the default when stdout is not a terminal)."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar on stderr.")
    ] = False,
    jobs: JobsOpt = None,
    *,
    store_options: StoreOptions,
) -> None:
    """Stream every checkpoint as JSON: the records of `show --json --blobs` (docs/json.md).

    Streams with flat memory; a progress bar shows on stderr when stdout is piped.
    Example: ckpt dump chat.sqlite --latest | jq -r '.channel_values.messages[-1].content'
    """
    from ckpt.render.output import stream_json_array
    from ckpt.render.progress import counting

    run = state(ctx)
    as_lines = wants_ndjson(ctx, json_out, ndjson_out, default_when_piped=True)  # checked first
    with opened(ctx, store_options, store) as checkpoints:
        filters: DumpFilters = {
            "threads": thread or (),
            "ns": ns,
            "since": since,
            "until": until,
            "latest": latest,
        }
        show_progress = not quiet and not run.output.terminal and run.output.stderr.isatty()

        def total() -> int | None:
            return checkpoints.dump_total(**filters)

        def counted(
            items: Iterable[T], weigh: Callable[[T], int] | None = None
        ) -> AbstractContextManager[Iterator[T]]:
            return counting(items, enabled=show_progress, label="dumping", total=total, weigh=weigh)

        if as_lines:  # the bytes themselves: several processes may write them
            data = checkpoints.dump_bytes(values=not no_values, jobs=jobs, **filters)
            with counted(data, lines_in) as pieces:
                run.output.data(pieces)
        else:  # written out as they come
            records = checkpoints.dump(values=not no_values, read_only=True, **filters)
            with counted(records) as items:
                run.output.lines(stream_json_array(items, pretty=False))


def lines_in(piece: bytes) -> int:
    return piece.count(b"\n")


def register(app: typer.Typer) -> None:
    app.command()(diff)
    app.command()(dump)
