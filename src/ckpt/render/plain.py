"""The threads table and the history tree, drawn by hand: stores have thousands of threads
and threads thousands of checkpoints, and a layout engine that measures every cell costs
half a second for 1,000 rows (Rich's Tree: 18 s for a 20,000-wide fork)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ckpt.records.types import ThreadRecord
from ckpt.render.output import Output, strip_trailing
from ckpt.render.text import (
    brief,
    cell_width,
    clean_line,
    cut,
    error_brief,
    failure,
    human_size,
    short_time,
    task_name,
    thread_cell,
    today,
    zone_label,
)

STATUS_STYLE = {
    "done": "green",
    "interrupted": "yellow",
    "error": "bold red",
    "pending": "cyan",
    "unknown": "dim",
}
DETAIL_ROOM = 60  # columns of detail worth dropping a column for
DROP_ORDER = ("SIZE", "PENDING", "NS", "SOURCE")  # least telling first
SPOOL_BYTES = 4 << 20  # rows of the threads table kept in memory before a temporary file
_ANSI = {"green": "32", "yellow": "33", "bold red": "1;31", "cyan": "36", "dim": "2", "bold": "1"}


def ansi_paint(text: str, style: str, *, colour: bool) -> str:
    """`text` in one of the few styles the hand-drawn tables use (SGR codes), when colour."""
    return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if colour and style in _ANSI else text


def thread_change_lines(records: Iterable[ThreadRecord], output: Output) -> Iterator[str]:
    """`threads --follow`: a line per thread whose status changed, as it changes: its
    latest checkpoint's time, the thread, the status, the step, and what it waits for (the
    next nodes, an interrupt) or why it failed."""
    for record in records:
        detail = ", ".join(record["next"] or [])
        if record["status"] == "error" and record["failed_tasks"]:
            detail = failure(record["failed_tasks"][0], limit=200)
        elif record["interrupts"]:
            detail = f"interrupt {record['interrupts'][0]['id']}"
        when = short_time(record["updated_at"], output.local_time)
        step = record["step"] if record["step"] is not None else "?"
        cells = [when, thread_cell(record["thread_id"]), record["status"], f"step {step}", detail]
        yield "  ".join(c for c in cells if c) + "\n"


def threads_table(records: Iterable[ThreadRecord], output: Output) -> Iterator[str]:
    """The lines of the table, one row per thread; nothing at all for no threads.

    Fitted to the width when there is one (a terminal, or COLUMNS): columns that say
    nothing on this store (SOURCE the same on every row, NS and PENDING all zero) are left
    out, times drop the date when it is today's, and the detail gets the rest of the line.
    Thread ids and interrupt ids are never cut: they are what the user pastes. A detail the
    rest of the line would cut that short (an interrupt id, a task's error) goes on lines of
    its own under the row, indented under STATUS.

    Two passes in flat memory: the first measures the columns and spools each row, as one
    line of its cells, to a temporary buffer (in memory up to a few MB, then a file); the
    second lays the rows out. No record is kept.
    """
    # PENDING: the writes on the latest checkpoint (`pending_writes` in the JSON); the
    # thread's total of write rows is `writes` in the JSON.
    headers = ["THREAD", "STATUS", "STEP", "SOURCE", "CKPTS", "PENDING", "NS", "UPDATED", "SIZE"]
    right = {"STEP", "CKPTS", "PENDING", "NS", "SIZE"}
    fitted = output.wraps
    local = output.local_time
    now = today(local)
    measured = False  # sizes are shown only when measured (`--size`)
    widths = [0] * len(headers)
    widest = 0  # of the details
    count = 0
    sources: set[str] = set()  # up to two: SOURCE says nothing when one value fills it
    nonzero = {"PENDING": False, "NS": False}
    at = {h: i for i, h in enumerate(headers)}
    import tempfile  # here: `threads --json` has no use for it

    # Cells never hold a newline or NUL (clean_line escapes them): a row is one line,
    # its cells NUL-separated, status and detail first.
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8")
    batch: list[str] = []
    with spool:
        for record in records:
            keep, detail, short = "", ", ".join(record["next"] or []), ""
            if record["status"] == "error" and record["failed_tasks"]:
                failed = record["failed_tasks"]
                detail, short = failure(failed[0], limit=200), failure(failed[0], 200, False)
                # Tasks that failed with the same error (an entrypoint and the @task it
                # awaited) are one line that names them all.
                same = [t for t in failed[1:] if t["error"] == failed[0]["error"]]
                if same and failed[0]["input"] is None:
                    names = clean_line(", ".join(task_name(t) for t in [failed[0], *same]))
                    detail = short = f"{names}: {error_brief(failed[0]['error'], limit=200)}"
                else:
                    same = []
                if len(failed) > 1 + len(same):
                    detail += f"  (+{len(failed) - 1 - len(same)} more failed)"
            elif record["status"] == "error" and record["errors"]:
                detail = error_brief(record["errors"][0], limit=200)
            elif record["status"] == "interrupted" and record["interrupts"]:
                first = record["interrupts"][0]
                # The id first: it is what Command(resume={id: ...}) needs, and a cut
                # would make it useless.
                keep = f"waiting {first['id']}: " if first["id"] else "waiting: "
                detail = brief(first["value"], limit=200)
            elif record["checkpoint_id"] is None:
                subgraphs = [n for n in record["namespaces"] if n]
                detail = f"no root checkpoint; only subgraph namespaces ({len(subgraphs)})"
            keep, detail, short = clean_line(keep), clean_line(detail), clean_line(short)
            updated = short_time(record["updated_at"], local)
            if fitted and updated.startswith(now):
                updated = updated[11:]
            cells = [
                thread_cell(record["thread_id"]),
                record["status"],
                "" if record["step"] is None else str(record["step"]),
                clean_line(record["source"] or ""),
                str(record["checkpoints"]),
                str(record["pending_writes"]),
                str(len([n for n in record["namespaces"] if n])),
                updated,
                "" if record["size"] is None else human_size(record["size"]),
            ]
            measured = measured or record["size"] is not None
            count += 1
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], cell_width(cell))
            widest = max(widest, cell_width(keep) + cell_width(detail))
            if len(sources) < 2:
                sources.add(cells[at["SOURCE"]])
            for header in nonzero:
                nonzero[header] = nonzero[header] or cells[at[header]] != "0"
            batch.append("\0".join([record["status"], keep, detail, short, *cells]) + "\n")
            if len(batch) == 1024:
                spool.write("".join(batch))
                batch.clear()
        spool.write("".join(batch))
        if not count:
            return
        says_nothing = {"SOURCE": count > 1 and len(sources) == 1}
        says_nothing |= {h: not seen for h, seen in nonzero.items()}
        shown = [i for i in range(len(headers)) if measured or headers[i] != "SIZE"]
        if fitted:
            shown = [i for i in shown if not says_nothing.get(headers[i], False)]
        headers[at["UPDATED"]] = f"UPDATED ({zone_label(local)})"
        full_widths = [max(cell_width(h), w) for h, w in zip(headers, widths, strict=True)]
        dropped: list[str] = []  # for the width, which the table then says
        if fitted:
            # Still too narrow for a useful detail: the least telling columns go first.
            want = min(DETAIL_ROOM, max(widest, len("NEXT / DETAIL")))
            for header in DROP_ORDER:
                if header == "SIZE" and measured:
                    continue  # asked for (--size)
                if output.columns() - sum(full_widths[i] + 2 for i in shown) >= want:
                    break
                if any(headers[i] == header for i in shown):
                    dropped.append(header)
                shown = [i for i in shown if headers[i] != header]
        headers = [headers[i] for i in shown]
        widths = [full_widths[i] for i in shown]
        colour = output.colour
        used = sum(widths) + 2 * len(widths)
        # On a terminal (or with COLUMNS set) the detail is fitted to the width; into a pipe
        # or a file, lines stay whole.
        room = max(output.columns() - used, 16) if fitted else 10**9
        # A detail that would lose what the user needs (an interrupt id, a task's error) goes
        # on lines of its own under the row, indented under STATUS.
        indent = widths[0] + 2 if output.columns() - widths[0] - 2 >= 40 else 4
        below = max(output.columns() - indent, 16)

        def paint(text: str, style: str) -> str:
            return ansi_paint(text, style, colour=colour)

        def fitted_detail(keep: str, rest: str, short: str, error: bool) -> list[str]:
            """The detail on the row, and the lines under the row it takes (if any)."""
            if cell_width(keep + rest) <= room:
                return [keep + rest]
            if short and cell_width(keep + short) <= room:
                return [keep + short]  # a failed task's error before its input
            if (keep and cell_width(keep) + 12 <= room) or (not keep and not error):
                return [keep + cut(rest, False, max(room - cell_width(keep), 12))]
            if error and room >= 20:  # an error of two lines wraps in its column
                column = wrap_text(short or rest, room, room)
                if len(column) <= 2:
                    return [column[0], *(" " * used + text for text in column[1:])]
            if error:  # whole, under the row, over as many lines as it takes
                lines = wrapped(rest if cell_width(rest) <= below else short or rest)
            elif cell_width(keep) + 12 <= below:  # the interrupt id, then its value
                lines = [keep + cut(rest, False, below - cell_width(keep))]
            else:
                lines = [*wrapped(keep.rstrip()), cut(rest, False, below)]
            return ["", *(" " * indent + text for text in lines)]

        def wrapped(text: str) -> list[str]:
            return wrap_text(text, below, below)

        def line(
            cells: list[str],
            detail: tuple[str, str],
            status_style: str,
            short: str = "",
            error: bool = False,
        ) -> str:
            padded = [
                c.rjust(w) if h in right else c + " " * (w - cell_width(c))
                for c, w, h in zip(cells, widths, headers, strict=True)
            ]
            padded[1] = paint(padded[1], status_style)
            first, *under = fitted_detail(*detail, short, error)
            lines = [("  ".join(padded) + "  " + first).rstrip(), *under]
            return "\n".join(lines) + "\n"

        yield paint(line(headers, ("", "NEXT / DETAIL"), "").rstrip("\n"), "bold") + "\n"
        spool.seek(0)
        for row in spool:
            status, keep, detail, short, *cells = row[:-1].split("\0")
            yield line(
                [cells[i] for i in shown],
                (keep, detail),
                STATUS_STYLE.get(status, ""),
                short,
                error=status == "error",
            )
        # Never silently: the columns that say one thing on every row, and those left out
        # for the width (issue 46 §3).
        notes = []
        if fitted and count > 1:
            every = {"SOURCE": next(iter(sources), ""), "PENDING": "0", "NS": "0"}
            alike = [f"{h} {every[h]}" for h in every if says_nothing.get(h) and every[h]]
            if alike:
                notes.append(", ".join(alike) + " on every row")
        if dropped:
            left_out = ", ".join(sorted(dropped, key=("SOURCE", "PENDING", "NS", "SIZE").index))
            notes.append(f"{left_out} left out at {output.columns()} columns; --json has all")
        if notes:
            for text in wrap_text(f"({'; '.join(notes)})", output.columns(), output.columns()):
                yield paint(text, "dim") + "\n"


# -- trees ----------------------------------------------------------------------------------------

Runs = list[tuple[str, str]]  # a line of text as (text, style) pieces; style as Rich spells it


@dataclass(slots=True)
class TreeNode:
    """One line of a tree, and the lines under it."""

    label: Runs
    children: list[TreeNode] = field(default_factory=list)

    def add(self, label: Runs) -> TreeNode:
        child = TreeNode(label)
        self.children.append(child)
        return child


_CODES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


def tree_lines(root: TreeNode, output: Output) -> Iterator[str]:
    """A tree drawn by hand, line by line (`ckpt history`): a 20,000-wide fork or a
    10,000-long chain costs what its text costs, and no recursion is involved. On a
    terminal (or with COLUMNS) long labels wrap under their guide; into a pipe they do not.
    """
    width = output.columns() if output.wraps else 0
    colour = output.colour
    guide_style = "dim"

    def paint(runs: Runs) -> str:
        if not colour:
            return "".join(text for text, _ in runs)
        out = []
        for text, style in runs:
            codes = ";".join(_CODES[w] for w in style.split() if w in _CODES)
            out.append(f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text)
        return "".join(out)

    def emit(prefix: str, more: str, runs: Runs) -> Iterator[str]:
        cleaned = [(clean_line(t), s) for t, s in runs]
        # Guides are box-drawing characters and spaces, one column each: len() is their
        # width, where a per-character look-up costs seconds on guides 12,000 columns wide.
        room, rest = (width - len(prefix), width - len(more)) if width else (0, 0)
        lines = _wrap(cleaned, room, rest) if rest >= 20 else [cleaned]
        for i, line in enumerate(lines):
            guide = prefix if i == 0 else more
            yield strip_trailing(paint([(guide, guide_style), *line])) + "\n"

    yield from emit("", "", root.label)
    # (node, prefix of its own line, prefix of the lines under it)
    stack: list[tuple[TreeNode, str, str]] = []
    for i, child in reversed(list(enumerate(root.children))):
        last = i == len(root.children) - 1
        stack.append((child, "└── " if last else "├── ", "    " if last else "│   "))
    while stack:
        node, prefix, under = stack.pop()
        more = under + ("│   " if node.children else "    ")
        yield from emit(prefix, more, node.label)
        count = len(node.children)
        for i in range(count - 1, -1, -1):
            last = i == count - 1
            stack.append(
                (
                    node.children[i],
                    under + ("└── " if last else "├── "),
                    under + ("    " if last else "│   "),
                )
            )


def wrap_text(text: str, room: int, rest: int) -> list[str]:
    """Plain text cut into lines of at most `room` columns (`rest` after the first), at a
    space where one is near; no line ends in a space."""
    return ["".join(t for t, _ in line).rstrip(" ") for line in _wrap([(text, "")], room, rest)]


def _wrap(runs: Runs, room: int, rest: int) -> list[Runs]:
    """Styled runs cut into lines of at most `room` columns (`rest` after the first), at a
    space where one is near."""
    plain = "".join(t for t, _ in runs)
    if cell_width(plain) <= room:
        return [runs]
    breaks: list[int] = []  # character offsets where a new line starts
    start, column, last_space = 0, 0, -1
    for i, ch in enumerate(plain):
        w = 2 if not ch.isascii() and cell_width(ch) == 2 else 1
        if column + w > room:
            cut_at = last_space + 1 if last_space > start else i
            breaks.append(cut_at)
            start, last_space, room = cut_at, -1, rest
            column = cell_width(plain[cut_at : i + 1])
            if ch == " ":
                last_space = i
            continue
        if ch == " ":
            last_space = i
        column += w
    lines: list[Runs] = [[]]
    offset = 0
    bounds = [*breaks, len(plain) + 1]
    current = 0
    for text, style in runs:
        while text:
            end = bounds[current] - offset
            if end >= len(text):
                lines[-1].append((text, style))
                offset += len(text)
                break
            if end > 0:
                lines[-1].append((text[:end], style))
            text, offset = text[end:], offset + end
            current += 1
            lines.append([])
    return [
        [(t.lstrip(" ") if j == 0 and n else t, s) for j, (t, s) in enumerate(line)]
        for n, line in enumerate(lines)
    ]
