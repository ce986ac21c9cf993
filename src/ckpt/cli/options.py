"""Options shared by every command, declared once so each command spells them the same.

The store options (`--db`, `--aes-key`, `--schema`, `--prefix`, `--timeout`) come as one decorator,
`store_options`, the way sqlite-utils declares its output options: a new backend option
is added here, in one place, and reaches every command as a field of StoreOptions.
"""

from __future__ import annotations

import functools
import inspect
import re
import shlex
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from ckpt.records.types import FixRecord
from ckpt.records.vocabulary import STATUSES, THREAD_SORTS

F = TypeVar("F", bound=Callable[..., Any])


def _finite(value: float | None, name: str) -> float | None:
    if value is not None and value != value:  # NaN passes every range check
        raise typer.BadParameter("must be a number of seconds", param_hint=name)
    return value


StoreArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[STORE]",
        help="SQLite file, .langgraph_api folder or .pckl file, or a postgresql://, redis://, "
        "mongodb://, mysql://, valkey:// or dynamodb:// URL. "
        "Default: --db, then $CKPT_DB, then the one store in the current folder.",
        show_default=False,
    ),
]
# The stores a writing command changes, and only those (issue 46 §3): `--help` lists what
# the command accepts; the others are refused with exit 13 (or 12 for `langgraph dev`).
WritableStoreArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[STORE]",
        help="A SQLite file, or a postgresql://, mongodb:// (MongoDBSaver) or redis:// "
        "(RedisSaver) URL; other kinds are read, not changed (exit 13). "
        "Default: --db, then $CKPT_DB, then the one store in the current folder.",
        show_default=False,
    ),
]
MigratableStoreArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[STORE]",
        help="A SQLite file or a postgresql:// URL; other kinds are not migrated (exit 13). "
        "Default: --db, then $CKPT_DB, then the one store in the current folder.",
        show_default=False,
    ),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="CKPT_DB",
        metavar="STORE",
        help="The store (path, or postgresql://, redis://, mongodb://, mysql://, valkey:// or "
        "dynamodb:// URL); also $CKPT_DB.",
        show_default=False,
    ),
]
AesKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--aes-key",
        metavar="KEY",
        help="Key for EncryptedSerializer stores (16, 24 or 32 bytes); also $LANGGRAPH_AES_KEY.",
        show_default=False,
    ),
]
SchemaOpt = Annotated[
    str | None,
    typer.Option(
        "--schema",
        metavar="NAME",
        help="Postgres schema holding the checkpoint tables.",
        show_default=False,
    ),
]
PrefixOpt = Annotated[
    str | None,
    typer.Option(
        "--prefix",
        "--collection",
        metavar="PREFIX",
        help="Where the saver keeps it. Redis: checkpoint_prefix[,checkpoint_write_prefix] "
        "(default checkpoint; writes PREFIX_write). MongoDB: the checkpoints collection"
        "[,writes collection] (default checkpoints,checkpoint_writes; writes NAME_writes).",
        show_default=False,
    ),
]
DatabaseOpt = Annotated[
    str | None,
    typer.Option(
        "--database",
        metavar="NAME",
        help="MongoDB database holding the saver's collections (default: the URL's path, "
        "else checkpointing_db, MongoDBSaver's).",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Statement timeout in seconds: Postgres, Redis and MongoDB (default 5), and "
        "SQLite reads when given (default: none).",
        show_default=False,
        min=0.1,
        max=86_400.0,  # also refuses inf and, through the callback, nan
        callback=lambda value: _finite(value, "--timeout"),
    ),
]


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """How to open the store: what `store_options` adds to a command."""

    db: str | None = None
    aes_key: str | None = None
    schema: str | None = None
    prefix: str | None = None
    database: str | None = None
    timeout: float | None = None  # Postgres: DEFAULT_TIMEOUT; SQLite: no limit


_STORE_PARAMETERS: tuple[tuple[str, Any, Any], ...] = (
    ("db", DbOpt, None),
    ("aes_key", AesKeyOpt, None),
    ("schema", SchemaOpt, None),
    ("prefix", PrefixOpt, None),
    ("database", DatabaseOpt, None),
    ("timeout", TimeoutOpt, None),
)


