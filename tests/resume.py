"""What carrying a thread on does in LangGraph: the test that a changed store (pruned,
copied) resumes as the original does compares these."""

from __future__ import annotations

import json
from typing import Any

from langgraph.types import Command


def carry_on(graph: Any, thread_id: str, status: str) -> Any:
    """What continuing the thread does: resume an interrupt, retry a failure, or run on."""
    config = {"configurable": {"thread_id": thread_id}}
    step: Any = Command(resume="approved") if status == "interrupted" else None
    try:
        graph.invoke(step, config)
        outcome: Any = "ok"
    except Exception as exc:  # the unpruned thread must fail the same way
        outcome = type(exc).__name__
    return outcome, json.dumps(graph.get_state(config).values, default=repr, sort_keys=True)
