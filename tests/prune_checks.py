"""What the prune tests share (tests/test_prune.py, test_prune_servers.py): LangGraph's view
of a thread and what carrying it on gives, compared before and after a prune; `ckpt
vacuum --json` checked against its schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.agents import GRAPH_FACTORIES, AgentManifest
from fixtures.oracle import quiet_serde_log
from fixtures.state_oracle import snapshot_record
from jsonschema import Draft202012Validator
from langgraph.checkpoint.base import BaseCheckpointSaver

from invoke import ckpt
from resume import carry_on

VACUUM_SCHEMA = Draft202012Validator(
    json.loads((Path(__file__).parent.parent / "docs" / "vacuum.schema.json").read_text())
)


def vacuum_json(*args: str) -> dict[str, Any]:
    """`ckpt vacuum --json`, checked against its schema."""
    result = ckpt("vacuum", *args, "--json")
    assert result.exit_code == 0, result.output
    record: dict[str, Any] = json.loads(result.stdout)
    VACUUM_SCHEMA.validate(record)
    return record


# -- what LangGraph says about a thread, and what it does next ---------------------------------


def live_state(saver: BaseCheckpointSaver[Any], graph: Any, thread_id: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread_id}}
    snapshot = graph.get_state(config, subgraphs=True)
    record = snapshot_record("live", snapshot, saver.get_tuple(config), graph.output_channels)
    for key in ("checkpoint_id", "parent_checkpoint_id", "created_at", "metadata"):
        record.pop(key)  # a prune keeps the latest checkpoint but drops its parent link
    return record


def compare_with_langgraph(
    original: BaseCheckpointSaver[Any], pruned: BaseCheckpointSaver[Any], manifest: AgentManifest
) -> int:
    """LangGraph's view of every thread, then what carrying on gives; returns threads."""
    checked = 0
    with quiet_serde_log():
        for thread_id, graph_name in sorted(manifest["threads"].items()):
            before = GRAPH_FACTORIES[graph_name](original)
            after = GRAPH_FACTORIES[graph_name](pruned)
            assert live_state(pruned, after, thread_id) == live_state(
                original, before, thread_id
            ), thread_id
            status = manifest["status"].get(thread_id, "done")
            assert carry_on(after, thread_id, status) == carry_on(before, thread_id, status), (
                thread_id
            )
            checked += 1
    return checked
