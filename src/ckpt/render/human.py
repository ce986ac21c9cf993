"""Human views (tables, trees, conversations) of ckpt's records: each view takes records
(ckpt.records.types) and returns a Rich renderable; `Output.show` prints it. Nothing here
computes status, `next` or tasks: the records carry them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ckpt.analysis.messages import is_message
from ckpt.analysis.selector import short_id
from ckpt.decoders import TYPE_KEY, parse_version
from ckpt.records.encode import dumps
from ckpt.records.model import CONTROL_CHANNELS, INTERRUPT, NULL_TASK_ID, is_internal
from ckpt.records.types import (
    CheckpointRecord,
    DeltaRecord,
    FollowWritesRecord,
    HistoryNodeRecord,
    InterruptRecord,
    LineageRecord,
    TaskRecord,
    VersionMatrix,
    WriteRecord,
    history_nodes,
)
from ckpt.render.output import Output
from ckpt.render.plain import Runs, TreeNode
from ckpt.render.text import (
    brief,
    cell_width,
    cut,
    error_brief,
    human_size,
    short_name,
    short_time,
    task_name,
    thread_cell,
    today,
    zone_label,
)

ROLE_STYLE = {"human": "bold blue", "ai": "bold green", "tool": "bold magenta", "system": "bold"}
_STATE_STYLE = {
    "done": "green",
    "failed": "bold red",
    "interrupted": "bold yellow",
    "to_run": "cyan",
}


def _boxed(output: Output) -> box.Box | None:
    return box.SIMPLE_HEAD if output.terminal else None


class Hanging:
    """Text whose lines, when the width wraps them, go on at their own indent plus `hang`
    (Rich's Text goes on at column 0, out of the block the line belongs to).

    Given a list of pieces, they are joined by `sep` and a piece that does not fit on the
    line moves whole to the next one (`4.5 KB` is not broken apart); a piece wider than
    the line is wrapped like any text.
    """

    def __init__(self, text: Text | Sequence[Text], hang: int = 2, sep: str = "  ") -> None:
        self.pieces = [text] if isinstance(text, Text) else list(text)
        self.hang = hang
        self.sep = sep

    def _joined(self) -> Text:
        return Text(self.sep).join(self.pieces)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._joined())

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line in self._lines(console, width):
            yield from line.render(console)
            yield Segment.line()

    def _lines(self, console: Console, width: int) -> list[Text]:
        if len(self.pieces) == 1:
            lines: list[Text] = []
            for line in self.pieces[0].split("\n", allow_blank=True):
                lines += self._wrap(console, line, width)
            return lines
        first = self.pieces[0]
        lead = " " * (len(first.plain) - len(first.plain.lstrip(" ")) + self.hang)
        rows = [Text() + first]  # the separators take no piece's style
        for piece in self.pieces[1:]:
            room = width if len(rows) == 1 else width - len(lead)
            if rows[-1].cell_len + len(self.sep) + piece.cell_len <= room:
                rows[-1].append(self.sep)
                rows[-1].append_text(piece)
            else:
                rows.append(Text(lead) + piece)
        lines = []
        for row in rows:
            lines += self._wrap(console, row, width)
        return lines

    def _wrap(self, console: Console, line: Text, width: int) -> list[Text]:
        if line.cell_len <= width:
            return [line]
        indent = len(line.plain) - len(line.plain.lstrip(" ")) + self.hang
        wrapped = line.wrap(console, width, overflow="fold")
        if len(wrapped) < 2 or width - indent < 20:
            return list(wrapped)
        first = wrapped[0]
        rest = line[len(first.plain) :]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
        first.rstrip()
        lines = [first]
        for piece in rest.wrap(console, width - indent, overflow="fold"):
            piece.rstrip()
            lines.append(Text(" " * indent) + piece)
        return lines


# -- values ---------------------------------------------------------------------------------


def role_of(message: dict[str, Any]) -> str:
    role = message.get("type")
    if isinstance(role, str) and role:
        return role.removesuffix("Chunk").lower()
    name = str(message.get(TYPE_KEY, "")).rsplit(".", 1)[-1]
    return name.removesuffix("MessageChunk").removesuffix("Message").lower() or "message"


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(dumps(block))
        return "\n".join(parts)
    return dumps(content)


def conversation(
    messages: list[Any], full: bool, last: int | None = None, *, numbered: bool = True
) -> RenderableType:
    """A list of LangChain messages as a chat: numbered (#1 the oldest, as `--last` and the
    `[human-2]` labels of diff count), role, content, tool calls with arguments. `last`
    keeps the newest N, saying how many came before."""
    table = Table(box=None, show_header=False, padding=(0, 1), expand=False, pad_edge=False)
    if numbered:
        table.add_column("n", no_wrap=True, justify="right", style="dim")
    table.add_column("role", no_wrap=True)
    table.add_column("content", overflow="fold")
    skipped = max(0, len(messages) - last) if last is not None else 0
    for number, message in enumerate(messages[skipped:], start=skipped + 1):
        if not is_message(message):
            cells: list[RenderableType] = [Text("value", style="dim"), escape(brief(message, full))]
            table.add_row(*([f"#{number}"] if numbered else []), *cells)
            continue
        role = role_of(message)
        label = Text(role, style=ROLE_STYLE.get(role, "bold"))
        body = Text(cut(content_text(message.get("content")), full, 600))
        newline = "\n" if body.plain else ""
        if role == "tool":
            label.append(f" {message.get('name') or ''}".rstrip(), style="magenta")
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                args = brief(call.get("args"), full, 300)
                body.append(f"{newline}→ {call.get('name')}({args})", style="yellow")
                newline = "\n"
                if call.get("id"):
                    body.append(f"  id={call.get('id')}", style="dim")
        if role == "tool" and message.get("tool_call_id"):
            body.append(f"\n  for {message.get('tool_call_id')}", style="dim")
        if message.get("status") == "error":
            body.stylize("red")
        table.add_row(*([f"#{number}"] if numbered else []), label, body)
    if skipped:
        earlier = Text(
            f"… {skipped} earlier message{'s' if skipped != 1 else ''} (#1–#{skipped}) not "
            "shown: --last N",
            style="dim",
        )
        return Group(earlier, table)
    return table


def value_view(value: Any, full: bool, last: int | None = None) -> RenderableType:
    """A channel value: messages as a conversation, else the value, long ones cut to a
    summary of what they are (--full shows them whole)."""
    if isinstance(value, list) and value and all(is_message(v) for v in value):
        return conversation(value, full, last)
    if is_message(value):
        return conversation([value], full, numbered=False)
    if full and not isinstance(value, str):
        return Text(dumps(value, indent=2))
    text = brief(value, full, 400)
    if not full and text.endswith(" chars)"):
        what = (
            f"a list of {len(value)} items"
            if isinstance(value, list)
            else f"an object of {len(value)} keys"
            if isinstance(value, dict)
            else "a string"
        )
        text = text[: text.rindex("… (")] + f"… ({what}, {text[text.rindex('(') + 1 : -1]}; --full)"
    return Text(text)


# -- tasks and their writes, from a checkpoint record ----------------------------------------


def task_labels(record: CheckpointRecord) -> dict[str, str]:
    """Each task id of the record's tasks and writes -> its label: the node, `node[i]` for
    the i-th Send, else the write's `task` (the library names it)."""
    labels: dict[str, str] = {}
    for task in record["tasks"] or []:
        if task["id"]:
            labels[task["id"]] = task_name(task)
    for write in record["pending_writes"] or []:
        labels.setdefault(write["task_id"], write["task"])
    return labels


def _written(record: CheckpointRecord, task_id: str) -> list[str]:
    writes = record["pending_writes"] or []
    return [short_name(w["channel"]) for w in writes if w["task_id"] == task_id]


def _waiting(task: TaskRecord) -> list[InterruptRecord]:
    return [] if task["finished"] else [i for i in task["interrupts"] if not i["answered"]]


# -- history ----------------------------------------------------------------------------------


def history_view(
    lineage: LineageRecord, *, last: int | None = None, local: bool = False
) -> TreeNode:
    """The tree of `ckpt history` (drawn by render.plain.tree_lines): the trunk leads to the
    thread's latest checkpoint, each branch says what started it, and odd lineage (cycles,
    dangling parents) carries a note. `last` keeps the newest N checkpoints of each root
    chain; the record's `earlier` says how many older checkpoints were not read at all,
    its `written` holds the channel values of update_state checkpoints, by id: their rows
    and branches say what the update wrote."""
    thread_id, chains = lineage["thread_id"], lineage["chains"]
    earlier, written = lineage["earlier"], lineage["written"]
    title = Text(f"thread {thread_cell(thread_id)}", style="bold")
    title.append(f"  (times {zone_label(local)})", style="dim")
    tree = TreeNode(_runs(title))
    records = {
        node["checkpoint"]["checkpoint_id"]: node["checkpoint"]
        for chain in chains
        for node in history_nodes(chain)
    }
    drawer = _HistoryDrawer(records, written or {}, local)
    for i, chain in enumerate(chains):
        parent = tree
        if len(chains) > 1:
            first = chain[0]["checkpoint"]
            why = (
                "the thread's first checkpoint"
                if first["parent_checkpoint_id"] is None and not chain[0].get("note")
                else "no parent drawn above it"
            )
            parent = tree.add(
                [
                    (
                        f"chain {i + 1} of {len(chains)}: from {short_id(first['checkpoint_id'])} "
                        f"({why})",
                        "bold magenta",
                    )
                ]
            )
        total = len(chain) + (earlier if i == 0 else 0)
        left = total - last if last is not None and total > last else 0
        if left:
            parent.add(
                [
                    (
                        f"… {left} earlier checkpoint{'s' if left != 1 else ''} "
                        f"(--last {total} shows them)",
                        "dim",
                    )
                ]
            )
            if last is not None:
                chain = chain[-last:]
        drawer.add_chain(parent, chain)
    return tree


def followed_lines(
    events: Iterable[CheckpointRecord | FollowWritesRecord], output: Output, *, local: bool
) -> Iterator[str]:
    """`history --follow`: each checkpoint on the line `ckpt history` draws it (a subgraph's
    after its namespace), and writes that land later on a line of their own under it, as
    `ran: ...` reads in the tree (✗ a failed task, ⏸ an interrupt). One line at a time: the
    newest checkpoint of each namespace is all that is kept."""
    from ckpt.render.plain import tree_lines

    latest: dict[str, CheckpointRecord] = {}
    for event in events:
        ns = event["checkpoint_ns"]
        line = Text()
        if event.get("event") == "writes":
            before = latest.get(ns)
            if before is None:
                continue
            landed = cast(FollowWritesRecord, event)
            record: CheckpointRecord = {
                **before,
                "pending_writes": [*(before["pending_writes"] or []), *landed["pending_writes"]],
                "tasks": landed["tasks"],
                "interrupts": landed["interrupts"],
            }
            latest[ns] = record
            line.append(f"  ↳ {short_id(record['checkpoint_id'])}", style="yellow")
            line.append("  ran: ", style="dim")
            line.append_text(_writes_brief(record))
        else:
            record = event  # type: ignore[assignment]
            if ns:
                line.append(f"{ns}  ", style="blue")
            when = short_time(record["ts"], local)
            line.append_text(_node_label(record, when, latest.get(ns)))
            latest[ns] = record
        yield from tree_lines(TreeNode(_runs(line)), output)


def _runs(text: Text) -> Runs:
    """A Rich Text as styled runs for the hand-drawn tree."""
    plain = text.plain
    spans = text.spans
    base = str(text.style) if text.style else ""
    if not spans:
        return [(plain, base)]
    cuts = sorted({0, len(plain), *(s.start for s in spans), *(s.end for s in spans)})
    runs: Runs = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if a >= b:
            continue
        styles = [base, *(str(s.style) for s in spans if s.start <= a and s.end >= b)]
        runs.append((plain[a:b], " ".join(x for x in styles if x)))
    return runs


class _HistoryDrawer:
    """Adds chains to a tree in drawing order, so each time line can say its date when it
    differs from today's or from the line above."""

    def __init__(
        self,
        records: dict[str, CheckpointRecord],
        written: dict[str, dict[str, Any]],
        local: bool = False,
    ) -> None:
        self.records = records
        self.written = written
        self.local = local
        self.last_date = today(local)

    def add_chain(self, parent: TreeNode, chain: list[HistoryNodeRecord]) -> None:
        # A work list rather than recursion: forks of forks nest as deep as the store says.
        todo = [(parent, chain)]
        while todo:
            into, nodes = todo.pop(0)
            for i, node in enumerate(nodes):
                branch = into.add(_runs(self.label(node)))
                for sub in node["subgraphs"]:
                    inner = branch.add([(f"subgraph {sub['checkpoint_ns']}", "bold blue")])
                    todo.append((inner, sub["chain"]))
                after = nodes[i + 1]["checkpoint"] if i + 1 < len(nodes) else None
                for fork in node["forks"]:
                    first = fork[0]["checkpoint"]
                    wrote = self.update_text(first, node["checkpoint"])
                    label = _fork_label(node["checkpoint"], first, after, wrote)
                    todo.append((branch.add(_runs(label)), fork))

    def label(self, node: HistoryNodeRecord) -> Text:
        record = node["checkpoint"]
        when = short_time(record["ts"], self.local)
        if when:
            date, when = when[:10], when[11:]
            if date != self.last_date:
                when = f"{date} {when}"
            self.last_date = date
        parent = self.records.get(record["parent_checkpoint_id"] or "")
        line = _node_label(record, when, parent, wrote=self.update_text(record, parent))
        if node.get("note"):
            line.append(f"  ⚠ {node['note']}", style="bold red")
        return line

    def update_text(self, record: CheckpointRecord, parent: CheckpointRecord | None) -> Text:
        """`  notes=[…, "edit-B"]`: what an update_state wrote, from its values."""
        values = self.written.get(record["checkpoint_id"])
        if not values:
            return Text()
        parts = []
        for channel in _moved(record, parent):
            if channel in values:
                value = values[channel]
                if isinstance(value, list) and len(value) > 1:
                    shown = f"[…, {brief(value[-1], limit=40)}]"  # the end: what an edit adds
                    if is_message(value[-1]):
                        last = value[-1]
                        said = cut(content_text(last.get("content")), False, 40)
                        shown = f"[…, {role_of(last)}: {said}]"
                else:
                    shown = brief(value, limit=40)
                parts.append(f"{channel}={shown}")
        return Text(f"  wrote {'; '.join(parts)}", style="magenta") if parts else Text()


def _fork_label(
    at: CheckpointRecord,
    first: CheckpointRecord,
    trunk_next: CheckpointRecord | None,
    wrote: Text | None = None,
) -> Text:
    """What started a branch, as its first record's `branch` says (ckpt.analysis.history): an
    update_state (and what it wrote), a copy of a checkpoint, the earlier run the trunk
    left, or a replay from `at`."""
    branch = first.get("branch")
    kind = branch["kind"] if branch else None
    text = Text("branch: ", style="bold magenta")
    if kind == "update_state" and wrote:
        text.append("update_state", style="magenta")
        text.append_text(wrote)
    elif kind == "update_state":
        moved = _moved(first, at)
        text.append("update_state" + (f" → {', '.join(moved)}" if moved else ""), style="magenta")
    elif kind == "fork":
        text.append(f"a copy of {short_id(at['checkpoint_id'])} (fork)", style="magenta")
    elif branch and kind == "earlier_run":
        then = (
            trunk_next["metadata"]
            if trunk_next and isinstance(trunk_next["metadata"], dict)
            else {}
        )
        how = f" ({then['source']})" if isinstance(then.get("source"), str) else ""
        text.append(
            f"the earlier run, left when {short_id(branch['trunk_checkpoint_id'])}{how} went on "
            f"from {short_id(at['checkpoint_id'])}",
            style="magenta",
        )
    elif kind == "replay":
        text.append(f"a replay from {short_id(at['checkpoint_id'])}", style="magenta")
    else:  # a tree whose records do not say (made without ckpt.analysis.history)
        text.append(f"from {short_id(at['checkpoint_id'])}", style="magenta")
    return text


def _moved(record: CheckpointRecord, parent: CheckpointRecord | None) -> list[str]:
    """The state channels whose version differs from the parent's: what an update wrote."""
    before = parent["channel_versions"] if parent is not None else {}
    return _state_channels([c for c, v in record["channel_versions"].items() if before.get(c) != v])


def _node_label(
    record: CheckpointRecord,
    when: str,
    parent: CheckpointRecord | None = None,
    *,
    wrote: Text | None = None,
) -> Text:
    line = Text()
    line.append(short_id(record["checkpoint_id"]), style="bold yellow")
    metadata = record["metadata"] if isinstance(record["metadata"], dict) else {}
    step = metadata.get("step")
    step = step if isinstance(step, int) and not isinstance(step, bool) else None
    source = metadata.get("source")
    line.append(f"  step {step if step is not None else '?'}", style="bold")
    if isinstance(source, str):
        line.append(f"  {source}", style="cyan")
    elif step == -2 and not record["channel_versions"]:
        # durability="exit" with DeltaChannels: a placeholder for the run's first writes.
        line.append("  exit-mode stub", style="cyan")
    if when:
        line.append(f"  {when}", style="dim")
    updated = _state_channels(record["updated_channels"] or [])
    if source == "update" and record["updated_channels"] is None and parent is not None:
        updated = _moved(record, parent)  # an update_state: what it wrote
    if wrote:
        line.append_text(wrote)  # an update_state, with the values it wrote
    elif updated:
        line.append("  updated: " + ", ".join(map(short_name, updated)), style="green")
    if "checkpoint" in record:
        line.append("  " + brief(record["checkpoint"], limit=60), style="red")
    writes = _writes_brief(record)
    if writes:
        line.append("  ran: ", style="dim")
        line.append_text(writes)
    return line


def _state_channels(channels: list[str]) -> list[str]:
    """Channels as the graph's author knows them: trigger channels and LangGraph's own
    (`__start__`, `__pregel_tasks` ...) are left out of briefs."""
    return [c for c in channels if not is_internal(c)]


def _channel_list(channels: list[str]) -> str:
    counts: dict[str, int] = {}
    for channel in channels:
        counts[channel] = counts.get(channel, 0) + 1
    return ", ".join(c if n == 1 else f"{c} ×{n}" for c, n in counts.items())


def _writes_brief(record: CheckpointRecord) -> Text:
    """What ran after this checkpoint: each task that wrote, with how it ended."""
    text = Text()
    writes = record["pending_writes"] or []
    labels = task_labels(record)
    parts: list[Text] = []
    known = {t["id"] for t in record["tasks"] or []}
    for task in record["tasks"] or []:
        channels = _written(record, task["id"])
        if not channels:
            continue  # due, but nothing ran yet
        parts.append(_task_brief(labels.get(task["id"], task["name"]), task, channels))
    others: dict[str, list[str]] = {}  # writes of tasks not due here, by label
    for write in writes:
        if write["task_id"] != NULL_TASK_ID and write["task_id"] not in known:
            label = labels.get(write["task_id"], write["task_id"][:8])
            others.setdefault(short_name(label), []).append(short_name(write["channel"]))
    for label, channels in others.items():
        state = _state_channels([c for c in channels if c not in CONTROL_CHANNELS])
        if state or "__error__" not in channels:
            line = f"{label} → {_channel_list(sorted(set(state), key=state.index))}"
            parts.append(Text(line.rstrip(" →"), style="magenta"))
    null_writes = [w for w in writes if w["task_id"] == NULL_TASK_ID]
    if null_writes:
        # Writes of no task: an input Command (resume, update, goto) or update_state.
        state = _state_channels([w["channel"] for w in null_writes])
        resumes = [w["value"] for w in null_writes if w["channel"] == "__resume__"]
        if state:
            parts.append(Text("input → " + _channel_list(state), style="magenta"))
        if resumes:
            parts.append(Text(f"resume: {brief(resumes[-1], limit=50)}", style="yellow"))
    for i, part in enumerate(parts):
        if i:
            text.append("; ")
        text.append_text(part)
    return text


def _task_brief(name: str, task: TaskRecord, written: list[str]) -> Text:
    if task["state"] == "failed":
        given = f"({brief(task['input'], limit=40)})" if task["input"] is not None else ""
        return Text(f"✗ {name}{given}: {error_brief(task['error'], limit=60)}", style="bold red")
    waiting = _waiting(task)
    if waiting:
        return Text(f"⏸ {name}: {brief(waiting[0]['value'], limit=50)}", style="bold yellow")
    channels = _state_channels([c for c in written if c not in CONTROL_CHANNELS])
    channels += ["Send"] * written.count("__pregel_tasks")  # the packets it sent
    line = Text()
    if task["interrupts"]:
        line.append("⏸ ", style="yellow")
    line.append(name, style="magenta")
    if channels:
        line.append(f" → {_channel_list(channels)}", style="magenta")
    if task["interrupts"]:
        answers = [brief(i["answer"], limit=40) for i in task["interrupts"] if "answer" in i]
        line.append(
            " (answered" + (f": {', '.join(answers)}" if answers else "") + ")", style="yellow"
        )
    if task["error"] is not None:
        line.append(" (retried after error)", style="magenta")
    return line


# -- versions ---------------------------------------------------------------------------------


VERSION_CELL = 14  # widest a versions cell grows ("12 update_state"); longer task names are cut
_MIN_CELL = 8  # a short id


def versions_capacity(output: Output, default: int) -> int:
    """How many checkpoint columns could fit the width (the view shows as many as do)."""
    return max(1, (output.columns() - 12) // (_MIN_CELL + 1)) if output.wraps else default


def _cell_text(cell: Any) -> tuple[str, str]:
    if cell is None:
        return "·", "dim"
    if cell["moved"]:
        label = str(cell["counter"] if cell["counter"] is not None else cell["version"])
        by = ",".join(cell["by"])
        return label + (f" {by}" if by else ""), "bold green"
    return ("=" if cell.get("shared_blob") else "·"), "dim"


def versions_view(matrix: VersionMatrix, output: Output) -> RenderableType:
    """Channels down, checkpoints across (oldest left); on a terminal as many of the newest
    checkpoints as fit the width, with a count of those left out."""
    columns = matrix["checkpoints"]
    cells = [[_cell_text(c) for c in row["versions"]] for row in matrix["channels"]]
    widths = [
        min(
            VERSION_CELL,
            max([_MIN_CELL, len(str(col["step"])), *(cell_width(r[i][0]) for r in cells)]),
        )
        for i, col in enumerate(columns)
    ]
    first = 0
    if output.wraps:
        room = output.columns() - max([7, *(cell_width(r["channel"]) for r in matrix["channels"])])
        first = len(columns)
        while first > 0 and room - (widths[first - 1] + 1) >= 0:
            room -= widths[first - 1] + 1
            first -= 1
        first = min(first, len(columns) - 1)
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 0, 0, 1))
    table.add_column("CHANNEL", no_wrap=True)
    for column, width in zip(columns[first:], widths[first:], strict=True):
        step = column["step"]
        table.add_column(
            f"{'?' if step is None else step}\n{column['short_id']}",
            justify="center",
            no_wrap=True,
            overflow="ellipsis",
            max_width=width,
        )
    for row, row_cells in zip(matrix["channels"], cells, strict=True):
        table.add_row(row["channel"], *(Text(t, style=st) for t, st in row_cells[first:]))
    title = f"thread {matrix['thread_id']}  namespace {matrix['checkpoint_ns'] or '(root)'}"
    earlier = matrix.get("earlier_checkpoints", 0) + first
    if earlier:
        shown = len(columns) - first
        title += f"  (newest {shown} of {shown + earlier}; {earlier} left out)"
    shared = any(c and c.get("shared_blob") for r in matrix["channels"] for c in r["versions"])
    legend = "number = the new version, and the task whose write moved it; · = unchanged"
    if shared:
        legend += "; '=' = unchanged, and the checkpoint reuses the same stored blob"
    return Group(Text(title, style="bold"), table, Text(legend, style="dim"))


