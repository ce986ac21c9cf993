"""`ckpt browse`: the Textual app. Threads, the highlighted thread's history, and the
highlighted checkpoint (its fields, tasks, values, a diff, or their JSON).

Every query runs on the session's store thread and every layout on a worker thread; the
screen only swaps in finished lines, so it never freezes, whatever the store's size. The
records come from ckpt.api and the views from ckpt.render (render/browse_view.py): the
app chooses what to show and never derives `next`, status or tasks itself.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from rich.console import RenderableType
from rich.text import Text
from textual import events, on
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Header, Input, Label, Static, Tab, Tabs
from textual.worker import WorkType

from ckpt.api import Comparison, closest_thread
from ckpt.browse.model import History, Key, ThreadList, key_of
from ckpt.browse.session import (
    Loaded,
    Selector,
    Session,
    Superseded,
    diff_command,
    shell_join,
    show_command,
)
from ckpt.browse.widgets import (
    FilterInput,
    HistoryRows,
    KeyBar,
    LinesView,
    RowList,
    ThreadRows,
    json_lines,
    lay_out,
)
from ckpt.errors import CkptError, NotFound
from ckpt.records.encode import dumps
from ckpt.records.types import CheckpointRecord
from ckpt.render import browse_view as views
from ckpt.render.plain import STATUS_STYLE
from ckpt.render.text import clean_line

T = TypeVar("T")
MODES = {"overview": "Checkpoint", "tasks": "Tasks", "values": "Values", "diff": "Diff"}
LAID_OUT = 12  # views kept laid out: going back to one is instant
# The JSON view shows at most this many characters of a value (a 3 MB checkpoint is 7 MB
# of indented JSON); the pager and the export get all of it.
JSON_LIMIT = 1_000_000
LOADING_AFTER = 0.15  # seconds a query runs before its pane shows that it is loading
PAGER_WIDTH = 120
NARROW = 140  # columns from which the threads and the history share the left


class ExportScreen(ModalScreen[str | None]):
    """Where to write the checkpoint's JSON."""

    HELP = """
## Export

Writes the checkpoint as `ckpt show --json --blobs` prints it: every field, the channel
values and the pending writes. The file must not exist yet: ckpt never overwrites one.

- **Enter** writes the file, **Escape** cancels.
"""
    # A modal screen hides the app's bindings: its own help key (? is typed in the path).
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("f1", "app.help", "Help")]
    DEFAULT_CSS = """
    ExportScreen {
        align: center middle;
    }
    ExportScreen > Vertical {
        width: 72;
        height: auto;
        border: round $accent;
        padding: 1 2;
        background: $surface;
    }
    ExportScreen Label.hint {
        color: $text-muted;
    }
    """

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Export the checkpoint's JSON (ckpt show --json --blobs) to:")
            yield Input(value=self.default, id="export-path")
            yield Label(
                "Enter: write (never over an existing file) · Escape: cancel", classes="hint"
            )

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class BrowseApp(App[None]):
    """Threads, history and checkpoints of one store, read-only."""

    TITLE = "ckpt browse"
    # Wide (NARROW and up): the threads over the history on the left, the checkpoint on
    # the right, full height. Narrow: the threads on the left, full height (many rows), and
    # on the right, as wide as the screen allows, the history (its lines whole) over the
    # checkpoint. The panes are siblings in both, in the order the keys move through them;
    # which one is docked is all that changes.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    CSS = """
    #main {
        height: 1fr;
    }
    .pane {
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        background: $surface;
    }
    .pane:focus-within {
        border: round $accent;
    }
    #threads-pane {
        height: 2fr;
        min-height: 11;  /* the filter, a header and three threads, two lines of detail */
    }
    #history-pane {
        height: 3fr;
    }
    #checkpoint-pane {
        dock: right;
        width: 55%;
    }
    Screen.-narrow #threads-pane {
        dock: left;
        width: 36%;
        min-width: 30;
        height: 1fr;
    }
    Screen.-narrow #history-pane {
        height: 2fr;
        min-height: 6;
    }
    Screen.-narrow #checkpoint-pane {
        dock: none;
        width: 1fr;
        height: 3fr;
    }
    #filter {
        border: none;
        height: 1;
        padding: 0 1;
        background: $surface;
    }
    #filter:focus {
        background: $boost;
    }
    #threads {
        min-height: 4;
    }
    #thread-detail {
        height: auto;
        max-height: 4;
        padding: 0 1;
        border-top: solid $panel-lighten-2;
    }
    Screen.-narrow #thread-detail {
        max-height: 8;  /* as many words as wide, and the pane is the screen's height */
    }
    #tabs {
        height: 2;
    }
    LinesView {
        scrollbar-gutter: stable;
    }
    RowList {
        height: 1fr;
    }
    """
    # Every key acts as it is read (priority), in the order typed: a terminal hands a paste
    # or quick typing over in one read, and a key left to bubble would be resolved against
    # the focus of later keys (Enter after ↑ would move the focus before ↑ moved the
    # cursor). In a text field, or on a screen over the panes, the key is the field's
    # (`key` skips). F1 is not a priority binding: it shows the help from a text field too.
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"key({action!r})", description, show=show, priority=True)
            for key, action, description, show in (
                ("q", "quit", "Quit", True),
                ("question_mark", "help", "Help", True),
                ("slash", "filter", "Filter", True),
                ("1", "focus_pane('threads')", "Threads", False),
                ("2", "focus_pane('history')", "History", False),
                ("3", "focus_pane('view')", "Checkpoint", False),
                ("o", "mode('overview')", "Checkpoint", False),
                ("t", "mode('tasks')", "Tasks", False),
                ("v", "mode('values')", "Values", False),
                ("d", "mode('diff')", "Diff", True),
                ("j", "toggle_json", "JSON", True),
                ("f", "toggle_full", "Full values", False),
                ("m", "mark", "Mark", True),
                ("c", "copy('selector')", "Copy id", True),
                ("C", "copy('show')", "Copy show command", False),
                ("D", "copy('diff')", "Copy diff command", False),
                ("g", "copy('langgraph')", "Copy LangGraph call", False),
                ("x", "export", "Export", True),
                ("p", "pager", "Pager", True),
                ("r", "reload", "Reload", False),
                ("z", "zoom", "Zoom", False),
            )
        ),
        Binding("f1", "help", "Help", show=False),
    ]

    def __init__(
        self,
        session: Session,
        *,
        thread_id: str | None = None,
        debounce: float = 0.08,
        words: Callable[[str], str] = str,
    ) -> None:
        super().__init__()
        self.session = session
        # The library's words in those of the face that opened the browser (the CLI's
        # flags for the API's parameters: ckpt.cli.options.in_flags).
        self.words = words
        self.debounce = debounce
        self.wanted_thread = thread_id
        self.failure: CkptError | None = None  # what `run` raises once the app has ended
        self.threads = ThreadList([])
        self.history: History | None = None
        self.loaded: Loaded | None = None  # the checkpoint the view shows
        self.mode = "overview"
        self.as_json = False
        self.full = False
        self.marked: Key | None = None
        # lane -> the quiet-period timer, and the newest work asked for meanwhile
        self._pending: dict[str, tuple[Timer, Callable[[], object] | None]] = {}
        self._laid_out: OrderedDict[tuple[Any, ...], list[Strip]] = OrderedDict()
        # The last diff the view drew: a new width lays it out again without finding its
        # changes again (the same two records; a reload reads new ones).
        self._comparison: Comparison | None = None
        self._message: str | None = None  # what the view says instead of a checkpoint
        self._spinners: dict[str, Timer] = {}

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        with Vertical(id="main"):
            with Vertical(id="threads-pane", classes="pane"):
                yield FilterInput(
                    list_id="threads",
                    placeholders=(
                        "/ filter: words, a status, KEY=VALUE",
                        "/ filter: words, status, KEY=VALUE",
                        "/ words, status, KEY=VALUE",
                        "/ filter",
                    ),
                    id="filter",
                )
                yield ThreadRows(id="threads", then="#history")
                yield Static(id="thread-detail")
            with Vertical(id="history-pane", classes="pane"):
                yield HistoryRows(id="history", then="#view")
            with Vertical(id="checkpoint-pane", classes="pane"):
                yield Tabs(*(Tab(label, id=mode) for mode, label in MODES.items()), id="tabs")
                yield LinesView(id="view")
        yield KeyBar(compact_below=NARROW)

    def on_mount(self) -> None:
        self.sub_title = clean_line(self.session.spec.shown)
        self.query_one(Tabs).can_focus = False
        self.query_one("#threads-pane").border_title = "Threads"
        self.query_one("#history-pane").border_title = "History"
        self.query_one("#checkpoint-pane").border_title = "Checkpoint"
        threads = self.query_one(ThreadRows)
        self.query_one(HistoryRows).wanted = lambda: (
            threads.current["thread_id"] if threads.current is not None else None
        )
        self._focus(threads)
        self._slow("#threads-pane")
        self._say("loading the threads…")
        self._start(self._show_threads, group="threads", exclusive=True)

    def _start(
        self, work: Callable[[], Coroutine[Any, Any, None]], *, group: str, exclusive: bool = False
    ) -> None:
        """Run `work` on a worker. A function, not its coroutine: an exclusive worker that a
        newer one cancels before it starts then leaves no coroutine never awaited."""
        # Named, WorkType's coroutine branch is the one mypy picks (else it infers Never).
        coroutine_function: WorkType[None] = work
        self.run_worker(coroutine_function, group=group, exclusive=exclusive)

    def _focus(self, widget: Widget) -> None:
        """Focus at once, not after the messages already queued (Widget.focus waits): the
        keys typed right after `/` go to the filter, not to the list's bindings."""
        self.screen.set_focus(widget)

    @property
    def busy(self) -> bool:
        """Work still under way: a query, a layout, or a key press waiting to be acted on
        (tests wait on this instead of sleeping)."""
        waiting = any(work is not None for _, work in self._pending.values())
        unheard = any(rows.unheard for rows in self.query(RowList))
        return waiting or unheard or any(not w.is_finished for w in self.workers)

    # -- queries -----------------------------------------------------------------------------------
    async def _ask(self, lane: str, work: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self.session.submit(lane, work, *args))

    def _slow(self, pane: str) -> Timer:
        """Show a pane as loading if its query takes long enough to be noticed; `_done`
        ends it (a quick query shows no flicker). Returns the spinner's timer, for
        `_done_if_own`."""
        self._done(pane)

        def show() -> None:
            # A timer that fires queues this call (Textual's call_next): when the query
            # ended in between, `_done` has stopped the timer but not this call, which
            # would then leave the pane loading for good.
            if self._spinners.get(pane) is timer:
                self.query_one(pane).loading = True

        timer = self._spinners[pane] = self.set_timer(LOADING_AFTER, show)
        return timer

    def _done_if_own(self, pane: str, timer: Timer) -> None:
        """End the pane's loading state if no newer query took the pane over: a query
        superseded or cancelled on the way leaves no spinner behind."""
        if self._spinners.get(pane) is timer:
            self._done(pane)

    def _done(self, pane: str) -> None:
        timer = self._spinners.pop(pane, None)
        if timer is not None:
            timer.stop()
        self.query_one(pane).loading = False

    async def _show_threads(self, *, reload: bool = False) -> None:
        pane = "#threads-pane"
        if reload:
            self._slow(pane)
        rows = self.query_one(ThreadRows)
        try:
            if reload:
                records, notices = await self._ask("threads", self.session.read_threads)
            else:
                records, notices = await asyncio.wrap_future(self.session.first_threads)
        except CkptError as exc:
            self._done(pane)
            self._say(self.words(exc.message), "bold red")
            self.query_one("#thread-detail", Static).update(
                views.notice(self.words(exc.message), "red")
            )
            return
        self._done(pane)
        wanted = self.wanted_thread
        if not reload and wanted is not None and all(r["thread_id"] != wanted for r in records):
            # As every command says it: one line and exit 7, once the screen is gone.
            hint = closest_thread(wanted, (r["thread_id"] for r in records))
            where = self.session.store.location
            self.failure = NotFound(f"no thread {wanted!r} in {where}{hint}")
            self.exit()
            return
        current = rows.current["thread_id"] if rows.current else wanted
        threads = ThreadList(records, sort=self.threads.sort)
        threads.set_filter(self.threads.text)
        self.threads = threads
        if not records:
            self._say(f"no threads in {self.session.store.location}")
        rows.show(threads, current)
        self._title_threads()
        for notice in notices:
            self.notify(clean_line(notice), title="note", timeout=12)

    def _later(self, lane: str, work: Callable[[], object]) -> None:
        """Act on a key press at once, and on quick repeats (holding ↓ in a list) only
        once they pause: the newest wins, and no query is made for the rows in between."""
        if lane not in self._pending:
            work()
            if self.debounce > 0:
                self._pending[lane] = (
                    self.set_timer(self.debounce, partial(self._quiet, lane)),
                    None,
                )
            return
        timer, _ = self._pending[lane]
        timer.stop()
        self._pending[lane] = (self.set_timer(self.debounce, partial(self._quiet, lane)), work)

    def _quiet(self, lane: str) -> None:
        _, waiting = self._pending.pop(lane, (None, None))
        if waiting is not None:
            self._later(lane, waiting)

    def _open_thread(self, thread_id: str) -> None:
        self._start(partial(self._show_history, thread_id), group="history", exclusive=True)

    async def _show_history(self, thread_id: str) -> None:
        pane = "#history-pane"
        rows = self.query_one(HistoryRows)
        spinner = self._slow(pane)
        try:
            history = await self._ask("history", self.session.read_history, thread_id)
        except Superseded:
            return
        except CkptError as exc:
            rows.show(None, None)
            self.loaded = None
            self._say(self.words(exc.message), "bold red")
            return
        finally:  # also when superseded or cancelled: no spinner is left behind
            self._done_if_own(pane, spinner)
        if history is self.history and rows.history is history:
            rows.arrived()
            return  # shown already (the list was redrawn around it): the cursor stays
        record = self._thread_record(thread_id)
        previous = self.loaded.record if self.loaded else None
        cursor = None
        if previous is not None and previous["thread_id"] == thread_id:
            cursor = history.index.get(key_of(previous))  # a reload keeps the place
        if cursor is None and record is not None and record["checkpoint_id"] is not None:
            cursor = history.index.get(Key(thread_id, "", record["checkpoint_id"]))
        if cursor is None:
            cursor = max(history.index.values(), default=0)
        self.history = history
        rows.marked = self.marked
        rows.show(history, cursor)
        self._title_history()
        if not history.index:
            self._say("this thread has no checkpoints")

    def _open_checkpoint(self, key: Key) -> None:
        self._start(partial(self._show_checkpoint, key), group="checkpoint", exclusive=True)

    async def _show_checkpoint(self, key: Key) -> None:
        try:
            loaded = await self._ask("checkpoint", self.session.read_checkpoint, key)
        except Superseded:
            return
        except CkptError as exc:
            self.loaded = None
            self._say(self.words(exc.message), "bold red")
            return
        self.loaded = loaded
        self._message = None
        self._title_checkpoint()
        await self._draw()

    def _thread_record(self, thread_id: str) -> Any:
        for record in self.threads.records:
            if record["thread_id"] == thread_id:
                return record
        return None

    # -- the view --------------------------------------------------------------------------------
    def _say(self, message: str, style: str = "dim") -> None:
        """A line in the checkpoint pane instead of a checkpoint."""
        self._message = message
        view = self.query_one(LinesView)
        view.show(lay_out(views.notice(message, style), max(view.size.width, 20)))

    def _base_key(self) -> Key | None:
        """What the diff compares the checkpoint with: the marked one, else its parent."""
        if self.loaded is None:
            return None
        key = key_of(self.loaded.record)
        if self.marked is not None and self.marked != key:
            return self.marked
        return self.history.parent(key) if self.history is not None else None

    def _drawing(
        self,
        loaded: Loaded,
        base: CheckpointRecord | None,
        *,
        full: bool,
        limit: int | None = JSON_LIMIT,
    ) -> _Drawing:
        """What the view draws now, its diff found first (on a worker thread: a diff of two
        large checkpoints takes a while; the last one is kept for the next width)."""
        comparison = None
        if self.mode == "diff" and base is not None:
            comparison = self._comparison
            if comparison is None or not comparison.compares(base, loaded.record):
                comparison = self._comparison = Comparison.of(base, loaded.record)
        return _Drawing(self.mode, self.as_json, full, loaded, comparison, limit)

    def redraw(self) -> None:
        self._start(self._draw, group="draw", exclusive=True)

    async def _draw(self) -> None:
        if self.loaded is None:
            return
        view = self.query_one(LinesView)
        width = max(view.scrollable_content_region.width, 20)
        record = self.loaded.record
        base: CheckpointRecord | None = None
        base_key = self._base_key() if self.mode == "diff" else None
        if base_key is not None:
            try:
                base = (await self._ask("base", self.session.read_checkpoint, base_key)).record
            except Superseded:
                return
            except CkptError as exc:
                self._say(
                    f"cannot load the checkpoint to compare with: {self.words(exc.message)}",
                    "red",
                )
                return
        wanted = (self.mode, self.as_json, self.full, width, key_of(record), base_key)
        lines = self._laid_out.get(wanted)
        if lines is None:
            if self.mode == "diff" and base is None:
                lines = lay_out(views.notice(_no_base(record)), width)
            else:
                drawing = partial(self._drawing, self.loaded, base, full=self.full)
                lines = await asyncio.to_thread(_lay_out_safely, drawing, width)
            self._laid_out[wanted] = lines
            while len(self._laid_out) > LAID_OUT:
                self._laid_out.popitem(last=False)
        else:
            self._laid_out.move_to_end(wanted)
        self._message = None
        view.show(lines)
        self._title_checkpoint()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._title_threads)  # once the panes have their new size

    @on(LinesView.Resized)
    def view_resized(self) -> None:
        if self.loaded is not None:
            self._later("draw", self.redraw)

    # -- titles ----------------------------------------------------------------------------------
    def _title_threads(self) -> None:
        pane = self.query_one("#threads-pane")
        shown, total = len(self.threads.shown), len(self.threads.records)
        title = Text(f"Threads {shown}" + (f"/{total}" if shown != total else ""), style="bold")
        title.append(f" · {self.threads.sort}", style="dim")
        pane.border_title = title
        counts = self.threads.counts()
        # "✗ 1 error ⏸ 2 interrupted", or "✗ 1 ⏸ 2" where the pane is too narrow for it
        room = pane.outer_size.width - 6  # the corners, and a space and a line either side
        for named in (True, False):
            subtitle = Text()
            for status in ("error", "interrupted", "pending"):
                if counts.get(status):
                    if subtitle:
                        subtitle.append(" ")
                    mark = views.STATUS_MARK[status]
                    count = f"{mark} {counts[status]}" + (f" {status}" if named else "")
                    subtitle.append(count, STATUS_STYLE[status])
            if subtitle.cell_len <= room or room <= 0:
                break
        pane.border_subtitle = subtitle or None

    def _title_history(self) -> None:
        pane = self.query_one("#history-pane")
        if self.history is None:
            pane.border_title = "History"
            return
        title = Text("History ", style="bold")
        title.append(clean_line(self.history.thread_id))
        title.append(f" · {self.history.checkpoints} checkpoints", style="dim")
        pane.border_title = title
        pane.border_subtitle = _mark_text(self.marked)

    def _title_checkpoint(self) -> None:
        pane = self.query_one("#checkpoint-pane")
        if self.loaded is None:
            pane.border_title = "Checkpoint"
            return
        title = views.checkpoint_title(self.loaded.record)
        if self.as_json:
            title.append("  JSON", style="bold reverse")
        if self.full:
            title.append("  full", style="bold reverse")
        pane.border_title = title
        if self.mode == "diff":
            base = self._base_key()
            subtitle = Text("diff with ")
            if base is None:
                subtitle.append("nothing", style="dim")
            else:
                subtitle.append(
                    "the marked " if base == self.marked else "the parent ", style="dim"
                )
                subtitle.append(base.checkpoint_id[-8:], style="bold yellow")
            pane.border_subtitle = subtitle
        else:
            pane.border_subtitle = None

    # -- events ----------------------------------------------------------------------------------
    @on(RowList.Highlighted, "#threads")
    def thread_highlighted(self, event: RowList.Highlighted) -> None:
        event.rows.unheard -= 1
        # The cursor's row now, not the event's index: typing in the filter may have
        # changed the list since the message was posted.
        record = self.query_one(ThreadRows).current
        if record is None:
            return
        self.query_one("#thread-detail", Static).update(views.thread_detail(record))
        thread_id = record["thread_id"]
        self._later("history", lambda: self._open_thread(thread_id))

    @on(RowList.Highlighted, "#history")
    def checkpoint_highlighted(self, event: RowList.Highlighted) -> None:
        event.rows.unheard -= 1
        record = self.query_one(HistoryRows).current  # as above: the row under the cursor now
        if record is not None:
            key = key_of(record)
            self._later("checkpoint", lambda: self._open_checkpoint(key))

    @on(Tabs.TabActivated)
    def tab_activated(self, event: Tabs.TabActivated) -> None:
        mode = event.tab.id or "overview"
        if mode != self.mode:
            self.mode = mode
            self.redraw()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        rows = self.query_one(ThreadRows)
        current = rows.current["thread_id"] if rows.current else None
        self.threads.set_filter(event.value)
        rows.show(self.threads, current)
        if not self.threads.shown:
            self.query_one("#thread-detail", Static).update(
                views.notice("no thread matches the filter")
            )
        self._title_threads()

    # -- actions ---------------------------------------------------------------------------------
    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def _typing(self) -> bool:
        """A text field has the keys, or a screen over the panes does (export, palette)."""
        return isinstance(self.focused, Input) or self.screen is not self.screen_stack[0]

    async def action_key(self, action: str) -> None:
        """A key's action, unless a text field or another screen has the keys."""
        if self._typing():
            raise SkipAction()
        await self.run_action(action)

    def action_focus_pane(self, pane: str) -> None:
        self._focus(self.query_one(f"#{pane}"))

    def action_filter(self) -> None:
        self._focus(self.query_one("#filter", Input))

    def action_sort(self) -> None:
        rows = self.query_one(ThreadRows)
        current = rows.current["thread_id"] if rows.current else None
        self.threads.cycle_sort()
        rows.show(self.threads, current, announce=False)
        self._title_threads()

    def action_jump(self, state: str, step: int) -> None:
        focused = self.focused
        if isinstance(focused, ThreadRows):
            found = self.threads.next_with(state, focused.cursor, step)
            what = "failed" if state == "error" else "waiting on an interrupt"
            none = f"no thread {what}" + (" among the shown" if self.threads.text else "")
        elif isinstance(focused, HistoryRows) and focused.defer(
            partial(self._jump_in_history, focused, state, step)
        ):
            return  # for the history on its way
        elif isinstance(focused, HistoryRows) and self.history is not None:
            found = self.history.next_with(state, focused.cursor, step)
            what = "failed task" if state == "failed" else "interrupt"
            none = f"no checkpoint of this thread has a {what}"
        else:
            return
        if found is None:
            self.notify(none, timeout=3)
        else:
            focused.move_to(found)

    def _jump_in_history(self, rows: HistoryRows, state: str, step: int) -> None:
        if self.history is not None:
            found = self.history.next_with(state, rows.cursor, step)
            if found is not None:
                rows.move_to(found)

    def action_mode(self, mode: str) -> None:
        self.query_one(Tabs).active = mode

    def action_toggle_json(self) -> None:
        self.as_json = not self.as_json
        self.redraw()

    def action_toggle_full(self) -> None:
        self.full = not self.full
        self.redraw()

    def action_mark(self) -> None:
        rows = self.query_one(HistoryRows)
        if self.history is None or rows.cursor < 0:
            return
        record = self.history.lines[rows.cursor].record
        if record is None:
            return
        key = key_of(record)
        self.marked = None if self.marked == key else key
        rows.marked = self.marked
        rows.redraw()
        self._title_history()
        if self.mode == "diff":
            self.redraw()
        else:
            self._title_checkpoint()

    def action_zoom(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            self.screen.maximize(self.focused)

    def action_reload(self) -> None:
        self.session.forget()
        self._laid_out.clear()
        self.notify("reading the store again…", timeout=2)
        self._start(partial(self._show_threads, reload=True), group="threads", exclusive=True)

    def action_copy(self, what: str) -> None:
        if self.loaded is None:
            self.notify("no checkpoint is shown", severity="warning")
            return
        self._start(partial(self._copy, what, self.loaded.record), group="copy", exclusive=True)

    async def _copy(self, what: str, record: CheckpointRecord) -> None:
        if what == "langgraph":
            # The call that acts on the checkpoint: the answer to its interrupts, the retry
            # of its failed tasks, else its config (ckpt.records.paste.paste_back).
            from ckpt.records.paste import paste_back

            latest = self.loaded is not None and self.loaded.latest
            calls = dict(paste_back(record, latest=latest and not record["checkpoint_ns"]))
            text = calls.get("resume") or calls.get("retry") or calls["config"]
            self.copy_to_clipboard(text)
            self.notify(clean_line(text), title="copied", timeout=6)
            return
        selector = await self._ask("selector", self.session.selector, record, self.history)
        if what == "selector":
            text = shell_join(selector.words())  # pasteable after `ckpt show`
        elif what == "show":
            text = show_command(self.session.spec, selector)
        else:
            base_key = self._base_key()
            base = self.history.record(base_key) if self.history and base_key else None
            if base_key is not None and base is None:  # marked in another thread
                base = (await self._ask("base", self.session.read_checkpoint, base_key)).record
            if base is None:
                self.notify(_no_base(record), severity="warning")
                return
            older = await self._ask("selector", self.session.selector, base, self.history)
            line = diff_command(self.session.spec, older, selector)
            if line is None:
                self.notify("no one command line names both (two namespaces)", severity="warning")
                return
            text = line
        self.copy_to_clipboard(text)
        warning = _ambiguity(selector)
        self.notify(clean_line(text) + warning, title="copied", timeout=6)

    def action_export(self) -> None:
        if self.loaded is None:
            self.notify("no checkpoint is shown", severity="warning")
            return
        record = self.loaded.record
        name = f"{record['thread_id']}-{record['checkpoint_id'][-8:]}.json"
        default = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

        def chosen(path: str | None) -> None:
            if path:
                self._start(partial(self._export, record, Path(path)), group="export")

        self.push_screen(ExportScreen(default), chosen)

    async def _export(self, record: CheckpointRecord, path: Path) -> None:
        try:
            await asyncio.to_thread(_write_new, path, dumps(record, indent=2) + "\n")
        except FileExistsError:
            self.notify(f"{path} exists: ckpt never overwrites a file", severity="error")
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc.strerror or exc}", severity="error")
        else:
            self.notify(f"wrote {path}", title="exported", timeout=6)

    def action_pager(self) -> None:
        if self.loaded is None:
            return
        self._start(self._page, group="pager", exclusive=True)

    async def _page(self) -> None:
        assert self.loaded is not None
        base_key = self._base_key() if self.mode == "diff" else None
        base = None
        if base_key is not None:
            base = (await self._ask("base", self.session.read_checkpoint, base_key)).record
        if self.mode == "diff" and base is None:
            return
        drawing = partial(self._drawing, self.loaded, base, full=True, limit=None)
        width = max(self.size.width, 40) if self.size.width else PAGER_WIDTH
        text = await asyncio.to_thread(_plain, drawing, width)
        command = shlex.split(os.environ.get("PAGER") or "less") or ["less"]
        try:
            with self.suspend():
                _run_pager(command, text)
        except SuspendNotSupported:  # no terminal to hand over (tests, a web driver)
            _run_pager(command, text)
        self.refresh()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for title, help_text, action in PALETTE:
            yield SystemCommand(title, help_text, partial(self.call_next, self.run_action, action))

    def action_jump_in(self, pane: str, state: str) -> None:
        self.action_focus_pane(pane)
        self.action_jump(state, 1)


