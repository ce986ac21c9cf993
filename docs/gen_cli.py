"""Regenerate docs/cli.md from the commands' own --help (run: make docs)."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.errors import ExitCode

HEADER = """\
# ckpt command reference

This file is generated from `ckpt --help` by `docs/gen_cli.py` (`make docs`); a test
fails when it is out of date. Every command answers `--help` / `-h`.

## Choosing the store

Store-level commands ({store_commands}) take the store as a positional argument.
Every command also takes `--db STORE`; then `$CKPT_DB`; then ckpt looks in the current
folder for exactly one `.langgraph_api/` folder or SQLite file (`*.sqlite`, `*.db`,
`*.sqlite3`) that holds a `checkpoints` table. None or several found is an error
that names the candidates.

A store is a SqliteSaver file (every era since langgraph 0.1), a `langgraph dev`
`.langgraph_api/` folder or one of its `.pckl` files, a PersistentDict pickle file, or
a `postgresql://` URL (needs `pip install 'langgraph-ckpt[postgres]'`; libpq `PG*` variables
fill in what the URL leaves out), a RedisSaver or ShallowRedisSaver store's
`redis://[user:pass@]host:port/db`, `rediss://` or `unix://` URL (needs `pip install
'langgraph-ckpt[redis]'` and a server with RedisJSON; the saver's RediSearch indexes are
used when present, docs/format.md §7b), or a MongoDBSaver store's
`mongodb://host:port/[database]` or `mongodb+srv://` URL (needs `pip install
'langgraph-ckpt[mongodb]'`; the database defaults to `checkpointing_db`, format.md §7c),
a MySQL saver's `mysql://user[:pass]@host:port/database` (or `mariadb://`; needs `pip
install 'langgraph-ckpt[mysql]'`, format.md §7e), a ValkeySaver store's
`valkey://host:port[/db]` or `valkeys://` (needs `pip install 'langgraph-ckpt[valkey]'`,
§7f), or a DynamoDBSaver table's
`dynamodb://TABLE?region=...&endpoint_url=...&bucket=...` (needs `pip install
'langgraph-ckpt[dynamodb]'`; what the URL leaves out boto3 reads from the environment,
§7g). Any other `scheme://` is refused with the list of these.
`--prefix` (also spelled `--collection`) names a saver's own key prefix or collections,
`--database` a MongoDB store's database. Stores are only ever read:
SQLite is opened read-only, through SQLite's own locking, so reads are right while an
application writes (a WAL file with no `-shm` gets an empty `-wal` and a `-shm` beside
it: see docs/security.md); Postgres sessions are `default_transaction_read_only` with a
statement timeout, MySQL sessions `TRANSACTION READ ONLY` with one; Redis, Valkey, MongoDB
and DynamoDB (and S3) get read requests only, each within `--timeout` (5 s by default).

## Copying threads (`ckpt copy`)

`ckpt copy SRC DST` carries threads from any store ckpt can copy from (SqliteSaver files of
checkpoint-sqlite 1.0 and later, PostgresSaver and ShallowPostgresSaver databases,
`langgraph dev` folders, the PersistentDict files of checkpoint 2.0.21 and older,
MongoDBSaver) into a SqliteSaver file or a PostgresSaver database. The source is opened
read-only, as every read command opens it, and stays byte-identical.

- **Without `--apply` nothing changes**: the plan lists each thread's checkpoints, writes,
  blobs and bytes, and the threads already on the target. `--json` prints it as a record.
- **Exact.** Values move as the bytes they are, never decoded and re-encoded: a SQLite body
  is cut into Postgres' JSONB (ids, versions and the primitives PostgresSaver keeps inline)
  and blobs by byte span, and Postgres' blobs are spliced back into a SQLite body. Checkpoint
  ids, parent links, namespaces, pending writes (with `task_path` where the target has the
  column), delta snapshots and metadata are all carried; a pre-v4 checkpoint's pending Sends
  move between SqliteSaver's body and the parent's `__pregel_tasks` writes, where
  PostgresSaver reads them. `--rename OLD=NEW` changes only the thread id.
- **Refused, never converted.** A value that cannot be carried exactly (a `pickle` blob, an
  encrypted body that Postgres would need split) leaves its thread out, named; the other
  threads are copied and the run exits 12. Encrypted values are copied still encrypted
  into a layout that keeps them whole, with no key needed.
- **One transaction per thread** on the target: a copy stopped or killed midway leaves
  every thread whole or absent. A missing SQLite file, or missing PostgresSaver tables, are
  created with the schema the saver's `setup()` makes (SQLite in WAL mode, Postgres at
  migration 9); a target already migrated further is refused (exit 12).
- **Conflicts**: a thread already on the target stops an applied copy before it writes
  anything (exit 12), unless `--on-conflict skip` (leave it) or `replace` (delete its rows in
  the same transaction).
- **`--redact`** makes a store for a bug report: every string value (message text, tool
  arguments, interrupt values, error messages, metadata the application added) becomes a
  placeholder of the same length and shape (`Xxxxx 00-xx`), every bytes value zero bytes of
  the same length, inside ext payloads too; the structure stays (threads, namespaces,
  steps, parent links, versions, channel, task and node names, dict keys), and the types
  (class paths, ids, `type` fields, tool names, numbers, datetimes). Nothing is imported or
  constructed. `--keep-key KEY` keeps a key's values, `--keep-errors` the error type names.
  Encrypted values need the key and are written decrypted, so the report needs none.
- **MongoDB** sources need `--renumber-versions`: MongoDBSaver counts channel versions 1, 2,
  3, and SqliteSaver and PostgresSaver, which write `0000…0003.0.27…`, fail to resume a
  thread from those (checked with LangGraph). The option writes them in that format, in
  `channel_versions` and `versions_seen` only, their order kept. Into Postgres, which keeps
  one value per version, a thread whose forks hold different values under one version is
  refused.
