"""`ckpt migrate` for people: a row per thread (what changes, or why it cannot), the diff
of one checkpoint per thread, then what the whole migration did or would do."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ckpt.records.runs import MigrateHead, MigrateThreadRecord, MigrateTotals
from ckpt.render.output import Output
from ckpt.render.plain import ansi_paint
from ckpt.render.text import clean_line, thread_cell

_ACTIONS = {
    "migrate": ("migrate", "migrated"),
    "unchanged": ("unchanged", "unchanged"),
    "refused": ("refused", "refused"),
}


def migrate_lines(
    record: MigrateHead,
    records: Iterable[MigrateThreadRecord],
    totals_of: Callable[[], MigrateTotals],
    output: Output,
) -> Iterator[str]:
    """The steps, a thread at a time as the run goes, then the totals and what to do."""
    applied = record["applied"]

    def paint(text: str, style: str) -> str:
        return ansi_paint(text, style, colour=output.colour)

    steps = ", ".join(clean_line(s["name"]) for s in record["steps"])
    yield (
        f"steps: {steps}"
        + (" (newest checkpoint of each namespace)" if record["latest"] else "")
        + "\n"
    )
    for thread in records:
        action = _ACTIONS[thread["action"]][1 if applied else 0]
        name = thread_cell(thread["thread_id"])
        yield (
            paint(
                f"{name}: {action}: {thread['checkpoints']:,} checkpoints, "
                f"{thread['writes']:,} writes, {thread['blobs']:,} blobs",
                "bold",
            )
            + "\n"
        )
        if thread["refused"]:
            yield paint(f"  refused: {clean_line(thread['refused'])}", "yellow") + "\n"
        if thread["graph_error"]:
            text = f"  the new graph cannot load it: {clean_line(thread['graph_error'])}"
            yield paint(text, "red") + "\n"
        if thread["diff"] and not applied:
            for line in thread["diff"]:
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
                text = "  " + clean_line(line)
                yield (paint(text, style) if style else text) + "\n"
    totals = totals_of()
    verb = "migrated" if applied else "would migrate"
    threads = "thread" if totals["threads"] == 1 else "threads"
    yield (
        f"{verb} {totals['threads']:,} {threads} ({totals['checkpoints']:,} checkpoints, "
        f"{totals['writes']:,} writes, {totals['blobs']:,} blobs); "
        f"{totals['unchanged']:,} unchanged, {totals['refused']:,} refused\n"
    )
    if record["backup"]:
        backup, store = clean_line(record["backup"]), clean_line(record["store"]["location"])
        yield f"backup: {backup}\n"
        yield f"to restore it: ckpt copy {backup} {store} --all --on-conflict replace --apply\n"
    if not applied and totals["threads"] and not totals["refused"]:
        yield "nothing changed: run again with --apply to migrate\n"
