"""Real LangGraph graphs, and the scenarios that run them through any checkpoint saver.

`ckpt demo` writes a store with them; the test fixtures (fixtures/) run the same
scenarios through every saver LangGraph ships.

Every store under tests is written by LangGraph itself: `run_scenarios(saver)` compiles
the graphs below with the given saver and runs them with `invoke` / `update_state`,
exactly as an application would. No model is called: the "chat model" is a scripted
node that answers from a fixed table, so the runs are offline and deterministic
(message ids and tool-call ids are fixed; checkpoint ids, task ids, timestamps and
channel-version suffixes are LangGraph's own and differ between runs).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import ipaddress
import math
import operator
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, NamedTuple, TypedDict

import numpy as np
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, SecretStr

__all__ = [
    "CHAT_THREADS",
    "FANOUT_BAD_ITEM",
    "FANOUT_ITEMS",
    "RAW_BYTES",
    "SCENARIOS",
    "rich_payload",
    "run_scenarios",
    "write_demo_store",
]

# --------------------------------------------------------------------------------------
# Scenario 1: a tool-calling support chat (messages channel with add_messages).
# --------------------------------------------------------------------------------------

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"status": "shipped", "carrier": "DHL", "eta": "2026-12-03", "items": 2},
    "B-2002": {"status": "processing", "carrier": None, "eta": "2026-12-08", "items": 1},
    "C-3003": {"status": "delivered", "carrier": "UPS", "eta": "2026-11-20", "items": 4},
}


@tool
def lookup_order(order_id: str) -> str:
    """Look up the shipping status of an order by its id."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"No order with id {order_id}."
    return (
        f"Order {order_id}: status={order['status']}, carrier={order['carrier']}, "
        f"estimated delivery {order['eta']}, {order['items']} item(s)."
    )


@tool
def return_policy(region: str) -> str:
    """Return the return-policy summary for a sales region."""
    days = {"EU": 30, "US": 14}.get(region, 14)
    return f"Customers in {region} may return unused items within {days} days of delivery."


@tool
def open_return(order_id: str, reason: str) -> str:
    """Open a return request for an order and return its reference."""
    return f"Return R-{order_id[-4:]} opened for order {order_id} (reason: {reason})."


TOOLS = {t.name: t for t in (lookup_order, return_policy, open_return)}


class Turn(NamedTuple):
    """One scripted exchange: what the user says, the tool calls, the final answer."""

    user: str
    tool_calls: list[tuple[str, dict[str, Any]]]
    answer: str


# thread id -> (metadata put in config["metadata"], turns)
CHAT_THREADS: dict[str, tuple[dict[str, Any], list[Turn]]] = {
    "support-1": (
        {"user_id": "u-1", "tenant": "acme", "priority": 1},
        [
            Turn(
                "Hi, where is my order A-1001? It was supposed to arrive last week.",
                [("lookup_order", {"order_id": "A-1001"})],
                "Your order A-1001 has shipped with DHL and should arrive by 2026-12-03. "
                "It contains 2 items; you will get a tracking e-mail from the carrier.",
            ),
            Turn(
                "If it arrives damaged, can I still return it? I live in Germany.",
                [
                    ("return_policy", {"region": "EU"}),
                    ("lookup_order", {"order_id": "A-1001"}),
                ],
                "Yes. In the EU you can return unused or damaged items within 30 days of "
                "delivery, so for A-1001 that window starts when DHL delivers it.",
            ),
            Turn(
                "It arrived and the box is crushed. Please open a return.",
                [("open_return", {"order_id": "A-1001", "reason": "damaged in transit"})],
                "I opened return R-1001 for order A-1001. You will receive a prepaid "
                "label by e-mail within the hour.",
            ),
        ],
    ),
    "support-2": (
        {"user_id": "u-2", "tenant": "acme", "priority": 2},
        [
            Turn(
                "What's the status of B-2002?",
                [("lookup_order", {"order_id": "B-2002"})],
                "Order B-2002 is still being processed; the estimated delivery is 2026-12-08.",
            ),
            Turn(
                "And what's your return policy for the US?",
                [("return_policy", {"region": "US"})],
                "In the US, unused items can be returned within 14 days of delivery.",
            ),
        ],
    ),
    "support-3": (
        {"user_id": "u-1", "tenant": "globex", "priority": 3},
        [
            Turn(
                "Did C-3003 get delivered?",
                [("lookup_order", {"order_id": "C-3003"})],
                "Yes, order C-3003 was delivered by UPS on 2026-11-20 (4 items).",
            ),
        ],
    ),
}

