"""`threads`, `history`, `versions` and `show`: read one store and print what it holds."""

from __future__ import annotations

from typing import Annotated

import typer

from ckpt.cli.common import DEFAULT_TIMEOUT, open_from_options, wants_ndjson, write_lines
from ckpt.cli.options import (
    AesKeyOpt,
    DbOpt,
    FullOpt,
    JsonOpt,
    NdjsonOpt,
    NsOpt,
    SchemaOpt,
    StoreArg,
    ThreadSort,
    ThreadStatus,
    TimeoutOpt,
)


def threads(
    store: StoreArg = None,
    db: DbOpt = None,
    sort: Annotated[
        ThreadSort, typer.Option("--sort", help="Order of the rows (updated: newest first).")
    ] = ThreadSort.updated,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most N threads."),
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            metavar="KEY=VALUE",
            help="Keep threads whose latest metadata has KEY=VALUE (repeatable).",
        ),
    ] = None,
    status: Annotated[
        ThreadStatus | None,
        typer.Option("--status", help="Keep threads with this status.", show_default=False),
    ] = None,
    json_out: JsonOpt = False,
    ndjson_out: NdjsonOpt = False,
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """List every thread: checkpoints, namespaces, latest step, status, size.

    Example: ckpt threads db.sqlite --status error --json | jq '.[].errors'
    """
    from ckpt.render.plain import say_notices, threads_table
    from ckpt.render.records import json_array, ndjson, thread_record
    from ckpt.show import encrypted_threads
    from ckpt.threads import select_threads

    filters = dict(_parse_where(w) for w in where or [])
    as_lines = wants_ndjson(json_out, ndjson_out)  # option errors before opening the store
    with open_from_options(store, db, aes_key, schema=schema, timeout=timeout) as opened:
        infos = list(opened.threads())
        records = select_threads(
            (thread_record(t) for t in infos),
            sort=sort.value,
            limit=limit,
            where=filters,
            status=status.value if status else None,
        )
        if as_lines:
            write_lines(ndjson(records))
        elif json_out:
            write_lines(json_array(records))
        else:
            filtered = bool(filters or status) and bool(infos)
            threads_table(records, location=opened.location, filtered=filtered)
        # Metadata is never encrypted, so threads list without a key (FORMAT 2.7); say
        # what the key would add, and fail only when a key was given and is wrong.
        say_notices(encrypted_threads(infos, has_key=opened.aes_key is not None))


def _parse_where(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise typer.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--where")
    return key, value


def history(
    thread: Annotated[str, typer.Argument(metavar="THREAD", help="Thread id.")],
    db: DbOpt = None,
    json_out: JsonOpt = False,
    ndjson_out: NdjsonOpt = False,
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Show a thread's checkpoints as a tree of parent links: forks and subgraphs included.

    Example: ckpt history support-1 --db chat.sqlite
    """
    from ckpt.history import build_history, thread_checkpoints, thread_tasks
    from ckpt.render import human
    from ckpt.render.records import checkpoint_record, json_array, ndjson
    from ckpt.show import require_key_for_bodies

    with open_from_options(None, db, aes_key, schema=schema, timeout=timeout) as opened:
        checkpoints = thread_checkpoints(opened, thread)
        if json_out or ndjson_out:
            tasks = thread_tasks(checkpoints)
            records = (
                checkpoint_record(c, values=False, tasks=tasks[(c.checkpoint_ns, c.checkpoint_id)])
                for c in checkpoints
            )
            as_lines = wants_ndjson(json_out, ndjson_out)
            write_lines(ndjson(records) if as_lines else json_array(records))
        else:
            human.history_tree(thread, build_history(checkpoints))
        require_key_for_bodies(checkpoints, has_key=opened.aes_key is not None)


TABLE_COLUMNS = 12  # checkpoints a terminal can show side by side


def versions(
    thread: Annotated[str, typer.Argument(metavar="THREAD", help="Thread id.")],
    db: DbOpt = None,
    ns: NsOpt = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            metavar="N",
            min=1,
            help="Only the newest N checkpoints (the table shows the newest 12 unless given).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Show which step moved each channel's version, and which task's write moved it.

    Example: ckpt versions support-1 --db chat.sqlite
    """
    from ckpt.history import thread_checkpoints
    from ckpt.render import human
    from ckpt.render.records import dumps
    from ckpt.show import require_key_for_bodies
    from ckpt.versions import version_matrix

    with open_from_options(None, db, aes_key, schema=schema, timeout=timeout) as opened:
        checkpoints = thread_checkpoints(opened, thread, ns or "")
        columns = last if last is not None or json_out else TABLE_COLUMNS
        matrix = version_matrix(checkpoints, last=columns)
        if json_out:
            write_lines(iter([dumps(matrix, indent=2) + "\n"]))
        else:
            human.versions_table(matrix)
        require_key_for_bodies(checkpoints, has_key=opened.aes_key is not None)


def show(
    selector: Annotated[
        str,
        typer.Argument(
            metavar="SELECTOR",
            help="Checkpoint id, unique prefix, short id, THREAD (latest) or THREAD~N.",
        ),
    ],
    db: DbOpt = None,
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
    full: FullOpt = False,
    json_out: JsonOpt = False,
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Show one checkpoint: metadata, versions, next, pending writes; values with --blobs.

    Example: ckpt show support-1~2 --blobs --db chat.sqlite
    """
    from ckpt.reader import CheckpointReader, annotate
    from ckpt.render import human
    from ckpt.render.records import checkpoint_record, dumps
    from ckpt.selectors import resolve
    from ckpt.show import pick_channels, require_key_if_encrypted

    with_values = blobs or bool(channel)
    with open_from_options(None, db, aes_key, schema=schema, timeout=timeout) as opened:
        key = resolve(opened, selector, checkpoint_ns=ns)
        checkpoint = opened.load(key, values=with_values)
        # Before --channel narrows the values and writes.
        checkpoint, tasks = annotate(CheckpointReader(opened), checkpoint, values=with_values)
        if channel:
            checkpoint = pick_channels(checkpoint, channel)
        if json_out:
            record = checkpoint_record(checkpoint, values=with_values, tasks=tasks)
            if writes:
                record = {
                    k: record[k]
                    for k in ("thread_id", "checkpoint_ns", "checkpoint_id", "pending_writes")
                }
            write_lines(iter([dumps(record, indent=2) + "\n"]))
        else:
            latest = opened.latest_key(key.thread_id, key.checkpoint_ns) == key
            human.show_checkpoint(
                checkpoint,
                values=with_values,
                writes_only=writes,
                full=full,
                tasks=tasks,
                latest=latest,
            )
        require_key_if_encrypted(checkpoint, has_key=opened.aes_key is not None)


def register(app: typer.Typer) -> None:
    app.command()(threads)
    app.command()(history)
    app.command()(show)
    app.command()(versions)
