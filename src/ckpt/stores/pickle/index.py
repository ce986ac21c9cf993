"""Index a protocol-2 PersistentDict file without unpickling it: bytes values stay in the file.

Used for the `langgraph dev` blobs file (format.md §7.3). The scanner builds plain data only;
any stream it does not handle is read by the restricted unpickler (ckpt.stores.pickle.unpickler).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Final

from ckpt.stores.pickle.unpickler import LATIN1, collector_paused, load_pickle


class StoredText(int):
    """A bytes value a scanner left in the file: where its latin-1 text, UTF-8 encoded (what
    BINUNICODE stores), starts, how many bytes of the file it takes, and how many bytes it
    stands for (its characters), packed in one int. One 56-byte object per value, where a
    slice of three ints took 150: a dev folder's index holds one per stored value. No
    unpickler builds one, so a StoredText is always a scanner's span, never data."""

    __slots__ = ()

    @classmethod
    def of(cls, start: int, size: int, chars: int | None = None) -> StoredText:
        """`chars` unknown (the blobs file, whose text is not decoded): its size in the file."""
        return cls(start << 64 | size << 32 | (size if chars is None else chars))

    @property
    def start(self) -> int:
        return int(self) >> 64

    @property
    def size(self) -> int:
        """Bytes of its text in the file."""
        return (int(self) >> 32) & 0xFFFFFFFF

    @property
    def chars(self) -> int:
        """Bytes it stands for, when the scanner counted them (else its size in the file)."""
        return int(self) & 0xFFFFFFFF


CHUNK: Final = 1 << 16  # bytes read at a time while scanning
SLACK: Final = 512  # longest fixed-size opcode plus a GLOBAL's two name lines
MAX_NAME: Final = 1 << 20  # a key string longer than this is not a PersistentDict key
SHARED_BYTES: Final = 64  # bytes values up to this long are read as text, not left in the file
U32: Final = struct.Struct("<I")
I32: Final = struct.Struct("<i")
U16: Final = struct.Struct("<H")
_ENCODE_MARK: Final = object()
_BYTES_MARK: Final = object()


class Namespaces(dict[Any, Any]):
    """A thread's `defaultdict(dict)` of the storage file: namespace -> Summary or None."""


@dataclass(frozen=True, slots=True)
class Summary:
    """One (thread, namespace) of the storage dict: its count, first and latest entries.

    The first entry is kept because the store checks it for inline channel values
    (checkpoint 2.0.21 and older); latest is the max checkpoint id, as
    InMemorySaver.get_tuple picks it (format.md §3.3). Their bytes are spans of the file.
    """

    count: int
    first: tuple[str, Any]
    latest: tuple[str, Any]


class Unsupported(Exception):
    """The stream uses something the scanner does not handle: use the full unpickler."""


