"""`ckpt browse`: the Textual app driven by its pilot on real fixture stores (keys,
selections, what each pane shows), SVG snapshots of every pane, and one run in a real
pseudo-terminal under tmux."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual import events
from textual.command import CommandList
from textual.geometry import Region
from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input
from textual.widgets._footer import FooterKey
from typer.testing import CliRunner

import ckpt
from ckpt.browse.app import BrowseApp, _json_part
from ckpt.browse.model import Key, ThreadList
from ckpt.browse.session import (
    Selector,
    Session,
    StoreSpec,
    diff_command,
    shell_join,
    show_command,
)
from ckpt.browse.widgets import FilterInput, HistoryRows, KeyBar, LinesView, ThreadRows
from ckpt.cli import app as cli
from ckpt.errors import ExitCode, NotFound
from ckpt.records.encode import dumps
from runs import long_run
from store_files import folder_hashes, unexpected_changes

CKPT = str(Path(sys.executable).with_name("ckpt"))
SIZE = (120, 40)
WIDE = {"COLUMNS": "200"}  # what the CLI prints is not cut
runner = CliRunner()


# -- driving the app ----------------------------------------------------------------------------


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every query, layout and key press has been acted on."""
    app = pilot.app
    assert isinstance(app, BrowseApp)
    quiet = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not app.is_running or app.return_code is not None:
            # It is quitting (an unknown --thread): no screen is left for the pilot to
            # wait on, so wait for the app itself to stop.
            while app.is_running and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            return
        await pilot.pause(0.002)  # the screen's messages, then a moment for the threads
        quiet = quiet + 1 if not app.busy else 0
        if quiet >= 3:
            return
    raise AssertionError("the browser never settled")


async def type_filter(pilot: Pilot[Any], text: str) -> None:
    """Type into the threads filter (as `/` and the keys would, without a wait per key)."""
    field = browser(pilot).query_one("#filter")
    assert isinstance(field, FilterInput)
    field.focus()
    field.value = text
    await settle(pilot)


def key_event(key: str) -> events.Key:
    """The event Pilot.press sends for `key` (as textual.app.App._press_keys makes it)."""
    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    try:
        char: str | None = unicodedata.lookup(
            _get_unicode_name_from_key(REPLACED_KEYS.get(key, key))
        )
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(key, char)


async def press(pilot: Pilot[Any], *keys: str) -> None:
    """Press each key as Pilot.press does, then wait until the browser has acted on it.
    Pilot.press also waits, twice a key, for the whole process to look idle (20 ms at
    least, and until every thread of it rests); `settle` asks the browser itself."""
    app = browser(pilot)
    for key in keys:
        event = key_event(key)
        event.set_sender(app)
        app.post_message(event)
        read = asyncio.get_running_loop().create_future()
        app.call_later(read.set_result, None)  # queued after the key: runs once it is read
        deadline = time.monotonic() + 30
        while not read.done() and app.is_running and time.monotonic() < deadline:
            await asyncio.wait({read}, timeout=0.05)  # wakes as it is read (a quit: never)
        await settle(pilot)


@asynccontextmanager
async def browsing(
    store: Path | str,
    *,
    thread: str | None = None,
    size: tuple[int, int] = SIZE,
    aes_key: bytes | None = None,
    words: Callable[[str], str] = str,
) -> AsyncIterator[Pilot[Any]]:
    opened = ckpt.open(store, aes_key=aes_key)
    spec = StoreSpec.of(str(store), opened.location)
    session = Session(opened, spec, thread_id=thread)
    app = BrowseApp(session, thread_id=thread, debounce=0, words=words)
    try:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            yield pilot
    finally:
        session.close()
        opened.close()


def drive(
    store: Path | str, scenario: Callable[[Pilot[Any]], Awaitable[None]], **options: Any
) -> None:
    async def main() -> None:
        async with browsing(store, **options) as pilot:
            await scenario(pilot)

    asyncio.run(main())


def browser(pilot: Pilot[Any]) -> BrowseApp:
    assert isinstance(pilot.app, BrowseApp)
    return pilot.app


def shown_threads(pilot: Pilot[Any]) -> list[str]:
    return [r["thread_id"] for r in browser(pilot).query_one(ThreadRows).threads.shown]


def current_thread(pilot: Pilot[Any]) -> str:
    record = browser(pilot).query_one(ThreadRows).current
    assert record is not None
    return record["thread_id"]


