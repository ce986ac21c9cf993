"""Open any supported store from what the user typed, and find one in the current folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ckpt.errors import (
    BadOption,
    NotACheckpointStore,
    NotSupported,
    StoreNotFound,
    StoreUnreadable,
)
from ckpt.stores.base import Store, Target

if TYPE_CHECKING:
    from ckpt.stores.redact import Redactor as Redactor
from ckpt.records.vocabulary import PICKLE_NAMES


def is_postgres(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def is_redis(spec: str) -> bool:
    return spec.lower().startswith(("redis://", "rediss://", "unix://"))


def is_mongodb(spec: str) -> bool:
    return spec.lower().startswith(("mongodb://", "mongodb+srv://"))


def is_mysql(spec: str) -> bool:
    return spec.lower().startswith(("mysql://", "mariadb://"))


def is_valkey(spec: str) -> bool:
    return spec.lower().startswith(("valkey://", "valkeys://"))


def is_dynamodb(spec: str) -> bool:
    return spec.lower().startswith("dynamodb://")


# Every URL scheme ckpt reads, as an unknown one's message lists them.
SCHEMES = (
    "postgresql://", "postgres://", "redis://", "rediss://", "unix://", "mongodb://",
    "mongodb+srv://", "mysql://", "mariadb://", "valkey://", "valkeys://", "dynamodb://",
)  # fmt: skip


def _unknown_scheme(spec: str) -> BadOption | None:
    """A URL whose scheme ckpt does not read (a path never has `scheme://`)."""
    scheme, sep, _ = spec.partition("://")
    if not sep or not scheme or not all(c.isalnum() or c in "+-." for c in scheme):
        return None
    return BadOption(
        f"{scheme}://: not a kind of store ckpt reads; it reads files and folders and "
        + ", ".join(SCHEMES)
    )


def open_store(
    spec: str,
    *,
    aes_key: bytes | None = None,
    schema: str | None = None,
    prefix: str | None = None,
    database: str | None = None,
    timeout: float | None = None,
) -> Store:
    """Open a store by URL or path; the reader is chosen by what the path holds."""
    if is_postgres(spec):
        from ckpt.stores.postgres import PostgresStore

        return PostgresStore(spec, aes_key=aes_key, schema=schema, timeout=timeout)
    if is_redis(spec):
        from ckpt.stores.redis import PREFIX, RedisStore

        return RedisStore(spec, aes_key=aes_key, timeout=timeout, prefix=prefix or PREFIX)
    if is_mongodb(spec):
        from ckpt.stores.mongo import MongoStore

        return MongoStore(
            spec, aes_key=aes_key, timeout=timeout, collections=prefix, database=database
        )
    if is_mysql(spec):
        from ckpt.stores.mysql import MySQLStore

        return MySQLStore(spec, aes_key=aes_key, timeout=timeout)
    if is_valkey(spec):
        from ckpt.stores.valkey import AgentCoreStore, ValkeyStore

        if prefix == "agentcore":
            return AgentCoreStore(spec, aes_key=aes_key, timeout=timeout)
        try:
            return ValkeyStore(spec, aes_key=aes_key, timeout=timeout, prefix=prefix)
        except NotACheckpointStore as missing:
            if prefix:
                raise
            try:  # no ValkeySaver keys: AgentCoreValkeySaver's, when they are there
                return AgentCoreStore(spec, aes_key=aes_key, timeout=timeout)
            except NotACheckpointStore:
                raise missing from None
    if is_dynamodb(spec):
        from ckpt.stores.dynamodb import DynamoDBStore

        return DynamoDBStore(spec, aes_key=aes_key, timeout=timeout)
    unknown = _unknown_scheme(spec)
    path = Path(spec).expanduser()
    if unknown is not None and not path.exists():
        raise unknown
    if not path.exists():
        raise StoreNotFound(f"{spec}: no such file or folder")
    if path.is_dir() and not _is_dev_folder(path):
        # A project folder: the one store in it, as when ckpt runs there with no argument.
        path = Path(discover(path))
    if not path.is_dir() and not path.is_file():
        # A pipe (`<(cat db)`) or FIFO: SQLite cannot read one, and opening a FIFO waits.
        raise StoreUnreadable(f"{spec}: not a regular file (a pipe?); copy it to a file first")
    if path.is_dir() or _looks_like_pickle(path):
        from ckpt.stores.pickle import PickleStore

        return PickleStore(path, aes_key=aes_key)
    from ckpt.stores.sqlite import SqliteStore

    return SqliteStore(path, aes_key=aes_key, timeout=timeout)


def open_target(spec: str, *, timeout: float | None = None, shallow: bool = False) -> Target:
    """The store `ckpt copy` writes into: a SqliteSaver file (created when missing), a
    PostgresSaver or MongoDBSaver database, or a RedisSaver server. Opening it changes
    nothing. `shallow`: a Redis target in ShallowRedisSaver's layout."""
    if shallow and not is_redis(spec):
        raise BadOption("`shallow` is for Redis targets (ShallowRedisSaver's layout)")
    if is_postgres(spec):
        from ckpt.stores.postgres.target import PostgresTarget

        return PostgresTarget(spec, timeout=timeout)
    if is_mongodb(spec):
        from ckpt.stores.mongo.target import MongoTarget

        return MongoTarget(spec, timeout=timeout)
    if is_redis(spec):
        from ckpt.stores.redis.target import RedisTarget

        return RedisTarget(spec, timeout=timeout, shallow=shallow)
    if "://" in spec:
        raise NotSupported(
            f"{spec.split('://')[0]}:// targets are not supported: copy into a SQLite file, "
            "a postgresql://, mongodb:// or redis:// store"
        )
    from ckpt.stores.sqlite.target import SqliteTarget

    path = Path(spec).expanduser()
    if path.is_dir() or path.name in PICKLE_NAMES or path.suffix in {".pckl", ".pkl"}:
        raise NotSupported(f"{spec}: copy writes SQLite files and Postgres databases only")
    if not path.parent.is_dir():
        raise StoreNotFound(f"{spec}: no folder {str(path.parent)!r} to create the file in")
    return SqliteTarget(path, busy_timeout=timeout or 5.0)


