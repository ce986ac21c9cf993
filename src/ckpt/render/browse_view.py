"""The renderables of `ckpt browse`: thread rows, history rows, a checkpoint's tasks and
values, diffs and JSON, each made from records (ckpt.records.types) the way the CLI's views
make theirs. Like every view here, nothing computes status, `next` or tasks: the records
carry them, and the browser only chooses which view to show.

Where `ckpt show`, `ckpt history` and `ckpt diff` already draw a part, their own code
draws it here too (render/human.py, render/diffview.py), so the browser and the CLI
never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ckpt.analysis.changes import Change
from ckpt.analysis.messages import is_message
from ckpt.analysis.selector import short_id
from ckpt.records.model import ERROR, INTERRUPT, NULL_TASK_ID
from ckpt.records.types import CheckpointRecord, TaskRecord, ThreadRecord, WriteRecord
from ckpt.render import diffview, human
from ckpt.render.output import Output
from ckpt.render.plain import STATUS_STYLE
from ckpt.render.text import (
    brief,
    cell_width,
    clean_line,
    cut,
    error_brief,
    failure,
    human_size,
    short_time,
    thread_cell,
)

# A history line as `ckpt history` draws it (and its "ran:" part), and the channel values
# as `ckpt show --blobs` shows them: human.py keeps them private today; one name each
# here, so that the day they become public is a three-line change.
_history_label = human._node_label
_writes_brief = human._writes_brief
_channel_values = human._values_view

STATUS_MARK = {"error": "✗", "interrupted": "⏸", "pending": "…", "unknown": "?", "done": " "}
TASK_STATE_STYLE = {
    "done": "green",
    "failed": "bold red",
    "interrupted": "bold yellow",
    "to_run": "cyan",
}
MARKED_STYLE = "bold magenta"


def terminal_output(width: int | None = None) -> Output:
    """What the CLI's views are told about a terminal: boxes and colour on."""
    return Output(terminal=True, colour=True, width=width)


# -- threads ----------------------------------------------------------------------------------

# (header, width, right-aligned), added left to right while the pane has room.
_THREAD_COLUMNS = (
    ("STATUS", 11, False),
    ("STEP", 5, True),
    ("SIZE", 8, True),
    ("CKPTS", 6, True),
    ("UPDATED", 16, False),
)
_MIN_THREAD = 12  # columns the thread id keeps before any optional column is added


def _thread_layout(width: int, id_width: int) -> tuple[int, int]:
    """How many optional columns fit, and the width of the thread id column: the longest
    id when there is room, else what the columns leave."""
    room = width - 2  # the mark and a space
    shown = 0
    needed = min(max(id_width, _MIN_THREAD), 40)
    for _, column_width, _ in _THREAD_COLUMNS:
        if room - (column_width + 1) < needed:
            break
        room -= column_width + 1
        shown += 1
    return shown, max(min(room, max(id_width, len("THREAD"))), 4)


def thread_header(width: int, id_width: int) -> Text:
    shown, room = _thread_layout(width, id_width)
    text = Text("  " + "THREAD".ljust(room), style="bold")
    for name, column_width, right in _THREAD_COLUMNS[:shown]:
        text.append(" " + (name.rjust(column_width) if right else name.ljust(column_width)))
    return text


def thread_row(record: ThreadRecord, width: int, id_width: int) -> Text:
    """One thread as a line of the threads pane: the columns of `ckpt threads` that fit."""
    shown, room = _thread_layout(width, id_width)
    status = record["status"]
    style = STATUS_STYLE.get(status, "")
    text = Text(STATUS_MARK.get(status, " "), style=style)
    text.append(" ")
    thread_id = thread_cell(record["thread_id"])
    if cell_width(thread_id) > room:
        thread_id = thread_id[: max(room - 1, 1)] + "…"
    text.append(thread_id + " " * max(room - cell_width(thread_id), 0), style="bold")
    cells = [
        (status, style),
        ("" if record["step"] is None else str(record["step"]), ""),
        ("" if record["size"] is None else human_size(record["size"]), "dim"),
        (str(record["checkpoints"]), "dim"),
        (short_time(record["updated_at"])[:16], "dim"),
    ]
    for (cell, cell_style), (_, column_width, right) in zip(
        cells[:shown], _THREAD_COLUMNS[:shown], strict=True
    ):
        padded = cell.rjust(column_width) if right else cell.ljust(column_width)
        text.append(" ")
        text.append(padded[:column_width], style=cell_style)
    return text


