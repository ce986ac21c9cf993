"""A Postgres store's connection: read-only (but for the writer's), time-limited, its errors
told without passwords."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ckpt.errors import CkptError, MissingDependency, NotACheckpointStore, StoreUnreadable
from ckpt.records.vocabulary import DEFAULT_TIMEOUT, install_hint
from ckpt.stores.location import redact_url

if TYPE_CHECKING:
    from psycopg import Connection

# A dump holds one read-only transaction open while the reader consumes it; a reader that
# stalls longer than this (a pager left open) is cut off rather than pinning old row versions
# and an AccessShareLock on a production server.
IDLE_IN_TRANSACTION_MS = 60_000
NEEDED = "ckpt needs SELECT on checkpoints, checkpoint_blobs and checkpoint_writes"


class PgSession:
    """One psycopg connection, read-only and under a statement timeout from its first
    statement on, and the store's location and errors as messages show them: no password.

    `location` is the spec as typed without its password until the connection is made,
    then what libpq connected to (see _effective_location).
    """

    def __init__(self, spec: str, *, timeout: float | None = None, writable: bool = False) -> None:
        # `writable`: for `ckpt prune --apply` and `vacuum --apply` only (PostgresWriter).
        self.writable = writable
        self.pg = _import_psycopg()
        self.secrets = _secrets_of(spec)
        self.location = redact_url(spec)
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        self.conn = self._connect(spec)
        try:
            self.location = self._effective_location(spec)
        except BaseException:
            self.conn.close()
            raise

    def _connect(self, spec: str) -> Connection[Any]:
        pg = self.pg
        try:
            params = pg.conninfo.conninfo_to_dict(spec)
        except pg.Error as exc:
            raise StoreUnreadable(
                f"{self.location}: not a valid URL ({self._clean(exc)})"
            ) from None
        statement_ms = max(1, round(self.timeout * 1000))
        # Read-only and time-limited from the first statement on, whatever the role's
        # defaults; appended after any options the user gave, so ours win.
        ours = (
            ("" if self.writable else "-c default_transaction_read_only=on ")
            + f"-c statement_timeout={statement_ms} "
            f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
        )
        theirs = params.get("options") or os.environ.get("PGOPTIONS", "")
        extra: dict[str, Any] = {"options": f"{theirs} {ours}".strip()}
        if "connect_timeout" not in params and "PGCONNECT_TIMEOUT" not in os.environ:
            extra["connect_timeout"] = max(2, math.ceil(self.timeout))
        if "application_name" not in params and "PGAPPNAME" not in os.environ:
            extra["application_name"] = "ckpt"
        try:
            conn: Connection[Any] = pg.connect(spec, autocommit=True, **extra)
        except pg.Error as exc:
            raise StoreUnreadable(f"{self.location}: cannot connect: {self._clean(exc)}") from None
        # Only explicit transaction blocks (the dump's) use these; each other statement is
        # its own transaction, read-only through default_transaction_read_only.
        # Columns of the wrong type in a hand-made schema read as LangGraph's (issue 15).
        from ckpt.stores.columns import typed_pg_rows

        conn.row_factory = typed_pg_rows
        # JSONB (checkpoint bodies, metadata) parsed by orjson where it reads what json
        # would (ckpt.decoders.jsontext): a dump parses 2 of them per checkpoint.
        from psycopg.types.json import set_json_loads

        from ckpt.decoders.jsontext import json_document

        set_json_loads(json_document, conn)
        conn.read_only = not self.writable
        conn.isolation_level = pg.IsolationLevel.REPEATABLE_READ
        return conn

    def _effective_location(self, spec: str) -> str:
        """The URL as typed, without its password; for a bare `postgresql://` (PG* variables)
        or a key=value DSN, the URL of what libpq connected to."""
        if "://" in spec and urlsplit(spec).netloc:
            return self.location
        info = self.conn.info
        host = info.host or ""
        user = quote(info.user or "", safe="")
        dbname = quote(info.dbname or "", safe="")
        if ":" in host:  # IPv6
            host = f"[{host}]"
        elif "/" in host:  # a Unix socket folder
            host = quote(host, safe="")
        return f"postgresql://{user}@{host}:{info.port}/{dbname}"

    def _clean(self, exc: BaseException) -> str:
        """A psycopg error as one line, with any password in it blanked out."""
        text = str(exc)
        if text.startswith("connection failed: "):
            text = text[len("connection failed: ") :]
        for secret in self.secrets:
            text = text.replace(secret, "***")
        # libpq says one thing a line ("... failed: Connection refused\n\tIs the server
        # running ..."): joined with "; " so the line still reads as sentences.
        lines = [" ".join(line.split()) for line in text.splitlines()]
        return "; ".join(line for line in lines if line) or type(exc).__name__

    def rows(self, query: Any, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one statement (binary transfer), its error translated."""
        try:
            with self.conn.cursor(binary=True) as cur:
                cur.execute(query, params)
                return cur.fetchall()
        except self.pg.Error as exc:
            raise self.translate(exc) from None

    def translate(self, exc: BaseException) -> CkptError:
        """A psycopg error as the ckpt error to raise: no password, a hint where one helps."""
        errors = self.pg.errors
        text = self._clean(exc)
        if isinstance(exc, errors.QueryCanceled):
            return StoreUnreadable(
                f"{self.location}: a query ran into the {self.timeout:g} s statement timeout "
                f"({text}); allow more with `timeout`"
            )
        if isinstance(exc, errors.InsufficientPrivilege):
            return StoreUnreadable(f"{self.location}: {text} ({NEEDED})")
        if isinstance(exc, errors.UndefinedTable | errors.UndefinedColumn):
            return NotACheckpointStore(
                f"{self.location}: not a LangGraph checkpoint store ({text})"
            )
        if isinstance(exc, errors.IdleInTransactionSessionTimeout):
            return StoreUnreadable(
                f"{self.location}: the server closed the read-only transaction after "
                f"{IDLE_IN_TRANSACTION_MS // 1000} s without a read ({text})"
            )
        return StoreUnreadable(f"{self.location}: {text}")


def _import_psycopg() -> ModuleType:
    try:
        import psycopg
        import psycopg.conninfo
        import psycopg.sql
    except ImportError:
        raise MissingDependency(
            f"reading a Postgres store needs psycopg 3: {install_hint('postgres')}"
        ) from None
    return psycopg


def _secrets_of(spec: str) -> list[str]:
    """Passwords that must never reach a message: the URL's (raw and decoded), PGPASSWORD."""
    secrets: list[str] = []
    try:
        parts = urlsplit(spec)
        if parts.password:
            secrets += [parts.password, unquote(parts.password)]
        secrets += [v for k, v in parse_qsl(parts.query) if k == "password" and v]
    except ValueError:
        pass
    for word in spec.split():
        if word.startswith("password="):
            secrets.append(word[len("password=") :].strip("'"))
    if env := os.environ.get("PGPASSWORD"):
        secrets.append(env)
    return sorted({s for s in secrets if s}, key=len, reverse=True)
