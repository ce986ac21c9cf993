"""The browser's panes: lists and views that draw only the lines on screen (Textual's line
API), so that 10,000 checkpoints or a 3 MB checkpoint cost what one screenful costs."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Input
from textual.widgets._footer import FooterKey  # what Footer yields; not exported

from ckpt.browse.model import History, Key, ThreadList, key_of
from ckpt.records.encode import dumps
from ckpt.records.types import CheckpointRecord, ThreadRecord
from ckpt.render.browse_view import history_heading, history_row, thread_header, thread_row
from ckpt.render.text import clean


def lay_out(renderable: RenderableType, width: int) -> list[Strip]:
    """A renderable as lines of `width` cells (any thread: the console is its own). Text
    from the store has its control characters escaped on the way, as the CLI's console
    does (render/output.py), so that no byte of a store reaches the terminal as a command."""
    console = Console(
        width=width,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    )
    options = console.options.update(width=width, highlight=False)
    return [
        Strip([Segment(clean(text), style) for text, style, control in line if not control])
        for line in console.render_lines(renderable, options, pad=False)
    ]


def json_lines(value: Any, limit: int | None) -> list[Strip]:
    """A value as indented JSON (what `--json` prints), one line per line, never wrapped:
    what the view shows can be copied back as JSON. Cut after `limit` characters."""
    text = dumps(value, indent=2)
    cut = limit is not None and len(text) > limit
    lines = [Strip([Segment(clean(line))]) for line in (text[:limit] if cut else text).split("\n")]
    if cut:
        more = f"… {len(text) - (limit or 0):,} more characters: p pages all of it, x exports it"
        lines.append(Strip([Segment(more, Style(bold=True, color="yellow"))]))
    return lines


class RowMessage(Message):
    """What a RowList says about one of its rows: the list (the `control` that `@on`
    selectors match) and the row's index."""

    def __init__(self, rows: RowList, index: int) -> None:
        super().__init__()
        self.rows = rows
        self.index = index

    @property
    def control(self) -> RowList:
        return self.rows


