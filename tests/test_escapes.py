"""Text from the store on a terminal and in JSON (issue 15, items 2 and 4): one escaping
function for every view and message, strict UTF-8 JSON for any string, as properties over
all code points and any text."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import string
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ckpt.cli import app
from ckpt.decoders.values import bytes_record, float_record
from ckpt.escapes import UNSAFE_RANGES, escape_json_text, for_terminal
from ckpt.records.encode import as_json, dumps, dumps_line
from hostile import HOSTILE, OWN_STYLES, first_unsafe, unsafe_left
from runs import examples

runner = CliRunner()
CKPT = str(Path(sys.executable).parent / "ckpt")
UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
PRINTABLE_ASCII = set(string.printable) - set("\t\n\r\x0b\x0c")


def in_table(code: int) -> bool:
    return any(first <= code <= last for first, last in UNSAFE_RANGES)


def test_every_code_point() -> None:
    """Escaped exactly when it is a control, format, separator or surrogate code point
    (or in the tag block), and then as printable ASCII only. The table follows Unicode
    15.1; code points this Python's older Unicode leaves unassigned may be in it."""
    wrong = []
    for code in range(0x110000):
        char = chr(code)
        shown = for_terminal(char)
        category = unicodedata.category(char)
        unsafe = category in UNSAFE_CATEGORIES
        tabled = in_table(code)
        if (unsafe and not tabled) or (tabled and not unsafe and category != "Cn"):
            wrong.append(f"U+{code:04X} ({category})")
        elif (shown != char) != tabled:
            wrong.append(f"U+{code:04X} shown as {shown!r}")
        elif tabled and not set(shown) <= PRINTABLE_ASCII:
            wrong.append(f"U+{code:04X} as {shown!r}")
    assert wrong == [], f"{len(wrong)} code points, e.g. {wrong[:10]}"


def test_the_hostile_checks_one_pattern_finds_what_the_table_lists() -> None:
    """tests/hostile.py checks megabytes of output with one regular expression: it finds
    exactly the code points in_table, a newline aside, and the first of them."""
    every = "".join(chr(code) for code in range(0x110000))
    found = [i for i, char in enumerate(every) if first_unsafe(char) is not None]
    assert found == [code for code in range(0x110000) if in_table(code) and code != 10]
    assert first_unsafe("ok\nok") is None
    assert first_unsafe("a\u202eb\x1bc") == "\u202e"


def test_the_table_matches_this_pythons_unicode() -> None:
    # A newer Unicode may add format characters: regenerate UNSAFE_RANGES from it then.
    assert unicodedata.unidata_version >= "14.0.0"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF)))
def test_terminal_text_never_holds_an_unsafe_character(text: str) -> None:
    assert unsafe_left(for_terminal(text), layout=False) == []
    kept = for_terminal(text, keep_layout=True)
    assert unsafe_left(kept) == []
    assert kept.count("\n") == text.count("\n")


@settings(max_examples=examples(150), deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text(alphabet=st.characters(codec=None, max_codepoint=0x10FFFF)),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=5), children, max_size=4)
        ),
        max_leaves=20,
    ),
    st.sampled_from([None, 2]),
)
def test_json_is_strict_utf8_and_safe_for_any_value(value: Any, indent: int | None) -> None:
    text = dumps(value, indent=indent)
    text.encode("utf-8")  # valid UTF-8: no raw surrogate
    assert unsafe_left(text) == []

    def refuse(name: str) -> Any:
        raise ValueError(name)

    back = json.loads(text, parse_constant=refuse)
    assert back == _expected(value)


class _Text(str):
    pass


class _Number(int):
    pass


_KEYS = st.text(max_size=5) | st.integers() | st.floats() | st.booleans() | st.none()


# Anything a record may hold: subclasses, bytes, tuples, non-string keys, NaN.
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec=None, max_codepoint=0x10FFFF)).map(
        lambda t: _Text(t) if len(t) % 3 == 1 else t
    )
    | st.integers().map(_Number)
    | st.binary(max_size=3),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(_KEYS, children, max_size=4)
    ),
    max_leaves=20,
)


