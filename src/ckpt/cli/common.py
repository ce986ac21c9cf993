"""Glue between parsed options and the library: opening the store, choosing the output."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ckpt.errors import BadOption, EncryptedError, RefusedGlobal, StoreNotFound

if TYPE_CHECKING:
    from ckpt.stores.base import Store

DEFAULT_TIMEOUT = 5.0
# The exit status when the reader closes stdout early (`ckpt diff | head`): a command
# whose status carries its answer sets it before printing, so a cut-off pipe keeps it.
_closed_pipe_status = [0]


def set_closed_pipe_status(code: int) -> None:
    _closed_pipe_status[0] = code


def closed_pipe_status() -> int:
    return _closed_pipe_status[0]


@contextmanager
def open_from_options(
    store: str | None,
    db: str | None,
    aes_key: str | None,
    *,
    schema: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[Store]:
    """Positional store, else --db, else $CKPT_DB (Typer reads it into --db), else discovery."""
    from ckpt.decoders import key_from_env_or_arg
    from ckpt.render.plain import say_notices
    from ckpt.stores import discover, open_store

    spec = store or db or discover()
    if not spec:
        raise StoreNotFound("no store given")
    try:
        # LANGGRAPH_AES_KEY is read here rather than by Typer, so that a message about a
        # bad key names where it came from.
        key = key_from_env_or_arg(aes_key)
    except EncryptedError as exc:
        raise BadOption(exc.message) from None
    opened = open_store(spec, aes_key=key, schema=schema, timeout=timeout)
    try:
        from ckpt.show import verify_key

        verify_key(opened)
        say_notices(opened.notices)
        yield opened
        say_notices(opened.notices)
        if opened.refused:
            names = sorted(set(opened.refused))
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise RefusedGlobal(
                f"refused to load {shown} from {opened.location}: shown as refused values; "
                "nothing was run"
            )
    finally:
        opened.close()


def write_lines(lines: Iterator[str]) -> None:
    """Write data lines to stdout; a closed pipe (`| head`) ends quietly."""
    out = sys.stdout
    for line in lines:
        out.write(line)
    out.flush()


def wants_ndjson(json_flag: bool, ndjson_flag: bool, *, default_when_piped: bool = False) -> bool:
    if json_flag and ndjson_flag:
        raise BadOption("--json and --ndjson: choose one")
    if ndjson_flag:
        return True
    if json_flag:
        return False
    return default_when_piped and not sys.stdout.isatty() and not os.environ.get("CKPT_FORCE_TTY")