class RowList(ScrollView, can_focus=True):
    """Rows made one at a time as they scroll into view, and a cursor."""

    COMPONENT_CLASSES = {"row-list--cursor", "row-list--header"}
    DEFAULT_CSS = """
    RowList {
        overflow-x: hidden;
        background: $surface;
    }
    RowList > .row-list--cursor {
        background: $panel-lighten-2;
    }
    RowList:focus > .row-list--cursor {
        background: $accent 45%;
        text-style: bold;
    }
    RowList > .row-list--header {
        text-style: bold;
        color: $text-muted;
    }
    """
    # Priority, as the app's keys (app.py BINDINGS): every key acts as it is read.
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, priority=True),
        Binding("down", "move(1)", "Down", show=False, priority=True),
        Binding("pageup", "page(-1)", "Page up", show=False, priority=True),
        Binding("pagedown", "page(1)", "Page down", show=False, priority=True),
        Binding("home", "edge(0)", "First", show=False, priority=True),
        Binding("end", "edge(1)", "Last", show=False, priority=True),
        Binding("left", "pan(-8)", "Scroll left", show=False, priority=True),
        Binding("right", "pan(8)", "Scroll right", show=False, priority=True),
        Binding("enter", "choose", "Open", show=False, priority=True),
    ]
    header_lines = 0
    KEPT_ROWS = 256  # rows kept drawn: a few screens, however long the list

    class Highlighted(RowMessage):
        """The cursor moved to a row."""

    class Chosen(RowMessage):
        """Enter (or a double click) on a row."""

    def __init__(self, *, id: str | None = None, then: str | None = None) -> None:
        super().__init__(id=id)
        self.then = then  # the widget Enter moves to (a query)
        self.count = 0
        self.cursor = -1
        self._pan = 0
        self._strips: LRUCache[int, Strip] = LRUCache(self.KEPT_ROWS)
        self._layout_width = 0
        # Until a frame has shown the cursor: a scroll asked for before the first layout
        # (or before the new height counted) can be clamped to the top, so each frame
        # checks, and scrolls again after it if the cursor is still out of view.
        self._bring_cursor_into_view = False
        # Highlighted messages posted and not yet acted on (BrowseApp.busy counts them:
        # between the post and the handler, no query is under way yet).
        self.unheard = 0

    # -- what a subclass draws ---------------------------------------------------------------
    def row(self, index: int, width: int) -> Text:
        raise NotImplementedError

    def header(self, width: int) -> Text:
        return Text()

    def selectable(self, index: int) -> bool:
        return True

    # -- state -------------------------------------------------------------------------------
    def reset(self, count: int, cursor: int | None = None, *, announce: bool = True) -> None:
        """New rows: forget the drawn ones, put the cursor on `cursor` (else the first)."""
        self.count = count
        self.cursor = -1
        self._pan = 0
        self._strips.clear()
        self.virtual_size = Size(self.size.width, count + self.header_lines)
        self.scroll_to(y=0, animate=False)
        if count:
            self.move_to(cursor if cursor is not None else 0, announce=announce)
            # The new height counts once the layout has seen it: scroll then as well.
            self.call_after_refresh(self._scroll_to_cursor)
        self.refresh()

    def redraw(self) -> None:
        """Draw every row again (their content changed, not their number)."""
        self._strips.clear()
        self.refresh()

    def move_to(self, index: int, *, announce: bool = True, direction: int = 1) -> None:
        if not self.count:
            return
        index = min(max(index, 0), self.count - 1)
        index = self._selectable_near(index, direction)
        previous, self.cursor = self.cursor, index
        self._strips.discard(previous)
        self._strips.discard(index)
        self._bring_cursor_into_view = True
        self._scroll_to_cursor()
        self.refresh()
        if announce and index != previous:
            self.unheard += 1
            self.post_message(self.Highlighted(self, index))

    def _selectable_near(self, index: int, direction: int) -> int:
        for step in (direction, -direction):
            probe = index
            while 0 <= probe < self.count:
                if self.selectable(probe):
                    return probe
                probe += step
        return index

    def _scroll_to_cursor(self) -> None:
        visible = max(self.size.height - self.header_lines, 1)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False)

    # -- keys and mouse ----------------------------------------------------------------------
    def action_move(self, step: int) -> None:
        self.move_to(self.cursor + step, direction=1 if step > 0 else -1)

    def action_page(self, pages: int) -> None:
        visible = max(self.size.height - self.header_lines - 1, 1)
        self.move_to(self.cursor + pages * visible, direction=1 if pages > 0 else -1)

    def action_edge(self, end: int) -> None:
        self.move_to(self.count - 1 if end else 0, direction=-1 if end else 1)

    def action_pan(self, cells: int) -> None:
        self._pan = max(self._pan + cells, 0)
        self.refresh()

    def action_choose(self) -> None:
        if self.cursor >= 0:
            self._choose(self.cursor)

    def _choose(self, index: int) -> None:
        self.post_message(self.Chosen(self, index))
        if self.then is not None:
            self.screen.set_focus(self.screen.query_one(self.then))  # at once, as above

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < self.header_lines:
            return
        index = round(self.scroll_y) + offset.y - self.header_lines
        if 0 <= index < self.count:
            self.move_to(index)
            if event.chain > 1:
                self._choose(index)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self.count + self.header_lines)
        self._strips.clear()
        self._scroll_to_cursor()

    # -- drawing -------------------------------------------------------------------------------
    def _check_cursor_in_view(self) -> None:
        visible = self.size.height - self.header_lines
        if visible <= 0 or self.cursor < 0:
            return  # no layout yet
        top = round(self.scroll_y)
        if top <= self.cursor < top + visible:
            self._bring_cursor_into_view = False
        else:
            self.call_after_refresh(self._scroll_to_cursor)

    def render_line(self, y: int) -> Strip:
        if y == 0 and self._bring_cursor_into_view:
            self._check_cursor_in_view()
        width = self.size.width
        base = self.rich_style
        if y < self.header_lines:
            style = base + self.get_component_rich_style("row-list--header")
            strip = Strip(self.header(width).render(self.app.console))
            return strip.crop_extend(self._pan, self._pan + width, style).apply_style(style)
        index = round(self.scroll_y) + y - self.header_lines
        if not 0 <= index < self.count:
            return Strip.blank(width, base)
        cached = self._strips.get(index)
        if cached is None:
            text = self.row(index, width)
            text.no_wrap = True
            cached = Strip(text.render(self.app.console))
            self._strips.set(index, cached)
        strip = cached
        style = base
        if index == self.cursor:
            style = base + self.get_component_rich_style("row-list--cursor")
        return strip.crop_extend(self._pan, self._pan + width, style).apply_style(style)


