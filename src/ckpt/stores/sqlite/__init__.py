"""SqliteSaver stores of every era (format.md §4): the reader, its connection, its writer."""

from ckpt.stores.sqlite.connection import has_checkpoints_table, in_use
from ckpt.stores.sqlite.store import THREADS_PER_BATCH, SqliteStore

__all__ = ["THREADS_PER_BATCH", "SqliteStore", "has_checkpoints_table", "in_use"]