def _grouped(
    func: F, name: str, parameters: tuple[tuple[str, Any, Any], ...], build: Callable[..., Any]
) -> F:
    """`func` with `parameters` (name, Annotated hint, default) added as keyword-only
    options, handed to it as one keyword argument `name`: `build(**their values)`."""
    # Resolved here, in the command's own module: the annotations are strings
    # (`from __future__ import annotations`) that Typer would otherwise resolve in this one.
    hints = typing.get_type_hints(func, include_extras=True)
    signature = inspect.signature(func)
    kept = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.name != name
    ]
    added = [
        inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        for option, hint, default in parameters
    ]

    @functools.wraps(func)
    def command(*args: Any, **kwargs: Any) -> Any:
        given = {option: kwargs.pop(option) for option, _, _ in parameters}
        return func(*args, **{name: build(**given)}, **kwargs)

    command.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    own = {k: v for k, v in hints.items() if k != name}
    command.__annotations__ = {**own, **{option: hint for option, hint, _ in parameters}}
    return command  # type: ignore[return-value]


def store_options(func: F) -> F:
    """Add --db, --aes-key, --schema, --prefix and --timeout to a command, handed to it as one
    keyword argument `store_options: StoreOptions`."""
    return _grouped(func, "store_options", _STORE_PARAMETERS, StoreOptions)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema in docs/json.md).")]
NdjsonOpt = Annotated[bool, typer.Option("--ndjson", help="Print one JSON object per line.")]
NsOpt = Annotated[
    str | None,
    typer.Option(
        "--ns",
        metavar="NS",
        help="Checkpoint namespace (default: the root namespace '').",
        show_default=False,
    ),
]
LocalOpt = Annotated[
    bool,
    typer.Option(
        "--local/--utc",
        help="Times in the local zone, or in UTC (the default; JSON keeps the stored times).",
    ),
]
FullOpt = Annotated[bool, typer.Option("--full", help="Show long values whole instead of cut.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar on stderr.")]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        metavar="N",
        help="Processes that share the work on a whole SQLite, Postgres or Redis store "
        "(dump: its NDJSON; default: one per core, up to 4, from 5,000 checkpoints; 1: one "
        "process). The output is the same.",
        show_default=False,
    ),
]
FollowOpt = Annotated[
    bool,
    typer.Option(
        "--follow",
        "-f",
        help="Keep watching: print what changes as a graph writes (Ctrl-C stops; --json: NDJSON).",
    ),
]
IntervalOpt = Annotated[
    float,
    typer.Option(
        "--interval",
        metavar="SECONDS",
        min=0.01,
        max=3600.0,
        help="With --follow: seconds between two looks at the store.",
        callback=lambda value: _finite(value, "--interval"),
    ),
]
ThreadsOpt = Annotated[
    list[str] | None,
    typer.Option("--thread", "-t", metavar="THREAD", help="Only this thread (repeatable)."),
]


# The --sort choices: the sort orders of ckpt.records.vocabulary, in its order.
ThreadSort = StrEnum("ThreadSort", {sort: sort for sort in THREAD_SORTS})  # type: ignore[misc]


# The --status choices: the status vocabulary of ckpt.records.vocabulary, in its order.
ThreadStatus = StrEnum("ThreadStatus", {status: status for status in STATUSES})  # type: ignore[misc]
WhereOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        "-w",
        metavar="KEY=VALUE",
        help="Only threads whose latest metadata has KEY=VALUE (repeatable).",
    ),
]
StatusOpt = Annotated[
    ThreadStatus | None,
    typer.Option("--status", help="Only threads with this status.", show_default=False),
]


OlderThanOpt = Annotated[
    str | None,
    typer.Option(
        "--older-than",
        metavar="AGE",
        help="Threads whose latest checkpoint is older than AGE (30d, 12h, 2w) or than an "
        "ISO time or date.",
        show_default=False,
    ),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="Threads updated at or after TIME: an ISO time or date (2026-11-01), an age "
        "(7d, 12h), or a checkpoint id or thread (from its time on).",
        show_default=False,
    ),
]
AllOpt = Annotated[
    bool, typer.Option("--all", help="Every thread (needed when nothing else selects).")
]
ApplyOpt = Annotated[
    bool, typer.Option("--apply", help="Make the change (without it: print the plan only).")
]