def view_text(pilot: Pilot[Any]) -> str:
    return browser(pilot).query_one(LinesView).text()


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as one space (the view wraps)."""
    return " ".join(text.split())


def shown_record(pilot: Pilot[Any]) -> Any:
    loaded = browser(pilot).loaded
    assert loaded is not None
    return loaded.record


async def go_to_thread(pilot: Pilot[Any], thread_id: str) -> None:
    rows = browser(pilot).query_one(ThreadRows)
    index = rows.threads.index_of(thread_id)
    assert index is not None, thread_id
    rows.move_to(index)
    await settle(pilot)


async def go_to_checkpoint(pilot: Pilot[Any], checkpoint_id: str, ns: str = "") -> None:
    app = browser(pilot)
    assert app.history is not None
    index = app.history.index[Key(app.history.thread_id, ns, checkpoint_id)]
    app.query_one(HistoryRows).move_to(index)
    await settle(pilot)


# -- threads -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "redis", "valkey", "mysql"])
def test_opens_at_the_newest_checkpoint_of_the_latest_thread(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """On every kind of store alike (the browser reads through the one interface)."""
    fixtures = {"sqlite": "sqlite_store", "redis": "redis_url", "valkey": "valkey_url"}
    sqlite_store = request.getfixturevalue(fixtures.get(kind, "mysql_url"))
    with ckpt.open(sqlite_store) as store:
        threads = store.threads()
        newest = store.checkpoint(threads[0]["thread_id"])

    async def scenario(pilot: Pilot[Any]) -> None:
        assert shown_threads(pilot) == [t["thread_id"] for t in threads]
        assert current_thread(pilot) == threads[0]["thread_id"]
        assert shown_record(pilot) == newest  # what `ckpt show THREAD --json --blobs` gives
        text = view_text(pilot)
        assert newest["checkpoint_id"] in text and "next" in text
        assert browser(pilot).focused is browser(pilot).query_one(ThreadRows)

    drive(sqlite_store, scenario)


def test_opens_at_the_thread_asked_for(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        assert current_thread(pilot) == manifest["fork"]
        assert shown_record(pilot)["checkpoint_id"] == manifest["fork_latest"]

    drive(sqlite_store, scenario, thread=manifest["fork"])

    async def unknown(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        assert not app.is_running  # the app ends; `run` raises what every command says
        assert isinstance(app.failure, NotFound)
        assert app.failure.message == f"no thread 'nosuch-1' in {sqlite_store}"

    drive(sqlite_store, unknown, thread="nosuch-1")

    misspelt = manifest["fork"][:-1] + "x"  # one character off: the CLI's `did you mean`

    async def close(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        assert not app.is_running and isinstance(app.failure, NotFound)
        assert app.failure.message == (
            f"no thread {misspelt!r} in {sqlite_store}; did you mean {manifest['fork']!r}?"
        )
        history = runner.invoke(cli, ["history", misspelt, "--db", str(sqlite_store)])
        assert history.exit_code == ExitCode.NOT_FOUND
        assert history.stderr.strip().endswith(app.failure.message.split(";", 1)[1])

    drive(sqlite_store, close, thread=misspelt)


def test_jumps_to_errors_and_interrupts(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        await press(pilot, "e")
        assert current_thread(pilot) == manifest["fanout_error"]
        assert "cannot parse invoice-2" in str(browser(pilot).query_one("#thread-detail").render())
        waiting = {manifest["interrupt_waiting"], manifest["subgraph_interrupt"]}
        await press(pilot, "i")
        first = current_thread(pilot)
        await press(pilot, "i")
        assert {first, current_thread(pilot)} == waiting
        await press(pilot, "I")
        assert current_thread(pilot) == first
        await press(pilot, "E")
        assert current_thread(pilot) == manifest["fanout_error"]  # the only one

    drive(sqlite_store, scenario)


def test_filter_by_typing(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        await press(pilot, "slash", *"sup")
        assert isinstance(browser(pilot).focused, FilterInput)
        await type_filter(pilot, "support")
        assert sorted(shown_threads(pilot)) == manifest["chat"]
        assert current_thread(pilot) in manifest["chat"]  # its history followed
        assert browser(pilot).history is not None
        assert browser(pilot).history.thread_id == current_thread(pilot)
        await press(pilot, "escape")
        assert len(shown_threads(pilot)) == len(manifest["threads"])
        assert isinstance(browser(pilot).focused, ThreadRows)
        await type_filter(pilot, "interrupted")  # a status, as --status
        assert sorted(shown_threads(pilot)) == sorted(
            [manifest["interrupt_waiting"], manifest["subgraph_interrupt"]]
        )
        await type_filter(pilot, "user_id=u-1 acme")
        assert shown_threads(pilot) == ["support-1"]  # KEY=VALUE as --where, and a word
        await press(pilot, "enter")
        assert isinstance(browser(pilot).focused, ThreadRows)
        title = str(browser(pilot).query_one("#threads-pane").border_title)
        assert "1/12" in title

    drive(sqlite_store, scenario)


def test_sort_is_the_cli_sort(sqlite_store: Path) -> None:
    with ckpt.open(sqlite_store) as store:
        by = {
            sort: [t["thread_id"] for t in store.threads(sort=sort)]
            for sort in ("thread", "checkpoints")
        }

    async def scenario(pilot: Pilot[Any]) -> None:
        keep = current_thread(pilot)
        await press(pilot, "s")
        assert shown_threads(pilot) == by["thread"]
        assert current_thread(pilot) == keep  # the cursor stays on its thread
        await press(pilot, "s")  # the CLI's order: checkpoints next
        assert browser(pilot).threads.sort == "checkpoints"
        assert shown_threads(pilot) == by["checkpoints"]
        await press(pilot, "s")  # no sizes were measured: no sort by size
        assert browser(pilot).threads.sort == "step"
        await press(pilot, "s", "s")  # status, then round to the start
        assert browser(pilot).threads.sort == "updated"

    drive(sqlite_store, scenario)


def test_thread_list_filters_on_records() -> None:
    records: Any = [
        {"thread_id": "a-1", "status": "done", "metadata": {"user": "x"}, "checkpoint_id": "1"},
        {"thread_id": "b-2", "status": "error", "metadata": {"user": "y"}, "checkpoint_id": "2"},
    ]
    threads = ThreadList(records)
    assert [r["thread_id"] for r in threads.shown] == ["b-2", "a-1"]
    threads.set_filter("user=x")
    assert [r["thread_id"] for r in threads.shown] == ["a-1"]
    threads.set_filter("error")
    assert [r["thread_id"] for r in threads.shown] == ["b-2"]
    threads.set_filter("Y")
    assert [r["thread_id"] for r in threads.shown] == ["b-2"]
    threads.set_filter("")
    assert threads.next_with("error", 0) == 0 and threads.next_with("pending", 0) is None


# -- history -----------------------------------------------------------------------------------


def test_history_is_the_tree_of_ckpt_history(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["fork"])
        history = browser(pilot).history
        assert history is not None and history.thread_id == manifest["fork"]
        kinds = [line.kind for line in history.lines]
        assert kinds.count("fork") == 2 and kinds.count("checkpoint") == history.checkpoints
        rows = browser(pilot).query_one(HistoryRows)
        # The cursor starts on the thread's newest checkpoint: the end of the trunk.
        assert shown_record(pilot)["checkpoint_id"] == manifest["fork_latest"]
        assert history.lines[rows.cursor].record == history.record(
            Key(manifest["fork"], "", manifest["fork_latest"])
        )
        await press(pilot, "2", "home")
        assert shown_record(pilot)["parent_checkpoint_id"] is None
        await press(pilot, "down")
        assert (
            shown_record(pilot)["parent_checkpoint_id"] == history.lines[0].record["checkpoint_id"]
        )  # type: ignore[index]
        await go_to_thread(pilot, manifest["subgraph_interrupt"])
        await press(pilot, "2", "home", "i")
        subgraph = browser(pilot).history
        assert subgraph is not None
        heads = [line for line in subgraph.lines if line.kind == "subgraph"]
        assert heads and heads[0].checkpoint_ns.startswith("research:")
        assert any(t["state"] == "interrupted" for t in shown_record(pilot)["tasks"])
        await press(pilot, "i")  # the interrupt inside the subgraph run
        assert shown_record(pilot)["checkpoint_ns"].startswith("research:")

    drive(sqlite_store, scenario)


def ten_thousand_steps(path: Path, steps: int, thread_id: str = "long-1") -> None:
    """A real run of `steps` supersteps through SqliteSaver: one node that loops."""
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.types import Command

    class Count(TypedDict, total=False):
        count: int

    def tick(state: Count) -> Command[Any]:
        count = state.get("count", 0) + 1
        return Command(update={"count": count}, goto="__end__" if count >= steps else "tick")

    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA synchronous = OFF")  # 10,000 commits
    builder = StateGraph(Count)
    builder.add_node("tick", tick, destinations=("tick", "__end__"))
    builder.add_edge(START, "tick")
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": steps + 10}
    graph.invoke({"count": 0}, config)
    conn.close()


# The long thread's supersteps: 10,000 in a long run; 2,500 in make test, which is still
# ten times the rows the history pane keeps drawn (HistoryRows.KEPT_ROWS) and 80 screens
# (the real run that writes them is most of the time these tests take).
LONG_STEPS = 10_000 if long_run() else 2_500


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("long") / "long.sqlite"
    ten_thousand_steps(path, LONG_STEPS)
    return path


def test_ten_thousand_checkpoints_draw_only_what_is_seen(long_store: Path) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        rows = app.query_one(HistoryRows)
        assert app.history is not None and app.history.checkpoints == LONG_STEPS + 2
        assert shown_record(pilot)["metadata"]["step"] == LONG_STEPS
        assert len(rows._strips) <= rows.size.height  # rows are made as they show
        await press(pilot, "2", "home")
        assert shown_record(pilot)["metadata"]["step"] == -1
        await press(pilot, "pagedown", "pagedown")
        for _ in range(30):
            rows.action_page(1)  # holding the key
        await settle(pilot)
        # 32 pages of a screenful each (the pane's height less one row), most of them
        assert shown_record(pilot)["metadata"]["step"] > 24 * (rows.size.height - 1)
        assert round(rows.scroll_y) <= rows.cursor < round(rows.scroll_y) + rows.size.height
        assert len(rows._strips) <= rows.KEPT_ROWS < LONG_STEPS  # not all of them
        await press(pilot, "end")
        assert shown_record(pilot)["metadata"]["step"] == LONG_STEPS

    drive(long_store, scenario)


def test_keys_pressed_while_a_history_loads_act_on_it(long_store: Path, tmp_path: Path) -> None:
    """To the long thread (LONG_STEPS supersteps), its history pane and its first
    checkpoint, typed before its history has come: Home acts on that history, not on the
    one it replaces."""
    store = tmp_path / "two.sqlite"
    shutil.copy(long_store, store)
    ten_thousand_steps(store, 2, thread_id="short-1")  # the newest: the one shown first

    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        assert current_thread(pilot) == "short-1"
        # In one read, as a paste comes (Pilot.press would wait for the history to come).
        for key, char in (("down", None), ("2", "2"), ("home", None)):
            app.post_message(events.Key(key, char))
        await pilot.pause(0.05)  # the keys are read; the long history is on its way
        assert app.history is not None and app.history.thread_id == "short-1"
        await settle(pilot)
        assert app.history is not None and app.history.thread_id == "long-1"
        assert shown_record(pilot)["thread_id"] == "long-1"
        assert shown_record(pilot)["metadata"]["step"] == -1  # not its newest, LONG_STEPS

    drive(store, scenario)


def test_no_pane_is_left_loading_after_quick_thread_changes(
    sqlite_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Histories slower than the spinner's delay, asked for and superseded in quick
    succession: once the last has come, no pane still shows that it is loading."""
    from ckpt.browse import app as browse_app
    from ckpt.browse.session import Session

    read_history = Session.read_history

    def slow_read_history(self: Session, thread_id: str) -> Any:
        time.sleep(browse_app.LOADING_AFTER * 2)
        return read_history(self, thread_id)

    monkeypatch.setattr(Session, "read_history", slow_read_history)

    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        for keys in (("down",), ("down", "down"), ("up",), ("down", "up", "down")):
            for key in keys:
                app.post_message(events.Key(key, None))
            await pilot.pause(browse_app.LOADING_AFTER * 1.5)  # a spinner is showing
        await settle(pilot)
        await pilot.pause(browse_app.LOADING_AFTER * 2)
        assert app.history is not None and app.history.thread_id == current_thread(pilot)
        for pane in ("#threads-pane", "#history-pane", "#checkpoint-pane"):
            assert not app.query_one(pane).loading, pane

    drive(sqlite_store, scenario)


