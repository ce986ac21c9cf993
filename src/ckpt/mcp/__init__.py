"""`ckpt mcp`: the store as read-only tools for a coding agent, over MCP's stdio transport
(the `mcp` extra). Another face on ckpt.api, as the CLI and the browser are."""

from __future__ import annotations

from ckpt.errors import MissingDependency
from ckpt.records.vocabulary import install_hint

EXTRA_HINT = f"ckpt mcp needs the MCP SDK: {install_hint('mcp')}"


def require_sdk() -> None:
    """Raise MissingDependency (exit 10) when the MCP SDK (2.x) is not installed."""
    try:
        from mcp.server.mcpserver import MCPServer  # noqa: F401
    except ImportError:
        raise MissingDependency(EXTRA_HINT) from None
