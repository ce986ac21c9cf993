"""`diff` and `dump`: compare two checkpoints, or stream a whole store as JSON for jq."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ckpt.cli.common import opened, state, wants_ndjson
from ckpt.cli.options import FullOpt, LocalOpt, NsOpt, StoreArg, StoreOptions, store_options

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore
    from ckpt.records import CheckpointRecord


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
            metavar="B",
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

    from ckpt.changes import diff_records, differs, json_patch
    from ckpt.errors import ExitCode
    from ckpt.records import dump_document
    from ckpt.render import diffview

    run = state(ctx)
    with ExitStack() as stack:
        store_a = stack.enter_context(opened(ctx, store_options))
        store_b = store_a
        if db2 is not None:
            store_b = stack.enter_context(opened(ctx, replace(store_options, db=db2)))
        left, right = _pick(store_a, store_b, a, b, ns=ns, same_store=db2 is None)
        changes = diff_records(left, right)
        if differs(changes):
            run.closed_pipe_status = int(ExitCode.DIFFERENT)
        if json_out:
            run.output.lines(dump_document(json_patch(changes)))
        else:
            run.output.show(diffview.diff_view(left, right, changes, full=full, local=local))
    if differs(changes):
        raise typer.Exit(int(ExitCode.DIFFERENT))


def _pick(
    store_a: CheckpointStore,
    store_b: CheckpointStore,
    a: str,
    b: str | None,
    *,
    ns: str | None,
    same_store: bool,
) -> tuple[CheckpointRecord, CheckpointRecord]:
    """Load A and B; with one selector in one store, B is it and A its parent."""
    from ckpt.decoders import MARK_KEY
    from ckpt.errors import NotFound, RefusedGlobal

    if b is None and same_store:
        right = store_a.checkpoint(a, ns=ns)
        left = store_a.parent(right)
        body = right.get("checkpoint")
        if left is None and isinstance(body, dict) and body.get(MARK_KEY) == "refused":
            # Its parent id is in what was refused: not "no parent" (exit 7), refused (9).
            raise RefusedGlobal(
                f"refused to load {body.get('global')} from {store_a.location}: it is where "
                f"checkpoint {right['checkpoint_id']} of thread {right['thread_id']!r} goes, "
                "so its parent cannot be read; give two checkpoints; nothing was run"
            )
        if left is None:
            raise NotFound(
                f"checkpoint {right['checkpoint_id']} of thread {right['thread_id']!r} has no "
                "parent to compare with; give two checkpoints"
            )
        return left, right
    left = store_a.checkpoint(a, ns=ns)
    try:
        right = store_b.checkpoint(a if b is None else b, ns=ns)
    except NotFound as exc:
        if same_store:
            raise
        raise NotFound(f"in {store_b.location} (--db2): {exc.message}") from None
    return left, right


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
            metavar="TIME|ID",
            help="Only checkpoints written at or after an ISO time (UTC unless it has an "
            "offset) or from a checkpoint id on.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME|ID",
            help="Only checkpoints written before an ISO time, or up to a checkpoint id.",
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
    *,
    store_options: StoreOptions,
) -> None:
    """Stream every checkpoint as JSON: the records of `show --json --blobs` (docs/json.md).

    Streams with flat memory; a progress bar shows on stderr when stdout is piped.
    Example: ckpt dump chat.sqlite --latest | jq -r '.channel_values.messages[-1].content'
    """
    from ckpt.render.output import stream_json_array, stream_ndjson
    from ckpt.render.progress import counting

    run = state(ctx)
    as_lines = wants_ndjson(ctx, json_out, ndjson_out, default_when_piped=True)  # checked first
    with opened(ctx, store_options, store) as checkpoints:
        since_id = _bound(checkpoints, since, "--since") if since is not None else None
        until_id = _bound(checkpoints, until, "--until") if until is not None else None
        stream = checkpoints.dump(
            threads=thread or (),
            ns=ns,
            since_id=since_id,
            until_id=until_id,
            latest=latest,
            values=not no_values,
        )
        show_progress = not quiet and not run.output.terminal and run.output.stderr.isatty()

        def total() -> int | None:
            return checkpoints.dump_total(
                threads=thread or (), ns=ns, since_id=since_id, until_id=until_id, latest=latest
            )

        with counting(stream, enabled=show_progress, label="dumping", total=total) as counted:
            if as_lines:
                run.output.lines(stream_ndjson(counted))
            else:
                run.output.lines(stream_json_array(counted, pretty=False))


def _bound(checkpoints: CheckpointStore, text: str, option: str) -> str:
    """A --since/--until value as a checkpoint id bound (uuid6 ids sort by time)."""
    import datetime as dt
    import re

    from ckpt.decoders import uuid6_lower_bound

    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text, re.I):
        return text.lower()
    if re.match(r"\d{4}-\d{2}-\d{2}", text):
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            raise typer.BadParameter(
                f"{text!r} is not an ISO time (e.g. 2026-11-30T09:00:00Z)", param_hint=option
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return uuid6_lower_bound(when)
    from ckpt.errors import NotFound

    try:
        return checkpoints.resolve(text).checkpoint_id
    except NotFound as exc:
        raise NotFound(
            f"{option} {text!r} is neither an ISO time (e.g. 2026-11-30T09:00:00Z) nor a "
            f"checkpoint or thread ({exc})"
        ) from None


def register(app: typer.Typer) -> None:
    app.command()(diff)
    app.command()(dump)
