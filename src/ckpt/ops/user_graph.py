"""`ckpt migrate --graph MODULE:ATTR`: load each migrated thread through the user's new graph.

This is the one place ckpt imports a module by name, and only the one the user names on
the command line (their own code, opt-in, as `python -c "import MODULE"` would): never a
name read from a store. The graph reads the store through LangGraph's own saver
(Store.langgraph_saver), so what it raises is what the application would meet on resume.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ckpt.errors import BadOption
from ckpt.stores.base import Store

Loads = Callable[[str], "str | None"]


def load_graph(spec: str) -> Any:
    """The compiled graph `MODULE:ATTR` (or `path/to/file.py:ATTR`) names: the user's
    module imported as Python would import it (the current folder first)."""
    import importlib  # noqa: TID251 - the user's own module, named on the command line
    import importlib.util  # noqa: TID251

    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr.isidentifier():
        raise BadOption(f"`graph` {spec!r}: give MODULE:ATTR (e.g. my_app.graph:graph)")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).resolve()
            found = importlib.util.spec_from_file_location(path.stem, path)
            if found is None or found.loader is None:
                raise BadOption(f"`graph` {spec!r}: cannot load {path}")
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_name)
    except BadOption:
        raise
    except Exception as exc:  # the user's code: whatever it raises is one line
        raise BadOption(
            f"`graph` {spec!r}: importing it raised {type(exc).__name__}: {exc}"
        ) from None
    graph = getattr(module, attr, None)
    if graph is None or not all(hasattr(graph, n) for n in ("get_state", "copy")):
        raise BadOption(f"`graph` {spec!r}: not a compiled LangGraph graph")
    return graph


@contextmanager
def graph_loader(store: Store, graph: Any) -> Iterator[Loads]:
    """A function that loads a thread through `graph` (a compiled graph, `MODULE:ATTR`, or
    None: loads nothing) and LangGraph's saver over `store`: what get_state or
    get_state_history raised, as one line, or None when every checkpoint loads."""
    if graph is None:
        yield lambda thread_id: None
        return
    compiled = load_graph(graph) if isinstance(graph, str) else graph
    with store.langgraph_saver() as saver:
        bound = compiled.copy(update={"checkpointer": saver})

        def loads(thread_id: str) -> str | None:
            config = {"configurable": {"thread_id": thread_id}}
            try:
                bound.get_state(config)
                for _ in bound.get_state_history(config):
                    pass
            except Exception as exc:  # the user's graph on the migrated thread: reported
                return f"{type(exc).__name__}: {exc}"[:500]
            return None

        yield loads
