"""Hostile, damaged and odd stores, built at test time from real ones (issue 15).

`cases(bases)` lists every case the generator knows, by a stable name such as
`sqlite/checkpoints/truncate/4097` or `pickle/memory/hash-bomb`; `build(case, folder)`
writes that case into an empty folder and says which store and thread to point ckpt at.
Nothing here is checked in as bytes: every case is derived from a real fixture store (the
samples in tests/data, the session fixtures of tests/conftest.py) by a named mutation, so
a failing case is reproduced from its name and seed alone (tests/hostile_corpus.txt).

Families: SQLite files truncated, pages overwritten, header fields damaged; a WAL with torn
frames and flipped bits; missing and extra tables and columns; every column holding NULL,
TEXT, REAL, INTEGER or BLOB where LangGraph writes another type; ids with controls,
escapes, bidi characters, surrogates and 10 MB; parent cycles, self-parents, dangling and
cross-thread parents; the decoder's hostile payloads in every value column; expansion
bombs. Pickle files and `langgraph dev` folders: truncation, hash and memo bombs, memo
abuse, every opcode the restricted unpickler refuses.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import sqlite3
import struct
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ormsgpack

from ckpt.escapes import UNSAFE_RANGES

PAGE = 4096


@dataclass(frozen=True)
class Case:
    name: str  # "<kind>/<base>/<family>/<variant>": stable, the regression corpus uses it
    base: str  # a key of the bases mapping
    mutate: Callable[[Path, random.Random], None]  # changes the copied store in place
    seed: int = 0


@dataclass(frozen=True)
class Built:
    folder: Path  # holds the store and nothing else: hashed before and after each run
    store: str  # what to pass to ckpt
    thread: str  # a thread id to name in history/show/versions/diff


# -- helpers -------------------------------------------------------------------------------


def pack(value: Any) -> bytes:
    return ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)


def nested_ext(levels: int, arrays: int, code: int = 1, inner: bytes = b"\x01") -> bytes:
    """`levels` ext values inside each other, each payload `arrays` arrays deep: what
    packing ormsgpack.Ext(code, b"\\x91" * arrays + inner) `levels` times over gives
    (tests/test_decode_hostile.py holds it to that), its headers worked out from the
    inside so that the whole is written once (repacking costs levels x size: 0.7 s for
    100,000 levels, in every test process that imports this)."""
    heads: list[bytes] = []
    size = len(inner)
    for _ in range(levels):
        size += arrays
        head = _ext_head(size, code)
        heads.append(head + b"\x91" * arrays)
        size += len(head)
    return b"".join(reversed(heads)) + inner


def _ext_head(size: int, code: int) -> bytes:
    """The msgpack header of an ext value of `size` bytes and type `code`."""
    fixed = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}
    if size in fixed:
        return struct.pack(">Bb", fixed[size], code)
    if size <= 0xFF:
        return struct.pack(">BBb", 0xC7, size, code)
    if size <= 0xFFFF:
        return struct.pack(">BHb", 0xC8, size, code)
    return struct.pack(">BIb", 0xC9, size, code)


def _writable(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path, isolation_level=None))


def _loosen(conn: sqlite3.Connection, table: str, drop: str | None = None) -> None:
    """Recreate `table` with no constraints at all (NULLs anywhere), `drop` left out."""
    columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    kept = [c for c in columns if c != drop]
    listed = ", ".join(kept)
    conn.execute(f"CREATE TABLE loose_{table} ({listed})")
    conn.execute(f"INSERT INTO loose_{table} SELECT {listed} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE loose_{table} RENAME TO {table}")


def _first_thread(path: Path) -> str:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as conn:
            conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
            row = conn.execute(
                "SELECT thread_id FROM checkpoints ORDER BY rowid LIMIT 1"
            ).fetchone()
            if row and isinstance(row[0], str):
                return row[0]
    except sqlite3.Error:
        pass
    return "thread-1"


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


# -- byte-level damage ---------------------------------------------------------------------


def truncate(offset: int) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: min(offset, len(data)) if offset >= 0 else len(data) + offset])

    return mutate


def overwrite_page(kind: str) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        data = bytearray(path.read_bytes())
        pages = max(len(data) // PAGE, 1)
        page = rng.randrange(1, pages) if pages > 1 else 0
        fill = {
            "random": bytes(rng.getrandbits(8) for _ in range(PAGE)),
            "zero": bytes(PAGE),
            "ff": b"\xff" * PAGE,
        }[kind]
        data[page * PAGE : page * PAGE + PAGE] = fill
        if page == 0:
            data[:16] = b"SQLite format 3\x00"
        path.write_bytes(bytes(data))

    return mutate


def flip_bits(count: int) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        data = bytearray(path.read_bytes())
        for _ in range(count):
            at = rng.randrange(100, len(data)) if len(data) > 100 else 0
            data[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))

    return mutate


def header(offset: int, raw: bytes) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        data = bytearray(path.read_bytes())
        data[offset : offset + len(raw)] = raw
        path.write_bytes(bytes(data))

    return mutate


HEADER_DAMAGE: dict[str, tuple[int, bytes]] = {
    "magic": (0, b"SQLite format 4\x00"),
    "page-size-0": (16, b"\x00\x00"),
    "page-size-3": (16, b"\x00\x03"),
    "page-size-64k": (16, b"\x00\x01"),
    "write-version-wal": (18, b"\x02\x02"),
    "write-version-9": (18, b"\x09\x09"),
    "reserved-255": (20, b"\xff"),
    "payload-fractions": (21, b"\x00\x00\x00"),
    "page-count-huge": (28, b"\x7f\xff\xff\xff"),
    "freelist-bogus": (32, b"\x00\x00\xff\xff\x00\x00\xff\xff"),
    "schema-cookie": (40, b"\xde\xad\xbe\xef"),
    "schema-format-9": (44, b"\x00\x00\x00\x09"),
    "utf16le": (56, b"\x00\x00\x00\x02"),
    "encoding-7": (56, b"\x00\x00\x00\x07"),
    "all-zero": (0, bytes(100)),
}


# -- a WAL -------------------------------------------------------------------------------------


def with_wal(damage: str) -> Callable[[Path, random.Random], None]:
    """The store in WAL mode with recent changes only in its `-wal` (no -shm, as after a
    crash or a copy), then that -wal damaged: `damage` names how."""

    def mutate(path: Path, rng: random.Random) -> None:
        work = path.with_name("work.db")
        shutil.copy2(path, work)
        conn = sqlite3.connect(work, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with closing(sqlite3.connect(work, isolation_level=None)) as writer:
            writer.execute("PRAGMA wal_autocheckpoint=0")
            columns = [row[1] for row in writer.execute("PRAGMA table_info(checkpoints)")]
            listed = ", ".join(
                "thread_id || '-wal' || ?" if c == "thread_id" else c for c in columns
            )
            for step in range(3):
                writer.execute(
                    f"INSERT INTO checkpoints SELECT {listed} FROM checkpoints"
                    " WHERE thread_id NOT LIKE '%-wal%'",
                    (str(step),),
                )
            shutil.copyfile(work, path)
            wal = Path(f"{work}-wal").read_bytes()
        conn.close()
        for side in (work, Path(f"{work}-wal"), Path(f"{work}-shm")):
            side.unlink(missing_ok=True)
        if damage == "intact":
            pass
        elif damage.startswith("torn"):
            # A frame is a 24-byte header plus a page; cut inside the last one or the middle.
            frame = 24 + PAGE
            frames = (len(wal) - 32) // frame
            target = frames - 1 if damage == "torn-last" else frames // 2
            wal = wal[: 32 + target * frame + rng.randrange(1, frame)]
        elif damage == "flip":
            data = bytearray(wal)
            for _ in range(4):
                data[rng.randrange(32, len(data))] ^= 1 << rng.randrange(8)
            wal = bytes(data)
        elif damage == "header":
            wal = b"\x00" * 32 + wal[32:]
        elif damage == "salt":
            data = bytearray(wal)
            data[16:24] = bytes(8)
            wal = bytes(data)
        path.with_name(path.name + "-wal").write_bytes(wal)

    return mutate


# -- schema and column types ---------------------------------------------------------------------

CHECKPOINT_COLUMNS = (
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "type",
    "checkpoint",
    "metadata",
)
WRITE_COLUMNS = (
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "task_path",
    "idx",
    "channel",
    "type",
    "value",
)
# What a column gets instead of what LangGraph writes there (SQL expressions).
WRONG_VALUES: dict[str, str] = {
    "null": "NULL",
    "text": "'some text'",
    "text-json": "'{\"a\": 1}'",
    "real": "3.5",
    "integer": "42",
    "big-integer": "9223372036854775807",
    "blob": "x'00ff10c1'",
    "blob-utf8": "CAST('thread-1' AS BLOB)",
    "text-not-utf8": "CAST(x'ff fe c3 28 ed a0 80' AS TEXT)",
    "empty": "''",
}


def column_value(
    table: str, column: str, wrong: str, rows: str
) -> Callable[[Path, random.Random], None]:
    """`column` of `table` set to a wrong type (`rows`: "one" row or "all")."""

    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if table not in _tables(conn) or column not in _columns(conn, table):
                return  # an older layout without the column: the case reads as intact
            _loosen(conn, table)
            where = f" WHERE rowid = (SELECT min(rowid) FROM {table})" if rows == "one" else ""
            expression = WRONG_VALUES[wrong].replace("x'ff fe c3 28 ed a0 80'", "x'fffec328eda080'")
            conn.execute(f"UPDATE {table} SET {column} = {expression}{where}")

    return mutate


def drop_column(table: str, column: str) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if table in _tables(conn) and column in _columns(conn, table):
                _loosen(conn, table, drop=column)

    return mutate


def schema(kind: str) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            tables = _tables(conn)
            if kind in ("strict-wrong", "many-namespaces") and "checkpoint_ns" not in _columns(
                conn, "checkpoints"
            ):
                return  # langgraph 0.1's layout has neither
            if kind == "extra-columns":
                for table in ("checkpoints", "writes"):
                    if table in tables:
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN extra TEXT DEFAULT 'x'")
                        conn.execute(f"ALTER TABLE {table} ADD COLUMN blob_extra BLOB")
            elif kind == "no-writes":
                conn.execute("DROP TABLE IF EXISTS writes")
            elif kind == "no-checkpoints":
                conn.execute("DROP TABLE IF EXISTS checkpoints")
            elif kind == "empty-tables":
                for table in tables:
                    conn.execute(f"DELETE FROM {table}")
            elif kind == "checkpoints-view":
                conn.execute("ALTER TABLE checkpoints RENAME TO real_checkpoints")
                conn.execute("CREATE VIEW checkpoints AS SELECT * FROM real_checkpoints")
            elif kind == "other-columns":
                conn.execute("DROP TABLE IF EXISTS checkpoints")
                conn.execute("CREATE TABLE checkpoints (a, b, c)")
                conn.execute("INSERT INTO checkpoints VALUES (1, 'x', x'00')")
            elif kind == "writes-other-columns":
                conn.execute("DROP TABLE IF EXISTS writes")
                conn.execute("CREATE TABLE writes (thread_id, z)")
                conn.execute("INSERT INTO writes VALUES ('thread-1', 1)")
            elif kind == "strict-wrong":
                conn.execute("ALTER TABLE checkpoints RENAME TO old")
                conn.execute(
                    "CREATE TABLE checkpoints (thread_id INTEGER, checkpoint_ns REAL,"
                    " checkpoint_id INTEGER, parent_checkpoint_id BLOB, type BLOB,"
                    " checkpoint TEXT, metadata TEXT)"
                )
                conn.execute("INSERT INTO checkpoints SELECT * FROM old")
                conn.execute("DROP TABLE old")
            elif kind == "duplicate-rows":
                _loosen(conn, "checkpoints")
                conn.execute("INSERT INTO checkpoints SELECT * FROM checkpoints")
            elif kind == "many-namespaces":
                conn.execute(
                    "INSERT INTO checkpoints SELECT thread_id, 'sub:' || rowid, checkpoint_id,"
                    " parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints"
                )

    return mutate


# -- ids -----------------------------------------------------------------------------------------

HOSTILE_TEXT: dict[str, str] = {
    "esc": "t\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "osc52": "t\x1b]52;c;ZWNobyBoaQ==\x07",
    "c1": "t\x9b31m\x85\x9d",
    "bidi": "t\u202eevil\u2066x\u2069\u061c",
    "separators": "t\u2028line\u2029para",
    "tags": "t\U000e0041\U000e0042\U000e007f",
    "zero-width": "t\u200b\u200d\u2060\ufeff",
    "newline": "t\nnew\rline\t",
    "nul": "t\x00nul",
    "empty": "",
    "spaces": "   ",
    "tilde": "t~1~2",
    "glob": "%_*?[",
    "quote": "'; DROP TABLE checkpoints; --",
    "long-10k": "x" * 10_000,
}
HOSTILE_SQL: dict[str, str] = {
    "lone-surrogate": "CAST(x'74eda080' AS TEXT)",  # 't' + UTF-8 of U+D800
    "not-utf8": "CAST(x'74fffe80' AS TEXT)",
    "long-1mb": "'t' || hex(zeroblob(500000))",
}
TEN_MB = "'t' || hex(zeroblob(5000000))"


def ten_mb_id(column: str) -> Callable[[Path, random.Random], None]:
    """One checkpoint row (the newest) with a 10 MB thread or checkpoint id."""

    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if column not in _columns(conn, "checkpoints"):
                return
            conn.execute(
                f"UPDATE checkpoints SET {column} = {TEN_MB}"
                " WHERE rowid = (SELECT max(rowid) FROM checkpoints)"
            )

    return mutate


def thread_id(kind: str) -> Callable[[Path, random.Random], None]:
    """The first thread's id (in checkpoints and writes) replaced by a hostile string."""

    def mutate(path: Path, rng: random.Random) -> None:
        old = _first_thread(path)
        with _writable(path) as conn:
            expression = HOSTILE_SQL.get(kind, "?")
            params = () if kind in HOSTILE_SQL else (HOSTILE_TEXT[kind],)
            for table in (
                ("checkpoints", "writes") if "writes" in _tables(conn) else ("checkpoints",)
            ):
                conn.execute(
                    f"UPDATE {table} SET thread_id = {expression} WHERE thread_id = ?",
                    (*params, old),
                )

    return mutate