_SCRIPT: dict[str, Turn] = {turn.user: turn for _, turns in CHAT_THREADS.values() for turn in turns}


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def scripted_model(state: ChatState) -> dict[str, list[AnyMessage]]:
    """Stand-in for a chat model: answers the last user message from the script."""
    messages = state["messages"]
    last_user = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    turn = _SCRIPT[str(last_user.content)]
    n = len(messages)
    usage = {"input_tokens": 40 * n, "output_tokens": 25, "total_tokens": 40 * n + 25}
    if isinstance(messages[-1], HumanMessage) and turn.tool_calls:
        calls = [
            {"name": name, "args": args, "id": f"call_{n:03d}_{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(turn.tool_calls)
        ]
        reply = AIMessage(
            content="",
            tool_calls=calls,
            id=f"msg-{n:03d}",
            response_metadata={"model_name": "scripted-fake", "finish_reason": "tool_calls"},
            usage_metadata=usage,
        )
    else:
        reply = AIMessage(
            content=turn.answer,
            id=f"msg-{n:03d}",
            response_metadata={"model_name": "scripted-fake", "finish_reason": "stop"},
            usage_metadata=usage,
        )
    return {"messages": [reply]}


def run_tools(state: ChatState) -> dict[str, list[AnyMessage]]:
    """Run the tool calls of the last AI message with LangChain's own tool objects."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    results: list[AnyMessage] = []
    for call in last.tool_calls:
        result = TOOLS[call["name"]].invoke(call)  # a ToolCall in, a ToolMessage out
        assert isinstance(result, ToolMessage)
        result.id = f"{call['id']}-result"
        results.append(result)
    return {"messages": results}


def _route_after_model(state: ChatState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(ChatState)
    builder.add_node("agent", scripted_model)
    builder.add_node("tools", run_tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", _route_after_model, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 2: human approval with interrupt() / Command(resume=...).
# --------------------------------------------------------------------------------------


class ApprovalState(TypedDict, total=False):
    request: str
    amount: float
    decision: dict[str, Any]
    status: str


def draft(state: ApprovalState) -> ApprovalState:
    return {"status": "drafted"}


def approve(state: ApprovalState) -> ApprovalState:
    decision = interrupt({"question": f"Approve: {state['request']}?", "amount": state["amount"]})
    return {"decision": decision, "status": "approved" if decision["approved"] else "rejected"}


def finalize(state: ApprovalState) -> ApprovalState:
    return {"status": f"done ({state['status']})"}


def approval_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(ApprovalState)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "finalize")
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 3: Send fan-out where one worker raises.
# --------------------------------------------------------------------------------------

FANOUT_ITEMS = ["invoice-1", "invoice-2", "invoice-3"]
FANOUT_BAD_ITEM = "invoice-2"


class FanoutState(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]
    summary: str


class WorkerInput(TypedDict):
    item: str


def plan_batch(state: FanoutState) -> FanoutState:
    return {"items": FANOUT_ITEMS}


def fan_out(state: FanoutState) -> list[Send]:
    return [Send("worker", {"item": item}) for item in state["items"]]


def worker(state: WorkerInput) -> FanoutState:
    if state["item"] == FANOUT_BAD_ITEM:
        # When a task fails, LangGraph cancels siblings that have not started yet
        # (pregel/_runner.py, _should_stop_others); a short pause lets them all finish,
        # so their writes reliably sit beside the __error__ one.
        time.sleep(0.05)
        raise ValueError(f"cannot parse {state['item']}: missing total")
    return {"results": [f"{state['item']}: ok"]}


def collect(state: FanoutState) -> FanoutState:
    return {"summary": f"{len(state['results'])} processed"}


def fanout_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(FanoutState)
    builder.add_node("plan", plan_batch)
    builder.add_node("worker", worker)
    builder.add_node("collect", collect)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["worker"])
    builder.add_edge("worker", "collect")
    builder.add_edge("collect", END)
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 4: a compiled subgraph as a node (non-empty checkpoint_ns), optionally
# interrupted inside the subgraph.
# --------------------------------------------------------------------------------------


class ResearchState(TypedDict, total=False):
    topic: str
    findings: Annotated[list[str], operator.add]
    needs_review: bool
    report: str


def search(state: ResearchState) -> ResearchState:
    return {"findings": [f"3 sources about {state['topic']}"]}


def review(state: ResearchState) -> ResearchState:
    verdict = interrupt(
        {"question": "Are these findings good enough?", "findings": state["findings"]}
    )
    return {"findings": [f"reviewer: {verdict}"]}


def summarize(state: ResearchState) -> ResearchState:
    return {"findings": [f"summary of {len(state['findings'])} finding(s)"]}


def _after_search(state: ResearchState) -> str:
    return "review" if state.get("needs_review") else "summarize"


def research_subgraph() -> CompiledStateGraph[Any]:
    builder = StateGraph(ResearchState)
    builder.add_node("search", search)
    builder.add_node("review", review)
    builder.add_node("summarize", summarize)
    builder.add_edge(START, "search")
    builder.add_conditional_edges("search", _after_search, ["review", "summarize"])
    builder.add_edge("review", "summarize")
    builder.add_edge("summarize", END)
    return builder.compile()  # inherits the parent's checkpointer


def plan_research(state: ResearchState) -> ResearchState:
    return {"findings": [f"plan: research {state['topic']}"]}


def write_report(state: ResearchState) -> ResearchState:
    return {"report": " / ".join(state["findings"])}


def research_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(ResearchState)
    builder.add_node("plan", plan_research)
    builder.add_node("research", research_subgraph())
    builder.add_node("write_report", write_report)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "research")
    builder.add_edge("research", "write_report")
    builder.add_edge("write_report", END)
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 5: a linear graph used for update_state forks and for a pending step.
# --------------------------------------------------------------------------------------


class NotesState(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    count: int


def _step(name: str) -> Callable[[NotesState], NotesState]:
    def step(state: NotesState) -> NotesState:
        return {"notes": [name], "count": state.get("count", 0) + 1}

    step.__name__ = name
    return step


def notes_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(NotesState)
    for name in ("step_a", "step_b", "step_c"):
        builder.add_node(name, _step(name))  # type: ignore[arg-type]
    builder.add_edge(START, "step_a")
    builder.add_edge("step_a", "step_b")
    builder.add_edge("step_b", "step_c")
    builder.add_edge("step_c", END)
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 6: a channel holding rich Python types (format.md §2.4).
# --------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Address:
    street: str
    city: str
    zip_code: str


class Pair(NamedTuple):
    left: str
    right: int


class Customer(BaseModel):
    name: str
    email: str
    tags: list[str] = []


def rich_payload() -> dict[Any, Any]:
    """The value stored in the `payload` channel of thread rich-1 (fixed, comparable)."""
    return {
        "aware_datetime": dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC),
        "offset_datetime": dt.datetime(
            2025, 6, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))
        ),
        "naive_datetime": dt.datetime(2025, 1, 2, 3, 4, 5),
        "date": dt.date(2025, 1, 2),
        "time": dt.time(13, 14, 15, 16),
        "aware_time": dt.time(13, 14, 15, tzinfo=dt.timezone(dt.timedelta(hours=-5), "EST")),
        "timedelta": dt.timedelta(days=1, seconds=2, microseconds=3),
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "decimal": Decimal("3.14159"),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "tuple": (1, "two", 3.0),
        "deque": deque([1, 2]),
        "enum": Color.RED,
        "dataclass": Address("1 Main St", "Springfield", "12345"),
        "namedtuple": Pair("l", 2),
        "pydantic": Customer(name="Ada", email="ada@example.com", tags=["vip"]),
        "path": Path("/tmp/x/y.txt"),
        "ip_address": ipaddress.IPv4Address("192.0.2.1"),
        "pattern": re.compile(r"^a+b$", re.IGNORECASE),
        "nested": {"blob": b"\x00\x01\xfe\xff", "list": [b"abc", {"deep": b"\x80"}]},
        "int_keys": {1: "one", 2: "two"},
        "tuple_keys": {(1, 2): "pair", (3, 4): "other"},
        "ndarray_int": np.arange(6, dtype=np.int32).reshape(2, 3),
        "ndarray_float_f": np.asfortranarray(np.linspace(0.0, 1.0, 6).reshape(2, 3)),
        "nan": math.nan,
        "inf": math.inf,
        "neg_inf": -math.inf,
        "secret": SecretStr("s3cr3t-token"),
        "big_int": 2**63,
        "unicode": "héllo wörld ✓ 日本",
        "none": None,
    }


RAW_BYTES = b"\x00\x01top-level bytes\xff"


class RichState(TypedDict, total=False):
    label: str
    payload: dict[Any, Any]
    raw: bytes
    nothing: Any


def enrich(state: RichState) -> RichState:
    return {"payload": rich_payload(), "raw": RAW_BYTES, "nothing": None}


def rich_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(RichState)
    builder.add_node("enrich", enrich)
    builder.add_edge(START, "enrich")
    builder.add_edge("enrich", END)
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------------------
# Scenario 8: DeltaChannel (beta in langgraph 1.2; format.md §3.8).
# --------------------------------------------------------------------------------------


def _extend(state: list[str] | None, writes: Sequence[list[str]]) -> list[str]:
    result = list(state or [])
    for batch in writes:
        result.extend(batch)
    return result


class DeltaState(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=2)]
    n: int


DELTA_STEPS = 5


def log_step(state: DeltaState) -> Command[Any]:
    n = state.get("n", 0) + 1
    update: DeltaState = {"log": [f"entry-{n}"], "n": n}
    return Command(update=update, goto="step" if n < DELTA_STEPS else END)


def delta_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    builder = StateGraph(DeltaState)
    builder.add_node("step", log_step, destinations=("step", END))
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=checkpointer)


# Running everything.
# --------------------------------------------------------------------------------------


SCENARIOS = ("chat", "approval", "fanout", "subgraph", "fork", "rich", "pending", "delta")


class _Runner:
    """Runs the scenarios through one saver, collecting the manifest as it goes."""

    def __init__(
        self, checkpointer: BaseCheckpointSaver[Any], extra_metadata: dict[str, Any]
    ) -> None:
        self.checkpointer = checkpointer
        self.extra_metadata = extra_metadata
        self.manifest: dict[str, Any] = {}  # thread ids by role (fixtures.graphs.Manifest)
        self.threads: set[str] = set()

    def config(self, thread_id: str, metadata: dict[str, Any] | None = None) -> RunnableConfig:
        self.threads.add(thread_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        if metadata or self.extra_metadata:
            config["metadata"] = {**self.extra_metadata, **(metadata or {})}
        return config

    def chat(self) -> None:
        graph = chat_graph(self.checkpointer)
        for thread_id, (metadata, turns) in CHAT_THREADS.items():
            config = self.config(thread_id, metadata)
            for i, turn in enumerate(turns):
                message = HumanMessage(turn.user, id=f"{thread_id}-user-{i + 1}")
                graph.invoke({"messages": [message]}, config)
        self.manifest["chat"] = list(CHAT_THREADS)
        self.manifest["chat_turns"] = {t: len(turns) for t, (_, turns) in CHAT_THREADS.items()}
        self.manifest["chat_metadata"] = {t: dict(m) for t, (m, _) in CHAT_THREADS.items()}

    def approval(self) -> None:
        graph = approval_graph(self.checkpointer)
        resumed, waiting = self.config("approval-1"), self.config("approval-2")
        graph.invoke({"request": "refund order A-1001", "amount": 42.5}, resumed)
        graph.invoke(Command(resume={"approved": True, "by": "alice"}), resumed)
        graph.invoke({"request": "refund order B-2002", "amount": 1299.0}, waiting)
        self.manifest["interrupt_resumed"] = "approval-1"
        self.manifest["interrupt_waiting"] = "approval-2"

    def fanout(self) -> None:
        graph = fanout_graph(self.checkpointer)
        try:
            graph.invoke({"items": []}, self.config("fanout-1"))
        except ValueError:
            pass  # expected: the error and the siblings' writes stay on the checkpoint
        else:
            raise AssertionError("fanout-1 was expected to raise")
        self.manifest["fanout_error"] = "fanout-1"

    def subgraph(self) -> None:
        graph = research_graph(self.checkpointer)
        graph.invoke({"topic": "checkpoint formats"}, self.config("subgraph-1"))
        graph.invoke({"topic": "pickle safety", "needs_review": True}, self.config("subgraph-2"))
        self.manifest["subgraph"] = "subgraph-1"
        self.manifest["subgraph_interrupt"] = "subgraph-2"

    def fork(self) -> None:
        graph = notes_graph(self.checkpointer)
        config = self.config("fork-1")
        graph.invoke({"notes": ["start"], "count": 0}, config)
        # Fork at the checkpoint taken after step_a (it waits to run step_b). A shallow
        # saver keeps only the latest checkpoint, so there the fork starts from that one.
        history = list(graph.get_state_history(config))
        target = next((s for s in history if s.next == ("step_b",)), history[0])
        branch_a = graph.update_state(target.config, {"notes": ["edit-A"]})
        branch_b = graph.update_state(target.config, {"notes": ["edit-B"]})
        graph.invoke(None, branch_a)
        self.manifest["fork"] = "fork-1"
        self.manifest["fork_parent"] = target.config["configurable"]["checkpoint_id"]
        self.manifest["fork_children"] = [
            branch_a["configurable"]["checkpoint_id"],
            branch_b["configurable"]["checkpoint_id"],
        ]
        latest = graph.get_state(config).config
        self.manifest["fork_latest"] = latest["configurable"]["checkpoint_id"]

    def rich(self) -> None:
        rich_graph(self.checkpointer).invoke({"label": "rich types"}, self.config("rich-1"))
        self.manifest["rich"] = "rich-1"

    def pending(self) -> None:
        # interrupt_before stops the run once the checkpoint that schedules step_b is
        # saved, before step_b starts: a task to run and no writes, which is what a
        # process killed mid-step leaves behind.
        graph = notes_graph(self.checkpointer)
        config = self.config("pending-1")
        graph.invoke({"notes": ["start"], "count": 0}, config, interrupt_before=["step_b"])
        self.manifest["pending"] = "pending-1"
        self.manifest["pending_next"] = ["step_b"]

    def delta(self) -> None:
        delta_graph(self.checkpointer).invoke({"log": ["seed"], "n": 0}, self.config("delta-1"))
        self.manifest["delta"] = "delta-1"


def run_scenarios(
    checkpointer: BaseCheckpointSaver[Any],
    only: Sequence[str] = SCENARIOS,
    *,
    extra_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every scenario (or those named in `only`) through `checkpointer`.

    `extra_metadata` is added to every run's config["metadata"] (the LangGraph server
    adds graph_id, assistant_id and so on). Returns the manifest of what was written.
    """
    runner = _Runner(checkpointer, dict(extra_metadata or {}))
    for name in only:
        if name not in SCENARIOS:
            raise ValueError(f"unknown scenario {name!r}; choose from {SCENARIOS}")
        getattr(runner, name)()
    return {"threads": sorted(runner.threads), **runner.manifest}


def write_demo_store(path: Path) -> list[str]:
    """Run every scenario through a SqliteSaver writing to `path`; return the thread ids."""
    import sqlite3
    import warnings
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            manifest = run_scenarios(SqliteSaver(conn))
    return list(manifest["threads"])