def test_a_spinner_that_fires_as_its_query_ends_shows_nothing(sqlite_store: Path) -> None:
    """A loading spinner's timer queues its work (Textual's call_next). If the query
    ends between the timer firing and that work running, the pane must not be left
    loading: this happened under load (two browse snapshots caught a history pane
    covered by a spinner for good)."""

    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        pane = "#history-pane"
        timer = app._slow(pane)
        assert timer._callback is not None
        timer._callback()  # the timer fires: its work is queued, not yet run
        app._done(pane)  # the query ends before the queue gets to it
        await pilot.pause()
        await settle(pilot)
        assert not app.query_one(pane).loading

    drive(sqlite_store, scenario)


# -- the checkpoint pane -----------------------------------------------------------------------


def test_tasks_show_their_input_error_and_writes(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    """Each task of `ckpt show --json`'s record, in its order, with its input, its error
    next to it and its own writes; `next` in the checkpoint view as `ckpt show` says it."""
    from ckpt.render.human import task_labels

    with ckpt.open(sqlite_store) as store:
        record = store.checkpoint(manifest["fanout_error"])
    labels = task_labels(record)
    tasks = record["tasks"]
    assert tasks and any(t["error"] for t in tasks)  # the fixture's failed fan-out
    headings = [f"{labels[t['id']]} {t['state'].replace('_', ' ')} {t['id']}" for t in tasks]

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["fanout_error"])
        await press(pilot, "t")
        text = flat(view_text(pilot))
        starts = [text.index(heading) for heading in headings]
        assert starts == sorted(starts)  # LangGraph's order
        for task, begin, end in zip(tasks, starts, [*starts[1:], len(text)], strict=True):
            section = text[begin:end]
            assert f"input {json.dumps(task['input'])}" in section
            if task["error"] is not None:
                assert f"error {flat(task['error'])}" in section and "no traceback" in section
            for write in record["pending_writes"] or []:
                if write["task_id"] == task["id"]:
                    assert f"{write['channel']} [{write['idx']}]" in section
        await press(pilot, "o")
        failed = [t for t in tasks if t["state"] == "failed"]
        for task in failed:
            assert f"{labels[task['id']]} (failed)" in view_text(pilot)  # ckpt show's `next`

    drive(sqlite_store, scenario)