def _strict_oracle(value: Any) -> Any:
    """What docs/json.md says dumps writes for a value JSON cannot hold as it is: float
    and bytes records, tuples as lists, keys as their JSON text (str() for the rest)."""
    if isinstance(value, float) and not math.isfinite(value):
        return float_record(value)
    if isinstance(value, bytes):
        return bytes_record(value)
    if isinstance(value, list | tuple):
        return [_strict_oracle(item) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                plain = key is None or isinstance(key, bool | int)
                finite = isinstance(key, float) and math.isfinite(key)
                key = json.dumps(key) if plain or finite else str(key)
            assume(key not in out)  # keys that meet as text: written twice, not compared
            out[key] = _strict_oracle(item)
        return out
    return value


@settings(max_examples=examples(200), deadline=None)
@given(
    _VALUES,
    st.sampled_from([None, 0, 2, 4]),
    st.sampled_from([0, 1, 3]),
)
def test_json_text_is_json_dumps_own_text(value: Any, indent: int | None, level: int) -> None:
    """dumps writes JSON itself (json.dumps with an indent runs a pure-Python encoder,
    and neither takes NaN, bytes or deep nesting): the text is json.dumps' own, byte for
    byte, for the strict form of every value, and `level` only indents the lines after
    the first. The value read back is as_json's."""
    expected = json.dumps(_strict_oracle(value), ensure_ascii=False, indent=indent, allow_nan=False)
    if indent is not None:
        expected = expected.replace("\n", "\n" + " " * (indent * level))
    text = dumps(value, indent=indent, level=level)
    assert text == escape_json_text(expected)
    assert json.dumps(as_json(value)) == json.dumps(json.loads(text))


@settings(max_examples=examples(200), deadline=None)
@given(_VALUES)
def test_an_ndjson_line_is_the_same_json_in_the_tight_layout(value: Any) -> None:
    """dumps_line (every NDJSON line: orjson where it writes what json would) writes
    dumps' value, strict JSON, on one line with no space after `,` or `:`, json's own
    text but for the digits' layout of floats."""
    text = dumps_line(value)
    text.encode("utf-8")
    assert "\n" not in text and unsafe_left(text) == []
    back = json.loads(text, parse_constant=lambda name: pytest.fail(name))
    assert back == json.loads(dumps(value))
    strict = _strict_oracle(value)
    tight = json.dumps(strict, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if "e" not in tight and "." not in tight:  # json and orjson write floats' digits apart
        assert text == escape_json_text(tight)


def test_an_ndjson_line_never_lets_orjson_write_a_nan_as_null() -> None:
    """orjson writes NaN and the infinities as null: each, anywhere in a record beside
    messages the decoder shares (shared_exts), is written as its float record."""
    import ormsgpack

    from ckpt.decoders.memo import shared_exts
    from ckpt.decoders.msgpack import decode_msgpack

    message = ormsgpack.packb(["langchain_core.messages", "AIMessage", {"content": "hi"}])
    payload = ormsgpack.packb({"messages": [ormsgpack.Ext(5, message)], "score": 0.5})
    with shared_exts():
        values = decode_msgpack(payload)
        for odd in (math.nan, -math.nan, math.inf, -math.inf, 2**70, b"\xcb\x7f\xf0"):
            for record in ({"values": values, "x": odd}, [values, [[odd]]], (odd,)):
                text = dumps_line(record)
                assert json.loads(text) == json.loads(dumps(record))
                assert "null" not in text and ", " not in text


def test_as_json_shares_what_is_plain_already() -> None:
    """as_json copies only what a JSON round trip would change."""
    nils = [None] * 10_000
    words = {"a": nils, "b": [{"c": "d"}, 1.5, True]}
    assert as_json(words) is words
    changed = {"a": nils, "b": (1, 2), "n": math.nan}
    back = as_json(changed)
    assert back["a"] is nils
    assert back == {"a": nils, "b": [1, 2], "n": {"__ckpt__": "float", "value": "NaN"}}


def test_indented_json_of_long_lists_is_json_dumps_own() -> None:
    """Runs of scalars longer than records.RUN are joined a run at a time, between
    containers and at the end: the same text."""
    from ckpt.records.encode import RUN

    items: list[Any] = [None] * (RUN + 3)
    items[RUN - 1] = {"k": [1, "é"]}
    items[RUN] = [True]
    value = {"a": items + list(range(2 * RUN + 1)), "b": [[None] * RUN] * 2}
    for indent in (0, 2):
        assert dumps(value, indent=indent) == json.dumps(value, indent=indent, ensure_ascii=False)


def test_json_of_any_depth() -> None:
    """The writer keeps its own stack: nesting too deep for json (or for Python's
    recursion) is written all the same, indented or not."""
    depth = 5000
    deep: Any = 1
    for _ in range(depth):
        deep = [deep]
    assert dumps(deep) == "[" * depth + "1" + "]" * depth
    lines = [" " * i + "[" for i in range(depth)] + [" " * depth + "1"]
    lines += [" " * i + "]" for i in reversed(range(depth))]
    assert dumps(deep, indent=1) == "\n".join(lines)
    shallow: Any = 1
    for _ in range(300):
        shallow = {"k": [shallow]}
    assert dumps(shallow, indent=2) == json.dumps(shallow, indent=2)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(min_value=1, max_value=40))
def test_streamed_json_is_the_same_text(value: Any, chunk: int) -> None:
    """`dump_document` (the indented documents, written a piece at a time) writes what
    `dumps` writes, whatever the value and however often the pieces are handed on."""
    from ckpt.records import encode as records

    saved = records.FLUSH, records.RUN
    records.FLUSH, records.RUN = chunk, max(1, chunk // 3)  # type: ignore[misc]
    try:
        pieces = list(records.dump_document(value))
    finally:
        records.FLUSH, records.RUN = saved  # type: ignore[misc]
    assert "".join(pieces) == dumps(value, indent=2) + "\n"


def _expected(value: Any) -> Any:
    """What dumps writes for a value: non-finite floats as float records."""
    if isinstance(value, float) and not math.isfinite(value):
        name = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return {"__ckpt__": "float", "value": name}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    return value


def test_json_escapes_keep_indentation_and_astral_characters() -> None:
    text = escape_json_text(json.dumps({"a": "\U000e0041\u202e"}, ensure_ascii=False, indent=2))
    assert text == '{\n  "a": "\\udb40\\udc41\\u202e"\n}'
    assert json.loads(text) == {"a": "\U000e0041\u202e"}


# -- the CLI: every view and message --------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_store(sqlite_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """chat.sqlite with thread rich-1 renamed to HOSTILE, and a metadata value holding
    it, infinity and a lone surrogate (JSON escapes in the stored text)."""
    store = tmp_path_factory.mktemp("hostile") / "hostile.sqlite"
    shutil.copy(sqlite_store, store)
    with sqlite3.connect(store) as conn:
        for table in ("checkpoints", "writes"):
            conn.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = 'rich-1'", (HOSTILE,))
        conn.execute(
            "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), "
            "'$.odd', json(?)) AS BLOB) WHERE thread_id = ?",
            (json.dumps([HOSTILE, "\ud800"])[:-1] + ", 1e999]", HOSTILE),
        )
    return store


def views(store: Path) -> list[list[str]]:
    db = ["--db", str(store)]
    return [
        ["threads", str(store)],
        ["threads", str(store), "--json"],
        ["threads", str(store), "--ndjson"],
        ["history", HOSTILE, *db],
        ["history", HOSTILE, "--json", *db],
        ["show", HOSTILE, "--blobs", "--full", *db],
        ["show", HOSTILE, "--json", *db],
        ["versions", HOSTILE, *db],
        ["diff", HOSTILE, *db],
        ["diff", HOSTILE, "support-1", *db],
        ["diff", HOSTILE, "--json", *db],
        ["dump", str(store), "--quiet"],
        ["dump", str(store), "--json", "--quiet"],
        ["stats", str(store), "--quiet"],
        ["stats", str(store), "--json", "--quiet"],
        ["types", str(store), "--quiet"],
        ["check", str(store), "--quiet"],
        ["show", f"{HOSTILE}x", *db],  # an error message naming it
    ]


@pytest.mark.parametrize("tty", [False, True])
def test_no_view_lets_an_unsafe_character_through(hostile_store: Path, tty: bool) -> None:
    env = {"COLUMNS": "100", **({"CKPT_FORCE_TTY": "1"} if tty else {})}
    for args in views(hostile_store):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code in (0, 1, 7), (args, result.stderr)
        out = OWN_STYLES.sub("", result.stdout)
        assert unsafe_left(out) == [], args
        assert unsafe_left(result.stderr) == [], args
        out.encode("utf-8")
        if "--json" in args or "--ndjson" in args or args[0] == "dump":
            # dump writes NDJSON into a pipe and one array on a terminal.
            whole = "--json" in args or (args[0] == "dump" and tty)
            lines = [out] if whole else out.splitlines()
            for line in lines:
                json.loads(line, parse_constant=lambda name: pytest.fail(name))


def test_json_keeps_the_text_exactly(hostile_store: Path) -> None:
    result = runner.invoke(app, ["show", HOSTILE, "--json", "--db", str(hostile_store)])
    record = json.loads(result.stdout)
    assert record["thread_id"] == HOSTILE
    assert record["metadata"]["odd"] == [
        HOSTILE,
        "\ud800",
        {"__ckpt__": "float", "value": "Infinity"},
    ]


def test_file_names_found_by_discovery_are_escaped(sqlite_store: Path, tmp_path: Path) -> None:
    for name in ("a\x1b[31mred.db", "b\u202egnp.sqlite"):
        shutil.copy(sqlite_store, tmp_path / name)
    result = subprocess.run([CKPT, "threads"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 3 and "several stores" in result.stderr
    assert unsafe_left(result.stderr) == [] and "\\x1b[31m" in result.stderr


def test_every_error_message_is_one_safe_line() -> None:
    """A parser's complaint can quote the bytes it choked on (a damaged pickle's newline,
    an ESC in an id): the message ckpt prints is still one line with nothing raw in it."""
    from ckpt.errors import StoreCorrupt

    exc = StoreCorrupt("x.pckl: truncated or corrupt pickle (bad 'Rq\x0fh\th\n\x1b[2J')")
    assert exc.message == "x.pckl: truncated or corrupt pickle (bad 'Rq\\x0fh\\th\\n\\x1b[2J')"
    assert str(exc) == exc.message


@pytest.mark.parametrize("level", [0, 1])
def test_indented_json_writes_floats_as_json_does(level: int) -> None:
    """Indented records of plain values are written by orjson (records.dump_pieces); its
    floats would read the same but differ as text (1e16, not json's 1e+16; NaN as null),
    so a value holding one is written by ckpt's own writer, as json.dumps would."""
    value = {"id": "t", "n": [1, 2**63, -(2**63)], "x": [1e16, 1e-07, 0.1, 1e22, -0.0, 5.0]}
    expected = json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * level)
    assert dumps(value, indent=2, level=level) == expected
    nan = dumps({"n": math.nan}, indent=2)
    assert json.loads(nan) == {"n": {"__ckpt__": "float", "value": "NaN"}}


def test_only_small_plain_records_are_written_as_one_text() -> None:
    """The one-text (orjson) path takes small plain records only: one with many long
    strings, or many values, goes to the writer that never holds its text whole."""
    from ckpt.records.encode import _orjson_writes_as_json, dumps

    small = {"thread_id": "t", "next": ["a"], "n": 1, "ok": True, "none": None}
    assert _orjson_writes_as_json(small)
    for large in ({"s": ["x" * 60_000] * 40}, {"n": list(range(10_000))}, {"f": 1.5}):
        assert not _orjson_writes_as_json(large)
        assert dumps(large, indent=2) == json.dumps(large, indent=2)


# -- an escape in any string field (issue 29): every column and body field that is text ----

_THREAD = "fanout-1"  # writes, Sends, an error: the most fields a view shows


def _rebody(conn: sqlite3.Connection, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the thread's msgpack checkpoint bodies through `change`, ext values kept."""
    import ormsgpack

    option = ormsgpack.OPT_NON_STR_KEYS
    rows = conn.execute(
        "SELECT rowid, checkpoint FROM checkpoints WHERE thread_id = ? AND type = 'msgpack'",
        (_THREAD,),
    ).fetchall()
    for rowid, blob in rows:
        body = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=option)
        change(body)
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?",
            (ormsgpack.packb(body, option=option), rowid),
        )


