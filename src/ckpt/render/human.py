"""Human views (tables, trees, conversations): the only module that imports Rich."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ckpt.analysis import (
    is_message,
    task_labels,
    why_next_unknown,
)
from ckpt.decoders import TYPE_KEY, parse_version
from ckpt.history import HistoryNode
from ckpt.model import CONTROL_CHANNELS, INTERRUPT, NULL_TASK_ID, Checkpoint
from ckpt.render.plain import brief, clean, cut, human_size, short_time
from ckpt.render.records import dumps, updated_at
from ckpt.selectors import short_id
from ckpt.tasks import InterruptInfo, Task, is_internal

ROLE_STYLE = {"human": "bold blue", "ai": "bold green", "tool": "bold magenta", "system": "bold"}


class _Console(Console):
    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every piece of text that came from the store passes here: escape its control
        # characters, keep the styles ckpt itself adds (render/plain.py `clean`).
        return super()._render_buffer(
            Segment(clean(text), style, None) if control is None else Segment(text, style, control)
            for text, style, control in buffer
        )

    def on_broken_pipe(self) -> None:
        # Rich would exit 1 by itself; hand the closed pipe to the CLI, which ends quietly
        # with status 0 like `dump | head` does.
        raise BrokenPipeError


def console() -> Console:
    """stdout: colour and boxes only on a terminal; Rich honours NO_COLOR itself."""
    terminal = sys.stdout.isatty() or bool(os.environ.get("CKPT_FORCE_TTY"))
    width = None if terminal else int(os.environ.get("COLUMNS") or 120)
    return _Console(
        force_terminal=terminal or None,
        width=width,
        highlight=False,
        soft_wrap=False,
        emoji=False,
    )


def _boxed() -> box.Box | None:
    return box.SIMPLE_HEAD if console().is_terminal else None


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


def conversation(messages: list[Any], full: bool) -> Table:
    """A list of LangChain messages as a chat: role, content, tool calls with arguments."""
    table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
    table.add_column("role", no_wrap=True)
    table.add_column("content", overflow="fold")
    for message in messages:
        if not is_message(message):
            table.add_row(Text("value", style="dim"), escape(brief(message, full)))
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
        table.add_row(label, body)
    return table


def value_view(value: Any, full: bool) -> Any:
    if isinstance(value, list) and value and all(is_message(v) for v in value):
        return conversation(value, full)
    if is_message(value):
        return conversation([value], full)
    if full and not isinstance(value, str):
        return Text(dumps(value, indent=2))
    return Text(brief(value, full, 400))


# -- threads ----------------------------------------------------------------------------------


# -- history ----------------------------------------------------------------------------------


def _node_label(checkpoint: Checkpoint, tasks: list[Task] | None) -> Text:
    line = Text()
    line.append(short_id(checkpoint.checkpoint_id), style="bold yellow")
    step = checkpoint.step
    line.append(f"  step {step if step is not None else '?'}", style="bold")
    if checkpoint.source:
        line.append(f"  {checkpoint.source}", style="cyan")
    elif step == -2 and not checkpoint.channel_versions:
        # durability="exit" with DeltaChannels: a placeholder for the run's first writes.
        line.append("  exit-mode stub", style="cyan")
    when = updated_at(checkpoint)
    if when:
        line.append(f"  {short_time(when)[11:]}", style="dim")
    updated = _state_channels(checkpoint.updated_channels or [])
    if updated:
        line.append("  updated: " + ", ".join(updated), style="green")
    if checkpoint.unread_body is not None:
        line.append("  " + brief(checkpoint.unread_body, limit=60), style="red")
    writes = _writes_brief(checkpoint, tasks)
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


def _writes_brief(checkpoint: Checkpoint, tasks: list[Task] | None) -> Text:
    """What ran after this checkpoint: each task that wrote, with how it ended."""
    text = Text()
    writes = checkpoint.pending_writes or []
    labels = task_labels(checkpoint, tasks)
    parts: list[Text] = []
    known = {t.id for t in tasks or []}
    for task in tasks or []:
        if not task.channels:
            continue  # due, but nothing ran yet
        parts.append(_task_brief(labels.get(task.id, task.name), task))
    others: dict[str, list[str]] = {}  # writes of tasks not due here, by label
    for write in writes:
        if write.task_id != NULL_TASK_ID and write.task_id not in known:
            label = labels.get(write.task_id, write.task_id[:8])
            others.setdefault(label, []).append(write.channel)
    for label, channels in others.items():
        state = _state_channels([c for c in channels if c not in CONTROL_CHANNELS])
        if state or "__error__" not in channels:
            line = f"{label} → {_channel_list(sorted(set(state), key=state.index))}"
            parts.append(Text(line.rstrip(" →"), style="magenta"))
    null_writes = [w for w in writes if w.task_id == NULL_TASK_ID]
    if null_writes:
        # Writes of no task: an input Command (resume, update, goto) or update_state.
        state = _state_channels([w.channel for w in null_writes])
        resumes = [w.value for w in null_writes if w.channel == "__resume__"]
        if state:
            parts.append(Text("input → " + _channel_list(state), style="magenta"))
        if resumes:
            parts.append(Text(f"resume: {brief(resumes[-1], limit=50)}", style="yellow"))
    for i, part in enumerate(parts):
        if i:
            text.append("; ")
        text.append_text(part)
    return text


def _task_brief(name: str, task: Task) -> Text:
    if task.state == "failed":
        return Text(f"✗ {name}: {brief(task.error, limit=60)}", style="bold red")
    if task.pending_interrupts:
        first = task.pending_interrupts[0]
        return Text(f"⏸ {name}: {brief(first.value, limit=50)}", style="bold yellow")
    channels = _state_channels([c for c in task.channels if c not in CONTROL_CHANNELS])
    channels += ["Send"] * task.channels.count("__pregel_tasks")  # the packets it sent
    line = Text()
    if task.interrupts:
        line.append("⏸ ", style="yellow")
    line.append(name, style="magenta")
    if channels:
        line.append(f" → {_channel_list(channels)}", style="magenta")
    if task.interrupts:
        answers = [brief(i.answer, limit=40) for i in task.interrupts if i.has_answer]
        line.append(
            " (answered" + (f": {', '.join(answers)}" if answers else "") + ")", style="yellow"
        )
    if task.error is not None:
        line.append(" (retried after error)", style="magenta")
    return line


def _interrupt_value(interrupt: Any) -> Any:
    if isinstance(interrupt, dict) and "value" in interrupt:
        return interrupt["value"]
    return interrupt


def history_tree(thread_id: str, chains: list[list[HistoryNode]]) -> None:
    tree = Tree(Text(f"thread {thread_id}", style="bold"), guide_style="dim")
    for chain in chains:
        _add_chain(tree, chain)
    console().print(tree)


def _add_chain(parent: Tree, chain: list[HistoryNode]) -> None:
    for node in chain:
        branch = parent.add(_node_label(node.checkpoint, node.tasks))
        for ns, sub_chain in node.subgraphs:
            sub = branch.add(Text(f"subgraph {ns}", style="bold blue"))
            _add_chain(sub, sub_chain)
        for fork in node.forks:
            sub = branch.add(Text("fork", style="bold magenta"))
            _add_chain(sub, fork)


# -- versions ---------------------------------------------------------------------------------


def versions_table(matrix: dict[str, Any]) -> None:
    table = Table(box=_boxed(), header_style="bold", pad_edge=False)
    table.add_column("CHANNEL", no_wrap=True)
    for column in matrix["checkpoints"]:
        step = column["step"]
        table.add_column(f"{'?' if step is None else step}\n{column['short_id']}", justify="center")
    for row in matrix["channels"]:
        cells: list[Text] = []
        for cell in row["versions"]:
            if cell is None:
                cells.append(Text("·", style="dim"))
            elif cell["moved"]:
                label = str(cell["counter"] if cell["counter"] is not None else cell["version"])
                by = ",".join(cell["by"])
                cells.append(Text(f"{label}" + (f" {by}" if by else ""), style="bold green"))
            else:
                cells.append(Text("=" if cell.get("shared_blob") else "·", style="dim"))
        table.add_row(row["channel"], *cells)
    title = f"thread {matrix['thread_id']}  namespace {matrix['checkpoint_ns'] or '(root)'}"
    earlier = matrix.get("earlier_checkpoints", 0)
    if earlier:
        title += f"  (newest {len(matrix['checkpoints'])}; {earlier} earlier: --last N)"
    console().print(Text(title, style="bold"))
    console().print(table)
    shared = any(c and c.get("shared_blob") for r in matrix["channels"] for c in r["versions"])
    legend = "number = the new version, and the task whose write moved it; · = unchanged"
    if shared:
        legend += "; = = unchanged, and the checkpoint reuses the same stored blob"
    console().print(Text(legend, style="dim"))


# -- show ---------------------------------------------------------------------------------------


def show_checkpoint(
    checkpoint: Checkpoint,
    *,
    values: bool,
    writes_only: bool,
    full: bool,
    tasks: list[Task] | None = None,
    latest: bool = False,
) -> None:
    out = console()
    header = Table(box=None, show_header=False, pad_edge=False)
    header.add_column(style="bold")
    header.add_column(overflow="fold")
    header.add_row("thread", checkpoint.thread_id)
    header.add_row("namespace", checkpoint.checkpoint_ns or "(root)")
    header.add_row("checkpoint", checkpoint.checkpoint_id)
    header.add_row("parent", checkpoint.parent_checkpoint_id or "(none)")
    header.add_row("step", f"{checkpoint.step}  {checkpoint.source or ''}".strip())
    header.add_row("time", updated_at(checkpoint) or "")
    if checkpoint.v is not None:
        header.add_row("format", f"v{checkpoint.v}, {human_size(checkpoint.size)}")
    if checkpoint.unread_body is not None:
        header.add_row("body", Text(brief(checkpoint.unread_body, full), style="red"))
    unknown = why_next_unknown(checkpoint)
    if unknown:
        header.add_row("next", Text(f"(unknown: {unknown})", style="dim"))
    else:
        header.add_row("next", _next_text(tasks or [], latest=latest))
    if checkpoint.updated_channels is not None:
        header.add_row("updated", ", ".join(checkpoint.updated_channels))
    out.print(header)
    if not writes_only:
        out.print(Text("\nmetadata", style="bold underline"))
        out.print(_kv_table(checkpoint.metadata, full))
        out.print(Text("\nchannel versions", style="bold underline"))
        out.print(_versions_table(checkpoint))
        if checkpoint.pending_sends:
            out.print(Text("\npending sends", style="bold underline"))
            for send in checkpoint.pending_sends:
                out.print(Text(brief(send, full)))
    out.print(Text("\npending writes", style="bold underline"))
    out.print(_writes_view(checkpoint, tasks, full))
    if values and not writes_only:
        out.print(Text("\nchannel values", style="bold underline"))
        if checkpoint.unread_body is not None:
            out.print(Text(f"(unknown: {why_next_unknown(checkpoint)})", style="dim"))
        elif checkpoint.channel_values is None:
            out.print(Text("(this store keeps no channel values)", style="dim"))
        elif not checkpoint.values and not checkpoint.deltas:
            out.print(Text("(none)", style="dim"))
        for name, value in (checkpoint.values or {}).items():
            heading = Text(name, style="bold cyan")
            if isinstance(value, dict) and value.get("__ckpt__") == "delta_snapshot":
                heading.append("  (delta channel snapshot)", style="dim")
                value = value.get("value")
            out.print(heading)
            out.print(value_view(value, full))
        for name, delta in checkpoint.deltas.items():
            out.print(_delta_heading(name, delta))
            if delta.rebuilt:
                out.print(value_view(delta.value, full))
            else:
                for write in delta.writes:
                    line = Text(f"  + {short_id(write.checkpoint_id)} ", style="dim")
                    line.append(brief(write.value, full))
                    out.print(line)


def _delta_heading(name: str, delta: Any) -> Text:
    """Where a DeltaChannel's value comes from: the snapshot and the writes since."""
    seed = short_id(delta.seed_checkpoint_id) if delta.seed_checkpoint_id else "empty"
    count = len(delta.writes)
    writes = f"{count} write{'s' if count != 1 else ''}"
    heading = Text(name, style="bold cyan")
    if not delta.complete:
        heading.append(
            f"  (delta channel: the ancestors back to a snapshot are missing; {writes} found)",
            style="yellow",
        )
    elif delta.rebuilt:
        how = "LangGraph's message reducer" if delta.reducer == "messages" else "list concatenation"
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


