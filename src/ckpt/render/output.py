"""Where output goes and how it may look: the terminal decisions in one injectable place,
and the one function that prints what the views return.

Like httpie's `Environment`: whether stdout is a terminal, whether colour is allowed
(`NO_COLOR`, no-color.org), the width, and `CKPT_FORCE_TTY` (the tests' and the snapshot
files' way to render as on a terminal) are read once, into an `Output`, and every view
asks it instead of looking at `sys.stdout` or the environment itself.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Final

from ckpt.render.text import clean

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

DEFAULT_WIDTH = 120  # a terminal that does not say its width
UNWRAPPED = 100_000  # piped output without COLUMNS: lines are never wrapped (jq, grep, less -S)


@dataclass
class Output:
    """The output side of one run: streams, and what the terminal allows."""

    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    terminal: bool = False  # stdout is a terminal (or CKPT_FORCE_TTY makes it one)
    colour: bool = False  # styles allowed on stdout: a terminal, and NO_COLOR unset
    stderr_colour: bool = False
    width: int | None = None  # COLUMNS; None: ask the terminal (DEFAULT_WIDTH when piped)
    local_time: bool = False  # --local: human views show times in the local zone, not UTC

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
    ) -> Output:
        env = os.environ if environ is None else environ
        out = stdout or sys.stdout
        err = stderr or sys.stderr
        terminal = _isatty(out) or bool(env.get("CKPT_FORCE_TTY"))
        no_colour = "NO_COLOR" in env
        columns = env.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else None
        return cls(
            stdout=out,
            stderr=err,
            terminal=terminal,
            colour=terminal and not no_colour,
            stderr_colour=_isatty(err) and not no_colour,
            width=width,
        )

    def columns(self) -> int:
        """The width views lay themselves out for: COLUMNS, else the terminal's; into a
        pipe or a file without COLUMNS, no limit (`UNWRAPPED`), the same for every view."""
        if self.width is not None:
            return self.width
        if self.terminal:
            return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        return UNWRAPPED

    @property
    def wraps(self) -> bool:
        """Whether views fit themselves to a width (a terminal, or COLUMNS given)."""
        return self.terminal or self.width is not None

    def console(self) -> Console:
        """A Rich console for stdout: styles only when allowed, boxes only on a terminal,
        every piece of text from the store cleaned of control characters."""
        return _console(self)

    # -- talk on stderr -----------------------------------------------------------------------
    def error(self, message: str) -> None:
        """One line on stderr; never wrapped, never a traceback."""
        text = clean_one_line(message)
        if self.stderr_colour:
            self.stderr.write(f"\x1b[1;31mckpt: error:\x1b[0m {text}\n")
        else:
            self.stderr.write(f"ckpt: error: {text}\n")
        self.stderr.flush()

    def notices(self, notices: list[str]) -> None:
        """Things the user should know once (e.g. a layout without channel values)."""
        while notices:
            self.stderr.write(f"ckpt: note: {clean_one_line(notices.pop(0))}\n")

    # -- data on stdout -----------------------------------------------------------------------
    def lines(self, lines: Iterable[str]) -> None:
        """Data lines as they come (JSON, NDJSON, the fast threads table)."""
        write = self.stdout.write
        for line in lines:
            if len(line) <= WRITE_SLICE:
                write(line)
            else:  # one huge document: encoded a slice at a time, not all at once
                for start in range(0, len(line), WRITE_SLICE):
                    write(line[start : start + WRITE_SLICE])
        self.stdout.flush()

    def data(self, pieces: Iterable[bytes]) -> None:
        """Data already encoded as UTF-8 (`dump --ndjson`), each piece written as it comes,
        straight to the byte stream under stdout when it has one."""
        raw = getattr(self.stdout, "buffer", None)
        if raw is None:  # a text stream only (a test's StringIO)
            self.lines(codecs.iterdecode(pieces, "utf-8"))
            return
        self.stdout.flush()
        write = raw.write
        for piece in pieces:
            write(piece)
        raw.flush()

    def text(self, lines: Iterable[str]) -> None:
        """Human text lines that skip Rich (the fast threads table, the history tree, the
        prune plan), each guarded on the way out: any control character in them but the
        colour codes ckpt adds is escaped, whichever field it came from. Rich's output
        passes the same filter in `_console` (issue 29: one place, not one per field)."""
        self.lines(map(guarded, lines))

    def show(self, renderable: RenderableType, *, crop: bool = True) -> None:
        """A view's renderable (a table, a tree, a group of them), without the trailing
        spaces a layout engine pads its cells with. `crop=False` lets a line that must stay
        whole (a command to paste) run past the width; the terminal wraps it, a copy of it
        is one line."""
        console = self.console()
        with console.capture() as captured:
            console.print(renderable, crop=crop)
        self.stdout.write(strip_trailing(captured.get()))
        self.stdout.flush()


WRITE_SLICE: Final = 1 << 20  # characters
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def guarded(line: str) -> str:
    """`line` with every unsafe character escaped (render/text.py `clean`: newlines and
    tabs kept) except ckpt's own SGR colour codes."""
    if "\x1b" not in line:
        return clean(line)
    parts = _SGR.split(line)
    codes = _SGR.findall(line)
    codes.append("")
    return "".join(clean(part) + code for part, code in zip(parts, codes, strict=True))


