"""A restricted unpickler that reads PersistentDict files as plain dicts and runs nothing."""

from __future__ import annotations

import collections
import gc
import io
import os
import pickle
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

from ckpt.errors import RefusedGlobal, StoreCorrupt

# The only globals a PersistentDict file names (FORMAT 7.2, verified with pickletools on
# current and checkpoint 2.0.21 files): the per-thread `defaultdict(dict)`, and its factory
# under its Python 2 name (protocol 2) or its Python 3 name.
_CLASSES: Final[dict[tuple[str, str], Any]] = {
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "dict"): dict,
    ("builtins", "dict"): dict,
}
# Protocol 2 has no bytes opcode: it writes every non-empty `bytes` value as
# `_codecs.encode(<latin-1 str>, "latin1")` (FORMAT 7.2), which maps to a stub below.
_ENCODE: Final = ("_codecs", "encode")
_LATIN1: Final = frozenset({"latin1", "latin-1"})
# ...and an *empty* bytes value as `bytes()` under its Python 2 name. FORMAT 7.2 does not
# list it because the single-file storage pickle rarely holds one, but the writes and blobs
# files of FORMAT 7.3 hold many: every `("empty", b"")` placeholder and `("null", b"")`
# value. It maps to a stub that takes no argument, since `bytes(n)` allocates n bytes.
_BYTES: Final = frozenset({("__builtin__", "bytes"), ("builtins", "bytes")})
# A `bytearray` value is stored as the object itself (JsonPlusSerializer's `dumps_typed`
# returns `("bytearray", obj)`, FORMAT 11), which protocol 2 pickles as
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __setstate__(self, state: Any) -> None:
        """BUILD on a refused object: nothing to build."""


def refused_record(value: Refused) -> dict[str, Any]:
    """The marked record of a refused value (docs/json.md)."""
    return {"__ckpt__": "refused", "global": value.global_name}


def load_pickle(file: IO[bytes], *, source: str, refused: list[str] | None = None) -> Any:
    """Unpickle one PersistentDict file into dicts, tuples, strings, numbers and None.

    **Bytes values come back as `str`**, one character per byte (their latin-1 text, which
    is what protocol 2 stores): `.encode("latin1")` gives the bytes. This keeps a 2 GB
    blobs file (FORMAT 7.3) from being held twice in memory, and makes each value cost
    exactly its size even when a hostile file memo-fetches one large string many times.
    A pickle written with protocol 3 or later holds real `bytes`, which pass through.

    A global outside FORMAT 7.2's list, a persistent id or an odd call of an allowed stub
    becomes a `Refused` stand-in (its name added to `refused`); a whole file that is one
    raises RefusedGlobal. StoreCorrupt for a truncated or damaged stream. `source` names
    the file in messages.
    """
    unpickler = RestrictedUnpickler(file, source=source)
    try:
        with _collector_paused(), _memory_capped(_MEMORY_PER_BYTE * _size_of(file) + _MEMORY_FLOOR):
            loaded = unpickler.load()
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
    if isinstance(loaded, Refused):
        raise RefusedGlobal(
            f"refused to load {loaded.global_name} from {source}: only plain checkpoint dicts "
            "are read; nothing was run"
        )
    if refused is not None:
        refused.extend(unpickler.refused)
    return loaded