# -- show ---------------------------------------------------------------------------------------


def checkpoint_view(
    record: CheckpointRecord,
    output: Output,
    *,
    values: bool,
    writes_only: bool,
    full: bool,
    latest: bool = False,
    last: int | None = None,
    paste: Sequence[tuple[str, str]] = (),
) -> RenderableType:
    """`ckpt show`: the header, what to paste into LangGraph (ckpt.records.paste.paste_back),
    metadata, versions, Sends, pending writes and values."""
    parts: list[RenderableType] = []
    header = Table(box=None, show_header=False, pad_edge=False)
    header.add_column(style="bold")
    header.add_column(overflow="fold")
    metadata = record["metadata"] if isinstance(record["metadata"], dict) else {}
    step, source = metadata.get("step"), metadata.get("source")
    header.add_row("thread", thread_cell(record["thread_id"]))
    header.add_row("namespace", record["checkpoint_ns"] or "(root)")
    header.add_row("checkpoint", record["checkpoint_id"])
    header.add_row("parent", record["parent_checkpoint_id"] or "(none)")
    header.add_row("step", f"{step}  {source if isinstance(source, str) else ''}".strip())
    if record["ts"]:
        local = output.local_time
        when = Text(f"{short_time(record['ts'], local)} {zone_label(local)}")
        when.append(f"  (stored {record['ts']})", style="dim")
        header.add_row("time", when)
    else:
        header.add_row("time", "")
    if record["v"] is not None:
        header.add_row("format", f"v{record['v']}, {human_size(record['size'])}")
    if "checkpoint" in record:
        header.add_row("body", Text(brief(record["checkpoint"], full), style="red"))
    if record["tasks"] is None:
        header.add_row("next", Text(f"(unknown: {record.get('next_unknown')})", style="dim"))
    else:
        header.add_row("next", _next_text(record["tasks"], latest=latest))
    if record["updated_channels"] is not None:
        header.add_row("updated", ", ".join(record["updated_channels"]))
    parts.append(header)
    if paste:
        parts.append(Text("\nin LangGraph", style="bold underline"))
        parts.append(paste_table(paste))
    if not writes_only:
        parts.append(Text("\nmetadata", style="bold underline"))
        parts.append(_kv_table(metadata, full))
        parts.append(Text("\nchannel versions", style="bold underline"))
        parts.append(_versions_table(record, output))
        if record["pending_sends"]:
            parts.append(Text("\npending sends", style="bold underline"))
            parts.extend(Hanging(Text(brief(send, full))) for send in record["pending_sends"])
    parts.append(Text("\npending writes", style="bold underline"))
    parts.append(_writes_view(record, full))
    if values and not writes_only:
        parts.append(Text("\nchannel values", style="bold underline"))
        parts.extend(_values_view(record, full, last))
    return Group(*parts)


