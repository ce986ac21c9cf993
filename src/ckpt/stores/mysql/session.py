"""A PyMySQL connection for reading a MySQL saver's database: read-only from its first
statement, time-limited, its errors told in one line without passwords."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from ckpt.errors import MissingDependency, NotACheckpointStore, StoreUnreadable
from ckpt.records.vocabulary import DEFAULT_TIMEOUT, install_hint
from ckpt.stores.base import close_quietly
from ckpt.stores.location import redact_url

# MySQL and MariaDB error numbers ckpt tells apart.
_ACCESS_DENIED = (1044, 1045, 1142, 1143)
_NO_DATABASE = 1049
_NO_TABLE = 1146
_TIMEOUTS = (1969, 3024)  # MariaDB max_statement_time, MySQL max_execution_time


def _import_pymysql() -> ModuleType:
    try:
        import pymysql as module
    except ImportError:
        raise MissingDependency(
            f"reading a MySQL store needs PyMySQL: {install_hint('mysql')}"
        ) from None
    return cast(ModuleType, module)


class MySQLSession:
    """One connection. Every statement runs in a read-only transaction (the session's
    transaction mode) under the server's statement time limit (MariaDB's
    max_statement_time, MySQL's max_execution_time)."""

    def __init__(self, spec: str, *, timeout: float | None = None) -> None:
        self.pymysql = _import_pymysql()
        self.location = redact_url(spec)
        self.timeout = timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT
        parts = urlsplit(spec)
        try:
            port = parts.port or 3306
        except ValueError:
            raise StoreUnreadable(f"{self.location}: not a valid MySQL URL (bad port)") from None
        self.database = unquote(parts.path.lstrip("/"))
        if not self.database:
            raise StoreUnreadable(
                f"{self.location}: name the database in the URL (mysql://USER@HOST:PORT/DATABASE)"
            )
        with self.errors("cannot connect"):
            self.conn: Any = self.pymysql.connect(
                host=parts.hostname or "localhost",
                port=port,
                user=unquote(parts.username or "") or None,
                password=unquote(parts.password or ""),
                database=self.database,
                autocommit=True,
                connect_timeout=max(1, round(self.timeout)),
                read_timeout=max(1, round(self.timeout)) + 5,
                charset="utf8mb4",
            )
        try:
            with self.errors("cannot set up the session"):
                (self.version,) = self.one("SELECT version()")
                self.mariadb = "mariadb" in str(self.version).lower()
                self._execute("SET SESSION TRANSACTION READ ONLY")
                if self.mariadb:
                    self._execute(f"SET SESSION max_statement_time = {self.timeout:g}")
                else:
                    self._execute(f"SET SESSION max_execution_time = {round(self.timeout * 1000)}")
        except BaseException:
            self.close()
            raise

    @contextmanager
    def errors(self, doing: str = "cannot read") -> Iterator[None]:
        """Every PyMySQL error as one line (exit 4) that names no password."""
        errors = self.pymysql.err
        try:
            yield
        except errors.OperationalError as exc:
            code = exc.args[0] if exc.args else 0
            if code in _ACCESS_DENIED:
                raise StoreUnreadable(f"{self.location}: {doing}: {_clean(exc)}") from None
            if code == _NO_DATABASE:
                raise NotACheckpointStore(
                    f"{self.location}: no database {self.database!r} on this server"
                ) from None
            if code in _TIMEOUTS:
                raise StoreUnreadable(
                    f"{self.location}: {doing}: no answer within {self.timeout:g} s "
                    "(`timeout` sets the limit)"
                ) from None
            raise StoreUnreadable(f"{self.location}: {doing}: {_clean(exc)}") from None
        except errors.ProgrammingError as exc:
            code = exc.args[0] if exc.args else 0
            if code == _NO_TABLE:
                raise NotACheckpointStore(
                    f"{self.location}: not a MySQL saver database ({_clean(exc)})"
                ) from None
            raise StoreUnreadable(f"{self.location}: the server refused: {_clean(exc)}") from None
        except errors.MySQLError as exc:
            raise StoreUnreadable(f"{self.location}: {doing}: {_clean(exc)}") from None
        except OSError as exc:
            raise StoreUnreadable(f"{self.location}: {doing}: {_clean(exc)}") from None

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(statement, tuple(params) if params else None)
            return list(cur.fetchall())

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.errors():
            return self._execute(statement, params)

    def one(self, statement: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        found = self._execute(statement, params)
        return found[0] if found else ()

    def close(self) -> None:
        close_quietly(self.conn)


def _clean(exc: BaseException) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    text = str(args[1]) if len(args) >= 2 else str(exc)
    return " ".join(text.split())[:300] or type(exc).__name__
