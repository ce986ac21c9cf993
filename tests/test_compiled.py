"""The compiled threads-only pass (setup.py, ckpt.stores.lean): built, current, and the same
pass as pickle_lean.py run as Python, on real and on damaged `langgraph dev` files."""

from __future__ import annotations

import functools
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fixtures.build import DEV_FILES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckpt.stores import lean, pickle_lean
from ckpt.stores.persistent_dict import PickleStore
from ckpt.stores.pickle_index import Unsupported


def _compiled_module() -> ModuleType:
    from ckpt.stores import _pickle_lean  # type: ignore[attr-defined]

    module: ModuleType = _pickle_lean
    return module


def test_the_compiled_pass_is_built_from_this_source() -> None:
    """`make test` installs the package, which compiles pickle_lean.py (a C compiler and
    Cython from PyPI are on every machine it runs on): a build that silently fell back to
    Python, or a compiled module left from older source, fails here."""
    compiled = _compiled_module()
    assert compiled.SOURCE_SHA256 == lean.source_digest()
    assert compiled.__file__.endswith(".so")
    if not os.environ.get("CKPT_PURE_PYTHON"):
        assert lean.PASS is compiled
        assert lean.scan_kept is compiled.scan_kept


def test_a_compiled_module_from_other_source_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CKPT_PURE_PYTHON", raising=False)
    assert lean.compiled() is _compiled_module()
    monkeypatch.setattr(lean, "source_digest", lambda: "0" * 64)
    assert lean.compiled() is None


def test_pure_python_when_asked(dev_folder: Path) -> None:
    """CKPT_PURE_PYTHON=1 runs pickle_lean.py as Python, and lists what the compiled pass
    lists."""
    outputs = []
    for pure in ("", "1"):
        env = {**os.environ, "CKPT_PURE_PYTHON": pure}
        probe = "from ckpt.stores import lean; print(lean.PASS.__name__)"
        name = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert name == ("ckpt.stores.pickle_lean" if pure else "ckpt.stores._pickle_lean")
        done = subprocess.run(
            [sys.executable, "-m", "ckpt", "threads", str(dev_folder), "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, "")
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert '"thread_id"' in outputs[0]


def _passes(name: str, thread: str) -> list[tuple[str, Callable[[ModuleType, int], Any]]]:
    """Every way the store runs the pass over a file of this role (`thread`: one the
    fixture holds)."""
    if name == DEV_FILES[0]:  # storage
        return [
            ("summaries", lambda m, fd: m.scan_storage(fd)),
            ("ids", lambda m, fd: m.scan_storage(fd, ids=True)),
            ("whole", lambda m, fd: m.scan_storage(fd, whole=True)),
            ("a thread", lambda m, fd: m.scan_storage(fd, thread)),
        ]
    check = name == DEV_FILES[1]  # writes are checked as UTF-8, blobs are not
    return [
        ("every key", lambda m, fd: m.scan_kept(fd, None, check=check)),
        ("no key", lambda m, fd: m.scan_kept(fd, set(), check=check)),
        ("a thread", lambda m, fd: m.scan_kept(fd, thread, check=check)),
    ]


def _outcome(module: ModuleType, data: bytes, run: Callable[[ModuleType, int], Any]) -> Any:
    fd = os.memfd_create("pass")  # a file of this content, for the pass's os.pread
    try:
        os.write(fd, data)
        try:
            return ("built", run(module, fd))
        except Unsupported as exc:
            # Where the pass itself fails (an index past the buffer, say), Python and the
            # compiled code may raise different exceptions; either way the pass turns the
            # file away (run() names the exception), and the store reads it the full way.
            reason = str(exc)
            failed = reason == "error" or reason.endswith("Error")  # struct.error, IndexError
            return ("unsupported", "failed" if failed else reason)
        except OSError as exc:
            return ("oserror", type(exc).__name__)
    finally:
        os.close(fd)


@functools.cache
def _a_thread(dev_folder: Path) -> str:
    with PickleStore(dev_folder) as store:
        return max(store.thread_ids())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(DEV_FILES),
    cut=st.none() | st.integers(min_value=0),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=4),
)
def test_compiled_and_python_passes_agree(
    dev_folder: Path, name: str, cut: int | None, flips: list[tuple[int, int]]
) -> None:
    """On the dev fixture's files and damaged copies of them, the compiled pass builds what
    pickle_lean.py builds as Python, or turns the file away with the same reason."""
    data = bytearray((dev_folder / name).read_bytes())
    for where, byte in flips:
        data[where % len(data)] = byte
    if cut is not None:
        del data[cut % len(data) :]
    compiled = _compiled_module()
    for _, run in _passes(name, _a_thread(dev_folder)):
        assert _outcome(compiled, bytes(data), run) == _outcome(pickle_lean, bytes(data), run)


def test_the_passes_agree_on_the_intact_files(dev_folder: Path) -> None:
    """The same on the files as LangGraph wrote them, where every pass builds its result."""
    compiled = _compiled_module()
    for name in DEV_FILES:
        data = (dev_folder / name).read_bytes()
        for how, run in _passes(name, _a_thread(dev_folder)):
            expected = _outcome(pickle_lean, data, run)
            assert expected[0] == "built", (name, how, expected)
            assert _outcome(compiled, data, run) == expected


_TEXT = st.text(max_size=12)
# Bytes values short (text in the memo), long (left in the file) and longer than a read
# (64 KB); the long ones made from a seed, which hypothesis draws far faster than the bytes.
_VALUE = st.binary(max_size=80) | st.integers(60_000, 140_000).map(
    lambda n: random.Random(n).randbytes(n)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blobs=st.dictionaries(
        st.tuples(_TEXT, _TEXT, _TEXT, _TEXT | st.integers()),
        st.tuples(_TEXT, _VALUE),
        max_size=120,
    ),
    storage=st.dictionaries(
        _TEXT,
        st.dictionaries(
            _TEXT,
            st.dictionaries(
                _TEXT,
                st.tuples(st.tuples(_TEXT, _VALUE), st.tuples(_TEXT, _VALUE), st.none() | _TEXT),
                max_size=4,
            ),
            max_size=3,
        ),
        max_size=4,
    ),
)
def test_the_passes_agree_on_pickles_of_any_shape(
    blobs: dict[Any, Any], storage: dict[str, dict[str, Any]]
) -> None:
    """Protocol 2 pickles as PersistentDict writes them, of dicts of every size (batches of
    SETITEMS, memo numbers past 255, bytes values short, long and longer than a read):
    the compiled pass and Python give the same result."""
    import collections
    import pickle

    files = {
        DEV_FILES[2]: pickle.dumps(blobs, 2),
        DEV_FILES[1]: pickle.dumps({key: {("task", 0): value} for key, value in blobs.items()}, 2),
        DEV_FILES[0]: pickle.dumps(
            {thread: collections.defaultdict(dict, spaces) for thread, spaces in storage.items()},
            2,
        ),
    }
    compiled = _compiled_module()
    thread = max(storage, default="")
    for name, data in files.items():
        for how, run in _passes(name, thread):
            expected = _outcome(pickle_lean, data, run)
            assert _outcome(compiled, data, run) == expected, (name, how)
