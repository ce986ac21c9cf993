"""decode(bytes) == normalize(LangGraph's own loads_typed(bytes)): samples, real stores, hypothesis.

LangGraph's `JsonPlusSerializer.loads_typed` is the oracle (permissive mode, so that it
rebuilds the test classes, here and in tests/decode_values.py); tests/normalize.py is the
one documented mapping from its Python objects to our representation.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import enum
import json
import logging
import sqlite3
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from pydantic import BaseModel

from ckpt.decoders import decode
from decode_values import (
    INT64,
    SERDE,
    assert_same,
    messages,
    oracle,
    scalars,
    text,
    values,
)
from runs import examples

DATA = Path(__file__).parent / "data"
AES_KEY = b"0123456789abcdef"  # the key of tests/data/sqlite_encrypted.db (samples README)


@pytest.fixture(autouse=True)
def _quiet_langgraph(caplog: pytest.LogCaptureFixture) -> None:
    # Permissive loads log "Deserializing unregistered type ..." for our test classes.
    caplog.set_level(logging.ERROR, logger="langgraph")


# -- serde_samples.json (format.md §10): one real record per type, raw bytes as written -----------

# name -> (tag, raw bytes base64), copied from ../shared/samples/serde_samples.json.
SAMPLES: dict[str, tuple[str, str]] = {
    "none": ("null", ""),
    "bytes": ("bytes", "AHJhdw=="),
    "bytearray": ("bytearray", "YmE="),
    "str_with_lone_surrogate": ("msgpack", "r2JhZCA/IHN1cnJvZ2F0ZQ=="),
    "send_plain": ("msgpack", "xyIBk69sYW5nZ3JhcGgudHlwZXOkU2VuZJKmd29ya2VygaFrAQ=="),
    "command": (
        "msgpack",
        "x0ECk69sYW5nZ3JhcGgudHlwZXOnQ29tbWFuZISlZ3JhcGjApnVwZGF0ZYGheAGmcmVzdW1loXKkZ290b6Z3b3JrZXI=",
    ),
    "interrupt": (
        "msgpack",
        "x0ECk69sYW5nZ3JhcGgudHlwZXOpSW50ZXJydXB0g6V2YWx1ZaNhc2uiaWSmYWJjMTIzr3Jlc3BvbnNlX3NjaGVtYcA=",
    ),
    "overwrite": (
        "msgpack",
        "xzgCk69sYW5nZ3JhcGgudHlwZXOpT3ZlcndyaXRlgqV2YWx1ZZIBAqR0eXBlrV9fb3ZlcndyaXRlX18=",
    ),
    "remove_message": (
        "msgpack",
        "x40FlNkgbGFuZ2NoYWluX2NvcmUubWVzc2FnZXMubW9kaWZpZXKtUmVtb3ZlTWVzc2FnZYanY29udGVudKCxYWRk"
        "aXRpb25hbF9rd2FyZ3OAsXJlc3BvbnNlX21ldGFkYXRhgKR0eXBlpnJlbW92ZaRuYW1lwKJpZKJtMbNtb2RlbF92"
        "YWxpZGF0ZV9qc29u",
    ),
    "document": (
        "msgpack",
        "x20FlL1sYW5nY2hhaW5fY29yZS5kb2N1bWVudHMuYmFzZahEb2N1bWVudISiaWTAqG1ldGFkYXRhgaFzAaxwYWdl"
        "X2NvbnRlbnSjZG9jpHR5cGWoRG9jdW1lbnSzbW9kZWxfdmFsaWRhdGVfanNvbg==",
    ),
    "human_message": (
        "msgpack",
        "x4kFlL1sYW5nY2hhaW5fY29yZS5tZXNzYWdlcy5odW1hbqxIdW1hbk1lc3NhZ2WGp2NvbnRlbnSiaGmxYWRkaXRp"
        "b25hbF9rd2FyZ3OAsXJlc3BvbnNlX21ldGFkYXRhgKR0eXBlpWh1bWFupG5hbWXAomlkomgxs21vZGVsX3ZhbGlk"
        "YXRlX2pzb24=",
    ),
    "ai_message_tool_calls": (
        "msgpack",
        "x9QFlLpsYW5nY2hhaW5fY29yZS5tZXNzYWdlcy5haalBSU1lc3NhZ2WJp2NvbnRlbnSgsWFkZGl0aW9uYWxfa3dh"
        "cmdzgLFyZXNwb25zZV9tZXRhZGF0YYCkdHlwZaJhaaRuYW1lwKJpZKJhMap0b29sX2NhbGxzkYSkbmFtZaF0pGFy"
        "Z3OBoXgBomlkomMxpHR5cGWpdG9vbF9jYWxssmludmFsaWRfdG9vbF9jYWxsc5CudXNhZ2VfbWV0YWRhdGHAs21v"
        "ZGVsX3ZhbGlkYXRlX2pzb24=",
    ),
    "secret_str": ("msgpack", "xyEAk65weWRhbnRpYy50eXBlc6lTZWNyZXRTdHKmczNjcjN0"),
    "numpy_fortran": (
        "msgpack",
        "xzwGlKM8ZjiSAgOhRsQwAAAAAAAAAAAAAAAAAAAIQAAAAAAAAPA/AAAAAAAAEEAAAAAAAAAAQAAAAAAAABRA",
    ),
    "numpy_noncontig": ("msgpack", "xxUGlKM8aTKRBaFDxAoAAAIABAAGAAgA"),
    "exception": ("msgpack", "slZhbHVlRXJyb3IoJ2Jvb20nKQ=="),
    "zoneinfo_datetime": (
        "msgpack",
        "xzsDlKhkYXRldGltZahkYXRldGltZbkyMDI1LTA3LTAxVDEyOjAwOjAwKzAyOjAwrWZyb21pc29mb3JtYXQ=",
    ),
    "aware_datetime_tz_name": (
        "msgpack",
        "xzsDlKhkYXRldGltZahkYXRldGltZbkyMDI1LTA1LTA2VDA3OjA4OjA5KzAwOjAwrWZyb21pc29mb3JtYXQ=",
    ),
    "send_with_timeout": (
        "msgpack",
        "x3gBk69sYW5nZ3JhcGgudHlwZXOkU2VuZJOmd29ya2VygaFrAcdTApOvbGFuZ2dyYXBoLnR5cGVzrVRpbWVvdXRQ"
        "b2xpY3mDq3J1bl90aW1lb3V0y0AUAAAAAAAArGlkbGVfdGltZW91dMCqcmVmcmVzaF9vbqRhdXRv",
    ),
}

# Records LangGraph cannot load as written (format.md §2.3 fallbacks): what we show instead.
SAMPLES_LANGGRAPH_LOSES: dict[str, tuple[str, str, Any]] = {
    "pydantic_v1_model": (  # the class lived in the generating script's __main__
        "msgpack",
        "xxsEk6hfX21haW5fX6hPbGRTdHlsZYKhYQGhYqF4",
        {"__type__": "__main__.OldStyle", "a": 1, "b": "x"},
    ),
    "unknown_module_kwargs_ext2": (
        "msgpack",
        "gaF2xxsCk69ub19zdWNoX21vZC5zdWKlS2xhc3OBoWEB",
        {"v": {"__type__": "no_such_mod.sub.Klass", "a": 1}},
    ),
    "method_ext3_not_allowlisted": (
        "msgpack",
        "xx8DlKJvc6ZzeXN0ZW2qZWNobyBwd25lZKhfX2NhbGxfXw==",
        {
            "__ckpt__": "method_call",
            "module": "os",
            "name": "system",
            "method": "__call__",
            "arg": "echo pwned",
        },
    ),
    "unknown_ext_code_42": (
        "msgpack",
        "gaF21SoBAg==",
        {"v": {"__ckpt__": "ext", "code": 42, "base64": "AQI=", "error": "unknown ext code 42"}},
    ),
    "unpicklable_custom_object": (
        "pickle",
        "gASVKQAAAAAAAACMCF9fbWFpbl9flIwLVW5waWNrbGFibGWUk5QpgZR9lIwBeJRLAXNiLg==",
        {
            "__ckpt__": "pickle",
            "globals": ["__main__.Unpicklable"],
            "size": 52,
            "base64": "gASVKQAAAAAAAACMCF9fbWFpbl9flIwLVW5waWNrbGFibGWUk5QpgZR9lIwBeJRLAXNiLg==",
        },
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_serde_samples_match_langgraph(name: str) -> None:
    tag, raw = SAMPLES[name]
    payload = base64.b64decode(raw)
    assert_same(decode(tag, payload), oracle(tag, payload))


@pytest.mark.parametrize("name", sorted(SAMPLES_LANGGRAPH_LOSES))
def test_serde_samples_langgraph_cannot_load(name: str) -> None:
    tag, raw, expected = SAMPLES_LANGGRAPH_LOSES[name]
    assert_same(decode(tag, base64.b64decode(raw)), expected)


def test_legacy_ext4_message_from_langchain_core_0_2() -> None:
    # samples/legacy_ext4_langchain_core_0.2_message.txt: messages were pydantic v1 then.
    payload = bytes.fromhex(
        "91c77e0493bd6c616e67636861696e5f636f72652e6d657373616765732e68756d616eac48756d616e4d"
        "65737361676587a7636f6e74656e74a26869b16164646974696f6e616c5f6b776172677380b1726573706f"
        "6e73655f6d6574616461746180a474797065a568756d616ea46e616d65c0a26964a26831a76578616d706c"
        "65c2"
    )
    decoded = decode("msgpack", payload)
    assert decoded == [
        {
            "__type__": "langchain_core.messages.human.HumanMessage",
            "content": "hi",
            "additional_kwargs": {},
            "response_metadata": {},
            "type": "human",
            "name": None,
            "id": "h1",
            "example": False,
        }
    ]
    assert_same(decoded, oracle("msgpack", payload))


# -- every blob of the real sample stores ------------------------------------------------------


@dataclasses.dataclass
class _SamplePoint:
    x: int
    y: int


class _SampleColor(enum.Enum):
    RED = "red"


class _SampleProfile(BaseModel):
    name: str
    score: float


@pytest.fixture
def graphdef(monkeypatch: pytest.MonkeyPatch) -> None:
    """The samples' graph module (graphdef.py of the generating run), so LangGraph can rebuild
    its classes; only their names matter to the comparison."""
    module = types.ModuleType("graphdef")
    for name, cls in {
        "Point": _SamplePoint,
        "Color": _SampleColor,
        "Profile": _SampleProfile,
        "Pair": collections.namedtuple("Pair", ["left", "right"]),
    }.items():
        cls.__name__ = name
        cls.__qualname__ = name
        cls.__module__ = "graphdef"
        setattr(module, name, cls)
    monkeypatch.setitem(sys.modules, "graphdef", module)


def sample_blobs(path: Path) -> Iterator[tuple[str, bytes, str | None]]:
    """(tag, payload, write channel or None for a checkpoint body) of every row."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as connection:
        yield from connection.execute("SELECT type, checkpoint, NULL FROM checkpoints")
        yield from connection.execute("SELECT type, value, channel FROM writes")


