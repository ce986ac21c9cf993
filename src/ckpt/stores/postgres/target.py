"""A PostgresSaver database as the target of `ckpt copy`: its tables made as `setup()` makes
them (MIGRATIONS 0-9), one thread per transaction, rows sent with COPY."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ckpt.errors import CkptError, StoreUnreadable, Unsafe
from ckpt.records.model import RawCheckpoint, RawWrite
from ckpt.stores.base import Carried, Target, ThreadSink
from ckpt.stores.postgres.session import PgSession
from ckpt.stores.transfer import Blob, BlobKey, Sends, SplitRow, to_split

# PostgresSaver's MIGRATIONS of langgraph-checkpoint-postgres 3.2.0 (format.md §5.1), in
# order; index = version. setup() runs those past the table's max(v) and records each.
MIGRATIONS: Final = (
    "CREATE TABLE IF NOT EXISTS checkpoint_migrations (\n    v INTEGER PRIMARY KEY\n);",
    """CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint JSONB NOT NULL,
    metadata JSONB NOT NULL DEFAULT '{}',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);""",
    """CREATE TABLE IF NOT EXISTS checkpoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BYTEA,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);""",
    """CREATE TABLE IF NOT EXISTS checkpoint_writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    blob BYTEA NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);""",
    "ALTER TABLE checkpoint_blobs ALTER COLUMN blob DROP not null;",
    "SELECT 1;",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoints_thread_id_idx ON checkpoints(thread_id);",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_blobs_thread_id_idx ON "
    "checkpoint_blobs(thread_id);",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_writes_thread_id_idx ON "
    "checkpoint_writes(thread_id);",
    "ALTER TABLE checkpoint_writes ADD COLUMN IF NOT EXISTS task_path TEXT NOT NULL DEFAULT '';",
)
LATEST: Final = len(MIGRATIONS) - 1
WRITE_TIMEOUT: Final = 300.0  # seconds: the target's statement timeout without --timeout


class PostgresTarget(Target):
    layout = "split"

    def __init__(self, spec: str, *, timeout: float | None = None) -> None:
        # A thread's rows go in one COPY per table: the reads' 5 s default would cut off a
        # large thread on a busy server, so the target waits longer unless told otherwise.
        self.session = PgSession(spec, timeout=timeout or WRITE_TIMEOUT, writable=True)
        self.location = self.session.location
        self.notices = []
        self.version = self._version()
        if self.version is not None and self.version > LATEST:
            self.session.conn.close()
            raise Unsafe(
                f"{self.location}: its checkpoint tables are at migration {self.version}, "
                f"newer than the {LATEST} ckpt knows; nothing changed"
            )
        self.state = "ready" if self.version == LATEST else "new"
        if self.version is not None and self.version < LATEST:
            self.notices.append(
                f"{self.location}: PostgresSaver tables at migration {self.version}; the copy "
                f"runs migrations {self.version + 1}-{LATEST} first, as setup() would"
            )

    def _version(self) -> int | None:
        rows = self.session.rows(
            self.session.pg.sql.SQL("SELECT to_regclass('checkpoint_migrations') IS NOT NULL")
        )
        if not rows[0][0]:
            if self.session.rows(
                self.session.pg.sql.SQL("SELECT to_regclass('checkpoints') IS NOT NULL")
            )[0][0]:
                raise StoreUnreadable(
                    f"{self.location}: has a `checkpoints` table but no checkpoint_migrations "
                    "(not PostgresSaver's; copy into another database or schema)"
                )
            return None
        found = self.session.rows(
            self.session.pg.sql.SQL("SELECT max(v) FROM checkpoint_migrations")
        )[0][0]
        return int(found) if found is not None else -1

    def laid_out(self, row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends) -> Carried:
        split = to_split(row, blobs, sends)
        return Carried(
            split,
            len(split.checkpoint.encode()) + len(split.metadata.encode()),
            {
                (split.checkpoint_ns, channel, version): data
                for (channel, version), (_, data) in split.blobs.items()
            },
        )

    def check_writable(self, *, replace: bool) -> None:
        sql = self.session.pg.sql.SQL
        standby, read_only = self.session.rows(
            sql("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
        )[0]
        if standby:
            raise StoreUnreadable(f"{self.location}: the target is read-only (a hot standby)")
        if read_only == "on":
            raise StoreUnreadable(
                f"{self.location}: the target is read-only (default_transaction_read_only is on)"
            )
        if self.version is None:
            ((schema, can_create),) = self.session.rows(
                sql(
                    "SELECT current_schema(), current_schema() IS NOT NULL AND "
                    "has_schema_privilege(current_schema(), 'CREATE')"
                )
            )
            if not can_create:
                where = f"schema {schema}" if schema else "any schema of the search_path"
                raise StoreUnreadable(
                    f"{self.location}: permission denied to create tables in {where} "
                    "(copy makes PostgresSaver's tables there)"
                )
            return
        needed = ["INSERT", "DELETE"] if replace else ["INSERT"]
        tables = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
        if self.state != "ready":
            tables.append("checkpoint_migrations")
        for table in tables:
            for privilege in needed:
                (allowed,) = self.session.rows(
                    sql("SELECT has_table_privilege(%s, %s)"), (table, privilege)
                )[0]
                if not allowed:
                    raise StoreUnreadable(
                        f"{self.location}: permission denied for table {table} "
                        f"(copy needs {' and '.join(needed)})"
                    )

    def setup(self) -> None:
        start = -1 if self.version is None else self.version
        conn = self.session.conn
        try:
            for version in range(start + 1, LATEST + 1):
                conn.execute(MIGRATIONS[version])
                conn.execute("INSERT INTO checkpoint_migrations (v) VALUES (%s)", (version,))
        except self.session.pg.Error as exc:
            raise self._error(exc) from None
        self.version, self.state = LATEST, "ready"

    def existing(self, thread_ids: Sequence[str]) -> set[str]:
        if self.version is None:
            return set()
        found: set[str] = set()
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            rows = self.session.rows(
                self.session.pg.sql.SQL(
                    "SELECT DISTINCT thread_id FROM {} WHERE thread_id = ANY(%s)"
                ).format(self.session.pg.sql.Identifier(table)),
                (list(thread_ids),),
            )
            found.update(str(t) for (t,) in rows)
        return found

    def thread(self, thread_id: str, *, replace: bool) -> ThreadSink:
        return _PgSink(self, thread_id, replace)

    def _error(self, exc: BaseException) -> CkptError:
        errors = self.session.pg.errors
        text = self.session._clean(exc)
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return StoreUnreadable(f"{self.location}: the target is read-only ({text})")
        if isinstance(exc, errors.DiskFull):
            return StoreUnreadable(f"{self.location}: the disk is full ({text})")
        if isinstance(exc, errors.InsufficientPrivilege):
            return StoreUnreadable(f"{self.location}: {text} (copy needs INSERT and DELETE)")
        if isinstance(exc, errors.UniqueViolation):
            return StoreUnreadable(
                f"{self.location}: a row of this thread appeared on the target meanwhile ({text})"
            )
        return self.session.translate(exc)

    def close(self) -> None:
        self.session.conn.close()


class _PgSink(ThreadSink):
    """One thread's transaction: rows are buffered per table and sent with COPY at commit
    (the blobs each checkpoint names, each (namespace, channel, version) once)."""

    def __init__(self, target: PostgresTarget, thread_id: str, replace: bool) -> None:
        self.target, self.thread_id, self.replace = target, thread_id, replace
        self.open = False  # BEGIN sent, COMMIT or ROLLBACK not yet
        self.checkpoints: list[tuple[Any, ...]] = []
        self.blobs: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        self.writes: list[tuple[Any, ...]] = []

    def checkpoint(self, row: SplitRow) -> None:
        t = self.thread_id
        self.checkpoints.append(
            (t, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id, None,
             row.checkpoint, row.metadata)
        )  # fmt: skip
        for (channel, version), (tag, data) in row.blobs.items():
            key = (row.checkpoint_ns, channel, version)
            if key not in self.blobs:
                self.blobs[key] = (t, row.checkpoint_ns, channel, version, tag or "", data)

    def write(self, write: RawWrite) -> None:
        self.writes.append(
            (self.thread_id, write.checkpoint_ns, write.checkpoint_id, write.task_id, write.idx,
             write.channel, write.type, write.data or b"", write.task_path)
        )  # fmt: skip

    def flush(self) -> None:
        """The thread's transaction up to its COMMIT: lock, delete (replace), COPY."""
        if self.open:
            return
        session = self.target.session
        conn = session.conn
        try:
            conn.execute("BEGIN")
            self.open = True
            with conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.thread_id,))
                if self.replace:
                    for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                        cur.execute(
                            f"DELETE FROM {table} WHERE thread_id = %s",
                            (self.thread_id,),
                        )
                _copy(
                    cur,
                    "checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                    "parent_checkpoint_id, type, checkpoint, metadata)",
                    self.checkpoints,
                )
                _copy(
                    cur,
                    "checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)",
                    self.blobs.values(),
                )
                _copy(cur, "checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
                      "idx, channel, type, blob, task_path)", self.writes)  # fmt: skip
        except session.pg.Error as exc:
            self.rollback()
            raise self.target._error(exc) from None
        except BaseException:
            self.rollback()
            raise
        self.checkpoints, self.blobs, self.writes = [], {}, []

    def commit(self) -> None:
        self.flush()
        session = self.target.session
        try:
            session.conn.execute("COMMIT")
            self.open = False
        except session.pg.Error as exc:
            self.rollback()
            raise self.target._error(exc) from None

    def rollback(self) -> None:
        self.checkpoints, self.blobs, self.writes = [], {}, []
        if not self.open:
            return
        self.open = False
        try:
            self.target.session.conn.execute("ROLLBACK")
        except self.target.session.pg.Error:
            pass  # the connection is gone: the server rolled the transaction back


def _copy(cur: Any, into: str, rows: Any) -> None:
    with cur.copy(f"COPY {into} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
