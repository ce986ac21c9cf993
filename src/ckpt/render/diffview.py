"""The human view of `ckpt diff`: a coloured tree of changes, old and new values side by side."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ckpt.analysis.changes import (
    ALIGN_LIMIT,
    IDENTITY_KEYS,
    STORAGE_KEYS,
    Change,
    Item,
    PathPart,
    common_ends,
)
from ckpt.analysis.messages import is_message
from ckpt.decoders import parse_version
from ckpt.records.model import is_internal
from ckpt.records.types import CheckpointRecord
from ckpt.render.human import Hanging, content_text, role_of, task_labels
from ckpt.render.text import (
    brief,
    brief_within,
    cut,
    human_size,
    short_name,
    short_time,
    task_name,
    zone_label,
)

# Sections in reading order: errors and interrupts, then what the step did, bookkeeping
# after.
PROBLEMS = "errors and interrupts"
SECTION_ORDER = (
    PROBLEMS,
    "metadata",
    "next",
    "tasks",
    "channel_values",
    "pending_writes",
    "updated_channels",
    "pending_sends",
    "channel_versions",
    "versions_seen",
    "v",
)
VERSION_SECTIONS = frozenset({"channel_versions", "versions_seen"})
INLINE = 48  # old and new both shorter than this: one line "old → new"
LONG_TEXT = 80  # strings longer than this (or multi-line) are diffed, not shown whole
# Strings longer than this (characters) are named by size and hash, not diffed, unless
# --full: a word diff of two 16 MB strings held ~300 MB and printed all 32 MB (issue 29).
LARGE_TEXT = 1 << 20
# Rich holds a whole view while it lays it out (~1.4 KB a line, ~60 us), so a view lays
# out at most ROOM characters of values, a line counting LINE_COST more: a --full diff of
# two 16 MB lists ran past 60 s, and of a 16 MB text MemoryError under a 1 GB limit
# (issue 38). Past the room, --full values are cut as without it, and long diffs and
# message lists end in a line counting the rest. `ckpt show --json --blobs` has them.
ROOM = 4 << 20
LINE_COST = 100
# Changes listed per section (the summary counts them all): a section of 200,000 changes
# (a nested 16 MB value) laid out as a tree ended in MemoryError (issue 38).
SHOWN = 1_000
KIND_STYLE = {"added": "green", "removed": "red", "changed": "yellow"}
KIND_MARK = {"added": "+", "removed": "-", "changed": "~"}


def diff_view(
    a: CheckpointRecord,
    b: CheckpointRecord,
    changes: Sequence[Change],
    *,
    full: bool,
    local: bool = False,
) -> RenderableType:
    parts: list[RenderableType] = [_header(a, b, local)]
    relation = _relation(a, b)
    if relation:
        parts.append(Text(f"   {relation}", style="dim italic"))
    shown = [c for c in changes if c.section not in IDENTITY_KEYS and c.section not in STORAGE_KEYS]
    if not shown:
        parts.append(Text("\nno differences", style="bold green"))
        return Group(*parts)
    by_section: dict[str, list[Change]] = {}
    applied: list[str] = []  # A's writes that B's values now hold: said once, in values
    child = relation == "B is A's child"
    for change in shown:
        section = change.section
        if section == "pending_writes" and len(change.path) == 2:
            key = getattr(change.path[1], "key", None) or ""
            if key.endswith(("→ __error__", "→ __interrupt__")):
                section = PROBLEMS
            elif child and change.kind == "removed":
                applied.append(key)
                continue
        if section in ("updated_channels", "tasks"):
            continue  # a set, and tasks by id: below
        by_section.setdefault(section, []).append(change)
    moved = _updated_set(a, b)
    if moved:
        by_section["updated_channels"] = moved
    tasks = _task_changes(a, b)
    if tasks:
        by_section["tasks"] = tasks
    labels = {**task_labels(a), **task_labels(b)}  # as show names each task
    order = [s for s in SECTION_ORDER if s in by_section]
    order += [s for s in by_section if s not in SECTION_ORDER]
    room = _Room(full)
    for section in order:
        parts.append(Text(""))
        listed_here = _internal_last(by_section[section])
        parts.append(_section_tree(section, listed_here[:SHOWN], room, labels))
        if len(listed_here) > SHOWN:
            more = len(listed_here) - SHOWN
            parts.append(
                Text(
                    f"… {more:,} more change{'s' if more != 1 else ''} in {section} "
                    "(--json lists every one)",
                    style="dim",
                )
            )
        if section == "channel_values" and applied:
            parts.append(_applied(applied))
    if applied and "channel_values" not in by_section:
        parts.append(Text(""))
        parts.append(_applied(applied))
    listed = [c for changes_ in by_section.values() for c in changes_]
    counts = {kind: sum(c.kind == kind for c in listed) for kind in KIND_STYLE}
    summary = Text(f"\n{len(listed)} change{'s' if len(listed) != 1 else ''}: ", style="bold")
    summary.append(", ".join(f"{n} {kind}" for kind, n in counts.items()))
    if applied:
        summary.append(f"; {len(applied)} pending write{'s' if len(applied) != 1 else ''} applied")
    parts.append(summary)
    if full and room.spent:
        parts.append(
            Text(
                f"(--full lays out {human_size(ROOM)} of values; the rest are cut here: "
                "ckpt show --json --blobs prints them whole)",
                style="dim",
            )
        )
    return Group(*parts)


class _Room:
    """What is left of the ROOM a view may lay out, and whether --full asked for values
    whole."""

    def __init__(self, full: bool) -> None:
        self.full = full
        self.left = ROOM
        self.spent = False  # something was cut, or not laid out, for want of room

    def take(self, cost: int) -> bool:
        """Take `cost` of the room if it is left."""
        if cost > self.left:
            self.spent = True
            return False
        self.left -= cost
        return True

    def whole(self, text: str) -> bool:
        """Whether `text` is laid out whole: with --full, while the room lasts."""
        return self.full and self.take(_cost(text))


def _cost(text: str) -> int:
    return len(text) + LINE_COST * text.count("\n")


def _applied(keys: list[str]) -> Text:
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    listed = "; ".join(k if n == 1 else f"{k} ×{n}" for k, n in counts.items())
    return Text(f"(A's pending writes, now in B's values: {listed})", style="dim")


def _updated_set(a: CheckpointRecord, b: CheckpointRecord) -> list[Change]:
    """updated_channels as the set it is: the channels only A's step, or only B's, moved."""
    old, new = a["updated_channels"], b["updated_channels"]
    if old == new:
        return []
    if old is None or new is None:
        return [Change("changed", ("updated_channels",), "/updated_channels", old, new)]
    return [
        *(Change("removed", ("updated_channels", c), "", c) for c in old if c not in new),
        *(Change("added", ("updated_channels", c), "", None, c) for c in new if c not in old),
    ]


def _task_changes(a: CheckpointRecord, b: CheckpointRecord) -> list[Change]:
    """The tasks due at A and at B matched by task id, each told by its label and state."""

    label = task_name
    old = {t["id"]: t for t in a["tasks"] or []}
    new = {t["id"]: t for t in b["tasks"] or []}
    changes: list[Change] = []
    for task_id, task in old.items():
        if task_id not in new:
            changes.append(Change("removed", ("tasks", label(task)), "", task["state"]))
    for task_id, task in new.items():
        before = old.get(task_id)
        if before is None:
            changes.append(Change("added", ("tasks", label(task)), "", None, task["state"]))
        elif before["state"] != task["state"]:
            path = ("tasks", label(task))
            changes.append(Change("changed", path, "", before["state"], task["state"]))
    return changes


def _internal_last(changes: list[Change]) -> list[Change]:
    """LangGraph's own channels (branch:to:*, __pregel_tasks ...) after the graph's state."""
    return sorted(changes, key=lambda c: len(c.path) > 1 and _internal(c.path[1]))


def _internal(part: PathPart) -> bool:
    return isinstance(part, str) and is_internal(part)


def _meta(record: CheckpointRecord) -> dict[str, Any]:
    metadata = record["metadata"]
    return metadata if isinstance(metadata, dict) else {}


def _header(a: CheckpointRecord, b: CheckpointRecord, local: bool = False) -> RenderableType:
    """The two checkpoints, a line each; a line the width wraps goes on under the id, its
    parts (a time, a size like `4.5 KB`) whole."""
    lines: list[RenderableType] = []
    one_thread = (a["thread_id"], a["checkpoint_ns"]) == (b["thread_id"], b["checkpoint_ns"])
    if one_thread:
        title = Text(f"thread {a['thread_id']}", style="bold")
        if a["checkpoint_ns"]:
            title.append(f"  ns {a['checkpoint_ns']}", style="bold")
        lines.append(title)
    for label, style, record in (("A", "bold red", a), ("B", "bold green", b)):
        step = _meta(record).get("step")
        source = _meta(record).get("source")
        source_text = f" {source}" if isinstance(source, str) else ""
        parts = [f"step {step if step is not None else '?'}{source_text}"]
        if not one_thread:
            parts.append(f"thread {record['thread_id']}")
            if record["checkpoint_ns"]:
                parts.append(f"ns {record['checkpoint_ns']}")
        when = short_time(record["ts"], local)
        # The time and the size go on together: a size alone on a line reads as a stray.
        when = f"{when} {zone_label(local)}  " if when else ""
        parts.append(when + human_size(record["size"]))
        first = Text()
        first.append(f"{label}  ", style=style)
        first.append(record["checkpoint_id"], style="yellow")
        pieces = [first, *(Text(p, style="dim") for p in parts if p)]
        lines.append(Hanging(pieces, hang=3))
    return Group(*lines)


def _relation(a: CheckpointRecord, b: CheckpointRecord) -> str:
    same = (a["thread_id"], a["checkpoint_ns"]) == (b["thread_id"], b["checkpoint_ns"])
    if same and a["checkpoint_id"] == b["checkpoint_id"]:
        return "the same checkpoint"
    if same:
        if b["parent_checkpoint_id"] == a["checkpoint_id"]:
            return "B is A's child"
        if a["parent_checkpoint_id"] == b["checkpoint_id"]:
            return "B is A's parent"
        if a["parent_checkpoint_id"] and a["parent_checkpoint_id"] == b["parent_checkpoint_id"]:
            return "A and B are siblings (a fork)"
    if a["thread_id"] == b["thread_id"] and _meta(b).get("parents", {}) == {
        **_meta(a).get("parents", {}),
        a["checkpoint_ns"]: a["checkpoint_id"],
    }:
        return "B is in a subgraph run from A"
    return ""


# -- the tree ---------------------------------------------------------------------------------


def _section_tree(
    section: str, changes: list[Change], room: _Room, labels: dict[str, str] | None = None
) -> Tree:
    root = Tree(Text(section, style="bold underline"), guide_style="dim")
    nodes: dict[tuple[PathPart, ...], Tree] = {}
    for change in changes:
        parent = root
        path = change.path
        for depth in range(1, len(path) - 1):
            prefix = path[: depth + 1]
            node = nodes.get(prefix)
            if node is None:
                style = "dim" if depth == 1 and _internal(prefix[-1]) else "bold"
                node = nodes[prefix] = parent.add(Text(_part(prefix[-1]), style=style))
            parent = node
        _leaf(parent, change, section, room, labels or {})
    return root


def _part(part: PathPart) -> str:
    if isinstance(part, Item):
        return str(part)
    return short_name(part) or '""'  # the root namespace in metadata.parents


def _leaf(parent: Tree, change: Change, section: str, room: _Room, labels: dict[str, str]) -> None:
    style = KIND_STYLE[change.kind]
    label = Text()
    label.append(f"{KIND_MARK[change.kind]} ", style=f"bold {style}")
    value = change.new if change.kind == "added" else change.old
    last = change.path[-1]
    name = _part(last) if len(change.path) > 1 else section
    if isinstance(last, Item) and is_message(value if change.kind != "changed" else change.new):
        name = f"#{last.index + 1}"  # as `ckpt show --blobs` numbers messages
    if (
        section in ("pending_writes", PROBLEMS)
        and isinstance(value, dict)
        and value.get("task_id") in labels
    ):
        idx = value.get("idx")
        more = f" #{idx}" if isinstance(idx, int) and idx > 0 else ""
        channel = short_name(str(value.get("channel")))
        name = f"[{short_name(labels[value['task_id']])} → {channel}{more}]"
    quiet = len(change.path) > 1 and _internal(change.path[1])
    label.append(name, style="dim" if quiet else "bold")
    if section == "updated_channels" and len(change.path) == 2:
        parent.add(label)
        return
    if change.kind != "changed":
        if (
            section in ("pending_writes", PROBLEMS)
            and len(change.path) == 2
            and isinstance(value, dict)
        ):
            value = value.get("value")  # the label already says which task wrote which channel
        if section in VERSION_SECTIONS:
            value = _versions_brief(value)
        label.append("  ")
        label.append_text(_value_text(value, room, style))
        parent.add(label)
        return
    old, new = change.old, change.new
    if section in VERSION_SECTIONS:
        label.append("  ")
        label.append(_version(old, new), style="red")
        label.append(" → ")
        label.append(_version(new, old), style="green")
        parent.add(label)
    elif isinstance(old, str) and isinstance(new, str) and _long(old, new):
        diff = _text_diff(old, new, room)
        if diff is not None:
            parent.add(Group(label, diff))
        else:
            large = max(len(old), len(new)) > LARGE_TEXT and not room.full
            more = "--full diffs it" if large else "too large to lay out here"
            label.append(
                f"  value changed ({_text_size(old)}, sha256 {_digest(old)} → "
                f"{_text_size(new)}, sha256 {_digest(new)}; {more})",
                style="yellow",
            )
            parent.add(label)
    else:
        old_text, new_text = _brief(old, room), _brief(new, room)
        if len(old_text) < INLINE and len(new_text) < INLINE:
            label.append("  ")
            label.append(old_text, style="red")
            label.append(" → ")
            label.append(new_text, style="green")
            parent.add(label)
        else:
            parent.add(Group(label, _side_by_side(old_text, new_text)))


def _text_size(text: str) -> str:
    return human_size(len(text.encode("utf-8", "surrogatepass")))


def _digest(text: str) -> str:
    """The first 12 hex digits of the text's sha256 (UTF-8), as `git` shortens ids."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12] + "…"


