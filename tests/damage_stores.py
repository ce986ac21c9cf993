"""The store kinds the damage test (tests/test_damage.py) writes its damages into: each
reads the undamaged store's rows once, applies one damage's changes (all or none), puts
the store back, and opens LangGraph's own saver on it."""

from __future__ import annotations

import pickle
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from damage import Delete, Op, Refused, Row, Update

__all__ = ["DevFolderKind", "SqliteKind"]


class SqliteKind:
    """A SqliteSaver store: a fresh copy of the fixture file for each group of damages."""

    name = "sqlite"
    thread_field = "thread_id"
    TABLES = ("checkpoints", "writes")

    def __init__(self, pristine: Path, work: Path) -> None:
        self.pristine = pristine
        self.path = work / "damaged.sqlite"
        with closing(sqlite3.connect(f"file:{pristine}?mode=ro", uri=True)) as conn:
            conn.row_factory = sqlite3.Row
            self._rows = [
                Row(table, found["rowid"], found["thread_id"], dict(found))
                for table in self.TABLES
                for found in conn.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid")
            ]
        for row in self._rows:
            del row.fields["rowid"]

    def rows(self) -> list[Row]:
        return list(self._rows)

    def reset(self) -> None:
        for side in ("-wal", "-shm"):
            Path(f"{self.path}{side}").unlink(missing_ok=True)
        shutil.copyfile(self.pristine, self.path)

    def apply(self, ops: Sequence[Op]) -> None:
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            conn.execute("BEGIN")
            try:
                for op in ops:
                    if isinstance(op, Update):
                        sets = ", ".join(f"{name} = ?" for name in op.fields)
                        conn.execute(
                            f"UPDATE {op.row.table} SET {sets} WHERE rowid = ?",
                            (*op.fields.values(), op.row.ref),
                        )
                    elif isinstance(op, Delete):
                        conn.execute(f"DELETE FROM {op.row.table} WHERE rowid = ?", (op.row.ref,))
                    else:
                        names = ", ".join(op.fields)
                        marks = ", ".join("?" for _ in op.fields)
                        conn.execute(
                            f"INSERT INTO {op.table} ({names}) VALUES ({marks})",
                            tuple(op.fields.values()),
                        )
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise Refused(str(exc)) from exc
            conn.execute("COMMIT")

    def target(self) -> str:
        return str(self.path)

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with closing(sqlite3.connect(self.path, check_same_thread=False)) as conn:
            yield SqliteSaver(conn)

    def moved(self, row: Row, thread: str) -> dict[str, Any]:
        return {**row.fields, "thread_id": thread}


class DevFolderKind:
    """A `langgraph dev` folder (.langgraph_checkpoint.{1,2,3}.pckl: storage, writes,
    blobs, format.md §7.3), as rows: one per checkpoint, pending write and blob, the parts
    of each dict key a field of its own. The fixture's own files, written by LangGraph's
    PersistentDict: the test may load them."""

    name = "dev_folder"
    thread_field = "thread_id"

    def __init__(self, pristine: Path, work: Path) -> None:
        self.pristine = pristine
        self.folder = work / ".langgraph_api"
        storage, writes, blobs = (
            pickle.loads((pristine / f".langgraph_checkpoint.{n}.pckl").read_bytes())
            for n in (1, 2, 3)
        )
        rows: list[Row] = []
        for thread, namespaces in storage.items():
            for ns, checkpoints in namespaces.items():
                for checkpoint_id, (body, metadata, parent) in checkpoints.items():
                    fields = {
                        "thread_id": thread,
                        "checkpoint_ns": ns,
                        "checkpoint_id": checkpoint_id,
                        "checkpoint": body,
                        "metadata": metadata,
                        "parent_checkpoint_id": parent,
                    }
                    rows.append(Row("checkpoints", len(rows), thread, fields))
        for (thread, ns, checkpoint_id), by_task in writes.items():
            for (key_task, idx), (task_id, channel, value, task_path) in by_task.items():
                fields = {
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "key_task_id": key_task,
                    "idx": idx,
                    "task_id": task_id,
                    "channel": channel,
                    "value": value,
                    "task_path": task_path,
                }
                rows.append(Row("writes", len(rows), thread, fields))
        for (thread, ns, channel, version), value in blobs.items():
            fields = {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "channel": channel,
                "version": version,
                "value": value,
            }
            rows.append(Row("blobs", len(rows), thread, fields))
        self._rows = rows
        self._current: list[Row] = rows

    def rows(self) -> list[Row]:
        return list(self._rows)

    def reset(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.copytree(self.pristine, self.folder)
        self._current = list(self._rows)

    def apply(self, ops: Sequence[Op]) -> None:
        current = list(self._current)
        for op in ops:
            if isinstance(op, Update):
                index = next(i for i, r in enumerate(current) if r.ref == op.row.ref)
                current[index] = Row(
                    op.row.table, op.row.ref, op.row.thread, {**current[index].fields, **op.fields}
                )
            elif isinstance(op, Delete):
                current = [r for r in current if r.ref != op.row.ref]
            else:
                current.append(Row(op.table, ("new", len(current)), "", dict(op.fields)))
        self._current = current
        self._write(current)

    def _write(self, rows: Sequence[Row]) -> None:
        storage: dict[Any, Any] = {}
        writes: dict[Any, Any] = {}
        blobs: dict[Any, Any] = {}
        for row in rows:
            f = row.fields
            if row.table == "checkpoints":
                storage.setdefault(f["thread_id"], {}).setdefault(f["checkpoint_ns"], {})[
                    f["checkpoint_id"]
                ] = (f["checkpoint"], f["metadata"], f["parent_checkpoint_id"])
            elif row.table == "writes":
                writes.setdefault((f["thread_id"], f["checkpoint_ns"], f["checkpoint_id"]), {})[
                    (f["key_task_id"], f["idx"])
                ] = (f["task_id"], f["channel"], f["value"], f["task_path"])
            else:
                key = (f["thread_id"], f["checkpoint_ns"], f["channel"], f["version"])
                blobs[key] = f["value"]
        for n, content in ((1, storage), (2, writes), (3, blobs)):
            (self.folder / f".langgraph_checkpoint.{n}.pckl").write_bytes(pickle.dumps(content, 2))

    def target(self) -> str:
        return str(self.folder)

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        from fixtures.oracle import load_memory_saver

        files = [self.folder / f".langgraph_checkpoint.{n}.pckl" for n in (1, 2, 3)]
        yield load_memory_saver(*files)

    def moved(self, row: Row, thread: str) -> dict[str, Any]:
        return {**row.fields, "thread_id": thread}