def paste_table(paste: Sequence[tuple[str, str]]) -> Table:
    """Code to paste, a row each, folded under its own column when the line is narrow."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for what, code in paste:
        table.add_row(what, Text(code, style="green"))
    return table


def _values_view(
    record: CheckpointRecord, full: bool, last: int | None = None
) -> list[RenderableType]:
    parts: list[RenderableType] = []
    stored = record.get("channel_values")
    deltas = record.get("delta_channels") or {}
    if "checkpoint" in record:
        parts.append(Text(f"(unknown: {record.get('next_unknown')})", style="dim"))
    elif stored is None:
        parts.append(Text("(this store keeps no channel values)", style="dim"))
    # What graph.get_state().values shows: LangGraph's own channels (`__start__`, the
    # trigger channels, LangGraph.js's `__pregel_tasks`) stay in the JSON record only.
    shown = {k: v for k, v in (stored or {}).items() if not is_internal(k)}
    if stored is not None and "checkpoint" not in record and not shown and not deltas:
        parts.append(Text("(none)", style="dim"))
    for name, value in shown.items():
        heading = Text(name, style="bold cyan")
        if isinstance(value, dict) and value.get("__ckpt__") == "delta_snapshot":
            heading.append("  (delta channel snapshot)", style="dim")
            value = value.get("value")
        parts.append(heading)
        parts.append(value_view(value, full, last))
    for name, delta in deltas.items():
        parts.append(_delta_heading(name, delta))
        if "value" in delta:
            parts.append(value_view(delta["value"], full, last))
        else:
            for write in delta["writes"]:
                line = Text(f"  + {short_id(write['checkpoint_id'])} ", style="dim")
                line.append(brief(write["value"], full))
                parts.append(Hanging(line))
    return parts


def _delta_heading(name: str, delta: DeltaRecord) -> Text:
    """Where a DeltaChannel's value comes from: the snapshot and the writes since."""
    seed_id = delta["snapshot_checkpoint_id"]
    seed = short_id(seed_id) if seed_id else "empty"
    count = len(delta["writes"])
    writes = f"{count} write{'s' if count != 1 else ''}"
    heading = Text(name, style="bold cyan")
    if not delta["complete"]:
        heading.append(
            f"  (delta channel: the ancestors back to a snapshot are missing; {writes} found)",
            style="yellow",
        )
    elif "value" in delta:
        how = (
            "LangGraph's message reducer"
            if delta["reducer"] == "messages"
            else "list concatenation"
        )
        heading.append(
            f"  (delta channel: rebuilt from the snapshot at {seed} + {writes}, by {how})",
            style="dim",
        )
    else:
        heading.append(
            f"  (delta channel: value = reducer(snapshot at {seed}, {writes}); the reducer "
            "is the graph's code)",
            style="yellow",
        )
    return heading


