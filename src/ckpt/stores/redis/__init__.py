"""RedisSaver stores (format.md §7b): read-only, through redis-py."""

from ckpt.stores.redis.store import RedisStore

__all__ = ["RedisStore"]
