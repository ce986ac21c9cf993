"""A restricted unpickler that reads PersistentDict files as plain dicts and runs nothing."""

from __future__ import annotations

import collections
import gc
import io
import os
import pickle
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, ClassVar, Final, cast

from ckpt.decoders.pickle_imports import escapes_unwarned, pickle_ops
from ckpt.errors import RefusedGlobal, StoreCorrupt


class _DefaultDict(collections.defaultdict[Any, Any]):
    """What `collections.defaultdict` loads as: a defaultdict whose BUILD stops the C
    unpickler (the build-safe one then reads the file, _load_build_safe). A defaultdict is
    the one allowed object whose attribute CPython's BUILD could set: slot state
    `{"default_factory": ...}` was applied silently (issue 38)."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        raise _BuildRefused("collections.defaultdict")


# The only globals a PersistentDict file names (format.md §7.2, verified with pickletools on
# current and checkpoint 2.0.21 files): the per-thread `defaultdict(dict)`, and its factory
# under its Python 2 name (protocol 2) or its Python 3 name.
_CLASSES: Final[dict[tuple[str, str], Any]] = {
    ("collections", "defaultdict"): _DefaultDict,
    ("__builtin__", "dict"): dict,
    ("builtins", "dict"): dict,
}
# Protocol 2 has no bytes opcode: it writes every non-empty `bytes` value as
# `_codecs.encode(<latin-1 str>, "latin1")` (format.md §7.2), which maps to a stub below.
_ENCODE: Final = ("_codecs", "encode")
LATIN1: Final = frozenset({"latin1", "latin-1"})
# ...and an *empty* bytes value as `bytes()` under its Python 2 name. format.md §7.2 does not
# list it because the single-file storage pickle rarely holds one, but the writes and blobs
# files of format.md §7.3 hold many: every `("empty", b"")` placeholder and `("null", b"")`
# value. It maps to a stub that takes no argument, since `bytes(n)` allocates n bytes.
_BYTES: Final = frozenset({("__builtin__", "bytes"), ("builtins", "bytes")})
# A `bytearray` value is stored as the object itself (JsonPlusSerializer's `dumps_typed`
# returns `("bytearray", obj)`, format.md §11), which protocol 2 pickles as
# `bytearray(_codecs.encode(<latin-1 str>, "latin1"))`. It maps to a stub like `bytes`.
_BYTEARRAY: Final = frozenset({("__builtin__", "bytearray"), ("builtins", "bytearray")})


class Refused(dict[Any, Any]):
    """What a global outside the allowlist becomes: an empty, inert stand-in.

    One odd value must not make a whole folder unreadable, so instead of stopping the load
    the unpickler hands back this class for the global: REDUCE, NEWOBJ, INST and OBJ then
    build an empty Refused that ignores its arguments, and BUILD does nothing. The store
    shows the value as refused, names the global, and exits with the refused code.
    """

    global_name: str = ""
    built_on: Any  # set on the refused value a BUILD made (build_target)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __setstate__(self, state: Any) -> None:
        """BUILD on a refused object: nothing to build."""


def build_target(value: Refused) -> Any:
    """The object a BUILD was applied to, for the refused value that BUILD made of it
    (_BuildSafeUnpickler.load_build_refused); None for any other refused value. A dict's
    items (what the opcodes before the BUILD put in it, and after it) are the refused
    value's own, so a store can read the checkpoints of a thread whose dict a BUILD was
    on: nothing of the BUILD is applied, and the refusal is said."""
    return value.__dict__.get("built_on")


def refused_record(value: Refused) -> dict[str, Any]:
    """The marked record of a refused value (docs/json.md)."""
    return {"__ckpt__": "refused", "global": value.global_name}


def load_pickle(
    file: IO[bytes],
    *,
    source: str,
    refused: list[str] | None = None,
    counted: bool = True,
    top: list[str] | None = None,
) -> Any:
    """Unpickle one PersistentDict file into dicts, tuples, strings, numbers and None.

    Bytes values come back as `bytes`: protocol 2 stores them as
    `_codecs.encode(<latin-1 text>, "latin1")`, which the stub encodes (a `str` where a
    value goes is text, which LangGraph's serializer cannot load: check says so). A
    pickle written with protocol 3 or later holds real `bytes`, which pass through. The
    2 GB blobs file of a big dev folder (format.md §7.3) is read by the scan of lean.py,
    which leaves long values in the file.

    A global outside format.md §7.2's list, a persistent id, an odd call of an allowed stub
    or an object a BUILD opcode would set attributes of (_load_build_safe) becomes a
    `Refused` stand-in (its name added to `refused`); a whole file that is one raises
    RefusedGlobal, but for a BUILD on the file's dict, whose items are read. StoreCorrupt
    for a truncated or damaged stream. `source` names the file in messages.
    `counted=False` skips counting shared references (see expanded_size) for a file whose
    references are already known to be bounded: one the threads-only pass
    (ckpt.stores.pickle.lean) read whole. `top` gets the name of the refusal made of the
    file's own dict (a BUILD on it), which LangGraph's unpickler stops at.
    """
    if counted:
        _check_expansion(file, source)
    try:
        with (
            _unraisable_quiet(),
            collector_paused(),
            escapes_unwarned(),
            _memory_capped(_MEMORY_PER_BYTE * _size_of(file) + _MEMORY_FLOOR),
        ):
            loaded, refused_names = _load_build_safe(file, source)
    except (RefusedGlobal, StoreCorrupt):
        raise
    except MemoryError:
        # A length field claiming far more than the file holds (BINBYTES8 and friends).
        raise StoreCorrupt(f"{source}: pickle asks for more memory than it holds") from None
    except RecursionError:
        raise StoreCorrupt(f"{source}: pickle nests too deeply to be a checkpoint file") from None
    except Exception as exc:  # UnpicklingError, EOFError, TypeError from a bad REDUCE, ...
        detail = str(exc) or type(exc).__name__
        raise StoreCorrupt(f"{source}: truncated or corrupt pickle ({detail})") from None
    if isinstance(loaded, Refused) and isinstance(build_target(loaded), dict):
        if top is not None:
            top.append(loaded.global_name)
        loaded = dict(loaded)  # a BUILD on the file's dict: its items are read (build_target)
    elif isinstance(loaded, Refused):
        raise RefusedGlobal(
            f"refused to load {loaded.global_name} from {source}: only plain checkpoint dicts "
            "are read; nothing was run"
        )
    if refused is not None:
        refused.extend(refused_names)
    return loaded


def _load_build_safe(file: IO[bytes], source: str) -> tuple[Any, list[str]]:
    """The file unpickled by RestrictedUnpickler (CPython's C unpickler); if that stops at a
    BUILD opcode, by _BuildSafeUnpickler from the start again (what it loaded, and the
    refused names).

    No PersistentDict file holds a BUILD (format.md §7.2), but a hostile one can apply one
    to any object: CPython's BUILD sets attributes, which a dict, a tuple or a string do not
    have, so it stops the whole load, and one odd value would make the whole file unreadable.
    The pure-Python unpickler, whose BUILD can be replaced, reads such a file instead, making
    each BUILD's object a refused value. It is several times slower, so it reads only files
    the C one stopped on, up to the size `_check_expansion` scans; a larger one, or one it
    cannot read either, is reported with the C unpickler's error.
    """
    start = _tell(file)
    try:
        return _run(RestrictedUnpickler(file, source=source))
    except Exception as exc:
        if start is None or not _stopped_by_build(exc) or _size_of(file) > SCANNED_UP_TO:
            raise
        failed = exc
    file.seek(start)
    try:
        return _run(_BuildSafeUnpickler(file, source=source))
    except RefusedGlobal:  # too many refused names
        raise
    except Exception:
        raise failed from None


def _run(unpickler: RestrictedUnpickler | _BuildSafeUnpickler) -> tuple[Any, list[str]]:
    refused_names = unpickler.refused
    try:
        return unpickler.load(), refused_names
    finally:
        # Freed here, under the quiet hook: a load that failed half-way may free a
        # buffer it exported (BYTEARRAY8 with a huge length), which CPython reports
        # as an "unraisable" SystemError on stderr, beside ckpt's own one line.
        del unpickler


def _stopped_by_build(exc: Exception) -> bool:
    """Whether the C unpickler's error may come from a BUILD: setting an attribute of an
    object that has none (AttributeError, TypeError), a state that is not a dict, or BUILD
    on one of the stubs (_BuildRefused). Other errors (truncation) are not retried."""
    if isinstance(exc, AttributeError | TypeError | _BuildRefused):
        return True
    return isinstance(exc, pickle.UnpicklingError) and "state is not a dictionary" in str(exc)


def _tell(file: IO[bytes]) -> int | None:
    try:
        return file.tell() if file.seekable() else None
    except (OSError, ValueError):
        return None


@contextmanager
def _unraisable_quiet() -> Iterator[None]:
    """No lines of CPython's own on stderr while a pickle loads ("Exception ignored in",
    "SystemError: deallocated bytearray object has exported buffers"): the error a damaged
    file gets is ckpt's one line (issue 29)."""
    # CPython reports a bytearray freed with an exported buffer by PyErr_Print, which
    # calls sys.excepthook; other errors in deallocators go to sys.unraisablehook.
    previous = sys.unraisablehook, sys.excepthook
    sys.unraisablehook = lambda unraisable: None
    sys.excepthook = lambda kind, value, trace: None
    try:
        yield
    finally:
        sys.unraisablehook, sys.excepthook = previous


# A pickle's objects, counted as if every memo reference were a copy, may be this many
# times the file's size (plus the floor) before the file is refused as too large.
EXPANSION_PER_BYTE: Final = 64
EXPANSION_FLOOR: Final = 1_000_000
SCANNED_UP_TO: Final = 256 << 20  # larger files are blob files, read through pickle_index

_POPS: Final = {
    **{"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3, "APPEND": 1, "SETITEM": 2, "BUILD": 1},
    **{"REDUCE": 1, "NEWOBJ": 1, "NEWOBJ_EX": 2, "STACK_GLOBAL": 1, "BINPERSID": 0},
}
_TO_MARK: Final = frozenset({"TUPLE", "LIST", "DICT", "FROZENSET", "INST", "OBJ"})
_INTO_TOP: Final = frozenset({"APPENDS", "SETITEMS", "ADDITEMS"})
_MEMO_PUT: Final = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"})
_MEMO_GET: Final = frozenset({"GET", "BINGET", "LONG_BINGET"})
_NO_PUSH: Final = frozenset({"PROTO", "FRAME", "STOP", "READONLY_BUFFER"})


def expanded_size(data: bytes, limit: int) -> int:
    """How many objects the pickle would build if every memo reference (GET) were a copy,
    counted up to `limit`, from its opcodes alone (nothing is built).

    Two shared references per level make a file of n bytes stand for 2**n objects: a
    tuple of two copies of the previous tuple, 60 times over, used as a dict key, makes
    the C unpickler hash 2**60 tuples (a hash bomb), and printing such a value writes
    2**n items. Counting copies bounds both. Malformed streams stop the count where they
    go wrong (the unpickler then reports them)."""
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[int, int] = {}
    biggest = 0
    try:
        for _, name, arg in pickle_ops(data):
            if name == "MARK":
                marks.append(len(stack))
            elif name in _TO_MARK or name in _INTO_TOP or name == "POP_MARK":
                start = marks.pop() if marks else 0
                total = sum(stack[start:])
                del stack[start:]
                if name in _INTO_TOP:
                    if stack:
                        stack[-1] = min(stack[-1] + total, limit)
                elif name != "POP_MARK":
                    stack.append(min(1 + total, limit))
            elif name in _POPS:
                count = _POPS[name]
                total = sum(stack[-count:]) if count and stack else 0
                if count:
                    del stack[-count:]
                if name in ("APPEND", "SETITEM", "BUILD"):
                    if stack:
                        stack[-1] = min(stack[-1] + total, limit)
                elif name in ("REDUCE", "NEWOBJ", "NEWOBJ_EX"):
                    if stack:
                        stack[-1] = min(stack[-1] + total, limit)
                else:  # TUPLE1-3, STACK_GLOBAL, BINPERSID: one object from `count`
                    stack.append(min(1 + total, limit))
            elif name in _MEMO_PUT:
                index = len(memo) if name == "MEMOIZE" else int(arg or 0)
                if index > len(data):
                    # CPython's C unpickler sizes its memo array from the index (twice
                    # it, 8 bytes each): one LONG_BINPUT of 2**24 costs 268 MB whatever
                    # the file's size. Each entry takes a PUT of 2 bytes or more, so a
                    # file of n bytes numbers fewer than n of them.
                    raise MemoIndexTooLarge(index)
                if stack:
                    memo[index] = stack[-1]
            elif name in _MEMO_GET:
                stack.append(memo.get(int(arg or 0), 1))
            elif name == "POP":
                if stack:
                    stack.pop()
            elif name == "DUP":
                if stack:
                    stack.append(stack[-1])
            elif name not in _NO_PUSH:
                stack.append(1)
            if stack and stack[-1] > biggest:
                biggest = stack[-1]
                if biggest >= limit:
                    return limit
    except (ValueError, EOFError, KeyError, IndexError, TypeError, struct.error):
        pass
    return biggest


class MemoIndexTooLarge(Exception):
    """A memo index (PUT, BINPUT, LONG_BINPUT) larger than the file (expanded_size)."""


def _check_expansion(file: IO[bytes], source: str) -> None:
    if _size_of(file) > SCANNED_UP_TO:
        return
    try:
        start = file.tell()
        data = file.read()
        file.seek(start)
    except (OSError, ValueError, io.UnsupportedOperation):
        return
    limit = EXPANSION_FLOOR + EXPANSION_PER_BYTE * len(data)
    try:
        expanded = expanded_size(data, limit)
    except MemoIndexTooLarge as exc:
        raise StoreCorrupt(
            f"{source}: truncated or corrupt pickle (memo index {exc.args[0]:,} in a file "
            f"of {len(data):,} bytes)"
        ) from None
    if expanded >= limit:
        raise StoreCorrupt(
            f"{source}: too large to read: its shared references stand for more than "
            f"{limit:,} objects ({len(data):,} bytes; a pickle bomb?)"
        )


class _Allowlist:
    """`find_class` allows exactly the globals above; persistent ids are refused.

    Every way a pickle builds an object goes through one of these two methods: GLOBAL,
    STACK_GLOBAL and the EXT opcodes call `find_class`, REDUCE/NEWOBJ/BUILD/INST/OBJ only
    act on what it returned, and PERSID/BINPERSID call `persistent_load`. So a stream can
    make dicts, defaultdicts, tuples, lists, sets, strings and numbers, and nothing else.
    Shared by both unpicklers below.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.refused: list[str] = []
        self._stand_ins: dict[str, type[Refused]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == _ENCODE:
            return _EncodeLatin1(self)
        if (module, name) in _BYTES:
            return _EmptyBytes(self)
        if (module, name) in _BYTEARRAY:
            return _Bytearray(self)
        found = _CLASSES.get((module, name))
        if found is None:
            return self.stand_in(f"{_printable(module)}.{_printable(name)}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        return self.stand_in("a persistent object reference")()

    def stand_in(self, what: str) -> type[Refused]:
        """The Refused class for one refused global (built once per name; only the name,
        a string, goes into it)."""
        self.refused.append(f"{what} (in {os.path.basename(self.source)})")
        stand_in = self._stand_ins.get(what)
        if stand_in is None:
            if len(self._stand_ins) >= _MAX_REFUSED_NAMES:
                raise RefusedGlobal(
                    f"refused to load {what} from {self.source}: too many refused globals "
                    "to be a checkpoint file; nothing was run"
                )
            stand_in = type("Refused", (Refused,), {"global_name": what})
            self._stand_ins[what] = stand_in
        return stand_in


class RestrictedUnpickler(pickle.Unpickler):
    """CPython's C unpickler with the globals of _Allowlist only.

    Read from a file, not from memory: a length field that claims more than the file holds
    then reads what is there and fails as truncation, and nothing is held twice.
    """

    def __init__(self, file: IO[bytes], *, source: str) -> None:
        super().__init__(file)
        self.allowed = _Allowlist(source)
        self.refused = self.allowed.refused

    def find_class(self, module: str, name: str) -> Any:
        return self.allowed.find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self.allowed.persistent_load(pid)


def _replacing(load: Callable[[Any], None]) -> Callable[[Any], None]:
    """A GET opcode of _BuildSafeUnpickler: the refused value of an object a BUILD refused."""

    def get(self: _BuildSafeUnpickler) -> None:
        load(self)
        if self.replaced:
            found = self.replaced.get(id(self.stack[-1]))
            if found is not None and found[0] is self.stack[-1]:
                self.stack[-1] = found[1]

    return get


class _BuildSafeUnpickler(pickle._Unpickler):
    """The pure-Python unpickler with the same globals, whose BUILD sets nothing: it makes
    the object a refused value (see _load_build_safe). Only for files the C one stopped on."""

    stack: list[Any]

    def __init__(self, file: IO[bytes], *, source: str) -> None:
        super().__init__(file)
        self.allowed = _Allowlist(source)
        self.refused = self.allowed.refused
        # id(object) -> (the object, the refused value a BUILD made of it): a memo
        # reference (GET) to a refused object gives its refused value too.
        self.replaced: dict[int, tuple[Any, Refused]] = {}

    def find_class(self, module: str, name: str) -> Any:
        return self.allowed.find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self.allowed.persistent_load(pid)

    def load_build_refused(self) -> None:
        """BUILD: a state with nothing in it (what CPython's BUILD leaves unchanged too)
        does nothing, as does any BUILD on a refused value; any other replaces its object,
        on the stack and where the memo refers to it, by a refused value naming it. No
        attribute of anything is set."""
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, Refused):
            return
        slots = None
        if type(state) is tuple and len(state) == 2:
            state, slots = state
        if _empty_state(state) and _empty_state(slots):
            return
        what = "BUILD slot state" if slots else "BUILD state"
        refused = self.allowed.stand_in(f"{what} on {_described(inst)}")()
        refused.built_on = inst  # see build_target
        if isinstance(inst, dict):
            refused.update(inst)
        self.replaced[id(inst)] = (inst, refused)
        self.stack[-1] = refused

    def load_reduce_built(self) -> None:
        """REDUCE, on the callable and arguments as they were built before any BUILD on
        them (built): a BUILD on a call's arguments stopped the whole file before."""
        args = built(self.stack.pop())
        func = built(self.stack[-1])
        if isinstance(func, Refused) and not isinstance(func, type):
            return  # a refused value where the callable goes: it stays, as the result
        self.stack[-1] = func(*args)

    def load_newobj_built(self) -> None:
        """NEWOBJ, `cls.__new__(cls, *args)`, as REDUCE (load_reduce_built)."""
        args = built(self.stack.pop())
        cls = built(self.stack[-1])
        if isinstance(cls, Refused) and not isinstance(cls, type):
            return
        self.stack[-1] = cls.__new__(cls, *args)

    def load_setitem_built(self) -> None:
        """SETITEM under the key as it was built (built): a refused value is a dict,
        which cannot be a key."""
        value = self.stack.pop()
        key = self.stack.pop()
        self.stack[-1][built(key)] = value

    def load_setitems_built(self) -> None:
        items = cast("Any", self).pop_mark()  # pickle._Unpickler's, not in its stubs
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[built(items[i])] = items[i + 1]

    dispatch = {
        **pickle._Unpickler.dispatch,
        pickle.BUILD[0]: cast("Callable[[pickle.Unpickler], None]", load_build_refused),
        pickle.REDUCE[0]: cast("Callable[[pickle.Unpickler], None]", load_reduce_built),
        pickle.NEWOBJ[0]: cast("Callable[[pickle.Unpickler], None]", load_newobj_built),
        pickle.SETITEM[0]: cast("Callable[[pickle.Unpickler], None]", load_setitem_built),
        pickle.SETITEMS[0]: cast("Callable[[pickle.Unpickler], None]", load_setitems_built),
        **{
            opcode[0]: _replacing(pickle._Unpickler.dispatch[opcode[0]])
            for opcode in (pickle.GET, pickle.BINGET, pickle.LONG_BINGET)
        },
    }


def _empty_state(state: Any) -> bool:
    """A BUILD state with nothing in it: None or an empty dict, not a refused value (an
    empty dict too, which a global outside the allowlist became: its BUILD is refused)."""
    return state is None or (state == {} and not isinstance(state, Refused))


def built(value: Any) -> Any:
    """`value` as the opcodes built it before a BUILD on it was refused: the object that
    BUILD was on (build_target), in tuples too. Where a refused value cannot stand (a dict
    key, the callable and arguments of an allowed call, an id) the object as it was built
    is used; nothing of the BUILD is, and the refusal is said all the same."""
    if isinstance(value, Refused):
        target = build_target(value)
        return value if target is None else built(target)
    if type(value) is tuple and any(isinstance(part, Refused) for part in value):
        return tuple(built(part) for part in value)
    return value


def _is_latin1(encoding: Any) -> bool:
    """Whether an encoding argument is latin-1's name (a refused value, a dict, is not
    hashed)."""
    return isinstance(encoding, str) and encoding in LATIN1


def _described(value: Any) -> str:
    """What a BUILD was applied to, for the refused value's name."""
    if isinstance(value, _Stub):
        return value.name
    if isinstance(value, type):
        if issubclass(value, Refused):
            return value.global_name
        return f"{_printable(value.__module__)}.{_printable(value.__qualname__)}"
    if isinstance(value, _DefaultDict):
        return "a defaultdict"  # ckpt's own stand-in (_DefaultDict) is not the data's name
    return f"a {type(value).__name__}"


class _BuildRefused(Exception):
    """A BUILD on a stub, which stops the C unpickler (see _Stub)."""


class _Stub:
    """The stand-in for a callable format.md §7.2 names, as find_class gives it.

    An object of its own rather than a bound method: BUILD with a dict state on a bound
    method writes into its function's `__dict__` (one of ckpt's own functions), so a stub
    has no `__dict__`, and a `__setstate__` that stops the C unpickler, for the build-safe
    one to read the file (_load_build_safe).
    """

    __slots__ = ("allowed",)
    name: ClassVar[str] = ""

    def __init__(self, allowed: _Allowlist) -> None:
        self.allowed = allowed

    def __setstate__(self, state: Any) -> None:
        raise _BuildRefused(self.name)


class _EncodeLatin1(_Stub):
    """Stands in for `_codecs.encode`: only the `(str, "latin1")` call protocol 2 writes.

    Returns the bytes (see load_pickle); text that is not latin-1 stays text, which no
    reader takes for bytes.
    """

    __slots__ = ()
    name: ClassVar[str] = "_codecs.encode"

    def __call__(self, text: Any, encoding: Any = None, *rest: Any) -> str | bytes | Refused:
        if rest or not isinstance(text, str) or not _is_latin1(encoding):
            shown = encoding if isinstance(encoding, str) else type(encoding).__name__
            return self.allowed.stand_in(f"_codecs.encode(..., {_printable(shown)!r})")()
        return _encoded(text)


class _EmptyBytes(_Stub):
    """Stands in for `bytes`: only the argument-less `bytes()` protocol 2 writes for b""."""

    __slots__ = ()
    name: ClassVar[str] = "bytes"

    def __call__(self, *args: Any) -> bytes | Refused:
        if args:
            return self.allowed.stand_in("bytes(...) with arguments")()  # bytes(n): n bytes
        return b""


class _Bytearray(_Stub):
    """Stands in for `bytearray`: `bytearray()`, `bytearray(<bytes>)` as protocol 2
    writes it (the bytes come from the `_codecs.encode` stub, as latin-1 text) and
    protocol 3+ (real bytes), or `bytearray(<str>, "latin-1")`. Like bytes values, it
    comes back as bytes."""

    __slots__ = ()
    name: ClassVar[str] = "bytearray"

    def __call__(self, *args: Any) -> str | bytes | Refused:
        if not args:
            return b""
        if len(args) == 1 and isinstance(args[0], bytes):
            return args[0]
        if len(args) == 2 and isinstance(args[0], str) and _is_latin1(args[1]):
            return _encoded(args[0])
        return self.allowed.stand_in("bytearray(...) with other arguments")()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic GC while a file loads: it holds millions of small tuples, which the
    collector would otherwise walk again and again (half the time of loading a writes file)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# What unpickling may allocate: a real PersistentDict file becomes a few times its size in
# Python objects (strings, tuples, dicts), so this leaves a wide margin.
_MEMORY_PER_BYTE: Final = 8
_MEMORY_FLOOR: Final = 1 << 30


@contextmanager
def _memory_capped(budget: int) -> Iterator[None]:
    """Cap the process's data segment while a file unpickles, where the OS supports it.

    CPython's C unpickler sizes its memo array from the index a LONG_BINPUT names, and
    zero-fills it: the 10-byte stream `80 02 4e 72 00 00 00 10 2e` makes it allocate and
    write 4 GB (and a larger index, 32 GB). A length field (BINBYTES8, FRAME) makes it
    allocate what it claims before reading. Under the cap those fail at once as
    MemoryError, which load_pickle reports as a corrupt file. Linux counts anonymous
    mappings in RLIMIT_DATA; elsewhere this does nothing. The CLI is single-threaded, so
    the cap covers only this load and is lifted after it.
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        used = _data_segment_size()
    except (ImportError, OSError, ValueError):
        used = None
    if used is None:
        yield
        return
    cap = used + budget
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY and soft <= cap:
        yield  # already as strict
        return
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _data_segment_size() -> int | None:
    """VmData of this process in bytes (Linux), or None."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _size_of(file: IO[bytes]) -> int:
    try:
        return os.fstat(file.fileno()).st_size
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return 0


def _encoded(text: str) -> str | bytes:
    """`text.encode("latin1")`, or the text itself where that fails (which Python's own
    `_codecs.encode` would raise on: no reader takes a str for bytes)."""
    try:
        return text.encode("latin1")
    except UnicodeEncodeError:
        return text


def latin1_bytes(value: str | bytes) -> bytes:
    """The bytes a value from load_pickle stands for; ValueError if it cannot be bytes."""
    if isinstance(value, bytes):
        return value
    try:
        return value.encode("latin1")
    except UnicodeEncodeError:
        raise ValueError("a stored bytes value is not latin-1 text") from None


_MAX_REFUSED_NAMES: Final = 100  # distinct refused globals before a file counts as hostile


def _printable(text: str) -> str:
    """Names from a hostile stream go into a one-line message: no control characters."""
    cut = text[:80] + ("..." if len(text) > 80 else "")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in cut)
