"""Arrange a thread's checkpoints by parent links: chains, forks, and subgraph namespaces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ckpt.analysis import checkpoint_tasks
from ckpt.errors import BadOption, NotFound
from ckpt.model import Checkpoint
from ckpt.records import CheckpointRecord, HistoryNodeRecord, checkpoint_record
from ckpt.stores.base import Store
from ckpt.tasks import Shape, ShapeLearner, Task, shape_of


@dataclass(slots=True)
class HistoryNode:
    """One checkpoint, the forks that leave it, and the subgraph runs its tasks made."""

    checkpoint: Checkpoint
    forks: list[list[HistoryNode]] = field(default_factory=list)
    subgraphs: list[tuple[str, list[HistoryNode]]] = field(default_factory=list)
    tasks: list[Task] | None = None  # the tasks due at the checkpoint, with their outcomes


def graph_key(checkpoint_ns: str) -> str:
    """A namespace without its task ids: every run of one subgraph node shares the key, and
    the graph's shape learned from all of them (`research:1a2b|inner:3c4d` -> `research|inner`)."""
    return (
        "|".join(part.split(":", 1)[0] for part in checkpoint_ns.split("|"))
        if checkpoint_ns
        else ""
    )


def thread_tasks(checkpoints: list[Checkpoint]) -> dict[tuple[str, str], list[Task] | None]:
    """The due tasks of every checkpoint of a thread, keyed by (namespace, checkpoint id),
    with each graph's shape learned from all of its checkpoints in the thread."""
    namespaces = sorted({c.checkpoint_ns for c in checkpoints})
    by_graph: dict[str, list[Checkpoint]] = {}
    for checkpoint in checkpoints:
        by_graph.setdefault(graph_key(checkpoint.checkpoint_ns), []).append(checkpoint)
    shapes: dict[str, Shape] = {key: shape_of(cps) for key, cps in by_graph.items()}
    return {
        (c.checkpoint_ns, c.checkpoint_id): checkpoint_tasks(
            c, shape=shapes[graph_key(c.checkpoint_ns)], namespaces=namespaces
        )
        for c in checkpoints
    }


def build_history(checkpoints: Iterable[Checkpoint]) -> list[list[HistoryNode]]:
    """Chains of the root namespace, oldest first, with forks and subgraphs attached.

    At a fork the chain goes on through the child whose subtree holds the newest
    checkpoint (where the thread is now); the other children start fork branches.
    Lineage follows parent ids only, never id order (format.md §8.14).
    """
    checkpoints = list(checkpoints)
    tasks = thread_tasks(checkpoints)
    by_ns: dict[str, list[Checkpoint]] = {}
    for checkpoint in checkpoints:
        by_ns.setdefault(checkpoint.checkpoint_ns, []).append(checkpoint)
    chains_by_ns = {ns: _chains(cps) for ns, cps in by_ns.items()}
    nodes_by_id: dict[tuple[str, str], HistoryNode] = {}
    for ns, chains in chains_by_ns.items():
        for node in _walk(chains):
            nodes_by_id[(ns, node.checkpoint.checkpoint_id)] = node
            node.tasks = tasks.get((ns, node.checkpoint.checkpoint_id))
    roots = list(chains_by_ns.get("", []))
    for ns in sorted(n for n in chains_by_ns if n):
        for chain in chains_by_ns[ns]:
            host = _host(chain[0].checkpoint, ns, nodes_by_id)
            if host is None:
                roots.append(chain)
            else:
                host.subgraphs.append((ns, chain))
    return roots


def _chains(checkpoints: list[Checkpoint]) -> list[list[HistoryNode]]:
    ids = {cp.checkpoint_id for cp in checkpoints}
    children: dict[str | None, list[Checkpoint]] = {}
    for cp in checkpoints:
        parent = cp.parent_checkpoint_id if cp.parent_checkpoint_id in ids else None
        children.setdefault(parent, []).append(cp)
    newest: dict[str, str] = {}

    def newest_below(cp: Checkpoint) -> str:
        # Iterative post-order, so a 10,000-step thread does not hit the recursion limit.
        stack = [(cp, False)]
        while stack:
            current, done = stack.pop()
            if current.checkpoint_id in newest:
                continue
            kids = children.get(current.checkpoint_id, [])
            if done or not kids:
                newest[current.checkpoint_id] = max(
                    [current.checkpoint_id, *(newest[k.checkpoint_id] for k in kids)]
                )
            else:
                stack.append((current, True))
                stack.extend((k, False) for k in kids if k.checkpoint_id not in newest)
        return newest[cp.checkpoint_id]

    def chain_from(start: Checkpoint) -> list[HistoryNode]:
        chain: list[HistoryNode] = []
        pending: list[tuple[HistoryNode, list[Checkpoint]]] = []
        current: Checkpoint | None = start
        while current is not None:
            node = HistoryNode(current)
            chain.append(node)
            kids = sorted(children.get(current.checkpoint_id, []), key=newest_below)
            current = kids.pop() if kids else None
            if kids:
                pending.append((node, kids))
        for node, others in pending:
            node.forks = [chain_from(kid) for kid in sorted(others, key=lambda c: c.checkpoint_id)]
        return chain

    roots = sorted(children.get(None, []), key=lambda c: c.checkpoint_id)
    return [chain_from(root) for root in roots]