def thread_detail(record: ThreadRecord | None) -> Text:
    """Under the threads pane: what the highlighted thread waits on or failed with, and
    what is still to run (the detail column of `ckpt threads`)."""
    if record is None:
        return Text("no thread", style="dim")
    status = record["status"]
    text = Text(thread_cell(record["thread_id"]), style="bold")
    text.append(f"  {status}", style=STATUS_STYLE.get(status, ""))
    if record["step"] is not None:
        text.append(f"  step {record['step']}", style="dim")
    text.append(f"  {record['checkpoints']} checkpoints", style="dim")
    namespaces = [n for n in record["namespaces"] if n]
    if namespaces:
        plural = "s" if len(namespaces) != 1 else ""
        text.append(f"  {len(namespaces)} subgraph namespace{plural}", style="dim")
    if record["failed_tasks"]:
        for task in record["failed_tasks"][:3]:
            text.append("\nfailed: ", style="bold red")
            text.append(failure(task, limit=300), style="red")
    elif record["errors"]:
        text.append("\nerror: ", style="bold red")
        text.append(error_brief(record["errors"][0], limit=300), style="red")
    for interrupt in record["interrupts"][:3]:
        text.append("\nwaiting: ", style="bold yellow")
        text.append(brief(interrupt["value"], limit=200), style="yellow")
        if interrupt["id"]:
            text.append(f"  id={interrupt['id']}", style="dim")
    if record["next"]:
        text.append("\nnext: ", style="bold")
        text.append(", ".join(clean_line(n) for n in record["next"]))
    elif record["checkpoint_id"] is None:
        text.append("\nno root checkpoint; only subgraph namespaces", style="dim")
    return text


# -- history ----------------------------------------------------------------------------------


def checkpoint_mark(record: CheckpointRecord) -> tuple[str, str]:
    """The gutter mark of a history line: a task failed (✗) or waits on an interrupt (⏸);
    dim when it was retried or answered."""
    tasks = record["tasks"] or []
    if any(t["state"] == "failed" for t in tasks):
        return "✗", "bold red"
    if any(t["state"] == "interrupted" for t in tasks):
        return "⏸", "bold yellow"
    if "checkpoint" in record:  # the body could not be read
        return "!", "bold red"
    if any(t["error"] is not None for t in tasks):
        return "✗", "dim red"
    if record["interrupts"]:
        return "⏸", "dim yellow"
    return " ", ""


def history_row(prefix: str, record: CheckpointRecord, *, marked: bool) -> Text:
    """One checkpoint of the history pane: a mark, the tree's guides, and the line
    `ckpt history` prints for it."""
    mark, style = ("◆", MARKED_STYLE) if marked else checkpoint_mark(record)
    text = Text(mark, style=style)
    text.append(" ")
    text.append(prefix, style="dim")
    text.append_text(_history_line(record))
    return text


_RAN = "  ran: "


def _history_line(record: CheckpointRecord) -> Text:
    """The line `ckpt history` prints for a checkpoint (human.py draws it), its parts in
    the order that tells most in a pane narrower than the line: the id, step and source,
    then what ran after it, then what it updated, and its time last."""
    when = short_time(record["ts"])[11:]
    line = _history_label(record, "")
    # The id, step and source alone: the line of the same record with nothing updated,
    # no task and no write.
    bare = record.copy()
    bare["updated_channels"], bare["tasks"], bare["pending_writes"] = [], [], []
    bare.pop("checkpoint", None)
    head = _history_label(bare, "").plain
    ran = _writes_brief(record)
    ran_at = len(line) - (len(_RAN) + len(ran) if ran else 0)
    plain = line.plain
    if (
        not plain.startswith(head)
        or len(head) > ran_at
        or plain[ran_at:] != (_RAN + ran.plain if ran else "")
    ):
        return _history_label(record, when)  # not as expected: the CLI's line as it is
    text = line[: len(head)]
    text.append_text(line[ran_at:])
    text.append_text(line[len(head) : ran_at])
    if when:
        text.append(f"  {when}", style="dim")
    return text


def history_heading(prefix: str, kind: str, checkpoint_ns: str = "") -> Text:
    """A branch of the history tree: a fork, or a subgraph run with its namespace."""
    text = Text("  ")
    text.append(prefix, style="dim")
    if kind == "subgraph":
        text.append(f"subgraph {clean_line(checkpoint_ns)}", style="bold blue")
    else:
        text.append("fork", style="bold magenta")
    return text


# -- one checkpoint -----------------------------------------------------------------------------


def checkpoint_title(record: CheckpointRecord) -> Text:
    metadata = record["metadata"] if isinstance(record["metadata"], dict) else {}
    step, source = metadata.get("step"), metadata.get("source")
    text = Text(short_id(record["checkpoint_id"]), style="bold yellow")
    text.append(f"  step {step if step is not None else '?'}", style="bold")
    if isinstance(source, str):
        text.append(f"  {clean_line(source)}", style="cyan")
    if record["checkpoint_ns"]:
        text.append(f"  ns {clean_line(record['checkpoint_ns'])}", style="blue")
    return text


def overview_view(
    record: CheckpointRecord,
    *,
    latest: bool,
    full: bool,
    paste: Sequence[tuple[str, str]] = (),
) -> RenderableType:
    """`ckpt show`: ids, step, `next`, what to paste into LangGraph, metadata, versions,
    Sends and pending writes."""
    return human.checkpoint_view(
        record,
        terminal_output(),
        values=False,
        writes_only=False,
        full=full,
        latest=latest,
        paste=paste,
    )


def values_view(record: CheckpointRecord, *, full: bool) -> RenderableType:
    """`ckpt show --blobs`'s channel values: messages as a conversation."""
    return Group(*_channel_values(record, full))