class ThreadRows(RowList):
    """The threads pane."""

    HELP = """
## Threads

Every thread of the store, as `ckpt threads` lists it: status, step, size, checkpoints
and when it was last written (the columns the pane has room for). The highlighted
thread's history opens in the history pane.

- **/** filter: words match thread ids and metadata values; a status (`error`,
  `interrupted` ...) keeps that status; `KEY=VALUE` matches the latest metadata
  (`--where`). **Escape** in the filter clears it.
- **s** changes the order (updated, thread, checkpoints, size, step, status).
- **e** / **E** jump to the next / previous thread that failed, **i** / **I** to one
  waiting on an interrupt.
- **Enter** moves to the history.
"""
    BINDINGS = [
        Binding("s", "app.sort", "Sort", priority=True),
        Binding("e", "app.jump('error', 1)", "Next error", priority=True),
        Binding("E", "app.jump('error', -1)", "Previous error", show=False, priority=True),
        Binding("i", "app.jump('interrupted', 1)", "Next interrupt", priority=True),
        Binding(
            "I", "app.jump('interrupted', -1)", "Previous interrupt", show=False, priority=True
        ),
    ]
    header_lines = 1

    def __init__(self, *, id: str | None = None, then: str | None = None) -> None:
        super().__init__(id=id, then=then)
        self.threads = ThreadList([])

    def show(self, threads: ThreadList, thread_id: str | None, *, announce: bool = True) -> None:
        self.threads = threads
        self.reset(len(threads.shown), threads.index_of(thread_id), announce=announce)

    @property
    def current(self) -> ThreadRecord | None:
        shown = self.threads.shown
        return shown[self.cursor] if 0 <= self.cursor < len(shown) else None

    def header(self, width: int) -> Text:
        return thread_header(width, self.threads.id_width)

    def row(self, index: int, width: int) -> Text:
        return thread_row(self.threads.shown[index], width, self.threads.id_width)


