"""Forged payloads are shown, never run: no import, no call, no unpickling (format.md §2.5, 8.12).

Each payload would create a marker file if anything it names were called; the tests check
that the decoded value shows the names and that the marker never appears. A control test
runs LangGraph's own permissive loader on the same bytes to prove the payloads are live.
"""

from __future__ import annotations

import base64
import builtins
import importlib
import json
import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ckpt.decoders import decode, decode_json_text, pickle_globals


def pack(value: Any) -> bytes:
    return ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)


def ext(code: int, payload: list[Any]) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, pack(payload))


def callables(marker: Path) -> list[tuple[str, str, Any]]:
    """(module, name, argument) triples that would create `marker` if called with it."""
    python = f"open({str(marker)!r}, 'w').close()"
    return [
        ("os", "system", f"touch {marker}"),
        ("subprocess", "Popen", ["touch", str(marker)]),
        ("builtins", "eval", python),
        ("builtins", "exec", python),
    ]


def forged(code: int, module: str, name: str, arg: Any) -> bytes:
    """An ext value of `code` naming module.name with `arg`, inside a normal state dict."""
    if code == 0:
        payload = [module, name, arg]
    elif code == 1:
        payload = [module, name, [arg]]
    elif code == 2:
        payload = [module, name, {"args": arg}]
    elif code == 3:
        payload = [module, name, arg, "__call__"]
    else:  # pydantic v1 / v2
        payload = [module, name, {"args": arg}, "model_validate_json"][: 3 if code == 4 else 4]
    return pack({"messages": [], "value": ext(code, payload)})


EXPECTED_SHAPE = {
    0: lambda module, name, arg: {"__type__": f"{module}.{name}", "value": arg},
    1: lambda module, name, arg: {"__type__": f"{module}.{name}", "args": [arg]},
    2: lambda module, name, arg: {"__type__": f"{module}.{name}", "args": arg},
    3: lambda module, name, arg: {
        "__ckpt__": "method_call",
        "module": module,
        "name": name,
        "method": "__call__",
        "arg": arg,
    },
    4: lambda module, name, arg: {"__type__": f"{module}.{name}", "args": arg},
    5: lambda module, name, arg: {"__type__": f"{module}.{name}", "args": arg},
}


