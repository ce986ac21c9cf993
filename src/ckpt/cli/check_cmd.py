"""`check`: whether a store is whole, what is wrong with it and how to fix it (the work is
ckpt.scan.check through CheckpointStore.check; the view is ckpt.render.check_view)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ckpt.cli.common import opened, reading_rows, state
from ckpt.cli.options import (
    JobsOpt,
    JsonOpt,
    QuietOpt,
    StoreArg,
    StoreOptions,
    ThreadsOpt,
    store_options,
)


class FailOn(StrEnum):
    error = "error"
    warning = "warning"


@store_options
def check(
    ctx: typer.Context,
    store: StoreArg = None,
    thread: ThreadsOpt = None,
    stale: Annotated[
        str | None,
        typer.Option(
            "--stale",
            metavar="AGE",
            help="A thread waiting on an interrupt for longer than AGE (30d, 12h, 2w) is a "
            "warning (default: a note, whatever its age).",
            show_default=False,
        ),
    ] = None,
    fail_on: Annotated[
        FailOn,
        typer.Option("--fail-on", help="Exit 1 when a finding this severe or worse is found."),
    ] = FailOn.error,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="FILE",
            help="Instead: list the threads a `ckpt migrate --plan FILE` would still change "
            "(one a line; exit 1 when there are any).",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    jobs: JobsOpt = None,
    *,
    store_options: StoreOptions,
) -> None:
    """Check that a store is whole: every row read once, every value decoded.

    Checks every part of every row the way LangGraph loads it (bodies, metadata, writes,
    blobs), broken parent chains (gaps, cycles, rows out of time order, rows copied from
    another thread), missing and unused blobs and writes, lost delta snapshots, bytes that
    do not decode or (with --aes-key) do not verify, which saver wrote the store and
    whether the current LangGraph reads it, strict-msgpack and pickle values, and threads
    that failed or wait on an interrupt. Each finding says where, and the ckpt command
    that fixes it; nothing is changed. Encrypted values without a key are counted, not
    failed.
    Exit 0: no error found; 1: an error (or, with --fail-on warning, a warning).
    Example: ckpt check chat.sqlite --json | jq '.findings[] | select(.severity == "error")'
    """
    from ckpt.cli.options import fix_line
    from ckpt.errors import ExitCode
    from ckpt.records.encode import dump_document
    from ckpt.records.runs import MigrationBehindRecord

    run = state(ctx)
    if plan is not None:
        with opened(ctx, store_options, store, hidden_exit=False) as checkpoints:
            behind = checkpoints.migration_behind(plan, threads=thread or ())
        if json_out:
            found: MigrationBehindRecord = {"plan": str(plan), "behind": behind}
            run.output.lines(dump_document(found))
        else:
            run.output.lines(f"{t}\n" for t in behind)
        if behind:
            raise typer.Exit(int(ExitCode.FINDINGS))
        return
    with opened(ctx, store_options, store, hidden_exit=False) as checkpoints:
        with reading_rows(
            run.output, checkpoints, thread or (), quiet=quiet, label="checking"
        ) as tick:
            record = checkpoints.check(threads=thread or (), stale=stale, progress=tick, jobs=jobs)
        failing = record["summary"]["error"] > 0 or (
            fail_on == FailOn.warning and record["summary"]["warning"] > 0
        )
        if failing:
            run.closed_pipe_status = int(ExitCode.FINDINGS)
        if json_out:
            run.output.lines(dump_document(record))
        else:
            from ckpt.render.check_view import check_view  # Rich: not for --json

            view = check_view(record, fix_line=fix_line, warnings_fail=fail_on == FailOn.warning)
            run.output.show(view, crop=False)
    if failing:
        raise typer.Exit(int(ExitCode.FINDINGS))


def register(app: typer.Typer) -> None:
    app.command()(check)