def test_interrupts_show_their_id_and_answer(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    with ckpt.open(sqlite_store) as store:
        waiting = store.threads(status="interrupted")
    ids = {t["thread_id"]: t["interrupts"][0]["id"] for t in waiting}

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["interrupt_waiting"])
        await press(pilot, "t")
        assert f"id {ids[manifest['interrupt_waiting']]}" in view_text(pilot)
        assert "waiting on:" in view_text(pilot)
        await go_to_thread(pilot, manifest["interrupt_resumed"])
        await press(pilot, "2", "home", "i")
        assert "answered:" in view_text(pilot)
        # The call that answers it, shown in the checkpoint and copied with one key.
        await go_to_thread(pilot, manifest["interrupt_waiting"])
        await press(pilot, "o")
        waiting_id = ids[manifest["interrupt_waiting"]]
        unfolded = "".join(view_text(pilot).split())  # the pane folds long lines anywhere
        assert f'resume={{"{waiting_id}":...}}' in unfolded
        await press(pilot, "g")
        assert browser(pilot).clipboard == (
            f'graph.invoke(Command(resume={{"{waiting_id}": ...}}), '
            f'{{"configurable": {{"thread_id": "{manifest["interrupt_waiting"]}"}}}})'
        )

    drive(sqlite_store, scenario)


def test_values_are_a_conversation_and_json_is_the_record(sqlite_store: Path) -> None:
    with ckpt.open(sqlite_store) as store:
        record = store.checkpoint("support-1")

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, "support-1")
        await press(pilot, "v")
        text = flat(view_text(pilot))
        messages = record["channel_values"]["messages"]
        assert len(messages) > 3
        for message in messages:  # each as a line of the conversation: who, then what
            who = message["type"]
            if who == "tool" and message.get("name"):
                who += f" {message['name']}"  # the tool that answered
            if message["content"]:
                assert f"{who} {flat(message['content'])[:40]}" in text, message
            for call in message.get("tool_calls") or []:
                assert f"→ {call['name']}(" in text
        await press(pilot, "j")
        assert json.loads(view_text(pilot)) == json.loads(dumps(_json_part("values", record)))
        await press(pilot, "o")
        assert json.loads(view_text(pilot)) == json.loads(dumps(_json_part("overview", record)))
        assert "JSON" in str(browser(pilot).query_one("#checkpoint-pane").border_title)
        await press(pilot, "j", "f")
        assert browser(pilot).full and not browser(pilot).as_json

    drive(sqlite_store, scenario)


def test_diff_with_the_parent_or_the_marked(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    continued, abandoned = manifest["fork_children"]

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["fork"])
        await press(pilot, "d")
        text = view_text(pilot)
        parent = shown_record(pilot)["parent_checkpoint_id"]
        assert f"A  {parent}" in text and "B is A's child" in text
        await go_to_checkpoint(pilot, abandoned)
        await press(pilot, "2", "m")
        assert browser(pilot).marked == Key(manifest["fork"], "", abandoned)
        await go_to_checkpoint(pilot, continued)
        text = view_text(pilot)
        # Older to newer, whichever was marked: uuid6 ids sort by time.
        older, newer = sorted([abandoned, continued])
        assert f"A  {older}" in text and f"B  {newer}" in text
        assert "A and B are siblings (a fork)" in text
        assert "marked" in str(browser(pilot).query_one("#checkpoint-pane").border_subtitle)
        # The library found the changes once (ckpt.api.Comparison.of); the JSON view
        # draws the same comparison, as `ckpt diff --json` has it.
        compared = browser(pilot)._comparison
        assert compared is not None and [
            compared.a["checkpoint_id"],
            compared.b["checkpoint_id"],
        ] == [older, newer]
        await press(pilot, "j")
        assert browser(pilot)._comparison is compared
        with ckpt.open(sqlite_store) as store:
            patch = ckpt.diff(store.checkpoint(older), store.checkpoint(newer))
        assert compared.patch == patch
        assert json.loads(view_text(pilot)) == json.loads(dumps(patch))
        await go_to_checkpoint(pilot, abandoned)
        await press(pilot, "m", "j")
        assert browser(pilot).marked is None
        assert f"A  {manifest['fork_parent']}" in view_text(pilot)

    drive(sqlite_store, scenario)


# -- actions -----------------------------------------------------------------------------------


