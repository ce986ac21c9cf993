"""The Redis Writer: `ckpt prune --apply` and `ckpt vacuum --apply` on a RedisSaver store.

Each thread is one MULTI/EXEC under WATCH: its keys are read and planned, then the plan
runs as one transaction, which Redis applies whole or, when another client changed one of
the thread's checkpoint keys meanwhile (a live graph), not at all (the thread is then left
as it was and named). What goes with a deleted checkpoint: its document, its pending
writes' documents and its `write_keys_zset`; a namespace deleted whole loses its
`checkpoint_latest` pointer too. A kept checkpoint whose parent goes gets
`parent_checkpoint_id` "" (RedisSaver's "no parent"), set in place (JSON.SET on the
field), which leaves the key's TTL as it was. RediSearch drops a deleted key from its
indexes itself. Keys that expire (RedisSaver's `ttl`) may vanish between the read and the
transaction: deleting a key that is gone is no error, and a kept one expiring is the
saver's own doing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckpt.errors import StoreBusy
from ckpt.records.plans import Planner, ThreadPlan
from ckpt.records.types import VacuumReport, vacuum_state
from ckpt.stores.base import Writer
from ckpt.stores.redis.keys import latest_key, write_zset_key

if TYPE_CHECKING:
    from ckpt.stores.redis.store import RedisStore


class RedisWriter(Writer):
    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.location = store.location

    def prune(self, thread_id: str, planner: Planner) -> ThreadPlan:
        store = self.store
        session = store.session
        names = store._thread_names(thread_id)
        keys = {(n.checkpoint_ns, n.checkpoint_id): key for key, n in names}
        writes: dict[tuple[str, str], list[str]] = {}
        for key, name in store._thread_write_names(thread_id):
            writes.setdefault((name.checkpoint_ns, name.checkpoint_id), []).append(key)
        with session.errors(f"cannot prune thread {thread_id!r} (nothing changed in it)"):
            pipe = session.client.pipeline(transaction=True)
            try:
                if keys:
                    pipe.watch(*keys.values())
                plan = planner(store.thread_rows(thread_id))
                if not plan.changes:
                    return plan
                doomed: list[str] = []
                cleared: list[str] = []
                for namespace in plan.namespaces:
                    ns = namespace.checkpoint_ns
                    if namespace.whole:
                        ids = [cid for (n, cid) in {*keys, *writes} if n == ns]
                        doomed.append(latest_key(store.prefix, thread_id, ns))
                    else:
                        ids = [*namespace.deleted, *namespace.orphan_writes]
                    for cid in ids:
                        if cid in namespace.orphan_writes and cid not in namespace.deleted:
                            pass  # the checkpoint is gone already: its writes go
                        elif (ns, cid) in keys:
                            doomed.append(keys[(ns, cid)])
                        doomed.extend(writes.get((ns, cid), ()))
                        doomed.append(write_zset_key(thread_id, ns, cid))
                    cleared.extend(
                        keys[(ns, cid)] for cid in namespace.parents_cleared if (ns, cid) in keys
                    )
                pipe.multi()
                for chunk in _chunks(doomed):
                    pipe.execute_command("DEL", *chunk)
                for key in cleared:
                    pipe.execute_command("JSON.SET", key, "$.parent_checkpoint_id", '""')
                pipe.execute()
            except store.session.redis.exceptions.WatchError:
                raise StoreBusy(
                    f"{self.location}: thread {thread_id!r} changed while it was pruned (a "
                    "graph wrote it): nothing changed in it; prune it again"
                ) from None
            finally:
                pipe.reset()
        return plan

    def vacuum(self, into: Path | None) -> VacuumReport:
        """MEMORY PURGE: ask the allocator to give the pages it freed back to the system
        (Redis frees a deleted key's memory at once; jemalloc may hold the pages)."""
        store = self.store
        before = store.vacuum_report(into=into)
        with store.session.errors("MEMORY PURGE was refused"):
            store.session.client.execute_command("MEMORY", "PURGE")
        after = store.vacuum_report(into=into)
        return {**before, "before": vacuum_state(before), "after": vacuum_state(after)}

    def close(self) -> None:  # the store's session: closed with the store
        pass


def _chunks(keys: Sequence[Any], size: int = 500) -> list[Sequence[Any]]:
    return [keys[i : i + size] for i in range(0, len(keys), size)]