def _interrupt_line(interrupt: Any, info: InterruptInfo | None, full: bool) -> Text:
    answered = info is not None and info.answered
    line = Text("    answered: " if answered else "    waiting on: ", style="yellow")
    line.append(brief(_interrupt_value(interrupt), full), style="yellow")
    if info is not None and info.has_answer:
        line.append(f"  → {brief(info.answer, full)}", style="green")
    if info is not None and info.id:
        line.append(f"  id={info.id}", style="dim")
    if info is not None and info.response_schema is not None:
        line.append(f"\n      expects: {brief(info.response_schema, full)}", style="dim")
    return line


def _kv_table(mapping: dict[str, Any], full: bool) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in mapping.items():
        table.add_row(str(key), brief(value, full))
    return table


def _versions_table(checkpoint: Checkpoint) -> Table:
    table = Table(box=_boxed(), header_style="bold", pad_edge=False)
    table.add_column("CHANNEL", no_wrap=True)
    table.add_column("VERSION", justify="right")
    table.add_column("SEEN BY", overflow="fold")
    for channel, version in checkpoint.channel_versions.items():
        seen_by = [
            f"{node}@{parse_version(seen[channel])}"
            for node, seen in checkpoint.versions_seen.items()
            if isinstance(seen, dict) and channel in seen
        ]
        counter = parse_version(version)
        table.add_row(channel, str(counter if counter is not None else version), ", ".join(seen_by))
    return table


