"""RedisSaver's key names, read back (format.md §7b).

    {prefix}:{thread}:{ns}:{checkpoint_id}                       a checkpoint
    {write_prefix}:{thread}:{ns}:{checkpoint_id}:{task_id}:{idx}  one pending write
    write_keys_zset:{thread}:{ns}:{checkpoint_id}                 its writes' keys
    {prefix}_latest:{thread}:{ns}                                 its newest checkpoint's key

ShallowRedisSaver keeps one checkpoint per namespace, `{prefix}:{thread}:{ns}` with the
root namespace as "" (not `__empty__`), and its writes' keys in
`write_registry:{thread}:{ns}:shallow` (`__empty__` here), earlier checkpoints' included.

The root namespace is `__empty__`, an empty thread or checkpoint id the nil UUID. Thread
ids may hold `:`, and so do subgraph namespaces (`node:task_id|node:task_id`), so a key is
read from its right: ids and task ids are UUIDs, and a namespace is `__empty__` or
`name:uuid` parts joined by `|` (LangGraph forbids `:` and `|` in node names). A key that
does not read so is None, and its document's own fields say what it is.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

EMPTY_NS: Final = "__empty__"
EMPTY_ID: Final = "00000000-0000-0000-0000-000000000000"
# The key families of a saver's whose names are not its prefixes (`ckpt stats`).
FIXED_FAMILIES: Final = ("write_keys_zset", "checkpoint_blob", "write_registry")
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class CheckpointName(NamedTuple):
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str


class WriteName(NamedTuple):
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int


def from_storage_id(value: str) -> str:
    return "" if value == EMPTY_ID else value


def from_storage_ns(value: str) -> str:
    return "" if value == EMPTY_NS else value


def to_storage_id(value: str) -> str:
    return value or EMPTY_ID


def to_storage_ns(value: str) -> str:
    return value or EMPTY_NS


def _split_thread_ns(parts: list[str], root: str = EMPTY_NS) -> tuple[str, str] | None:
    """`parts` = thread segments + namespace segments (the key split on `:`); None when
    they do not read as one (thread, namespace) for sure.

    A namespace is `name:uuid` segments joined by `|`, and a name may hold `:` (a @task
    named `fetch:page`, whose namespace is `crawl:<uuid>|fetch:page:<uuid>`): from the
    right, each segment's name reaches back to the `uuid|` that ends the one before. The
    first segment's name and the thread id meet at a `:` that either may hold, so the
    split is sure only when one part is left for each; otherwise the key is None and its
    document's fields say (issue 46 §5: threads were listed under bogus ids)."""
    if len(parts) < 2:
        return None
    if parts[-1] == root:
        return from_storage_id(":".join(parts[:-1])), ""
    if not _UUID.fullmatch(parts[-1]):
        return None
    first = len(parts) - 1  # the part holding the first segment's uuid
    for j in range(len(parts) - 2, 0, -1):
        if "|" in parts[j]:
            left, _, right = parts[j].partition("|")
            if not _UUID.fullmatch(left) or not right or "|" in right:
                return None
            first = j
    if first != 2:
        return None  # thread and first name: more than one way to split (see above)
    return from_storage_id(parts[0]), ":".join(parts[1:])


def thread_and_ns(text: str, root: str = EMPTY_NS) -> tuple[str, str] | None:
    """`{thread}:{ns}` (a latest pointer's key after its prefix) read, or None when it
    splits more than one way."""
    return _split_thread_ns(text.split(":"), root)


def checkpoint_name(key: str, prefix: str, root: str = EMPTY_NS) -> CheckpointName | None:
    """`root`: how the key spells the root namespace: `__empty__` (Python's savers) or an
    empty segment (LangGraph.js's)."""
    if not key.startswith(prefix + ":"):
        return None
    rest, _, checkpoint_id = key.rpartition(":")
    head, _, ns = rest.rpartition(":")
    if ns == root and len(head) > len(prefix):  # the root namespace: most keys
        return CheckpointName(
            from_storage_id(head[len(prefix) + 1 :]), "", from_storage_id(checkpoint_id)
        )
    parts = key[len(prefix) + 1 :].split(":")
    if len(parts) < 3:
        return None
    split = _split_thread_ns(parts[:-1], root)
    if split is None:
        return None
    return CheckpointName(split[0], split[1], from_storage_id(parts[-1]))


def write_name(key: str, prefix: str, root: str = EMPTY_NS) -> WriteName | None:
    if not key.startswith(prefix + ":"):
        return None
    parts = key[len(prefix) + 1 :].split(":")
    if len(parts) < 5:
        return None
    try:
        idx = int(parts[-1])
    except ValueError:
        return None
    split = _split_thread_ns(parts[:-3], root)
    if split is None:
        return None
    return WriteName(split[0], split[1], from_storage_id(parts[-3]), parts[-2], idx)


def checkpoint_key(prefix: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"{prefix}:{to_storage_id(thread_id)}:{to_storage_ns(checkpoint_ns)}:" + to_storage_id(
        checkpoint_id
    )


def latest_key(prefix: str, thread_id: str, checkpoint_ns: str) -> str:
    return f"{prefix}_latest:{to_storage_id(thread_id)}:{to_storage_ns(checkpoint_ns)}"


def write_zset_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return (
        f"write_keys_zset:{to_storage_id(thread_id)}:{to_storage_ns(checkpoint_ns)}:"
        + to_storage_id(checkpoint_id)
    )


def shallow_registry_key(thread_id: str, checkpoint_ns: str) -> str:
    """ShallowRedisSaver's registry of a (thread, namespace)'s write keys (thread id as is)."""
    return f"write_registry:{thread_id}:{to_storage_ns(checkpoint_ns)}:shallow"


# LangGraph.js's RedisSaver (@langchain/langgraph-checkpoint-redis): the namespace as it is
# in every key (the root an empty segment), values apart as blobs by (channel, version).


def js_checkpoint_key(prefix: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"{prefix}:{thread_id}:{checkpoint_ns}:{checkpoint_id}"


def js_write_zset_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"write_keys_zset:{thread_id}:{checkpoint_ns}:{checkpoint_id}"


def js_blob_key(thread_id: str, checkpoint_ns: str, channel: str, version: object) -> str:
    return f"checkpoint_blob:{thread_id}:{checkpoint_ns}:{channel}:{version}"