def test_copied_commands_print_the_same_checkpoint(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    copied: dict[str, str] = {}
    continued, abandoned = manifest["fork_children"]

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["fork"])
        await go_to_checkpoint(pilot, continued)
        for key in ("c", "C", "D"):
            await press(pilot, key)
            copied[key] = browser(pilot).clipboard

    drive(sqlite_store, scenario)
    assert copied["c"] == continued
    show = shlex.split(copied["C"])
    assert show == ["ckpt", "show", continued, "--blobs", "--db", str(sqlite_store)]
    result = runner.invoke(cli, [*show[1:], "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["checkpoint_id"] == continued
    diff = shlex.split(copied["D"])
    assert diff == ["ckpt", "diff", manifest["fork_parent"], continued, "--db", str(sqlite_store)]
    assert runner.invoke(cli, diff[1:]).exit_code == ExitCode.DIFFERENT
    assert abandoned not in copied["D"]


@pytest.fixture(scope="module")
def copied_store(sqlite_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """chat.sqlite with support-1's rows copied to thread copy-1, ids and all, as
    bench/make_store.py copies its seed threads: an id then names two checkpoints."""
    path = tmp_path_factory.mktemp("copied") / "copied.sqlite"
    shutil.copy(sqlite_store, path)
    with sqlite3.connect(path) as conn:
        for table in ("checkpoints", "writes"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            picked = ", ".join("'copy-1'" if c == "thread_id" else c for c in columns)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"SELECT {picked} FROM {table} WHERE thread_id = 'support-1'"
            )
    return path


def test_a_copied_id_is_named_by_thread_and_generations(copied_store: Path) -> None:
    copied: list[str] = []

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, "copy-1")
        await press(pilot, "2", "up", "up", "c")
        copied.append(browser(pilot).clipboard)
        copied.append(shown_record(pilot)["checkpoint_id"])
        await press(pilot, "C")
        copied.append(browser(pilot).clipboard)

    drive(copied_store, scenario)
    selector, checkpoint_id, show = copied
    assert selector == "copy-1~2"
    result = runner.invoke(cli, [*shlex.split(show)[1:], "--json"])
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert (shown["thread_id"], shown["checkpoint_id"]) == ("copy-1", checkpoint_id)
    ambiguous = runner.invoke(cli, ["show", checkpoint_id, "--db", str(copied_store)])
    assert ambiguous.exit_code == ExitCode.AMBIGUOUS  # why the id alone would not do


def test_command_lines_quote_and_share_one_namespace() -> None:
    spec = StoreSpec("my store.sqlite", "my store.sqlite")
    root = Selector("t~1", "", by_thread=True)
    sub = Selector("t~2", "sub:1", by_thread=True)
    sub_id = Selector("1f-id", "sub:1")
    assert show_command(spec, sub) == "ckpt show t~2 --ns sub:1 --blobs --db 'my store.sqlite'"
    assert (
        diff_command(spec, sub_id, sub) == "ckpt diff 1f-id t~2 --ns sub:1 --db 'my store.sqlite'"
    )
    assert diff_command(spec, root, sub) is None
    words = ["~t", "t~1", "it's", "a b", "$HOME", "", "ns:1|x", "é~1"]
    assert shlex.split(shell_join(words)) == words
    assert shell_join(["~t", "t~1"]) == "'~t' t~1"  # a leading ~ would expand
    assert diff_command(spec, Selector("1f-root"), sub) is None  # --ns would hide it


def test_export_writes_the_record_and_never_overwrites(
    sqlite_store: Path, tmp_path: Path, manifest: dict[str, Any]
) -> None:
    target = tmp_path / "out.json"
    with ckpt.open(sqlite_store) as store:
        record = store.checkpoint(manifest["fanout_error"])

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, manifest["fanout_error"])
        await press(pilot, "x")
        screen = browser(pilot).screen
        assert type(screen).__name__ == "ExportScreen"
        field = screen.query_one("#export-path")
        assert getattr(field, "value", "").startswith("fanout-1-")
        await press(pilot, "f1")  # help on this screen too (? would be typed in the path)
        assert "## Export" in screen.query_one("#widget-help").source  # type: ignore[attr-defined]
        await press(pilot, "f1")
        assert not screen.query("HelpPanel")
        field.value = str(target)  # type: ignore[attr-defined]
        await press(pilot, "enter")
        assert json.loads(target.read_text()) == json.loads(dumps(record))
        target.write_text("mine")
        await press(pilot, "x")
        browser(pilot).screen.query_one("#export-path").value = str(target)  # type: ignore[attr-defined]
        await press(pilot, "enter")
        assert target.read_text() == "mine"
        await press(pilot, "x", "escape")
        assert type(browser(pilot).screen).__name__ != "ExportScreen"

    drive(sqlite_store, scenario)


def test_pager_gets_the_view_with_values_whole(
    sqlite_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"sh -c 'cat > {paged}'")

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, "support-1")
        await press(pilot, "v", "p")
        text = paged.read_text()
        assert "human" in text and "lookup_order" in text
        assert "\x1b" not in text
        await press(pilot, "j", "p")
        assert json.loads(paged.read_text()) == json.loads(view_text(pilot))

    drive(sqlite_store, scenario)


def offered(pilot: Pilot[Any], words: str) -> bool:
    """Whether the command palette highlights a command that says `words`."""
    found = pilot.app.screen.query(CommandList)
    index = found.first().highlighted if found else None
    if index is None:
        return False
    prompt = found.first().get_option_at_index(index).prompt
    return words in getattr(prompt, "plain", str(prompt))


def test_help_and_the_command_palette(sqlite_store: Path) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        await press(pilot, "question_mark")
        panel = app.screen.query_one("HelpPanel")
        assert "Threads" in str(panel.query_one("#widget-help").source)  # type: ignore[attr-defined]
        for pane, title in (("2", "History"), ("3", "Checkpoint"), ("slash", "Filter")):
            await press(pilot, pane)
            assert f"## {title}" in app.screen.query_one("#widget-help").source  # type: ignore[attr-defined]
        await press(pilot, "escape", "question_mark")
        assert not app.screen.query("HelpPanel")
        await press(pilot, "ctrl+p")
        for char in "copy the ckpt show":  # typed in one go, as a paste comes: it searches
            app.post_message(key_event(char))
        deadline = time.monotonic() + 30
        while not offered(pilot, "Copy the ckpt show command") and time.monotonic() < deadline:
            await pilot.pause(0.01)  # until its search highlights the command
        assert offered(pilot, "Copy the ckpt show command")
        await press(pilot, "enter")
        await settle(pilot)
        assert app.clipboard.startswith("ckpt show ")

    drive(sqlite_store, scenario)


