"""`ckpt demo`: write the demo store by running real LangGraph graphs (ckpt.demo), once the
packages of the `demo` extra are known to be installed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from ckpt.errors import MissingDependency
from ckpt.records.vocabulary import install_hint

INSTALL_DEMO: Final = install_hint("demo")


def missing_demo_packages() -> list[str]:
    """The distributions of the `demo` extra that are not installed: every module ckpt/demo.py
    imports from outside the standard library (including the lazy SqliteSaver import in
    write_demo_store). Checked before importing ckpt.demo, so a missing one is one line
    naming the extra, not a traceback halfway through writing the store. Plain imports of
    fixed names (ckpt never imports a module by a computed name)."""
    missing = []
    try:
        import numpy  # noqa: F401
    except ImportError:
        missing.append("numpy")
    try:
        import pydantic  # noqa: F401
    except ImportError:
        missing.append("pydantic")
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        missing.append("langchain-core")
    try:
        import langgraph.graph
    except ImportError:
        missing.append("langgraph")
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        missing.append("langgraph-checkpoint-sqlite")
    return missing


def require_demo() -> None:
    """Raise MissingDependency, naming what to install, unless `write_demo` can run."""
    if missing := missing_demo_packages():
        raise MissingDependency(f"ckpt demo needs {', '.join(missing)}: {INSTALL_DEMO}")
    try:
        import ckpt.demo  # noqa: F401
    except ImportError as exc:
        # Installed but too old, e.g. a langgraph without DeltaChannel (before 1.2.0).
        raise MissingDependency(f"ckpt demo needs newer packages: {INSTALL_DEMO} ({exc})") from None


def write_demo(path: str | os.PathLike[str]) -> list[str]:
    """Write the demo store (`ckpt demo`) at `path` by running real LangGraph graphs; the
    thread ids. Raises MissingDependency without the `demo` extra."""
    require_demo()
    from ckpt.demo import write_demo_store

    return write_demo_store(Path(path))
