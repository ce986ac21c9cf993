"""The human view of `ckpt types`: the classes a store names, its serde tags, and the
allowlist to paste. Takes the TypesRecord (ckpt.records.types) and returns a Rich renderable;
nothing is computed here."""

from __future__ import annotations

import json

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.analysis.selector import short_id
from ckpt.decoders.safe_types import status_words
from ckpt.records.types import TypesRecord, TypeUseRecord
from ckpt.render.human import Hanging
from ckpt.render.output import Output
from ckpt.render.text import cell_width, clean_line, counted

_STATUS_STYLE = {
    "blocked": "bold red",
    "allowlist": "bold yellow",
    "langchain": "yellow",
    "ungated": "cyan",
    "safe": "green",
}
_WHERE_SHOWN = 3  # channel names listed per type before "+N"


def _boxed(output: Output) -> box.Box | None:
    return box.SIMPLE_HEAD if output.terminal else None


def types_view(record: TypesRecord, output: Output) -> RenderableType:
    parts: list[RenderableType] = [_header(record), Text()]
    parts += [_tags_table(record, output), Text()]
    if record["types"]:
        parts += [_types_table(record, output), Hanging(_legend(record)), Text()]
    else:
        parts += [Text("No class is named by the values read."), Text()]
    if record["pickle"]["values"]:
        parts += [_pickle_table(record, output), Text()]
    degrade = record["would_degrade"]
    if degrade:
        parts += [Text("Would degrade under strict mode", style="bold")]
        for item in degrade:
            path = f"{item['module']}.{item['name']}" if item["module"] else item["name"]
            if item["method"]:
                path += f".{item['method']}()"
            fix = "" if item["fixed_by_allowlist"] else "  (blocked whatever the allowlist)"
            parts.append(Text(f"  {item['count']:>8,}  {path} -> {item['becomes']}{fix}"))
        parts.append(Text())
    parts += _allowlist(record)
    notes = _notes(record)
    if notes:
        parts += [Text(), *notes]
    return Group(*parts)


def _header(record: TypesRecord) -> Text:
    store, scanned = record["store"], record["scanned"]
    text = Text()
    text.append(f"{store['location']}", style="bold")
    text.append(f"  {store['kind']}, era {store['era']}")
    if store["era_note"]:
        text.append(f" ({store['era_note']})", style="dim")
    text.append("\n")
    text.append(
        f"{counted(scanned['threads'], 'thread')}, "
        f"{counted(scanned['checkpoints'], 'checkpoint')}, "
        f"{counted(scanned['blobs'], 'blob')}, {counted(scanned['writes'], 'write')}: "
        f"{counted(scanned['values'], 'serialized value')} read"
    )
    versions = ", ".join(
        f"v{v['v']}: {v['checkpoints']:,}"
        if v["v"] is not None
        else f"unread: {v['checkpoints']:,}"
        for v in record["checkpoint_versions"]
    )
    if versions:
        text.append(f"\ncheckpoint format versions: {versions}")
    text.append(f"\nstatuses follow LangGraph's safe list of {record['safe_list']}", style="dim")
    return text


def _tags_table(record: TypesRecord, output: Output) -> Table:
    table = Table(box=_boxed(output), header_style="bold", pad_edge=False, title_justify="left")
    table.title = "Serde tags"
    for column in ("TAG", "PART", "PLAIN", "ENCRYPTED"):
        table.add_column(column, justify="right" if column in ("PLAIN", "ENCRYPTED") else "left")
    for tag in record["tags"]:
        name = tag["tag"] if tag["tag"] is not None else "(untyped)"
        encrypted = f"{tag['encrypted']:,}"
        if tag["ciphers"]:
            encrypted += " +" + "+".join(tag["ciphers"])
        table.add_row(name, tag["part"], f"{tag['plain']:,}", encrypted)
    return table


_TYPE_COLUMNS = ("CLASS", "STATUS", "STORED AS", "COUNT", "THREADS", "WHERE", "EXAMPLE")
_WRAPPED = ("WHERE", "EXAMPLE")  # the columns that give way when the line is narrow


