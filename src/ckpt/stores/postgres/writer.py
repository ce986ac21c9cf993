"""The Postgres Writer: `ckpt prune --apply` and `ckpt vacuum --apply` on a PostgresSaver
database.

One thread per REPEATABLE READ transaction on a connection of its own, under the same
statement timeout as every read: the thread's rows are read and planned inside the
transaction that deletes them, so a run saving meanwhile is neither seen nor deleted.
A lost connection or any error rolls the thread back. The statements look rows up by
primary key (`= ANY(...)`), never by joining two sets of a thread's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ckpt.errors import BadOption, MigrationMismatch, StoreBusy, Unsafe
from ckpt.records.migration import MigrationRows, Rewrite
from ckpt.records.plans import (
    BlobRow,
    CheckpointRow,
    NamespacePlan,
    Planner,
    Strategy,
    ThreadPlan,
    ThreadRows,
    WriteRow,
)
from ckpt.records.types import NO_PAGES, VacuumReport, VacuumStateRecord, VacuumTableRecord
from ckpt.stores.base import Writer
from ckpt.stores.postgres.session import PgSession
from ckpt.stores.prune_rows import metadata_facts

if TYPE_CHECKING:
    from psycopg import Connection

    from ckpt.stores.postgres.schema import PgLayout


class PostgresStore(Protocol):
    """What the writer reads of the store it writes (ckpt.stores.postgres.store, which
    imports this module: the store is named by what it offers, not imported)."""

    location: str
    layout: PgLayout

    @property
    def shallow(self) -> bool: ...

    def vacuum_report(self, *, into: Path | None) -> VacuumReport: ...

    def vacuum_tables(self) -> list[VacuumTableRecord]: ...


def thread_rows(reader: PostgresStore, conn: Connection[Any], thread_id: str) -> ThreadRows:
    """The thread's bookkeeping, read on `conn` (inside the caller's transaction), with
    the reader's table names. A channel holds a value when it is inline in the JSONB or
    its blob at that version is not `empty` (a DeltaChannel snapshot is both)."""
    shallow = reader.shallow
    version = "b.version" if reader.layout.blob_versions else "NULL::text"
    blobbed = (
        "ARRAY(SELECT v.key FROM jsonb_each_text(coalesce(c.checkpoint->'channel_versions', "
        "'{{}}'::jsonb)) v WHERE EXISTS (SELECT 1 FROM {bl} b WHERE b.thread_id = c.thread_id "
        "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key"
        + (" AND b.version = v.value" if reader.layout.blob_versions else "")
        + " AND b.type <> 'empty'))"
        if reader.layout.has_blobs
        else "ARRAY[]::text[]"
    )
    statement = reader.layout.sql(
        "SELECT c.checkpoint_ns, {id}, {parent}, "
        "CASE WHEN jsonb_typeof(c.checkpoint->'v') = 'number' THEN (c.checkpoint->>'v')::int "
        "END, c.metadata, "
        "ARRAY(SELECT jsonb_object_keys(CASE WHEN jsonb_typeof(c.checkpoint->'channel_values') "
        "= 'object' THEN c.checkpoint->'channel_values' ELSE '{{}}'::jsonb END)), "
        + blobbed
        + ", c.checkpoint->'channel_versions', "
        "pg_column_size(c.checkpoint) + pg_column_size(c.metadata) "
        "FROM {cp} c WHERE c.thread_id = %s"
    )
    checkpoints = []
    with conn.cursor() as cur:
        for ns, cid, parent, v, metadata, inline, stored, versions, size in cur.execute(
            statement, (thread_id,)
        ):
            root, delta, js_delta = metadata_facts(metadata)
            checkpoints.append(
                CheckpointRow(
                    checkpoint_ns=ns,
                    checkpoint_id=cid,
                    parent_id=parent,
                    v=v,
                    root_id=root,
                    delta_channels=delta,
                    values=frozenset(inline or ()) | frozenset(stored or ()),
                    versions=(
                        {str(k): str(val) for k, val in versions.items()}
                        if isinstance(versions, dict) and not shallow
                        else {}
                    ),
                    size=int(size or 0),
                    js_delta=js_delta,
                )
            )
        writes = (
            [
                WriteRow(ns, cid, channel, int(size or 0))
                for ns, cid, channel, size in cur.execute(
                    reader.layout.sql(
                        "SELECT w.checkpoint_ns, w.checkpoint_id, w.channel, octet_length(w.blob) "
                        "FROM {wr} w WHERE w.thread_id = %s"
                    ),
                    (thread_id,),
                )
            ]
            if reader.layout.has_writes
            else []
        )
        blobs = (
            [
                BlobRow(ns, channel, blob_version, int(size or 0))
                for ns, channel, blob_version, size in cur.execute(
                    reader.layout.sql(
                        f"SELECT b.checkpoint_ns, b.channel, {version}, octet_length(b.blob) "
                        "FROM {bl} b WHERE b.thread_id = %s"
                    ),
                    (thread_id,),
                )
            ]
            if reader.layout.has_blobs
            else []
        )
        # The ids of the thread's writes with no checkpoint of theirs that are another
        # thread's checkpoints (writes copied from there).
        foreign = (
            frozenset(
                i
                for (i,) in cur.execute(
                    reader.layout.sql(
                        "SELECT DISTINCT w.checkpoint_id FROM {wr} w WHERE w.thread_id = %s "
                        "AND NOT EXISTS (SELECT 1 FROM {cp} c WHERE c.thread_id = w.thread_id "
                        "AND c.checkpoint_ns = w.checkpoint_ns AND {id} = w.checkpoint_id) "
                        "AND EXISTS (SELECT 1 FROM {cp} c WHERE {id} = w.checkpoint_id "
                        "AND c.thread_id <> w.thread_id)"
                    ),
                    (thread_id,),
                )
            )
            if reader.layout.has_writes
            else frozenset()
        )
    return ThreadRows(thread_id, checkpoints, writes, blobs, foreign=foreign)


class PostgresWriter(Writer):
    """A writable connection beside the read-only reader whose schema detection it uses."""

    def __init__(self, reader: PostgresStore, spec: str, *, timeout: float | None) -> None:
        self.reader = reader
        self.session = PgSession(spec, timeout=timeout, writable=True)
        self.location = self.session.location
        self.conn = self.session.conn

    def prune(self, thread_id: str, planner: Planner) -> ThreadPlan:
        with self._transaction(thread_id, "prune"):
            plan = planner(thread_rows(self.reader, self.conn, thread_id))
            if plan.changes:
                for namespace in plan.namespaces:
                    self._apply(thread_id, namespace)
        return plan

    @contextmanager
    def _transaction(self, thread_id: str, verb: str) -> Iterator[None]:
        """One thread's transaction, REPEATABLE READ (the session's level): committed when
        the block ends, rolled back when it raises; a lock held elsewhere, or the thread
        changed meanwhile, is StoreBusy (run `verb` again)."""
        pg = self.session.pg
        try:
            with self.conn.transaction():
                yield
        except pg.errors.LockNotAvailable as exc:
            raise StoreBusy(
                f"{self.session.location}: {exc}; thread {thread_id!r} rolled back"
            ) from None
        except pg.errors.SerializationFailure:
            raise StoreBusy(
                f"{self.session.location}: thread {thread_id!r} changed while it was "
                f"{verb}d; rolled back (run {verb} again)"
            ) from None
        except pg.Error as exc:
            raise self.session.translate(exc) from None

    def _apply(self, thread_id: str, plan: NamespacePlan) -> None:
        sql, reader, ns = self.reader.layout.sql, self.reader, plan.checkpoint_ns
        with self.conn.cursor() as cur:
            if plan.whole:
                cur.execute(
                    sql("DELETE FROM {cp} c WHERE c.thread_id = %s AND c.checkpoint_ns = %s"),
                    (thread_id, ns),
                )
                if reader.layout.has_writes:
                    cur.execute(
                        sql("DELETE FROM {wr} w WHERE w.thread_id = %s AND w.checkpoint_ns = %s"),
                        (thread_id, ns),
                    )
                if reader.layout.has_blobs:
                    cur.execute(
                        sql("DELETE FROM {bl} b WHERE b.thread_id = %s AND b.checkpoint_ns = %s"),
                        (thread_id, ns),
                    )
                return
            if plan.deleted:
                if reader.layout.has_writes:
                    cur.execute(
                        sql(
                            "DELETE FROM {wr} w WHERE w.thread_id = %s AND w.checkpoint_ns = %s "
                            "AND w.checkpoint_id = ANY(%s)"
                        ),
                        (thread_id, ns, plan.deleted),
                    )
                cur.execute(
                    sql(
                        "DELETE FROM {cp} c WHERE c.thread_id = %s AND c.checkpoint_ns = %s "
                        "AND {id} = ANY(%s)"
                    ),
                    (thread_id, ns, plan.deleted),
                )
            if plan.orphan_writes and reader.layout.has_writes:
                cur.execute(
                    sql(
                        "DELETE FROM {wr} w WHERE w.thread_id = %s AND w.checkpoint_ns = %s "
                        "AND w.checkpoint_id = ANY(%s)"
                    ),
                    (thread_id, ns, plan.orphan_writes),
                )
            if plan.parents_cleared and not reader.shallow:
                cur.execute(
                    sql(
                        "UPDATE {cp} c SET parent_checkpoint_id = NULL WHERE c.thread_id = %s "
                        "AND c.checkpoint_ns = %s AND c.checkpoint_id = ANY(%s)"
                    ),
                    (thread_id, ns, plan.parents_cleared),
                )
            by_channel: dict[str, list[str]] = {}
            for channel, version in plan.blobs:
                if version is not None:
                    by_channel.setdefault(channel, []).append(version)
            for channel, versions in sorted(by_channel.items()):
                cur.execute(
                    sql(
                        "DELETE FROM {bl} b WHERE b.thread_id = %s AND b.checkpoint_ns = %s "
                        "AND b.channel = %s AND b.version = ANY(%s)"
                    ),
                    (thread_id, ns, channel, versions),
                )

    # -- migrate ----------------------------------------------------------------------------
    def migrate(
        self, thread_id: str, rewrite: Rewrite, *, latest: bool = False
    ) -> tuple[MigrationRows, MigrationRows | None]:
        """One thread's migration in one REPEATABLE READ transaction, read back before it
        commits (ckpt.stores.base.Writer.migrate)."""
        from ckpt.stores.postgres.migrate import read_rows, write_rows

        with self._transaction(thread_id, "migrate"):
            before = read_rows(self.reader, self.conn, thread_id)
            after = rewrite(before)
            if after is not None:
                write_rows(self.reader, self.conn, before, after)
                if read_rows(self.reader, self.conn, thread_id) != after:
                    raise MigrationMismatch(
                        f"{self.session.location}: thread {thread_id!r} read back differs "
                        "from what was written; rolled back (the threads before it stay "
                        "migrated)"
                    )
        return before, after

    # -- vacuum -----------------------------------------------------------------------------
    def vacuum(self, into: Path | None) -> VacuumReport:
        """The dry run's report, then VACUUM, then the tables as they are after it."""
        if into is not None:
            raise BadOption("`into` is for SQLite stores")
        report = self.reader.vacuum_report(into=None)
        self._vacuum()
        return {
            **report,
            "before": _state(report["tables"] or []),
            "after": _state(self.reader.vacuum_tables()),
        }

    def _vacuum(self) -> None:
        """VACUUM (ANALYZE) the three tables: no lock that blocks readers or writers (not
        FULL), and outside any transaction, as Postgres requires."""
        pg = self.session.pg
        present = {
            "checkpoints": True,
            "checkpoint_blobs": self.reader.layout.has_blobs,
            "checkpoint_writes": self.reader.layout.has_writes,
        }
        tables = [self.reader.layout.tables[name] for name, there in present.items() if there]
        statement = pg.sql.SQL("VACUUM (ANALYZE) {}").format(pg.sql.SQL(", ").join(tables))
        try:
            self.conn.execute(statement)
        except pg.Error as exc:
            raise self.session.translate(exc) from None

    def close(self) -> None:
        self.conn.close()


def _state(tables: list[VacuumTableRecord]) -> VacuumStateRecord:
    """The store before or after VACUUM: its tables (Postgres has no file of its own)."""
    return {
        **NO_PAGES,
        "disk_free_bytes": None,
        "disk_needed_bytes": None,
        "tables": tables,
        "memory": None,
        "journal_mode": None,
    }


def refuse_shallow_keep(reader: PostgresStore, strategy: Strategy) -> None:
    """A shallow store keeps one checkpoint per namespace: only whole threads can go."""
    if reader.shallow and strategy not in ("delete", "orphans"):
        raise Unsafe(
            f"{reader.location}: a ShallowPostgresSaver store keeps only the latest checkpoint "
            "of each namespace already: there is nothing to prune but whole threads "
            "(`strategy='delete'`)"
        )
