"""`diff` and `dump`: compare two checkpoints, or stream a whole store as JSON for jq."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ckpt.cli.common import (
    DEFAULT_TIMEOUT,
    open_from_options,
    set_closed_pipe_status,
    wants_ndjson,
    write_lines,
)
from ckpt.cli.options import (
    AesKeyOpt,
    DbOpt,
    FullOpt,
    NsOpt,
    SchemaOpt,
    StoreArg,
    TimeoutOpt,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ckpt.model import Checkpoint
    from ckpt.stores.base import Store


def diff(
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
    db: DbOpt = None,
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
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print an RFC 6902 JSON Patch from A's `show --json --blobs` to B's.",
        ),
    ] = False,
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Compare two checkpoints: channel values, messages by id, versions, metadata, writes.

    Exit status as diff(1): 0 when they hold the same, 1 when they differ.
    Example: ckpt diff support-1~1 support-1 --db chat.sqlite --json | jq .
    """
    from contextlib import ExitStack

    from ckpt.diff import diff_checkpoints, differs, json_patch
    from ckpt.errors import ExitCode
    from ckpt.render import diffview
    from ckpt.render.records import dumps
    from ckpt.show import require_key_if_encrypted

    with ExitStack() as stack:
        store_a = stack.enter_context(
            open_from_options(None, db, aes_key, schema=schema, timeout=timeout)
        )
        store_b = store_a
        if db2 is not None:
            store_b = stack.enter_context(
                open_from_options(db2, None, aes_key, schema=schema, timeout=timeout)
            )
        left, right = _pick(store_a, store_b, a, b, ns=ns, same_store=db2 is None)
        from ckpt.reader import CheckpointReader, annotate

        left, tasks_a = annotate(CheckpointReader(store_a), left, values=True)
        right, tasks_b = annotate(CheckpointReader(store_b), right, values=True)
        changes = diff_checkpoints(left, right, tasks_a=tasks_a, tasks_b=tasks_b)
        if differs(changes):
            set_closed_pipe_status(int(ExitCode.DIFFERENT))
        if json_out:
            write_lines(iter([dumps(json_patch(changes), indent=2) + "\n"]))
        else:
            diffview.diff_view(left, right, changes, full=full)
        require_key_if_encrypted(left, has_key=store_a.aes_key is not None)
        require_key_if_encrypted(right, has_key=store_b.aes_key is not None)
    if differs(changes):
        raise typer.Exit(int(ExitCode.DIFFERENT))


def _pick(
    store_a: Store, store_b: Store, a: str, b: str | None, *, ns: str | None, same_store: bool
) -> tuple[Checkpoint, Checkpoint]:
    """Load A and B; with one selector in one store, B is it and A its parent."""
    from ckpt.errors import NotFound
    from ckpt.model import CheckpointKey
    from ckpt.selectors import resolve

    if b is None and same_store:
        right = store_a.load(resolve(store_a, a, checkpoint_ns=ns))
        if right.parent_checkpoint_id is None:
            raise NotFound(
                f"checkpoint {right.checkpoint_id} of thread {right.thread_id!r} has no parent "
                "to compare with; give two checkpoints"
            )
        parent = CheckpointKey(right.thread_id, right.checkpoint_ns, right.parent_checkpoint_id)
        return store_a.load(parent), right
    left = store_a.load(resolve(store_a, a, checkpoint_ns=ns))
    try:
        right = store_b.load(resolve(store_b, a if b is None else b, checkpoint_ns=ns))
    except NotFound as exc:
        if same_store:
            raise
        raise NotFound(f"in {store_b.location} (--db2): {exc.message}") from None
    return left, right


def dump(
    store: StoreArg = None,
    db: DbOpt = None,
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
    aes_key: AesKeyOpt = None,
    schema: SchemaOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
) -> None:
    """Stream every checkpoint as JSON: the records of `show --json --blobs` (docs/json.md).

    Streams with flat memory; a progress bar shows on stderr when stdout is piped.
    Example: ckpt dump chat.sqlite --latest | jq -r '.channel_values.messages[-1].content'
    """
    import sys

    from ckpt.errors import BadOption, NotFound
    from ckpt.model import DumpQuery
    from ckpt.reader import CheckpointReader, annotate
    from ckpt.render.progress import counting
    from ckpt.render.records import checkpoint_record, json_array, ndjson
    from ckpt.show import hides_values, require_key_if_encrypted

    values = not no_values
    as_lines = wants_ndjson(json_out, ndjson_out, default_when_piped=True)  # checked first
    with open_from_options(store, db, aes_key, schema=schema, timeout=timeout) as opened:
        for thread_id in thread or []:
            if not thread_id.strip():
                raise BadOption("empty thread id in --thread")
            if not opened.thread_exists(thread_id):
                raise NotFound(f"no thread {thread_id!r} in {opened.location}")
        query = DumpQuery(
            thread_ids=tuple(dict.fromkeys(thread or [])),
            checkpoint_ns=ns,
            since_id=_bound(opened, since, "--since") if since is not None else None,
            until_id=_bound(opened, until, "--until") if until is not None else None,
            latest_only=latest,
        )
        hidden: list[Checkpoint] = []  # the first checkpoint whose values did not decrypt
        count = [0]
        reader = CheckpointReader(opened)

        def records() -> Iterator[dict[str, Any]]:
            for checkpoint in opened.iter_checkpoints(query, values=values):
                count[0] += 1
                if not hidden and hides_values(checkpoint):
                    hidden.append(checkpoint)
                checkpoint, tasks = annotate(reader, checkpoint, values=values)
                yield checkpoint_record(checkpoint, values=values, tasks=tasks)

        show_progress = not quiet and not sys.stdout.isatty() and sys.stderr.isatty()
        with counting(records(), enabled=show_progress, label="dumping") as counted:
            if as_lines:
                write_lines(ndjson(counted))
            else:
                write_lines(json_array(counted, pretty=False))
        if hidden:
            require_key_if_encrypted(hidden[0], has_key=opened.aes_key is not None)
        if not count[0] and ns is not None and since is None and until is None:
            # Like an unknown --thread: a namespace that matches nothing is a mistake (often
            # `node` instead of `node:<task id>`), not an empty store.
            raise NotFound(
                f"no checkpoints in namespace {ns!r}; `ckpt threads --json` lists namespaces"
            )


def _bound(opened: Store, text: str, option: str) -> str:
    """A --since/--until value as a checkpoint id bound (uuid6 ids sort by time)."""
    import datetime as dt
    import re

    from ckpt.decoders import uuid6_lower_bound
    from ckpt.selectors import resolve

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
    return resolve(opened, text).checkpoint_id


def register(app: typer.Typer) -> None:
    app.command()(diff)
    app.command()(dump)