_STATE_STYLE = {
    "done": "green",
    "failed": "bold red",
    "interrupted": "bold yellow",
    "to run": "cyan",
}


def _next_text(tasks: list[Task], *, latest: bool) -> Text:
    """The tasks due at the checkpoint with how each ended; on the latest checkpoint, also
    what is still to run (LangGraph's `get_state().next`)."""
    if not tasks:
        return Text("(nothing: the run is finished)")
    text = Text()
    for i, task in enumerate(tasks):
        if i:
            text.append(", ")
        label = f"{task.name}[{task.send_index}]" if task.send_index is not None else task.name
        text.append(label)
        text.append(f" ({task.state})", style=_STATE_STYLE.get(task.state, "dim"))
    if latest:
        left = [t for t in tasks if not t.finished]
        text.append("\nstill to run: ", style="bold")
        text.append(", ".join(t.name for t in left) if left else "nothing")
    return text


def _writes_view(checkpoint: Checkpoint, tasks: list[Task] | None, full: bool) -> Any:
    writes = checkpoint.pending_writes
    labels = task_labels(checkpoint, tasks)
    by_id = {t.id: t for t in tasks or []}
    if writes is None:
        return Text("(this store keeps no writes)", style="dim")
    if not writes:
        return Text("(none)", style="dim")
    parts: list[Any] = []
    current: str | None = None
    for write in writes:
        if write.task_id != current:
            current = write.task_id
            if write.task_id == NULL_TASK_ID:
                parts.append(Text("input / update_state (no task)", style="bold"))
            else:
                name = labels.get(write.task_id) or write.task_id[:8]
                path = f"  {write.task_path}" if write.task_path else ""
                heading = Text(f"task {name}", style="bold")
                heading.append(f"  {write.task_id}{path}", style="dim")
                parts.append(heading)
        style = {"__error__": "bold red", "__interrupt__": "bold yellow"}.get(write.channel, "")
        line = Text(f"  {write.channel}", style=style or "cyan")
        line.append(f" [{write.idx}]", style="dim")
        if write.channel == INTERRUPT and isinstance(write.value, list):
            task = by_id.get(write.task_id)
            infos = task.interrupts if task is not None else []
            parts.append(line)
            for i, interrupt in enumerate(write.value):
                parts.append(_interrupt_line(interrupt, infos[i] if i < len(infos) else None, full))
            continue
        if is_message(write.value) or (
            isinstance(write.value, list)
            and write.value
            and all(is_message(v) for v in write.value)
        ):
            parts.append(line)
            parts.append(value_view(write.value, full))
            continue
        line.append(" " + brief(write.value, full), style=style)
        parts.append(line)
    return Group(*parts)