def _brief(value: Any, room: _Room) -> str:
    """A value on one line: whole with --full while the room lasts, else cut."""
    if isinstance(value, str):
        text = repr(value) if not value.strip() or "\n" in value else value
        return text if room.whole(text) else cut(text, False)
    if room.full:
        whole = brief_within(value, room.left)
        if whole is not None and room.take(len(whole)):
            return whole
        room.spent = True
    return brief(value)


def _versions_brief(value: Any) -> Any:
    """An added or removed version (or a node's versions_seen) by its counters, as `show`."""
    if isinstance(value, dict):
        return {k: _versions_brief(v) for k, v in value.items()}
    counter = parse_version(value)
    return value if counter is None else counter


def _version(version: Any, other: Any) -> str:
    """A channel version by its counter; whole when the counter alone would hide the change."""
    counter = parse_version(version)
    if counter is None or counter == parse_version(other):
        return brief(version)
    return str(counter)


def _value_text(value: Any, room: _Room, style: str) -> Text:
    """An added or removed value: messages as chat lines, anything else on one line. A
    list of messages ends where the room does, in a line counting the rest."""
    if is_message(value):
        return _message(value, room, style)
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        text = Text()
        for i, message in enumerate(value):
            if i:
                text.append("\n    ")
            if room.left <= 0:
                room.spent = True
                rest = len(value) - i
                text.append(f"… {rest:,} more message{'s' if rest != 1 else ''}", style="dim")
                break
            text.append_text(_message(message, room, style))
        return text
    return Text(_brief(value, room), style=style)


