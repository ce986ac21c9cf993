"""`ckpt mcp`: the real stdio round trip with the MCP SDK's own client (its tools listed and
each one called on stores of every kind, answers equal to the CLI's --json), the budget that
bounds every answer, and bad arguments answered as MCP errors by a server that stays up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ckpt.records.encode import dumps
from invoke import run
from pg import PgStore, url_of

pytest.importorskip("mcp", reason="the mcp extra")

ROOT = Path(__file__).resolve().parent.parent
TOOLS = [
    "list_threads",
    "thread_history",
    "show_checkpoint",
    "diff_checkpoints",
    "dump_checkpoints",
    "store_stats",
    "store_types",
    "check_store",
]
# Large enough that the fixture stores come back whole (equal to --json); the cuts and pages
# are the subject of their own tests below.
WHOLE = ["--budget", "10000000", "--value-chars", "10000000"]


class Server:
    """A `ckpt mcp STORE` subprocess and the SDK's client on it, called from sync tests
    through an anyio portal (one server per store for the whole module)."""

    def __init__(self, store: str, *options: str) -> None:
        self.store = store
        self.options = options

    def __enter__(self) -> Server:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ckpt", "mcp", self.store, *self.options],
            env={"PYTHONPATH": str(ROOT / "src")},
            cwd=ROOT,
        )
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = self.portal.wrap_async_context_manager(Client(params))
        self.client = self._client_cm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client_cm.__exit__(None, None, None)
        self._portal_cm.__exit__(None, None, None)

    def tools(self) -> list[Any]:
        return list(self.portal.call(self.client.list_tools).tools)

    def raw(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(self.client.call_tool, name, arguments)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.raw(name, arguments or {})
        assert not result.is_error, result.content
        answer: dict[str, Any] = json.loads(result.content[0].text)
        return answer

    def pages(self, name: str, arguments: dict[str, Any]) -> list[Any]:
        """Every page of a listing, following `next_cursor`."""
        records: list[Any] = []
        cursor = None
        while True:
            answer = self.call(name, {**arguments, "cursor": cursor})
            records += answer["result"]
            cursor = answer.get("next_cursor")
            if cursor is None:
                return records


def cli_json(*args: str, exit_code: int = 0) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == exit_code, result.stderr + result.stdout
    return json.loads(result.stdout)


def strict(value: Any) -> Any:
    """A value as it reads back from strict JSON (the CLI's and the server's)."""
    return json.loads(dumps(value))


@pytest.fixture(scope="module")
def stores(
    request: pytest.FixtureRequest,
) -> Callable[[str], str]:
    """The store of each kind, as `ckpt` is given it (built by conftest's session fixtures
    on first use)."""

    def location(kind: str) -> str:
        if kind == "sqlite":
            return str(request.getfixturevalue("sqlite_store"))
        if kind == "dev_folder":
            return str(request.getfixturevalue("dev_folder"))
        if kind == "postgres":
            store: PgStore = request.getfixturevalue("pg_store")
            return url_of(store.dsn)
        if kind == "redis":
            return str(request.getfixturevalue("redis_url"))
        return str(request.getfixturevalue("mongo_url"))

    return location


# SQLite in every run; the other kinds start a server each (a few seconds): `long`.
KINDS = [
    "sqlite",
    pytest.param("dev_folder", marks=pytest.mark.long),
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.long]),
    pytest.param("redis", marks=pytest.mark.long),
    pytest.param("mongodb", marks=pytest.mark.long),
]


@pytest.fixture(scope="module")
def started() -> Iterator[Callable[[str], Server]]:
    """One server per store for the whole module, started on first use."""
    servers: dict[str, Server] = {}

    def start(store: str) -> Server:
        if store not in servers:
            servers[store] = Server(store, *WHOLE).__enter__()
        return servers[store]

    yield start
    for running in servers.values():
        running.__exit__(None, None, None)


@pytest.fixture(scope="module", params=KINDS)
def server(
    request: pytest.FixtureRequest,
    stores: Callable[[str], str],
    started: Callable[[str], Server],
) -> Server:
    return started(stores(request.param))


@pytest.fixture(scope="module")
def sqlite_server(stores: Callable[[str], str], started: Callable[[str], Server]) -> Server:
    """The SQLite store's server, for the errors."""
    return started(stores("sqlite"))