def _types_table(record: TypesRecord, output: Output) -> RenderableType:
    """A row per class, the class name always whole: it is what the allowlist needs. When
    the width does not hold every column, WHERE and EXAMPLE wrap in their columns; when it
    does not hold the class names and the other columns even so, each class name goes on a
    line of its own with its columns under it (`_stacked`)."""
    rows = [_type_cells(item) for item in record["types"]]
    table = _types_rows(rows, output)
    if not output.wraps:
        return table  # into a pipe: one line a class, however long
    from rich.measure import Measurement

    console = output.console()
    width = output.columns()
    unlimited = console.options.update_width(1 << 20)
    natural = Measurement.get(console, unlimited, table).maximum
    if natural <= width:
        return table
    widths = [
        max(cell_width(column), *(cell_width(_plain(row[i])) for row in rows))
        for i, column in enumerate(_TYPE_COLUMNS)
    ]
    overhead = natural - sum(widths)
    fixed = sum(w for w, c in zip(widths, _TYPE_COLUMNS, strict=True) if c not in _WRAPPED)
    room = width - overhead - fixed  # for WHERE and EXAMPLE together
    least = [
        max(
            cell_width(column),
            *(cell_width(word) for row in rows for word in _plain(row[i]).split()),
        )
        for i, column in enumerate(_TYPE_COLUMNS)
    ]
    where, example = _TYPE_COLUMNS.index("WHERE"), _TYPE_COLUMNS.index("EXAMPLE")
    if least[where] + least[example] > room:
        return _stacked(rows, output)
    example_width = max(least[example], min(widths[example], room - widths[where]))
    where_width = min(widths[where], room - example_width)
    return _types_rows(rows, output, {"WHERE": where_width, "EXAMPLE": example_width})


TypeRow = tuple[str, Text, str, str, str, str, str]


def _type_cells(item: TypeUseRecord) -> TypeRow:
    return (
        _class_name(item),
        Text(item["status"], style=_STATUS_STYLE.get(item["status"], "")),
        _stored_as(item),
        f"{item['count']:,}",
        f"{item['threads']:,}",
        _where(item["channels"], item["writes"], item["elsewhere"]),
        _example(item),
    )


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _types_rows(rows: list[TypeRow], output: Output, widths: dict[str, int] | None = None) -> Table:
    table = Table(box=_boxed(output), header_style="bold", pad_edge=False, title_justify="left")
    table.title = "Classes named by stored values"
    for column in _TYPE_COLUMNS:
        table.add_column(
            column,
            justify="right" if column in ("COUNT", "THREADS") else "left",
            no_wrap=widths is not None and column not in _WRAPPED,
            width=(widths or {}).get(column),
        )
    for row in rows:
        table.add_row(*row)
    return table


def _stacked(rows: list[TypeRow], output: Output) -> RenderableType:
    """Each class name on a line of its own, its other columns on the line under it."""
    columns = _TYPE_COLUMNS[1:]
    widths = [
        max(cell_width(column), *(cell_width(_plain(row[i + 1])) for row in rows))
        for i, column in enumerate(columns)
    ]

    def line(cells: tuple[str | Text, ...]) -> Text:
        text = Text("  ")
        for i, (cell, width, column) in enumerate(zip(cells, widths, columns, strict=True)):
            pad = " " * (width - cell_width(_plain(cell)))
            if i:
                text.append("  ")
            if column in ("COUNT", "THREADS"):
                text.append(pad)
            text.append(cell)
            if column not in ("COUNT", "THREADS"):
                text.append(pad)
        text.rstrip()
        return text

    header = line(columns)
    header.stylize("bold")
    parts: list[RenderableType] = [
        Text("Classes named by stored values", style="table.title"),
        Text("CLASS", style="bold"),
        Hanging(header),
    ]
    if output.terminal:
        parts.append(Text("─" * min(output.columns(), 2 + sum(widths) + 2 * (len(widths) - 1))))
    for row in rows:
        parts.append(Text(row[0]))
        parts.append(Hanging(line(row[1:])))
    return Group(*parts)


def _class_name(item: TypeUseRecord) -> str:
    path = f"{item['module']}.{item['name']}" if item["module"] else item["name"]
    return f"{path}.{item['method']}()" if item["method"] else path


