"""Which tables a PostgresSaver database holds and how its statements name them: current,
v1 rows of checkpoint-postgres 2.x, or ShallowPostgresSaver (format.md §5, 6, 8.16),
found from the catalog on opening; the reader and the writer both compose SQL with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ckpt.errors import NotACheckpointStore, StoreUnreadable
from ckpt.stores.postgres.session import NEEDED, PgSession

if TYPE_CHECKING:
    from psycopg.sql import Composable, Composed

TABLES: Final = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

# The columns whose values ckpt decodes, by table, and the types it reads them as; any
# other type (a hand-made `text` blob column, say) is refused at open with one line that
# names it (issue 29). Keys (thread, namespace and checkpoint ids) may be of any type.
_TEXT: Final = frozenset({"text", "character varying", "character"})
_INTEGER: Final = frozenset({"integer", "bigint", "smallint"})
READ_AS: Final[dict[str, dict[str, frozenset[str]]]] = {
    "checkpoints": {"checkpoint": frozenset({"jsonb"}), "metadata": frozenset({"jsonb", "json"}),
                    "type": _TEXT},
    "checkpoint_blobs": {"blob": frozenset({"bytea"}), "type": _TEXT},
    "checkpoint_writes": {"blob": frozenset({"bytea"}), "type": _TEXT, "idx": _INTEGER,
                          "channel": _TEXT, "task_path": _TEXT},
}  # fmt: skip


# How every size ckpt shows counts a row (`threads`, `stats`, the dump's `size`): a
# checkpoint as stored (JSONB, possibly compressed), a blob or a write as its bytes.
CHECKPOINT_BYTES: Final = (
    "coalesce(pg_column_size(c.checkpoint), 0) + coalesce(pg_column_size(c.metadata), 0)"
)
BLOB_BYTES: Final = "octet_length(b.blob)"
WRITE_BYTES: Final = "octet_length(w.blob)"


@dataclass
class PgLayout:
    """The checkpoint tables of one schema, as the catalog describes them."""

    shallow: bool  # ShallowPostgresSaver: one row per (thread, ns), the id in the JSONB
    has_blobs: bool
    has_writes: bool
    blob_versions: bool  # checkpoint_blobs has a `version` column (not shallow's)
    text_keys: bool  # thread and checkpoint ids are text: SQL can sort them as Python does
    tables: dict[str, Composable]  # name -> (schema-qualified) identifier
    oids: dict[str, Any]
    id_expr: Composable  # the checkpoint id of row `c`
    parent_expr: Composable  # its parent id (NULL in a shallow store)
    task_path_expr: Composable  # a write's task_path (''::text before checkpoint-postgres 2)
    task_path: bool  # checkpoint_writes has the task_path column (migration 9)
    notices: list[str] = field(default_factory=list)

    def sql(self, template: str, **parts: Composable) -> Composed:
        """Compose a statement with the table names and id expressions ({cp}, {bl}, {wr},
        {id}, {parent})."""
        from psycopg import sql

        composed: Composed = sql.SQL(template).format(
            cp=self.tables["checkpoints"],
            bl=self.tables["checkpoint_blobs"],
            wr=self.tables["checkpoint_writes"],
            id=self.id_expr,
            parent=self.parent_expr,
            **parts,
        )
        return composed


def detect_layout(session: PgSession, schema: str | None) -> PgLayout:
    """The layout of the checkpoint tables in `schema` (None: the search_path), or the
    error that says why this is not a store ckpt can read."""
    sql = session.pg.sql
    location = session.location
    if schema is not None and not session.rows(
        sql.SQL("SELECT 1 FROM pg_namespace WHERE nspname = %s"), (schema,)
    ):
        raise NotACheckpointStore(f"{location}: no schema {schema!r}")
    rows = session.rows(
        sql.SQL(
            "SELECT t.name, r.oid::oid, has_table_privilege(r.oid, 'SELECT'), "
            "(SELECT jsonb_object_agg(a.attname, format_type(a.atttypid, a.atttypmod)) "
            " FROM pg_attribute a WHERE a.attrelid = r.oid "
            " AND a.attnum > 0 AND NOT a.attisdropped) "
            "FROM unnest(%s::text[]) AS t(name) "
            "CROSS JOIN LATERAL (SELECT to_regclass(CASE WHEN %s::text IS NULL "
            "THEN quote_ident(t.name) ELSE format('%%I.%%I', %s::text, t.name) END) "
            "AS oid) AS r"
        ),
        (list(TABLES), schema, schema),
    )
    found = {
        name: (oid is not None, bool(readable), columns or {})
        for name, oid, readable, columns in rows
    }
    if not found["checkpoints"][0]:
        raise NotACheckpointStore(_no_tables_message(session, schema))
    for name, (exists, readable, _) in found.items():
        if exists and not readable:
            raise StoreUnreadable(f"{location}: permission denied for table {name} ({NEEDED})")
    notices: list[str] = []
    columns = found["checkpoints"][2]
    if "checkpoint_id" in columns and "checkpoint" in columns:
        shallow = False
    elif {"thread_id", "checkpoint_ns", "checkpoint"} <= set(columns):
        # ShallowPostgresSaver: same table names, one row per (thread, ns), the id only
        # inside the JSONB and blobs keyed by channel alone (format.md §6).
        shallow = True
        notices.append(
            "ShallowPostgresSaver store: it keeps only the latest checkpoint of each "
            "thread and namespace, and no parent links"
        )
    else:
        raise NotACheckpointStore(
            f"{location}: has a `checkpoints` table, but not one PostgresSaver wrote"
        )
    for table, wanted in READ_AS.items():
        for column, types in wanted.items():
            kind = found[table][2].get(column)
            if kind is not None and not any(kind.startswith(t) for t in types):
                expected = " or ".join(sorted(types))
                raise NotACheckpointStore(
                    f"{location}: `{table}.{column}` is {kind}, not the {expected} "
                    "PostgresSaver writes"
                )
    qualify = (lambda n: sql.Identifier(schema, n)) if schema else sql.Identifier
    blob_columns = found["checkpoint_blobs"][2]
    write_columns = found["checkpoint_writes"][2]
    layout = PgLayout(
        shallow=shallow,
        has_blobs=found["checkpoint_blobs"][0] and "blob" in blob_columns,
        has_writes=found["checkpoint_writes"][0] and "blob" in write_columns,
        blob_versions="version" in blob_columns,
        # Threads stream in the order ckpt sorts them when the keys are text, compared in
        # SQL as Python compares them (see PostgresStore.threads); a hand-made schema's
        # other types are sorted after reading, as their text is only known then.
        text_keys=columns.get("thread_id") == "text"
        and (shallow or columns.get("checkpoint_id") == "text"),
        tables={name: qualify(name) for name in TABLES},
        oids={name: oid for name, oid, _, _ in rows if oid is not None},
        id_expr=sql.SQL("(c.checkpoint->>'id')" if shallow else "c.checkpoint_id"),
        parent_expr=sql.SQL("NULL::text" if shallow else "c.parent_checkpoint_id"),
        task_path_expr=sql.SQL("w.task_path" if "task_path" in write_columns else "''::text"),
        task_path="task_path" in write_columns,
        notices=notices,
    )
    if not layout.has_blobs:
        notices.append(
            "no checkpoint_blobs table: only primitive channel values (kept inline) are shown"
        )
    if not layout.has_writes:
        notices.append("no checkpoint_writes table: pending writes are not shown")
    return layout


def _no_tables_message(session: PgSession, schema: str | None) -> str:
    where = f"schema {schema!r}" if schema else "the search_path"
    message = (
        f"{session.location}: not a LangGraph checkpoint store (no `checkpoints` table in {where})"
    )
    elsewhere = [
        name
        for (name,) in session.rows(
            session.pg.sql.SQL(
                "SELECT DISTINCT n.nspname FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relname = 'checkpoints' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
                "ORDER BY 1"
            )
        )
        if name != schema
    ]
    if elsewhere:
        message += f"; found one in schema {elsewhere[0]!r}: pass `schema` {elsewhere[0]}"
    return message


def migrations(session: PgSession, schema: str | None) -> list[int] | None:
    """The rows of `checkpoint_migrations` (the versions setup() ran, sorted), or None
    when the schema has no such table the session may read."""
    sql = session.pg.sql
    name = "checkpoint_migrations"
    ((oid, readable),) = session.rows(
        sql.SQL(
            "SELECT r.oid, r.oid IS NOT NULL AND has_table_privilege(r.oid, 'SELECT') "
            "FROM (SELECT to_regclass(CASE WHEN %s::text IS NULL THEN quote_ident(%s) "
            "ELSE format('%%I.%%I', %s::text, %s::text) END)::oid AS oid) AS r"
        ),
        (schema, name, schema, name),
    )
    if oid is None or not readable:
        return None
    table = sql.Identifier(schema, name) if schema else sql.Identifier(name)
    return [
        int(v)
        for (v,) in session.rows(
            sql.SQL("SELECT v FROM {} WHERE v IS NOT NULL ORDER BY v").format(table)
        )
    ]
