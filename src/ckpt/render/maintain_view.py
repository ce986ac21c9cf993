"""`ckpt prune` and `ckpt vacuum` for people: the plan (or what was done), per thread and
namespace, with what stays and why."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.records.runs import NamespacePlanRecord, PruneHead, PruneTotals, ThreadPlanRecord
from ckpt.records.types import VacuumMemoryRecord, VacuumRecord, VacuumTableRecord
from ckpt.render.output import Output
from ckpt.render.plain import SPOOL_BYTES, ansi_paint, wrap_text
from ckpt.render.text import cell_width, clean_line, human_size, thread_cell


def plan_line(plan: ThreadPlanRecord) -> str:
    """One stderr line per thread while --apply works."""
    if plan["refused"]:
        return f"ckpt: left {plan['thread_id']}: {plan['refused']}"
    return f"ckpt: pruned {plan['thread_id']}: {plan['checkpoints']} checkpoints"


def prune_lines(
    head: PruneHead,
    threads: Iterable[ThreadPlanRecord],
    totals: Callable[[], PruneTotals],
    output: Output,
) -> Iterator[str]:
    """The plan (or what was done) for people: a row per thread and namespace that loses
    or keeps something, then the totals and the threads left alone. Drawn by hand, as the
    threads table is (ckpt.render.plain): a Rich table of 100,000 rows takes minutes and
    gigabytes. Two passes in flat memory: the rows are measured and spooled, then laid out,
    fitted to the width on a terminal (or with COLUMNS): a namespace too wide for its column
    on a line of its own, what is kept under the row when it does not fit at its end."""
    headers = ["THREAD", "NAMESPACE", "CHECKPOINTS", "WRITES", "BLOBS", "FREES", "KEEPS"]
    widths = [cell_width(h) for h in headers[:-1]]
    right = (False, False, True, True, True, True)
    colour = output.colour

    def paint(text: str, style: str) -> str:
        return ansi_paint(text, style, colour=colour)

    def said(text: str, style: str) -> str:
        """A line of its own, wrapped to the width (a terminal, or COLUMNS) under itself."""
        room = output.columns() if output.wraps else 0
        lines = wrap_text(text, room, room - 2) if room >= 20 else [text]
        return "".join(
            paint(("  " if i else "") + line, style) + "\n" for i, line in enumerate(lines)
        )

    count = 0
    ns_widths: set[int] = set()  # how wide the namespaces are: the column may leave some out
    keeps_width = cell_width(headers[-1])
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
                    thread_cell(thread["thread_id"]),
                    clean_line(ns["checkpoint_ns"] or "(root)"),
                    f"{ns['checkpoints']:,}",
                    f"{ns['writes']:,}",
                    f"{ns['blobs']:,}",
                    human_size(ns["bytes"]),
                    clean_line(_kept(ns)),
                ]
                for i, width in enumerate(widths):
                    widths[i] = max(width, cell_width(cells[i]))
                ns_widths.add(cell_width(cells[1]))
                keeps_width = max(keeps_width, cell_width(cells[-1]))
                rows.write("\0".join(cells) + "\n")

        # Fitted to the width (a terminal, or COLUMNS): a namespace too wide for its column
        # goes on the row's first line alone and the numbers on the next; what a namespace
        # keeps, when it does not fit at the end of the row, goes under it.
        columns = output.columns() if output.wraps else 0
        ns_width = widths[1]
        if columns and sum(widths) + 2 * len(widths) + keeps_width > columns:
            room = columns - sum(widths) - 2 * len(widths) + widths[1]
            ns_width = max(
                [cell_width(headers[1]), *(w for w in ns_widths if w <= room)], default=0
            )
        widths[1] = ns_width
        keeps_room = columns - sum(widths) - 2 * len(widths) if columns else 0
        indent = widths[0] + 2

        def line(cells: list[str]) -> str:
            padded = [
                " " * (w - cell_width(c)) + c if r else c + " " * (w - cell_width(c))
                for c, w, r in zip(cells, widths, right, strict=False)
            ]
            keeps = cells[-1]
            lines: list[str] = []
            if cell_width(cells[1]) > widths[1]:  # the namespace alone, the rest under it
                lines.append(f"{cells[0]}  {cells[1]}")
                padded[:2] = [" " * widths[0], " " * widths[1]]
            if not columns or cell_width(keeps) <= keeps_room or cells is headers:
                return "\n".join([*lines, "  ".join([*padded, keeps]).rstrip()])
            lines.append("  ".join(padded).rstrip())
            wrapped = wrap_text(f"keeps {keeps}", columns - indent, columns - indent - 2)
            lines += [" " * (indent + (2 if i else 0)) + text for i, text in enumerate(wrapped)]
            return "\n".join(lines)

        if rows.tell():
            if columns and cell_width(headers[-1]) > keeps_room:
                headers[-1] = ""  # each row says what it keeps under it
            yield paint(line(headers), "bold") + "\n"
            rows.seek(0)
            for row in rows:
                yield line(row[:-1].split("\0")) + "\n"
        done = totals()
        applied = head["applied"]
        verb = "deleted" if applied else "would delete"
        yield said(
            f"{verb} {done['checkpoints']:,} checkpoints, {done['writes']:,} writes"
            + (f", {done['blobs']:,} blobs" if done["blobs"] else "")
            + f" ({human_size(done['bytes'])}) in {done['threads']:,} of "
            f"{count:,} selected threads",
            "bold",
        )
        left.seek(0)
        for refused in left:
            yield said(refused[:-1], "yellow")
    if head["backup"]:
        yield said(f"backup written first: {clean_line(head['backup'])}", "")
    if applied and head["reclaim"] is not None:
        yield paint(RECLAIM[head["reclaim"]], "dim") + "\n"
    elif done["checkpoints"] or done["writes"]:
        yield paint("nothing changed: run again with --apply to prune", "dim") + "\n"


# How the space of the deleted rows comes back, by the record's `reclaim`.
RECLAIM: Final = {
    "file": "the file keeps its size until `ckpt vacuum --apply`",
    "reuse": "the space is reused after VACUUM: `ckpt vacuum` shows the statement",
    "memory": "Redis freed the keys' memory at once; `ckpt vacuum` shows what the "
    "allocator still holds",
    "compact": "MongoDB reuses the space; `ckpt vacuum --apply` runs compact to give it back",
}


def _kept(ns: NamespacePlanRecord) -> str:
    if ns["whole"]:
        return f"nothing: {ns['why']}"
    reasons: dict[str, int] = {}
    for kept in ns["kept"]:
        for reason in kept["reasons"]:
            reasons[reason] = reasons.get(reason, 0) + 1
    return "; ".join(f"{r} ×{n}" if n > 1 else r for r, n in reasons.items())


def vacuum_view(record: VacuumRecord) -> RenderableType:
    """What VACUUM would give back (or gave): each part the store has (a file and its
    pages, tables), then what to run next, worded by how VACUUM reclaims the space."""
    lines: list[RenderableType] = []
    if record["file_bytes"] is not None:
        lines += _file_part(record)
    after = record["after"]
    tables = after["tables"] if after is not None else record["tables"]
    if tables is not None:
        lines.append(_tables_part(tables))
    memory = after["memory"] if after is not None else record["memory"]
    if memory is not None:
        lines.append(_memory_part(record, memory))
    if record["reclaim"] in ("reuse", "memory", "compact"):  # by hand, or --apply
        if record["applied"]:
            lines.append(Text(f"ran: {record['statement']}"))
        else:
            lines.append(Text(f"to run (or --apply): {record['statement']};"))
    elif not record["applied"]:  # the file is rewritten: in place, or --into a copy
        if record["into"]:  # --into given: --apply is what writes the copy
            hint = f"nothing changed: run again with --apply to write the copy to {record['into']}"
        else:
            hint = "nothing changed: --apply runs VACUUM, --into FILE writes a copy"
        lines.append(Text(hint, style="dim"))
    return Group(*lines)


def _file_part(record: VacuumRecord) -> list[RenderableType]:
    """The database file: its free pages and the disk room VACUUM needs, or what it did."""
    if record["applied"]:
        before, after = record["before"], record["after"]
        if record["into"] or before is None or after is None:
            return [Text(f"wrote a compacted copy to {record['into']}; the store is unchanged")]
        return [
            Text(
                f"vacuumed: {human_size(before['file_bytes'] or 0)} → "
                f"{human_size(after['file_bytes'] or 0)} "
                f"({before['free_pages'] or 0:,} free pages given back)"
            )
        ]
    lines: list[RenderableType] = [
        Text(
            f"{human_size(record['file_bytes'] or 0)}: {record['free_pages'] or 0:,} free pages "
            f"({human_size(record['free_bytes'] or 0)}) that VACUUM gives back (at least: it "
            "also repacks half-empty pages)"
        )
    ]
    free, needed = record["disk_free_bytes"], record["disk_needed_bytes"]
    if free is not None and needed is not None:
        room = free >= needed
        lines.append(
            Text(
                f"disk: {human_size(free)} free, VACUUM needs up to {human_size(needed)}"
                + ("" if room else ": not enough (use --into FILE on another disk)"),
                style="" if room else "yellow",
            )
        )
    return lines


def _memory_part(record: VacuumRecord, memory: VacuumMemoryRecord) -> Text:
    """Redis: what its data takes, what the process holds, what the allocator may return."""
    said = (
        f"memory: {human_size(memory['used_bytes'])} used by data, "
        f"{human_size(memory['rss_bytes'])} held from the system"
    )
    before = record["before"]
    if record["applied"] and before is not None and before["memory"] is not None:
        was = before["memory"]["rss_bytes"]
        return Text(f"{said} (was {human_size(was)} before MEMORY PURGE)")
    if not memory["allocator"].startswith("jemalloc"):
        return Text(f"{said}; its allocator ({memory['allocator']}) gives nothing back")
    return Text(f"{said}; MEMORY PURGE may give {human_size(memory['reclaimable_bytes'])} back")


def _tables_part(tables: list[VacuumTableRecord]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in ("TABLE", "SIZE", "LIVE ROWS", "DEAD ROWS", "BLOAT"):
        table.add_column(name, justify="left" if name == "TABLE" else "right")
    for info in tables:
        table.add_row(
            info["table"],
            human_size(info["total_bytes"]),
            f"{info['live_rows'] or 0:,}",
            f"{info['dead_rows'] or 0:,}",
            human_size(info["bloat_estimate_bytes"]),
        )
    return table
