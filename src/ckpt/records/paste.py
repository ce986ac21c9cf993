"""What to paste into LangGraph for a checkpoint record: its config, and the call that
answers its interrupts or retries its failed tasks (`ckpt show`, `ckpt browse`)."""

from __future__ import annotations

import json
from typing import Any

from ckpt.records.types import CheckpointRecord

PASTE_LIMIT = 2_000  # characters of a config worth pasting; LangGraph's ids are 36


def paste_back(record: CheckpointRecord, *, latest: bool) -> list[tuple[str, str]]:
    """Python to paste into LangGraph for this checkpoint, as (what, code): its `config`;
    and when it is the newest of its thread's root, the call that answers each interrupt
    still waiting (`resume`, one entry per id, `...` standing for the answer) or retries
    the failed tasks (`retry`). Both run the root graph on the thread: LangGraph routes an
    answer to the subgraph that asked. Nothing when the ids are too long to paste (a
    hostile store's 10 MB id is shown once, folded, not three times as code)."""
    config = _py(record["config"])
    if len(config) > PASTE_LIMIT:
        return []
    lines = [("config", config)]
    if not latest:
        return lines
    thread = _py({"configurable": {"thread_id": record["thread_id"]}})
    waiting = [
        i["id"]
        for i in record["interrupts"]
        if not i["answered"] and 0 < len(i["id"] or "") <= PASTE_LIMIT
    ]
    if waiting:
        answers = ", ".join(f"{_py(i)}: ..." for i in waiting)
        lines.append(("resume", f"graph.invoke(Command(resume={{{answers}}}), {thread})"))
    if any(t["state"] == "failed" for t in record["tasks"] or []):
        lines.append(("retry", f"graph.invoke(None, {thread})"))
    return lines


def _py(value: Any) -> str:
    """A str-keyed dict of strings as Python source (JSON's spelling is Python's here)."""
    return json.dumps(value, ensure_ascii=False)
