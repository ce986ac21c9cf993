"""The store kinds the damage test (tests/test_damage.py) writes its damages into: each
reads the undamaged store's rows once, applies one damage's changes (all or none), puts
the store back, and opens LangGraph's own saver on it."""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from damage import Delete, Insert, Op, Refused, Row, Update

__all__ = ["DevFolderKind", "MongoKind", "PostgresKind", "RedisKind", "SqliteKind"]


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
        self._write(current)
        self._current = current

    def _write(self, rows: Sequence[Row]) -> None:
        """The rows as the three pickled dicts; Refused when two rows have one key (a
        damaged key that names another row's: the dict keeps one, as a table's primary
        key refuses the second)."""
        storage: dict[Any, Any] = {}
        writes: dict[Any, Any] = {}
        blobs: dict[Any, Any] = {}
        for row in rows:
            f = row.fields
            if row.table == "checkpoints":
                into = storage.setdefault(f["thread_id"], {}).setdefault(f["checkpoint_ns"], {})
                key, value = f["checkpoint_id"], (f["checkpoint"], f["metadata"],
                                                   f["parent_checkpoint_id"])  # fmt: skip
            elif row.table == "writes":
                into = writes.setdefault(
                    (f["thread_id"], f["checkpoint_ns"], f["checkpoint_id"]), {}
                )
                key = (f["key_task_id"], f["idx"])
                value = (f["task_id"], f["channel"], f["value"], f["task_path"])
            else:
                into = blobs
                key = (f["thread_id"], f["checkpoint_ns"], f["channel"], f["version"])
                value = f["value"]
            try:
                taken = key in into
            except TypeError:  # a key that does not hash: no dict holds it
                raise Refused(f"{row.table} key {key!r}") from None
            if taken:
                raise Refused(f"two {row.table} rows with the key {key!r}")
            into[key] = value
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


# -- servers ----------------------------------------------------------------------------------

