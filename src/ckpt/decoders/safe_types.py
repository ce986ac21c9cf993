"""LangGraph's built-in msgpack safe list, as data: what strict mode rebuilds without asking.

A copy of `SAFE_MSGPACK_TYPES` and `SAFE_MSGPACK_METHODS` from
`langgraph/checkpoint/serde/_msgpack.py` of the release named in RELEASE (format.md §2.5).
ckpt never imports LangGraph; tests/test_types.py compares this copy with the installed
package, so a release that changes the list fails the suite instead of drifting silently.
The set changes between releases: `ckpt types` says which one it matches.
"""

from __future__ import annotations

from typing import Final

RELEASE: Final = "langgraph-checkpoint 4.3.2"

SAFE_MSGPACK_TYPES: Final[frozenset[tuple[str, str]]] = frozenset(
    {
        # datetime types
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        # uuid
        ("uuid", "UUID"),
        # numeric
        ("decimal", "Decimal"),
        # collections
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("collections", "deque"),
        # ip addresses
        ("ipaddress", "IPv4Address"),
        ("ipaddress", "IPv4Interface"),
        ("ipaddress", "IPv4Network"),
        ("ipaddress", "IPv6Address"),
        ("ipaddress", "IPv6Interface"),
        ("ipaddress", "IPv6Network"),
        # pathlib
        ("pathlib", "Path"),
        ("pathlib", "PosixPath"),
        ("pathlib", "WindowsPath"),
        # pathlib in Python 3.13+
        ("pathlib._local", "Path"),
        ("pathlib._local", "PosixPath"),
        ("pathlib._local", "WindowsPath"),
        # zoneinfo
        ("zoneinfo", "ZoneInfo"),
        # regex
        ("re", "compile"),
        # langchain-core messages
        ("langchain_core.messages.base", "BaseMessage"),
        ("langchain_core.messages.base", "BaseMessageChunk"),
        ("langchain_core.messages.human", "HumanMessage"),
        ("langchain_core.messages.human", "HumanMessageChunk"),
        ("langchain_core.messages.ai", "AIMessage"),
        ("langchain_core.messages.ai", "AIMessageChunk"),
        ("langchain_core.messages.system", "SystemMessage"),
        ("langchain_core.messages.system", "SystemMessageChunk"),
        ("langchain_core.messages.chat", "ChatMessage"),
        ("langchain_core.messages.chat", "ChatMessageChunk"),
        ("langchain_core.messages.tool", "ToolMessage"),
        ("langchain_core.messages.tool", "ToolMessageChunk"),
        ("langchain_core.messages.function", "FunctionMessage"),
        ("langchain_core.messages.function", "FunctionMessageChunk"),
        ("langchain_core.messages.modifier", "RemoveMessage"),
        # langchain-core document model
        ("langchain_core.documents.base", "Document"),
        # langgraph
        ("langgraph.types", "Send"),
        ("langgraph.types", "TimeoutPolicy"),
        ("langgraph.types", "Interrupt"),
        ("langgraph.types", "Command"),
        ("langgraph.types", "StateSnapshot"),
        ("langgraph.types", "PregelTask"),
        ("langgraph.types", "Overwrite"),
        ("langgraph.store.base", "Item"),
        ("langgraph.store.base", "GetOp"),
    }
)

# The only (module, name, method) triples an ext 3 payload may call; every other method
# call is blocked in every mode, an allowlist cannot unblock it (jsonplus.py
# `_check_allowed_method`).
SAFE_MSGPACK_METHODS: Final[frozenset[tuple[str, str, str]]] = frozenset(
    {
        ("datetime", "datetime", "fromisoformat"),
    }
)


def status_words() -> dict[str, str]:
    """What each status means, for the human view and docs (one place)."""
    return {
        "safe": f"in LangGraph's built-in safe list ({RELEASE})",
        "allowlist": "needs an allowed_msgpack_modules (json: allowed_json_modules) entry",
        "blocked": "a method call LangGraph always blocks: no allowlist unblocks it",
        "ungated": "rebuilt in every mode (numpy arrays: numpy must be installed)",
        "langchain": "legacy lc:1 object: revived by LangChain's loader, not LangGraph's lists",
    }