class HistoryRows(RowList):
    """The history pane."""

    HELP = """
## History

The thread's checkpoints as `ckpt history` draws them: oldest first, forks and subgraph
runs as branches under the checkpoint they leave. A line gives the id, step and source,
then what ran after the checkpoint, what it updated and, last, its time. **✗** marks a
checkpoint whose task failed (dim: it was retried), **⏸** one with an interrupt (dim:
answered), **◆** the checkpoint marked for diff.
The cursor starts on the thread's newest checkpoint.

- **e** / **E** next / previous task error, **i** / **I** next / previous interrupt.
- **m** marks the checkpoint: the diff then compares it with the one highlighted (for
  example two fork branches); **m** on it again removes the mark.
- **←** / **→** scroll long lines. **Enter** moves to the checkpoint.
"""
    BINDINGS = [
        Binding("e", "app.jump('failed', 1)", "Next error", priority=True),
        Binding("E", "app.jump('failed', -1)", "Previous error", show=False, priority=True),
        Binding("i", "app.jump('interrupted', 1)", "Next interrupt", priority=True),
        Binding(
            "I", "app.jump('interrupted', -1)", "Previous interrupt", show=False, priority=True
        ),
    ]

    def __init__(self, *, id: str | None = None, then: str | None = None) -> None:
        super().__init__(id=id, then=then)
        self.history: History | None = None
        self.marked: Key | None = None  # the checkpoint marked for diff
        # The thread whose history the pane is for (the threads pane's cursor), asked at
        # each key: the list's cursor moves before the messages saying so are read.
        self.wanted: Callable[[], str | None] = lambda: None
        self._queued: list[Callable[[], object]] = []  # keys pressed while it loads
        self._failed: str | None = None  # the thread whose history could not be read

    @property
    def awaited(self) -> str | None:
        """The thread whose history is on its way, if the one shown is another's."""
        wanted = self.wanted()
        shown = self.history.thread_id if self.history is not None else self._failed
        return wanted if wanted != shown else None

    def defer(self, work: Callable[[], object]) -> bool:
        """Keep `work` for the history on its way (True), or say it can act now (False):
        keys pressed before it comes act on it, not on the history it replaces."""
        if self.awaited is None:
            return False
        self._queued.append(work)
        return True

    def arrived(self) -> None:
        """The wanted history is shown: the kept keys act, in the order they came."""
        if self.awaited is not None:
            return  # another history is still on its way: they wait for it
        queued, self._queued = self._queued, []
        for work in queued:
            work()

    def show(self, history: History | None, cursor: int | None) -> None:
        self.history = history
        self.reset(len(history.lines) if history else 0, cursor)
        self._failed = None
        if history is None:
            self._failed = self.wanted()  # none comes for it: nothing to wait for
            self._queued.clear()
        self.arrived()

    def action_move(self, step: int) -> None:
        if not self.defer(partial(super().action_move, step)):
            super().action_move(step)

    def action_page(self, pages: int) -> None:
        if not self.defer(partial(super().action_page, pages)):
            super().action_page(pages)

    def action_edge(self, end: int) -> None:
        if not self.defer(partial(super().action_edge, end)):
            super().action_edge(end)

    def selectable(self, index: int) -> bool:
        return self.history is not None and self.history.lines[index].record is not None

    @property
    def current(self) -> CheckpointRecord | None:
        """The checkpoint under the cursor (None on a fork or subgraph heading)."""
        lines = self.history.lines if self.history is not None else []
        return lines[self.cursor].record if 0 <= self.cursor < len(lines) else None

    def row(self, index: int, width: int) -> Text:
        assert self.history is not None
        line = self.history.lines[index]
        if line.record is None:
            return history_heading(line.prefix, line.kind, line.checkpoint_ns)
        return history_row(line.prefix, line.record, marked=key_of(line.record) == self.marked)


class FilterInput(Input):
    """The threads pane's filter: its hint the longest of `placeholders` that fits."""

    HELP = """
## Filter

The threads pane keeps the threads every word matches, as you type:

- a word: a piece of the thread id or of a value in the latest metadata;
- a status: `error`, `interrupted`, `pending`, `unknown`, `done` (as `--status`);
- `KEY=VALUE`: the latest metadata has KEY with that value (as `--where`).

**Enter** or **↓** goes back to the list, **Escape** clears the filter.
"""
    BINDINGS = [
        # Priority: they act as the key is read, so the keys typed next go to the list.
        Binding("escape", "clear", "Clear", priority=True),
        Binding("enter", "done", "To the list", show=False, priority=True),
        Binding("down", "done", "To the list", show=False, priority=True),
    ]

    def __init__(self, *, list_id: str, placeholders: Sequence[str], id: str | None = None) -> None:
        super().__init__(placeholder=placeholders[0], id=id)
        self.list_id = list_id
        self.placeholders = placeholders

    def on_resize(self, event: events.Resize) -> None:
        room = self.content_region.width - 1  # and the cursor
        fits = [hint for hint in self.placeholders if cell_len(hint) <= room]
        self.placeholder = fits[0] if fits else self.placeholders[-1]

    def action_clear(self) -> None:
        self.value = ""
        self.action_done()

    def action_done(self) -> None:
        self.screen.set_focus(self.screen.query_one(f"#{self.list_id}"))


