"""`ckpt copy` for people: a row per thread (what it carries, or why it is left), then what
the whole copy did or would do."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ckpt.records.runs import CopyHead, CopyThreadRecord, CopyTotals
from ckpt.render.output import Output
from ckpt.render.plain import ansi_paint, wrap_text
from ckpt.render.text import cell_width, clean_line, human_size, thread_cell

_ACTIONS = {
    "copy": ("copy", "copied"),
    "replace": ("replace", "replaced"),
    "skip": ("skip (on target)", "skipped (on target)"),
    "conflict": ("CONFLICT: on target", "CONFLICT: on target"),
    "refused": ("refused", "refused"),
}


def copy_lines(
    head: CopyHead,
    records: Iterable[CopyThreadRecord],
    totals_of: Callable[[], CopyTotals],
    output: Output,
) -> Iterator[str]:
    """The plan (or what was done) as aligned text lines, then the totals and what to do:
    the threads are read first (rows of six short cells each), then laid out."""
    applied = head["applied"]
    headers = ["THREAD", "CHECKPOINTS", "WRITES", "BLOBS", "SIZE", "ACTION"]
    rows: list[list[str]] = []
    refusals: list[str] = []
    reencoded = 0
    for thread in records:
        if thread.get("reencoded") and thread["action"] in ("copy", "replace"):
            reencoded += 1
        name = thread_cell(thread["thread_id"])
        if thread["to"] != thread["thread_id"]:
            name += f" -> {clean_line(thread['to'])}"
        action = _ACTIONS[thread["action"]][1 if applied else 0]
        rows.append(
            [
                name,
                f"{thread['checkpoints']:,}",
                f"{thread['writes']:,}",
                f"{thread['blobs']:,}",
                human_size(thread["bytes"]),
                action,
            ]
        )
        if thread["refused"]:
            refusals.append(f"refused {clean_line(thread['thread_id'])}: "
                            f"{clean_line(thread['refused'])}")  # fmt: skip
    widths = [
        max([cell_width(h)] + [cell_width(r[i]) for r in rows]) for i, h in enumerate(headers)
    ]

    def line(cells: list[str]) -> str:
        parts = [
            cell.ljust(widths[i]) if i in (0, 5) else cell.rjust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip() + "\n"

    def paint(text: str, style: str) -> str:
        return ansi_paint(text, style, colour=output.colour)

    def fit(text: str) -> Iterator[str]:
        """A line of the plan's end, wrapped at the terminal's width (and whole into a
        pipe), its further lines indented."""
        if not output.wraps:
            yield text + "\n"
            return
        width = output.columns()
        first, *more = wrap_text(text, width, width - 2)
        yield first + "\n"
        yield from ("  " + t + "\n" for t in more)

    if rows:
        yield paint(line(headers).rstrip("\n"), "bold") + "\n"
        yield from (line(r) for r in rows)
    for text in refusals:
        yield paint(text, "yellow") + "\n"
    totals = totals_of()
    target = head["target"]
    where = clean_line(target["location"])
    if target["state"] == "new" and not applied:
        where += " (created with the saver's schema on --apply)"
    verb = "copied" if applied else "would copy"
    threads = "thread" if totals["threads"] == 1 else "threads"
    summary = (
        f"{verb} {totals['threads']:,} {threads} ({totals['checkpoints']:,} checkpoints, "
        f"{totals['writes']:,} writes, {totals['blobs']:,} blobs, "
        f"{human_size(totals['bytes'])}) into {where}"
    )
    extra = [
        f"{totals['skipped']:,} skipped" if totals["skipped"] else "",
        f"{totals['refused']:,} refused" if totals["refused"] else "",
    ]
    summary += "".join(f"; {e}" for e in extra if e)
    yield from fit(summary)
    if reencoded:  # the values are new bytes: LangGraph reads them as the source's
        noun = "thread" if reencoded == 1 else "threads"
        yield f"{reencoded:,} {noun} re-encoded from RedisSaver's JSON, not byte for byte\n"
    if (redaction := head["redaction"]) is not None:
        kept = [f"key {clean_line(k)}" for k in redaction["keep_keys"]]
        kept += ["error type names"] if redaction["keep_errors"] else []
        yield (
            ("redacted" if applied else "redacts")
            + ": every string and bytes value replaced by a placeholder of the same length "
            "and shape; structure, ids, types, tool and node names kept"
            + "".join(f", {k}" for k in kept)
            + "\n"
        )
    conflicts = totals["conflicts"]
    if conflicts:
        those = "thread is" if conflicts == 1 else "threads are"
        yield from (
            paint(t.rstrip("\n"), "yellow") + "\n"
            for t in fit(
                f"{conflicts:,} {those} already on the target: --apply would stop and copy "
                f"nothing; pass --on-conflict skip (copies the other {totals['threads']:,}) "
                "or replace"
            )
        )
    elif not applied and totals["threads"]:
        yield "nothing changed: run again with --apply to copy\n"
