"""`ckpt diff` on real stores: what it reports, the JSON Patch it prints, its exit codes."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ckpt.analysis.changes import Change, Item, diff_records, diff_values, json_patch
from ckpt.analysis.records import checkpoint_record
from ckpt.cli import app
from ckpt.errors import ExitCode
from ckpt.records.model import Checkpoint, CheckpointKey
from ckpt.stores.sqlite import SqliteStore
from runs import examples

runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "120"})


def show_json(store: Path, checkpoint_id: str) -> Any:
    result = run("show", checkpoint_id, "--blobs", "--json", "--db", str(store))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def patch_of(store: Path, a: str, b: str, *more: str) -> tuple[int, list[dict[str, Any]]]:
    result = run("diff", a, b, "--json", "--db", str(store), *more)
    assert result.exit_code in (0, 1), result.stderr
    assert result.stderr == ""
    return result.exit_code, json.loads(result.stdout)


def thread_checkpoints(store: Path, thread_id: str) -> list[Checkpoint]:
    with SqliteStore(store) as opened:
        return opened.checkpoints(thread_id, values=True)


def changes_between(store: Path, a: str, b: str) -> list[Change]:
    with SqliteStore(store) as opened:
        by_id = {
            k.checkpoint_id: opened.load(k)
            for cid in (a, b)
            for k in opened.find(cid)
            if k.checkpoint_id == cid
        }
    return diff_checkpoints(by_id[a], by_id[b])


def under(changes: list[Change], section: str) -> list[Change]:
    return [c for c in changes if c.section == section]


# -- a store where a message was edited in place --------------------------------------------------

EDITED_THREAD = "support-3"


@pytest.fixture(scope="module")
def edited_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A real chat run, then `update_state` replacing the answer under the same message id."""
    from fixtures.build import fixture_warnings
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.sqlite import SqliteSaver

    from ckpt.demo import CHAT_THREADS, chat_graph

    path = tmp_path_factory.mktemp("edited") / "edited.sqlite"
    _, turns = CHAT_THREADS[EDITED_THREAD]
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn, fixture_warnings():
        graph = chat_graph(SqliteSaver(conn))
        config: RunnableConfig = {"configurable": {"thread_id": EDITED_THREAD}}
        question = HumanMessage(turns[0].user, id=f"{EDITED_THREAD}-user-1")
        graph.invoke({"messages": [question]}, config)
        answer = graph.get_state(config).values["messages"][-1]
        edited = answer.model_copy(update={"content": answer.content + "\nEdited by support."})
        graph.update_state(config, {"messages": [edited]})
    yield path, str(answer.id)


# -- what the diff says ---------------------------------------------------------------------------


def test_equal_checkpoints_exit_0(sqlite_store: Path) -> None:
    result = run("diff", "support-1", "support-1", "--db", str(sqlite_store))
    assert result.exit_code == ExitCode.OK, result.stderr
    assert result.stderr == ""
    assert "no differences" in result.stdout
    code, patch = patch_of(sqlite_store, "support-1", "support-1")
    assert (code, patch) == (0, [])


def test_appended_message_is_one_addition(sqlite_store: Path) -> None:
    chain = [c for c in thread_checkpoints(sqlite_store, "support-1") if not c.checkpoint_ns]
    latest = max(chain, key=lambda c: c.checkpoint_id)
    parent = next(c for c in chain if c.checkpoint_id == latest.parent_checkpoint_id)
    changes = diff_checkpoints(parent, latest)
    messages = [c for c in changes if c.path[:2] == ("channel_values", "messages")]
    assert len(messages) == 1
    (added,) = messages
    new_message = latest.channel_values["messages"][-1]  # type: ignore[index]
    assert added.kind == "added"
    assert added.path[2] == Item(len(parent.channel_values["messages"]), new_message["id"])  # type: ignore[index]
    assert added.new["content"] == new_message["content"]
    version = next(c for c in changes if c.path == ("channel_versions", "messages"))
    assert version.kind == "changed"

    result = run("diff", "support-1", "--db", str(sqlite_store))  # one argument: vs its parent
    assert result.exit_code == ExitCode.DIFFERENT, result.stderr
    assert result.stderr == ""
    # Numbered as `show --blobs` numbers them, not by a 36-character id.
    assert f"+ #{len(parent.channel_values['messages']) + 1}  ai:" in result.stdout  # type: ignore[index]
    assert "B is A's child" in result.stdout
    assert "\x1b[" not in result.stdout


