"""Arrange a thread's checkpoints by parent links: chains, forks and how each began, subgraphs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ckpt.analysis.records import checkpoint_record
from ckpt.analysis.selector import did_you_mean, missing, short_id
from ckpt.analysis.status import checkpoint_tasks
from ckpt.analysis.tasks import Shape, ShapeLearner, Task, shape_of
from ckpt.errors import BadOption
from ckpt.records.model import Checkpoint, CheckpointKey, DumpQuery
from ckpt.records.types import (
    BranchKind,
    BranchRecord,
    CheckpointRecord,
    HistoryNodeRecord,
    LineageRecord,
    history_nodes,
)
from ckpt.stores.base import Store


class Linked(Protocol):
    """What the tree is drawn from: a checkpoint's id and its parent's."""

    @property
    def checkpoint_id(self) -> str: ...
    @property
    def parent_checkpoint_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Link:
    """A checkpoint as the tree's lineage needs it and no more (`history --json` streams
    the records, and learns its branches from these beforehand when it must)."""

    checkpoint_id: str
    parent_checkpoint_id: str | None


C = TypeVar("C", bound=Linked)


@dataclass(slots=True)
class HistoryNode(Generic[C]):
    """One checkpoint, the forks that leave it, and the subgraph runs its tasks made."""

    checkpoint: C
    forks: list[list[HistoryNode[C]]] = field(default_factory=list)
    subgraphs: list[tuple[str, list[HistoryNode[C]]]] = field(default_factory=list)
    tasks: list[Task] | None = None  # the tasks due at the checkpoint, with their outcomes
    note: str | None = None  # odd lineage: a cycle, a dangling or own parent (`_lineage`)
    branch: BranchRecord | None = None  # the first of a fork: how the branch began


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


def build_history(
    checkpoints: Iterable[Checkpoint], *, window: bool = False
) -> list[list[HistoryNode[Checkpoint]]]:
    """Chains of the root namespace, oldest first, with forks and subgraphs attached.
    `window`: the checkpoints are only the thread's newest (`--last`), so a parent older
    than all of them was merely not read, and is no odd lineage.

    At a fork the chain goes on through the child whose subtree holds the newest
    checkpoint (where the thread is now); the other children start fork branches.
    Lineage follows parent ids only, never id order (format.md §8.14).
    """
    checkpoints = list(checkpoints)
    tasks = thread_tasks(checkpoints)
    by_ns: dict[str, list[Checkpoint]] = {}
    for checkpoint in checkpoints:
        by_ns.setdefault(checkpoint.checkpoint_ns, []).append(checkpoint)
    chains_by_ns = {ns: _chains(cps, window) for ns, cps in by_ns.items()}
    nodes_by_id: dict[tuple[str, str], HistoryNode[Checkpoint]] = {}
    for ns, chains in chains_by_ns.items():
        for first, trunk in _branch_starts(chains):
            cp = first.checkpoint
            first.branch = branch_record(cp.checkpoint_id, cp.source, trunk)
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


def thread_branches(checkpoints: Iterable[Checkpoint]) -> dict[tuple[str, str], BranchRecord]:
    """(namespace, checkpoint id) -> how the branch it starts began, for the first
    checkpoint of every branch of the tree `build_history` draws from `checkpoints`."""
    listed = list(checkpoints)
    sources = {(c.checkpoint_ns, c.checkpoint_id): c.source for c in listed}
    return {
        key: branch_record(key[1], sources[key], trunk)
        for key, trunk in branch_trunks((c.checkpoint_ns, c) for c in listed).items()
    }


def branch_trunks(links: Iterable[tuple[str, Linked]]) -> dict[tuple[str, str], str]:
    """(namespace, checkpoint id) of the first checkpoint of every branch -> the child of
    its parent the trunk goes on through: the branches of the tree `build_history` draws,
    from each checkpoint's id and parent alone."""
    by_ns: dict[str, list[Linked]] = {}
    for ns, link in links:
        by_ns.setdefault(ns, []).append(link)
    return {
        (ns, first.checkpoint.checkpoint_id): trunk
        for ns, linked in by_ns.items()
        for first, trunk in _branch_starts(_chains(linked))
    }