class RestrictedUnpickler(pickle.Unpickler):
    """`find_class` allows exactly the globals above; persistent ids are refused.

    Every way a pickle builds an object goes through one of these two methods: GLOBAL,
    STACK_GLOBAL and the EXT opcodes call `find_class`, REDUCE/NEWOBJ/BUILD/INST/OBJ only
    act on what it returned, and PERSID/BINPERSID call `persistent_load`. So a stream can
    make dicts, defaultdicts, tuples, lists, sets, strings and numbers, and nothing else.
    Read from a file, not from memory: a length field that claims more than the file holds
    then reads what is there and fails as truncation, and nothing is held twice.
    """

    def __init__(self, file: IO[bytes], *, source: str) -> None:
        super().__init__(file)
        self.source = source
        self.refused: list[str] = []
        self._stand_ins: dict[str, type[Refused]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == _ENCODE:
            return self._encode_latin1
        if (module, name) in _BYTES:
            return self._empty_bytes
        if (module, name) in _BYTEARRAY:
            return self._bytearray
        found = _CLASSES.get((module, name))
        if found is None:
            return self._stand_in(f"{_printable(module)}.{_printable(name)}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        return self._stand_in("a persistent object reference")()

    def _stand_in(self, what: str) -> type[Refused]:
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

    def _encode_latin1(self, text: Any, encoding: Any = None, *rest: Any) -> str | Refused:
        """Stands in for `_codecs.encode`: only the `(str, "latin1")` call protocol 2 writes.

        Returns the text itself (see load_pickle): encoding it would copy every value.
        """
        if rest or not isinstance(text, str) or encoding not in _LATIN1:
            shown = encoding if isinstance(encoding, str) else type(encoding).__name__
            return self._stand_in(f"_codecs.encode(..., {_printable(shown)!r})")()
        return text

    def _empty_bytes(self, *args: Any) -> str | Refused:
        """Stands in for `bytes`: only the argument-less `bytes()` protocol 2 writes for b""."""
        if args:
            return self._stand_in("bytes(...) with arguments")()  # bytes(n) allocates n bytes
        return ""

    def _bytearray(self, *args: Any) -> str | bytes | Refused:
        """Stands in for `bytearray`: `bytearray()`, `bytearray(<bytes>)` as protocol 2
        writes it (the bytes come from the `_codecs.encode` stub, as latin-1 text) and
        protocol 3+ (real bytes), or `bytearray(<str>, "latin-1")`. Like bytes values, it
        comes back as its latin-1 text (or the bytes themselves)."""
        if not args:
            return ""
        if len(args) == 1 and isinstance(args[0], str | bytes):
            return args[0]
        if len(args) == 2 and isinstance(args[0], str) and args[1] in _LATIN1:
            return args[0]
        return self._stand_in("bytearray(...) with other arguments")()


@contextmanager
def _collector_paused() -> Iterator[None]:
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


# -- the blobs file: index it, leave the values in the file ----------------------------------

# A bytes value the scanner left in the file: `slice(start, stop)` of file offsets of its
# latin-1 text, UTF-8 encoded (what BINUNICODE stores). slice is a builtin, so making one
# per value costs little, and its `stop - start` is the value's size in the file.
StoredText = slice

_CHUNK: Final = 1 << 16  # bytes read at a time while scanning
_SLACK: Final = 512  # longest fixed-size opcode plus a GLOBAL's two name lines
_MAX_NAME: Final = 1 << 20  # a key string longer than this is not a PersistentDict key
_U32: Final = struct.Struct("<I")
_I32: Final = struct.Struct("<i")
_U16: Final = struct.Struct("<H")
_ENCODE_MARK: Final = object()
_BYTES_MARK: Final = object()


class _Unsupported(Exception):
    """The stream uses something the scanner does not handle: use the full unpickler."""


class PickleFile:
    """One PersistentDict file, opened once; bytes values can stay in it until needed.

    `load()` reads a dict whose bytes values are StoredText slices, read later with
    `read()`. The `langgraph dev` blobs file holds every channel value of every checkpoint
    (1.7 GB for 100,000 checkpoints of a growing chat, FORMAT 7.3); listing threads needs
    only each value's type tag and size, so unpickling it all, which turns every value into
    a string held in memory, would cost most of the time and memory of `ckpt threads`.
    """

    def __init__(self, path: str, *, source: str) -> None:
        self.path = path
        self.source = source
        self.fd = os.open(path, os.O_RDONLY)

    def load(self, refused: list[str] | None = None) -> Any:
        """The unpickled object: scanned when the stream is the plain protocol 2 shape
        PersistentDict writes for the blobs and writes dicts, else unpickled (restricted;
        the names of refused globals go into `refused`)."""
        try:
            with _collector_paused():
                return self._scan()
        except Exception:  # the scanner only builds plain data, so any surprise
            pass  # means not the plain shape, and the restricted unpickler reads it or says why
        # The same open file, not the path again: the dev server replaces its files by
        # renaming a new one over the old (FORMAT 7.2), and offsets must match what we read.
        with open(os.dup(self.fd), "rb") as handle:
            return load_pickle(handle, source=self.source, refused=refused)

    def read(self, span: StoredText) -> bytes:
        """The bytes a StoredText stands for; ValueError if the file no longer holds them."""
        length = span.stop - span.start
        data = os.pread(self.fd, length, span.start)
        if len(data) != length:
            raise ValueError("the file changed since it was read")
        try:
            return data.decode("utf-8", "surrogatepass").encode("latin1")
        except UnicodeError:
            raise ValueError("a stored bytes value is not latin-1 text") from None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _scan(self) -> Any:
        """A pickle machine for the opcodes protocol 2 writes for dicts of tuples of str,
        int, None and bytes; anything else raises _Unsupported.

        It only ever builds dicts, tuples, strings, ints and slices; there is nothing in
        it that can call or import. The payload of `_codecs.encode(<str>, "latin1")` is
        skipped, not read: it becomes a StoredText. One loop with the opcodes in order of
        frequency: this runs ~3 million times for a 100,000-checkpoint blobs file.
        """
        fd = self.fd
        pread = os.pread
        u32, i32, u16 = _U32.unpack_from, _I32.unpack_from, _U16.unpack_from
        base = 0  # file offset of buf[0]
        buf = pread(fd, _CHUNK, 0)
        if buf[:2] != b"\x80\x02":
            raise _Unsupported("not protocol 2")
        pos = 2
        limit = len(buf) - _SLACK
        memo: dict[int, Any] = {}
        stack: list[Any] = []
        marks: list[int] = []
        push = stack.append
        while True:
            if pos > limit:
                base += pos
                buf = pread(fd, _CHUNK, base)
                pos = 0
                limit = len(buf) - _SLACK
                if not buf:
                    raise _Unsupported("truncated")
            op = buf[pos]
            pos += 1
            if op == 0x68:  # BINGET
                push(memo[buf[pos]])
                pos += 1
            elif op == 0x72:  # LONG_BINPUT
                memo[u32(buf, pos)[0]] = stack[-1]
                pos += 4
            elif op == 0x6A:  # LONG_BINGET
                push(memo[u32(buf, pos)[0]])
                pos += 4
            elif op == 0x58:  # BINUNICODE
                size = u32(buf, pos)[0]
                pos += 4
                if stack and stack[-1] is _ENCODE_MARK:
                    push(slice(base + pos, base + pos + size))  # a bytes value: skip it
                else:
                    if pos + size > len(buf):
                        if size > _MAX_NAME:
                            raise _Unsupported("long string")
                        base += pos
                        buf = pread(fd, size + _CHUNK, base)
                        pos = 0
                        limit = len(buf) - _SLACK
                        if len(buf) < size:
                            raise _Unsupported("truncated")
                    push(buf[pos : pos + size].decode("utf-8", "surrogatepass"))
                pos += size
            elif op == 0x86:  # TUPLE2
                last = stack.pop()
                stack[-1] = (stack[-1], last)
            elif op == 0x28:  # MARK
                marks.append(len(stack))
            elif op == 0x74:  # TUPLE
                start = marks.pop()
                built = tuple(stack[start:])
                del stack[start:]
                push(built)
            elif op == 0x71:  # BINPUT
                memo[buf[pos]] = stack[-1]
                pos += 1
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                func = stack.pop()
                if func is _ENCODE_MARK and len(args) == 2 and args[1] in _LATIN1:
                    push(args[0])  # the StoredText (or str) stands for the bytes
                elif func is _BYTES_MARK and args == ():
                    push("")
                else:
                    raise _Unsupported("REDUCE")
            elif op == 0x75:  # SETITEMS
                start = marks.pop()
                target = stack[start - 1] if start else None
                if type(target) is not dict:
                    raise _Unsupported("SETITEMS")
                items = stack[start:]
                del stack[start:]
                target.update(zip(items[::2], items[1::2], strict=True))
            elif op == 0x4B:  # BININT1
                push(buf[pos])
                pos += 1
            elif op == 0x7D:  # EMPTY_DICT
                push({})
            elif op == 0x29:  # EMPTY_TUPLE
                push(())
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x87:  # TUPLE3
                third = stack.pop()
                second = stack.pop()
                stack[-1] = (stack[-1], second, third)
            elif op == 0x4E:  # NONE
                push(None)
            elif op == 0x4A:  # BININT
                push(i32(buf, pos)[0])
                pos += 4
            elif op == 0x4D:  # BININT2
                push(u16(buf, pos)[0])
                pos += 2
            elif op == 0x73:  # SETITEM
                value = stack.pop()
                key = stack.pop()
                if type(stack[-1]) is not dict:
                    raise _Unsupported("SETITEM")
                stack[-1][key] = value
            elif op == 0x63:  # GLOBAL: only the two the bytes values need
                end = buf.find(b"\n", pos, pos + _SLACK)
                stop = buf.find(b"\n", end + 1, pos + _SLACK)
                if end < 0 or stop < 0:
                    raise _Unsupported("GLOBAL")
                name = (buf[pos:end], buf[end + 1 : stop])
                pos = stop + 1
                if name == (b"_codecs", b"encode"):
                    push(_ENCODE_MARK)
                elif name in _BYTES_NAMES:
                    push(_BYTES_MARK)
                else:
                    raise _Unsupported("GLOBAL")  # the unpickler refuses it by name
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or marks:
                    raise _Unsupported("STOP")
                return stack[0]
            else:
                raise _Unsupported(f"opcode {op:#x}")


_BYTES_NAMES: Final = frozenset({(b"__builtin__", b"bytes"), (b"builtins", b"bytes")})
