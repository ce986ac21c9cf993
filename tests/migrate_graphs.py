"""Two versions of one graph for `ckpt migrate` (tests/test_migrate.py): v1 keeps `notes`
and a `scratch` key and asks a human in node `review`; v2 calls the key `findings`, has no
`scratch`, and the node is `approve`. Each node counts its runs, so a test can tell that
a resumed thread ran no node twice; messages carry fixed ids, so two runs compare equal."""

from __future__ import annotations

import threading
import time
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


def run_thread(graph: Any, thread_id: str, version: int = 1) -> None:
    from langgraph.types import Command

    topic, fail, answer = THREADS[thread_id]
    config = {"configurable": {"thread_id": thread_id}}
    # `scratch` in the input too: LangGraph keeps the input under `__start__`.
    start = {"messages": [HumanMessage(topic, id=f"human-{topic}")], "fail": fail}
    graph.invoke({**start, "scratch": "from the input"} if version == 1 else start, config)
    if answer is not None:
        try:
            graph.invoke(Command(resume=answer), config)
        except RuntimeError:
            pass


def populate(checkpointer: Any, version: int = 1) -> Any:
    graph = build(version, checkpointer)
    for thread_id in THREADS:
        run_thread(graph, thread_id, version)
    return graph


# -- a fan-out: Sends to a node that gets renamed, and a DeltaChannel that gets renamed ------

FAILING: set[int] = set()  # worker items that raise (a failed superstep with saved writes)
ITEMS: list[int] = []  # the items of the run going on


def concat_lists(state: list[str] | None, writes: Any) -> list[str]:
    """A DeltaChannel reducer: plain list concatenation, one batch of writes at a time."""
    result = list(state or [])
    for batch in writes:
        result.extend(batch)
    return result


def _fan_state(log: str) -> Any:
    import operator

    from langgraph.channels import DeltaChannel

    return TypedDict(  # type: ignore[operator]
        f"Fan{log.title()}",
        {
            "items": list[int],
            log: Annotated[list[str], DeltaChannel(concat_lists, snapshot_frequency=2)],
            "results": Annotated[list[int], operator.add],
        },
        total=False,
    )


def build_fan(version: int, checkpointer: Any) -> Any:
    from langgraph.types import Command, Send

    log, worker_node = ("log", "worker") if version == 1 else ("journal", "crew")

    finished: list[int] = []  # the workers of this superstep that returned
    lock = threading.Lock()

    def start(state: dict[str, Any]) -> Any:
        RUNS["start"] += 1
        finished.clear()
        return Command(
            update={log: ["start"]},
            goto=[Send(worker_node, {"item": i}) for i in state["items"]],
        )

    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        RUNS[worker_node] += 1
        if arg["item"] in FAILING:
            # LangGraph runs the Sends side by side and stops the superstep at the first
            # error: the failing worker raises only once the others have returned (and a
            # moment more, for their writes to be saved), however loaded the machine is.
            give_up = time.monotonic() + 30
            while time.monotonic() < give_up:
                with lock:
                    if len(finished) >= len(ITEMS) - len(FAILING):
                        break
                time.sleep(0.01)
            time.sleep(0.2)
            raise RuntimeError(f"item {arg['item']} failed")
        with lock:
            finished.append(arg["item"])
        return {"results": [arg["item"] * 10], log: [f"w{arg['item']}"]}

    def collect(state: dict[str, Any]) -> dict[str, Any]:
        RUNS["collect"] += 1
        return {log: [f"collected {sorted(state.get('results', []))}"]}

    graph = StateGraph(_fan_state(log))
    graph.add_node("start", start, destinations=(worker_node,))
    graph.add_node(worker_node, worker)
    graph.add_node("collect", collect)
    graph.add_edge(START, "start")
    graph.add_edge(worker_node, "collect")
    graph.add_edge("collect", END)
    return graph.compile(checkpointer=checkpointer)


FAN_THREADS: dict[str, tuple[list[int], set[int]]] = {
    "fan-done": ([1, 2], set()),
    "fan-failed": ([1, 2, 3], {2}),  # workers 1 and 3 saved their writes; 2 failed
}


def populate_fan(checkpointer: Any, version: int = 1) -> Any:
    graph = build_fan(version, checkpointer)
    for thread_id, (items, failing) in FAN_THREADS.items():
        FAILING.clear()
        FAILING.update(failing)
        ITEMS[:] = items
        try:
            graph.invoke({"items": items}, {"configurable": {"thread_id": thread_id}})
        except RuntimeError:
            pass
    FAILING.clear()
    return graph