# The command palette (ctrl+p): every action, with its key.
PALETTE = (
    ("Filter threads", "words, a status or KEY=VALUE (/)", "filter"),
    ("Sort threads", "updated, thread, checkpoints, size, step, status (s)", "sort"),
    ("Next failed thread", "a thread whose run failed (e)", "jump_in('threads','error')"),
    ("Next interrupted thread", "waiting on an interrupt (i)", "jump_in('threads','interrupted')"),
    ("Next failed checkpoint", "in the history: a failed task (e)", "jump_in('history','failed')"),
    ("Next interrupt", "in the history: an interrupt (i)", "jump_in('history','interrupted')"),
    ("Show the checkpoint", "ids, step, next, metadata, versions, writes (o)", "mode('overview')"),
    ("Show the tasks", "each task: input, error, interrupts, writes (t)", "mode('tasks')"),
    ("Show the channel values", "messages as a conversation (v)", "mode('values')"),
    ("Show the diff", "with the parent, or with the marked checkpoint (d)", "mode('diff')"),
    ("Toggle JSON", "the view's records as JSON (j)", "toggle_json"),
    ("Toggle full values", "long values whole instead of cut (f)", "toggle_full"),
    ("Mark for diff", "diff the highlighted checkpoint with this one (m)", "mark"),
    ("Copy the selector", "what ckpt show takes to find this checkpoint (c)", "copy('selector')"),
    ("Copy the ckpt show command", "ckpt show SELECTOR --blobs --db STORE (C)", "copy('show')"),
    ("Copy the ckpt diff command", "ckpt diff A B --db STORE (D)", "copy('diff')"),
    ("Export the checkpoint's JSON", "ckpt show --json --blobs, to a new file (x)", "export"),
    ("Open in the pager", "the view with values whole, in $PAGER (p)", "pager"),
    ("Reload the store", "read the threads and the history again (r)", "reload"),
    ("Zoom", "maximize the focused pane, or restore it (z)", "zoom"),
)  # fmt: skip


