"""`ckpt browse`: an interactive, read-only browser of a checkpoint store (the `tui` extra).

Importing this package imports no Textual: `require_textual` says in one line which extra
to install, and `run` starts the app (ckpt.browse.app) once the store is open.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ckpt.errors import BadOption, MissingDependency
from ckpt.records.vocabulary import install_hint

if TYPE_CHECKING:
    from collections.abc import Callable

    from ckpt.api import CheckpointStore
    from ckpt.browse.session import StoreSpec

EXTRA_HINT = f"ckpt browse needs Textual: {install_hint('tui')}"


def require_textual() -> None:
    """Raise MissingDependency (exit 10) when Textual is not installed."""
    try:
        import textual  # noqa: F401
    except ImportError:
        raise MissingDependency(EXTRA_HINT) from None


def run(
    store: CheckpointStore,
    spec: StoreSpec,
    *,
    thread_id: str | None = None,
    words: Callable[[str], str] = str,
) -> int:
    """Browse an open store until the user quits; the app's return code. `words` puts the
    library's messages in the words of the face that opened it (the CLI's flags)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadOption("ckpt browse needs a terminal: run it without a pipe or redirection")
    from ckpt.browse.session import Session

    session = Session(store, spec, thread_id=thread_id)  # queries start while Textual loads
    try:
        from ckpt.browse.app import BrowseApp

        app = BrowseApp(session, thread_id=thread_id, words=words)
        app.run()
        if app.failure is not None:
            raise app.failure
        return app.return_code or 0
    finally:
        session.close()
