"""`ckpt types` on stores LangGraph wrote: the census equals the classes LangGraph itself
rebuilds, and the allowlist it prints, given to LangGraph's own JsonPlusSerializer in
strict mode, loads every stored value without a "blocked" event."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import importlib.metadata
import ipaddress
import json
import logging
import pathlib
import re
import shutil
import sqlite3
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypedDict
from zoneinfo import ZoneInfo

import ormsgpack
import pytest
from fixtures import agent_stores
from fixtures.agents import Approval, Invoice, Priority, Ticket
from fixtures.build import ENCRYPTION_KEY, fixture_warnings
from fixtures.js_stores import node_dsn
from jsonschema import Draft202012Validator
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel, SecretBytes, SecretStr

import ckpt
from ckpt import demo
from ckpt.decoders import decode, safe_types
from ckpt.errors import ExitCode
from ckpt.records.model import DumpQuery, RawBlob, RawCheckpoint, RawWrite, ThreadBytes
from ckpt.scan.census import census
from invoke import run
from store_files import folder_hashes, unexpected_changes

DOCS = Path(__file__).parent.parent / "docs"
KEY = ENCRYPTION_KEY.decode()
Pair = tuple[str, str]


# -- the safe list is LangGraph's -------------------------------------------------------------


def test_safe_types_copy_matches_the_installed_langgraph() -> None:
    assert safe_types.SAFE_MSGPACK_TYPES == lg_msgpack.SAFE_MSGPACK_TYPES
    assert safe_types.SAFE_MSGPACK_METHODS == lg_msgpack.SAFE_MSGPACK_METHODS
    installed = importlib.metadata.version("langgraph-checkpoint")
    assert safe_types.RELEASE == f"langgraph-checkpoint {installed}", "update RELEASE"


# -- helpers ------------------------------------------------------------------------------------


def types_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = run("types", *args, "--json")
    assert result.exit_code == code, result.stderr + result.stdout
    record: dict[str, Any] = json.loads(result.stdout)
    validator().validate(record)
    return record


def validator() -> Draft202012Validator:
    schema = json.loads((DOCS / "types.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def pairs(record: dict[str, Any], *statuses: str) -> set[Pair]:
    return {
        (t["module"], t["name"])
        for t in record["types"]
        if t["serde"] == "msgpack" and (not statuses or t["status"] in statuses)
    }


def allowlist(record: dict[str, Any]) -> list[tuple[str, ...]]:
    return [tuple(pair) for pair in record["allowlist"]["msgpack"]]


def stored_values(spec: str, aes_key: str | None = None) -> Iterator[tuple[str, bytes]]:
    """Every (tag, bytes) LangGraph would hand to loads_typed, read through ckpt's raw scans:
    msgpack bodies (SQLite, pickle), memory-store metadata, blobs, writes."""
    with ckpt.open(spec, aes_key=aes_key) as store:
        raw = store.backend
        rows: list[Any] = [
            *raw.raw_checkpoints(DumpQuery()),
            *raw.raw_blobs(DumpQuery()),
            *raw.raw_writes(DumpQuery()),
        ]
    for row in rows:
        if isinstance(row, RawCheckpoint):
            if row.metadata_type not in ("json", "jsonb", None):
                yield row.metadata_type, row.metadata
            if row.type not in ("jsonb", None):
                yield row.type, row.body
        elif row.type not in (None, "empty") and row.data is not None:
            yield row.type, row.data


@contextmanager
def serde_events() -> Iterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(lambda event: events.append(dict(event)))
    logger = logging.getLogger("langgraph.checkpoint.serde.jsonplus")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the "Blocked deserialization of ..." lines
    try:
        yield events
    finally:
        unregister()
        logger.setLevel(level)


def load_all(spec: str, serde: Any, aes_key: str | None = None) -> list[Any]:
    return [serde.loads_typed(pair) for pair in stored_values(spec, aes_key)]


def rebuilt_classes(values: list[Any]) -> set[Pair]:
    """What LangGraph rebuilt (permissive mode): the class of every object in the loaded
    values, named as the msgpack ext record names it."""
    found: set[Pair] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        kind = type(value)
        if value is None or kind in (str, int, float, bool, bytes, bytearray):
            continue
        if kind in (dict,):
            stack.extend(value.keys())
            stack.extend(value.values())
            continue
        if kind in (list, tuple):
            stack.extend(value)
            continue
        if isinstance(value, _DeltaSnapshot):
            stack.append(value.value)
            continue
        if isinstance(value, re.Pattern):
            found.add(("re", "compile"))
            continue
        found.add((kind.__module__, kind.__name__))
        if isinstance(value, set | frozenset | deque | tuple):
            stack.extend(value)
        elif isinstance(value, BaseModel):
            stack.extend(value.__dict__.values())
        elif dataclasses.is_dataclass(value):
            stack.extend(getattr(value, f.name) for f in dataclasses.fields(value))
        elif isinstance(value, Send):
            stack.append(value.arg)
        elif isinstance(value, dt.time) and value.tzinfo is not None:
            stack.append(value.tzinfo)
        elif isinstance(value, dt.timezone):
            found.add(("datetime", "timedelta"))  # stored as ext 1 [timedelta, name]
    return found


STDLIB = (
    dt.datetime,
    dt.date,
    dt.time,
    dt.timedelta,
    dt.timezone,
    uuid.UUID,
    decimal.Decimal,
    pathlib.PurePath,
    ipaddress.IPv4Address,
    ZoneInfo,
)
assert STDLIB  # imported for rebuilt_classes' isinstance checks to resolve


def check_against_langgraph(spec: str, aes_key: str | None = None) -> dict[str, Any]:
    """The three promises on one store: the census is what LangGraph rebuilds; strict
    mode with the printed allowlist blocks nothing; strict mode without it blocks exactly
    the `allowlist` classes."""
    args = [spec] if aes_key is None else [spec, "--aes-key", aes_key]
    record = types_json(*args)

    def serde(**kwargs: Any) -> Any:
        inner = JsonPlusSerializer(**kwargs)
        if aes_key is None:
            return inner
        return EncryptedSerializer.from_pycryptodome_aes(inner, key=aes_key.encode())

    with serde_events():
        permissive = load_all(spec, serde(allowed_msgpack_modules=True), aes_key)
    expected = rebuilt_classes(permissive)
    # LangGraph never calls a blocked method: those stay its raw argument.
    assert pairs(record) - pairs(record, "blocked") == expected

    with serde_events() as events:
        load_all(spec, serde(allowed_msgpack_modules=allowlist(record) or None), aes_key)
    assert [e for e in events if e["kind"] == "msgpack_blocked"] == []
    blocked_methods = {(e["module"], e["name"]) for e in events}
    assert blocked_methods == pairs(record, "blocked")

    with serde_events() as events:
        load_all(spec, serde(allowed_msgpack_modules=None), aes_key)  # strict, safe list only
    blocked = {(e["module"], e["name"]) for e in events if e["kind"] == "msgpack_blocked"}
    assert blocked == pairs(record, "allowlist")
    return record


# -- the fixture stores ---------------------------------------------------------------------------


DEMO_CLASSES = {
    ("ckpt.demo", "Address"),  # dataclass
    ("ckpt.demo", "Color"),  # Enum
    ("ckpt.demo", "Customer"),  # pydantic v2 model
    ("ckpt.demo", "Pair"),  # namedtuple
    ("pydantic.types", "SecretStr"),
}


def test_census_of_the_demo_store_is_what_langgraph_rebuilds(sqlite_store: Path) -> None:
    record = check_against_langgraph(str(sqlite_store))
    assert pairs(record, "allowlist") == DEMO_CLASSES
    assert DEMO_CLASSES == {(c.__module__, c.__name__) for c in demo_classes()}
    assert record["store"] == {
        "location": str(sqlite_store),
        "kind": "sqlite",
        "era": "current",
        "era_note": record["store"]["era_note"],
    }
    assert record["checkpoint_versions"] == [
        {"v": 4, "checkpoints": record["scanned"]["checkpoints"]}
    ]
    assert record["safe_list"] == safe_types.RELEASE
    by_name = {t["name"]: t for t in record["types"]}
    assert by_name["ndarray"]["status"] == "ungated"
    assert by_name["datetime"]["method"] == "fromisoformat"
    assert by_name["datetime"]["status"] == "safe"
    assert by_name["Color"]["becomes"] == "value"
    assert by_name["Address"]["becomes"] == "dict"
    assert by_name["Send"]["channels"] == ["__pregel_tasks"]
    assert by_name["Interrupt"]["writes"] == ["__interrupt__"]
    assert {d["name"] for d in record["would_degrade"]} == {n for _, n in DEMO_CLASSES}
    assert all(d["fixed_by_allowlist"] for d in record["would_degrade"])


def demo_classes() -> list[type]:
    return [demo.Address, demo.Color, demo.Customer, demo.Pair, SecretStr]


@pytest.fixture(scope="module")
def agents_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("types-agents") / "agents.sqlite"
    agent_stores.build_sqlite(path)
    return path


def test_census_of_the_agent_store_names_its_custom_state(agents_store: Path) -> None:
    """fixtures/agents.py stores pydantic models (Invoice; Approval, an interrupt's validated
    answer), a dataclass (Ticket) and an Enum (Priority), inside each other and in lists,
    in channels, writes and Sends."""
    record = check_against_langgraph(str(agents_store))
    custom = {(c.__module__, c.__name__) for c in (Approval, Invoice, Priority, Ticket)}
    assert custom <= pairs(record, "allowlist")
    assert {p for p in pairs(record, "allowlist") if p[0] == "fixtures.agents"} == custom
    by_name = {t["name"]: t for t in record["types"] if t["module"] == "fixtures.agents"}
    # Priority is nested: inside Ticket (dataclass), Invoice (model) and the history list.
    assert {"ticket", "invoice", "history", "priority"} <= set(by_name["Priority"]["channels"])
    assert "history" in by_name["Ticket"]["channels"]  # a dataclass inside a list
    assert "__pregel_tasks" in by_name["Ticket"]["channels"]  # inside a Send's argument
    assert by_name["Ticket"]["ext"] == [2] and by_name["Invoice"]["ext"] == [5]
    assert by_name["Priority"]["ext"] == [0]
    python = record["allowlist"]["python"]
    assert '("fixtures.agents", "Invoice"),' in python
    serde = record["allowlist"]["langgraph_json"]["checkpointer"]["serde"]
    assert ["fixtures.agents", "Ticket"] in serde["allowed_msgpack_modules"]


def test_encrypted_store_with_the_key_gives_the_plain_census(
    encrypted_store: Path, sqlite_store: Path
) -> None:
    record = check_against_langgraph(str(encrypted_store), KEY)
    plain = types_json(str(sqlite_store))
    assert pairs(record) == pairs(plain)
    assert record["allowlist"]["msgpack"] == plain["allowlist"]["msgpack"]
    encryption = record["encryption"]
    assert encryption["key"] and encryption["hidden"] == 0 and encryption["decrypted"] > 0
    assert all(t["plain"] == 0 and t["ciphers"] == ["aes"] for t in record["tags"])


def test_encrypted_store_without_the_key_reports_tags_and_exits_6(encrypted_store: Path) -> None:
    result = run("types", str(encrypted_store), "--json")
    assert result.exit_code == ExitCode.ENCRYPTED
    assert result.stderr.count("\n") == 1 and "--aes-key" in result.stderr
    record = json.loads(result.stdout)
    validator().validate(record)
    assert record["types"] == []
    encryption = record["encryption"]
    assert encryption["hidden"] > 0 and not encryption["key"]
    assert "the AES key" in encryption["note"]
    # null+aes is None by its tag alone: nothing is hidden there.
    nulls = sum(t["encrypted"] for t in record["tags"] if t["tag"] == "null")
    assert encryption["encrypted"] == encryption["hidden"] + nulls
    assert {v["v"] for v in record["checkpoint_versions"]} == {None}


def test_wrong_key_is_exit_6(encrypted_store: Path) -> None:
    result = run("types", str(encrypted_store), "--aes-key", "X" * 16)
    assert result.exit_code == ExitCode.ENCRYPTED
    assert result.stdout == "" and result.stderr.count("\n") == 1


def test_dev_folder_and_memory_pickle(dev_folder: Path, memory_pkl: Path) -> None:
    record = check_against_langgraph(str(dev_folder))
    assert record["store"]["era"] == "dev-folder"
    assert pairs(record, "allowlist") == DEMO_CLASSES
    assert record["scanned"]["blobs"] > 0
    # Blob examples are matched to a checkpoint that holds that version.
    for item in record["types"]:
        example = item["example"]
        if example["part"] == "blob":
            assert example["checkpoint_id"] is not None and example["version"]
    assert {t["part"] for t in record["tags"]} >= {"checkpoints", "blobs", "writes", "metadata"}
    single = types_json(str(memory_pkl))
    assert single["store"]["era"] == "persistent-dict"
    assert single["scanned"]["writes"] == 0 and single["types"] == []


@pytest.mark.postgres
def test_postgres_store(pg_store: Any) -> None:
    record = check_against_langgraph(node_dsn(pg_store.dsn))
    assert record["store"]["kind"] == "postgres"
    assert pairs(record, "allowlist") == DEMO_CLASSES
    assert {t["tag"] for t in record["tags"] if t["part"] == "checkpoints"} == {"jsonb"}
    assert record["scanned"]["blobs"] > 0


# -- legacy JSON, pickles, forged method calls -------------------------------------------------


def test_legacy_json_store_names_envelope_classes(samples: Path) -> None:
    record = types_json(str(samples / "legacy_lg0.2.16_cp1.0.9_sqlite.db"))
    json_types = {(t["lc"], t["module"], t["name"]): t for t in record["types"]}
    assert all(t["serde"] == "json" for t in record["types"])
    human = json_types[(1, "langchain.schema.messages", "HumanMessage")]
    assert human["status"] == "langchain"
    send = json_types[(2, "langgraph.constants", "Send")]
    assert send["status"] == "allowlist" and send["becomes"] == "envelope"
    assert json_types[(2, "datetime", "datetime")]["status"] == "safe"
    assert record["allowlist"]["json"] == [["langgraph", "constants", "Send"]]
    assert "allowed_json_modules=[" in record["allowlist"]["python"]
    serde = record["allowlist"]["langgraph_json"]["checkpointer"]["serde"]
    assert serde["allowed_json_modules"] == [["langgraph", "constants", "Send"]]
    assert record["allowlist"]["msgpack"] == []
    untyped = types_json(str(samples / "legacy_lg0.1.19_sqlite.db"))
    assert untyped["store"]["era"] == "0.1"
    assert {t["tag"] for t in untyped["tags"]} == {None}
    assert ("langchain.schema.messages", "AIMessage") in {
        (t["module"], t["name"]) for t in untyped["types"]
    }


class Opaque:
    """Neither a dataclass nor a model: msgpack cannot take it, pickle_fallback pickles it."""

    def __init__(self, label: str) -> None:
        self.label = label


class OpaqueState(TypedDict, total=False):
    label: str
    thing: Any


def test_pickled_values_list_their_globals(tmp_path: Path) -> None:
    path = tmp_path / "pickled.sqlite"
    builder = StateGraph(OpaqueState)
    builder.add_node("make", lambda state: {"thing": Opaque(state["label"])})
    builder.add_edge(START, "make")
    serde = JsonPlusSerializer(pickle_fallback=True)
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn, fixture_warnings():
        graph = builder.compile(checkpointer=SqliteSaver(conn, serde=serde))
        graph.invoke({"label": "x"}, {"configurable": {"thread_id": "p1"}})
    record = types_json(str(path))
    assert record["pickle"]["values"] > 0
    names = [g["name"] for g in record["pickle"]["globals"]]
    assert any(name.endswith(".Opaque") for name in names), names
    opaque = next(g for g in record["pickle"]["globals"] if g["name"].endswith(".Opaque"))
    assert opaque["threads"] == 1 and opaque["example"]["thread_id"] == "p1"
    assert record["allowlist"]["pickle_fallback"] is True
    assert "pickle_fallback=True" in record["allowlist"]["python"]
    serde_json = record["allowlist"]["langgraph_json"]["checkpointer"]["serde"]
    assert serde_json["pickle_fallback"] is True
    assert any(t["tag"] == "pickle" for t in record["tags"])
    human = run("types", str(path))
    assert human.exit_code == 0 and "pickle_fallback=True" in human.stdout


def forged_ext(code: int, payload: list[Any]) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(payload))


def test_forged_method_call_is_blocked_whatever_the_allowlist(
    tmp_path: Path, sqlite_store: Path
) -> None:
    path = tmp_path / "forged.sqlite"
    shutil.copy(sqlite_store, path)
    value = ormsgpack.packb(
        [forged_ext(3, ["os", "system", "touch /tmp/ckpt-never", "__call__"]), "plain"]
    )
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute("SELECT checkpoint_id FROM checkpoints LIMIT 1").fetchone()
        conn.execute(
            "INSERT INTO writes VALUES ('support-1', '', ?, 'forged', '', 7, 'x', 'msgpack', ?)",
            (row[0], value),
        )
        conn.commit()
    record = check_against_langgraph(str(path))
    forged = next(t for t in record["types"] if t["name"] == "system")
    assert forged["status"] == "blocked" and forged["method"] == "__call__"
    assert forged["becomes"] == "value" and forged["writes"] == ["x"]
    assert ("os", "system") not in allowlist(record)
    degrade = next(d for d in record["would_degrade"] if d["name"] == "system")
    assert degrade["fixed_by_allowlist"] is False
    assert not Path("/tmp/ckpt-never").exists()


# -- hostile and odd values, read by the census directly ----------------------------------------


def write_row(data: bytes | None, tag: str | None = "msgpack", channel: str = "c") -> RawWrite:
    return RawWrite("t", "", "cp", "task", 0, channel, tag, data, len(data or b""))


class FakeStore:
    """The raw-scan side of a Store, for values no saver writes."""

    kind = "sqlite"
    location = "fake"
    era, era_note = "current", ""
    rows_in_python_order = True
    aes_key: bytes | None = None

    def __init__(self, writes: list[RawWrite]) -> None:
        self.writes = writes

    def thread_exists(self, thread_id: str) -> bool:
        return True

    @contextmanager
    def one_pass(self, *, measure: bool = False) -> Iterator[None]:
        yield

    def sizes(self, query: DumpQuery) -> dict[str, ThreadBytes]:
        found: dict[str, ThreadBytes] = {}
        for write in self.writes:
            found.setdefault(write.thread_id, ThreadBytes()).writes += 1
        return found

    def raw_checkpoints(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawCheckpoint]:
        return iter(())

    def raw_blobs(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawBlob]:
        return iter(())

    def raw_writes(self, query: DumpQuery, *, data: bool = True) -> Iterator[RawWrite]:
        return iter(self.writes)


def fake_census(*writes: RawWrite) -> dict[str, Any]:
    record: dict[str, Any] = census(FakeStore(list(writes)))  # type: ignore[arg-type]
    validator().validate(record)
    return record


def nested(depth: int) -> ormsgpack.Ext:
    value: Any = "leaf"
    for _ in range(depth):
        value = forged_ext(2, ["m", "K", {"x": value}])
    return value


def test_deep_and_malformed_ext_values_are_counted_not_crashed() -> None:
    too_deep = ormsgpack.packb([nested(150)])
    unknown = ormsgpack.packb([ormsgpack.Ext(42, b"\x01\x02")])
    malformed = ormsgpack.packb([ormsgpack.Ext(2, ormsgpack.packb({"not": "a list"}))])
    truncated = ormsgpack.packb([nested(3)])[:-3]
    record = fake_census(
        write_row(ormsgpack.packb([nested(20)])),
        write_row(too_deep),
        write_row(unknown),
        write_row(malformed),
        write_row(truncated),
    )
    deep = next(t for t in record["types"] if (t["module"], t["name"]) == ("m", "K"))
    assert deep["count"] >= 20
    assert record["scanned"]["undecodable"] == 2
    errors = " ".join(p["error"] for p in record["undecodable"])
    assert "nested more than 100 deep" in errors and "invalid msgpack" in errors
    codes = {e["code"]: e for e in record["ext_codes"]}
    assert codes[42]["count"] == 1
    assert codes[2]["malformed"] == 1


def test_ext_values_as_map_keys_are_undecodable_as_for_langgraph() -> None:
    key = ormsgpack.packb(forged_ext(0, ["uuid", "UUID", "0" * 32]))
    as_key = b"\x81" + key + b"\x01"  # {<ext>: 1}: ormsgpack cannot write this, a forger can
    in_tuple_key = b"\x81\x92\x01" + key + b"\x02"  # {(1, <ext>): 2}
    record = fake_census(write_row(as_key), write_row(in_tuple_key))
    assert record["types"] == [] and record["scanned"]["undecodable"] == 2
    serde = JsonPlusSerializer()
    for data in (as_key, in_tuple_key):
        with pytest.raises(ValueError):
            serde.loads_typed(("msgpack", data))


def test_tiny_ext_values_past_the_budget_are_too_large_as_in_show() -> None:
    """The census spends the decoder's expansion budget (docs/security.md): 2,000,000
    3-byte ext values are one too-large value, not two million placeholders (200 MB);
    just under the budget the same shape is read and counted."""
    from ckpt.decoders.msgpack import MIN_EXTS
    from ckpt.errors import TooLarge

    item = ormsgpack.packb(ormsgpack.Ext(0, b"\x00"))
    bomb = b"\xdd" + (2_000_000).to_bytes(4, "big") + item * 2_000_000
    with pytest.raises(TooLarge) as raised:
        decode("msgpack", bomb)
    record = fake_census(write_row(bomb))
    assert record["scanned"]["undecodable"] == 1
    assert [p["error"] for p in record["undecodable"]] == [str(raised.value)]
    fitting = b"\xdd" + MIN_EXTS.to_bytes(4, "big") + item * MIN_EXTS
    record = fake_census(write_row(fitting))
    assert record["scanned"]["undecodable"] == 0
    assert record["ext_codes"] and record["ext_codes"][0]["count"] == MIN_EXTS


def test_secret_bytes_and_other_safe_values_in_one_write() -> None:
    serde = JsonPlusSerializer()
    tag, data = serde.dumps_typed(
        {"s": SecretBytes(b"x"), "z": ZoneInfo("Europe/Paris"), "t": (1, 2)}
    )
    record = fake_census(write_row(data, tag))
    assert pairs(record, "safe") == {("zoneinfo", "ZoneInfo")}
    assert pairs(record, "allowlist") == {("pydantic.types", "SecretBytes")}


class Mood(enum.Enum):
    GOOD = "good"


def test_counts_and_threads_over_rows() -> None:
    serde = JsonPlusSerializer()
    _, one = serde.dumps_typed([Mood.GOOD, Mood.GOOD])
    rows = [
        RawWrite("a", "", "cp1", "task", 0, "mood", "msgpack", one, len(one)),
        RawWrite("a", "", "cp2", "task", 0, "mood", "msgpack", one, len(one)),
        RawWrite("b", "", "cp3", "task", 0, "other", "msgpack", one, len(one)),
        RawWrite("b", "", "cp3", "task", 1, "n", "null", b"", 0),
    ]
    record = fake_census(*rows)
    mood = next(t for t in record["types"] if t["name"] == "Mood")
    assert (mood["count"], mood["threads"]) == (6, 2)
    assert mood["writes"] == ["mood", "other"]
    assert mood["example"]["checkpoint_id"] == "cp1"
    assert record["scanned"]["threads"] == 2
    assert {(t["tag"], t["plain"]) for t in record["tags"]} == {("msgpack", 3), ("null", 1)}


# -- the command ---------------------------------------------------------------------------------


def test_human_view_shows_the_allowlist_and_the_tags(sqlite_store: Path) -> None:
    result = run("types", str(sqlite_store))
    assert result.exit_code == 0 and result.stderr == ""
    out = result.stdout
    assert "allowed_msgpack_modules=[" in out and '("ckpt.demo", "Customer"),' in out
    assert '["ckpt.demo", "Address"]' in out  # the langgraph.json snippet, one pair a line
    assert "Would degrade under strict mode" in out
    assert "langgraph-checkpoint 4.3.2" in out
    for column in ("TAG", "PLAIN", "ENCRYPTED", "CLASS", "STATUS", "THREADS"):
        assert column in out


def test_thread_option_and_unknown_thread(sqlite_store: Path) -> None:
    record = types_json(str(sqlite_store), "--thread", "rich-1", "-q")
    assert record["scanned"]["threads"] == 1
    assert pairs(record, "allowlist") == DEMO_CLASSES
    support = types_json(str(sqlite_store), "-t", "support-1")
    assert pairs(support, "allowlist") == set()
    result = run("types", str(sqlite_store), "--thread", "nope")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stdout == "" and result.stderr.count("\n") == 1


def test_bad_stores_give_the_usual_errors(tmp_path: Path) -> None:
    missing = run("types", str(tmp_path / "none.sqlite"))
    assert missing.exit_code == ExitCode.NO_STORE and missing.stderr.count("\n") == 1
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all" * 10)
    result = run("types", str(junk))
    assert result.exit_code == ExitCode.UNREADABLE and "Traceback" not in result.stderr


def test_types_never_changes_the_store(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "copy.sqlite"  # a copy: other tests open the session store too
    shutil.copy(sqlite_store, store)
    before = folder_hashes(tmp_path)
    assert run("types", str(store)).exit_code == 0
    assert unexpected_changes(tmp_path, before) == []  # same bytes; at most -wal/-shm made


def test_library_function_hears_of_every_row(sqlite_store: Path) -> None:
    seen: list[int] = []
    with ckpt.open(sqlite_store) as store:
        record = census(store.backend, progress=seen.append)
        total = store.rows_to_read()
    scanned = record["scanned"]
    assert sum(seen) == scanned["checkpoints"] + scanned["blobs"] + scanned["writes"] == total


Loader = Callable[[str], str]