def _message(message: dict[str, Any], room: _Room, style: str) -> Text:
    """A message as a chat line (cut unless --full), taking its room."""
    text = Text(f"{role_of(message)}: ", style=f"bold {style}")
    content = content_text(message.get("content"))
    if not room.whole(content):
        content = cut(content, False, 300)
        room.left -= _cost(content)
    text.append(content, style=style)
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            args = brief_within(call.get("args"), room.left) if room.full else None
            if args is None:
                room.spent = room.spent or room.full
                args = brief(call.get("args"), limit=200)
            room.left -= LINE_COST + len(args)
            text.append(f"\n    → {call.get('name')}({args})", style=style)
    room.left -= LINE_COST
    return text


def _side_by_side(old: str, new: str) -> Table:
    table = Table(box=None, show_header=True, pad_edge=False, padding=(0, 2, 0, 4), expand=False)
    table.add_column("A", header_style="bold red", style="red", overflow="fold", ratio=1)
    table.add_column("B", header_style="bold green", style="green", overflow="fold", ratio=1)
    table.add_row(old, new)
    return table


# -- long strings -----------------------------------------------------------------------------


def _long(old: str, new: str) -> bool:
    return "\n" in old or "\n" in new or max(len(old), len(new)) > LONG_TEXT


def _text_diff(old: str, new: str, room: _Room) -> RenderableType | None:
    """Line diff for text with lines; word diff for one long line (difflib both). None
    when it is not laid out: past LARGE_TEXT without --full, or past the room."""
    if "\n" in old or "\n" in new:
        return _line_diff(old, new, room)
    return _word_diff(old, new, room)