def checkpoint_id(kind: str) -> Callable[[Path, random.Random], None]:
    """The newest checkpoint's id (and its writes and children's parent links) hostile."""

    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if "checkpoint_id" not in _columns(conn, "checkpoints"):
                return
            row = conn.execute(
                "SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
            ).fetchone()
            if row is None:
                return
            old = row[0]
            expression = HOSTILE_SQL.get(kind, "?")
            params = () if kind in HOSTILE_SQL else (HOSTILE_TEXT[kind],)
            conn.execute(
                f"UPDATE checkpoints SET checkpoint_id = {expression} WHERE checkpoint_id = ?",
                (*params, old),
            )
            conn.execute(
                f"UPDATE checkpoints SET parent_checkpoint_id = {expression}"
                " WHERE parent_checkpoint_id = ?",
                (*params, old),
            )
            if "writes" in _tables(conn):
                conn.execute(
                    f"UPDATE writes SET checkpoint_id = {expression} WHERE checkpoint_id = ?",
                    (*params, old),
                )

    return mutate


def other_text(column: str, kind: str) -> Callable[[Path, random.Random], None]:
    """A hostile string in a text column of writes or checkpoints (namespace, channel, task)."""
    table = "writes" if column in ("task_id", "task_path", "channel") else "checkpoints"

    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if table not in _tables(conn) or column not in _columns(conn, table):
                return
            expression = HOSTILE_SQL.get(kind, "?")
            params = () if kind in HOSTILE_SQL else (HOSTILE_TEXT[kind],)
            conn.execute(
                f"UPDATE {table} SET {column} = {expression} WHERE rowid IN"
                f" (SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 3)",
                params,
            )

    return mutate


