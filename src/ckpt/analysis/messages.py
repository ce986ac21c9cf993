"""LangChain messages in decoded values: telling them apart from other dicts."""

from __future__ import annotations

from typing import Any, Final

from ckpt.decoders import TYPE_KEY

# LangChain message roles (`type` field of a message's dict form).
MESSAGE_ROLES: Final = frozenset(
    {"human", "ai", "system", "tool", "function", "chat", "remove", "developer"}
)


def is_message(value: Any) -> bool:
    """A LangChain message, decoded (`__type__` ...Message) or in its dict form."""
    if type(value) is not dict:
        return False
    kind = value.get(TYPE_KEY)
    if isinstance(kind, str) and kind.endswith(("Message", "MessageChunk")):
        return True
    return "content" in value and value.get("type") in MESSAGE_ROLES
