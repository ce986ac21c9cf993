"""RedisSaver's JSON values as the msgpack LangGraph's serializer writes for what RedisSaver
reads back from them (`ckpt copy` out of Redis, format.md §7b).

RedisSaver keeps values as JSON, so copying them into a store of serde bytes means
encoding them again. The promise is the one LangGraph can check: the copy reads back, in
SqliteSaver, PostgresSaver or MongoDBSaver, as the source reads in RedisSaver. So each
value is turned into what RedisSaver's readers revive, without constructing anything:

- a checkpoint's channel values as `_recursive_deserialize` reads them: `{"__bytes__"}`
  bytes, `{"__send__"}` a Send, `{"__delta_snapshot__"}` a DeltaChannel snapshot, and the
  lc constructor envelopes its serializer revives (below); any other dict stays a dict;
- a pending write's JSON as `loads_typed` reads it: the same, `{"__interrupt__"}` an
  Interrupt too (its `__bytes__` markers stay dicts: the saver writes bytes as msgpack);
- lc envelopes: `builtins.set` a set; LangChain's messages (lc:1 under
  `langchain.schema.messages`, or lc:2 naming their class) the message, every field of
  the model as `model_dump()` gives it (those the envelope leaves out at their defaults);
  an lc:2 envelope of another class stays a dict where RedisSaver leaves it one, but
  RedisSaver imports the named module to see whether it is a dataclass, which ckpt never
  does: such a value is refused (CopyRefused), as is an lc:1 envelope of another class.

The msgpack is JsonPlusSerializer's: a pydantic model as ext 5 (module, name, fields,
"model_validate_json"), a Send ext 1, a set ext 0, an Interrupt ext 2, a snapshot ext 7.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import ormsgpack

from ckpt.errors import CopyRefused

_OPTION: Final = ormsgpack.OPT_NON_STR_KEYS
# langchain-core 1.x message classes: module and fields in model_dump() order with their
# defaults (`...`: required, with no default).
Fields = tuple[tuple[str, Any], ...]
_BASE: Final[Fields] = (("content", ...), ("additional_kwargs", {}), ("response_metadata", {}))
_AI: Final[Fields] = (("tool_calls", []), ("invalid_tool_calls", []), ("usage_metadata", None))
_TOOL: Final[Fields] = (("tool_call_id", ...), ("artifact", None), ("status", "success"))
_ROLE: Final[Fields] = (("role", ...),)


def _fields(kind: str, *more: tuple[str, Any], name: Any = None, id: Any = None) -> Fields:
    return (*_BASE, ("type", kind), ("name", name), ("id", id), *more)


MESSAGES: Final[dict[str, tuple[str, Fields]]] = {
    "AIMessage": ("langchain_core.messages.ai", _fields("ai", *_AI)),
    "AIMessageChunk": (
        "langchain_core.messages.ai",
        _fields("AIMessageChunk", *_AI, ("tool_call_chunks", []), ("chunk_position", None)),
    ),
    "HumanMessage": ("langchain_core.messages.human", _fields("human")),
    "HumanMessageChunk": ("langchain_core.messages.human", _fields("HumanMessageChunk")),
    "SystemMessage": ("langchain_core.messages.system", _fields("system")),
    "SystemMessageChunk": ("langchain_core.messages.system", _fields("SystemMessageChunk")),
    "ToolMessage": ("langchain_core.messages.tool", _fields("tool", *_TOOL)),
    "ToolMessageChunk": ("langchain_core.messages.tool", _fields("ToolMessageChunk", *_TOOL)),
    "ChatMessage": ("langchain_core.messages.chat", _fields("chat", *_ROLE)),
    "ChatMessageChunk": ("langchain_core.messages.chat", _fields("ChatMessageChunk", *_ROLE)),
    "FunctionMessage": ("langchain_core.messages.function", _fields("function", name=...)),
    "FunctionMessageChunk": (
        "langchain_core.messages.function", _fields("FunctionMessageChunk", name=...)
    ),
    "RemoveMessage": ("langchain_core.messages.modifier", _fields("remove", id=...)),
}  # fmt: skip


def _ext(code: int, payload: Any) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(payload, option=_OPTION))


class Reencoder:
    """One value's walk; `where` names it in a refusal."""

    def __init__(self, where: str, *, channel_values: bool) -> None:
        self.where = where
        self.channel_values = channel_values  # _recursive_deserialize, else loads_typed

    def refuse(self, what: str) -> CopyRefused:
        return CopyRefused(f"{self.where} holds {what}, which ckpt does not turn into msgpack")

    # -- the reader's walk -------------------------------------------------------------
    def read(self, value: Any) -> Any:
        """`value` as RedisSaver's reader hands it to LangGraph, with revived objects as
        ormsgpack.Ext (what LangGraph's serializer writes for them)."""
        if isinstance(value, list):
            return [self.read(item) for item in value]
        if not isinstance(value, dict):
            return value
        if self.channel_values:
            if "__bytes__" in value and len(value) == 1:
                try:
                    return base64.b64decode(value["__bytes__"])
                except (ValueError, TypeError):
                    raise self.refuse("a `__bytes__` marker that is not base64") from None
            if value.get("__delta_snapshot__") is True:
                return self.revive({k: self.read(v) for k, v in value.items()})
            if value.get("__send__") is True and "node" in value and "arg" in value:
                if len(value) == 3:
                    return self.send(value["node"], self.read(value["arg"]))
            if value.get("lc") in (1, 2) and value.get("type") == "constructor":
                return self.revive(value, top=True)
            return {k: self.read(v) for k, v in value.items()}
        return self.revive(value, top=True)

    def revive(self, value: dict[str, Any], *, top: bool = False) -> Any:
        """JsonPlusRedisSerializer._revive_if_needed: children first, then the markers."""
        if top:
            value = {k: self._revive_any(v) for k, v in value.items()}
        if value.get("lc") in (1, 2) and value.get("type") == "constructor":
            return self.constructor(value)
        if value.get("__interrupt__") is True and "value" in value:
            # Interrupt(value, id) as the saver builds it (langgraph 1.x: its other
            # fields at their defaults), as LangGraph's encoder writes a dataclass.
            if not isinstance(value.get("id"), str):
                raise self.refuse("an Interrupt without its id")
            fields = {"value": value["value"], "id": value["id"], "response_schema": None}
            return _ext(2, ["langgraph.types", "Interrupt", fields])
        if value.get("__delta_snapshot__") is True and "value" in value and len(value) == 2:
            return ormsgpack.Ext(7, ormsgpack.packb(value["value"], option=_OPTION))
        if value.get("__send__") is True and "node" in value and "arg" in value:
            if len(value) == 3:
                return self.send(value["node"], value["arg"])
        return value

    def _revive_any(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._revive_any(item) for item in value]
        if isinstance(value, dict):
            return self.revive(value, top=True)
        return value

    def send(self, node: Any, arg: Any) -> ormsgpack.Ext:
        return _ext(1, ["langgraph.types", "Send", [node, arg]])

    def constructor(self, value: dict[str, Any]) -> Any:
        ident = value.get("id")
        if not isinstance(ident, list) or not all(isinstance(p, str) for p in ident):
            raise self.refuse("an lc envelope without a class path")
        kwargs = value.get("kwargs") or {}
        if ident == ["builtins", "set"]:
            args = value.get("args")
            items = args[0] if isinstance(args, list) and len(args) == 1 else None
            if not isinstance(items, list):
                raise self.refuse("a set envelope without its items")
            return _ext(0, ["builtins", "set", items])
        name = ident[-1]
        message = MESSAGES.get(name)
        lc1 = value.get("lc") == 1 and ident[:-1] in (
            ["langchain", "schema", "messages"],
            ["langchain_core", "messages"],
        )
        lc2 = value.get("lc") == 2 and message is not None and ".".join(ident[:-1]) == message[0]
        if message is not None and (lc1 or lc2) and isinstance(kwargs, dict):
            module, fields = message
            known = {field for field, _ in fields}
            extra = sorted(set(kwargs) - known)
            if extra:
                raise self.refuse(f"a {name} with fields ckpt does not know ({extra[0]!r})")
            dump = {}
            for field, default in fields:
                if field in kwargs:
                    dump[field] = kwargs[field]
                elif default is ...:
                    raise self.refuse(f"a {name} without its {field!r}")
                else:
                    dump[field] = _fresh(default)
            return _ext(5, [module, name, dump, "model_validate_json"])
        if value.get("lc") == 2 and len(ident) == 2 and ident[0] == "builtins":
            # A builtin class (an exception: RedisSaver's __error__ writes) is no dataclass
            # and not among the types LangGraph revives: the saver hands the dict back.
            return value
        raise self.refuse(
            f"an lc:{value.get('lc')} envelope of {'.'.join(ident)}, which RedisSaver revives "
            "by importing it"
        )


def _fresh(default: Any) -> Any:
    return type(default)() if isinstance(default, dict | list) else default


def reencode_value(value: Any, where: str, *, channel_values: bool) -> bytes:
    """A JSON value of RedisSaver as LangGraph's msgpack bytes."""
    read = Reencoder(where, channel_values=channel_values).read(value)
    try:
        return ormsgpack.packb(read, option=_OPTION)
    except (TypeError, ValueError) as exc:
        raise CopyRefused(f"{where}: cannot be written as msgpack ({exc})") from None