# -- lineage ---------------------------------------------------------------------------------------


def lineage(kind: str) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if "checkpoint_ns" not in _columns(conn, "checkpoints"):
                return
            thread = _first_thread(path)
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints"
                    " WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id",
                    (thread,),
                )
            ]
            if len(ids) < 2:
                return
            set_parent = (
                "UPDATE checkpoints SET parent_checkpoint_id = ?"
                " WHERE thread_id = ? AND checkpoint_id = ?"
            )
            if kind == "cycle":
                conn.execute(set_parent, (ids[-1], thread, ids[0]))
            elif kind == "cycle-of-two":
                conn.execute(set_parent, (ids[-1], thread, ids[-2]))
            elif kind == "self-parent":
                conn.execute(set_parent, (ids[-1], thread, ids[-1]))
            elif kind == "all-self-parents":
                conn.execute("UPDATE checkpoints SET parent_checkpoint_id = checkpoint_id")
            elif kind == "dangling":
                conn.execute(
                    set_parent, ("1ef00000-0000-6000-8000-000000000000", thread, ids[len(ids) // 2])
                )
            elif kind == "parent-newer":
                conn.execute(set_parent, (ids[-1], thread, ids[1]))
            elif kind == "cross-thread":
                conn.execute(
                    "INSERT INTO checkpoints SELECT 'other', checkpoint_ns, checkpoint_id || 'x',"
                    " parent_checkpoint_id || 'x', type, checkpoint, metadata FROM checkpoints"
                    " WHERE thread_id = ?",
                    (thread,),
                )
                conn.execute(set_parent, (ids[-1], "other", ids[0] + "x"))
                conn.execute(set_parent, (ids[2] + "x", thread, ids[-1]))
            elif kind == "fork-wide":
                conn.execute(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)"
                    " INSERT INTO checkpoints SELECT thread_id, checkpoint_ns,"
                    " checkpoint_id || printf('%05d', i), ?, type, checkpoint, metadata"
                    " FROM checkpoints, n WHERE thread_id = ? AND checkpoint_id = ?",
                    (ids[0], thread, ids[-1]),
                )

    return mutate


# -- values ----------------------------------------------------------------------------------------


def _pickle_global(module: str, name: str) -> bytes:
    return b"\x80\x04c" + module.encode() + b"\n" + name.encode() + b"\n" + b")R."


def _hash_bomb(levels: int = 60) -> bytes:
    """t0 = (); t_{n+1} = (t_n, t_n) via the memo, all as keys of one dict: hashing t_n takes
    2**n steps, the pickle is O(n) bytes."""
    out = bytearray(b"\x80\x04")
    out += b")"  # empty tuple
    out += b"\x94"  # MEMOIZE -> 0
    for level in range(levels):
        out += (
            b"h" + bytes([level]) + b"h" + bytes([level]) + b"\x86" + b"\x94"
        )  # BINGET x2, TUPLE2, MEMOIZE
    out += b"}" + b"h" + bytes([levels]) + b"K\x01s."  # {} t_n 1 SETITEM STOP
    return bytes(out)


def _memo_bomb(levels: int = 40) -> bytes:
    """A list holding the previous list twice, 40 levels: 2**40 leaves when expanded."""
    out = bytearray(b"\x80\x04]\x94K\x01a")  # [1] memo 0
    for level in range(levels):
        out += (
            b"]" + b"h" + bytes([level]) + b"h" + bytes([level]) + b"e\x94"
        )  # [] get get APPENDS memo
    out += b"."
    # APPENDS needs a MARK; rebuild with MARK before the gets.
    out = bytearray(b"\x80\x04]\x94K\x01a")
    for level in range(levels):
        out += b"](h" + bytes([level]) + b"h" + bytes([level]) + b"e\x94"
    out += b"."
    return bytes(out)


def tuple_bomb(*, as_key: bool, levels: int = 60) -> bytes:
    """Protocol 2, as PersistentDict writes: t0 = (), t_{n+1} = (t_n, t_n) by memo
    references, then {t_60: 1} (hashing it takes 2**60 steps) or {"k": t_60} (2**60
    leaves), in a few hundred bytes."""
    out = bytearray(b"\x80\x02)q\x00")
    for level in range(levels):
        out += bytes([0x68, level, 0x68, level, 0x86, 0x71, level + 1])  # GET GET TUPLE2 PUT
    out += bytes([0x7D, 0x71, levels + 1])  # {} PUT
    out += (
        bytes([0x68, levels]) + b"K\x01"
        if as_key
        else b"X\x01\x00\x00\x00k" + bytes([0x68, levels])
    )
    return bytes(out + b"s.")


PICKLES: dict[str, bytes] = {
    "reduce-os-system": _pickle_global("os", "system"),
    "stack-global-eval": b"\x80\x04\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x8c\x011\x85R.",
    "inst": b"(ios\nsystem\nS'true'\n.",
    "obj": b"\x80\x02(cos\nsystem\nS'true'\no.",
    "newobj": b"\x80\x02cbuiltins\nobject\n)\x81.",
    "build": b"\x80\x02}(S'a'\nK\x01ub.",
    "ext1": b"\x80\x02\x82\x01.",
    "ext4": b"\x80\x02\x84\xff\xff\xff\x7f.",
    "persid": b"Pfoo\n.",
    "binpersid": b"\x80\x02U\x03foo\x51.",
    "memo-get-missing": b"\x80\x02h\x05.",
    "memo-long-get": b"\x80\x02j\xff\xff\xff\xff.",
    "memo-long-put": b"\x80\x02K\x01r\xff\xff\xff\x7f.",
    "hash-bomb": _hash_bomb(),
    "memo-bomb": _memo_bomb(),
    "hash-bomb-p2": tuple_bomb(as_key=True),  # protocol 2, as the scanners read
    "memo-bomb-p2": tuple_bomb(as_key=False),
    "frame-huge": b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7fK\x01.",
    "binbytes8-huge": b"\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\x7f.",
    "long4-huge": b"\x80\x02\x8b\xff\xff\xff\x7f.",
    "proto-99": b"\x80\x63K\x01.",
    "empty": b"",
    "stop-only": b".",
}


def _ndarray(dtype: str, shape: list[int], buffer: bytes) -> bytes:
    return pack(ormsgpack.Ext(6, pack([dtype, shape, "C", buffer])))


def _many_small_ext(total: int, code: int = 0) -> bytes:
    item = pack(ormsgpack.Ext(code, pack(["m", "N", "x"])))
    count = total // len(item)
    return b"\xdd" + struct.pack(">I", count) + item * count


MSGPACK: dict[str, bytes] = {
    "arrays-100k": b"\x91" * 100_000 + b"\x01",
    "maps-100k": b"\x81\xa1k" * 100_000 + b"\x01",
    "ext-50x1000": nested_ext(50, 1_000),
    "ext-2k": nested_ext(2_000, 1),
    "delta-20x1000": nested_ext(20, 1_000, code=7),
    "bin32-4gb": b"\xc6\xff\xff\xff\xff",
    "array32-4g": b"\xdd\xff\xff\xff\xff" + b"\xc0" * 1_000,
    "map32-4g": b"\xdf\xff\xff\xff\xff",
    "ext32-4gb": b"\xc9\xff\xff\xff\xff\x05",
    "ndarray-2e40": _ndarray("<i4", [2**40], b"\0" * 8),
    "ndarray-empty-1e9": _ndarray("<f8", [10**9, 0], b""),
    "ndarray-900m": _ndarray("|b1", [900_000_000], b"\x01" * 1_000),
    "ndarray-900m-exact": _ndarray("|u1", [30_000, 30_000], b""),
    "many-small-ext-2mb": _many_small_ext(2_000_000),
    "many-small-ext-8mb": _many_small_ext(8_000_000, code=1),
    "nil-array-4m": b"\xdd" + struct.pack(">I", 4_000_000) + b"\xc0" * 4_000_000,
    "fixext-8m": b"\xdd" + struct.pack(">I", 2_000_000) + b"\xd4\x00\x00" * 2_000_000,
    "big-string-16mb": pack({"channel_values": {"x": "y" * 16_000_000}}),
    "timestamp": b"\x91\xd6\xff\x00\x00\x00\x01",
    "truncated": pack({"v": 4, "channel_values": {"a": "b" * 100}})[:-7],
    "not-a-map": pack([1, 2, 3]),
    "garbage": bytes(range(256)),
}
JSON: dict[str, bytes] = {
    "not-json": b"not json {",
    "array": b"[1, 2, 3]",
    "parents-int": b'{"parents": 5, "step": 1}',
    "parents-list": b'{"parents": [1, 2], "step": 1}',
    "parents-values": b'{"parents": {"": 7, "x": [1]}, "step": 1}',
    "step-string": b'{"step": "three", "source": 4, "writes": 7}',
    "infinity": b'{"step": 1, "score": Infinity, "n": -Infinity, "x": NaN}',
    "1e400": b'{"step": 1e400, "score": -1e400}',
    "huge-int": b'{"step": 123456789012345678901234567890123456789}',
    "lone-surrogate": b'{"step": 1, "note": "\\ud800 and \\udfff"}',
    "surrogate-key": b'{"\\udc80": 1}',
    "c1-raw": '{"step": 1, "note": "\u009b31m\u0085"}'.encode(),
    "not-utf8": b'{"step": 1, "note": "\xff\xfe"}',
    "esc": b'{"step": 1, "note": "\\u001b[2J\\u001b]0;x\\u0007"}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep-objects": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "duplicate-keys": b'{"step": 1, "step": 2}',
    "bom": b'\xef\xbb\xbf{"step": 1}',
    "empty": b"",
    "null": b"null",
}


def value_in(
    table: str, column: str, tag: str | None, payload: bytes
) -> Callable[[Path, random.Random], None]:
    """`payload` in `column` of the newest row of `table`, with type column `tag`."""

    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if table not in _tables(conn):
                return
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                return
            where = f"rowid = (SELECT max(rowid) FROM {table} WHERE thread_id = ?)"
            thread = _first_thread(path)
            if tag is not None and "type" in columns and column != "metadata":
                conn.execute(f"UPDATE {table} SET type = ? WHERE {where}", (tag, thread))
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (payload, thread))

    return mutate


