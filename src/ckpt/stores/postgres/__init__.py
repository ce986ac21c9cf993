"""PostgresSaver and ShallowPostgresSaver databases (format.md §5, 6): the reader, its
session, the schema it finds, and its writer."""

from ckpt.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
