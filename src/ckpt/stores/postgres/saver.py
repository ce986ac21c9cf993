"""Which saver wrote a Postgres store and whether LangGraph reads it as it is (`ckpt
check`'s saver facts; format.md §5, 6)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from ckpt.errors import MissingDependency
from ckpt.records.model import SaverFacts
from ckpt.stores.postgres.schema import PgLayout, migrations
from ckpt.stores.postgres.session import PgSession

# The saver release `ckpt check` speaks for (requirements/ci-constraints.txt), and the last
# migration of its ShallowPostgresSaver (its MIGRATIONS list has 8: format.md §6).
PG_RELEASE: Final = "langgraph-checkpoint-postgres 3.2.0"
SHALLOW_LATEST: Final = 7


def _migration_rows(ran: list[int]) -> str:
    """`checkpoint_migrations v0-9` (a gap or a missing first row shows)."""
    if not ran:
        return "checkpoint_migrations is empty"
    if ran == list(range(ran[0], ran[-1] + 1)):
        return f"checkpoint_migrations v{ran[0]}-{ran[-1]}"
    return "checkpoint_migrations v" + ", ".join(map(str, ran))


def saver_facts(session: PgSession, schema: str | None, layout: PgLayout) -> SaverFacts:
    """PostgresStore.saver: the saver, its releases, the evidence, and what LangGraph does."""
    from ckpt.stores.postgres.target import LATEST

    ran = migrations(session, schema)
    rows = "no checkpoint_migrations table" if ran is None else _migration_rows(ran)
    if layout.shallow:
        done = ran is not None and max(ran, default=-1) >= SHALLOW_LATEST
        return SaverFacts(
            saver="ShallowPostgresSaver",
            releases="langgraph-checkpoint-postgres's deprecated shallow saver",
            evidence=(
                "checkpoints without checkpoint_id",
                "checkpoint_blobs without version",
                rows,
            ),
            langgraph="reads" if done else "migrates",
            note=(
                f"ShallowPostgresSaver of {PG_RELEASE} reads it (deprecated); PostgresSaver "
                "cannot (no checkpoint_id column)"
                if done
                else f"ShallowPostgresSaver of {PG_RELEASE} reads it after its setup() runs "
                f"the migrations up to v{SHALLOW_LATEST}"
            ),
        )
    missing = [
        what
        for what, present in (
            ("checkpoint_blobs", layout.has_blobs),
            ("checkpoint_writes", layout.has_writes),
            ("checkpoint_writes.task_path", layout.has_writes and layout.task_path),
        )
        if not present
    ]
    newest = max(ran, default=-1) if ran is not None else -1
    if newest > LATEST:
        langgraph, note = (
            "unknown",
            f"migration v{newest} is newer than the v{LATEST} of {PG_RELEASE}: a later "
            "release wrote it",
        )
    elif missing:
        to_run = f"{newest + 1}-{LATEST}" if newest + 1 < LATEST else str(LATEST)
        langgraph, note = (
            "migrates",
            f"PostgresSaver of {PG_RELEASE} reads it only after setup() runs migration "
            f"{to_run}: without it its reads fail (no {missing[0]})",
        )
    else:
        langgraph, note = "reads", f"PostgresSaver of {PG_RELEASE} reads it as it is"
    if newest > LATEST:
        releases = f"a langgraph-checkpoint-postgres newer than {PG_RELEASE}"
    elif missing or newest < LATEST:
        releases = "langgraph-checkpoint-postgres, before setup() ran all of its migrations"
    else:
        releases = f"langgraph-checkpoint-postgres up to {PG_RELEASE} (migrations 0-{LATEST})"
    return SaverFacts(
        saver="PostgresSaver",
        releases=releases,
        evidence=(
            "checkpoints.checkpoint_id column",
            rows,
            *(f"no {what}" for what in missing),
        ),
        langgraph=langgraph,
        note=note,
    )


@contextmanager
def langgraph_saver(spec: str, schema: str | None) -> Iterator[Any]:
    """LangGraph's own PostgresSaver on the store (PostgresStore.langgraph_saver)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise MissingDependency(
            "`graph` loads threads through LangGraph's PostgresSaver: "
            "pip install langgraph-checkpoint-postgres"
        ) from None
    from psycopg import connect
    from psycopg.rows import dict_row

    # As PostgresSaver.from_conn_string connects, in the store's schema when it has one.
    options = f"-c search_path={schema}" if schema else None
    with connect(
        spec, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=options
    ) as conn:
        yield PostgresSaver(conn)