def test_every_tool_answers_as_the_cli_prints(server: Server) -> None:
    tools = server.tools()
    assert [t.name for t in tools] == TOOLS
    assert all(t.annotations.read_only_hint for t in tools)
    store = server.store

    threads = server.call("list_threads", {"sort": "thread"})
    assert threads["result"] == cli_json("threads", store, "--sort", "thread")
    assert "next_cursor" not in threads
    # A thread with a parent chain: its history, latest checkpoint, diff and dump.
    thread = max(threads["result"], key=lambda t: (t["checkpoints"], t["thread_id"]))
    name = thread["thread_id"]
    on = ("--db", store)
    assert server.pages("thread_history", {"thread_id": name}) == cli_json("history", name, *on)
    shown = server.call("show_checkpoint", {"selector": name, "values": True})
    assert shown["result"] == cli_json("show", name, "--blobs", *on)
    assert server.call("show_checkpoint", {"selector": name})["result"] == cli_json(
        "show", name, *on
    )
    diffed = server.call("diff_checkpoints", {"a": name})
    assert diffed["result"] == cli_json("diff", name, *on, exit_code=1)
    dumped = server.pages("dump_checkpoints", {"threads": [name], "values": True})
    assert dumped == cli_json("dump", store, "--thread", name)
    assert server.pages("dump_checkpoints", {"threads": [name]}) == cli_json(
        "dump", store, "--thread", name, "--no-values"
    )
    # The store-wide reads; the check of one thread (no store-wide findings that change).
    assert server.call("store_types")["result"] == cli_json("types", store)
    checked = server.call("check_store", {"threads": [name]})["result"]
    assert checked == cli_json("check", store, "--thread", name, exit_code=checked_exit(checked))
    stats = server.call("store_stats", {"threads": [name]})["result"]
    assert comparable(stats) == comparable(cli_json("stats", store, "--thread", name))


def checked_exit(record: dict[str, Any]) -> int:
    return 1 if any(f["severity"] == "error" for f in record["findings"]) else 0


def comparable(stats: dict[str, Any]) -> dict[str, Any]:
    """A stats record without what two reads of a server measure differently (a Postgres
    or MongoDB storage size moves as the server works)."""
    return {k: v for k, v in stats.items() if k != "storage"}


def test_pages_and_filters_agree_with_the_cli(server: Server) -> None:
    store = server.store
    assert server.pages("list_threads", {"limit": 2}) == cli_json("threads", store)
    errors = server.call("list_threads", {"status": "error"})["result"]
    assert errors == cli_json("threads", store, "--status", "error")


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("list_threads", {"limit": "many"}, "limit"),
        ("list_threads", {"limit": 0}, "limit"),
        ("list_threads", {"status": "broken"}, "status"),
        ("list_threads", {"cursor": "not-a-cursor"}, "cursor"),
        ("thread_history", {}, "thread_id"),
        ("thread_history", {"thread_id": "no-such-thread"}, "exit 7"),
        ("show_checkpoint", {"selector": "no-such-thread"}, "exit 7"),
        ("diff_checkpoints", {"a": "no-such-thread", "b": 3}, "b"),
        ("dump_checkpoints", {"since": "yesterday-ish"}, "since"),
        ("check_store", {"stale": "soon"}, "stale"),
    ],
)
def test_bad_arguments_are_mcp_errors_and_the_server_stays_up(
    stores: Callable[[str], str], sqlite_server: Server, tool: str, arguments: Any, said: str
) -> None:
    result = sqlite_server.raw(tool, arguments)
    assert result.is_error
    assert said in result.content[0].text
    assert "Traceback" not in result.content[0].text
    assert [t.name for t in sqlite_server.tools()] == TOOLS  # still answering


def test_an_unknown_tool_is_an_error_too(sqlite_server: Server) -> None:
    from mcp.shared.exceptions import MCPError

    try:
        result = sqlite_server.raw("prune", {"all": True})
    except MCPError:
        pass
    else:
        assert result.is_error
    assert [t.name for t in sqlite_server.tools()] == TOOLS


def test_small_budgets_page_and_cut(sqlite_store: Path) -> None:
    """The tools as the server calls them (in this process: one server per module is
    started), with a small budget."""
    import ckpt.api
    from ckpt.mcp.budget import Budget
    from ckpt.mcp.server import Tools

    tools = Tools(lambda: ckpt.api.open(sqlite_store, hidden="keep"), Budget(6000, 300))

    def call(name: str, arguments: dict[str, Any]) -> Any:
        return json.loads(getattr(tools, name)(**arguments))

    whole = cli_json("threads", str(sqlite_store))
    first = call("list_threads", {})
    assert len(dumps(first)) <= 6000
    assert first["next_cursor"] and 0 < len(first["result"]) < len(whole)
    pages, cursor = list(first["result"]), first["next_cursor"]
    while cursor is not None:
        page = call("list_threads", {"cursor": cursor})
        assert len(dumps(page)) <= 6000
        pages += page["result"]
        cursor = page.get("next_cursor")
    assert pages == strict(whole)
    # The largest checkpoint of the store, with its values: cut to the budget, each cut
    # named in `left_out`, the rest as --json has it.
    thread = max(whole, key=lambda t: t["checkpoints"])["thread_id"]
    shown = call("show_checkpoint", {"selector": thread, "values": True})
    assert len(dumps(shown)) <= 6000
    assert shown["left_out"]
    assert '"__ckpt__": "cut"' in json.dumps(shown["result"])
    full = cli_json("show", thread, "--blobs", "--db", str(sqlite_store))
    assert shown["result"]["checkpoint_id"] == full["checkpoint_id"]