def tasks_view(record: CheckpointRecord, *, full: bool) -> RenderableType:
    """The tasks due at the checkpoint, each with its input, how it ended (error,
    interrupts and their answers), the subgraph it ran and its writes; then the writes
    of no task (an input Command, update_state)."""
    parts: list[RenderableType] = []
    tasks = record["tasks"]
    writes = record["pending_writes"]
    if tasks is None:
        parts.append(Text(f"tasks unknown: {record.get('next_unknown')}", style="dim"))
    elif not tasks:
        parts.append(Text("no task is due: the run is finished", style="dim"))
    labels = human.task_labels(record)
    by_task: dict[str, list[WriteRecord]] = {}
    for write in writes or []:
        by_task.setdefault(write["task_id"], []).append(write)
    for task in tasks or []:
        parts.extend(_task_lines(task, labels, by_task.pop(task["id"], []), full))
    for task_id, task_writes in by_task.items():
        heading = Text("\n")
        if task_id == NULL_TASK_ID:
            heading.append("input / update_state (no task)", style="bold")
        else:
            heading.append(labels.get(task_id) or task_id[:8], style="bold magenta")
            heading.append("  not due here", style="dim")
            heading.append(f"  {task_id}", style="dim")
        parts.append(heading)
        parts.append(_writes(task_writes, full))
    if writes is None:
        parts.append(Text("\n(this store keeps no writes)", style="dim"))
    return Group(*parts)


def _task_lines(
    task: TaskRecord, labels: Mapping[str, str], writes: list[WriteRecord], full: bool
) -> list[RenderableType]:
    state = task["state"]
    heading = Text("\n")
    heading.append(labels.get(task["id"]) or clean_line(task["name"]), style="bold")
    heading.append(f"  {state.replace('_', ' ')}", style=TASK_STATE_STYLE.get(state, "dim"))
    if task["id"]:
        heading.append(f"  {task['id']}", style="dim")
    fields = Table.grid(padding=(0, 2, 0, 0))
    fields.add_column(no_wrap=True, min_width=10)
    fields.add_column(overflow="fold")
    if task["path"]:
        fields.add_row(Text("  path", style="bold"), Text(clean_line(task["path"]), style="dim"))
    if task["input"] is not None:
        fields.add_row(Text("  input", style="bold"), Text(brief(task["input"], full, 600)))
    if task["error"] is not None:
        error = Text(error_brief(task["error"], full, 600), style="red")
        error.append("\nLangGraph keeps the error's text only, no traceback", style="dim")
        fields.add_row(Text("  error", style="bold red"), error)
    for interrupt in task["interrupts"]:
        line = Text()
        if interrupt["answered"]:
            line.append("answered: ", style="yellow")
        else:
            line.append("waiting on: ", style="bold yellow")
        line.append(brief(interrupt["value"], full, 400), style="yellow")
        if "answer" in interrupt:
            line.append(f"  → {brief(interrupt['answer'], full, 200)}", style="green")
        if interrupt["id"]:
            line.append(f"\nid {interrupt['id']}", style="dim")
        if interrupt["response_schema"] is not None:
            line.append(f"\nexpects {brief(interrupt['response_schema'], full)}", style="dim")
        fields.add_row(Text("  interrupt", style="bold yellow"), line)
    if task["subgraph_ns"]:
        line = Text(clean_line(task["subgraph_ns"]), style="blue")
        line.append("\nits checkpoints hang under this one in the history", style="dim")
        fields.add_row(Text("  subgraph", style="bold"), line)
    lines: list[RenderableType] = [heading, fields]
    if writes:
        lines.append(Text("  writes", style="bold"))
        lines.append(_writes(writes, full))
    elif not task["finished"]:
        lines.append(Text("  no writes yet", style="dim"))
    return lines


def _writes(writes: list[WriteRecord], full: bool) -> Table:
    """Writes as channel [idx] and value, the value's lines indented under it."""
    table = Table.grid(padding=(0, 1, 0, 0))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for write in writes:
        channel, value = write["channel"], write["value"]
        style = {ERROR: "bold red", INTERRUPT: "bold yellow"}.get(channel, "cyan")
        label = Text(f"    {clean_line(channel)}", style=style)
        label.append(f" [{write['idx']}]", style="dim")
        shown: RenderableType
        if is_message(value) or (isinstance(value, list) and value and all(map(is_message, value))):
            shown = human.value_view(value, full)
        else:
            shown = Text(brief(value, full, 300))
        table.add_row(label, shown)
    return table


def diff_view(
    a: CheckpointRecord, b: CheckpointRecord, changes: list[Change], *, full: bool
) -> RenderableType:
    """`ckpt diff A B`, its changes found by the library (ckpt.analysis.changes)."""
    return diffview.diff_view(a, b, changes, full=full)


def notice(message: str, style: str = "dim") -> Text:
    """A line in a pane instead of its content: loading, nothing to show, an error."""
    return Text(cut(clean_line(message), False, 2000), style=style)