class _Drawing:
    """What the view draws for one mode of one checkpoint, laid out on a worker thread:
    records, and for a diff the changes the library found (ckpt.api.Comparison.of)."""

    def __init__(
        self,
        mode: str,
        as_json: bool,
        full: bool,
        loaded: Loaded,
        comparison: Comparison | None,
        limit: int | None = JSON_LIMIT,
    ) -> None:
        self.mode, self.as_json, self.full = mode, as_json, full
        self.loaded, self.comparison, self.limit = loaded, comparison, limit

    def lines(self, width: int) -> list[Strip]:
        record = self.loaded.record
        if self.as_json:
            if self.mode == "diff":
                assert self.comparison is not None
                return json_lines(self.comparison.patch, self.limit)
            return json_lines(_json_part(self.mode, record), self.limit)
        return lay_out(self.renderable(), width)

    def renderable(self) -> RenderableType:
        record = self.loaded.record
        if self.mode == "diff":
            compared = self.comparison
            assert compared is not None
            return views.diff_view(compared.a, compared.b, compared.changes, full=self.full)
        if self.mode == "tasks":
            return views.tasks_view(record, full=self.full)
        if self.mode == "values":
            return views.values_view(record, full=self.full)
        from ckpt.records.paste import paste_back

        latest = self.loaded.latest
        paste = paste_back(record, latest=latest and not record["checkpoint_ns"])
        return views.overview_view(record, latest=latest, full=self.full, paste=paste)