def test_edited_message_is_one_change(edited_store: tuple[Path, str]) -> None:
    store, message_id = edited_store
    with SqliteStore(store) as opened:
        key = opened.latest_key(EDITED_THREAD)
        assert key is not None
        latest = opened.load(key)
        assert latest.parent_checkpoint_id is not None
        parent = opened.load(CheckpointKey(EDITED_THREAD, "", latest.parent_checkpoint_id))
    assert latest.source == "update"
    changes = diff_checkpoints(parent, latest)
    (edit,) = [c for c in changes if c.section == "channel_values"]
    index = len(parent.channel_values["messages"]) - 1  # type: ignore[index]
    assert edit.path == ("channel_values", "messages", Item(index, message_id), "content")
    assert edit.kind == "changed"
    assert edit.new == edit.old + "\nEdited by support."

    result = run("diff", f"{EDITED_THREAD}~1", EDITED_THREAD, "--db", str(store))
    assert result.exit_code == ExitCode.DIFFERENT, result.stderr
    assert f"[{message_id}]" in result.stdout
    assert "+Edited by support." in result.stdout  # a line diff of the long text
    assert "~ source  loop → update" in result.stdout


def test_channel_only_on_one_side_is_removed_or_added(sqlite_store: Path) -> None:
    chain = sorted(
        (c for c in thread_checkpoints(sqlite_store, "support-3") if not c.checkpoint_ns),
        key=lambda c: c.checkpoint_id,
    )
    first, second = chain[0], chain[1]  # the input checkpoint, then the loop's first
    assert "__start__" in (first.channel_values or {})
    assert "__start__" not in (second.channel_values or {})
    changes = diff_checkpoints(first, second)
    start = next(c for c in changes if c.path == ("channel_values", "__start__"))
    assert start.kind == "removed"
    assert start.old == first.channel_values["__start__"]  # type: ignore[index]
    result = run("diff", first.checkpoint_id, second.checkpoint_id, "--db", str(sqlite_store))
    assert result.exit_code == ExitCode.DIFFERENT
    assert "- __start__" in result.stdout


