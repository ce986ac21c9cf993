"""`decode`: one serde pair (type tag, bytes) from any store -> JSON-ready values (format.md §9)."""

from __future__ import annotations

import base64
from typing import Any, Final

from ckpt.decoders.crypto import NO_KEY, WRONG_KEY, decrypt_aes, encrypted_record
from ckpt.decoders.lcjson import decode_json_text
from ckpt.decoders.msgpack import decode_msgpack
from ckpt.decoders.pickle_imports import pickle_record
from ckpt.decoders.values import ABSENT, MARK_KEY, bytes_record
from ckpt.errors import DecodeError

_SUPPORTED_CIPHERS: Final = frozenset({"aes"})


def decode(
    tag: str | None,
    payload: bytes | None,
    *,
    aes_key: bytes | None = None,
    shallow: bool = False,
) -> Any:
    """Decode one stored value to JSON-ready data (docs/json.md, "Decoded values").

    Never imports, calls or unpickles anything the data names. Raises DecodeError for
    truncated, malformed or hostile payloads; encrypted values without a (right) key and
    unknown tags come back as marked records instead. `shallow=True` leaves messages,
    pydantic models and numpy arrays (ext 4, 5, 6) packed, for fast listings.
    """
    try:
        if type(payload) is bytes:
            # The tags of most values of most stores, first: what _decode does for them.
            if tag == "msgpack":
                return decode_msgpack(payload, shallow=shallow)
            if tag == "null":
                return None
            return _decode(tag, False, payload, aes_key, shallow)
        data = b"" if payload is None else bytes(payload)
        return _decode(tag, payload is None, data, aes_key, shallow)
    except RecursionError:
        raise DecodeError("value nested too deep") from None


def _decode(tag: str | None, missing: bool, data: bytes, key: bytes | None, shallow: bool) -> Any:
    if tag is None:
        # langgraph <= 0.1 stored untyped blobs: JSON, or a pickle if the bytes start with
        # \x80 and end with "." (JsonPlusSerializerCompat, format.md §4.1).
        if missing:
            return None
        if data[:1] == b"\x80" and data[-1:] == b".":
            return pickle_record(data)
        return decode_json_text(data)
    if "+" in tag:
        inner, cipher = tag.split("+", 1)  # the first "+", like EncryptedSerializer
        return _decrypt(inner, cipher, data, key, shallow)
    if tag == "msgpack":
        return decode_msgpack(data, shallow=shallow)
    if tag == "null":
        return None
    if tag == "empty":
        return ABSENT
    if tag in ("bytes", "bytearray"):
        return bytes_record(data)
    if tag == "json":
        return decode_json_text(data)
    if tag == "pickle":
        return pickle_record(data)
    # SerializerCompat tags (type(obj).__name__ of an old custom serde) and anything newer.
    return {
        MARK_KEY: "opaque",
        "tag": tag,
        "size": len(data),
        "base64": base64.b64encode(data).decode("ascii"),
    }


def _decrypt(inner: str, cipher: str, data: bytes, key: bytes | None, shallow: bool) -> Any:
    if cipher not in _SUPPORTED_CIPHERS:
        return encrypted_record(cipher, inner, data, f"unsupported cipher {cipher!r}")
    if key is None:
        if inner == "null":
            return None  # the tag alone says the value is None; nothing is hidden
        return encrypted_record(cipher, inner, data, NO_KEY)
    plaintext = decrypt_aes(data, key)
    if plaintext is None:
        return encrypted_record(cipher, inner, data, WRONG_KEY)
    return _decode(inner, False, plaintext, None, shallow)