def strip_trailing(text: str) -> str:
    """Each line without trailing blanks; the style codes among them are kept, so a style
    still ends where it ended. Linear in the text: a cell padded with millions of spaces
    (a huge id in a column) costs one pass, not one per space as a regex would."""
    return "\n".join(_strip_line(line) for line in text.split("\n"))


def _strip_line(line: str) -> str:
    end = len(line)
    kept: list[str] = []
    while end:
        last = line[end - 1]
        if last in " \t":
            end = len(line[:end].rstrip(" \t"))
            continue
        if last == "m":
            start = line.rfind("\x1b[", 0, end)
            if start >= 0 and _SGR.fullmatch(line, start, end):
                kept.append(line[start:end])
                end = start
                continue
        break
    if end == len(line):
        return line
    return line[:end] + "".join(reversed(kept))


def clean_one_line(text: str) -> str:
    from ckpt.render.text import clean_line

    return clean_line(" ".join(text.split()))


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(output: Output) -> Console:
    from rich.console import Console
    from rich.segment import Segment

    class _Console(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            # Every piece of text that came from the store passes here: escape its control
            # characters, keep the styles ckpt itself adds (render/text.py `clean`).
            return super()._render_buffer(
                Segment(clean(text), style, None)
                if control is None
                else Segment(text, style, control)
                for text, style, control in buffer
            )

        def on_broken_pipe(self) -> None:
            # Rich would exit 1 by itself; hand the closed pipe to the CLI, which ends quietly.
            raise BrokenPipeError

    kwargs: dict[str, Any] = {
        "file": output.stdout,
        "highlight": False,
        "soft_wrap": False,
        "emoji": False,
        "no_color": not output.colour,
        "width": output.columns(),
    }
    if output.terminal:
        kwargs["force_terminal"] = True
    else:
        kwargs["force_terminal"] = False
    if not output.colour:
        kwargs["color_system"] = None
    return _Console(**kwargs)


def stream_json_array(records: Iterable[Any], *, pretty: bool = True) -> Iterator[str]:
    """Lines of one JSON array, streamed record by record.

    `pretty=False` puts each record on one line: still one array for jq, and about twice as
    fast to write (an indented dump runs json's pure-Python encoder).
    """
    from ckpt.records.encode import dump_pieces, dumps

    first = True
    for record in records:
        if pretty:  # a piece at a time: one record may be a 100 MB document
            yield "[\n  " if first else ",\n  "
            yield from dump_pieces(record, indent=2, level=1)
        else:
            yield ("[\n" if first else ",\n") + dumps(record)
        first = False
    yield "[]\n" if first else "\n]\n"


def stream_ndjson(records: Iterable[Any]) -> Iterator[str]:
    from ckpt.records.encode import dumps_line

    for record in records:
        yield dumps_line(record) + "\n"


def stream_json_record(
    head: Mapping[str, Any],
    key: str,
    items: Iterable[Any],
    tail: Callable[[], Mapping[str, Any]],
) -> Iterator[str]:
    """The text of `dump_document({**head, key: list(items), **tail()})`, with the items
    written as they come: `tail()` is asked for once they are done (totals over them)."""
    from ckpt.records.encode import dump_pieces, dumps

    def field(name: str, value: Any, lead: str) -> Iterator[str]:
        yield f"{lead}\n  {dumps(name)}: "
        yield from dump_pieces(value, indent=2, level=1)

    lead = "{"
    for name, value in head.items():
        yield from field(name, value, lead)
        lead = ","
    yield f"{lead}\n  {dumps(key)}: ["
    first = True
    for item in items:
        yield "\n    " if first else ",\n    "
        yield from dump_pieces(item, indent=2, level=2)
        first = False
    yield "]" if first else "\n  ]"
    for name, value in tail().items():
        yield from field(name, value, ",")
    yield "\n}\n"


def spooled(pieces: Iterable[str]) -> Iterator[str]:
    """`pieces`, all made before the first is given: kept in memory up to a few MB, then in
    a temporary file. For output that must appear whole or not at all (a run that stops
    with an error prints its one line, and no half of a document), in flat memory."""
    import tempfile

    with tempfile.SpooledTemporaryFile(max_size=4 << 20, mode="w+", encoding="utf-8") as spool:
        batch: list[str] = []
        for piece in pieces:
            batch.append(piece)
            if len(batch) >= 1024:
                spool.write("".join(batch))
                batch.clear()
        spool.write("".join(batch))
        spool.seek(0)
        while chunk := spool.read(1 << 16):
            yield chunk