def _interrupt_line(interrupt: Any, info: InterruptRecord | None, full: bool) -> Text:
    answered = info is not None and info["answered"]
    line = Text("    answered: " if answered else "    waiting on: ", style="yellow")
    value = (
        interrupt["value"] if isinstance(interrupt, dict) and "value" in interrupt else interrupt
    )
    line.append(brief(value, full), style="yellow")
    if info is not None and "answer" in info:
        line.append(f"  → {brief(info['answer'], full)}", style="green")
    if info is not None and info["id"]:
        line.append(f"  id={info['id']}", style="dim")
    if info is not None and info["response_schema"] is not None:
        line.append(f"\n      expects: {brief(info['response_schema'], full)}", style="dim")
    return line


def _kv_table(mapping: dict[str, Any], full: bool) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in mapping.items():
        table.add_row(str(key), brief(value, full))
    return table


def _versions_table(record: CheckpointRecord, output: Output) -> Table:
    table = Table(box=_boxed(output), header_style="bold", pad_edge=False)
    table.add_column("CHANNEL", no_wrap=True)
    table.add_column("VERSION", justify="right")
    table.add_column("SEEN BY", overflow="fold")
    for channel, version in record["channel_versions"].items():
        seen_by = [
            f"{node}@{parse_version(seen[channel])}"
            for node, seen in record["versions_seen"].items()
            if isinstance(seen, dict) and channel in seen
        ]
        counter = parse_version(version)
        table.add_row(channel, str(counter if counter is not None else version), ", ".join(seen_by))
    return table


