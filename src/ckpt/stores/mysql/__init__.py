"""MySQL saver stores (langgraph-checkpoint-mysql): PostgresSaver's tables in MySQL."""

from ckpt.stores.mysql.store import MySQLStore

__all__ = ["MySQLStore"]
