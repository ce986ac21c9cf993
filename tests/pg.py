"""The PostgreSQL test server as the tests name it: a store built on it (the session
fixtures of tests/conftest.py), and the URL a user would type for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.conninfo import conninfo_to_dict


@dataclass(frozen=True)
class PgStore:
    dsn: str
    manifest: dict[str, Any]


def url_of(dsn: str, **changes: str) -> str:
    """A libpq key=value DSN (what conftest hands out) as the URL a user would type."""
    params = {**conninfo_to_dict(dsn), **changes}
    user = params.get("user", "")
    secret = f":{params['password']}" if params.get("password") else ""
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{secret}@{params.get('host', '')}{port}/{params.get('dbname', '')}"
