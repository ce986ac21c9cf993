"""Glue between parsed options and the library: the run's state, opening the store, and
choosing the output."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import typer

from ckpt.cli.options import StoreOptions, in_flags
from ckpt.errors import BadOption, RefusedGlobal, StoreNotFound

if TYPE_CHECKING:
    from ckpt.api import CheckpointStore, Run
    from ckpt.render.output import Output


def _output() -> Output:
    from ckpt.render.output import Output

    return Output.from_environment()


@dataclass
class RunState:
    """What one run of ckpt decided: where output goes, and the exit status to keep when
    the reader closes stdout early (`ckpt diff | head`). Lives in the Click context, so
    two runs in one process never share it."""

    output: Output = field(default_factory=_output)
    closed_pipe_status: int = 0


def state(ctx: typer.Context) -> RunState:
    """The run's state, made on first use (the root command's context holds it)."""
    root = ctx.find_root()
    if not isinstance(root.obj, RunState):
        root.obj = RunState()
    return root.obj


@contextmanager
def opened(
    ctx: typer.Context,
    options: StoreOptions,
    store: str | None = None,
    *,
    hidden_exit: bool = True,
) -> Iterator[CheckpointStore]:
    """The store: the positional argument, else --db, else $CKPT_DB (Typer reads it into
    --db), else the one store in the current folder. Notices are said on stderr before
    and after the command's work; values that stayed encrypted are printed marked, then
    end the run with exit 6 (the library's first EncryptedError; `hidden_exit=False`:
    not for the browser, which shows them); refused pickle values end it with exit 9."""
    output = state(ctx).output
    opened_store = open_store(source(output, store, options), options)
    try:
        notices(output, opened_store.notices)
        yield opened_store
        if opened_store.hidden and hidden_exit:
            raise opened_store.hidden[0]
        notices(output, opened_store.notices)
        if opened_store.refused:
            names = sorted(set(opened_store.refused))
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise RefusedGlobal(
                f"refused to load {shown} from {opened_store.location}: shown as refused "
                "values; nothing was run"
            )
    finally:
        opened_store.close()


@contextmanager
def reading_rows(
    output: Output,
    checkpoints: CheckpointStore,
    threads: Sequence[str],
    *,
    quiet: bool,
    label: str = "reading",
) -> Iterator[Callable[[int], None]]:
    """`advance(n)` for a command that reads every row of `threads` (`check`, `stats`,
    `types`): a stderr bar, its total the rows to read, unless --quiet or stderr is no
    terminal (then the rows are not even counted)."""
    from ckpt.render.progress import advancing

    show_progress = not quiet and output.stderr.isatty()
    total = checkpoints.rows_to_read(threads) if show_progress else None
    with advancing(enabled=show_progress, label=label, unit="rows", total=total) as tick:
        yield tick


def open_store(spec: str, options: StoreOptions) -> CheckpointStore:
    """The store `spec` opened with the command's store options; values it cannot decrypt
    or refuses are kept, marked (`hidden="keep"`): the caller decides what they end."""
    import ckpt.api

    # Every store option but --db is the `open` keyword of its name (tests/test_api.py), so
    # one added to StoreOptions reaches every command's store with nothing more to write.
    keywords = {f.name: getattr(options, f.name) for f in fields(options) if f.name != "db"}
    return ckpt.api.open(spec, hidden="keep", **keywords)


def source(output: Output, store: str | None, options: StoreOptions) -> str:
    """The store a command reads: the positional argument, else --db (or $CKPT_DB, which
    Typer reads into it), else the one store in the current folder, which is then named."""
    import ckpt.api

    spec = store or options.db
    if not spec:
        spec = ckpt.api.find_store()
        # Say which file was picked: the user named none (git says which repository, too).
        output.notices([f"reading {os.path.relpath(spec)} (the one store in this folder)"])
    if not spec:
        raise StoreNotFound("no store given")
    return spec


def notices(output: Output, said: list[str]) -> None:
    """The library's notices on stderr, in the CLI's words; the list is emptied."""
    output.notices([in_flags(n) for n in said])
    said.clear()


def render_run(
    output: Output,
    run: Run,
    *,
    json_out: bool,
    lines: Callable[..., Iterator[str]],
) -> None:
    """Print a writing verb's run (`prune`, `copy`, `migrate`) as the run goes, a thread at
    a time in flat memory: its JSON record, or `lines(head, threads, totals, output)` for
    people; the run's notices on stderr; then the error it ends with, if it refused."""
    from ckpt.render.output import spooled, stream_json_record

    def threads() -> Iterator[Any]:
        notices(output, run.notices)
        yield from run
        notices(output, run.notices)

    if json_out:
        output.lines(
            spooled(
                stream_json_record(run.head, "threads", threads(), lambda: {"totals": run.totals})
            )
        )
    else:
        output.text(lines(run.head, threads(), lambda: run.totals, output))
    if (refusal := run.refusal()) is not None:
        raise refusal


def wants_ndjson(
    ctx: typer.Context, json_flag: bool, ndjson_flag: bool, *, default_when_piped: bool = False
) -> bool:
    if json_flag and ndjson_flag:
        raise BadOption("--json and --ndjson: choose one")
    if ndjson_flag:
        return True
    if json_flag:
        return False
    return default_when_piped and not state(ctx).output.terminal