def test_the_budget_cuts_long_values_and_pages_lists() -> None:
    from ckpt.mcp.budget import Budget, bounded, fit, paged

    record = {"id": "a", "text": "x" * 5000, "items": list(range(3000)), "small": [1, 2]}
    answer = bounded(record, Budget(chars=3000, value_chars=100))
    assert answer.result["id"] == "a" and answer.result["small"] == [1, 2]
    assert answer.result["text"] == {"__ckpt__": "cut", "size": 5000, "head": "x" * 100}
    items = answer.result["items"]
    assert items[:5] == [0, 1, 2, 3, 4] and items[-1]["__ckpt__"] == "cut"
    assert items[-1]["items"] == 3000 - (len(items) - 1)
    assert len(dumps(answer.document())) <= 3000
    assert any("text" in said for said in answer.left_out)
    assert any("items" in said for said in answer.left_out)
    # Under the budget nothing changes.
    assert fit(record, 10**6, "", []) == record
    # Pages: every record once, in order, each page within the budget.
    records = [{"n": n, "pad": "y" * 50} for n in range(100)]
    seen: list[Any] = []
    start = 0
    while True:
        page = paged(iter(records), Budget(chars=1500), start=start, limit=30)
        assert len(dumps(page.document())) <= 1500
        seen += page.result
        if page.cursor is None:
            break
        start = int(page.cursor)
    assert seen == records


def test_encrypted_values_are_marked_and_said(encrypted_store: Path) -> None:
    """Without the key the tools answer: the values marked encrypted, a notice says why."""
    import ckpt.api
    from ckpt.mcp.budget import Budget
    from ckpt.mcp.server import Tools

    tools = Tools(lambda: ckpt.api.open(encrypted_store, hidden="keep"), Budget())
    thread = json.loads(tools.list_threads(sort="thread", limit=1))["result"][0]["thread_id"]
    shown = json.loads(tools.show_checkpoint(thread, values=True))
    assert '"__ckpt__": "encrypted"' in json.dumps(shown["result"])
    assert any("key" in notice for notice in shown["notices"])


class Payload:
    """A hostile pickle: unpickling it runs `touch <marker>`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_refused_values_are_marked_and_nothing_runs(dev_folder: Path, tmp_path: Path) -> None:
    """A `langgraph dev` folder whose blob names os.system: the tools answer, the value
    marked refused and a notice naming it; nothing was run."""
    import pickle
    import shutil

    from fixtures.build import DEV_FILES
    from fixtures.oracle import load_memory_saver

    import ckpt.api
    from ckpt.mcp.budget import Budget
    from ckpt.mcp.server import Tools

    folder = tmp_path / ".langgraph_api"
    folder.mkdir()
    for name in DEV_FILES:
        shutil.copyfile(dev_folder / name, folder / name)
    marker = tmp_path / "pwned"
    saver = load_memory_saver(*(folder / n for n in DEV_FILES))
    blobs = {key: (("msgpack", Payload(marker)) if key[0] == "support-1" else value)
             for key, value in dict(saver.blobs).items()}  # fmt: skip
    (folder / DEV_FILES[2]).write_bytes(pickle.dumps(blobs, 2))
    tools = Tools(lambda: ckpt.api.open(folder, hidden="keep"), Budget())
    shown = json.loads(tools.show_checkpoint("support-1", values=True))
    assert '"__ckpt__": "refused"' in json.dumps(shown["result"])
    assert any("refused to load" in n and "system" in n for n in shown["notices"])
    assert not marker.exists()


def test_the_mcp_command_fails_as_every_command_does(tmp_path: Path) -> None:
    result = run("mcp", str(tmp_path / "missing.sqlite"))
    assert result.exit_code == 3, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_without_the_sdk_one_line_names_the_extra(sqlite_store: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; sys.argv[0] = 'ckpt'; "
        "from ckpt.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "mcp", str(sqlite_store)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 10, done.stderr
    assert done.stderr.strip() == (
        "ckpt: error: ckpt mcp needs the MCP SDK: pip install 'langgraph-ckpt[mcp]'"
    )
    assert done.stdout == ""