class LinesView(ScrollView, can_focus=True):
    """Lines laid out elsewhere (a worker thread), drawn only where visible."""

    HELP = """
## Checkpoint

The highlighted checkpoint, in one of four views (the tabs):

- **o** the checkpoint as `ckpt show` prints it: ids, step, `next` (each due task and how
  it ended), metadata, channel versions, pending Sends and writes;
- **t** its tasks, each with its input, error, interrupts (their ids and answers), the
  subgraph it ran and its writes;
- **v** the channel values, messages as a conversation;
- **d** the diff with its parent, or with the checkpoint marked with **m**.

**j** shows the view's records as JSON, **f** long values whole. **c** copies the
selector, **C** the `ckpt show` command, **D** the `ckpt diff` command; **x** exports
the checkpoint's JSON to a file, **p** opens the view in `$PAGER`.
"""

    DEFAULT_CSS = """
    LinesView {
        background: $surface;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: Sequence[Strip] = []
        self._width = 0

    def show(self, lines: Sequence[Strip], *, keep_scroll: bool = False) -> None:
        self.lines = lines
        width = max((line.cell_length for line in lines), default=0)
        self.virtual_size = Size(width, len(lines))
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False)
        self.refresh()

    class Resized(Message):
        """The view's width changed: its lines must be laid out again."""

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.post_message(self.Resized())

    def text(self) -> str:
        """What the view shows, as plain text."""
        return "\n".join(line.text.rstrip() for line in self.lines)

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_y) + y
        width = self.size.width
        base = self.rich_style
        if not 0 <= index < len(self.lines):
            return Strip.blank(width, base)
        x = round(self.scroll_x)
        return self.lines[index].crop_extend(x, x + width, base).apply_style(base)


class KeyBar(Footer):
    """The footer: the keys of the focused pane and the app's, each shown whole. When they
    do not fit they come closer together, then with shorter names, then the least needed
    go (the help, ?, and the command palette list every key)."""

    SHORT: ClassVar[dict[str, str]] = {
        "Next error": "Error",
        "Next interrupt": "Interrupt",
        "Copy id": "Copy",
    }
    # Left out in this order while the keys do not fit (by key).
    LEAST_NEEDED: ClassVar[tuple[str, ...]] = ("p", "x", "m", "j", "c", "s", "slash")

    def __init__(self, *, compact_below: int = 0) -> None:
        super().__init__()
        self.compact_below = compact_below  # a narrower screen has the keys close always
        self._width = 0

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey) and not _palette(w)]
        room = self.size.width or self.app.size.width
        compact = room < self.compact_below or _keys_width(widgets, compact=False) > room
        if compact and _keys_width(widgets, compact=True) > room:
            for key in keys:
                key.description = self.SHORT.get(key.description, key.description)
            for name in self.LEAST_NEEDED:
                if _keys_width(widgets, compact=True) <= room:
                    break
                widgets = [w for w in widgets if not (w in keys and w.key == name)]
            if _keys_width(widgets, compact=True) > room:
                widgets = [w for w in widgets if not _palette(w)]
        self.compact = compact
        yield from widgets

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)


def _palette(widget: Widget) -> bool:
    return widget.has_class("-command-palette")


def _keys_width(widgets: Sequence[Widget], *, compact: bool) -> int:
    """The cells the footer's keys take, as Footer's and FooterKey's CSS lay them out: the
    key, a space and its name; padded around when not compact, a margin after each when
    compact; the palette key has a border on its left and, when not compact, a padding."""
    width = 0
    for widget in widgets:
        if not isinstance(widget, FooterKey):
            return 10_000  # a group of keys: not used here, never counted as fitting
        label = cell_len(widget.key_display)
        if widget.description:
            label += 1 + cell_len(widget.description)
        if _palette(widget):
            width += label + (2 if compact else 4)
        else:
            width += label + (1 if compact else 2)
    return width
