"""The threads table, drawn by hand: stores have thousands of threads, and a layout engine
that measures every cell costs half a second for 1,000 rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ckpt.records import ThreadRecord
from ckpt.render.output import Output
from ckpt.render.text import brief, cell_width, clean_line, cut, human_size, short_time

STATUS_STYLE = {
    "done": "green",
    "interrupted": "yellow",
    "error": "bold red",
    "pending": "cyan",
    "unknown": "dim",
}
_ANSI = {"green": "32", "yellow": "33", "bold red": "1;31", "cyan": "36", "dim": "2", "bold": "1"}


def threads_table(records: Iterable[ThreadRecord], output: Output) -> Iterator[str]:
    """The lines of the table, one row per thread; nothing at all for no threads."""
    # PENDING: the writes on the latest checkpoint (`pending_writes` in the JSON); the
    # thread's total of write rows is `writes` in the JSON.
    headers = ["THREAD", "STATUS", "STEP", "SOURCE", "CKPTS", "PENDING", "NS", "UPDATED", "SIZE"]
    right = {"STEP", "CKPTS", "PENDING", "NS", "SIZE"}
    rows: list[list[str]] = []
    statuses: list[str] = []
    details: list[str] = []
    keeps: list[int] = []  # characters at the start of each detail that a cut must keep
    measured = False
    for record in records:
        keep = 0
        detail = ", ".join(record["next"] or [])
        if record["status"] == "error" and record["errors"]:
            detail = brief(record["errors"][0], limit=200)
        elif record["status"] == "interrupted" and record["interrupts"]:
            first = record["interrupts"][0]
            # The id first: it is what Command(resume={id: ...}) needs, and a cut
            # would make it useless.
            where = f" {first['id']}" if first["id"] else ""
            detail = f"waiting{where}: " + brief(first["value"], limit=200)
            keep = len(f"waiting{where}:")
        elif record["checkpoint_id"] is None:
            subgraphs = [n for n in record["namespaces"] if n]
            detail = f"no root checkpoint; only subgraph namespaces ({len(subgraphs)})"
        statuses.append(record["status"])
        details.append(clean_line(detail))
        keeps.append(keep)
        rows.append(
            [
                clean_line(record["thread_id"]),
                record["status"],
                "" if record["step"] is None else str(record["step"]),
                clean_line(record["source"] or ""),
                str(record["checkpoints"]),
                str(record["pending_writes"]),
                str(len([n for n in record["namespaces"] if n])),
                short_time(record["updated_at"]),
                "" if record["size"] is None else human_size(record["size"]),
            ]
        )
        measured = measured or record["size"] is not None
    if not rows:
        return
    if not measured:  # sizes are shown only when measured (`--size`)
        headers.pop()
        for row in rows:
            row.pop()
    widths = [
        max([cell_width(h), *(cell_width(r[i]) for r in rows)]) for i, h in enumerate(headers)
    ]
    colour = output.colour
    used = sum(widths) + 2 * len(widths)
    # On a terminal (or with COLUMNS set) the detail is cut to the width; into a pipe or a
    # file, lines stay whole.
    if output.terminal or output.width is not None:
        room = max(output.columns() - used, 24)
    else:
        room = 10**9

    def paint(text: str, style: str) -> str:
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if colour and style in _ANSI else text

    def line(cells: list[str], detail: str, status_style: str, keep: int = 0) -> str:
        padded = [
            c.rjust(w) if h in right else c + " " * (w - cell_width(c))
            for c, w, h in zip(cells, widths, headers, strict=True)
        ]
        padded[1] = paint(padded[1], status_style)
        shown = detail[:keep] + cut(detail[keep:], False, max(room - keep, 12))
        return ("  ".join(padded) + "  " + shown).rstrip() + "\n"

    yield paint(line(headers, "NEXT / DETAIL", "").rstrip("\n"), "bold") + "\n"
    for row, status, detail, keep in zip(rows, statuses, details, keeps, strict=True):
        yield line(row, detail, STATUS_STYLE.get(status, ""), keep)