def _next_text(tasks: list[TaskRecord], *, latest: bool) -> Text:
    """The tasks due at the checkpoint with how each ended; on the latest checkpoint, also
    what is still to run (LangGraph's `get_state().next`)."""
    if not tasks:
        return Text("(nothing: the run is finished)")
    text = Text()
    for i, task in enumerate(tasks):
        if i:
            text.append(", ")
        text.append(task_name(task))
        state = task["state"]
        text.append(f" ({state.replace('_', ' ')})", style=_STATE_STYLE.get(state, "dim"))
    if latest:
        left = [t for t in tasks if not t["finished"]]
        text.append("\nstill to run: ", style="bold")
        text.append(", ".join(t["name"] for t in left) if left else "nothing")
    return text


def _writes_view(record: CheckpointRecord, full: bool) -> RenderableType:
    writes = record["pending_writes"]
    if writes is None:
        return Text("(this store keeps no writes)", style="dim")
    if not writes:
        return Text("(none)", style="dim")
    labels = task_labels(record)
    by_id = {t["id"]: t for t in record["tasks"] or []}
    parts: list[RenderableType] = []
    current: str | None = None
    for write in writes:
        if write["task_id"] != current:
            current = write["task_id"]
            parts.append(_task_heading(write, labels))
            parts.extend(_task_context(record, by_id.get(current), full))
        parts.extend(_write_lines(write, by_id.get(write["task_id"]), full))
    return Group(*parts)