def _rename_channel(body: dict[str, Any]) -> None:
    for part in ("channel_values", "channel_versions"):
        if "items" in body.get(part, {}):
            body[part][HOSTILE] = body[part].pop("items")


_FIELDS: dict[str, Callable[[sqlite3.Connection], None]] = {
    **{
        f"{table}.{column}": (
            lambda conn, table=table, column=column, value=value: conn.execute(
                f"UPDATE {table} SET {column} = {value} WHERE thread_id = ?", (HOSTILE, _THREAD)
            )
        )
        for table, column, value in [
            ("checkpoints", "checkpoint_ns", "?"),
            ("writes", "checkpoint_ns", "?"),
            ("checkpoints", "checkpoint_id", "checkpoint_id || ?"),
            ("checkpoints", "parent_checkpoint_id", "parent_checkpoint_id || ?"),
            ("checkpoints", "type", "?"),
            ("writes", "task_id", "task_id || ?"),
            ("writes", "task_path", "?"),
            ("writes", "channel", "?"),
            ("writes", "type", "?"),
            ("checkpoints", "metadata", "CAST(json_set(CAST(metadata AS TEXT), '$.k', ?) AS BLOB)"),
        ]
    },
    "metadata key": lambda conn: conn.execute(
        "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), "
        "'$.\"' || ? || '\"', 1) AS BLOB) WHERE thread_id = ?",
        (HOSTILE, _THREAD),
    ),
    "body ts": lambda conn: _rebody(conn, lambda body: body.__setitem__("ts", HOSTILE)),
    "body channel name": lambda conn: _rebody(conn, _rename_channel),
}


