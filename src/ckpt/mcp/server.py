"""The MCP server: one tool per read of ckpt.api, each answer the records `--json` prints,
bounded (ckpt.mcp.budget). Nothing here writes: the tools call only the API's read methods,
on a store opened per call as every read command opens it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ckpt import __version__
from ckpt.errors import CkptError
from ckpt.mcp.budget import Answer, Budget, bounded, check_limit, offset, paged
from ckpt.records.vocabulary import Status, ThreadSort

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ckpt.api import CheckpointStore

Opener = Callable[[], "CheckpointStore"]

INSTRUCTIONS = (
    "Read-only tools over one LangGraph checkpoint store (ckpt). Start with list_threads "
    "(status error or interrupted finds the runs that stopped), then thread_history, "
    "show_checkpoint (values=true for channel values, channels=[...] for some) and "
    "diff_checkpoints. Every answer is JSON: `result` holds the records ckpt's --json "
    "prints; `next_cursor` is the cursor of the next page; `left_out` says what was cut "
    '(long values become {"__ckpt__": "cut", "size": ...}); `notices` are what ckpt '
    'would say on stderr. Values marked {"__ckpt__": "encrypted"} or "refused" were '
    "not readable: they are never guessed."
)

CursorArg = Annotated[
    str | None, Field(description="next_cursor of the previous answer, for the next page.")
]
ThreadsArg = Annotated[list[str] | None, Field(description="Only these threads.")]
NsArg = Annotated[
    str | None, Field(description="Checkpoint namespace ('' is the root; default: all).")
]


class Tools:
    """The tools, each a read of the store opened by `open_store` for that call."""

    def __init__(self, open_store: Opener, budget: Budget) -> None:
        self._open = open_store
        self.budget = budget

    @contextmanager
    def _store(self) -> Iterator[tuple[CheckpointStore, list[str]]]:
        """The store for one call, and the notices to hand back with its answer (what ckpt
        says on stderr, encrypted values without a key, refused pickle globals)."""
        notices: list[str] = []
        store = self._open()
        try:
            yield store, notices
        finally:
            store.close()
        notices.extend(store.notices)
        notices.extend(error.message for error in store.hidden[:1])
        if store.refused:
            names = ", ".join(sorted(set(store.refused))[:5])
            notices.append(f"refused to load {names}: those values are marked refused")

    def list_threads(
        self,
        status: Annotated[
            Status | None, Field(description="Only threads with this status.")
        ] = None,
        where: Annotated[
            dict[str, str] | None,
            Field(description="Only threads whose latest metadata has these keys and values."),
        ] = None,
        sort: Annotated[ThreadSort, Field(description="Order (updated: newest).")] = "updated",
        sizes: Annotated[bool, Field(description="Also measure bytes (reads every row).")] = False,
        limit: Annotated[int, Field(description="Threads per page.")] = 100,
        cursor: CursorArg = None,
    ) -> str:
        """Every thread of the store (`ckpt threads --json`): checkpoints, namespaces,
        latest step, status (done, interrupted, error, pending), errors, interrupts."""
        start, limit = offset(cursor), check_limit(limit)
        with self._store() as (store, notices):
            records = store.iter_threads(
                status=status, where=where, sort=sort, sizes=sizes, limit=start + limit + 1
            )
            answer = paged(records, self.budget, start=start, limit=limit)
        return self._said(answer, notices)

    def thread_history(
        self,
        thread_id: Annotated[str, Field(description="The thread.")],
        ns: NsArg = None,
        last: Annotated[
            int | None, Field(description="Only the newest N checkpoints.", ge=1)
        ] = None,
        limit: Annotated[int, Field(description="Checkpoints per page.")] = 50,
        cursor: CursorArg = None,
    ) -> str:
        """A thread's checkpoints, oldest first, without channel values (`ckpt history
        --json`): each with its step, source, next nodes, tasks, writes, errors and
        interrupts, and its parent."""
        start, limit = offset(cursor), check_limit(limit)
        with self._store() as (store, notices):
            records = store.iter_history(thread_id, ns=ns, last=last)
            answer = paged(records, self.budget, start=start, limit=limit)
        return self._said(answer, notices)

    def show_checkpoint(
        self,
        selector: Annotated[
            str,
            Field(
                description="Checkpoint id, unique prefix, THREAD (its latest checkpoint) "
                "or THREAD~N (N parents back)."
            ),
        ],
        ns: NsArg = None,
        values: Annotated[bool, Field(description="Include the channel values.")] = False,
        channels: Annotated[
            list[str] | None,
            Field(description="Only these channels' values and writes (implies values)."),
        ] = None,
    ) -> str:
        """One checkpoint (`ckpt show --json`, with values `--blobs`): metadata, versions,
        next, tasks, pending writes, errors and interrupts; values cut to fit."""
        with self._store() as (store, notices):
            record = store.checkpoint(
                selector, ns=ns, values=values or bool(channels), channels=channels or ()
            )
            answer = bounded(record, self.budget)
        return self._said(answer, notices)

    def diff_checkpoints(
        self,
        a: Annotated[str, Field(description="A checkpoint selector (as show_checkpoint).")],
        b: Annotated[
            str | None, Field(description="The other one (default: A's parent, compared to A).")
        ] = None,
        ns: NsArg = None,
        limit: Annotated[int, Field(description="Patch operations per page.")] = 200,
        cursor: CursorArg = None,
    ) -> str:
        """What differs between two checkpoints, as the RFC 6902 JSON Patch `ckpt diff
        --json` prints (from the older to the newer's `show --json --blobs` record)."""
        start, limit = offset(cursor), check_limit(limit)
        with self._store() as (store, notices):
            compared = store.diff(a, b, ns=ns)
            answer = paged(iter(compared.patch), self.budget, start=start, limit=limit)
            if not compared.differ:
                notices.append("the two checkpoints hold the same")
        return self._said(answer, notices)

    def dump_checkpoints(
        self,
        threads: ThreadsArg = None,
        ns: NsArg = None,
        since: Annotated[
            str | None,
            Field(description="From this time: ISO time or date, age (7d, 12h), or a checkpoint."),
        ] = None,
        until: Annotated[str | None, Field(description="Before this time (as since).")] = None,
        latest: Annotated[
            bool, Field(description="Only each thread's newest checkpoint per namespace.")
        ] = False,
        values: Annotated[bool, Field(description="Include the channel values.")] = False,
        limit: Annotated[int, Field(description="Checkpoints per page.")] = 20,
        cursor: CursorArg = None,
    ) -> str:
        """Checkpoints in (thread, namespace, id) order, as `ckpt dump` streams them (its
        records are `show --json --blobs`'s; without values: `dump --no-values`)."""
        start, limit = offset(cursor), check_limit(limit)
        with self._store() as (store, notices):
            records = store.dump(
                threads=threads or (), ns=ns, since=since, until=until, latest=latest,
                values=values, read_only=True,
            )  # fmt: skip
            answer = paged(records, self.budget, start=start, limit=limit)
        return self._said(answer, notices)

    def store_stats(
        self,
        threads: ThreadsArg = None,
        ns: NsArg = None,
        top: Annotated[int, Field(description="How many of each largest list.", ge=0)] = 10,
    ) -> str:
        """Where the store's bytes go (`ckpt stats --json`): totals, the largest threads,
        channels, writes and checkpoints, growth, what pruning would free, health."""
        with self._store() as (store, notices):
            answer = bounded(store.stats(threads=threads or (), ns=ns, top=top), self.budget)
        return self._said(answer, notices)

    def store_types(self, threads: ThreadsArg = None) -> str:
        """Every class the stored values name (`ckpt types --json`), marked against
        LangGraph's strict-mode safe list, with the allowlist to paste. Nothing is imported."""
        with self._store() as (store, notices):
            answer = bounded(store.types(threads=threads or ()), self.budget)
        return self._said(answer, notices)

    def check_store(
        self,
        threads: ThreadsArg = None,
        stale: Annotated[
            str | None, Field(description="Waits on an interrupt older than this warn (7d).")
        ] = None,
    ) -> str:
        """Whether the store is whole (`ckpt check --json`): broken parent chains, missing
        blobs and writes, undecodable values, failed and waiting threads, each finding with
        its severity and the ckpt command that fixes it."""
        with self._store() as (store, notices):
            # One process: a server with threads of its own does not fork.
            answer = bounded(store.check(threads=threads or (), stale=stale, jobs=1), self.budget)
        return self._said(answer, notices)

    def _said(self, answer: Answer, notices: list[str]) -> str:
        answer.notices.extend(notices)
        return answer.text()

    def names(self) -> list[str]:
        return [
            "list_threads",
            "thread_history",
            "show_checkpoint",
            "diff_checkpoints",
            "dump_checkpoints",
            "store_stats",
            "store_types",
            "check_store",
        ]


def _answering(tool: Callable[..., str]) -> Callable[..., str]:
    """A tool whose library errors are the tool's error (an MCP error result): the one line
    ckpt would print, and the exit code it would give."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def answer(*args: Any, **kwargs: Any) -> str:
        try:
            return tool(*args, **kwargs)
        except CkptError as exc:
            code = exc.exit_code
            raise ToolError(f"{exc.message} (ckpt exit {int(code)}: {code.name.lower()})") from None

    return answer


def server(open_store: Opener, budget: Budget) -> MCPServer[Any]:
    """The MCP server of these tools, every one read-only and idempotent."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    tools = Tools(open_store, budget)
    app: MCPServer[Any] = MCPServer(
        "ckpt", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    for name in tools.names():
        tool = _answering(getattr(tools, name))
        app.add_tool(tool, name=name, annotations=read_only, structured_output=False)
    return app


def serve(open_store: Opener, budget: Budget) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    server(open_store, budget).run("stdio")
