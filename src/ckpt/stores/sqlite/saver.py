"""The eras of SqliteSaver stores (format.md §4): what each is, which saver wrote it and
whether LangGraph reads it as it is (`ckpt check`'s saver facts)."""

from __future__ import annotations

from typing import Final

from ckpt.records.model import SaverFacts

ERAS: Final[dict[str, str]] = {
    "current": "SqliteSaver tables of checkpoint-sqlite 3.1.2 or later (writes.task_path)",
    "pre-task_path": "SqliteSaver tables of checkpoint-sqlite 1.0.0 - 3.1.1 (no writes.task_path)",
    "0.1": "langgraph 0.1 tables (thread_ts ids, untyped blobs): current LangGraph reads none",
}


# The saver release `ckpt check` speaks for (requirements/ci-constraints.txt; a test holds
# it to the installed package).
SAVER_RELEASE: Final = "langgraph-checkpoint-sqlite 3.1.2"
SAVERS: Final[dict[str, SaverFacts]] = {
    "current": SaverFacts(
        saver="SqliteSaver",
        releases="langgraph-checkpoint-sqlite 3.1.2 or later",
        evidence=("writes.task_path column",),
        langgraph="reads",
        note=f"{SAVER_RELEASE} reads it as it is",
    ),
    "pre-task_path": SaverFacts(
        saver="SqliteSaver",
        releases="langgraph-checkpoint-sqlite 1.0.0 - 3.1.1 (or LangGraph.js's SqliteSaver)",
        evidence=("checkpoints.checkpoint_ns and type columns", "no writes.task_path column"),
        langgraph="migrates",
        note=(
            f"{SAVER_RELEASE} reads it once its setup() adds writes.task_path, which it runs "
            "on first use: opening the file with it changes the schema"
        ),
    ),
    "0.1": SaverFacts(
        saver="SqliteSaver",
        releases="langgraph 0.1.x (before the checkpoint packages split off)",
        evidence=("checkpoints.thread_ts column", "no checkpoint_ns or type column"),
        langgraph="cannot",
        note=(
            f"{SAVER_RELEASE} cannot read it: its setup() alters the writes table, then "
            "every query fails (no column checkpoint_ns)"
        ),
    ),
}