def _walk(chains: list[list[HistoryNode]]) -> Iterable[HistoryNode]:
    stack = [node for chain in chains for node in chain]
    while stack:
        node = stack.pop()
        yield node
        for fork in node.forks:
            stack.extend(fork)


def _host(
    first: Checkpoint, ns: str, nodes: dict[tuple[str, str], HistoryNode]
) -> HistoryNode | None:
    """The checkpoint of the enclosing namespace whose task ran this subgraph.

    `metadata.parents` maps each ancestor namespace to its checkpoint id (format.md §3.2);
    the nearest ancestor is the longest namespace that prefixes this one.
    """
    parents = first.metadata.get("parents")
    if not isinstance(parents, dict):
        return None
    for parent_ns in sorted(parents, key=len, reverse=True):
        parent_id = parents[parent_ns]
        if isinstance(parent_id, str) and (parent_ns, parent_id) in nodes and parent_ns != ns:
            return nodes[(parent_ns, parent_id)]
    return None


def history_records(chains: list[list[HistoryNode]]) -> list[list[HistoryNodeRecord]]:
    """The tree as records (ckpt.records.HistoryNodeRecord), checkpoints without values."""

    def node_record(node: HistoryNode) -> HistoryNodeRecord:
        return {
            "checkpoint": checkpoint_record(node.checkpoint, values=False, tasks=node.tasks),
            "forks": [[node_record(n) for n in fork] for fork in node.forks],
            "subgraphs": [
                {"checkpoint_ns": ns, "chain": [node_record(n) for n in chain]}
                for ns, chain in node.subgraphs
            ],
        }

    return [[node_record(node) for node in chain] for chain in chains]


def thread_checkpoints(
    store: Store, thread_id: str, checkpoint_ns: str | None = None, *, last: int | None = None
) -> list[Checkpoint]:
    """A thread's checkpoints without values (one namespace, or all); unknown is an error.
    `last`: only the newest `last` (by id), read alone where the store can."""
    if not thread_id.strip():
        raise BadOption("empty thread id")
    if checkpoint_ns is None:
        checkpoints = store.checkpoints(thread_id, values=False, last=last)
    else:
        checkpoints = [
            c
            for c in store.checkpoints(thread_id, values=False)
            if c.checkpoint_ns == checkpoint_ns
        ]
        if last is not None:
            checkpoints = checkpoints[-last:]
    if not checkpoints:
        where = f" in namespace {checkpoint_ns!r}" if checkpoint_ns else ""
        raise NotFound(f"no thread {thread_id!r}{where} in {store.location}")
    return checkpoints


def stream_history(store: Store, thread_id: str) -> Iterator[CheckpointRecord]:
    """`history --json` of a whole thread with flat memory: one pass learns each graph's
    shape (what `thread_tasks` learns from the list), a second streams the records."""
    if not thread_id.strip():
        raise BadOption("empty thread id")
    learners: dict[str, ShapeLearner] = {}
    for checkpoint in store.iter_thread(thread_id):
        learners.setdefault(graph_key(checkpoint.checkpoint_ns), ShapeLearner()).add(checkpoint)
    if not learners:
        raise NotFound(f"no thread {thread_id!r} in {store.location}")
    shapes = {key: learner.shape() for key, learner in learners.items()}
    namespaces = store.namespaces(thread_id)
    for checkpoint in store.iter_thread(thread_id):
        key = graph_key(checkpoint.checkpoint_ns)
        shape = shapes.get(key) or shape_of([checkpoint])  # written between the passes
        tasks = checkpoint_tasks(checkpoint, shape=shape, namespaces=namespaces)
        yield checkpoint_record(checkpoint, values=False, tasks=tasks)