@pytest.mark.parametrize("code", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("target", range(4), ids=["os.system", "Popen", "eval", "exec"])
def test_forged_ext_payloads_show_names_and_run_nothing(
    code: int, target: int, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    module, name, arg = callables(marker)[target]
    decoded = decode("msgpack", forged(code, module, name, arg))
    assert decoded["value"] == EXPECTED_SHAPE[code](module, name, arg)
    assert not marker.exists()


def test_the_forged_payloads_are_live(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Control: LangGraph's default (permissive) loader really runs an ext 0 os.system and an
    # ext 0 builtins.exec; so the marker staying absent above means something.
    caplog.set_level(logging.ERROR, logger="langgraph")
    serde = JsonPlusSerializer(allowed_msgpack_modules=True)
    for target in (0, 3):
        marker = tmp_path / f"pwned{target}"
        module, name, arg = callables(marker)[target]
        serde.loads_typed(("msgpack", forged(0, module, name, arg)))
        assert marker.exists(), f"{module}.{name} did not run under LangGraph"
        decode("msgpack", forged(0, module, name, arg))


def test_sample_forged_method_call() -> None:
    # serde_samples.json "method_ext3_not_allowlisted": ["os","system","echo pwned","__call__"]
    payload = b"\xc7\x1f\x03\x94\xa2os\xa6system\xaaecho pwned\xa8__call__"
    assert decode("msgpack", payload) == {
        "__ckpt__": "method_call",
        "module": "os",
        "name": "system",
        "method": "__call__",
        "arg": "echo pwned",
    }


class _Reduce:
    """Pickles as a call to os.system(command)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (self.command,))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_reducing_to_os_system_is_listed_not_loaded(protocol: int, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"state": _Reduce(f"touch {marker}")}, protocol=protocol)
    decoded = decode("pickle", payload)
    assert decoded == {
        "__ckpt__": "pickle",
        "globals": ["posix.system"],
        "size": len(payload),
        "base64": base64.b64encode(payload).decode(),
    }
    assert pickle_globals(payload) == ["posix.system"]
    if protocol >= 2:  # untyped langgraph 0.1 blobs starting with \x80 (format.md §4.1)
        assert decode(None, payload) == decoded
    assert not marker.exists()


def test_pickle_inside_encrypted_and_nested_values_is_never_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Reduce(f"touch {marker}"))
    # A pickle hidden as nested bytes is just bytes.
    decoded = decode("msgpack", pack({"blob": payload}))
    assert decoded["blob"]["__ckpt__"] == "bytes"
    assert not marker.exists()


LEGACY_FORGED = [
    {"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["touch {marker}"]},
    {
        "lc": 2,
        "type": "constructor",
        "id": ["subprocess", "Popen"],
        "args": [["touch", "{marker}"]],
        "kwargs": {"shell": False},
    },
    {
        "lc": 2,
        "type": "constructor",
        "id": ["builtins", "eval"],
        "method": "__call__",
        "args": ["open('{marker}', 'w').close()"],
    },
    {"lc": 1, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": "x"}},
    {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]},
]


@pytest.mark.parametrize("envelope", LEGACY_FORGED)
def test_forged_legacy_json_envelopes_run_nothing(envelope: dict[str, Any], tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = json.dumps(envelope).replace("{marker}", str(marker))
    decoded = decode("json", text.encode())
    assert decoded == decode_json_text(text)
    assert json.dumps(decoded)
    rendered = json.dumps(decoded)
    for part in envelope["id"]:
        assert part in rendered
    assert not marker.exists()


def _payloads_naming(module: str) -> list[tuple[str, bytes]]:
    return [
        *[("msgpack", forged(code, module, "Thing", "x")) for code in range(6)],
        ("msgpack", pack([ext(2, [module, "Thing", {"nested": ext(0, [module, "Other", 1])}])])),
        ("json", json.dumps({"lc": 2, "type": "constructor", "id": [module, "T"]}).encode()),
        ("json", json.dumps({"lc": 1, "type": "constructor", "id": [module, "T"]}).encode()),
        ("pickle", f"c{module}\nThing\n(tR.".encode()),
    ]


@pytest.mark.parametrize("module", ["no_such_module_ckpt_test.sub", "antigravity", "this"])
def test_no_module_named_in_the_data_is_imported(module: str) -> None:
    decode("msgpack", pack({"warm": "up"}))  # our own lazy imports, if any, happen here
    decode("pickle", b"\x80\x04K\x01.")  # (pickletools: only once a pickle shows up)
    assert module not in sys.modules
    before = set(sys.modules)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"import during decode: {args[:1]}")

    payloads = _payloads_naming(module)
    real_import, real_import_module = builtins.__import__, importlib.import_module
    # Plain assignments: monkeypatch itself may import while __import__ refuses.
    importlib.import_module = refuse
    builtins.__import__ = refuse
    try:
        decoded = [decode(tag, payload) for tag, payload in payloads]
    finally:
        builtins.__import__ = real_import
        importlib.import_module = real_import_module
    for value in decoded:
        assert module.split(".")[0] in json.dumps(value)
    assert set(sys.modules) == before


def test_a_fresh_interpreter_imports_nothing_named_in_the_data() -> None:
    # The strongest form: a new process, every forged payload, sys.modules compared.
    code = """
import json, sys
import ormsgpack
from ckpt.decoders import decode
pack = lambda v: ormsgpack.packb(v, option=ormsgpack.OPT_NON_STR_KEYS)
decode("msgpack", pack({"warm": "up"}))
decode("pickle", b"\\x80\\x04K\\x01.")
before = set(sys.modules)
for code in range(8):
    for module in ("antigravity", "no_such_module_ckpt_test", "os.path", "subprocess"):
        payload = [module, "Thing", ["x"], "m"] if code in (3, 5) else [module, "Thing", ["x"]]
        decode("msgpack", pack(ormsgpack.Ext(code, pack(payload))))
decode("pickle", b"cantigravity\\nfly\\n(tR.")
decode("json", b'{"lc": 2, "type": "constructor", "id": ["antigravity", "x"]}')
print(json.dumps(sorted(set(sys.modules) - before)))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == []


def test_pickletools_is_imported_only_for_pickle_values() -> None:
    code = """
import sys
from ckpt.decoders import decode
decode("msgpack", b"\\x81\\xa1a\\x01")
print("pickletools" in sys.modules)
decode("pickle", b"\\x80\\x04K\\x01.")
print("pickletools" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["False", "True"]


def test_crypto_is_imported_only_for_encrypted_values() -> None:
    code = """
import sys
from ckpt.decoders import decode
decode("msgpack", b"\\x81\\xa1a\\x01")
decode("msgpack+aes", b"x" * 40)
print("Crypto" in sys.modules)
decode("msgpack+aes", b"x" * 40, aes_key=b"0123456789abcdef")
print("Crypto" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["False", "True"]
