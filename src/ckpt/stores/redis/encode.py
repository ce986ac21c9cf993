"""Serde msgpack values as RedisSaver keeps them in its JSON documents (format.md §7b).

RedisSaver (langgraph-checkpoint-redis 0.5.2) does not store the serializer's bytes: its
JsonPlusRedisSerializer turns each live object into JSON (`_preprocess_redis_json`, then
orjson with `_default_handler`). Copying into Redis means writing the JSON it would have
written for the same objects; this module does that from the msgpack bytes alone, walking
ext payloads as msgpack and never importing or constructing what they name:

- bytes inside a checkpoint: `{"__bytes__": base64}` (RedisSaver's marker);
- a Send: `{"__send__": true, "node", "arg"}`; an Interrupt: `{"__interrupt__": true,
  "value", "id", ...}`; a DeltaChannel snapshot: `{"__delta_snapshot__": true, "value"}`;
- a set: the lc:2 constructor envelope `builtins.set` with its items as the one argument;
- a LangChain message: the lc:1 envelope its `to_json()` gives;
- another dataclass or pydantic model: an lc:2 constructor envelope naming its class, its
  fields as `kwargs` (what `_default_handler` writes for a dataclass; for a pydantic
  model that is not LangChain's, the saver writes its `__dict__`, the same fields).

Values RedisSaver cannot give back as they were (orjson writes a datetime, UUID or enum as
a plain string or number, and keeps nothing of a Decimal, frozenset, deque, NumPy array or
time zone; non-string dict keys become strings, NaN becomes null) are refused with
CopyRefused naming the value: the copy would not read back the same.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Final

import ormsgpack

from ckpt.errors import CopyRefused

_SEND: Final = ("langgraph.types", "Send")
_INTERRUPT: Final = ("langgraph.types", "Interrupt")
_SET: Final = ("builtins", "set")
_INTERRUPT_FIELDS: Final = ("id", "resumable", "ns", "when")
_INT64: Final = (-(2**63), 2**64 - 1)
# LangChain's message classes: RedisSaver writes them as their `to_json()` gives, an lc:1
# envelope under LangChain's serializable namespace, with the fields that are required or
# set to something (`_is_field_useful`: every other field of theirs defaults to an empty
# value), in the model's field order. name -> its required fields besides `content`.
_MESSAGE_NAMESPACE: Final = ("langchain", "schema", "messages")
_MESSAGES: Final = {
    "AIMessage": (), "AIMessageChunk": (), "HumanMessage": (), "HumanMessageChunk": (),
    "SystemMessage": (), "SystemMessageChunk": (), "RemoveMessage": (),
    "ChatMessage": ("role",), "ChatMessageChunk": ("role",),
    "FunctionMessage": ("name",), "FunctionMessageChunk": ("name",),
    "ToolMessage": ("tool_call_id",), "ToolMessageChunk": ("tool_call_id",),
}  # fmt: skip
# Their `lc_attributes`, which to_json() adds after the fields (kept even when empty).
_LC_ATTRIBUTES: Final = {
    "AIMessage": ("tool_calls", "invalid_tool_calls"),
    "AIMessageChunk": ("tool_calls", "invalid_tool_calls"),
}


class _Ext:
    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def unpack(data: bytes, where: str) -> Any:
    """msgpack bytes as plain values, ext values kept as `_Ext` (nothing constructed)."""
    try:
        return ormsgpack.unpackb(data, ext_hook=_Ext, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError) as exc:
        raise CopyRefused(f"{where} is not msgpack ({exc})") from None


class Converted:
    """One value's JSON form, and whether it held bytes (a write that does is kept as
    msgpack, as RedisSaver's serializer falls back to it)."""

    __slots__ = ("has_bytes", "where")

    def __init__(self, where: str) -> None:
        self.has_bytes = False
        self.where = where

    def value(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int):
            if not _INT64[0] <= value <= _INT64[1]:
                raise self.refuse(f"the integer {value}, too large for JSON as orjson writes it")
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.refuse(f"the number {value}, which RedisSaver's JSON keeps as null")
            return value
        if isinstance(value, bytes | bytearray):
            self.has_bytes = True
            return {"__bytes__": base64.b64encode(bytes(value)).decode()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise self.refuse(
                        f"a dict key {key!r} that is not a string (JSON keeps it as one)"
                    )
                out[key] = self.value(item)
            return out
        if isinstance(value, _Ext):
            return self.ext(value)
        raise self.refuse(f"a value of type {type(value).__name__}")

    def ext(self, ext: _Ext) -> Any:
        payload = unpack(ext.data, self.where)
        if ext.code == 7:  # DeltaChannel snapshot: its value
            return {"__delta_snapshot__": True, "value": self.value(payload)}
        if ext.code == 6:
            raise self.refuse("a NumPy array, which RedisSaver's JSON does not keep")
        if not (isinstance(payload, list) and len(payload) >= 3 and 0 <= ext.code <= 5):
            raise self.refuse(f"an ext value of code {ext.code} in no known layout")
        module, name, argument = payload[0], payload[1], payload[2]
        if not isinstance(module, str) or not isinstance(name, str):
            raise self.refuse(f"an ext value of code {ext.code} without a class name")
        pair = (module, name)
        if pair == _SEND and ext.code == 1 and isinstance(argument, list):
            if len(argument) != 2:  # (node, arg, timeout): RedisSaver's marker has no timeout
                raise self.refuse("a Send with a timeout, which RedisSaver's JSON does not keep")
            return {
                "__send__": True,
                "node": self.value(argument[0]),
                "arg": self.value(argument[1]),
            }
        if pair == _INTERRUPT and ext.code == 2 and isinstance(argument, dict):
            found = {"__interrupt__": True, "value": self.value(argument.get("value"))}
            for field in _INTERRUPT_FIELDS:
                if field in argument:
                    found[field] = self.value(argument[field])
            return found
        if pair == _SET and ext.code == 0 and isinstance(argument, list):
            return _envelope(pair, args=[self.value(argument)])
        if (
            ext.code == 5
            and module.startswith("langchain_core.messages.")
            and name in _MESSAGES
            and isinstance(argument, dict)
        ):
            required = ("content", *_MESSAGES[name])
            kwargs = {
                key: self.value(item)
                for key, item in argument.items()
                if key in required or _truthy(item)
            }
            for key in _LC_ATTRIBUTES.get(name, ()):  # `lc_attributes`, merged last
                if key in argument:
                    kwargs[key] = self.value(argument[key])
            return {
                "lc": 1,
                "type": "constructor",
                "id": [*_MESSAGE_NAMESPACE, name],
                "kwargs": kwargs,
            }
        if ext.code in (2, 4, 5) and isinstance(argument, dict):
            # A dataclass (ext 2, LangGraph's encoder for them) or a pydantic model.
            return _envelope(pair, kwargs=self.value(argument))
        raise self.refuse(
            f"a {module}.{name}, which RedisSaver's JSON keeps as a bare string or number or "
            "not at all"
        )

    def refuse(self, what: str) -> CopyRefused:
        return CopyRefused(
            f"{self.where} holds {what}: LangGraph would not read the same value back from Redis"
        )


def _truthy(value: Any) -> bool:
    """Python's truth of a value as read (an ext value is an object: true)."""
    return isinstance(value, _Ext) or bool(value)


def _envelope(
    pair: tuple[str, str], *, args: list[Any] | None = None, kwargs: Any = None
) -> dict[str, Any]:
    """JsonPlusRedisSerializer's `_encode_constructor_envelope`."""
    out: dict[str, Any] = {"lc": 2, "type": "constructor", "id": [*pair[0].split("."), pair[1]]}
    if args is not None:
        out["args"] = args
    if kwargs is not None:
        out["kwargs"] = kwargs
    return out


def redis_json(data: bytes, where: str) -> tuple[Any, bool]:
    """msgpack bytes as RedisSaver's JSON, and whether they held bytes."""
    converter = Converted(where)
    return converter.value(unpack(data, where)), converter.has_bytes
