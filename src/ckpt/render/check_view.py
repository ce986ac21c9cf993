"""`ckpt check` for people: which saver wrote the store, then what is wrong with it, errors
first, each with where and the command that fixes it. Takes a CheckRecord (ckpt.records.types)
and returns a Rich renderable; every word comes from the record."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.records.types import CheckRecord, FindingRecord, PlaceRecord
from ckpt.render.human import Hanging
from ckpt.render.text import clean_line, human_size

SHOWN = 3  # places listed per finding (--json lists more)
_HEADINGS = {"error": "Errors", "warning": "Warnings", "info": "Notes"}
_MARKS = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("·", "dim")}


def check_view(record: CheckRecord) -> RenderableType:
    parts: list[RenderableType] = [_summary(record)]
    for severity in ("error", "warning", "info"):
        found = [f for f in record["findings"] if f["severity"] == severity]
        if not found:
            continue
        parts += [Text(""), Text(f"{_HEADINGS[severity]} ({len(found)})", style="bold")]
        for finding in found:
            parts += _finding(finding)
    parts += [Text(""), _verdict(record)]
    return Group(*parts)


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
        f"{scanned['threads']:,} threads · {scanned['checkpoints']:,} checkpoints · "
        f"{scanned['blobs']:,} blobs · {scanned['writes']:,} writes · "
        f"{scanned['values']:,} values decoded · {human_size(scanned['bytes'])}",
    )
    return table


def _finding(finding: FindingRecord) -> list[RenderableType]:
    mark, style = _MARKS[finding["severity"]]
    head = Text(f"{mark} {finding['code']}  ", style=f"bold {style}")
    head.append(f"{_counted(finding)}{finding['reason']}", style="")
    lines: list[RenderableType] = [Hanging(head, hang=4)]
    for where in finding["places"][:SHOWN]:
        lines.append(Hanging(Text("    " + _place(where)), hang=6))
    if len(finding["places"]) > SHOWN:
        lines.append(Text(f"    … --json lists {len(finding['places'])} places", style="dim"))
    if finding["fix"]:
        words = clean_line(finding["fix"]).split(" ")
        pieces = [Text("    fix:", style="cyan"), *(Text(w, style="cyan") for w in words)]
        lines.append(Hanging(pieces, hang=9, sep=" "))
    return lines


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


def _verdict(record: CheckRecord) -> Text:
    summary = record["summary"]
    if not any(summary.values()):
        return Text("✓ nothing found: the store is whole", style="green")
    said = ", ".join(
        f"{summary[s]} {word}{'s' * (summary[s] != 1)}"  # type: ignore[literal-required]
        for s, word in (("error", "error"), ("warning", "warning"), ("info", "note"))
        if summary[s]  # type: ignore[literal-required]
    )
    if summary["error"]:
        return Text(f"✗ {said}", style="bold red")
    return Text(f"✓ no errors ({said})", style="green")