def _line_diff(old: str, new: str, room: _Room) -> Text | None:
    """A unified diff, whole with --full while the room lasts; else with two lines of
    context, its lines laid out while the room lasts and the rest counted."""
    whole = room.full and room.take(_cost(old) + _cost(new))
    if not whole and max(len(old), len(new)) > LARGE_TEXT:
        return None
    old_lines, new_lines = old.splitlines(), new.splitlines()
    codes = _opcodes(old_lines, new_lines, autojunk=True)
    lines = _unified(old_lines, new_lines, codes, context=10**6 if whole else 2)
    text = Text()
    for line in lines:
        if not whole and not room.take(LINE_COST + len(line)):
            rest = 1 + sum(1 for _ in lines)
            text.append(
                f"    … {rest:,} more line{'s' if rest != 1 else ''} of this diff\n", style="dim"
            )
            break
        if line.startswith("@@"):
            text.append(f"    {line}\n", style="cyan")
        elif line.startswith("-"):
            text.append(f"    {line}\n", style="red")
        elif line.startswith("+"):
            text.append(f"    {line}\n", style="green")
        else:
            text.append(f"    {line}\n", style="dim")
    text.rstrip()
    return text


def _word_diff(old: str, new: str, room: _Room) -> Text | None:
    too_long = max(len(old), len(new)) > LARGE_TEXT and not room.full
    if too_long or not room.take(LINE_COST + len(old) + len(new)):
        return None
    old_words, new_words = re.split(r"(\s+)", old), re.split(r"(\s+)", new)
    text = Text("    ")
    for tag, i1, i2, j1, j2 in _opcodes(old_words, new_words, autojunk=False):
        if tag == "equal":
            text.append("".join(old_words[i1:i2]))
            continue
        if i2 > i1:
            text.append("".join(old_words[i1:i2]), style="red strike")
        if j2 > j1:
            text.append("".join(new_words[j1:j2]), style="bold green")
    return text