def type_tag(table: str, tag: str) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        with _writable(path) as conn:
            if table in _tables(conn) and "type" in _columns(conn, table):
                conn.execute(f"UPDATE {table} SET type = ?", (tag,))

    return mutate


# -- pickle files and dev folders ------------------------------------------------------------------


def replace_file(name: str | None, payload: bytes) -> Callable[[Path, random.Random], None]:
    """The pickle file itself (a PersistentDict), or one file of a dev folder, replaced."""

    def mutate(path: Path, rng: random.Random) -> None:
        target = path / name if name else path
        target.write_bytes(payload)

    return mutate


def damage_file(name: str | None, how: str, offset: int) -> Callable[[Path, random.Random], None]:
    def mutate(path: Path, rng: random.Random) -> None:
        target = path / name if name else path
        data = bytearray(target.read_bytes())
        if how == "truncate":
            del data[min(offset, len(data)) :]
        else:
            for _ in range(offset):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
        target.write_bytes(bytes(data))

    return mutate


# -- the catalogue ---------------------------------------------------------------------

SQLITE_BASES = ("checkpoints", "delta", "legacy019", "legacy0216", "legacy0320", "chat")
DEV_FILES = (
    ".langgraph_checkpoint.1.pckl",
    ".langgraph_checkpoint.2.pckl",
    ".langgraph_checkpoint.3.pckl",
)


