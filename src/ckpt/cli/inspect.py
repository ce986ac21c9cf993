"""`threads`, `history`, `versions` and `show`: read one store and print what it holds.

Commands parse their arguments, ask the library (ckpt.api) for records, and hand them to
a view; the views never compute anything themselves.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ckpt.cli.common import opened, state, wants_ndjson
from ckpt.cli.options import (
    FullOpt,
    JsonOpt,
    LocalOpt,
    NsOpt,
    StatusOpt,
    StoreArg,
    StoreOptions,
    ThreadSort,
    Watching,
    WhereOpt,
    parse_where,
    store_options,
    watch_options,
)
from ckpt.errors import BadOption

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ckpt.render.output import Output


@store_options
@watch_options
def threads(
    ctx: typer.Context,
    store: StoreArg = None,
    sort: Annotated[
        ThreadSort, typer.Option("--sort", help="Order of the rows (updated: newest first).")
    ] = ThreadSort.updated,  # type: ignore[attr-defined]
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most N threads."),
    ] = None,
    where: WhereOpt = None,
    status: StatusOpt = None,
    size: Annotated[
        bool,
        typer.Option(
            "--size",
            help="Also measure each thread's bytes and write rows (reads every row).",
        ),
    ] = False,
    *,
    store_options: StoreOptions,
    watching: Watching,
) -> None:
    """List every thread: checkpoints, namespaces, latest step, status (size with --size).

    With --follow: every thread, then a line whenever a thread changes status.
    Example: ckpt threads db.sqlite --status error --json | jq '.[].errors'
    """
    from ckpt.render.output import stream_json_array, stream_ndjson
    from ckpt.render.plain import thread_change_lines, threads_table

    filters = dict(parse_where(w) for w in where or [])
    output, as_lines = watched(ctx, watching)  # option errors before opening the store
    if watching.follow and (status or limit or size or sort.value != "updated"):
        raise BadOption(
            "--follow shows every thread as it changes: no --status, --limit, --size or --sort"
        )
    with opened(ctx, store_options, store) as checkpoints:
        if watching.follow:
            changes = checkpoints.follow_threads(where=filters, interval=watching.interval)
            followed(output, watching, changes, thread_change_lines(changes, output))
            return
        records = checkpoints.iter_threads(
            sort=sort.value,  # type: ignore[arg-type]
            limit=limit,
            where=filters,
            status=status.value if status else None,  # type: ignore[arg-type]
            sizes=size,
        )
        if as_lines:
            output.lines(stream_ndjson(records))
        elif watching.json_out:
            output.lines(stream_json_array(records))
        elif (header := next(table := threads_table(records, output), None)) is not None:
            output.text(itertools.chain([header], table))
        else:
            # Nothing on stdout: an empty listing; the explanation is talk, for stderr.
            what = "no threads match" if filters or status else "no threads"
            output.notices([f"{what} in {checkpoints.location}"])


@store_options
@watch_options
def history(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(metavar="THREAD", help="Thread id.")],
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            "--limit",
            "-n",
            metavar="N",
            min=1,
            help="Only the newest N checkpoints of the thread (by id; the older ones are "
            "not read).",
            show_default=False,
        ),
    ] = None,
    *,
    store_options: StoreOptions,
    watching: Watching,
) -> None:
    """Show a thread's checkpoints as a tree of parent links: forks and subgraphs included.

    With --follow: a line per checkpoint, then each new one as it lands, with the writes,
    errors and interrupts that land on it after.
    Example: ckpt history support-1 --db chat.sqlite
    """
    from ckpt.render import human
    from ckpt.render.output import stream_json_array, stream_ndjson
    from ckpt.render.plain import tree_lines

    output, as_lines = watched(ctx, watching)
    local = watching.local
    with opened(ctx, store_options) as checkpoints:
        if watching.follow:
            if not checkpoints.thread_exists(thread):
                output.notices([f"waiting for thread {thread!r} in {checkpoints.location}"])
            events = checkpoints.follow_history(thread, last=last, interval=watching.interval)
            followed(output, watching, events, human.followed_lines(events, output, local=local))
            return
        if watching.json_out or watching.ndjson_out:
            stream = checkpoints.iter_history(thread, last=last)
            output.lines(stream_ndjson(stream) if as_lines else stream_json_array(stream))
        else:
            lineage = checkpoints.lineage(thread, last=last)
            output.text(tree_lines(human.history_view(lineage, last=last, local=local), output))


def watched(ctx: typer.Context, watching: Watching) -> tuple[Output, bool]:
    """The output, set to the times asked for, and whether records go one a line
    (--ndjson); --json with --ndjson is refused here, before the store is opened."""
    as_lines = wants_ndjson(ctx, watching.json_out, watching.ndjson_out)
    output = state(ctx).output
    output.local_time = watching.local
    return output, as_lines


def followed(
    output: Output, watching: Watching, events: Iterable[Any], lines: Iterable[str]
) -> None:
    """What --follow sees, as it comes: a JSON object a line with --json or --ndjson, else
    the view's `lines` of the same events."""
    from ckpt.render.output import stream_ndjson

    if watching.json_out or watching.ndjson_out:
        each(output, stream_ndjson(events))
    else:
        each(output, lines, text=True)