def test_fork_children(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    kept, abandoned = manifest["fork_children"]
    changes = changes_between(sqlite_store, kept, abandoned)
    values = under(changes, "channel_values")
    assert [(c.path, c.old, c.new) for c in values] == [
        (("channel_values", "notes", Item(2)), "edit-A", "edit-B")
    ]
    result = run("diff", kept, abandoned, "--db", str(sqlite_store))
    assert result.exit_code == ExitCode.DIFFERENT
    assert "siblings (a fork)" in result.stdout
    assert "edit-A → edit-B" in result.stdout


def test_subgraph_checkpoint_against_its_parent(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    checkpoints = thread_checkpoints(sqlite_store, manifest["subgraph"])
    sub = min((c for c in checkpoints if c.checkpoint_ns), key=lambda c: c.checkpoint_id)
    root = next(c for c in checkpoints if c.checkpoint_id == sub.metadata["parents"][""])
    code, patch = patch_of(sqlite_store, root.checkpoint_id, sub.checkpoint_id)
    assert code == ExitCode.DIFFERENT
    assert {"op": "replace", "path": "/checkpoint_ns", "value": sub.checkpoint_ns} in patch
    applied = jsonpatch.apply_patch(show_json(sqlite_store, root.checkpoint_id), patch)
    assert applied == show_json(sqlite_store, sub.checkpoint_id)
    human = run("diff", root.checkpoint_id, sub.checkpoint_id, "--db", str(sqlite_store))
    assert "subgraph run from A" in human.stdout
    assert sub.checkpoint_ns in human.stdout


def test_other_store_before_and_after(
    sqlite_store: Path, edited_store: tuple[Path, str], tmp_path: Path
) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copy(sqlite_store, copy)
    same = run("diff", "support-1", "--db", str(sqlite_store), "--db2", str(copy))
    assert same.exit_code == ExitCode.OK, same.stderr + same.stdout
    assert "no differences" in same.stdout
    store, message_id = edited_store
    other = run("diff", EDITED_THREAD, "--db", str(sqlite_store), "--db2", str(store))
    assert other.exit_code == ExitCode.DIFFERENT
    assert f"[{message_id}]" in other.stdout
    missing = run("diff", "support-1", "--db", str(sqlite_store), "--db2", str(tmp_path / "no"))
    assert missing.exit_code == ExitCode.NO_STORE


# -- the JSON Patch -------------------------------------------------------------------------------


def _pairs(store: Path, manifest: dict[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for thread_id in ("support-1", "fork-1", "subgraph-1", "rich-1", "fanout-1", "delta-1"):
        for checkpoint in thread_checkpoints(store, thread_id):
            if checkpoint.parent_checkpoint_id:
                pairs.append((checkpoint.parent_checkpoint_id, checkpoint.checkpoint_id))
    pairs.append(tuple(manifest["fork_children"]))  # type: ignore[arg-type]
    latest = {
        t: max(c.checkpoint_id for c in thread_checkpoints(store, t)) for t in manifest["threads"]
    }
    pairs += [
        (latest["support-1"], latest["support-2"]),
        (latest["rich-1"], latest["support-1"]),
        (latest["support-1"], latest["rich-1"]),
        (latest["fanout-1"], latest["approval-2"]),
    ]
    return pairs


def test_patch_turns_a_into_b(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    for a, b in _pairs(sqlite_store, manifest):
        _, patch = patch_of(sqlite_store, a, b)
        before, after = show_json(sqlite_store, a), show_json(sqlite_store, b)
        assert jsonpatch.apply_patch(before, patch) == after, (a, b)
        reverse = run("diff", b, a, "--json", "--db", str(sqlite_store))
        assert jsonpatch.apply_patch(after, json.loads(reverse.stdout)) == before, (b, a)


def test_writes_are_named_as_show_names_their_tasks(
    sqlite_store: Path, manifest: dict[str, Any]
) -> None:
    """A Send task's writes are `worker[1] → results` in the changes, as `show` names the
    task, on both sides of the diff (added writes by B's tasks, removed ones by A's)."""
    latest = show_json(sqlite_store, manifest["fanout_error"])
    parent = show_json(sqlite_store, latest["parent_checkpoint_id"])
    names = {
        t["id"]: t["name"] if t["send_index"] is None else f"{t['name']}[{t['send_index']}]"
        for t in [*parent["tasks"], *latest["tasks"]]
    }
    assert any("[" in name for name in names.values())  # Send tasks are there
    for changes in (diff_values(parent, latest), diff_values(latest, parent)):
        writes = [c for c in under(changes, "pending_writes") if len(c.path) == 2]
        assert len(writes) == len(latest["pending_writes"]) + len(parent["pending_writes"])
        for change in writes:
            write = change.new if change.kind == "added" else change.old
            key = change.path[1].key if isinstance(change.path[1], Item) else None
            assert key == f"{names[write['task_id']]} → {write['channel']}" + (
                f" #{write['idx']}" if write["idx"] > 0 else ""
            ), key


def test_patch_on_the_edited_message(edited_store: tuple[Path, str]) -> None:
    store, message_id = edited_store
    code, patch = patch_of(store, f"{EDITED_THREAD}~1", EDITED_THREAD)
    assert code == ExitCode.DIFFERENT
    edits = [op for op in patch if op["path"].startswith("/channel_values/")]
    assert len(edits) == 1 and edits[0]["op"] == "replace"
    assert edits[0]["path"].endswith("/content")
    parent, latest = (show_json(store, s) for s in (f"{EDITED_THREAD}~1", EDITED_THREAD))
    assert jsonpatch.apply_patch(parent, patch) == latest


# Any JSON, plus lists of messages that share ids, to exercise the id alignment.
_keys = st.text(alphabet="ab/~0-", max_size=3)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.text(alphabet="xy\n", max_size=4)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)
_message = st.builds(
    lambda n, content: {
        "__type__": "langchain_core.messages.ai.AIMessage",
        "type": "ai",
        "id": f"m{n}",
        "content": content,
    },
    st.integers(0, 6),
    st.sampled_from(["hi", "hello", "bye"]),
)
_messages = st.lists(_message, max_size=6, unique_by=lambda m: m["id"])
_records = st.dictionaries(_keys, _json | _messages, max_size=5)


def _typed(value: Any) -> Any:
    """JSON equality that tells 1, 1.0 and true apart (Python's == does not)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=examples(100, 400), deadline=None)
@given(_records, _records)
def test_patch_property(a: dict[str, Any], b: dict[str, Any]) -> None:
    changes = diff_values(a, b)
    assert _typed(jsonpatch.apply_patch(a, json_patch(changes))) == _typed(b)
    assert (changes == []) == (_typed(a) == _typed(b))


def test_message_lists_align_by_id() -> None:
    def msg(n: int, content: str = "x") -> dict[str, Any]:
        return {
            "__type__": "langchain_core.messages.human.HumanMessage",
            "id": f"m{n}",
            "content": content,
        }

    a = {"messages": [msg(1), msg(2), msg(3)]}
    inserted = {"messages": [msg(1), msg(9), msg(2), msg(3, "edited")]}
    changes = diff_values(a, inserted)
    assert [(c.kind, c.path) for c in changes] == [
        ("added", ("messages", Item(1, "m9"))),
        ("changed", ("messages", Item(3, "m3"), "content")),
    ]
    removed = diff_values(a, {"messages": [msg(1), msg(3)]})
    assert [(c.kind, c.path) for c in removed] == [("removed", ("messages", Item(1, "m2")))]
    assert diff_values({"n": 1}, {"n": True})[0].kind == "changed"  # JSON types, not Python ==


# -- exit codes -------------------------------------------------------------------------------


def test_unknown_ids_and_stores(sqlite_store: Path, samples: Path, tmp_path: Path) -> None:
    db = ("--db", str(sqlite_store))
    for args in (
        ("no-such-checkpoint", "support-1"),
        ("support-1", "ffffffff-0000-6000-8000-000000000000"),
        ("support-1~999",),
    ):
        result = run("diff", *args, *db)
        assert result.exit_code == ExitCode.NOT_FOUND, (args, result.stdout)
        assert result.stdout == ""
        assert result.stderr.startswith("ckpt: error:") and result.stderr.count("\n") == 1
    first = min(c.checkpoint_id for c in thread_checkpoints(sqlite_store, "support-2"))
    no_parent = run("diff", first, *db)
    assert no_parent.exit_code == ExitCode.NOT_FOUND
    assert "no parent" in no_parent.stderr
    ambiguous = run("diff", "1", "support-1", *db)
    assert ambiguous.exit_code == ExitCode.AMBIGUOUS
    text = tmp_path / "text.db"
    text.write_text("not a database\n")
    assert run("diff", "a", "b", "--db", str(text)).exit_code == ExitCode.UNREADABLE
    assert run("diff", "a", "b", "--db", str(tmp_path / "none")).exit_code == ExitCode.NO_STORE


def test_encrypted_without_key(encrypted_store: Path, encryption_key: bytes) -> None:
    db = ("--db", str(encrypted_store))
    locked = run("diff", "support-1", *db)
    assert locked.exit_code == ExitCode.ENCRYPTED
    assert "--aes-key" in locked.stderr
    opened = run("diff", "support-1", *db, "--aes-key", encryption_key.decode())
    assert opened.exit_code == ExitCode.DIFFERENT, opened.stderr
    assert "+ #13  ai:" in opened.stdout  # the decrypted message, numbered as show numbers it


def test_full_shows_long_values_whole(sqlite_store: Path) -> None:
    short = run("diff", "rich-1~1", "rich-1", "--db", str(sqlite_store))
    full = run("diff", "rich-1~1", "rich-1", "--full", "--db", str(sqlite_store))
    assert short.exit_code == full.exit_code == ExitCode.DIFFERENT
    assert "chars)" in short.stdout
    assert len(full.stdout) > len(short.stdout)


def test_a_thread_is_compared_with_its_own_parent(samples: Path, tmp_path: Path) -> None:
    """`diff THREAD` takes the parent in the same thread: checkpoint ids are unique per
    thread, and a copied thread keeps them (its parent id then matches in both)."""
    store = tmp_path / "copied.db"
    shutil.copy(samples / "sqlite_checkpoints.db", store)
    with closing(sqlite3.connect(store)) as conn, conn:
        thread = conn.execute("SELECT min(thread_id) FROM checkpoints").fetchone()[0]
        for table in ("checkpoints", "writes"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            rest = ", ".join(c for c in columns if c != "thread_id")
            conn.execute(
                f"INSERT INTO {table} (thread_id, {rest}) "
                f"SELECT 'copy-of-' || thread_id, {rest} FROM {table} WHERE thread_id = ?",
                (thread,),
            )
        conn.execute(  # the copy's latest state differs from the original's
            "UPDATE checkpoints SET metadata = json_set(metadata, '$.note', 'copied') "
            "WHERE thread_id = ?",
            ("copy-of-" + thread,),
        )
    for shown in (thread, "copy-of-" + thread):
        result = run("diff", shown, "--json", "--db", str(store))
        assert result.exit_code in (0, 1), result.stderr
        ops = json.loads(result.stdout)
        assert not any(op["path"].startswith("/thread_id") for op in ops), ops
        assert not any(op["path"] == "/metadata/note" for op in ops), ops


def diff_checkpoints(a: Checkpoint, b: Checkpoint) -> list[Change]:
    """`diff_records` of two checkpoints loaded with values, each found alone."""
    return diff_records(checkpoint_record(a), checkpoint_record(b))


def test_a_list_that_changes_in_many_elements_is_one_change() -> None:
    """issue 29: a channel going from [] to 1.5 million items was listed item by item (140 s,
    3.8 GB). Past ELEMENT_LIMIT differing elements a list reads as one change, whose patch
    still turns A into B; a list that grew by one element is still one addition."""
    from ckpt.analysis.changes import ELEMENT_LIMIT, diff_values, json_patch

    big = [f"item-{i}" for i in range(ELEMENT_LIMIT + 1)]
    changes = diff_values({"big": []}, {"big": big})
    assert [(c.kind, c.pointer) for c in changes] == [("changed", "/big")]
    assert json_patch(changes) == [{"op": "replace", "path": "/big", "value": big}]
    grown = diff_values({"big": big}, {"big": [*big, "one more"]})
    assert [(c.kind, c.pointer, c.new) for c in grown] == [
        ("added", f"/big/{len(big)}", "one more")
    ]


def test_a_large_changed_string_is_named_by_size_and_hash(tmp_path: Path) -> None:
    """issue 29: a word diff of two 16 MB strings held ~300 MB and printed all of them.
    Past LARGE_TEXT a changed string is named by its size and sha256 (git's short form);
    --full still diffs it."""
    import hashlib
    import sqlite3
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    from ckpt.render.diffview import LARGE_TEXT

    class State(TypedDict):
        blob: str
        n: int

    size = LARGE_TEXT + 10
    texts = ["x" * size, "y" * size]

    def step(state: State) -> dict[str, object]:
        return {"blob": texts[state["n"]], "n": state["n"] + 1}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    store = tmp_path / "big.sqlite"
    conn = sqlite3.connect(store, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": "big"}}
    app.invoke({"blob": "", "n": 0}, config)  # type: ignore[arg-type]
    app.invoke({"blob": "", "n": 1}, config)  # type: ignore[arg-type]
    conn.close()
    done = run("diff", "big~2", "big", "--db", str(store))
    assert done.exit_code == 1, done.stderr
    digests = [hashlib.sha256(t.encode()).hexdigest()[:12] for t in texts]
    line = next(line for line in done.stdout.splitlines() if "~ blob  value changed" in line)
    assert f"sha256 {digests[0]}… → " in line and f"sha256 {digests[1]}…" in line, line
    assert len(done.stdout) < 5000
    whole = run("diff", "big~2", "big", "--db", str(store), "--full")
    assert (
        whole.exit_code == 1 and whole.stdout.count("x") >= size and whole.stdout.count("y") >= size
    )


def test_a_value_with_many_changes_is_one_change() -> None:
    """issue 38: a 16 MB dict whose 700,000 values all changed was 700,000 changes (and a
    human view that ended in MemoryError under 1 GB). A dict or list whose changes number
    more than CHANGE_LIMIT reads as one change of the whole value, whose patch still turns
    A into B; at the limit every change is listed; the record itself is never one change."""
    from ckpt.analysis.changes import CHANGE_LIMIT

    def state(n: int, bump: int) -> dict[str, Any]:
        return {"big": {f"k{i}": i + bump for i in range(n)}, "n": bump}

    a, b = (
        {"channel_values": state(CHANGE_LIMIT + 1, 0)},
        {"channel_values": state(CHANGE_LIMIT + 1, 1)},
    )
    changes = diff_values(a, b)
    assert [(c.kind, c.pointer) for c in changes] == [
        ("changed", "/channel_values/big"),
        ("changed", "/channel_values/n"),
    ]
    assert jsonpatch.apply_patch(a, json_patch(changes)) == b
    at_limit = diff_values({"v": state(CHANGE_LIMIT - 1, 0)}, {"v": state(CHANGE_LIMIT - 1, 1)})
    assert len(at_limit) == CHANGE_LIMIT  # CHANGE_LIMIT - 1 keys and n
    groups = range(CHANGE_LIMIT // 100 + 1)  # lists of 100 dicts, each changed inside
    nested = [[{"k": i, "v": [i, g, 0]} for i in range(100)] for g in groups]
    moved = [[{"k": i, "v": [i, g, 1]} for i in range(100)] for g in groups]
    inner = diff_values({"s": {"c": nested}}, {"s": {"c": moved}})
    assert [(c.kind, c.pointer) for c in inner] == [("changed", "/s/c")]
    root = diff_values(state(CHANGE_LIMIT + 1, 0)["big"], state(CHANGE_LIMIT + 1, 1)["big"])
    assert len(root) == CHANGE_LIMIT + 1


def test_a_deep_value_holds_at_most_change_limit_changes() -> None:
    """CHANGE_LIMIT counts a value's changes at every depth: twenty levels of half as many
    changes each are not held level upon level, and the patch still applies."""
    from ckpt.analysis.changes import CHANGE_LIMIT

    def deep(bump: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(20):
            value = {**{f"k{i}": i + bump for i in range(CHANGE_LIMIT // 2)}, "next": value}
        return {"section": value}

    a, b = deep(0), deep(1)
    changes = diff_values(a, b)
    assert CHANGE_LIMIT // 2 < len(changes) <= CHANGE_LIMIT
    assert jsonpatch.apply_patch(a, json_patch(changes)) == b


def test_lists_are_aligned_within_one_budget_of_pairs() -> None:
    """A thousand lists of 2,000 equal strings, the first and last of each changed (4 MB of
    msgpack), took 281 s to align list by list. One diff aligns PAIRS_LIMIT pairs in all;
    past it a list whose differing middle is not empty is one change. The patch applies."""
    from ckpt.analysis.changes import ALIGN_LIMIT, PAIRS_LIMIT

    side = int(ALIGN_LIMIT**0.5)  # a list whose middle is exactly ALIGN_LIMIT pairs
    count = PAIRS_LIMIT // ALIGN_LIMIT + 2
    a = {"s": [["s", *["a"] * (side - 2), "e"] for _ in range(count)]}
    b = {"s": [["S", *["a"] * (side - 2), "E"] for _ in range(count)]}
    changes = diff_values(a, b)
    aligned = (PAIRS_LIMIT - count * count) // ALIGN_LIMIT  # the outer list's pairs first
    assert [c.pointer for c in changes] == [
        *(f"/s/{i}/{j}" for i in range(aligned) for j in (0, side - 1)),
        *(f"/s/{i}" for i in range(aligned, count)),
    ]
    assert jsonpatch.apply_patch(a, json_patch(changes)) == b
    appended = diff_values(b, {"s": [*b["s"], ["new"]]})  # no pairs to align: still one addition
    assert [(c.kind, c.pointer) for c in appended] == [("added", f"/s/{count}")]


# -- how much a human view lays out (issue 38) ------------------------------------------------


@pytest.fixture(scope="module")
def bounded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Threads whose values make long human views, each A then B (fixtures/values.py)."""
    from fixtures.values import ABSENT, two_values_store
    from langchain_core.messages import AIMessage, HumanMessage

    from ckpt.render.diffview import SHOWN

    words = [f"w{i % 97}" for i in range(20_000)]
    store = tmp_path_factory.mktemp("bounded") / "bounded.sqlite"
    two_values_store(
        store,
        {
            "many": (
                {f"k{i}": i for i in range(SHOWN + 500)},
                {f"k{i}": i + 1 for i in range(SHOWN + 500)},
            ),
            "lines": ("a\n" * 10_000, "b\n" * 10_000),
            "words": (" ".join(words), " ".join(w if i % 2 else "x" for i, w in enumerate(words))),
            "list": (ABSENT, list(range(100_000))),
            "messages": (
                ABSENT,
                [
                    (HumanMessage if i % 2 else AIMessage)(content=f"{i} " + "w" * 2000, id=f"m{i}")
                    for i in range(300)
                ],
            ),
        },
    )
    return store


def test_a_section_lists_its_first_changes(bounded_store: Path) -> None:
    """A section lists SHOWN changes and counts the rest; --json lists every one."""
    from ckpt.render.diffview import SHOWN

    done = run("diff", "many", "--db", str(bounded_store))
    assert done.exit_code == 1 and done.stderr == ""
    assert done.stdout.count(" → ") >= SHOWN
    more = 500 + 2  # the `step` channel and branch:to:second changed too
    assert f"… {more} more changes in channel_values (--json lists every one)" in done.stdout
    assert "1511 changes:" in done.stdout  # the summary counts them all
    _, patch = patch_of(bounded_store, "many~1", "many")
    assert sum(op["path"].startswith("/channel_values/value/") for op in patch) == SHOWN + 500


# The view's room in these tests: a few times smaller than ROOM, so that filling it is
# quick; tests/test_diff_memory.py runs the real one on 16 MB values.
TEST_ROOM = 256 << 10


def test_a_long_text_diff_ends_where_the_room_does(
    bounded_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 38: 100,000 changed lines made a Rich text of 200,000 lines (~280 MB; a 1 MB
    text MemoryError under 1 GB). The diff's lines are laid out while the view's room
    lasts, and the rest are counted."""
    monkeypatch.setattr("ckpt.render.diffview.ROOM", TEST_ROOM)
    done = run("diff", "lines", "--db", str(bounded_store))
    assert done.exit_code == 1 and done.stderr == ""
    shown = len(re.findall(r"^│ +[-+][ab]$", done.stdout, re.M))
    rest = int(re.search(r"… ([\d,]+) more lines of this diff", done.stdout)[1].replace(",", ""))
    assert 1_000 < shown < 10_000 and shown + rest == 20_000
    assert "@@ -1,10000 +1,10000 @@" in done.stdout


def test_a_long_word_diff_is_aligned_in_bounded_time(bounded_store: Path) -> None:
    """A line of 20,000 words, every other one changed: difflib aligned its 40,000 tokens
    pair by pair (minutes; a 1 MB line ran past 5). Past ALIGN_LIMIT pairs only the part
    between the common ends is aligned, and past it again that part is one replacement."""
    done = run("diff", "words", "--db", str(bounded_store))
    assert done.exit_code == 1 and done.stderr == ""
    text = " ".join(done.stdout.replace("│", " ").split())
    # A's words and B's, each as one run (aligned, they would interleave: "w0x w1 w2x w3")
    assert "w0 w1 w2 w3 w4" in text and "x w1 x w3 x w5" in text


def test_full_lays_out_values_while_the_room_lasts(
    bounded_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 38: --full of [] -> 3.3 million numbers (16 MB) laid out in a table ran past
    60 s. Past the view's room a value is cut as without --full, and a line says so; an
    added list of messages ends in a line counting the rest."""
    monkeypatch.setattr("ckpt.render.diffview.ROOM", TEST_ROOM)
    done = run("diff", "list", "--full", "--db", str(bounded_store))
    assert done.exit_code == 1 and done.stderr == ""
    assert "0, 1, 2, 3" in done.stdout and "99999" not in done.stdout
    assert "(--full lays out 256.0 KB of values; the rest are cut here" in (
        " ".join(done.stdout.split())
    )
    chat = run("diff", "messages", "--full", "--db", str(bounded_store))
    assert chat.exit_code == 1 and chat.stderr == ""
    shown = len(re.findall(r"(?:human|ai): \d+\n", chat.stdout))  # then 2,000 w's, wrapped
    rest = int(re.search(r"… ([\d,]+) more messages", chat.stdout)[1].replace(",", ""))
    assert 50 < shown < 300 and shown + rest == 300
