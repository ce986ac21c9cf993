"""Test parameters that need the PostgreSQL test server, marked so `-m 'not postgres'` can
leave them out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def postgres_marked(names: Iterable[str]) -> list[Any]:
    """`names` as parameters, those of Postgres stores marked `postgres` (they need the server)."""
    return [pytest.param(n, marks=pytest.mark.postgres) if "postgres" in n else n for n in names]