@pytest.mark.parametrize("field", sorted(_FIELDS))
def test_an_escape_in_any_string_field_never_reaches_a_terminal(
    sqlite_store: Path, tmp_path: Path, field: str
) -> None:
    """HOSTILE (OSC 52, CSI, bidi and tag characters) in one text field of the thread's
    rows or bodies at a time: no human view on a terminal, and no error message, prints
    one raw."""
    store = tmp_path / "store.sqlite"
    shutil.copy(sqlite_store, store)
    with sqlite3.connect(store) as conn:
        _FIELDS[field](conn)
    db = ["--db", str(store)]
    env = {"COLUMNS": "100", "CKPT_FORCE_TTY": "1"}
    for args in (
        ["threads", str(store)],
        ["history", _THREAD, *db],
        ["show", _THREAD, "--blobs", "--full", *db],
        ["versions", _THREAD, *db],
        ["diff", _THREAD, *db],
        ["stats", str(store), "--quiet"],
        ["types", str(store), "--quiet"],
        ["check", str(store), "--quiet"],
    ):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code in (0, 1, 5, 7), (field, args, result.stderr)
        assert unsafe_left(OWN_STYLES.sub("", result.stdout)) == [], (field, args)
        assert unsafe_left(result.stderr) == [], (field, args)


def test_the_text_guard_keeps_ckpts_colours_and_escapes_the_rest() -> None:
    from ckpt.render.output import guarded

    line = f"\x1b[1;31merror\x1b[0m  {HOSTILE}\tnext\n"
    shown = guarded(line)
    assert shown.startswith("\x1b[1;31merror\x1b[0m  ") and shown.endswith("\tnext\n")
    assert unsafe_left(OWN_STYLES.sub("", shown)) == []
    assert guarded("plain text") == "plain text"
