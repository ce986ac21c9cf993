"""ckpt: inspect and dump LangGraph checkpoint stores without running any code from them."""

__version__ = "0.1.0"
