"""Two versions of one graph for `ckpt migrate` (tests/test_migrate.py): v1 keeps `notes`
and a `scratch` key and asks a human in node `review`; v2 calls the key `findings`, has no
`scratch`, and the node is `approve`. Each node counts its runs, so a test can tell that
a resumed thread ran no node twice; messages carry fixed ids, so two runs compare equal."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

RUNS: Counter[str] = Counter()


class V1(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: dict[str, str]  # a dict: PostgresSaver keeps it as a blob, not inline
    scratch: str
    draft: str
    fail: bool


class V2(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    findings: dict[str, str]
    draft: str
    fail: bool


def _plan(key: str, scratch: bool) -> Any:
    def plan(state: dict[str, Any]) -> dict[str, Any]:
        RUNS["plan"] += 1
        topic = str(state["messages"][-1].content)
        update: dict[str, Any] = {
            key: {"topic": topic, "text": f"notes on {topic}"},
            "messages": [AIMessage(f"planning {topic}", id=f"plan-{topic}")],
        }
        if scratch:
            update["scratch"] = "tmp"
        return update

    return plan


def _review(key: str, name: str) -> Any:
    def review(state: dict[str, Any]) -> dict[str, Any]:
        RUNS[name] += 1
        notes = state.get(key) or {}
        answer = interrupt({"question": "approve?", "notes": notes})
        return {"draft": f"{notes.get('text')} / {answer}"}

    return review


def finish(state: dict[str, Any]) -> dict[str, Any]:
    RUNS["finish"] += 1
    if state.get("fail"):
        raise RuntimeError("finish failed")
    return {"messages": [AIMessage(f"done: {state.get('draft')}", id="finish")]}


def build(version: int, checkpointer: Any) -> Any:
    v1 = version == 1
    key, review_node = ("notes", "review") if v1 else ("findings", "approve")
    graph = StateGraph(V1 if v1 else V2)
    graph.add_node("plan", _plan(key, scratch=v1))
    graph.add_node(review_node, _review(key, review_node))
    graph.add_node("finish", finish)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", review_node)
    graph.add_edge(review_node, "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer)


# thread -> (topic, fail, resume answer or None): done threads are answered and finish,
# interrupted ones wait at review, failed ones are answered and fail in `finish`.
THREADS: dict[str, tuple[str, bool, str | None]] = {
    "done-1": ("apples", False, "yes"),
    "waiting-1": ("pears", False, None),
    "waiting-2": ("plums", False, None),
    "failed-1": ("figs", True, "ok"),
}


def run_thread(graph: Any, thread_id: str) -> None:
    from langgraph.types import Command

    topic, fail, answer = THREADS[thread_id]
    config = {"configurable": {"thread_id": thread_id}}
    graph.invoke({"messages": [HumanMessage(topic, id=f"human-{topic}")], "fail": fail}, config)
    if answer is not None:
        try:
            graph.invoke(Command(resume=answer), config)
        except RuntimeError:
            pass


def populate(checkpointer: Any, version: int = 1) -> Any:
    graph = build(version, checkpointer)
    for thread_id in THREADS:
        run_thread(graph, thread_id)
    return graph