def _stored_as(item: TypeUseRecord) -> str:
    if item["serde"] == "json":
        return f"json lc:{item['lc']}"
    return "ext " + ",".join(str(code) for code in item["ext"])


def _where(channels: list[str], writes: list[str], elsewhere: list[str]) -> str:
    names = [*channels, *(f"write:{w}" for w in writes if w not in channels), *elsewhere]
    shown = ", ".join(names[:_WHERE_SHOWN])
    return shown + (f" +{len(names) - _WHERE_SHOWN}" if len(names) > _WHERE_SHOWN else "")


def _example(item: TypeUseRecord) -> str:
    example = item["example"]
    where = clean_line(example["thread_id"])
    if example["checkpoint_id"]:
        where += f" {short_id(example['checkpoint_id'])}"
    return where


def _legend(record: TypesRecord) -> Text:
    words = status_words()
    shown = dict.fromkeys(t["status"] for t in record["types"])
    text = Text()
    for status in shown:
        text.append(f"  {status}", style=_STATUS_STYLE.get(status, ""))
        text.append(f": {words[status]}\n", style="dim")
    text.rstrip()
    return text


def _pickle_table(record: TypesRecord, output: Output) -> Table:
    table = Table(box=_boxed(output), header_style="bold", pad_edge=False, title_justify="left")
    table.title = (
        f"Pickled values ({record['pickle']['values']:,}): they load only with "
        "pickle_fallback=True, and loading runs these imports"
    )
    for column in ("GLOBAL", "COUNT", "THREADS", "WHERE"):
        table.add_column(column, justify="right" if column in ("COUNT", "THREADS") else "left")
    for item in record["pickle"]["globals"]:
        table.add_row(
            item["name"],
            f"{item['count']:,}",
            f"{item['threads']:,}",
            _where(item["channels"], item["writes"], item["elsewhere"]),
        )
    return table


def _allowlist(record: TypesRecord) -> list[RenderableType]:
    allowlist = record["allowlist"]
    lines: list[RenderableType] = [
        Text("Allowlist for JsonPlusSerializer(...) / saver.with_allowlist(...)", style="bold"),
        Text(allowlist["python"]),
        Text(),
        Text('langgraph.json ("checkpointer" > "serde")', style="bold"),
        Text(_json_snippet(allowlist["langgraph_json"])),
    ]
    hidden = record["encryption"]["hidden"]
    if hidden:
        lines.insert(
            0,
            Text(
                f"incomplete: {hidden:,} encrypted value(s) were not read (see the note below)",
                style="bold yellow",
            ),
        )
    return lines


def _json_snippet(value: object, indent: str = "") -> str:
    """JSON as people write langgraph.json: nested objects indented, each [module, name]
    pair on one line."""
    if isinstance(value, dict) and value:
        inner = indent + "  "
        items = [
            f"{inner}{json.dumps(key)}: {_json_snippet(item, inner)}" for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value and all(isinstance(item, list) for item in value):
        inner = indent + "  "
        rows = [f"{inner}{json.dumps(item, ensure_ascii=False)}" for item in value]
        return "[\n" + ",\n".join(rows) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)


def _notes(record: TypesRecord) -> list[RenderableType]:
    notes: list[RenderableType] = []
    encryption = record["encryption"]
    if encryption["note"]:
        notes.append(Text(f"note: {encryption['note']}", style="yellow"))
    undecodable = record["scanned"]["undecodable"]
    if undecodable:
        first = record["undecodable"][0]
        notes.append(
            Text(
                f"note: {undecodable:,} value(s) did not decode (first: {first['part']} of "
                f"thread {clean_line(first['thread_id'])}: {first['error']}); "
                "their classes are not counted",
                style="yellow",
            )
        )
    lost = [e for e in record["ext_codes"] if e["code"] > 7]
    for entry in lost:
        notes.append(
            Text(
                f"note: {entry['count']:,} ext value(s) of unknown code {entry['code']}: "
                "LangGraph loads them as None",
                style="yellow",
            )
        )
    malformed = sum(e["malformed"] for e in record["ext_codes"])
    if malformed:
        notes.append(
            Text(
                f"note: {malformed:,} ext payload(s) are not of their code's layout: LangGraph "
                "gives their raw data or None",
                style="yellow",
            )
        )
    return notes
