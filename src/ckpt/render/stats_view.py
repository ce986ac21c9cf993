"""`ckpt stats` for people: where the bytes go, how the biggest threads grow, what a prune
would give back and what looks wrong. Takes a StatsRecord (ckpt.records.types), returns a Rich
renderable; every figure comes from the record."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.records.types import FilePagesRecord, GrowthRecord, HealthRecord, StatsRecord
from ckpt.render.check_view import FixLine, findings_view
from ckpt.render.human import Hanging, _boxed
from ckpt.render.output import Output
from ckpt.render.text import clean_line, human_size, short_name, thread_cell

BARS = "▁▂▃▄▅▆▇█"
CHART_WIDTH = 60


def stats_view(record: StatsRecord, output: Output, *, fix_line: FixLine) -> RenderableType:
    """Print it with `Output.show(..., crop=False)`: a fix is one line at any width."""
    parts: list[RenderableType] = [_summary(record)]
    totals = record["totals"]
    if not totals["checkpoints"] and not totals["writes"]:
        parts.append(Text("no checkpoints selected", style="dim"))
        return Group(*parts)
    parts += _sections(record, output, fix_line)
    return Group(*parts)


def _summary(record: StatsRecord) -> RenderableType:
    totals = record["totals"]
    storage = record["storage"]
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    store = record["store"]
    table.add_row("store", f"{store['location']} ({store['kind']})")
    # Each part the store has (the others are null): a file and its pages, tables, a
    # server, collections, files of a folder.
    if storage["file_bytes"] is not None:
        table.add_row("file", _pages(storage))
    for info in storage["tables"] or []:
        # TOAST and the heap are Postgres's words; MySQL and DynamoDB have data and indexes.
        toast = info["toast_bytes"]
        parts = [
            f"{'heap' if toast is not None else 'data'} {human_size(info['table_bytes'])}",
            f"indexes {human_size(info['index_bytes'])}",
        ]
        if toast is not None:
            parts.append(f"TOAST {human_size(toast)}")
        table.add_row(
            "table",
            f"{info['table']}: {human_size(info['total_bytes'])} ({', '.join(parts)})",
        )
    server = storage["server"]
    if server is not None:
        table.add_row(
            "server",
            f"{server['product']} {server['version']}: {server['keys']:,} keys, "
            f"{human_size(server['used_memory_bytes'])} used"
            + (f" ({server['note']})" if server["note"] else ""),
        )
        table.add_row(
            "keys",
            ", ".join(
                f"{name}: {count:,}" + (" (not the saver's: not read)" if name == "other" else "")
                for name, count in server["key_families"].items()
            ),
        )
    for collection in storage["collections"] or []:
        table.add_row(
            "collection",
            f"{storage['database']}.{collection['collection']}: "
            f"{collection['documents']:,} documents, {human_size(collection['bytes'])} "
            f"(stored {human_size(collection['storage_bytes'])})",
        )
    if storage["other_collections"]:
        table.add_row(
            "other",
            f"{', '.join(storage['other_collections'])} (not the saver's collections: not read)",
        )
    for file_info in storage["files"] or []:
        table.add_row("file", f"{file_info['file']}: {human_size(file_info['bytes'])}")
    selection = record["selection"]
    if selection["thread_ids"] or selection["checkpoint_ns"] is not None:
        chosen = ", ".join(selection["thread_ids"]) or "all threads"
        if selection["checkpoint_ns"] is not None:
            chosen += f", namespace {short_name(selection['checkpoint_ns']) or '(root)'}"
        table.add_row("selected", chosen)
    table.add_row(
        "rows",
        f"{_n(totals['threads'], 'thread')} · {_n(totals['checkpoints'], 'checkpoint')} · "
        + (f"{_n(totals['blobs'], 'blob')} · " if totals["blobs"] else "")
        + f"{_n(totals['writes'], 'write')} · {human_size(totals['bytes'])}",
    )
    parts = [
        f"values {human_size(totals['value_bytes'])}"
        + (" (inline)" if totals["inline_value_bytes"] else ""),
        f"bodies {human_size(totals['body_bytes'])}",
        f"metadata {human_size(totals['metadata_bytes'])}",
        f"writes {human_size(totals['write_bytes'])}",
    ]
    table.add_row("bytes", " · ".join(parts))
    unmeasured = totals["unmeasured_bodies"]
    if unmeasured["checkpoints"]:
        why = (
            "encrypted: pass --aes-key to split them by channel"
            if unmeasured["encrypted"] == unmeasured["checkpoints"]
            else "encrypted or not readable as msgpack/JSON"
        )
        table.add_row(
            "",
            Text(
                f"{unmeasured['checkpoints']:,} bodies ({human_size(unmeasured['bytes'])}) "
                f"counted whole: {why}",
                style="yellow",
            ),
        )
    return table


def _pages(pages: FilePagesRecord) -> str:
    """`12 MB: 3,000 pages of 4 KB, 12 free (48 KB VACUUM would give back); WAL 1 MB`: a
    file's part of the record, whose fields come together."""
    wal = pages["wal_bytes"] or 0
    return (
        f"{human_size(pages['file_bytes'] or 0)}: {pages['pages'] or 0:,} pages of "
        f"{human_size(pages['page_size'] or 0)}, {pages['free_pages'] or 0:,} free "
        f"({human_size(pages['free_bytes'] or 0)} VACUUM would give back)"
        + (f"; WAL {human_size(wal)}" if wal else "")
    )


