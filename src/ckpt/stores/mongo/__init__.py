"""MongoDBSaver stores (format.md §7c): read-only, through pymongo."""

from ckpt.stores.mongo.store import MongoStore

__all__ = ["MongoStore"]