def redactor(*, keep_keys: frozenset[str], keep_errors: bool, aes_key: bytes | None) -> Redactor:
    """What `ckpt copy --redact` passes every row through (ckpt.stores.redact)."""
    from ckpt.stores.redact import Redactor as Redactor

    return Redactor(keep_keys=keep_keys, keep_errors=keep_errors, aes_key=aes_key)


def _is_dev_folder(path: Path) -> bool:
    """A `.langgraph_api` folder itself (what PickleStore opens)."""
    return any((path / name).exists() for name in PICKLE_NAMES)


def _looks_like_pickle(path: Path) -> bool:
    if path.suffix in {".pckl", ".pkl", ".pickle"}:
        return True
    from ckpt.stores.sqlite import in_use

    if in_use(path):
        # Open as a SQLite store already (`diff --db2` of the same file): reading it here
        # would drop that connection's locks (ckpt.stores.sqlite._HELD).
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(1) == b"\x80"
    except OSError:
        return False


def discover(folder: Path | None = None) -> str:
    """The one store in the current folder: a `.langgraph_api/` or a SQLite checkpoint file."""
    folder = folder or Path.cwd()
    candidates: list[str] = []
    if _is_dev_folder(folder):
        return str(folder)  # we are inside a `.langgraph_api` folder
    api = folder / ".langgraph_api"
    if api.is_dir() and any((api / name).exists() for name in PICKLE_NAMES):
        candidates.append(str(api))
    for pattern in ("*.sqlite", "*.db", "*.sqlite3"):
        for path in sorted(folder.glob(pattern)):
            if path.is_file() and _has_checkpoints_table(path):
                candidates.append(str(path))
    if not candidates:
        hint = " (.langgraph_api holds no checkpoint files)" if api.is_dir() else ""
        raise StoreNotFound(
            f"no checkpoint store found in {folder}{hint}; give `spec`, or set CKPT_DB"
        )
    if len(candidates) > 1:
        shown = ", ".join(os.path.relpath(c, folder) for c in candidates)
        raise StoreNotFound(f"several stores found, pick one: {shown}")
    return candidates[0]


def _has_checkpoints_table(path: Path) -> bool:
    from ckpt.stores.sqlite import has_checkpoints_table

    return has_checkpoints_table(path)