def _sections(record: StatsRecord, output: Output, fix_line: FixLine) -> list[RenderableType]:
    total = record["totals"]["bytes"]
    parts: list[RenderableType] = []
    boxed = _boxed(output)

    def section(title: str, columns: list[tuple[str, str]], rows: list[list[Any]]) -> None:
        if not rows:
            return
        table = Table(box=boxed, header_style="bold", pad_edge=False, title_justify="left")
        for name, justify in columns:
            table.add_column(name, justify=justify, no_wrap=justify == "left")  # type: ignore[arg-type]
        for row in rows:
            table.add_row(*row)
        parts.append(Text(""))
        parts.append(Text(title, style="bold"))
        parts.append(table)

    def pct(share: float) -> str:
        return f"{100 * share:.1f}%"

    section(
        "Threads, largest first",
        [
            ("THREAD", "left"),
            ("CKPTS", "right"),
            ("WRITES", "right"),
            ("SIZE", "right"),
            ("SHARE", "right"),
            ("REPEATED", "right"),
        ],  # fmt: skip
        [
            [
                thread_cell(t["thread_id"]),
                f"{t['checkpoints']:,}",
                f"{t['writes']:,}",
                human_size(t["bytes"]),
                pct(t["share"]),
                pct(t["repeated_share"]),
            ]  # fmt: skip
            for t in record["threads"]
        ],
    )
    section(
        "Channel values by channel",
        [
            ("CHANNEL", "left"),
            ("SIZE", "right"),
            ("SHARE", "right"),
            ("STORED", "right"),
            ("THREADS", "right"),
            ("REPEATED", "right"),
        ],  # fmt: skip
        [
            [
                short_name(c["channel"]),
                human_size(c["bytes"]),
                pct(c["share"]),
                f"{c['stored']:,}",
                f"{c['threads']:,}",
                pct(c["repeated_share"]),
            ]  # fmt: skip
            for c in record["channels"]
        ],
    )
    if len(record["namespaces"]) > 1:
        section(
            "By subgraph (namespace without task ids)",
            [
                ("NAMESPACE", "left"),
                ("RUNS", "right"),
                ("CKPTS", "right"),
                ("SIZE", "right"),
                ("SHARE", "right"),
            ],  # fmt: skip
            [
                [
                    short_name(n["namespace"]) or "(root)",
                    f"{n['namespaces']:,}",
                    f"{n['checkpoints']:,}",
                    human_size(n["bytes"]),
                    pct(n["share"]),
                ]  # fmt: skip
                for n in record["namespaces"]
            ],
        )
    section(
        "Pending writes by channel",
        [("CHANNEL", "left"), ("WRITES", "right"), ("SIZE", "right"), ("SHARE", "right")],
        [
            [short_name(w["channel"]), f"{w['writes']:,}", human_size(w["bytes"]), pct(w["share"])]
            for w in record["write_channels"]
        ],
    )
    section(
        "Largest checkpoints (ckpt show ID)",
        [
            ("THREAD", "left"),
            ("NAMESPACE", "left"),
            ("CHECKPOINT", "left"),
            ("STEP", "right"),
            ("SIZE", "right"),
        ],  # fmt: skip
        [
            [
                thread_cell(c["thread_id"]),
                short_name(c["checkpoint_ns"]) or "(root)",
                c["checkpoint_id"],
                "" if c["step"] is None else str(c["step"]),
                human_size(c["bytes"]),
            ]  # fmt: skip
            for c in record["largest_checkpoints"]
        ],
    )
    for growth in record["growth"]:
        parts += _growth(growth)
    parts += _prune(record, total)
    parts += _health(record["health"], fix_line)
    return parts


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def sparkline(values: list[int], width: int = CHART_WIDTH) -> str:
    """Values as one line of block characters, resampled to at most `width`."""
    if not values:
        return ""
    if len(values) > width:
        stride = len(values) / width
        values = [max(values[int(i * stride) : int((i + 1) * stride)] or [0]) for i in range(width)]
    top = max(values) or 1
    return "".join(BARS[min(len(BARS) - 1, (v * (len(BARS) - 1)) // top)] for v in values)


def _growth(growth: GrowthRecord) -> list[RenderableType]:
    sizes = [p["bytes"] for p in growth["points"]]
    if len(sizes) < 2:
        return []
    line = Text()
    line.append(sparkline(sizes), style="cyan")
    line.append(
        f"  {human_size(growth['first_bytes'])} → {human_size(growth['last_bytes'])} "
        f"per checkpoint over {growth['checkpoints']:,} checkpoints"
        + (" (sampled)" if growth["sampled"] else "")
    )
    parts: list[RenderableType] = [
        Text(""),
        Text(f"Growth of {clean_line(growth['thread_id'])}: checkpoint size by step", style="bold"),
        line,
    ]
    if growth["shape"] == "growing":
        parts.append(
            Text(
                "checkpoints keep getting bigger: the thread grows with the square of its steps",
                style="yellow",
            )
        )
    if growth["statement"]:
        parts.append(Text(growth["statement"], style="yellow"))
    elif growth["repeated_bytes"]:
        parts.append(
            Text(
                f"{100 * growth['repeated_share']:.0f}% of this thread's bytes repeat values "
                "stored before them",
                style="dim",
            )
        )
    return parts


def _prune(record: StatsRecord, total: int) -> list[RenderableType]:
    lines: list[RenderableType] = [
        Text(""),
        Text("What a prune would give back (estimate)", style="bold"),
    ]
    for estimate in (record["prune"]["keep_latest"], record["prune"]["keep_last"]):
        name = "keep latest" if estimate["keep"] == 1 else f"keep last {estimate['keep']}"
        line = Text(f"{name:<14}", style="bold")
        line.append(
            f"frees {human_size(estimate['bytes'])} ({100 * estimate['share']:.1f}%): "
            f"{estimate['checkpoints']:,} checkpoints, {estimate['writes']:,} writes"
            + (f", {estimate['blobs']:,} blobs" if estimate["blobs"] else "")
        )
        lines.append(line)
    lines.append(
        Text(
            "of each thread and namespace; row sizes, before VACUUM. A real prune also keeps "
            "what resuming needs (the parent of an interrupted step, delta snapshots).",
            style="dim",
        )
    )
    return lines


def _health(health: HealthRecord, fix_line: FixLine) -> list[RenderableType]:
    """`ckpt check`'s findings (the same pass made them), then the delta channels."""
    lines: list[RenderableType] = [Text(""), Text("Health", style="bold")]
    if not health["findings"]:
        lines.append(Text("✓ nothing found: the store is whole", style="green"))
    lines += findings_view(health["findings"], fix_line=fix_line)
    if health["delta_channels"]:
        lines.append(Text(""))
    for delta in health["delta_channels"]:
        snapshot = delta["snapshot_checkpoint_id"] or "(none: replays from empty)"
        lines.append(
            Hanging(
                Text(
                    f"· delta channel {delta['channel']} of {clean_line(delta['thread_id'])}: "
                    f"snapshot at "
                    f"{snapshot}, {delta['writes_to_replay']:,} writes to replay"
                    + ("" if delta["complete"] else " (an ancestor is missing)"),
                    style="cyan" if delta["complete"] else "yellow",
                )
            )
        )
    return lines
