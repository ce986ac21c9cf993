"""`ckpt prune` and `ckpt vacuum` for people: the plan (or what was done), per thread and
namespace, with what stays and why."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.records import NamespacePlanRecord, ThreadPlanRecord
from ckpt.render.output import Output
from ckpt.render.plain import SPOOL_BYTES, ansi_paint
from ckpt.render.text import cell_width, clean_line, human_size


def plan_line(plan: ThreadPlanRecord) -> str:
    """One stderr line per thread while --apply works."""
    if plan["refused"]:
        return f"ckpt: left {plan['thread_id']}: {plan['refused']}"
    return f"ckpt: pruned {plan['thread_id']}: {plan['checkpoints']} checkpoints"


def prune_lines(
    head: Mapping[str, Any],
    threads: Iterable[ThreadPlanRecord],
    totals: Callable[[], Mapping[str, int]],
    output: Output,
) -> Iterator[str]:
    """The plan (or what was done) for people: a row per thread and namespace that loses
    or keeps something, then the totals and the threads left alone. Drawn by hand, as the
    threads table is (ckpt.render.plain): a Rich table of 100,000 rows takes minutes and
    gigabytes. Two passes in flat memory: the rows are measured and spooled, then laid out."""
    headers = ["THREAD", "NAMESPACE", "CHECKPOINTS", "WRITES", "BLOBS", "FREES", "KEEPS"]
    widths = [cell_width(h) for h in headers[:-1]]
    right = (False, False, True, True, True, True)
    colour = output.colour

    def paint(text: str, style: str) -> str:
        return ansi_paint(text, style, colour=colour)

    count = 0
    with (
        tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8") as rows,
        tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8") as left,
    ):
        for thread in threads:
            count += 1
            if thread["refused"]:
                left.write(clean_line(f"left alone: {thread['thread_id']}: {thread['refused']}"))
                left.write("\n")
                continue
            for ns in thread["namespaces"]:
                if not (ns["checkpoints"] or ns["writes"] or ns["blobs"] or ns["kept"]):
                    continue
                cells = [
                    clean_line(thread["thread_id"]),
                    clean_line(ns["checkpoint_ns"] or "(root)"),
                    f"{ns['checkpoints']:,}",
                    f"{ns['writes']:,}",
                    f"{ns['blobs']:,}",
                    human_size(ns["bytes"]),
                    clean_line(_kept(ns)),
                ]
                for i, width in enumerate(widths):
                    widths[i] = max(width, cell_width(cells[i]))
                rows.write("\0".join(cells) + "\n")

        def line(cells: list[str]) -> str:
            padded = [
                " " * (w - cell_width(c)) + c if r else c + " " * (w - cell_width(c))
                for c, w, r in zip(cells, widths, right, strict=False)
            ]
            return ("  ".join([*padded, cells[-1]])).rstrip()

        if rows.tell():
            yield paint(line(headers), "bold") + "\n"
            rows.seek(0)
            for row in rows:
                yield line(row[:-1].split("\0")) + "\n"
        done = totals()
        applied = head["applied"]
        verb = "deleted" if applied else "would delete"
        yield (
            paint(
                f"{verb} {done['checkpoints']:,} checkpoints, {done['writes']:,} writes"
                + (f", {done['blobs']:,} blobs" if done["blobs"] else "")
                + f" ({human_size(done['bytes'])}) in {done['threads']:,} of "
                f"{count:,} selected threads",
                "bold",
            )
            + "\n"
        )
        left.seek(0)
        for refused in left:
            yield paint(refused[:-1], "yellow") + "\n"
    if head["backup"]:
        yield f"backup written first: {clean_line(head['backup'])}\n"
    if applied:
        yield (
            paint(
                "the file keeps its size until `ckpt vacuum --apply`"
                if head["store"]["kind"] == "sqlite"
                else "the space is reused after VACUUM: `ckpt vacuum` shows the statement",
                "dim",
            )
            + "\n"
        )
    elif done["checkpoints"] or done["writes"]:
        yield paint("nothing changed: run again with --apply to prune", "dim") + "\n"


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