def _sqlite_cases(base: str, seeds: int) -> Iterator[Case]:
    def case(
        family: str, variant: str, mutate: Callable[[Path, random.Random], None], seed: int = 0
    ) -> Case:
        return Case(f"sqlite/{base}/{family}/{variant}", base, mutate, seed)

    yield case("intact", "-", lambda path, rng: None)
    for offset in (
        0,
        1,
        16,
        99,
        100,
        101,
        1_000,
        PAGE - 1,
        PAGE,
        PAGE + 1,
        2 * PAGE + 7,
        3 * PAGE,
        -PAGE,
        -1,
    ):
        yield case("truncate", str(offset), truncate(offset))
    for seed in range(seeds):
        yield case(
            "truncate-random", str(seed), truncate(random.Random(seed).randrange(100, 60_000)), seed
        )
        for kind in ("random", "zero", "ff"):
            yield case(f"page-{kind}", str(seed), overwrite_page(kind), seed)
        yield case("flip-bits", str(seed), flip_bits(1 + seed % 16), seed)
    for name, (offset, raw) in HEADER_DAMAGE.items():
        yield case("header", name, header(offset, raw))
    for damage in ("intact", "torn-last", "torn-middle", "flip", "header", "salt"):
        for seed in range(
            max(1, seeds // 2) if damage in ("torn-last", "torn-middle", "flip") else 1
        ):
            yield case("wal", f"{damage}-{seed}", with_wal(damage), seed)
    for kind in (
        "extra-columns",
        "no-writes",
        "no-checkpoints",
        "empty-tables",
        "checkpoints-view",
        "other-columns",
        "writes-other-columns",
        "strict-wrong",
        "duplicate-rows",
        "many-namespaces",
    ):
        yield case("schema", kind, schema(kind))
    for table, columns in (("checkpoints", CHECKPOINT_COLUMNS), ("writes", WRITE_COLUMNS)):
        for column in columns:
            yield case("drop-column", f"{table}.{column}", drop_column(table, column))
            for wrong in WRONG_VALUES:
                for rows in ("one", "all"):
                    yield case(
                        "column",
                        f"{table}.{column}={wrong}/{rows}",
                        column_value(table, column, wrong, rows),
                    )
    for kind in (*HOSTILE_TEXT, *HOSTILE_SQL):
        yield case("thread-id", kind, thread_id(kind))
        yield case("checkpoint-id", kind, checkpoint_id(kind))
        for column in ("checkpoint_ns", "task_id", "task_path", "channel"):
            yield case("text", f"{column}={kind}", other_text(column, kind))
    for column in ("thread_id", "checkpoint_id", "parent_checkpoint_id"):
        yield case("ten-mb-id", column, ten_mb_id(column))
    for kind in (
        "cycle",
        "cycle-of-two",
        "self-parent",
        "all-self-parents",
        "dangling",
        "parent-newer",
        "cross-thread",
        "fork-wide",
    ):
        yield case("lineage", kind, lineage(kind))
    for name, payload in MSGPACK.items():
        yield case(
            "value",
            f"checkpoint=msgpack:{name}",
            value_in("checkpoints", "checkpoint", "msgpack", payload),
        )
        yield case(
            "value", f"writes.value=msgpack:{name}", value_in("writes", "value", "msgpack", payload)
        )
        yield case(
            "value", f"metadata=msgpack:{name}", value_in("checkpoints", "metadata", None, payload)
        )
    for name, payload in JSON.items():
        yield case(
            "value", f"metadata=json:{name}", value_in("checkpoints", "metadata", None, payload)
        )
        yield case(
            "value",
            f"checkpoint=json:{name}",
            value_in("checkpoints", "checkpoint", "json", payload),
        )
        yield case(
            "value", f"writes.value=json:{name}", value_in("writes", "value", "json", payload)
        )
    for name, payload in PICKLES.items():
        yield case(
            "value",
            f"checkpoint=pickle:{name}",
            value_in("checkpoints", "checkpoint", "pickle", payload),
        )
        yield case(
            "value", f"writes.value=pickle:{name}", value_in("writes", "value", "pickle", payload)
        )
    for tag in ("pickle", "json", "bytes", "null", "empty", "msgpack+aes", "weird\x1b[2J", ""):
        yield case("type-tag", f"checkpoints={tag!r}", type_tag("checkpoints", tag))
        yield case("type-tag", f"writes={tag!r}", type_tag("writes", tag))


def _pickle_cases(base: str, files: tuple[str | None, ...], seeds: int) -> Iterator[Case]:
    kind = "dev" if base == "dev" else "pickle"
    yield Case(f"{kind}/{base}/intact/-", base, lambda path, rng: None)
    for name in files:
        label = name or "file"
        for offset in (0, 1, 2, 11, 100, 1_000, 5_000):
            yield Case(
                f"{kind}/{base}/truncate/{label}@{offset}",
                base,
                damage_file(name, "truncate", offset),
            )
        for seed in range(seeds):
            yield Case(
                f"{kind}/{base}/bytes/{label}#{seed}",
                base,
                damage_file(name, "bytes", 1 + seed),
                seed,
            )
        for payload_name, payload in PICKLES.items():
            yield Case(
                f"{kind}/{base}/replace/{label}={payload_name}", base, replace_file(name, payload)
            )


def cases(bases: dict[str, Path], *, seeds: int = 3) -> list[Case]:
    """Every case for the bases given (a missing base just has no cases)."""
    found: list[Case] = []
    for base in SQLITE_BASES:
        if base in bases:
            found.extend(_sqlite_cases(base, seeds))
    if "memory" in bases:
        found.extend(_pickle_cases("memory", (None,), seeds))
    if "dev" in bases:
        found.extend(_pickle_cases("dev", DEV_FILES, seeds))
    names = [case.name for case in found]
    assert len(names) == len(set(names)), "case names must be unique"
    return found


def build(case: Case, bases: dict[str, Path], folder: Path, thread: str = "thread-1") -> Built:
    """Write `case` into `folder` (created, empty): the mutated copy of its base store;
    `thread` is the base's thread to name (the first thread of an SQLite file instead)."""
    folder.mkdir(parents=True)
    source = bases[case.base]
    rng = random.Random(f"{case.name}#{case.seed}")
    if source.is_dir():
        target = folder / source.name
        shutil.copytree(source, target)
        case.mutate(target, rng)
        return Built(folder, str(target), thread)
    target = folder / ("store.pkl" if source.suffix in (".pkl", ".pckl") else "store.db")
    shutil.copyfile(source, target)
    case.mutate(target, rng)
    if target.suffix == ".db":
        thread = _first_thread(target)
    for extra in folder.iterdir():
        if extra.name.startswith("work.db"):
            extra.unlink()
    return Built(folder, str(target), thread)


def sample(
    all_cases: list[Case], commands: list[str], seed: int, runs: int
) -> list[tuple[Case, str]]:
    """A deterministic sample of `runs` pairs of the case x command matrix: families
    (kind/base/family) taken in turn, so every family is run before any runs twice, a
    random case of it and a random command each time."""
    rng = random.Random(seed)
    families: dict[str, list[Case]] = {}
    for case in all_cases:
        families.setdefault("/".join(case.name.split("/")[:3]), []).append(case)
    for members in families.values():
        rng.shuffle(members)
    order = list(families)
    rng.shuffle(order)
    pairs: list[tuple[Case, str]] = []
    taken: set[tuple[str, str]] = set()
    round_ = 0
    while len(pairs) < runs and round_ < len(all_cases) * len(commands):
        for family in order:
            members = families[family]
            case = members[round_ % len(members)]
            command = commands[rng.randrange(len(commands))]
            if (case.name, command) not in taken and len(pairs) < runs:
                taken.add((case.name, command))
                pairs.append((case, command))
        round_ += 1
    return pairs


def digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:8]