# The API's words as library messages name them, in backticks (ckpt.errors.CkptError), and
# what the command line says instead: its flags.
FLAGS: dict[str, str] = {
    "threads": "--thread",
    "older_than": "--older-than",
    "since": "--since",
    "until": "--until",
    "since_id": "--since",
    "until_id": "--until",
    "stale": "--stale",
    "status": "--status",
    "where": "--where",
    "all=True": "--all",
    "rename": "--rename",
    "on_conflict": "--on-conflict",
    "on_conflict='skip', apply=True": "--on-conflict skip --apply",
    "redact": "--redact",
    "redact=True": "--redact",
    "keep_keys": "--keep-key",
    "keep_errors": "--keep-errors",
    "renumber_versions": "--renumber-versions",
    "renumber_versions=True": "--renumber-versions",
    "shallow": "--shallow",
    "strategy": "--keep-latest, --keep-last or --delete",
    "strategy='delete'": "--delete",
    "strategy='orphans'": "--orphans",
    "keep": "--keep-last",
    "backup": "--backup",
    "rename_channel": "--rename-channel",
    "drop_channel": "--drop-channel",
    "rename_node": "--rename-node",
    "add_channel": "--add-channel",
    "plan": "--plan",
    "latest": "--latest",
    "graph": "--graph",
    "into": "--into",
    "apply": "--apply",
    "apply=True": "--apply",
    "timeout": "--timeout",
    "aes_key": "--aes-key",
    "schema": "--schema",
    "prefix": "--prefix",
    "database": "--database",
    "ns": "--ns",
    "other": "--db2",
    "spec": "--db",
    "interval": "--interval",
}
_NAMED = re.compile(r"`([^`\n]+)`")


def in_flags(text: str) -> str:
    """Library words as the command line says them: each `parameter` FLAGS knows becomes
    its flag; other backticked words stay as they are."""
    return _NAMED.sub(lambda m: FLAGS.get(m.group(1), m.group(0)), text)


def fix_line(fix: FixRecord) -> str:
    """A finding's fix (ckpt.records.types.FixRecord: the API's verb, arguments and
    options) as the one command line to paste: `ckpt copy BACKUP STORE --thread T
    --on-conflict replace --apply`."""
    words = ["ckpt", fix["verb"], *fix["arguments"]]
    for name, value in fix["options"].items():
        if value is True:
            words.append(FLAGS[f"{name}=True"])
        elif name == "strategy":
            words.append(FLAGS[f"strategy={value!r}"])
        elif isinstance(value, list):
            for item in value:
                words += [FLAGS[name], str(item)]
        else:
            words += [FLAGS[name], str(value)]
    placeholders = set(fix["placeholders"])
    return " ".join(w if w in placeholders else shlex.quote(w) for w in words)


@dataclass(frozen=True, slots=True)
class Watching:
    """How a listing that can follow the store is printed: what `watch_options` adds."""

    local: bool = False
    json_out: bool = False
    ndjson_out: bool = False
    follow: bool = False
    interval: float = 1.0


_WATCH_PARAMETERS: tuple[tuple[str, Any, Any], ...] = (
    ("local", LocalOpt, False),
    ("json_out", JsonOpt, False),
    ("ndjson_out", NdjsonOpt, False),
    ("follow", FollowOpt, False),
    ("interval", IntervalOpt, 1.0),
)


def watch_options(func: F) -> F:
    """Add the listing options of `threads` and `history` (--local/--utc, --json, --ndjson,
    --follow, --interval) to a command, after its own, handed to it as one keyword argument
    `watching: Watching`."""
    return _grouped(func, "watching", _WATCH_PARAMETERS, Watching)


_SELECTION_PARAMETERS: tuple[tuple[str, Any, Any], ...] = (
    ("thread", ThreadsOpt, None),
    ("older_than", OlderThanOpt, None),
    ("since", SinceOpt, None),
    ("status", StatusOpt, None),
    ("where", WhereOpt, None),
    ("every", AllOpt, False),
)


def selection(
    thread: list[str] | None = None,
    older_than: str | None = None,
    since: str | None = None,
    status: Any = None,
    where: list[str] | None = None,
    every: bool = False,
) -> dict[str, Any]:
    """The threads `prune` and `copy` select, as the API's keywords (ckpt.api's `threads`,
    `older_than`, `since`, `status`, `where`, `all`): times stay text, the API parses it."""
    return {
        "threads": list(dict.fromkeys(thread or ())),
        "older_than": older_than,
        "since": since,
        "status": status.value if status else None,
        "where": dict(parse_where(w) for w in where or ()),
        "all": every,
    }


def thread_selection(func: F) -> F:
    """Add the thread selection of `prune`, `copy` and `migrate` (--thread, --older-than,
    --since, --status, --where, --all) to a command, handed to it as one keyword argument
    `selected`: the API's keywords (`selection`)."""
    return _grouped(func, "selected", _SELECTION_PARAMETERS, selection)


def parse_where(text: str) -> tuple[str, str]:
    """A --where KEY=VALUE, or the usage error that says what is wrong with it."""
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise typer.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--where")
    return key, value