# -- other stores -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_a_postgres_store(pg_store: Any) -> None:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(pg_store.dsn)
    url = (  # with a password (the server trusts 127.0.0.1): no copied line may show it
        f"postgresql://{params['user']}:s3cret@{params['host']}:{params.get('port', 5432)}"
        f"/{params['dbname']}"
    )
    with ckpt.open(url) as store:
        failed = store.threads(status="error")[0]
        record = store.checkpoint(failed["thread_id"])
    copied: list[str] = []

    async def scenario(pilot: Pilot[Any]) -> None:
        await press(pilot, "e")
        assert current_thread(pilot) == failed["thread_id"]
        assert shown_record(pilot) == record  # the same record as `ckpt show --json --blobs`
        await press(pilot, "t", "C")
        text = flat(view_text(pilot))
        for task in record["tasks"] or []:
            if task["error"] is not None:
                assert flat(json.dumps(task["input"])) in text and "failed" in text
        copied.append(browser(pilot).clipboard)

    drive(url, scenario)
    assert "s3cret" not in copied[0] and "--db postgresql://" in copied[0]
    result = runner.invoke(cli, [*shlex.split(copied[0])[1:], "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["checkpoint_id"] == record["checkpoint_id"]


def test_a_dev_folder(dev_folder: Path, manifest: dict[str, Any]) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        assert sorted(shown_threads(pilot)) == sorted(manifest["threads"])
        await go_to_thread(pilot, manifest["fanout_error"])
        await press(pilot, "t")
        assert "worker[1]  failed" in view_text(pilot)

    drive(dev_folder, scenario)


def test_a_store_without_values(memory_pkl: Path) -> None:
    async def scenario(pilot: Pilot[Any]) -> None:
        await press(pilot, "v")
        assert "this store keeps no channel values" in view_text(pilot)
        notices = [n.message for n in browser(pilot)._notifications]
        assert any("single-file PersistentDict" in n for n in notices)

    drive(memory_pkl, scenario)


def test_an_encrypted_store(encrypted_store: Path, encryption_key: bytes) -> None:
    async def without_key(pilot: Pilot[Any]) -> None:
        assert any("encrypted" in n.message for n in browser(pilot)._notifications)
        await go_to_thread(pilot, "support-1")
        await press(pilot, "v")
        assert "encrypted" in view_text(pilot)

    async def with_key(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, "support-1")
        await press(pilot, "v")
        assert "lookup_order" in view_text(pilot)

    drive(encrypted_store, without_key)
    drive(encrypted_store, with_key, aes_key=encryption_key)


def test_library_messages_are_said_in_the_cli_words(encrypted_store: Path) -> None:
    """What the library says in its words (`aes_key`), the browser says in those of the
    command that opened it (--aes-key), as every other command does."""
    from ckpt.cli.options import in_flags

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, "support-1")
        said = flat(view_text(pilot))
        assert "--aes-key" in said and "`aes_key`" not in said, said

    drive(encrypted_store, scenario, words=in_flags)


def test_store_text_never_reaches_the_terminal(sqlite_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "hostile.sqlite"
    shutil.copy(sqlite_store, store)
    hostile = "evil\x1b]52;c;aGk=\x07\x1b[2J"
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE checkpoints SET thread_id = ? WHERE thread_id = 'rich-1'", (hostile,))
        conn.execute("UPDATE writes SET thread_id = ? WHERE thread_id = 'rich-1'", (hostile,))

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, hostile)
        screen = browser(pilot).export_screenshot()
        assert "evil\\x1b]52" in screen
        assert "\x1b]52" not in screen and "\x07" not in screen
        assert "\x1b" not in view_text(pilot) and "\x1b" not in "".join(
            str(browser(pilot).query_one("#thread-detail").render())
        )

    drive(store, scenario)


def test_browsing_changes_no_file(sqlite_store: Path, dev_folder: Path, tmp_path: Path) -> None:
    for source in (sqlite_store, dev_folder):
        folder = tmp_path / source.name.strip(".")
        if source.is_dir():
            shutil.copytree(source, folder / source.name)
            target = folder / source.name
        else:
            folder.mkdir()
            shutil.copy(source, folder / source.name)
            target = folder / source.name
        before = folder_hashes(folder)

        async def scenario(pilot: Pilot[Any]) -> None:
            await press(pilot, "e", "2", "home", "down", "d", "t", "v", "j", "r")

        drive(target, scenario)
        assert unexpected_changes(folder, before) == []


# -- the command -------------------------------------------------------------------------------


def test_without_textual_one_line_names_the_extra(sqlite_store: Path) -> None:
    code = (
        "import sys; sys.modules['textual'] = None\n"
        "from ckpt.cli import main; sys.argv = ['ckpt', 'browse', sys.argv[1]]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(sqlite_store)], capture_output=True, text=True
    )
    assert result.returncode == ExitCode.MISSING_DEPENDENCY
    hint = "pip install 'langgraph-ckpt[tui]'"
    assert result.stderr == f"ckpt: error: ckpt browse needs Textual: {hint}\n"
    assert result.stdout == ""


def test_help_imports_no_textual() -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ckpt", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "browse" in result.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert imported and not [m for m in imported if m.split(".")[0] in ("textual", "rich")]


def test_other_commands_import_no_textual(sqlite_store: Path) -> None:
    """Textual is the browser's alone: the other commands (and browse's --help) start
    without it, whether or not it is installed."""
    store = str(sqlite_store)
    # What was imported is told at exit (the CLI leaves by os._exit, after atexit).
    code = (
        "import atexit, runpy, sys\n"
        "sys.argv = ['ckpt', *sys.argv[1:]]\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.split('.')[0] == 'textual')\n"
        "atexit.register(lambda: print('TEXTUAL', loaded(), file=sys.stderr))\n"
        "runpy.run_module('ckpt', run_name='__main__')\n"
    )
    for argv in (
        ["threads", store],
        ["show", "support-1", "--db", store, "--blobs"],
        ["history", "fork-1", "--db", store],
        ["diff", "support-1~1", "support-1", "--db", store],
        ["browse", "--help"],
    ):
        result = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
        )
        assert "TEXTUAL []" in result.stderr, (argv, result.stderr)
        assert result.returncode in (0, 1), (argv, result.stderr)


def test_a_pipe_is_refused_and_store_errors_come_first(sqlite_store: Path, tmp_path: Path) -> None:
    piped = runner.invoke(cli, ["browse", str(sqlite_store)])
    assert piped.exit_code == ExitCode.USAGE
    assert piped.stderr == (
        "ckpt: error: ckpt browse needs a terminal: run it without a pipe or redirection\n"
    )
    missing = runner.invoke(cli, ["browse", str(tmp_path / "nosuch.sqlite")])
    assert missing.exit_code == ExitCode.NO_STORE and missing.stderr.count("\n") == 1


# -- layout: what a small terminal shows ---------------------------------------------------------


def screen_lines(pilot: Pilot[Any]) -> list[str]:
    """The screen as text, a line per row: what App.export_screenshot draws, as text."""
    app = pilot.app
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        force_terminal=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True))
    lines = console.export_text(styles=False).splitlines()
    assert len(lines) == height
    return lines


def shown_in(pilot: Pilot[Any], widget: Widget) -> list[str]:
    """The screen's text inside a widget's region: what it shows, line by line."""
    region = widget.region
    lines = screen_lines(pilot)[region.y : region.bottom]
    return [line[region.x : region.right] for line in lines]