def _task_context(
    record: CheckpointRecord, task: TaskRecord | None, full: bool
) -> list[RenderableType]:
    """Under a task's heading: what it was given when it failed (a Send's argument), that
    no traceback exists, and where its subgraph's checkpoints are."""
    if task is None:
        return []
    lines: list[RenderableType] = []
    if task["state"] == "failed":
        given = (
            f"input {brief(task['input'], full)}  (the Send's argument)"
            if task["input"] is not None
            else "input: the state at this checkpoint (ckpt show --blobs)"
        )
        lines.append(Hanging(Text(f"  {given}", style="red")))
        lines.append(Hanging(Text(f"  ({_error_kept(task['error'])})", style="dim")))
    if task["subgraph_ns"]:
        where = Text("  subgraph checkpoints:", style="blue")
        lines.append(
            Hanging([where, Text(_subgraph_selector(record, task), style="blue")], sep=" ")
        )
    return lines


def _error_kept(error: object) -> str:
    """What the store kept of a task's error, as its value shows: LangGraph's msgpack
    savers store `repr(exc)`, a string; RedisSaver and LangGraph.js store an object (its
    type and attributes, or {message, name}) whose fields are all there is."""
    if isinstance(error, str):
        return "LangGraph stores the error's repr only: there is no traceback"
    return "the saver stores only the error's fields shown below: there is no traceback"