def is_unsafe(char: str) -> bool:
    """Whether one character must never reach a terminal raw (escapes.UNSAFE_RANGES)."""
    code = ord(char)
    return any(first <= code <= last for first, last in UNSAFE_RANGES)


def _unsafe_pattern(allowed: str) -> re.Pattern[str]:
    """One character class of UNSAFE_RANGES less the `allowed` characters."""
    spans: list[tuple[int, int]] = []
    for first, last in UNSAFE_RANGES:
        start = first
        for code in sorted(ord(char) for char in allowed if first <= ord(char) <= last):
            if start < code:
                spans.append((start, code - 1))
            start = code + 1
        if start <= last:
            spans.append((start, last))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans) + "]")


_UNSAFE_BUT_NEWLINE = _unsafe_pattern("\n")


def first_unsafe(text: str) -> str | None:
    """The first character of `text` that is_unsafe, a newline aside (None: none is): one
    regular expression, as a checker of megabytes of output must be."""
    found = _UNSAFE_BUT_NEWLINE.search(text)
    return found.group() if found else None


def unsafe_left(text: str, *, layout: bool = True) -> list[str]:
    """The unsafe characters in `text` (newlines and tabs allowed when `layout`)."""
    return sorted(
        {f"U+{ord(c):04X}" for c in text if is_unsafe(c) and not (layout and c in "\n\t")}
    )


# ckpt's own colours on a terminal (Rich and the threads table): SGR sequences only.
OWN_STYLES = re.compile(r"\x1b\[[0-9;]*m")
# A thread id that would act on a terminal: an OSC 52 clipboard write, a C1 CSI, bidi and
# invisible characters, line and paragraph separators, a tag character.
HOSTILE = "t\x1b]52;c;eA==\x07\x9b2J\u061c\u2028\u2029\U000e0041\u2066\u2069\u200b\ufeff\u202e"