LEGACY_INTERRUPT_FIELDS = {"__type__", "value", "resumable", "ns", "when"}


TYPED_STORES = [
    "sqlite_checkpoints.db",
    "sqlite_delta.db",
    "legacy_lg0.3.20_cp2.0.21_sqlite.db",
]


@pytest.mark.parametrize("store", TYPED_STORES)
@pytest.mark.usefixtures("graphdef")
def test_every_blob_of_the_sample_stores(store: str) -> None:
    blobs = list(sample_blobs(DATA / store))
    assert blobs
    for tag, payload, channel in blobs:
        if tag == "empty":
            continue
        decoded = decode(tag, payload)
        if channel == "__interrupt__" and set(decoded[0]) == LEGACY_INTERRUPT_FIELDS:
            # langgraph < 0.4 Interrupt fields (format.md §8.9): we show what is stored, while
            # LangGraph rebuilds today's Interrupt (value, id) from them.
            assert decoded[0]["value"] == oracle(tag, payload)[0]["value"]
            continue
        assert_same(decoded, oracle(tag, payload))
        # The shallow decode only leaves messages, models and arrays packed.
        assert json.dumps(decode(tag, payload, shallow=True), allow_nan=False)


@pytest.mark.usefixtures("graphdef")
def test_every_blob_of_the_encrypted_store() -> None:
    encrypted = EncryptedSerializer.from_pycryptodome_aes(SERDE, key=AES_KEY)
    blobs = list(sample_blobs(DATA / "sqlite_encrypted.db"))
    assert {tag for tag, _, _ in blobs} == {"msgpack+aes", "null+aes"}
    for tag, payload, _ in blobs:
        assert_same(decode(tag, payload, aes_key=AES_KEY), oracle(tag, payload, encrypted))


