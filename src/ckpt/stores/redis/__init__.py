"""RedisSaver stores (format.md §7b): read-only, through redis-py."""

from ckpt.stores.redis.store import PREFIX, RedisStore

__all__ = ["PREFIX", "RedisStore"]
