"""msgpack values rewritten without being understood, and decoded values packed again as
LangGraph's serializer packs them (`ckpt migrate`).

`unpack_raw` / `pack_raw` keep every ext as the bytes it is (code and payload, nothing
imported or built), so a value whose one field changes (an Interrupt's id, a Send's node)
is written back byte for byte elsewhere: ormsgpack writes the smallest encoding, as
LangGraph's `ormsgpack.packb` does (format.md §2.2).

`encode_value` packs what a user's transform returns, a value in the form ckpt's decoders
give (docs/json.md, "Decoded values"): plain JSON data as it is, `{"__ckpt__": "bytes"}`
as bytes, and an object (`{"__type__": "module.Name", ...fields}`) as LangGraph packs a
pydantic v2 model, every LangChain message among them (ext 5, format.md §2.4). Other
marked records (a datetime shown as text cannot be told from a string) are refused.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import ormsgpack

from ckpt.decoders.values import MARK_KEY, TYPE_KEY
from ckpt.errors import CopyRefused

EXT_KW_ARGS: Final = 2
EXT_POS_ARGS: Final = 1
EXT_PYDANTIC_V2: Final = 5
_OPTIONS: Final = ormsgpack.OPT_NON_STR_KEYS


class RawExt:
    """An ext as read: its code and payload bytes (itself msgpack, format.md §2.2)."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawExt) and (self.code, self.data) == (other.code, other.data)

    def __hash__(self) -> int:
        return hash((self.code, self.data))


def _hook(code: int, data: bytes) -> RawExt:
    return RawExt(code, data)


def _default(value: Any) -> Any:
    if isinstance(value, RawExt):
        return ormsgpack.Ext(value.code, value.data)
    raise TypeError(f"cannot pack {type(value).__name__}")


def unpack_raw(data: bytes) -> Any:
    """A msgpack document with every ext left a RawExt."""
    return ormsgpack.unpackb(data, ext_hook=_hook, option=_OPTIONS)


def pack_raw(value: Any) -> bytes:
    return ormsgpack.packb(value, default=_default, option=_OPTIONS)


def ext_class(ext: RawExt) -> tuple[str, str, list[Any]] | None:
    """An ext 0-5's `[module, name, ...]` payload, or None for any other shape."""
    if ext.code > 5:
        return None
    try:
        payload = unpack_raw(ext.data)
    except (ValueError, TypeError):
        return None
    if (
        isinstance(payload, list)
        and len(payload) >= 3
        and isinstance(payload[0], str)
        and isinstance(payload[1], str)
    ):
        return payload[0], payload[1], payload
    return None


def encode_value(value: Any, where: str) -> bytes:
    """The msgpack bytes LangGraph writes for the object `value` (in ckpt's decoded form)
    stands for."""
    return ormsgpack.packb(_packable(value, where), default=_default, option=_OPTIONS)


def _packable(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (list, tuple)):
        return [_packable(item, where) for item in value]
    if isinstance(value, dict):
        mark = value.get(MARK_KEY)
        if mark == "bytes" and isinstance(value.get("base64"), str):
            return base64.b64decode(value["base64"])
        if mark is not None:
            raise CopyRefused(
                f"{where}: the transform returned a {mark!r} record, which ckpt cannot write "
                "back as LangGraph would; return plain data, bytes or objects"
            )
        path = value.get(TYPE_KEY)
        if isinstance(path, str):
            module, _, name = path.rpartition(".")
            fields = {k: _packable(v, where) for k, v in value.items() if k != TYPE_KEY}
            payload = pack_raw([module, name, fields, "model_validate_json"])
            return RawExt(EXT_PYDANTIC_V2, payload)
        return {k: _packable(v, where) for k, v in value.items()}
    raise CopyRefused(
        f"{where}: the transform returned a {type(value).__name__}, which ckpt does not "
        "encode; return plain data, bytes or objects in ckpt's decoded form"
    )
