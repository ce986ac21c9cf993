"""What carrying a thread on does in LangGraph: the test that a changed store (pruned,
copied) resumes as the original does compares these."""

from __future__ import annotations

import json
import warnings
from typing import Any

from fixtures.oracle import quiet_serde_log
from langgraph.checkpoint.base import BaseCheckpointSaver
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


DEMO_RESUME = {
    "approval-2": {"approved": True, "by": "bob"},
    "subgraph-2": "looks good",
    "fanout-1": None,
    "pending-1": None,
}


def resumed_demo(
    saver: BaseCheckpointSaver[Any], only: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Resume the demo threads that stopped (or those of them in `only`): answer the
    interrupts, retry the failure, run the pending task; what each gives."""
    from fixtures.state_oracle import demo_graphs

    graphs = demo_graphs(saver)
    outcome = {}
    with quiet_serde_log(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the shallow saver's own
        for thread_id, answer in DEMO_RESUME.items():
            if only is not None and thread_id not in only:
                continue
            config: Any = {"configurable": {"thread_id": thread_id}}
            step = Command(resume=answer) if answer is not None else None
            try:
                graphs[thread_id].invoke(step, config)
                result: Any = "ok"
            except Exception as exc:  # the source must fail the same way
                result = type(exc).__name__
            values = graphs[thread_id].get_state(config).values
            outcome[thread_id] = (result, json.dumps(values, default=repr, sort_keys=True))
    return outcome