def test_a_100x30_terminal_shows_many_threads(sqlite_store: Path) -> None:
    """The threads pane has the screen's height (the history and the checkpoint are on the
    right): at least ten threads show at 100x30, each with its status."""
    with ckpt.open(sqlite_store) as store:
        threads = store.threads()
    assert len(threads) >= 10

    async def scenario(pilot: Pilot[Any]) -> None:
        rows = browser(pilot).query_one(ThreadRows)
        shown = shown_in(pilot, rows)
        assert shown[0].split()[:2] == ["THREAD", "STATUS"]
        listed = [line.split() for line in shown[1:] if line.strip()]
        assert len(listed) >= 10
        for words, thread in zip(listed, threads, strict=False):  # in the order of the list
            assert thread["thread_id"] in words and thread["status"] in words, words

    drive(sqlite_store, scenario, size=(100, 30))


def test_a_100x30_terminal_shows_what_ran(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    """Each history line at 100x30 shows its checkpoint, step and source, and what ran
    after it whole, as `ckpt history` says it."""
    thread = manifest["delta"]
    printed = runner.invoke(cli, ["history", thread, "--db", str(sqlite_store)], env=WIDE)
    assert printed.exit_code == 0
    wanted = [
        found.groups()
        for found in re.finditer(
            r"([0-9a-f]{8})  (step -?\d+  \w+)  \d\d:\d\d:\d\d.*?(ran: .*)?$",
            printed.stdout,
            re.MULTILINE,
        )
    ]
    assert len(wanted) >= 5 and any(ran == "ran: __start__ → log, n" for *_, ran in wanted)

    async def scenario(pilot: Pilot[Any]) -> None:
        await go_to_thread(pilot, thread)
        shown = shown_in(pilot, browser(pilot).query_one(HistoryRows))
        for short, step, ran in wanted:
            line = next(line for line in shown if short in line)
            assert f"{short}  {step}" in line
            if ran is not None:
                assert ran in line, (ran, line)

    drive(sqlite_store, scenario, size=(100, 30))


@pytest.mark.parametrize("size", [(100, 30), (80, 24), (160, 50)])
def test_every_key_of_the_key_bar_shows_whole(sqlite_store: Path, size: tuple[int, int]) -> None:
    """The footer's keys, whichever pane has the focus: each key and its name on the
    screen's last line, none cut (fewer and shorter ones on a narrow screen)."""

    async def scenario(pilot: Pilot[Any]) -> None:
        app = browser(pilot)
        for pane in ("1", "2", "3"):
            await press(pilot, pane)
            await pilot.pause(0.05)  # the footer is made again after the focus moved
            await settle(pilot)
            bar = app.query_one(KeyBar)
            keys = list(bar.query(FooterKey))
            assert len(keys) >= 6  # ? Help and q Quit among them
            last = screen_lines(pilot)[-1]
            for key in keys:
                label = f"{key.key_display} {key.description}".strip()
                assert label in last, (label, last)
                assert 0 <= key.region.x and key.region.right <= size[0], label
            regions = [key.region for key in keys]
            for one, other in zip(regions, regions[1:], strict=False):
                assert not one.overlaps(other)
            assert {"? Help", "q Quit"} <= {f"{k.key_display} {k.description}" for k in keys}

    drive(sqlite_store, scenario, size=size)


def test_the_layout_fits_the_terminal(sqlite_store: Path) -> None:
    """Narrow (100x30): the threads on the left, full height; the history over the
    checkpoint on the right. Wide (160x50): the threads over the history on the left, the
    checkpoint on the right, full height, as before."""

    def panes(pilot: Pilot[Any]) -> tuple[Region, Region, Region]:
        app = browser(pilot)
        threads, history, checkpoint = (
            app.query_one(f"#{name}-pane").region for name in ("threads", "history", "checkpoint")
        )
        return threads, history, checkpoint

    async def narrow(pilot: Pilot[Any]) -> None:
        threads, history, checkpoint = panes(pilot)
        main = browser(pilot).query_one("#main").region
        assert threads.height == main.height and threads.x == 0
        assert history.x == checkpoint.x == threads.right
        assert history.bottom == checkpoint.y and checkpoint.bottom == main.bottom
        assert history.width >= 60

    async def wide(pilot: Pilot[Any]) -> None:
        threads, history, checkpoint = panes(pilot)
        main = browser(pilot).query_one("#main").region
        assert threads.x == history.x == 0 and threads.bottom == history.y
        assert checkpoint.height == main.height and checkpoint.x == threads.right
        assert threads.width == round(160 * 0.45)

    drive(sqlite_store, narrow, size=(100, 30))
    drive(sqlite_store, wide, size=(160, 50))


# -- snapshots: checked-in stores, whose ids and times never change ---------------------------

Snap = Callable[..., bool]
SNAPSHOTS = Path(__file__).parent / "snapshots" / "browse"
UPDATE = bool(os.environ.get("CKPT_UPDATE_SNAPSHOTS"))


def normalize_svg(svg: str) -> str:
    """Without the number Rich's export_svg puts in every class name (a hash)."""
    return re.sub(r"\bterminal-\d+-([\w-]+)", r"terminal-\1", svg)


@pytest.fixture
def snap_compare(request: pytest.FixtureRequest, tmp_path: Path) -> Snap:
    """pytest-textual-snapshot's `snap_compare`, in the house's way (tests/snapshots,
    CKPT_UPDATE_SNAPSHOTS=1 to accept): that plugin pins syrupy 4.8, which needs pytest < 9.
    The screenshot is Textual's own SVG export after `run_before`, as the plugin takes it."""

    def compare(
        app: BrowseApp,
        *,
        terminal_size: tuple[int, int],
        run_before: Callable[[Pilot[Any]], Awaitable[None]],
    ) -> bool:
        async def shoot() -> str:
            async with app.run_test(size=terminal_size) as pilot:
                await run_before(pilot)
                # A loaded machine can leave a scroll to the cursor for a later refresh:
                # the picture is taken once two shots a moment apart agree.
                shot = ""
                for _ in range(50):
                    await settle(pilot)
                    await pilot.wait_for_scheduled_animations()
                    await pilot.pause(0.05)
                    again = app.export_screenshot(title=app.title, simplify=True)
                    if again == shot:
                        break
                    shot = again
                return shot

        svg = normalize_svg(asyncio.run(shoot()))
        expected = SNAPSHOTS / f"{request.node.callspec.params['name']}.svg"
        if UPDATE:
            expected.parent.mkdir(parents=True, exist_ok=True)
            expected.write_text(svg)
            return True
        if expected.exists() and expected.read_text() == svg:
            return True
        actual = tmp_path / expected.name
        actual.write_text(svg)
        pytest.fail(
            f"{expected.name} differs from {actual} (open both in a browser); "
            "CKPT_UPDATE_SNAPSHOTS=1 pytest accepts the new one"
        )

    return compare


def snapshot(
    snap_compare: Snap,
    store: Path,
    keys: tuple[str, ...] = (),
    *,
    size: tuple[int, int] = (120, 36),
    before: Callable[[Pilot[Any]], Awaitable[None]] | None = None,
) -> bool:
    opened = ckpt.open(store)
    session = Session(opened, StoreSpec(str(store), store.name))
    app = BrowseApp(session, debounce=0)

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        if before is not None:
            await before(pilot)
        await press(pilot, *keys)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False  # a blinking cursor would be on or off by chance

    try:
        return snap_compare(app, terminal_size=size, run_before=run_before)
    finally:
        session.close()
        opened.close()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """tests/data's current-format store (a subgraph, Sends, an answered interrupt, a
    retried error, an update), copied so that no side file appears in tests/data."""
    folder = tmp_path_factory.mktemp("sample")
    shutil.copy(Path(__file__).parent / "data" / "sqlite_checkpoints.db", folder)
    yield folder / "sqlite_checkpoints.db"


async def _to_the_fan_out(pilot: Pilot[Any]) -> None:
    await press(pilot, "2", "home", "down", "down")


@pytest.mark.parametrize(
    ("name", "keys", "size"),
    [
        ("opened", (), (120, 36)),
        ("opened_80", (), (80, 24)),
        ("opened_100", (), (100, 30)),
        ("opened_160", (), (160, 50)),
        ("history", ("2", "home"), (120, 36)),
        ("tasks", ("t",), (120, 36)),
        ("values", ("v",), (120, 36)),
        ("json", ("j",), (120, 36)),
        ("diff", ("d",), (120, 36)),
        ("help", ("question_mark",), (120, 36)),
        ("export", ("x",), (120, 36)),
    ],
)
def test_snapshot(
    snap_compare: Snap, sample: Path, name: str, keys: tuple[str, ...], size: tuple[int, int]
) -> None:
    before = _to_the_fan_out if name in ("tasks", "diff") else None
    assert snapshot(snap_compare, sample, keys, size=size, before=before)


# -- a real terminal ---------------------------------------------------------------------------


@contextmanager
def tmux(command: str, *, width: int = 120, height: int = 40) -> Iterator[Callable[..., str]]:
    """A tmux server of its own running `command` in a width x height terminal; `screen`
    sends keys (tmux key names) and returns what the terminal shows once `until` is on it."""
    server = ["tmux", "-L", f"ckpt-test-{os.getpid()}", "-f", "/dev/null"]
    subprocess.run(
        [*server, "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), command],
        check=True,
        # The terminal's own size, not one a test process may have in its environment.
        env={
            **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
            "TERM": "xterm-256color",
        },
    )

    def screen(*keys: str, until: str, timeout: float = 10.0) -> str:
        if keys:
            subprocess.run([*server, "send-keys", "-t", "t", *keys], check=True)
        deadline = time.monotonic() + timeout
        while True:
            shown = subprocess.run(
                [*server, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
            ).stdout
            if until in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{until!r} never showed after {keys}:\n{shown}")
            time.sleep(0.05)

    try:
        yield screen
    finally:
        subprocess.run([*server, "kill-server"], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_in_a_real_terminal(sqlite_store: Path, manifest: dict[str, Any], tmp_path: Path) -> None:
    """The installed `ckpt browse` at 120x40 under tmux: keys sent in batches, as a paste or
    a fast typist sends them (the keys after one that moves the focus reach the new pane)."""
    with ckpt.open(sqlite_store) as store:
        threads = store.threads()
        failed = store.threads(status="error")[0]
        chat = manifest["chat"][1]
        oldest = next(r for r in store.history(chat) if r["parent_checkpoint_id"] is None)
    error = failed["errors"][0][:30]
    done = tmp_path / "exit-status"
    command = f"{shlex.quote(CKPT)} browse {shlex.quote(str(sqlite_store))}; echo $? > {done}"
    with tmux(command, width=120, height=40) as screen:
        first = screen(until="namespace   (root)")  # the checkpoint is shown
        assert f"Threads {len(threads)}" in first and f"History {threads[0]['thread_id']}" in first
        # The next failed thread: its history opens (the error is in its detail at once,
        # so the history's title is what says the jump has been acted on).
        shown = screen("e", until=f"History {failed['thread_id']}")
        assert error in flat(left_column(shown))
        # Its tasks: the failed one with its input.
        task = next(t for t in store_tasks(sqlite_store, failed) if t["error"] is not None)
        shown = screen("t", until=f"failed  {task['id']}")
        # The terminal draws the pane a piece at a time: the input may come a frame after
        # the task's line (one CI run captured the screen between the two).
        wanted, deadline = flat(json.dumps(task["input"])), time.monotonic() + 10
        while wanted not in flat(shown) and time.monotonic() < deadline:
            time.sleep(0.05)
            shown = screen(until="")
        assert wanted in flat(shown), shown
        screen("/", *chat, until=f"Threads 1/{len(threads)}")
        screen(until=f"History {chat}")  # its history has come (keys pressed before it
        # would act on it too: test_keys_pressed_while_a_history_loads_act_on_it)
        # To the list, to the history, its oldest checkpoint, to the checkpoint pane: in
        # one read, as a paste would come, every key acts in the order it was typed.
        screen("Enter", "2", "Home", "Enter", until="╭─ " + short_title(oldest))
        screen("?", until="The highlighted checkpoint")  # the help of the focused pane
        screen("q", until="")
        deadline = time.monotonic() + 10
        # The shell makes the file, then writes the status into it: wait for the status.
        while not (done.exists() and done.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert done.read_text().strip() == "0"


def left_column(screen: str) -> str:
    """The text of the screen's left column of panes (the threads pane, narrow): each line
    from its first border to the next."""
    return "\n".join(
        line[1 : line.index("│", 1)] for line in screen.splitlines() if line.count("│") >= 2
    )


def store_tasks(store: Path, thread: Any) -> list[Any]:
    with ckpt.open(store) as opened:
        tasks: list[Any] = opened.checkpoint(thread["thread_id"])["tasks"]
    return tasks


def short_title(record: Any) -> str:
    """The start of the checkpoint pane's title for `record`."""
    from ckpt.analysis.selector import short_id

    return f"{short_id(record['checkpoint_id'])}  step {record['metadata']['step']}"