def test_every_blob_of_the_fixture_stores(
    sqlite_store: Path, encrypted_store: Path, encryption_key: bytes
) -> None:
    """The stores fixtures/build.py writes by running real graphs (tests/conftest.py)."""
    encrypted = EncryptedSerializer.from_pycryptodome_aes(SERDE, key=encryption_key)
    for store, key, serde in (
        (sqlite_store, None, SERDE),
        (encrypted_store, encryption_key, encrypted),
    ):
        blobs = list(sample_blobs(store))
        assert len(blobs) > 50
        for tag, payload, _ in blobs:
            if tag != "empty":
                assert_same(decode(tag, payload, aes_key=key), oracle(tag, payload, serde))


def test_legacy_json_stores_decode() -> None:
    # LangGraph loses data in these rows (format.md §2.6), so only success is compared here;
    # tests/test_decode_legacy.py pins the values.
    stores = {"legacy_lg0.2.16_cp1.0.9_sqlite.db": "json"}
    for store, tag in stores.items():
        for row_tag, payload, _ in sample_blobs(DATA / store):
            assert row_tag == tag
            json.dumps(decode(row_tag, payload), allow_nan=False)


# -- hypothesis: values of every type LangGraph writes (tests/decode_values.py) ---------------


@settings(
    max_examples=examples(250),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(values)
def test_decode_matches_langgraph(value: Any) -> None:
    tag, payload = SERDE.dumps_typed(value)
    decoded = decode(tag, payload)
    assert_same(decoded, oracle(tag, payload))
    json.dumps(decoded, allow_nan=False)  # strict JSON, always


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(messages, max_size=6), INT64, st.dictionaries(text, scalars, max_size=3))
def test_checkpoint_shaped_values_match_langgraph(
    chat: list[Any], counter: int, extras: dict[str, Any]
) -> None:
    checkpoint = {
        "v": 4,
        "id": "1f1ec72c-0eda-626e-8006-7c0f0edec000",
        "channel_values": {"messages": chat, "counter": counter, "extras": extras},
        "channel_versions": {"messages": "00000000000000000000000000000008.0.2510932749734336"},
        "versions_seen": {"__input__": {}},
        "updated_channels": None,
    }
    tag, payload = SERDE.dumps_typed(checkpoint)
    assert_same(decode(tag, payload), oracle(tag, payload))
    shallow = decode(tag, payload, shallow=True)
    for message in shallow["channel_values"]["messages"]:
        assert message["__ckpt__"] == "skipped" and message["ext"] == 5
