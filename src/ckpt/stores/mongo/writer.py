"""The MongoDB Writer: `ckpt prune --apply` and `ckpt vacuum --apply` (`compact`) on a
MongoDBSaver database.

Each thread is one multi-document transaction (format.md §7c: a replica set or a sharded
cluster runs them, a standalone mongod does not, and ckpt then refuses rather than delete a
thread in pieces). Its rows are read and planned first, then the plan is carried out in
the transaction: checkpoints and their writes deleted, parents of kept checkpoints set to
null. MongoDBSaver's TTL index (`ttl=`) keeps working on what stays: ckpt never touches
`created_at`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ckpt.errors import Unsafe
from ckpt.records.plans import NamespacePlan, Planner, ThreadPlan
from ckpt.records.types import VacuumReport, vacuum_state
from ckpt.stores.base import Writer
from ckpt.stores.mongo.store import no_transactions, runs_transactions

if TYPE_CHECKING:
    from ckpt.stores.mongo.store import MongoStore

CHUNK: Final = 1000  # ids per `$in`


class MongoWriter(Writer):
    def __init__(self, store: MongoStore) -> None:
        self.store = store
        self.location = store.location
        self._transactions()

    def _transactions(self) -> None:
        """Refuse a server without multi-document transactions (a read, aborted)."""
        store = self.store
        with store._errors("cannot check the store"):
            runs = runs_transactions(store.pymongo, store.client, store.checkpoints_coll)
        if not runs:
            raise Unsafe(no_transactions(self.location, "thread", "changed"))

    def prune(self, thread_id: str, planner: Planner) -> ThreadPlan:
        store = self.store
        plan = planner(store.thread_rows(thread_id))
        if not plan.changes:
            return plan
        with store._errors(f"cannot prune thread {thread_id!r} (rolled back)"):
            with store.client.start_session() as session:
                session.start_transaction()
                try:
                    for namespace in plan.namespaces:
                        self._apply(thread_id, namespace, session)
                    session.commit_transaction()
                except BaseException:
                    if session.in_transaction:
                        session.abort_transaction()
                    raise
        return plan

    def _apply(self, thread_id: str, plan: NamespacePlan, session: Any) -> None:
        store, ns = self.store, plan.checkpoint_ns
        checkpoints, writes = store.checkpoints_coll, store.writes_coll
        where: dict[str, Any] = {"thread_id": {"$eq": thread_id}, "checkpoint_ns": {"$eq": ns}}
        if plan.whole:
            checkpoints.delete_many(where, session=session)
            if writes is not None:
                writes.delete_many(where, session=session)
            return
        for ids in _chunks(plan.deleted):
            checkpoints.delete_many({**where, "checkpoint_id": {"$in": list(ids)}}, session=session)
        for ids in _chunks([*plan.deleted, *plan.orphan_writes]):
            if writes is not None:
                writes.delete_many({**where, "checkpoint_id": {"$in": list(ids)}}, session=session)
        for ids in _chunks(plan.parents_cleared):
            checkpoints.update_many(
                {**where, "checkpoint_id": {"$in": list(ids)}},
                {"$set": {"parent_checkpoint_id": None}},
                session=session,
            )

    def vacuum(self, into: Path | None) -> VacuumReport:
        """`compact` each of the saver's collections: the storage engine gives the space of
        deleted documents back to the file system where it can (WiredTiger: the free
        blocks; other engines may give nothing, which the sizes after then show)."""
        store = self.store
        before = store.vacuum_report(into=into)
        db = store.client[store.database]
        for table in before["tables"] or ():
            with store._errors(f"cannot compact {table['table']!r}"):
                db.command("compact", table["table"])
        after = store.vacuum_report(into=into)
        return {**before, "before": vacuum_state(before), "after": vacuum_state(after)}

    def close(self) -> None:  # the store's client: closed with the store
        pass


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]