- Not yet: Redis sources (RedisSaver keeps values as JSON, not the serializer's bytes) and
  langgraph 0.1 SQLite files (exit 13).

## Selectors

`show` and `diff` name a checkpoint by: its full id; a unique prefix of it; the short id
tables print (the last 8 characters); `THREAD` (the thread's newest checkpoint in the
root namespace, or in `--ns`); `THREAD~N` (N parents back from there, following parent
links).

## Environment

| variable | meaning |
|---|---|
| `CKPT_DB` | the store, when no argument or `--db` is given |
| `LANGGRAPH_AES_KEY` | the key of `EncryptedSerializer` stores (as LangGraph reads it) |
| `NO_COLOR` | no colour, even on a terminal |
| `COLUMNS` | width of human output; unset, piped output is not wrapped (for grep, jq) |
| `CKPT_DEBUG` | show the Python traceback of an internal error |

Colour and box drawing appear only when stdout is a terminal. Data goes to stdout,
errors and notes to stderr as one line: `ckpt: error: ...`.

## Exit codes

| code | name | when |
|---|---|---|
{exit_codes}

Shell completion: `ckpt --install-completion` (bash, zsh, fish, PowerShell).
"""

WHEN = {
    ExitCode.OK: "success",
    ExitCode.DIFFERENT: "`ckpt diff`: the two checkpoints differ (like diff(1)); `ckpt check`: "
    "a finding of error severity (or of the `--fail-on` severity) was found",
    ExitCode.USAGE: "bad arguments or options",
    ExitCode.NO_STORE: "the store path does not exist; no store or several found",
    ExitCode.UNREADABLE: "not SQLite; not a checkpoint store; server down, login or "
    "permission refused; a `copy` target that is read-only (said by the dry run too), full or "
    "not the saver's tables",
    ExitCode.CORRUPT: "the store or a blob is truncated or corrupt",
    ExitCode.ENCRYPTED: "values are encrypted and no key (or a wrong key) was given; "
    "what is readable is still printed",
    ExitCode.NOT_FOUND: "unknown thread, checkpoint, namespace or channel",
    ExitCode.AMBIGUOUS: "an id prefix matches several checkpoints (they are listed)",
    ExitCode.REFUSED: "a pickle file (PersistentDict, `langgraph dev`) names a global outside "
    "the allowlist, or holds a BUILD (nothing of it is set); what can be read is printed, "
    "nothing was run. A `pickle`-tagged value inside a store is only listed",
    ExitCode.MISSING_DEPENDENCY: "an optional extra is needed (`langgraph-ckpt[postgres]`, "
    "`langgraph-ckpt[demo]`, `langgraph-ckpt[tui]`)",
    ExitCode.BUSY: "`prune`/`vacuum`/`copy --apply`: another connection held the store past "
    "`--timeout`; the thread being changed was rolled back (threads before it stay done)",
    ExitCode.MISMATCH: "`migrate --apply`: a thread read back after writing differed from what "
    "was written; that thread was rolled back (the threads before it stay migrated)",
    ExitCode.UNSAFE: "`prune`/`vacuum`: refused as unsafe (a `langgraph dev` folder a server "
    "rewrites, a `--backup`/`--into` file that exists, too little disk); nothing changed. "
    "`copy`: threads already on the target (nothing copied), a thread that cannot be "
    "carried exactly (left out, the others copied), a target schema newer than ckpt knows. "
    "`migrate`: a thread the plan cannot be carried out on, or a transform that raised "
    "(nothing changed)",
    ExitCode.UNSUPPORTED: "`prune`/`vacuum`/`migrate` on a kind of store they do not support "
    "yet, or `copy` from or into one; nothing was read or changed",
    ExitCode.INTERNAL: "an internal error: a bug in ckpt, not a problem of the store (please "
    "report it; `CKPT_DEBUG=1` shows the traceback)",
    ExitCode.NO_SPACE: "a write failed for want of space (a full disk, a quota, a file too "
    "large): the output is cut short",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); `copy --apply` says how many threads it copied, "
    "each whole, and how to copy the rest",
}


def command_names() -> list[str]:
    import typer.main

    group = typer.main.get_command(app)
    return list(group.commands)  # type: ignore[attr-defined]


def store_commands() -> list[str]:
    """The commands whose positional arguments include the store."""
    import typer.main

    group = typer.main.get_command(app)
    return [
        name
        for name, command in group.commands.items()  # type: ignore[attr-defined]
        if any(p.name == "store" and p.param_type_name == "argument" for p in command.params)
    ]


def help_text(args: list[str]) -> str:
    result = CliRunner().invoke(
        app, [*args, "--help"], prog_name="ckpt", terminal_width=100, env={"COLUMNS": "100"}
    )
    if result.exit_code != 0:
        raise SystemExit(f"ckpt {' '.join(args)} --help failed: {result.output}")
    return result.output.rstrip() + "\n"


def render() -> str:
    codes = "\n".join(f"| {int(c)} | {c.name} | {WHEN[c]} |" for c in ExitCode)
    stores = ", ".join(f"`{name}`" for name in store_commands())
    parts = [
        HEADER.format(exit_codes=codes, store_commands=stores),
        "## ckpt\n\n```text\n" + help_text([]) + "```\n",
    ]
    for name in command_names():
        parts.append(f"## ckpt {name}\n\n```text\n" + help_text([name]) + "```\n")
    return "\n".join(parts)


def main() -> int:
    target = Path(__file__).with_name("cli.md")
    target.write_text(render())
    sys.stderr.write(f"wrote {target}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
