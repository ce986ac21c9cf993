"""The Python API (ckpt.open): docs/api.md's examples run here, and the API gives the same
records as the CLI's JSON for every fixture store."""

from __future__ import annotations

import doctest
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ckpt
from ckpt.demo import write_demo_store
from ckpt.records.encode import dumps
from invoke import run

DOCS = Path(__file__).parent.parent / "docs"


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("api")
    write_demo_store(folder / "chat.sqlite")
    return folder


@pytest.fixture
def in_demo_dir(demo_dir: Path) -> Iterator[Path]:
    previous = Path.cwd()
    os.chdir(demo_dir)
    try:
        yield demo_dir
    finally:
        os.chdir(previous)


def test_the_examples_in_docs_api_md_run(in_demo_dir: Path) -> None:
    result = doctest.testfile(
        str(DOCS / "api.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert result.attempted > 15
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_public_names() -> None:
    for name in ckpt.__all__:
        assert getattr(ckpt, name) is not None, name
    with pytest.raises(AttributeError):
        ckpt.nosuch  # noqa: B018
    assert issubclass(ckpt.NotFound, ckpt.CkptError)


STORES = ["sqlite_store", "encrypted_store", "dev_folder", "memory_pkl"]


@pytest.mark.parametrize("fixture", STORES)
def test_api_and_cli_give_the_same_records(
    fixture: str, request: pytest.FixtureRequest, encryption_key: bytes
) -> None:
    path = str(request.getfixturevalue(fixture))
    key = ["--aes-key", encryption_key.decode()] if fixture == "encrypted_store" else []
    aes = encryption_key if fixture == "encrypted_store" else None
    with ckpt.open(path, aes_key=aes) as store:
        threads = store.threads(sort="thread")
        assert threads == _cli_json("threads", path, "--sort", "thread", "--json", *key)
        for thread in threads:
            thread_id = thread["thread_id"]
            cli_history = _cli_json("history", thread_id, "--db", path, "--json", *key)
            assert store.history(thread_id) == cli_history, thread_id
            if thread["checkpoint_id"] is None:
                continue
            if fixture != "memory_pkl":
                cli_show = _cli_json("show", thread_id, "--db", path, "--json", "--blobs", *key)
                assert _plain(store.checkpoint(thread_id)) == cli_show, thread_id
        dumped = [json.loads(line) for line in _cli("dump", path, "--ndjson", *key).splitlines()]
        assert [_plain(r) for r in store.dump()] == dumped


def test_pg_store_api_matches_cli(pg_store: Any) -> None:
    from fixtures.js_stores import node_dsn

    url = node_dsn(pg_store.dsn)
    with ckpt.open(url) as store:
        assert store.kind == "postgres"
        assert store.threads(sort="thread") == _cli_json(
            "threads", url, "--sort", "thread", "--json"
        )
        record = store.checkpoint("fanout-1")
        assert _plain(record) == _cli_json("show", "fanout-1", "--db", url, "--json", "--blobs")


def test_errors_are_ckpts_own(tmp_path: Path) -> None:
    with pytest.raises(ckpt.StoreNotFound):
        ckpt.open(tmp_path / "missing.sqlite")
    text = tmp_path / "text.db"
    text.write_text("not a database")
    with pytest.raises(ckpt.StoreUnreadable):
        ckpt.open(text)
    assert not (tmp_path / "missing.sqlite").exists()


def _cli(*args: str) -> str:
    result = run(*args)
    assert result.exit_code in (0, 6), (args, result.stderr)
    return str(result.stdout)


def _cli_json(*args: str) -> Any:
    return json.loads(_cli(*args))


def _plain(record: Any) -> Any:
    return json.loads(dumps(record))


def test_hidden_values_are_the_librarys_error(
    encrypted_store: Path, encryption_key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What encryption hides is decided in the library, so an API user meets the error the
    CLI exits 6 with: raised with what could be read, or kept when asked to."""
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    with ckpt.open(encrypted_store) as store:
        thread = store.threads(sort="thread")[0]["thread_id"]
        with pytest.raises(ckpt.EncryptedError, match="pass `aes_key`") as raised:
            store.checkpoint(thread)
        partial = raised.value.partial
        assert partial["thread_id"] == thread and partial["metadata"]  # clear text is read
        with pytest.raises(ckpt.EncryptedError):
            store.history(thread)
        with pytest.raises(ckpt.EncryptedError):
            list(store.dump(threads=[thread]))  # once the stream is read
    with ckpt.open(encrypted_store, hidden="keep") as store:
        record = store.checkpoint(thread)
        assert record["checkpoint_id"] == partial["checkpoint_id"]
        assert [e.exit_code for e in store.hidden] == [ckpt.ExitCode.ENCRYPTED]
    with ckpt.open(encrypted_store, aes_key=encryption_key) as store:
        store.checkpoint(thread)
        assert list(store.dump(threads=[thread])) and not store.hidden


def test_dir_lists_the_api() -> None:
    names = dir(ckpt)
    assert {"open", "diff", "NotFound", "CheckpointStore", "ExitCode"} <= set(names)
    assert not {"Any", "TYPE_CHECKING", "annotations"} & set(names)


# What a command's option is called in the API, where the names differ; and the options
# that are the CLI's own (output, progress) or open the store (ckpt.open's).
API_NAMES = {"thread": "threads", "every": "all", "keep_key": "keep_keys", "db2": "other",
             "keep_latest": "strategy", "keep_last": "keep", "delete": "strategy",
             "orphans": "strategy",
             "db": "spec", "no_values": "values"}  # fmt: skip
CLI_ONLY = {"ctx", "json_out", "ndjson_out", "quiet", "full", "local", "store", "src"}


def taken_by(function: Any) -> set[str]:
    """The keywords a function takes: its parameters, and the keys of the TypedDict its
    `**options: Unpack[...]` names (ckpt.api.CopyOptions, PruneOptions)."""
    import inspect
    import re

    names = set()
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            (options,) = re.findall(r"Unpack\[(\w+)\]", str(parameter.annotation))
            names |= set(getattr(ckpt.api, options).__optional_keys__)
        else:
            names.add(parameter.name)
    return names


@pytest.mark.parametrize(
    ("command", "functions"),
    [
        ("copy", ["copy", "iter_copy"]),
        ("migrate", ["migrate", "iter_migrate"]),
        ("prune", ["prune", "iter_prune"]),
        ("vacuum", ["vacuum"]),
        ("diff", ["diff"]),
        ("dump", ["dump", "dump_text", "dump_bytes", "dump_total"]),
    ],
)
def test_the_api_takes_every_option_the_command_has(command: str, functions: list[str]) -> None:
    """Issue 38: each command is a face over one API call, which takes all it can say."""
    import inspect

    from ckpt.cli import app

    (registered,) = [c for c in app.registered_commands if c.callback.__name__ == command]
    options = set(inspect.signature(registered.callback).parameters) - CLI_ONLY
    opening = set(inspect.signature(ckpt.open).parameters)
    for name in functions:
        taken = taken_by(getattr(ckpt.CheckpointStore, name)) | opening
        if name == "dump_total":
            taken.add("values")  # a count of what dump streams, values or not
        if name in ("dump", "dump_total"):
            taken.add("jobs")  # processes that make NDJSON text: dump_text
        missing = {o for o in options if API_NAMES.get(o, o) not in taken}
        assert missing == set(), (command, name)
    if command in ("copy", "prune", "vacuum", "migrate"):  # and the module-level call too
        module_level = taken_by(getattr(ckpt, command))
        assert {API_NAMES.get(o, o) for o in options} - opening - {"spec"} <= module_level


def test_lineage_is_what_history_draws(sqlite_store: Path, manifest: dict[str, Any]) -> None:
    """`lineage` (what `ckpt history` draws) holds the tree, the values each update_state
    wrote, read as `checkpoint` reads them, and how many older checkpoints `last` left."""
    thread = manifest["fork"]
    with ckpt.open(sqlite_store) as store:
        whole = store.lineage(thread)
        history = store.history(thread)
        assert whole["chains"] == store.history_tree(thread)
        assert whole["earlier"] == 0
        updates = [r["checkpoint_id"] for r in history if r["metadata"].get("source") == "update"]
        assert len(updates) == 2 and sorted(whole["written"]) == sorted(updates)
        for checkpoint_id in updates:
            assert (
                whole["written"][checkpoint_id] == store.checkpoint(checkpoint_id)["channel_values"]
            )
        windowed = store.lineage(thread, last=3, updates=0)
        assert windowed["written"] == {}
        assert windowed["earlier"] == len(history) - 3


def test_dump_records_are_the_callers_unless_read_only(sqlite_store: Path) -> None:
    """dump() gives each record objects of its own: a caller may change one without the
    next changing. read_only=True (the CLI's dump, the MCP server) decodes a message the
    next checkpoint repeats once: the records then share it, and read the same."""

    def messages(**options: Any) -> list[list[dict[str, Any]]]:
        with ckpt.open(sqlite_store) as store:
            return [
                r["channel_values"]["messages"]
                for r in store.dump(threads=["support-1"], **options)
                if (r.get("channel_values") or {}).get("messages")
            ]

    own, shared = messages(), messages(read_only=True)
    assert own == shared and len(own) > 2
    first = own[-2][0]
    assert first == own[-1][0] and first is not own[-1][0]
    assert shared[-2][0] is shared[-1][0]  # one object, decoded once
    first["content"] = "changed by the caller"
    assert own[-1][0]["content"] != "changed by the caller"
