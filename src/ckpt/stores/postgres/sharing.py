"""A Postgres dump shared between processes (ckpt.analysis.fanout): every process reads
in a transaction of its own, all of them on one snapshot, which the main process exports
(`pg_export_snapshot`) and each worker's connection takes (`SET TRANSACTION SNAPSHOT`).
So a dump made by several processes sees the very rows one process would, however an
application writes meanwhile. Where the server will not export a snapshot, the dump is
one process's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ckpt.stores.postgres.store import PostgresStore


@contextmanager
def reading(store: PostgresStore) -> Iterator[None]:
    """One read-only REPEATABLE READ transaction around every statement made inside it
    (theirs nest in it as savepoints). Its snapshot is exported for forks
    (`store.exported`), or, in a store forked from one, that snapshot is taken."""
    conn, pg = store.conn, store._session.pg
    if conn.info.transaction_status != pg.pq.TransactionStatus.IDLE:
        yield  # inside one already
        return
    with store._io:
        try:
            _begin(store)
            if store.joins is not None:
                conn.execute(
                    pg.sql.SQL("SET TRANSACTION SNAPSHOT {}").format(pg.sql.Literal(store.joins))
                )
            else:
                store.exported = _export(store)
        except pg.Error as exc:  # a connection ended by the server, a snapshot gone
            with suppress(pg.Error):
                conn.execute("ROLLBACK")
            raise store._session.translate(exc) from None
    try:
        yield
    finally:
        store.exported = None
        with store._io, suppress(pg.Error):
            conn.execute("ROLLBACK")  # a read: nothing to keep


def _begin(store: PostgresStore) -> None:
    store.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")


def _export(store: PostgresStore) -> str | None:
    """The transaction's snapshot, exported; None where the server refuses (a standby in
    recovery, a server that only speaks the protocol), after beginning the transaction
    again (a pg.Error from that is the caller's)."""
    pg = store._session.pg
    try:
        row = store.conn.execute("SELECT pg_export_snapshot()").fetchone()
    except pg.Error:
        store.conn.execute("ROLLBACK")
        _begin(store)
        return None
    return str(row[0]) if row else None


def dump_threads(store: PostgresStore) -> list[tuple[str, int]] | None:
    """Every thread in the dump's order (`ORDER BY thread_id`, the column's collation) with
    its checkpoint count, from the primary key; None unless the dump's transaction has
    exported its snapshot, or when the ids are not text or the count ran out of time."""
    if store.exported is None or not store.layout.text_keys:
        return None
    statement = store.layout.sql(
        "SELECT c.thread_id, count(*) FROM {cp} c GROUP BY c.thread_id ORDER BY c.thread_id"
    )
    pg = store._session.pg
    try:  # a savepoint: a statement timeout must not end the dump's transaction
        with store._io, store.conn.transaction(), store.conn.cursor() as cur:
            cur.execute(statement)
            rows = cur.fetchall()
    except pg.Error:
        return None
    return [(str(thread_id), int(count)) for thread_id, count in rows]


def keep_alive(store: PostgresStore) -> None:
    """A statement in the open read, so that idle_in_transaction_session_timeout (set by
    PgSession) does not end it while the main process waits for a worker."""
    with store._io, suppress(store._session.pg.Error):
        store.conn.execute("SELECT 1")  # a failure: the dump's next statement says it


def fork(store: PostgresStore) -> PostgresStore:
    """Another reader of the store, on a connection of its own (made in the process that
    calls this: a worker after `os.fork`), which joins the exported snapshot."""
    from ckpt.stores.postgres.store import PostgresStore

    other = PostgresStore(
        store._spec, aes_key=store.aes_key, schema=store.schema, timeout=store._timeout
    )
    other.joins = store.exported
    return other
