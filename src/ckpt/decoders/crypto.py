"""`<inner>+aes` values of LangGraph's EncryptedSerializer (format.md §2.7), and the AES key."""

from __future__ import annotations

import base64
import os
from typing import Any, Final

from ckpt.decoders.values import MARK_KEY
from ckpt.errors import DecodeError, EncryptedError

KEY_ENV: Final = "LANGGRAPH_AES_KEY"
KEY_SIZES: Final = (16, 24, 32)
NO_KEY: Final = f"no key: it needs the AES key ({KEY_ENV})"
WRONG_KEY: Final = "wrong key"
_NONCE: Final = 16
_TAG: Final = 16


def key_from_env_or_arg(arg: str | None) -> bytes | None:
    """The AES key: the --aes-key value, else LANGGRAPH_AES_KEY, UTF-8 encoded like LangGraph
    does (encrypted.py). An empty variable counts as unset. Raises EncryptedError when the
    key is not 16, 24 or 32 bytes long."""
    if arg is not None:
        text, origin = arg, "`aes_key`"
    else:
        from_env = os.environ.get(KEY_ENV)
        if not from_env:
            return None
        text, origin = from_env, KEY_ENV
    key = text.encode("utf-8")
    if len(key) not in KEY_SIZES:
        raise EncryptedError(
            f"{origin} must be 16, 24 or 32 bytes long (UTF-8), not {len(key)} bytes"
        )
    return key


def encrypted_record(cipher: str, inner: str, data: bytes, reason: str) -> dict[str, Any]:
    """A value we could not decrypt: what it is, never an exception; the ciphertext is
    kept, so it can be decrypted elsewhere (docs/json.md)."""
    return {
        MARK_KEY: "encrypted",
        "cipher": cipher,
        "inner": inner,
        "size": len(data),
        "reason": reason,
        "base64": base64.b64encode(data).decode("ascii"),
    }


def decrypt_aes(payload: bytes, key: bytes) -> bytes | None:
    """AES-EAX with nonce(16) || tag(16) || ciphertext; None when the MAC check fails.

    pycryptodome is imported here, only once an encrypted value shows up.
    """
    if len(payload) < _NONCE + _TAG:
        raise DecodeError(
            f"encrypted value of {len(payload)} bytes is shorter than its nonce and tag"
        )
    if len(key) not in KEY_SIZES:
        raise EncryptedError(f"the AES key must be 16, 24 or 32 bytes long, not {len(key)}")
    from Crypto.Cipher import AES

    nonce, tag, ciphertext = (
        payload[:_NONCE],
        payload[_NONCE : _NONCE + _TAG],
        payload[_NONCE + _TAG :],
    )
    cipher = AES.new(key, AES.MODE_EAX, nonce=nonce)
    try:
        plaintext: bytes = cipher.decrypt_and_verify(ciphertext, tag)
    except ValueError:  # "MAC check failed"
        return None
    return plaintext