def _json_part(mode: str, record: CheckpointRecord) -> Any:
    """The record's keys a view's JSON shows: all but the values for the checkpoint
    (`ckpt show --json`), the tasks and writes, or the values."""
    keys: tuple[str, ...]
    if mode == "tasks":
        keys = ("tasks", "pending_writes", "pending_sends")
    elif mode == "values":
        keys = ("channel_values", "delta_channels")
    else:
        return {k: v for k, v in record.items() if k not in ("channel_values", "delta_channels")}
    return {k: record.get(k) for k in keys if k in record}


def _lay_out_safely(drawing: Callable[[], _Drawing], width: int) -> list[Strip]:
    try:
        return drawing().lines(width)
    except RecursionError:
        return lay_out(views.notice("a value is nested too deeply to show", "red"), width)
    except Exception as exc:  # a view's bug must not end the session
        message = f"internal error: {type(exc).__name__}: {exc} (please report it)"
        return lay_out(views.notice(message, "bold red"), width)


def _plain(drawing: Callable[[], _Drawing], width: int) -> str:
    return "\n".join(line.text.rstrip() for line in _lay_out_safely(drawing, width)) + "\n"


def _run_pager(command: list[str], text: str) -> None:
    try:
        subprocess.run(command, input=text.encode("utf-8"), check=False)
    except OSError:
        pass


def _write_new(path: Path, text: str) -> None:
    with path.open("x", encoding="utf-8") as file:
        file.write(text)


def _no_base(record: CheckpointRecord) -> str:
    return (
        f"checkpoint {record['checkpoint_id']} has no parent in its namespace to compare "
        "with: mark another checkpoint (m) to diff with it"
    )


def _mark_text(marked: Key | None) -> Text | None:
    if marked is None:
        return None
    text = Text("◆ marked ", style="magenta")
    text.append(marked.checkpoint_id[-8:], style="bold yellow")
    return text


def _ambiguity(selector: Selector) -> str:
    if selector.ambiguous:
        return " (this id is in other threads too: the CLI will say it is ambiguous)"
    return ""
