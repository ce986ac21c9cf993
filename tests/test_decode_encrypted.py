"""`<inner>+aes` values (format.md §2.7): decrypted with the key, else a marked record why."""

from __future__ import annotations

import base64

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ckpt.decoders import decode, key_from_env_or_arg
from ckpt.errors import DecodeError, EncryptedError

KEYS = [b"0123456789abcdef", b"0123456789abcdef01234567", b"0123456789abcdef0123456789abcdef"]
VALUE = {"messages": [HumanMessage(content="secret", id="x")], "note": "TOP SECRET"}
DECODED = {
    "messages": [
        {
            "__type__": "langchain_core.messages.human.HumanMessage",
            "content": "secret",
            "additional_kwargs": {},
            "response_metadata": {},
            "type": "human",
            "name": None,
            "id": "x",
        }
    ],
    "note": "TOP SECRET",
}


def encrypt(value: object, key: bytes) -> tuple[str, bytes]:
    serde = EncryptedSerializer.from_pycryptodome_aes(JsonPlusSerializer(), key=key)
    return serde.dumps_typed(value)


@pytest.mark.parametrize("key", KEYS, ids=["AES-128", "AES-192", "AES-256"])
def test_decrypts_with_the_key(key: bytes) -> None:
    tag, payload = encrypt(VALUE, key)
    assert tag == "msgpack+aes"
    assert decode(tag, payload, aes_key=key) == DECODED
    shallow = decode(tag, payload, aes_key=key, shallow=True)
    assert shallow["messages"][0]["__ckpt__"] == "skipped"


def test_without_a_key() -> None:
    tag, payload = encrypt(VALUE, KEYS[0])
    assert decode(tag, payload) == {
        "__ckpt__": "encrypted",
        "cipher": "aes",
        "inner": "msgpack",
        "size": len(payload),
        "reason": "no key: it needs the AES key (LANGGRAPH_AES_KEY)",
        "base64": base64.b64encode(payload).decode(),
    }


def test_with_a_wrong_key() -> None:
    tag, payload = encrypt(VALUE, KEYS[0])
    assert decode(tag, payload, aes_key=b"fedcba9876543210") == {
        "__ckpt__": "encrypted",
        "cipher": "aes",
        "inner": "msgpack",
        "size": len(payload),
        "reason": "wrong key",
        "base64": base64.b64encode(payload).decode(),
    }


def test_none_is_null_aes() -> None:
    tag, payload = encrypt(None, KEYS[0])
    assert (tag, len(payload)) == ("null+aes", 32)
    assert decode(tag, payload, aes_key=KEYS[0]) is None
    assert decode(tag, payload) is None  # the tag alone says so
    assert decode(tag, payload, aes_key=b"fedcba9876543210")["reason"] == "wrong key"


def test_other_inner_tags_and_unencrypted_rows() -> None:
    tag, payload = encrypt(b"\x00raw", KEYS[0])
    assert tag == "bytes+aes"
    assert decode(tag, payload, aes_key=KEYS[0])["base64"] == "AHJhdw=="
    # An EncryptedSerializer reads unencrypted rows too: so do we, key or not.
    assert decode("msgpack", b"\x81\xa1a\x01", aes_key=KEYS[0]) == {"a": 1}


def test_unknown_cipher_and_split_on_the_first_plus() -> None:
    assert decode("msgpack+rot13", b"abc", aes_key=KEYS[0]) == {
        "__ckpt__": "encrypted",
        "cipher": "rot13",
        "inner": "msgpack",
        "size": 3,
        "reason": "unsupported cipher 'rot13'",
        "base64": "YWJj",
    }
    assert decode("msgpack+aes+aes", b"abc")["cipher"] == "aes+aes"


def test_too_short_for_nonce_and_tag() -> None:
    with pytest.raises(DecodeError):
        decode("msgpack+aes", b"\x00" * 16, aes_key=KEYS[0])


def test_a_key_of_a_bad_length_is_an_error_not_a_wrong_key() -> None:
    tag, payload = encrypt(VALUE, KEYS[0])
    with pytest.raises(EncryptedError):
        decode(tag, payload, aes_key=b"short")


# -- the key ---------------------------------------------------------------------------------


def test_key_from_the_argument_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "fedcba9876543210")
    assert key_from_env_or_arg("0123456789abcdef") == b"0123456789abcdef"
    assert key_from_env_or_arg(None) == b"fedcba9876543210"


def test_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    assert key_from_env_or_arg(None) is None
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "")  # an empty variable counts as unset
    assert key_from_env_or_arg(None) is None


def test_key_is_utf8_like_langgraph(monkeypatch: pytest.MonkeyPatch) -> None:
    assert key_from_env_or_arg("é" * 8) == "é".encode() * 8  # 16 bytes, 8 characters


@pytest.mark.parametrize("bad", ["short", "0123456789abcdef0", "é" * 9, ""])
def test_key_length_is_checked(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EncryptedError, match="`aes_key` must be 16, 24 or 32 bytes"):
        key_from_env_or_arg(bad)
    monkeypatch.setenv("LANGGRAPH_AES_KEY", bad or "x")
    with pytest.raises(EncryptedError, match="LANGGRAPH_AES_KEY must be 16, 24 or 32 bytes"):
        key_from_env_or_arg(None)