def _branch_starts(chains: list[list[HistoryNode[C]]]) -> Iterator[tuple[HistoryNode[C], str]]:
    """The first node of every fork, and the id of the trunk's child beside it."""
    todo = list(chains)
    while todo:  # a work list, not recursion: forks of forks nest as deep as the store says
        chain = todo.pop()
        for i, node in enumerate(chain):
            if node.forks:
                # A checkpoint with forks has a child the trunk goes on through (`_chains`).
                trunk = chain[i + 1].checkpoint.checkpoint_id
                for fork in node.forks:
                    yield fork[0], trunk
                    todo.append(fork)


def branch_record(checkpoint_id: str, source: str | None, trunk: str) -> BranchRecord:
    """How a branch began whose first checkpoint is `checkpoint_id` (its metadata's
    `source`), beside `trunk`, the trunk's child of the same parent."""
    kind: BranchKind
    if source == "update":
        kind = "update_state"
    elif source == "fork":
        kind = "fork"
    else:  # a run from the same checkpoint: the trunk left it when it is the older one
        kind = "earlier_run" if checkpoint_id < trunk else "replay"
    return {"kind": kind, "trunk_checkpoint_id": trunk}


def _lineage(
    checkpoints: Sequence[Linked], window: bool = False
) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each checkpoint's parent as the tree draws it, and a note for the odd ones.

    Stores from incidents hold lineage no saver writes: a checkpoint that is its own
    parent, a parent that is not in the store, a cycle of parents (A -> B -> A), a parent
    newer than its child. Each checkpoint is drawn exactly once: a dangling or own parent
    makes a root, and a cycle is cut above its oldest checkpoint; the note says so.
    """
    ids = {cp.checkpoint_id for cp in checkpoints}
    oldest = min(ids, default="")
    parent: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    for cp in checkpoints:
        own, up = cp.checkpoint_id, cp.parent_checkpoint_id
        if up is None or up not in ids or up == own:
            parent[own] = None
            if up == own:
                notes[own] = "its own parent (drawn as a root)"
            elif up is not None and not (window and up < oldest):
                notes[own] = f"parent {up} is not in this store (drawn as a root)"
        else:
            parent[own] = up
            if up > own:
                notes[own] = f"parent {up} is newer than this checkpoint"
    state: dict[str, int] = {}  # 1: on the path being walked, 2: known to reach a root
    for start in parent:
        path: list[str] = []
        current: str | None = start
        while current is not None and current not in state:
            state[current] = 1
            path.append(current)
            current = parent[current]
        if current is not None and state[current] == 1:
            cycle = path[path.index(current) :]
            cut = min(cycle)
            parent[cut] = None
            ring = " → ".join(short_id(c) for c in [*cycle, cycle[0]])
            notes[cut] = f"parent cycle {ring} (cut here, drawn as a root)"
        for done in path:
            state[done] = 2
    return parent, notes


def _chains(checkpoints: list[C], window: bool = False) -> list[list[HistoryNode[C]]]:
    # A store without its primary key can hold a row twice: each checkpoint is drawn once
    # (its first row), or every copy would take every copy of each child (2**depth nodes).
    unique: dict[str, C] = {}
    copies: dict[str, int] = {}
    for cp in checkpoints:
        if cp.checkpoint_id in unique:
            copies[cp.checkpoint_id] = copies.get(cp.checkpoint_id, 1) + 1
        else:
            unique[cp.checkpoint_id] = cp
    checkpoints = list(unique.values())
    parent_of, notes = _lineage(checkpoints, window)
    for checkpoint_id, count in copies.items():
        stored = f"stored {count} times (drawn once)"
        notes[checkpoint_id] = (
            f"{notes[checkpoint_id]}; {stored}" if checkpoint_id in notes else stored
        )
    children: dict[str | None, list[C]] = {}
    for cp in checkpoints:
        children.setdefault(parent_of[cp.checkpoint_id], []).append(cp)
    newest: dict[str, str] = {}

    def newest_below(cp: C) -> str:
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

    def chain_from(start: C, into: list[HistoryNode[C]]) -> list[tuple[HistoryNode[C], C]]:
        """Fill `into` with the trunk from `start` (at each fork the child whose subtree
        holds the newest checkpoint); return the other children, each a fork to draw."""
        forks: list[tuple[HistoryNode[C], C]] = []  # a node, and a child starting a branch
        current: C | None = start
        while current is not None:
            node = HistoryNode(current, note=notes.get(current.checkpoint_id))
            into.append(node)
            kids = sorted(children.get(current.checkpoint_id, []), key=newest_below)
            current = kids.pop() if kids else None
            forks.extend((node, kid) for kid in sorted(kids, key=lambda c: c.checkpoint_id))
        return forks

    roots = sorted(children.get(None, []), key=lambda c: c.checkpoint_id)
    chains: list[list[HistoryNode[C]]] = []
    todo: list[tuple[HistoryNode[C], C]] = []
    for root in roots:
        chains.append([])
        todo.extend(chain_from(root, chains[-1]))
    while todo:  # a work list, not recursion: forks of forks nest as deep as the store says
        node, kid = todo.pop()
        node.forks.append([])
        todo.extend(chain_from(kid, node.forks[-1]))
    for node in _walk(chains):
        node.forks.sort(key=lambda fork: fork[0].checkpoint.checkpoint_id)
    return chains


def _walk(chains: list[list[HistoryNode[C]]]) -> Iterable[HistoryNode[C]]:
    stack = [node for chain in chains for node in chain]
    while stack:
        node = stack.pop()
        yield node
        for fork in node.forks:
            stack.extend(fork)


def _host(
    first: Checkpoint, ns: str, nodes: dict[tuple[str, str], HistoryNode[Checkpoint]]
) -> HistoryNode[Checkpoint] | None:
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


def history_records(
    chains: list[list[HistoryNode[Checkpoint]]],
) -> list[list[HistoryNodeRecord]]:
    """The tree as records (ckpt.records.HistoryNodeRecord), checkpoints without values.

    A work list, not recursion: forks of forks nest as deep as the store says (each fork's
    list is placed in its parent record before it is filled, so the order is kept)."""
    out: list[list[HistoryNodeRecord]] = []
    todo: list[tuple[list[HistoryNode[Checkpoint]], list[HistoryNodeRecord]]] = []
    for chain in chains:
        out.append([])
        todo.append((chain, out[-1]))
    while todo:
        chain, into = todo.pop()
        for node in chain:
            checkpoint = checkpoint_record(node.checkpoint, values=False, tasks=node.tasks)
            checkpoint["branch"] = node.branch
            record: HistoryNodeRecord = {
                "checkpoint": checkpoint,
                "note": node.note,
                "forks": [],
                "subgraphs": [],
            }
            into.append(record)
            for fork in node.forks:
                record["forks"].append([])
                todo.append((fork, record["forks"][-1]))
            for ns, sub in node.subgraphs:
                record["subgraphs"].append({"checkpoint_ns": ns, "chain": []})
                todo.append((sub, record["subgraphs"][-1]["chain"]))
    return out


def thread_checkpoints(
    store: Store, thread_id: str, checkpoint_ns: str | None = None, *, last: int | None = None
) -> list[Checkpoint]:
    """A thread's checkpoints without values (one namespace, or all); unknown is an error.
    `last`: only the newest `last` (by id), read alone where the store can."""
    if not thread_id.strip() and not store.thread_exists(thread_id):
        # A thread whose id is blank is selectable (`threads` shows it quoted: '').
        raise BadOption(f"empty thread id {thread_id!r}: no thread has it")
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
        hint = did_you_mean(store, thread_id) if not checkpoint_ns else ""
        raise missing(store, f"no thread {thread_id!r}{where} in {store.location}{hint}")
    return checkpoints


def stream_history(store: Store, thread_id: str) -> Iterator[CheckpointRecord]:
    """`history --json` of a whole thread with flat memory: one pass learns each graph's
    shape (what `thread_tasks` learns from the list), a second streams the records."""
    if not thread_id.strip() and not store.thread_exists(thread_id):
        # A thread whose id is blank is selectable (`threads` shows it quoted: '').
        raise BadOption(f"empty thread id {thread_id!r}: no thread has it")
    learners: dict[str, ShapeLearner] = {}
    # Whether each checkpoint's parent is the one before it in its namespace: then no
    # checkpoint has two children, and no branch starts (the usual thread). Only the last
    # id of each namespace is kept, so memory stays flat.
    last: dict[str, str] = {}
    forked = False
    for checkpoint in store.iter_thread(thread_id):
        learners.setdefault(graph_key(checkpoint.checkpoint_ns), ShapeLearner()).add(checkpoint)
        ns = checkpoint.checkpoint_ns
        forked = forked or checkpoint.parent_checkpoint_id != last.get(ns)
        last[ns] = checkpoint.checkpoint_id
    if not learners:
        raise missing(store, f"no thread {thread_id!r} in {store.location}")
    shapes = {key: learner.shape() for key, learner in learners.items()}
    # Otherwise the lineage is read once more, ids and parents alone, to tell the branches.
    trunks = (
        branch_trunks(
            (row.checkpoint_ns, Link(row.checkpoint_id, row.parent_checkpoint_id))
            for row in store.raw_checkpoints(DumpQuery(thread_ids=(thread_id,)), data=False)
        )
        if forked
        else {}
    )
    namespaces = store.namespaces(thread_id)
    for checkpoint in store.iter_thread(thread_id):
        key = graph_key(checkpoint.checkpoint_ns)
        shape = shapes.get(key) or shape_of([checkpoint])  # written between the passes
        tasks = checkpoint_tasks(checkpoint, shape=shape, namespaces=namespaces)
        record = checkpoint_record(checkpoint, values=False, tasks=tasks)
        trunk = trunks.get((checkpoint.checkpoint_ns, checkpoint.checkpoint_id))
        record["branch"] = (
            branch_record(checkpoint.checkpoint_id, checkpoint.source, trunk) if trunk else None
        )
        yield record


def history_list(
    store: Store, thread_id: str, ns: str | None, *, last: int | None
) -> list[CheckpointRecord]:
    """`history`'s records, without values: every checkpoint of the thread (one namespace,
    or the newest `last`), oldest id first, each with its tasks and the branch it is on."""
    checkpoints = thread_checkpoints(store, thread_id, ns, last=last)
    tasks = thread_tasks(checkpoints)
    branches = thread_branches(checkpoints)
    records = []
    for c in checkpoints:
        key = (c.checkpoint_ns, c.checkpoint_id)
        record = checkpoint_record(c, values=False, tasks=tasks[key])
        record["branch"] = branches.get(key)
        records.append(record)
    return records


def written_by(record: CheckpointRecord) -> object:
    """The `source` a checkpoint's metadata names (input, loop, update, fork), if any."""
    metadata = record["metadata"]
    return metadata.get("source") if isinstance(metadata, dict) else None


def lineage_record(
    store: Store,
    thread_id: str,
    chains: list[list[HistoryNodeRecord]],
    *,
    last: int | None,
    updates: int,
) -> LineageRecord:
    """`ckpt history`'s record around a thread's tree (`chains`): the channel values of its
    newest `updates` update_state checkpoints (what each edit wrote), and, with `last`, how
    many older checkpoints were not read (when the store can count them; else 0)."""
    records = [node["checkpoint"] for chain in chains for node in history_nodes(chain)]
    edits = [r for r in records if written_by(r) == "update"][-updates:] if updates else []
    keys = [CheckpointKey(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in edits]
    written = {c.checkpoint_id: c.values or {} for c in store.load_many(keys, values=True)}
    earlier = 0
    if last is not None and len(records) >= last:
        total = store.count_checkpoints(DumpQuery(thread_ids=(thread_id,)))
        earlier = max(total - len(records), 0) if total is not None else 0
    return {"thread_id": thread_id, "chains": chains, "written": written, "earlier": earlier}