class PickleFile:
    """One PersistentDict file, opened once; bytes values can stay in it until needed.

    `load()` reads a dict whose bytes values are StoredTexts, read later with
    `read()`. The `langgraph dev` blobs file holds every channel value of every checkpoint
    (1.7 GB for 100,000 checkpoints of a growing chat, format.md §7.3); listing threads needs
    only each value's type tag and size, so unpickling it all, which turns every value into
    a string held in memory, would cost most of the time and memory of `ckpt threads`.
    """

    def __init__(self, path: str, *, source: str, fd: int | None = None) -> None:
        """`fd`: the file, already open (this object then owns and closes it)."""
        self.path = path
        self.source = source
        self.fd = os.open(path, os.O_RDONLY) if fd is None else fd

    def load(self, refused: list[str] | None = None) -> Any:
        """The unpickled object: scanned when the stream is the plain protocol 2 shape
        PersistentDict writes for the blobs and writes dicts, else unpickled (restricted;
        the names of refused globals go into `refused`)."""
        try:
            with collector_paused():
                return self._scan()
        except Exception:  # the scanner only builds plain data, so any surprise
            pass  # means not the plain shape, and the restricted unpickler reads it or says why
        # The same open file, not the path again: the dev server replaces its files by
        # renaming a new one over the old (format.md §7.2), and offsets must match what we read.
        with open(os.dup(self.fd), "rb") as handle:
            return load_pickle(handle, source=self.source, refused=refused)

    def read(self, span: StoredText) -> bytes:
        """The bytes a StoredText stands for; ValueError if the file no longer holds them."""
        length = span.size
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
        int, None and bytes; anything else raises Unsupported.

        It only ever builds dicts, tuples, strings, ints and StoredTexts; there is nothing in
        it that can call or import. The payload of `_codecs.encode(<str>, "latin1")` is
        skipped, not read: it becomes a StoredText. One loop with the opcodes in order of
        frequency: this runs ~3 million times for a 100,000-checkpoint blobs file.
        """
        fd = self.fd
        pread = os.pread
        u32, i32, u16 = U32.unpack_from, I32.unpack_from, U16.unpack_from
        base = 0  # file offset of buf[0]
        buf = pread(fd, CHUNK, 0)
        if buf[:2] != b"\x80\x02":
            raise Unsupported("not protocol 2")
        pos = 2
        limit = len(buf) - SLACK
        # The memo as a list: the pickler numbers its puts 0, 1, 2... in order, so each
        # put appends. A dict of int keys cost ~60 bytes an entry (the blobs file of a dev
        # folder puts ~5 per value); a list slot costs 8. Any other numbering: Unsupported.
        memo: list[Any] = []
        remember = memo.append
        stack: list[Any] = []
        marks: list[int] = []
        push = stack.append
        while True:
            if pos > limit:
                base += pos
                buf = pread(fd, CHUNK, base)
                pos = 0
                limit = len(buf) - SLACK
                if not buf:
                    raise Unsupported("truncated")
            op = buf[pos]
            pos += 1
            if op == 0x68:  # BINGET
                push(memo[buf[pos]])
                pos += 1
            elif op == 0x72:  # LONG_BINPUT
                if u32(buf, pos)[0] != len(memo):
                    raise Unsupported("memo order")
                remember(stack[-1])
                pos += 4
            elif op == 0x6A:  # LONG_BINGET
                push(memo[u32(buf, pos)[0]])
                pos += 4
            elif op == 0x58:  # BINUNICODE
                size = u32(buf, pos)[0]
                pos += 4
                if stack and stack[-1] is _ENCODE_MARK:  # a bytes value
                    if size <= SHARED_BYTES:
                        # Read at once: a short value may be shared through the memo (CPython
                        # keeps one str per character), and where it is a key, it is text.
                        if pos + size > len(buf):
                            raise Unsupported("truncated")
                        push(buf[pos : pos + size].decode("utf-8", "surrogatepass"))
                    else:
                        push(StoredText.of(base + pos, size))  # left in the file
                else:
                    if pos + size > len(buf):
                        if size > MAX_NAME:
                            raise Unsupported("long string")
                        base += pos
                        buf = pread(fd, size + CHUNK, base)
                        pos = 0
                        limit = len(buf) - SLACK
                        if len(buf) < size:
                            raise Unsupported("truncated")
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
                if buf[pos] != len(memo):
                    raise Unsupported("memo order")
                remember(stack[-1])
                pos += 1
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                func = stack.pop()
                if func is _ENCODE_MARK and len(args) == 2 and args[1] in LATIN1:
                    push(args[0])  # the StoredText (or str) stands for the bytes
                elif func is _BYTES_MARK and args == ():
                    push("")
                else:
                    raise Unsupported("REDUCE")
            elif op == 0x75:  # SETITEMS
                start = marks.pop()
                target = stack[start - 1] if start else None
                if type(target) is not dict:
                    raise Unsupported("SETITEMS")
                items = stack[start:]
                del stack[start:]
                keys = items[::2]
                for key in keys:
                    if type(key) is tuple or type(key) is StoredText:
                        _check_flat(key)
                target.update(zip(keys, items[1::2], strict=True))
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
                    raise Unsupported("SETITEM")
                if type(key) is tuple or type(key) is StoredText:
                    _check_flat(key)
                stack[-1][key] = value
            elif op == 0x63:  # GLOBAL: only the two the bytes values need
                end = buf.find(b"\n", pos, pos + SLACK)
                stop = buf.find(b"\n", end + 1, pos + SLACK)
                if end < 0 or stop < 0:
                    raise Unsupported("GLOBAL")
                name = (buf[pos:end], buf[end + 1 : stop])
                pos = stop + 1
                if name == (b"_codecs", b"encode"):
                    push(_ENCODE_MARK)
                elif name in _BYTES_NAMES:
                    push(_BYTES_MARK)
                else:
                    raise Unsupported("GLOBAL")  # the unpickler refuses it by name
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or marks:
                    raise Unsupported("STOP")
                return stack[0]
            else:
                raise Unsupported(f"opcode {op:#x}")


_BYTES_NAMES: Final = frozenset({(b"__builtin__", b"bytes"), (b"builtins", b"bytes")})


def _check_flat(key: Any) -> None:
    """A dict key of a PersistentDict file is a string or a tuple of strings and numbers.

    A tuple of tuples is left to the restricted unpickler, which counts its shared
    references first (unpickler.expanded_size): hashing `(t, t)` with t = `(t', t')` ...
    sixty levels deep, built in a few hundred bytes of memo references, takes 2**60 steps.
    So is a key holding a bytes value left in the file, which the unpickler reads as text.
    """
    for part in key if type(key) is tuple else (key,):
        if type(part) is tuple:
            raise Unsupported("a key holding a tuple")
        if type(part) is StoredText:
            raise Unsupported("a key holding bytes")
