"""Our exception classes and the documented exit codes they map to (see docs/cli.md)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes. Documented in docs/cli.md; never renumber one."""

    OK = 0
    DIFFERENT = 1  # `ckpt diff`: the checkpoints differ (like diff(1))
    FINDINGS = 1  # `ckpt check`: an error was found (or what --fail-on names), like linters
    USAGE = 2  # bad arguments (Click/Typer's own code for usage errors)
    NO_STORE = 3  # the store file/folder does not exist, or none/several were found
    UNREADABLE = 4  # not SQLite, not a checkpoint store, server down, permission denied
    CORRUPT = 5  # truncated or corrupt store or blob
    ENCRYPTED = 6  # encrypted values and no key (or a wrong key)
    NOT_FOUND = 7  # unknown thread, checkpoint or channel
    AMBIGUOUS = 8  # an id prefix matches several checkpoints
    REFUSED = 9  # a pickle names a global outside the allowlist or holds a BUILD: nothing ran
    MISSING_DEPENDENCY = 10  # an optional extra (e.g. langgraph-ckpt[postgres]) is missing
    BUSY = 11  # prune/vacuum --apply: another connection holds the store; the thread rolled back
    UNSAFE = 12  # prune/vacuum: the change would not be safe (refused); nothing changed
    UNSUPPORTED = 13  # a command this kind of store does not support yet; nothing changed
    MISMATCH = 14  # migrate --apply: a thread read back differs from what was written; rolled back
    INTERNAL = 70  # a bug in ckpt itself (sysexits' EX_SOFTWARE), never the store's fault
    NO_SPACE = 74  # a write failed for want of space (a full disk, a quota): EX_IOERR
    INTERRUPTED = 130  # Ctrl-C


class CkptError(Exception):
    """Base of every error ckpt reports to the user as one line and an exit code.

    The message speaks the API's words: a parameter is named as the API spells it, in
    backticks (`on_conflict`, `aes_key`, `all=True`), and the CLI says its own flag there
    instead (--on-conflict: ckpt.cli.options.FLAGS). Notices follow the same rule."""

    exit_code: ExitCode = ExitCode.UNREADABLE

    def __init__(self, message: str) -> None:
        # One line, safe for a terminal, whatever the store put in it (an id, a file name,
        # a parser's complaint quoting the bytes it choked on): ckpt.escapes.
        from ckpt.escapes import for_terminal

        message = for_terminal(message)
        super().__init__(message)
        self.message = message


class BadOption(CkptError):
    """An option or environment value ckpt cannot use (e.g. an AES key of the wrong size)."""

    exit_code = ExitCode.USAGE


class StoreNotFound(CkptError):
    """The store path does not exist, or discovery found none or several."""

    exit_code = ExitCode.NO_STORE


class StoreUnreadable(CkptError):
    """The store exists but cannot be read as a checkpoint store."""

    exit_code = ExitCode.UNREADABLE


class NotACheckpointStore(StoreUnreadable):
    """A readable database or file that holds no LangGraph checkpoints."""


class StoreCorrupt(CkptError):
    """The store is truncated or its bytes are damaged."""

    exit_code = ExitCode.CORRUPT


class DecodeError(CkptError):
    """A blob could not be decoded (truncated, malformed, hostile size or depth)."""

    exit_code = ExitCode.CORRUPT


class TooLarge(DecodeError):
    """A value that would take more than ckpt's resource caps to decode (expansion, work):
    marked as too large instead of decoded at any cost (docs/security.md)."""


class EncryptedError(CkptError):
    """Values are encrypted and no key, or a wrong key, was given.

    `partial` is what was read all the same (a record, a list of them, a matrix): the
    metadata and what is stored in clear text, the hidden values marked `encrypted`."""

    exit_code = ExitCode.ENCRYPTED
    partial: Any = None


class NotFound(CkptError):
    """An unknown thread, checkpoint, namespace or channel."""

    exit_code = ExitCode.NOT_FOUND


class Ambiguous(CkptError):
    """An id prefix matches more than one checkpoint."""

    exit_code = ExitCode.AMBIGUOUS

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class RefusedGlobal(CkptError):
    """A pickle names a global that the restricted unpickler does not allow."""

    exit_code = ExitCode.REFUSED


class MissingDependency(CkptError):
    """An optional dependency is needed for this store."""

    exit_code = ExitCode.MISSING_DEPENDENCY


class StoreBusy(CkptError):
    """`prune`/`vacuum --apply`: the store stayed locked by another connection past the
    timeout; the thread being changed was rolled back (earlier threads stay pruned)."""

    exit_code = ExitCode.BUSY


class NotSupported(CkptError):
    """A command the store's kind does not support yet (`prune` on Redis): nothing changed."""

    exit_code = ExitCode.UNSUPPORTED


class Unsafe(CkptError):
    """`prune`/`vacuum`: a change ckpt will not make because it could lose data (a
    `langgraph dev` folder a server rewrites, a thread whose plan needs the key)."""

    exit_code = ExitCode.UNSAFE


class CopyRefused(CkptError):
    """`ckpt copy`: a thread ckpt cannot carry exactly into the target's layout (a pickle,
    an encrypted body to split): left out and named, never converted."""

    exit_code = ExitCode.UNSAFE


class CopyInterrupted(CkptError):
    """`ckpt copy --apply` stopped by Ctrl-C: `copied` threads of `selected` were committed,
    each whole; the one in flight was rolled back (none is partial)."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str, *, copied: int, selected: int) -> None:
        super().__init__(message)
        self.copied = copied
        self.selected = selected


class MigrationMismatch(CkptError):
    """`migrate --apply`: a thread read back after writing differs from what the plan
    wrote; that thread was rolled back, the threads before it stay migrated."""

    exit_code = ExitCode.MISMATCH