def _subgraph_selector(record: CheckpointRecord, task: TaskRecord) -> str:
    return f"ckpt show {record['thread_id']} --ns '{task['subgraph_ns']}'"


def _task_heading(write: WriteRecord, labels: dict[str, str]) -> RenderableType:
    if write["task_id"] == NULL_TASK_ID:
        return Text("input / update_state (no task)", style="bold")
    name = short_name(labels.get(write["task_id"]) or write["task_id"][:8])
    task_id = short_name(write["task_id"])
    pieces = [Text(f"task {name}", style="bold"), Text(task_id, style="bold dim")]
    if write["task_path"]:
        pieces.append(Text(short_name(write["task_path"]), style="bold dim"))
    return Hanging(pieces, hang=4)


def _write_lines(write: WriteRecord, task: TaskRecord | None, full: bool) -> list[RenderableType]:
    channel, value = write["channel"], write["value"]
    style = {"__error__": "bold red", "__interrupt__": "bold yellow"}.get(channel, "")
    line = Text(f"  {short_name(channel)}", style=style or "cyan")
    line.append(f" [{write['idx']}]", style="dim")
    if channel == INTERRUPT and isinstance(value, list):
        infos = task["interrupts"] if task is not None else []
        return [
            line,
            *(
                Hanging(_interrupt_line(interrupt, infos[i] if i < len(infos) else None, full))
                for i, interrupt in enumerate(value)
            ),
        ]
    if is_message(value) or (
        isinstance(value, list) and value and all(is_message(v) for v in value)
    ):
        return [line, value_view(value, full)]
    line.append(" " + brief(value, full), style=style)
    return [Hanging(line)]
