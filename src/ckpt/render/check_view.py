"""`ckpt check` for people: which saver wrote the store, then what is wrong with it, errors
first, each with where and the command that fixes it. Takes a CheckRecord (ckpt.records.types)
and returns a Rich renderable; every word comes from the record, but the fix's command
line, which the CLI words from the fix's data (`fix_line`). The health section of `ckpt
stats` lists its findings the same way (`findings_view`).

A fix is one line whatever the width: pasted, it runs what it says (a wrapped line would
leave `--apply` on a line of its own). Print the view with `Output.show(..., crop=False)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ckpt.records.types import (
    SEVERITIES,
    CheckRecord,
    FindingRecord,
    FindingSummaryRecord,
    FixRecord,
    PlaceRecord,
)
from ckpt.render.human import Hanging
from ckpt.render.text import clean_line, counted, human_size

SHOWN = 3  # places listed per finding (--json lists more)
THREADS_IN_A_FIX = 3  # threads a fix line names; more read THREAD
_HEADINGS = {"error": "Errors", "warning": "Warnings", "note": "Notes"}
_MARKS = {"error": ("✗", "red"), "warning": ("!", "yellow"), "note": ("·", "dim")}

FixLine = Callable[[FixRecord], str]


class Unwrapped:
    """One line of text that is never wrapped nor cut at the width (the terminal wraps it
    for the eye; a copy of it is still one line)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.text.render(console)
        yield Segment.line()


def check_view(
    record: CheckRecord, *, fix_line: FixLine, warnings_fail: bool = False
) -> RenderableType:
    """`warnings_fail`: the run fails on warnings too (`--fail-on warning`)."""
    parts: list[RenderableType] = [_summary(record)]
    parts += findings_view(record["findings"], fix_line=fix_line)
    parts += [Text(""), _verdict(record["summary"], warnings_fail=warnings_fail)]
    return Group(*parts)


def findings_view(findings: Sequence[FindingRecord], *, fix_line: FixLine) -> list[RenderableType]:
    """The findings by severity, errors first, under a heading each."""
    parts: list[RenderableType] = []
    for severity in ("error", "warning", "note"):
        found = [f for f in findings if f["severity"] == severity]
        if not found:
            continue
        parts += [Text(""), Text(f"{_HEADINGS[severity]} ({len(found)})", style="bold")]
        for finding in found:
            parts += _finding(finding, fix_line)
    return parts


def _summary(record: CheckRecord) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    store, saver, scanned = record["store"], record["saver"], record["scanned"]
    table.add_row("store", f"{clean_line(store['location'])} ({store['kind']})")
    evidence = f" ({'; '.join(saver['evidence'])})" if saver["evidence"] else ""
    table.add_row("saver", f"{saver['saver']}: {saver['releases']}{evidence}")
    for line in saver["formats"]:
        table.add_row("format", line)
    table.add_row("langgraph", f"{saver['langgraph']}: {saver['note']}")
    table.add_row(
        "read",
        " · ".join(
            counted(scanned[key], noun)  # type: ignore[literal-required]
            for key, noun in _SCANNED
        )
        + f" decoded · {human_size(scanned['bytes'])}",
    )
    return table


_SCANNED = (
    ("threads", "thread"),
    ("checkpoints", "checkpoint"),
    ("blobs", "blob"),
    ("writes", "write"),
    ("values", "value"),
)


def _finding(finding: FindingRecord, fix_line: FixLine) -> list[RenderableType]:
    mark, style = _MARKS[finding["severity"]]
    head = Text(f"{mark} {finding['code']}  ", style=f"bold {style}")
    head.append(f"{_counted(finding)}{finding['reason']}", style="")
    lines: list[RenderableType] = [Hanging(head, hang=4)]
    for where in finding["places"][:SHOWN]:
        lines.append(Hanging(Text("    " + _place(where)), hang=6))
    if len(finding["places"]) > SHOWN:
        lines.append(Text(f"    … --json lists {len(finding['places'])} places", style="dim"))
    fix = finding["fix"]
    if fix is not None and fix["applies"]:
        lines.append(Unwrapped(Text(f"    fix: {clean_line(fix_line(_brief(fix)))}", style="cyan")))
    elif fix is not None and fix["verb"] == "copy":
        lines.append(
            Hanging(
                Text(
                    "    fix: restore these threads from a backup (ckpt copy cannot write this "
                    "kind of store yet)",
                    style="dim",
                ),
                hang=9,
            )
        )
    return lines


def _brief(fix: FixRecord) -> FixRecord:
    """A fix naming at most THREADS_IN_A_FIX threads (more read THREAD): a line a person
    reads before pasting."""
    threads = fix["options"].get("threads")
    if not isinstance(threads, list) or len(threads) <= THREADS_IN_A_FIX:
        return fix
    return {
        **fix,
        "options": {**fix["options"], "threads": ["THREAD"]},
        "placeholders": [*fix["placeholders"], "THREAD"],
    }


def _counted(finding: FindingRecord) -> str:
    parts = []
    unit, count, threads = finding["unit"], finding["count"], finding["thread_count"]
    if unit != "store":
        parts.append(f"{count:,} {unit}{'s' * (count != 1)}")
    if threads and unit != "thread":
        parts.append(f"in {threads:,} thread{'s' * (threads != 1)}")
    if finding["bytes"]:
        parts.append(f"({human_size(finding['bytes'])})")
    return " ".join(parts) + ": " if parts else ""


def _place(where: PlaceRecord) -> str:
    parts = [clean_line(where["thread_id"])]
    if where["checkpoint_ns"]:
        parts.append(f"ns {clean_line(where['checkpoint_ns'])}")
    if where["checkpoint_id"]:
        parts.append(where["checkpoint_id"])
    if where["channel"] is not None:
        parts.append(f"channel {clean_line(where['channel'])}")
    if where["detail"]:
        parts.append(clean_line(where["detail"]))
    return "  ".join(parts)


def _verdict(summary: FindingSummaryRecord, *, warnings_fail: bool) -> Text:
    """The last line: ✓ only when the run passes (exit 0), ✗ whenever it fails."""
    if not any(summary.values()):
        return Text("✓ nothing found: the store is whole", style="green")
    said = ", ".join(f"{summary[s]} {s}{'s' * (summary[s] != 1)}" for s in SEVERITIES if summary[s])
    if summary["error"]:
        return Text(f"✗ {said}", style="bold red")
    if warnings_fail and summary["warning"]:
        return Text(f"✗ no errors, but {said}: --fail-on warning fails this run", style="bold red")
    return Text(f"✓ no errors ({said})", style="green")
