"""A PersistentDict file read without unpickling it: bytes values stay in the file.

The types the pickle passes share (StoredText, Summary, Unsupported) and PickleFile, one
open file whose values are read when needed. There is one pass over the opcodes
(lean.py); any stream it does not handle is read by the restricted unpickler
(ckpt.stores.pickle.unpickler), which also reads every value that is shown.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Final

from ckpt.stores.pickle.unpickler import load_pickle


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
        """The file read by the restricted unpickler (the names of refused globals go
        into `refused`): for a stream the pass of lean.py turns away."""
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
