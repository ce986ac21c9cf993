"""What the integrity visitor (ckpt.scan.integrity) keeps of the rows it has read: every
checkpoint id of the store in a Bloom filter, the namespaces of the thread being read and
their checkpoints' links, and the circles those links may make."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

Pair = tuple[str, str, str, str | None]  # (thread, ns, channel, version) of a blob


class IdIndex:
    """Every checkpoint id of the store in a Bloom filter: whether an id was met before, in
    constant memory per id (BITS bits, so a store of a million checkpoints takes 8 MB)
    and with a false hit about once in 75,000 ids; a hit is looked up by id before it is
    said. A false hit costs a look-up (on Redis a search of every key: 0.3 s on the bench
    store), which at 32 bits an id came about once a run of 25,000 checkpoints."""

    BITS: ClassVar[int] = 64
    HASHES: ClassVar[int] = 4
    MAX_BYTES: ClassVar[int] = 64 << 20

    def __init__(self, ids: int) -> None:
        size = min(max(ids * self.BITS // 8, 1 << 12), self.MAX_BYTES)
        self.bits = bytearray(size)
        self.size = size * 8

    def add(self, key: str) -> bool:
        """Add `key`; whether it may have been added before (double hashing: HASHES bit
        positions from two of Python's string hashes)."""
        bits, size = self.bits, self.size
        first = hash(key)
        second = hash((key, 1)) | 1
        seen = True
        # first + i * second for i < HASHES (4), spelled out: no range object per id.
        two, three = first + 2 * second, first + 3 * second
        for position in (first % size, (first + second) % size, two % size, three % size):
            byte, bit = position >> 3, 1 << (position & 7)
            if not bits[byte] & bit:
                seen = False
                bits[byte] |= bit
        return seen

    def holds(self, key: str) -> bool:
        """Whether `key` may have been added (`add`'s answer, without adding it)."""
        bits, size = self.bits, self.size
        first = hash(key)
        second = hash((key, 1)) | 1
        for position in (first, first + second, first + 2 * second, first + 3 * second):
            position %= size
            if not bits[position >> 3] & (1 << (position & 7)):
                return False
        return True


@dataclass(slots=True)
class Node:
    """One checkpoint of the namespace being read: what its chain checks need."""

    checkpoint_id: str
    parent_id: str | None
    source: str | None
    parents: dict[str, str] | None  # metadata "parents": ancestor namespace -> checkpoint id
    step: int | float | None
    versions: dict[str, Any] | None


@dataclass(slots=True)
class ThreadChain:
    """The current thread's namespaces, while its checkpoints stream by."""

    thread_id: str
    ids: dict[str, set[str]] = field(default_factory=dict)  # ns -> checkpoint ids
    oldest: dict[str, str] = field(default_factory=dict)  # ns -> its smallest id
    started: set[str] = field(default_factory=set)  # namespaces holding their first checkpoint
    subgraphs: dict[str, list[Node]] = field(default_factory=dict)  # subgraph ns -> its nodes
    growth: list[tuple[int, tuple[Pair, ...]]] = field(default_factory=list)  # root checkpoints
    shares: bool = False  # an id of it was met in an earlier thread (looked up once)


def cycles(by_id: dict[str, Node]) -> Iterator[list[str]]:
    """Each circle of parent links, once (its ids in parent order)."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in by_id:
        if start in state:
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in by_id and node not in state:
            state[node] = 1
            walk.append(node)
            node = by_id[node].parent_id
        if node is not None and state.get(node) == 1:
            yield walk[walk.index(node) :]
        for visited in walk:
            state[visited] = 2
