"""ValkeySaver stores (langgraph-checkpoint-aws): plain keys read with valkey-py."""

from ckpt.stores.valkey.store import ValkeyStore

__all__ = ["ValkeyStore"]
