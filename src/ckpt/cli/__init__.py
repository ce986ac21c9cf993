"""The `ckpt` Typer app: commands are registered here, errors become exit codes here only."""

from __future__ import annotations

import atexit
import errno
import os
import sys
import threading
from typing import Any, Final

import typer
from typer.core import TyperArgument, TyperGroup

from ckpt import __version__
from ckpt.errors import CkptError, ExitCode

# Click's exception classes, reached through Typer's public BadParameter rather than the
# private module Typer vendors Click in (typer._click): BadParameter < UsageError <
# ClickException.
_USAGE_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)
_CLICK_EXCEPTION: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class PlainArgument(TyperArgument):
    """A positional argument shown in usage lines as its metavar says, `THREAD` or
    `[STORE]`: Typer's own wraps a required one in braces (`{THREAD}`, which reads like a
    placeholder to fill with braces) and an optional one in brackets whatever the command
    takes (copy's DST is optional to the parser, as --db may name the source, but is
    needed). The brackets are the metavar's, and dropped in the Arguments list."""

    def make_metavar(self, ctx: Any, *, usage: bool = False) -> str:
        var = self.metavar or (self.name or "").upper()
        return var if usage else var.removeprefix("[").removesuffix("]")


class CkptGroup(TyperGroup):
    """Maps our exceptions to one stderr line and a documented exit code (docs/cli.md)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", ()):
            if type(param) is TyperArgument:
                param.__class__ = PlainArgument  # see PlainArgument
        return command

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        # Usage errors too are one line on stderr, `ckpt: error: ...`, exit 2, instead of
        # Click's four-line "Usage: / Try / Error:" block.
        try:
            result = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except _USAGE_ERROR as exc:
            code: int = getattr(exc, "exit_code", 2)
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]  # `ckpt` alone prints its help
            else:
                context = getattr(exc, "ctx", None)
                where = context.command_path if context is not None else "ckpt"
                fail_line(f"{exc.format_message()} (see '{where} --help')")  # type: ignore[attr-defined]
        except _CLICK_EXCEPTION as exc:
            fail_line(exc.format_message())  # type: ignore[attr-defined]
            code = getattr(exc, "exit_code", 1)
        except typer.Abort:
            fail_line("aborted")
            code = 1
        except OSError as exc:  # `ckpt --version > /dev/full`: what runs before a command
            if exc.errno not in _NO_SPACE:
                raise
            code = _cannot_write(exc)
        else:
            # Typer returns the code of a `typer.Exit` when not standalone; None is success.
            code = result if isinstance(result, int) else 0
            if not standalone_mode:
                return result
        if not standalone_mode:
            return code
        sys.exit(code)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # keep the order commands are declared in

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CkptError as exc:
            from ckpt.cli.options import in_flags

            fail(in_flags(exc.message), exc.exit_code)
        except BrokenPipeError:
            # `ckpt dump | head -1`: the reader left; stop quietly like cat(1) does, with
            # the status the command had already decided on (diff's 1) or 0.
            from ckpt.cli.common import RunState

            _silence_stdout()
            status = ctx.obj.closed_pipe_status if isinstance(ctx.obj, RunState) else 0
            raise typer.Exit(status) from None
        except KeyboardInterrupt:
            fail("interrupted", ExitCode.INTERRUPTED)
        except RecursionError:
            # A value can decode and still nest deeper than Python's own JSON encoder or
            # our diff walk go (the decoder allows ~6,000 levels): treat it as damaged data.
            fail("a value is nested too deeply to print (over ~1,000 levels)", ExitCode.CORRUPT)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # usage errors and exits keep Typer's own handling (exit 2 for usage)
        except Exception as exc:  # a bug in ckpt (or a full disk): still one line
            if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
                raise typer.Exit(_cannot_write(exc)) from None
            if os.environ.get("CKPT_DEBUG"):
                raise
            fail(
                f"internal error: {type(exc).__name__}: {exc} "
                "(please report it; CKPT_DEBUG=1 shows the traceback)",
                ExitCode.INTERNAL,
            )


# What a write fails with for want of space: the disk, a quota, the largest file allowed.
_NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _cannot_write(exc: OSError) -> int:
    """A write that failed (the output cut short): one line, and its exit code."""
    fail_line(f"cannot write: {exc.strerror}")
    return ExitCode.NO_SPACE if exc.errno in _NO_SPACE else ExitCode.INTERNAL


def fail(message: str, code: int) -> None:
    fail_line(message)
    raise typer.Exit(int(code))


def fail_line(message: str) -> None:
    from ckpt.render.output import Output

    Output.from_environment().error(message)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


_app = typer.Typer(
    cls=CkptGroup,
    name="ckpt",
    help="Inspect and dump LangGraph checkpoint stores without running any code from them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ckpt {__version__}")
        raise typer.Exit()


@_app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Show the version and exit.",
    ),
) -> None:
    """Inspect and dump LangGraph checkpoint stores without running any code from them.

    Exit codes: 0 ok, 1 diff found differences or check found an error, 2 usage, 3 no
    store, 4 unreadable store, 5 corrupt, 6 encrypted without key, 7 not found, 8 ambiguous
    id, 9 refused pickle global, 10 missing optional dependency, 11 store locked (prune,
    vacuum), 12 refused as unsafe, 13 not supported on this kind of store, 14 a migrated
    thread read back differed (rolled back), 70 internal
    error (a bug in ckpt). See docs/cli.md.
    """


# Each command and the module that declares it, in the order `ckpt --help` lists them
# (tests/test_cli_edges.py holds this table to what the modules register).
COMMAND_MODULES: dict[str, str] = {
    "threads": "inspect",
    "history": "inspect",
    "show": "inspect",
    "versions": "inspect",
    "diff": "compare",
    "dump": "compare",
    "stats": "stats_cmd",
    "types": "types_cmd",
    "check": "check_cmd",
    "prune": "maintain",
    "vacuum": "maintain",
    "copy": "copy_cmd",
    "migrate": "migrate_cmd",
    "browse": "browse_cmd",
    "mcp": "mcp_cmd",
    "demo": "demo",
}
_registered: set[str] = set()


def _register(module: str) -> None:
    # Command modules import only typer at import time; the library loads when a command runs.
    if module in _registered:
        return
    _registered.add(module)
    if module == "inspect":
        from ckpt.cli.inspect import register
    elif module == "compare":
        from ckpt.cli.compare import register
    elif module == "stats_cmd":
        from ckpt.cli.stats_cmd import register
    elif module == "types_cmd":
        from ckpt.cli.types_cmd import register
    elif module == "check_cmd":
        from ckpt.cli.check_cmd import register
    elif module == "maintain":
        from ckpt.cli.maintain import register
    elif module == "copy_cmd":
        from ckpt.cli.copy_cmd import register
    elif module == "migrate_cmd":
        from ckpt.cli.migrate_cmd import register
    elif module == "browse_cmd":
        from ckpt.cli.browse_cmd import register
    elif module == "mcp_cmd":
        from ckpt.cli.mcp_cmd import register
    else:
        from ckpt.cli.demo import register
    register(_app)


def _every_command() -> typer.Typer:
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        _register(module)
    return _app


def __getattr__(name: str) -> Any:
    # PEP 562: `ckpt.cli.app` is the whole app, every command registered; a run of the
    # CLI (main) imports the one command module it runs.
    if name == "app":
        return _every_command()
    raise AttributeError(f"module 'ckpt.cli' has no attribute {name!r}")


def main() -> None:
    _only_the_invoked_command(sys.argv[1:])
    try:
        _app(prog_name="ckpt")
    except SystemExit as exc:
        _exit_at_once(exc.code)
    _exit_at_once(0)


def _exit_at_once(code: object) -> None:
    """Exit with `code` as SystemExit would, without the interpreter's teardown: after a
    dump it frees every object and module one at a time (~20 ms of a one-second dump).
    What exit runs still runs first: the atexit handlers, the flush of stdout and stderr.
    With a thread of the program's own still running (not a daemon), the usual exit waits
    for it. Every store is closed by then (each command opens its stores in a `with`)."""
    if not (code is None or isinstance(code, int)):
        raise SystemExit(code)  # a message for stderr: Python's own way
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(not t.daemon for t in others):
        raise SystemExit(code)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:  # not CPython
        raise SystemExit(code)
    run_exit_functions()
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # the reader left, or stdout is closed
        pass
    except OSError as exc:
        if not code:  # the run thought it was done, and its output is cut short
            code = _cannot_write(exc)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(int(code or 0))


def _only_the_invoked_command(args: list[str]) -> None:
    """`ckpt CMD ...` imports and builds CMD alone: Typer turns every registered command
    into a Click command (signatures, parameters, help) on each start, and a run needs only
    one. Anything else (`ckpt`, `ckpt --help`, a misspelt command) sees them all."""
    module = COMMAND_MODULES.get(args[0]) if args else None
    if module is None:
        _every_command()
        return
    _register(module)
    _app.registered_commands = [
        command
        for command in _app.registered_commands
        if args[0] == (command.name or getattr(command.callback, "__name__", "").replace("_", "-"))
    ]