Opcode = tuple[str, int, int, int, int]


def _opcodes(old: list[str], new: list[str], *, autojunk: bool) -> list[Opcode]:
    """difflib's opcodes turning `old` into `new`. Past ALIGN_LIMIT pairs only the differing
    middle is aligned, and past it again the middle is one replacement: difflib is
    quadratic at worst, and a word diff of two 1 MB lines ran for more than 5 minutes."""
    if len(old) * len(new) <= ALIGN_LIMIT:
        aligned: list[Opcode] = [*SequenceMatcher(None, old, new, autojunk=autojunk).get_opcodes()]
        return aligned
    start, end_old, end_new = common_ends(old, new)
    codes: list[Opcode] = [("equal", 0, start, 0, start)] if start else []
    if (end_old - start) * (end_new - start) <= ALIGN_LIMIT:
        matcher = SequenceMatcher(None, old[start:end_old], new[start:end_new], autojunk=autojunk)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            codes.append((tag, start + i1, start + i2, start + j1, start + j2))
    elif end_old > start and end_new > start:
        codes.append(("replace", start, end_old, start, end_new))
    elif end_old > start or end_new > start:
        codes.append(("delete" if end_old > start else "insert", start, end_old, start, end_new))
    if end_old < len(old):
        codes.append(("equal", end_old, len(old), end_new, len(new)))
    return codes


def _unified(old: list[str], new: list[str], codes: list[Opcode], context: int) -> Iterator[str]:
    """The lines of `difflib.unified_diff(old, new, lineterm="", n=context)` after its two
    file header lines, from `codes`."""
    for group in _grouped(codes, context):
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])


def _grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """`SequenceMatcher.get_grouped_opcodes(context)` for `codes` (difflib's own steps)."""
    codes = list(codes) or [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A unified diff's line range, as difflib writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"
