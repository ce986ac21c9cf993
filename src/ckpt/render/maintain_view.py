"""`ckpt prune` and `ckpt vacuum` for people: the plan (or what was done), per thread and
namespace, with what stays and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.records import NamespacePlanRecord, PruneRecord
from ckpt.render.human import _boxed
from ckpt.render.output import Output
from ckpt.render.text import human_size

if TYPE_CHECKING:
    from ckpt.prune import ThreadPlan


def plan_line(plan: ThreadPlan) -> str:
    """One stderr line per thread while --apply works."""
    if plan.refused:
        return f"ckpt: left {plan.thread_id}: {plan.refused}"
    gone = sum(len(n.deleted) for n in plan.namespaces)
    return f"ckpt: pruned {plan.thread_id}: {gone} checkpoints"


def prune_view(record: PruneRecord, output: Output) -> RenderableType:
    applied = record["applied"]
    table = Table(box=_boxed(output), header_style="bold", pad_edge=False)
    for name, justify in (
        ("THREAD", "left"),
        ("NAMESPACE", "left"),
        ("CHECKPOINTS", "right"),
        ("WRITES", "right"),
        ("BLOBS", "right"),
        ("FREES", "right"),
        ("KEEPS", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    refused: list[Text] = []
    for thread in record["threads"]:
        if thread["refused"]:
            refused.append(
                Text(f"left alone: {thread['thread_id']}: {thread['refused']}", style="yellow")
            )
            continue
        for ns in thread["namespaces"]:
            if not (ns["checkpoints"] or ns["writes"] or ns["blobs"] or ns["kept"]):
                continue
            table.add_row(
                thread["thread_id"],
                ns["checkpoint_ns"] or "(root)",
                f"{ns['checkpoints']:,}",
                f"{ns['writes']:,}",
                f"{ns['blobs']:,}",
                human_size(ns["bytes"]),
                _kept(ns),
            )
    totals = record["totals"]
    verb = "deleted" if applied else "would delete"
    summary = Text(
        f"{verb} {totals['checkpoints']:,} checkpoints, {totals['writes']:,} writes"
        + (f", {totals['blobs']:,} blobs" if totals["blobs"] else "")
        + f" ({human_size(totals['bytes'])}) in {totals['threads']:,} of "
        f"{len(record['threads']):,} selected threads",
        style="bold",
    )
    parts: list[RenderableType] = [table, summary, *refused]
    if record["backup"]:
        parts.append(Text(f"backup written first: {record['backup']}"))
    if applied:
        parts.append(
            Text(
                "the file keeps its size until `ckpt vacuum --apply`"
                if record["store"]["kind"] == "sqlite"
                else "the space is reused after VACUUM: `ckpt vacuum` shows the statement",
                style="dim",
            )
        )
    elif totals["checkpoints"] or totals["writes"]:
        parts.append(Text("nothing changed: run again with --apply to prune", style="dim"))
    return Group(*parts)


def _kept(ns: NamespacePlanRecord) -> str:
    if ns["whole"]:
        return f"nothing: {ns['why']}"
    reasons: dict[str, int] = {}
    for kept in ns["kept"]:
        for reason in kept["reasons"]:
            reasons[reason] = reasons.get(reason, 0) + 1
    return "; ".join(f"{r} ×{n}" if n > 1 else r for r, n in reasons.items())


def vacuum_view(record: dict[str, Any]) -> RenderableType:
    lines: list[RenderableType] = []
    if record["store"]["kind"] == "sqlite":
        if record["applied"]:
            before, after = record["before"], record["after"]
            if record.get("into"):
                lines.append(
                    Text(f"wrote a compacted copy to {record['into']}; the store is unchanged")
                )
            else:
                lines.append(
                    Text(
                        f"vacuumed: {human_size(before['file_bytes'])} → "
                        f"{human_size(after['file_bytes'])} "
                        f"({before['free_pages']:,} free pages given back)"
                    )
                )
            return Group(*lines)
        lines.append(
            Text(
                f"{human_size(record['file_bytes'])}: {record['free_pages']:,} free pages "
                f"({human_size(record['free_bytes'])}) that VACUUM gives back (at least: it also "
                "repacks half-empty pages)"
            )
        )
        room = record["disk_free_bytes"] >= record["disk_needed_bytes"]
        lines.append(
            Text(
                f"disk: {human_size(record['disk_free_bytes'])} free, VACUUM needs up to "
                f"{human_size(record['disk_needed_bytes'])}"
                + ("" if room else ": not enough (use --into FILE on another disk)"),
                style="" if room else "yellow",
            )
        )
        lines.append(
            Text("nothing changed: --apply runs VACUUM, --into FILE writes a copy", style="dim")
        )
        return Group(*lines)
    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in ("TABLE", "SIZE", "LIVE ROWS", "DEAD ROWS", "BLOAT"):
        table.add_column(name, justify="left" if name == "TABLE" else "right")
    for info in record.get("after") or record["tables"]:
        table.add_row(
            info["table"],
            human_size(info["total_bytes"]),
            f"{info['live_rows'] or 0:,}",
            f"{info['dead_rows'] or 0:,}",
            human_size(info.get("bloat_estimate_bytes", 0)),
        )
    lines.append(table)
    if record["applied"]:
        lines.append(Text(f"ran: {record['statement']}"))
    else:
        lines.append(Text(f"to run (or --apply): {record['statement']};"))
    return Group(*lines)
