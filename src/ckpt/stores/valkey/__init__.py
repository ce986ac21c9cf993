"""ValkeySaver and AgentCoreValkeySaver stores (langgraph-checkpoint-aws): plain keys read
with valkey-py."""

from ckpt.stores.valkey.agentcore import AgentCoreStore
from ckpt.stores.valkey.store import ValkeyStore

__all__ = ["AgentCoreStore", "ValkeyStore"]
