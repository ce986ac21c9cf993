"""What the tests of Redis and MongoDB targets share: how many checkpoints each thread has
there (a killed copy or prune leaves each thread whole)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def server_thread_sizes(kind: str, url: str) -> list[int]:
    """Checkpoints per thread on a Redis or MongoDB target."""
    if kind == "redis":
        import redis

        counts: dict[str, int] = {}
        with redis.Redis.from_url(url, decode_responses=True) as client:
            for key in client.scan_iter("checkpoint:*", count=5000):
                thread = key.split(":")[1]
                counts[thread] = counts.get(thread, 0) + 1
        return sorted(counts.values())
    from pymongo import MongoClient

    with MongoClient(url) as client:
        db = client.get_default_database()
        if "checkpoints" not in db.list_collection_names():
            return []
        grouped = db.checkpoints.aggregate([{"$group": {"_id": "$thread_id", "n": {"$sum": 1}}}])
        return sorted(row["n"] for row in grouped)
