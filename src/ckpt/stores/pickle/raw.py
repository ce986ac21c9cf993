"""Stored values of the PersistentDict dicts, looked at without decoding them: (tag, bytes)
pairs, their sizes, and whether a dict key is in a query."""

from __future__ import annotations

from typing import Any, TypeGuard

from ckpt.decoders import MARK_KEY, is_marked
from ckpt.records.model import DumpQuery
from ckpt.stores.pickle.index import PickleFile, StoredText
from ckpt.stores.pickle.unpickler import (
    Refused,
    refused_record,
)


def pair(raw: Any, file: PickleFile | None = None) -> tuple[str, bytes] | None:
    """A stored (tag, bytes) pair with its bytes in hand (read from `file`, the one its
    StoredText points into), or None if `raw` is not one."""
    if type(raw) is not tuple or len(raw) != 2 or not isinstance(raw[0], str):
        return None
    payload = raw[1]
    try:
        # Text is not bytes: the readers give protocol 2's bytes as bytes, so a `str` here
        # was stored as one, which LangGraph's serializer cannot load.
        if isinstance(payload, bytes):
            return raw[0], payload
        if isinstance(payload, StoredText) and file is not None:
            return raw[0], file.read(payload)
    except (ValueError, OSError):
        return None
    return None


def selected(query: DumpQuery, thread_id: Any, ns: Any, checkpoint_id: Any) -> bool:
    """Whether a dict key's thread, namespace and (for rows with one) id are in `query`."""
    if query.thread_ids and thread_id not in query.thread_ids:
        return False
    if query.checkpoint_ns is not None and ns != query.checkpoint_ns:
        return False
    if checkpoint_id is not None and isinstance(checkpoint_id, str):
        if query.since_id is not None and checkpoint_id < query.since_id:
            return False
        if query.until_id is not None and checkpoint_id > query.until_id:
            return False
    return True


def tag(raw: Any) -> str | None:
    """The serde tag of a stored (tag, bytes) pair, without reading its bytes."""
    if type(raw) is tuple and len(raw) == 2 and isinstance(raw[0], str):
        return raw[0]
    return None


def pair_size(raw: Any) -> int:
    """Bytes of a stored value, from the index alone: bytes from load_pickle (a str, text
    stored where bytes go, is sized by its characters); a StoredText of the storage and
    writes files counts them too (pickle_lean), one of the blobs file counts the bytes of
    its UTF-8 text in the file."""
    try:
        payload = raw[1]
        if type(payload) is StoredText:
            return payload.chars
        return len(payload) if isinstance(payload, str | bytes) else 0
    except (TypeError, IndexError, KeyError):  # not a pair: sized as nothing
        return 0


def text_flaw(raw: Any) -> tuple[str, ...]:
    """A (tag, text) pair: its value stored as a `str`, which LangGraph's serializer
    cannot load (the readers give stored bytes as bytes)."""
    if type(raw) is tuple and len(raw) == 2 and type(raw[1]) is str:
        return ("its value is stored as text, not bytes",)
    return ()


def entry_size(entry: tuple[Any, Any, Any]) -> int:
    return pair_size(entry[0]) + pair_size(entry[1])


def write_size(stored: Any) -> int:
    return pair_size(stored[2]) if type(stored) is tuple and len(stored) >= 3 else 0


def is_plain_dict(value: Any) -> TypeGuard[dict[Any, Any]]:
    return isinstance(value, dict) and not is_marked(value)


def not_a_pair(raw: Any) -> dict[str, Any]:
    """The marked record for a stored value that is not a (tag, bytes) pair."""
    if isinstance(raw, Refused):
        return refused_record(raw)
    for part in raw if type(raw) is tuple else ():
        if isinstance(part, Refused):
            return refused_record(part)
    if type(raw) is tuple and len(raw) == 2 and isinstance(raw[1], str):
        return undecodable("its value is text, not bytes: not a (type, bytes) pair")
    return undecodable("not a (type, bytes) pair")


def undecodable(reason: str) -> dict[str, Any]:
    return {MARK_KEY: "undecodable", "error": reason}