PG_TABLES: dict[str, tuple[str, ...]] = {  # each table's primary key
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id"),
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version"),
    "checkpoint_writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}
PG_JSONB = frozenset({"checkpoint", "metadata"})


class PostgresKind:
    """A PostgresSaver store in a database of its own: the undamaged rows are kept in a
    schema `pristine` and copied back after each group of damages."""

    name = "postgres"
    thread_field = "thread_id"

    def __init__(self, dsn: str) -> None:
        import psycopg
        from psycopg.rows import dict_row

        self.dsn = dsn
        self.conn = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
        self.conn.execute("CREATE SCHEMA pristine")
        for table in PG_TABLES:
            self.conn.execute(f"CREATE TABLE pristine.{table} AS SELECT * FROM {table}")
        self._rows = [
            Row(table, {k: found[k] for k in key}, found["thread_id"], dict(found))
            for table, key in PG_TABLES.items()
            for found in self.conn.execute(f"SELECT * FROM {table} ORDER BY {', '.join(key)}")
        ]

    def rows(self) -> list[Row]:
        return list(self._rows)

    def reset(self) -> None:
        with self.conn.transaction():
            for table in PG_TABLES:
                self.conn.execute(f"DELETE FROM {table}")
                self.conn.execute(f"INSERT INTO {table} SELECT * FROM pristine.{table}")

    @staticmethod
    def _value(name: str, value: Any) -> Any:
        from psycopg.types.json import Jsonb

        return Jsonb(value) if name in PG_JSONB and value is not None else value

    def apply(self, ops: Sequence[Op]) -> None:
        import psycopg

        try:
            with self.conn.transaction():
                for op in ops:
                    if isinstance(op, Insert):
                        names = ", ".join(op.fields)
                        marks = ", ".join("%s" for _ in op.fields)
                        self.conn.execute(
                            f"INSERT INTO {op.table} ({names}) VALUES ({marks})",
                            [self._value(k, v) for k, v in op.fields.items()],
                        )
                        continue
                    where = " AND ".join(f"{k} = %s" for k in op.row.ref)
                    if isinstance(op, Update):
                        sets = ", ".join(f"{k} = %s" for k in op.fields)
                        self.conn.execute(
                            f"UPDATE {op.row.table} SET {sets} WHERE {where}",
                            [*(self._value(k, v) for k, v in op.fields.items()),
                             *op.row.ref.values()],
                        )  # fmt: skip
                    else:
                        self.conn.execute(
                            f"DELETE FROM {op.row.table} WHERE {where}", list(op.row.ref.values())
                        )
        except (psycopg.DataError, psycopg.IntegrityError, psycopg.ProgrammingError) as exc:
            raise Refused(str(exc)) from exc

    def target(self) -> str:
        from pg import url_of

        return url_of(self.dsn)

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        with psycopg.connect(
            self.dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            yield PostgresSaver(conn)

    def moved(self, row: Row, thread: str) -> dict[str, Any]:
        return {**row.fields, "thread_id": thread}

    def close(self) -> None:
        self.conn.close()


class RedisKind:
    """A RedisSaver store on a server of its own (fixtures/redis_server.py): its JSON
    documents as rows (a checkpoint, a pending write), and the sorted sets and latest
    pointers as rows that can be deleted; each key a group changed is put back from
    its DUMP."""

    name = "redis"
    thread_field = "thread_id"

    def __init__(self, url: str) -> None:
        import redis

        self.url = url
        self.client = redis.Redis.from_url(url)
        self.dumps: dict[str, bytes] = {}
        rows: list[Row] = []
        for raw in sorted(self.client.scan_iter(count=1000)):
            key = raw.decode()
            family = key.split(":")[0]
            self.dumps[key] = self.client.dump(key)
            kind = self.client.type(key).decode()
            if kind == "ReJSON-RL":
                fields = dict(self.client.json().get(key))
            elif kind == "string":
                fields = {"value": self.client.get(key).decode()}
            else:
                fields = {}
            rows.append(Row(_REDIS_TABLES.get(family, family), key, key.split(":")[1], fields))
        self._rows = rows
        self.touched: set[str] = set()

    def rows(self) -> list[Row]:
        return list(self._rows)

    def reset(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        for key in sorted(self.touched):
            pipe.delete(key)
            if key in self.dumps:
                pipe.restore(key, 0, self.dumps[key], replace=True)
        pipe.execute()
        self.touched.clear()

    @staticmethod
    def key_of(table: str, fields: dict[str, Any]) -> str:
        parts = [fields.get(k) for k in ("thread_id", "checkpoint_ns", "checkpoint_id")]
        if table == "writes":
            parts += [fields.get("task_id"), fields.get("idx")]
        family = {"checkpoints": "checkpoint", "writes": "checkpoint_write"}[table]
        return ":".join([family, *(str(p) for p in parts)])

    def apply(self, ops: Sequence[Op]) -> None:
        import redis

        pipe = self.client.pipeline(transaction=True)
        keys: list[str] = []
        for op in ops:
            if isinstance(op, Delete):
                keys.append(op.row.ref)
                pipe.delete(op.row.ref)
                continue
            if isinstance(op, Update):
                key, table, fields = op.row.ref, op.row.table, {**op.row.fields, **op.fields}
            else:
                if op.table not in ("checkpoints", "writes"):
                    raise Refused(f"no key for a new {op.table} row")
                table, fields = op.table, op.fields
                key = self.key_of(table, fields)
                if key in self.dumps:
                    raise Refused(f"{key} is there")
            keys.append(key)
            if table in ("checkpoints", "writes"):
                pipe.execute_command("JSON.SET", key, "$", json.dumps(fields))
            elif "value" in fields and isinstance(fields["value"], (str, bytes, int, float)):
                pipe.set(key, fields["value"])
            else:
                raise Refused(f"{table} holds no such value")
        self.touched.update(keys)
        try:
            pipe.execute()
        except redis.ResponseError as exc:
            raise Refused(str(exc)) from exc

    def target(self) -> str:
        return self.url

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(self.url) as saver:
            # As an application runs it (the fixture writer too): setup() finds the
            # indexes there and sets up the key registry, without which RedisSaver's
            # read of a checkpoint's pending writes raises AttributeError.
            saver.setup()
            yield saver

    def moved(self, row: Row, thread: str) -> dict[str, Any]:
        return {**row.fields, "thread_id": thread}

    def close(self) -> None:
        self.client.close()


def _write_group(document: dict[str, Any]) -> tuple[Any, Any, Any]:
    return (document["thread_id"], document["checkpoint_ns"], document["checkpoint_id"])


_REDIS_TABLES = {"checkpoint": "checkpoints", "checkpoint_write": "writes"}


class MongoKind:
    """A MongoDBSaver store on a server of its own (fixtures/mongo_server.py): each
    document a row; each document a group changed is put back as it was."""

    name = "mongodb"
    thread_field = "thread_id"
    TABLES = ("checkpoints", "checkpoint_writes")

    def __init__(self, url: str) -> None:
        from fixtures.mongo_stores import DATABASE
        from pymongo import MongoClient

        self.url = url
        self.client: Any = MongoClient(url)
        self.db = self.client[DATABASE]
        self.pristine: dict[Any, dict[str, Any]] = {}
        rows: list[Row] = []
        for table in self.TABLES:
            for document in self.db[table].find({}).sort("_id"):
                self.pristine[document["_id"]] = document
                rows.append(Row(table, document["_id"], document["thread_id"], dict(document)))
        self._rows = rows
        self.touched: set[Any] = set()
        self.inserted: list[tuple[str, Any]] = []

    def rows(self) -> list[Row]:
        return list(self._rows)

    def reset(self) -> None:
        for table, inserted in self.inserted:
            self.db[table].delete_one({"_id": inserted})
        # MongoDBSaver reads a checkpoint's writes in the server's order (nx-27017: as
        # inserted): a write put back goes back with its checkpoint's others, in order.
        groups = {
            _write_group(self.pristine[ref])
            for ref in self.touched
            if ref in self.pristine and "task_id" in self.pristine[ref]
        }
        for row in self._rows:
            if row.ref in self.touched and row.table == "checkpoints":
                self._put_back(row)
        writes = self.db["checkpoint_writes"]
        for ref in self.touched:  # wherever its keys sent it
            writes.delete_one({"_id": ref})
        for group in groups:
            keys = ("thread_id", "checkpoint_ns", "checkpoint_id")
            writes.delete_many(dict(zip(keys, group, strict=True)))
            writes.insert_many(
                [d for d in self.pristine.values() if "task_id" in d and _write_group(d) == group]
            )
        self.inserted.clear()
        self.touched.clear()

    def _put_back(self, row: Row) -> None:
        # nx-27017 cannot replace a document holding bytes: delete and insert it.
        self.db[row.table].delete_one({"_id": row.ref})
        self.db[row.table].insert_one(self.pristine[row.ref])

    def apply(self, ops: Sequence[Op]) -> None:
        import pymongo.errors

        done: list[tuple[str, Any]] = []
        changed: list[Row] = []
        try:
            for op in ops:
                if isinstance(op, Update):
                    changed.append(op.row)
                    self.db[op.row.table].update_one({"_id": op.row.ref}, {"$set": op.fields})
                elif isinstance(op, Delete):
                    changed.append(op.row)
                    self.db[op.row.table].delete_one({"_id": op.row.ref})
                else:
                    fields = {k: v for k, v in op.fields.items() if k != "_id"}
                    inserted = self.db[op.table].insert_one(fields).inserted_id
                    done.append((op.table, inserted))
        except pymongo.errors.PyMongoError as exc:  # undo this damage only
            for table, inserted in done:
                self.db[table].delete_one({"_id": inserted})
            for row in changed:
                self._put_back(row)
            raise Refused(str(exc)) from exc
        self.inserted.extend(done)
        self.touched.update(row.ref for row in changed)

    def target(self) -> str:
        return self.url

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        from langgraph.checkpoint.mongodb import MongoDBSaver
        from pymongo import MongoClient

        client: Any = MongoClient(self.url)
        try:
            yield MongoDBSaver(client)
        finally:
            client.close()

    def moved(self, row: Row, thread: str) -> dict[str, Any]:
        return {**row.fields, "thread_id": thread}

    def close(self) -> None:
        self.client.close()