def each(output: Output, lines: Iterable[str], *, text: bool = False) -> None:
    """Lines as they come, each on its way at once (`--follow`: the reader sees a
    checkpoint the moment it is found, not when the pipe's buffer fills)."""
    for line in lines:
        if text:
            output.text([line])
        else:
            output.lines([line])


TABLE_COLUMNS = 12  # checkpoints a terminal can show side by side


@store_options
def versions(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(metavar="THREAD", help="Thread id.")],
    ns: NsOpt = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            metavar="N",
            min=1,
            help="Only the newest N checkpoints (the table shows as many as fit the terminal, 12 "
            "when piped; --json: all unless given).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Show which step moved each channel's version, and which task's write moved it.

    Example: ckpt versions support-1 --db chat.sqlite
    """
    from ckpt.records.encode import dump_document
    from ckpt.render import human

    output = state(ctx).output
    with opened(ctx, store_options) as checkpoints:
        fit = None if json_out else human.versions_capacity(output, TABLE_COLUMNS)
        matrix = checkpoints.versions(thread, ns=ns, last=last or fit)
        if json_out:
            output.lines(dump_document(matrix))
        else:
            output.show(human.versions_view(matrix, output))


@store_options
def show(
    ctx: typer.Context,
    selector: Annotated[
        str,
        typer.Argument(
            metavar="SELECTOR",
            help="Checkpoint id, unique prefix, short id, THREAD (latest) or THREAD~N.",
        ),
    ],
    blobs: Annotated[
        bool, typer.Option("--blobs", "-b", help="Also show the decoded channel values.")
    ] = False,
    writes: Annotated[bool, typer.Option("--writes", help="Show only the pending writes.")] = False,
    channel: Annotated[
        list[str] | None,
        typer.Option(
            "--channel",
            "-c",
            metavar="NAME",
            help="Show only this channel: its value and its writes (repeatable; implies --blobs).",
        ),
    ] = None,
    ns: NsOpt = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            "-n",
            metavar="N",
            min=1,
            help="Only the newest N messages of each message channel (with --blobs).",
            show_default=False,
        ),
    ] = None,
    full: FullOpt = False,
    local: LocalOpt = False,
    json_out: JsonOpt = False,
    *,
    store_options: StoreOptions,
) -> None:
    """Show one checkpoint: metadata, versions, next, pending writes; values with --blobs.

    Example: ckpt show support-1~2 --blobs --db chat.sqlite
    """
    from ckpt.records.encode import dump_document
    from ckpt.records.paste import paste_back
    from ckpt.render import human

    with_values = blobs or bool(channel)
    output = state(ctx).output
    output.local_time = local
    with opened(ctx, store_options) as checkpoints:
        record = checkpoints.checkpoint(selector, ns=ns, values=with_values, channels=channel or ())
        if json_out:
            shown = record
            if writes:
                keys = ("thread_id", "checkpoint_ns", "checkpoint_id", "pending_writes")
                shown = {k: record[k] for k in keys}  # type: ignore[assignment,literal-required]
            output.lines(dump_document(shown))
        else:
            latest = checkpoints.is_latest(record)
            view = human.checkpoint_view(
                record,
                output,
                values=with_values,
                writes_only=writes,
                full=full,
                latest=latest,
                last=last,
                paste=paste_back(record, latest=latest and not record["checkpoint_ns"]),
            )
            output.show(view)


def register(app: typer.Typer) -> None:
    app.command()(threads)
    app.command()(history)
    app.command()(show)
    app.command()(versions)
