"""The threads-only pass over PersistentDict files: every opcode read, only what threads shows kept.

`ckpt threads` on a `langgraph dev` folder (format.md §7.3) needs, per thread and
namespace, the number of checkpoints and the latest one; and, of the writes and blobs
dicts, only the entries of those latest checkpoints. `scan()` runs through a whole file,
as the restricted unpickler would, but drops what the listing does not need as soon as it
is built, so memory follows the listing and not the file.

It is a pickle machine for the protocol 2 subset PersistentDict writes, and it is
deliberately stricter than the restricted unpickler (ckpt.stores.pickle.unpickler): anything
outside that subset raises `Unsupported`, and the caller then reads the file the full way,
which accepts, refuses or reports it exactly as before. Among what it turns away:

* any global but the five of format.md §7.2 (a refused global is reported by the full read);
* a memo reference (GET) to anything but a string, a number, None, an allowed global, a
  bytes value of up to 64 bytes or a pair of the first four. A PersistentDict file shares
  only such values (a thread id, a type tag, a one-byte value CPython keeps one copy of,
  the `("empty", b"")` placeholder, a write's `(task_id, idx)` key), and with shared
  values this small, the objects a file stands for stay within a few times its size: no
  hash or memo bomb gets through (unpickler.expanded_size bounds the full read);
* a key seen twice in one dict (which the full read resolves as "last wins");
* a bytes value that is not valid UTF-8 text in the storage and writes files, which the
  full read reports as corrupt (the blobs file is scanned the same way by both reads).

It builds only dicts, tuples, strings, numbers and StoredTexts; nothing in it imports or calls
anything named by the data.
"""

from __future__ import annotations

import os
from typing import Any, Final

from ckpt.stores.pickle.index import CHUNK as _CHUNK
from ckpt.stores.pickle.index import I32 as _I32
from ckpt.stores.pickle.index import MAX_NAME as _MAX_NAME
from ckpt.stores.pickle.index import SHARED_BYTES as _SHARED
from ckpt.stores.pickle.index import SLACK as _SLACK
from ckpt.stores.pickle.index import U16 as _U16
from ckpt.stores.pickle.index import U32 as _U32
from ckpt.stores.pickle.index import Namespaces, StoredText, Summary, Unsupported
from ckpt.stores.pickle.unpickler import LATIN1

_SHARED_BYTES: Final = _SHARED  # bytes values up to this long are text, kept in the memo

_ENCODE: Final = object()
_BYTES: Final = object()
_DEFAULTDICT: Final = object()
_DICT: Final = object()
_GONE: Final = object()  # a memo slot whose object the pass does not keep
_GLOBALS: Final = {
    (b"_codecs", b"encode"): _ENCODE,
    (b"__builtin__", b"bytes"): _BYTES,
    (b"builtins", b"bytes"): _BYTES,
}
_STORAGE_GLOBALS: Final = {
    **_GLOBALS,
    (b"collections", b"defaultdict"): _DEFAULTDICT,
    (b"__builtin__", b"dict"): _DICT,
    (b"builtins", b"dict"): _DICT,
}
_MARKERS: Final = frozenset(map(id, (_ENCODE, _BYTES, _DEFAULTDICT, _DICT)))


def scan_storage(
    fd: int, thread: str | None = None, *, ids: bool = False, whole: bool = False
) -> Any:
    """The storage file's root object, each namespace's entries reduced to a Summary (or
    None when empty; `ids`: to the list of its checkpoint ids) as soon as its dict is
    built, except the namespaces of `thread` (`whole`: of every thread), whose entries
    dicts are kept whole. Bytes values are pickle_index.StoredText spans of their UTF-8
    text in the file, checked as UTF-8, which count the bytes they stand for. Raises
    Unsupported (see the module docstring) or OSError."""
    return _Scan(
        fd, storage=True, wanted=None, check=True, thread=thread, ids=ids, whole=whole
    ).run()


def scan_kept(fd: int, wanted: set[Any] | str | None, *, check: bool) -> Any:
    """A writes (`check=True`: bytes checked as UTF-8 and counted) or blobs
    (`check=False`) file's root dict, with only the `wanted` keys (a thread id: every key
    of that thread; None: every key) and its first key (by which the store tells which
    dict a file holds). Raises Unsupported or OSError."""
    return _Scan(fd, storage=False, wanted=wanted, check=check).run()


class _Scan:
    def __init__(
        self,
        fd: int,
        *,
        storage: bool,
        wanted: set[Any] | str | None,
        check: bool,
        thread: str | None = None,
        ids: bool = False,
        whole: bool = False,
    ) -> None:
        self.fd = fd
        self.storage = storage
        self.wanted = wanted
        self.thread = thread
        self.whole = whole
        self.ids = ids
        self.check = check
        self.globals = _STORAGE_GLOBALS if storage else _GLOBALS
        self.root: Any = _GONE
        self.first_key: list[Any] = []  # the root dict's first key, once it has one
        self.size = os.fstat(fd).st_size

    def run(self) -> Any:
        try:
            return self._run()
        except (Unsupported, OSError):
            raise
        except Exception as exc:  # IndexError on an empty stack, TypeError, struct.error ...
            raise Unsupported(type(exc).__name__) from None

    def _run(self) -> Any:  # one loop, opcodes in order of frequency
        fd = self.fd
        pread = os.pread
        u32, i32, u16 = _U32.unpack_from, _I32.unpack_from, _U16.unpack_from
        check = self.check
        file_size = self.size
        keep = self._keep
        setitems = self._setitems
        gone = _GONE
        span = StoredText.of
        base = 0  # file offset of buf[0]
        buf = pread(fd, _CHUNK, 0)
        if buf[:2] != b"\x80\x02":
            raise Unsupported("not protocol 2")
        pos = 2
        limit = len(buf) - _SLACK
        # The memo as a list (puts numbered 0, 1, 2... as pickle numbers them), holding
        # only what may be shared (_keep): the rest of each value can be dropped.
        memo: list[Any] = []
        remember = memo.append
        count = 0
        stack: list[Any] = []
        push = stack.append
        pop = stack.pop
        marks: list[int] = []
        # Most opcodes that build an object are followed by the BINPUT that memoizes it,
        # which each such branch takes at once ("fused") rather than by another turn.
        while True:
            if pos > limit:
                base += pos
                buf = pread(fd, _CHUNK, base)
                pos = 0
                limit = len(buf) - _SLACK
                if not buf:
                    raise Unsupported("truncated")
            op = buf[pos]
            pos += 1
            if op == 0x58:  # BINUNICODE
                size = u32(buf, pos)[0]
                pos += 4
                if base + pos + size > file_size:
                    raise Unsupported("truncated")
                if stack and stack[-1] is _ENCODE:  # a bytes value: leave it in the file
                    short = size <= _SHARED_BYTES
                    if short or check:
                        if pos + size > len(buf):  # never a short one: _SLACK
                            base += pos
                            buf = pread(fd, size + _CHUNK, base)
                            pos = 0
                            limit = len(buf) - _SLACK
                        try:
                            text = buf[pos : pos + size].decode("utf-8", "surrogatepass")
                        except UnicodeDecodeError:
                            raise Unsupported("not UTF-8") from None
                    if short:
                        # A short value may be shared (CPython keeps one str per character,
                        # and one b"\x01"): it is text, which the memo keeps and a key
                        # holds, as the full read gives it.
                        built: Any = text
                        kept: Any = text
                    else:
                        # Counted (its characters are the bytes it stands for) if checked;
                        # dropped from the memo with what holds it.
                        built = span(base + pos, size, len(text) if check else None)
                        kept = gone
                    push(built)
                    payload = True
                else:
                    if pos + size > len(buf):
                        if size > _MAX_NAME:
                            raise Unsupported("long string")
                        base += pos
                        buf = pread(fd, size + _CHUNK, base)
                        pos = 0
                        limit = len(buf) - _SLACK
                    try:
                        kept = buf[pos : pos + size].decode("utf-8", "surrogatepass")
                    except UnicodeDecodeError:
                        raise Unsupported("not UTF-8") from None
                    push(kept)
                    payload = False
                pos += size
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71:
                        if buf[pos + 1] != count:
                            raise Unsupported("memo order")
                        remember(kept)
                        count += 1
                        pos += 2
                    elif op == 0x72:
                        index = u32(buf, pos + 1)[0]
                        if index != count:
                            raise Unsupported("memo order")
                        remember(kept)
                        count += 1
                        pos += 5
                    else:
                        continue
                    if payload and pos <= limit:
                        # The rest of protocol 2's bytes idiom, `GET "latin1", TUPLE2, PUT,
                        # REDUCE, PUT`, at once: what the steps would do, or nothing.
                        at = pos
                        op = buf[at]
                        if op == 0x68:
                            index = buf[at + 1]
                            at += 2
                        elif op == 0x6A:
                            index = u32(buf, at + 1)[0]
                            at += 5
                        else:
                            continue
                        if index >= count or memo[index] not in LATIN1 or buf[at] != 0x86:
                            continue
                        op = buf[at + 1]
                        if op == 0x71:
                            index = buf[at + 2]
                            at += 3
                        elif op == 0x72:
                            index = u32(buf, at + 2)[0]
                            at += 6
                        else:
                            continue
                        if index != count or buf[at] != 0x52:
                            continue
                        op = buf[at + 1]
                        if op == 0x71:
                            index = buf[at + 2]
                            at += 3
                        elif op == 0x72:
                            index = u32(buf, at + 2)[0]
                            at += 6
                        else:
                            continue
                        if index != count + 1:
                            continue
                        built = pop()
                        if type(built) is str:  # a short value: its bytes, as the stub gives
                            built = _latin1(built)
                        remember(gone)  # the (bytes, "latin1") arguments
                        remember(gone if kept is gone else built)  # the bytes value
                        count += 2
                        stack[-1] = built  # the encode stub's place: its result
                        pos = at
                        # And the (tag, bytes) pair it is the second of: TUPLE2, PUT.
                        if pos <= limit and buf[pos] == 0x86:
                            op = buf[pos + 1]
                            if op == 0x71:
                                index = buf[pos + 2]
                                at = pos + 3
                            elif op == 0x72:
                                index = u32(buf, pos + 2)[0]
                                at = pos + 6
                            else:
                                continue
                            if index != count:
                                continue
                            pop()
                            stack[-1] = (stack[-1], built)
                            remember(gone)  # a pair holding bytes is never kept (_keep)
                            count += 1
                            pos = at
            elif op == 0x68 or op == 0x6A:  # BINGET, LONG_BINGET, and the ones that follow
                while True:
                    if op == 0x68:
                        index = buf[pos]
                        pos += 1
                    else:
                        index = u32(buf, pos)[0]
                        pos += 4
                    if index >= count or (found := memo[index]) is gone:
                        raise Unsupported("memo reference")
                    push(found)
                    if pos > limit:
                        break
                    op = buf[pos]
                    if op != 0x68 and op != 0x6A:
                        break
                    pos += 1
            elif op == 0x86:  # TUPLE2
                last = pop()
                first = stack[-1]
                built = stack[-1] = (first, last)
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71 or op == 0x72:
                        if op == 0x71:
                            index = buf[pos + 1]
                            pos += 2
                        else:
                            index = u32(buf, pos + 1)[0]
                            pos += 5
                        if index != count:
                            raise Unsupported("memo order")
                        kind = type(first)
                        if kind is str or kind is int or kind is bytes or first is None:
                            kind = type(last)
                            if kind is str or kind is int or kind is bytes or last is None:
                                remember(built)
                            else:
                                remember(gone)
                        else:
                            remember(gone)
                        count += 1
            elif op == 0x71 or op == 0x72:  # BINPUT, LONG_BINPUT (after anything else)
                if op == 0x71:
                    index = buf[pos]
                    pos += 1
                else:
                    index = u32(buf, pos)[0]
                    pos += 4
                if index != count or not stack:
                    raise Unsupported("memo order")
                remember(keep(stack[-1]))
                count += 1
            elif op == 0x28:  # MARK
                marks.append(len(stack))
            elif op == 0x52:  # REDUCE
                args = pop()
                func = pop()
                if func is _ENCODE and type(args) is tuple and len(args) == 2 and args[1] in LATIN1:
                    built = _latin1(args[0]) if type(args[0]) is str else args[0]
                elif func is _BYTES and args == ():
                    built = b""
                elif func is _DEFAULTDICT and type(args) is tuple and args == (_DICT,):
                    built = Namespaces()
                else:
                    raise Unsupported("REDUCE")
                push(built)
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71 or op == 0x72:
                        if op == 0x71:
                            index = buf[pos + 1]
                            pos += 2
                        else:
                            index = u32(buf, pos + 1)[0]
                            pos += 5
                        if index != count:
                            raise Unsupported("memo order")
                        remember(built if type(built) is str else keep(built))
                        count += 1
            elif op == 0x74:  # TUPLE
                start = marks.pop()
                built = tuple(stack[start:])
                del stack[start:]
                push(built)
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71 or op == 0x72:
                        if op == 0x71:
                            index = buf[pos + 1]
                            pos += 2
                        else:
                            index = u32(buf, pos + 1)[0]
                            pos += 5
                        if index != count:
                            raise Unsupported("memo order")
                        remember(gone if len(built) > 2 else keep(built))
                        count += 1
            elif op == 0x75:  # SETITEMS
                start = marks.pop()
                if not start:
                    raise Unsupported("SETITEMS")
                items = stack[start:]
                del stack[start:]
                setitems(stack[-1], items, stack[-2] if len(stack) > 1 else None)
            elif op == 0x73:  # SETITEM
                if len(stack) < 3:
                    raise Unsupported("SETITEM")
                value = pop()
                key = pop()
                setitems(stack[-1], [key, value], stack[-2] if len(stack) > 1 else None)
            elif op == 0x4B:  # BININT1
                push(buf[pos])
                pos += 1
            elif op == 0x7D:  # EMPTY_DICT
                if self.root is gone:
                    self.root = {}
                    push(self.root)
                else:
                    push({})
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71 or op == 0x72:
                        if op == 0x71:
                            index = buf[pos + 1]
                            pos += 2
                        else:
                            index = u32(buf, pos + 1)[0]
                            pos += 5
                        if index != count:
                            raise Unsupported("memo order")
                        remember(gone)
                        count += 1
            elif op == 0x29:  # EMPTY_TUPLE
                push(())
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x87:  # TUPLE3 (never kept in the memo: see _keep)
                third = pop()
                second = pop()
                stack[-1] = (stack[-1], second, third)
                if pos <= limit:
                    op = buf[pos]
                    if op == 0x71 or op == 0x72:
                        if op == 0x71:
                            index = buf[pos + 1]
                            pos += 2
                        else:
                            index = u32(buf, pos + 1)[0]
                            pos += 5
                        if index != count:
                            raise Unsupported("memo order")
                        remember(gone)
                        count += 1
            elif op == 0x4E:  # NONE
                push(None)
            elif op == 0x4A:  # BININT
                push(i32(buf, pos)[0])
                pos += 4
            elif op == 0x4D:  # BININT2
                push(u16(buf, pos)[0])
                pos += 2
            elif op == 0x63:  # GLOBAL: only the ones format.md §7.2 lists
                end = buf.find(b"\n", pos, pos + _SLACK)
                stop = buf.find(b"\n", end + 1, pos + _SLACK)
                if end < 0 or stop < 0:
                    raise Unsupported("GLOBAL")
                named = self.globals.get((buf[pos:end], buf[end + 1 : stop]))
                if named is None:
                    raise Unsupported("GLOBAL")  # the full read refuses it by name
                push(named)
                pos = stop + 1
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or marks or stack[0] is not self.root:
                    raise Unsupported("STOP")
                return stack[0]
            else:
                raise Unsupported(f"opcode {op:#x}")

    @staticmethod
    def _keep(value: Any) -> Any:
        """What the memo holds for `value`: itself if it is small and may be shared."""
        kind = type(value)
        if kind is str or kind is int or kind is bytes or value is None or id(value) in _MARKERS:
            return value  # bytes: only short ones are built (long ones stay in the file)
        if kind is tuple and len(value) <= 2:
            for part in value:
                kind = type(part)
                if not (kind is str or kind is int or kind is bytes or part is None):
                    return _GONE
            return value
        return _GONE

    def _setitems(self, target: Any, items: list[Any], owner: Any) -> None:
        """SETITEMS into `target`; `owner` is what lies below it on the stack: the key it
        will be set under, when it is a value of the root dict being built."""
        if type(target) is not dict and type(target) is not Namespaces:
            raise Unsupported("SETITEMS")
        keys = items[::2]
        values = items[1::2]
        if len(keys) != len(values):
            raise Unsupported("SETITEMS")
        if target is self.root:
            for key in keys:  # a long bytes value is a span here, but text to the full read
                for part in key if type(key) is tuple else (key,):
                    if type(part) is StoredText:
                        raise Unsupported("a key holding bytes")
        if type(target) is Namespaces:
            asked = self.thread is not None and type(owner) is str and owner == self.thread
            if self.whole or asked:
                values = [_entries(entries) for entries in values]  # kept whole
            elif self.ids:
                values = [list(_entries(entries)) for entries in values]
            else:
                values = [_summary(entries) for entries in values]
        elif target is self.root and self.wanted is not None:
            wanted = self.wanted
            if isinstance(wanted, str):  # every key of one thread: (thread, ...)
                hits = {k for k in keys if type(k) is tuple and k and k[0] == wanted}
            else:
                hits = wanted.intersection(keys)  # most batches have none
            kept = [(k, v) for k, v in zip(keys, values, strict=True) if k in hits] if hits else []
            if not target and keys:
                if not kept or kept[0][0] is not keys[0]:
                    kept.insert(0, (keys[0], values[0]))  # the first key tells the dict's role
                self.first_key = [keys[0]]
                if keys.count(keys[0]) > 1:
                    raise Unsupported("a key twice")
            elif self.first_key and self.first_key[0] in keys:
                raise Unsupported("a key twice")
            # Only a kept key seen twice could change what is shown ("last wins").
            count = len(target)
            for key, _ in kept:
                if key in target:
                    raise Unsupported("a key twice")
            target.update(kept)
            if len(target) != count + len(kept):
                raise Unsupported("a key twice")
            return
        count = len(target)
        target.update(zip(keys, values, strict=True))
        if len(target) != count + len(keys):
            raise Unsupported("a key twice")


def _entries(entries: Any) -> dict[str, tuple[Any, Any, str | None]]:
    """A namespace's entries dict, checked as the store checks it."""
    if type(entries) is not dict:
        raise Unsupported("namespace")
    for checkpoint_id, entry in entries.items():
        if not (
            type(checkpoint_id) is str
            and type(entry) is tuple
            and len(entry) == 3
            and (entry[2] is None or type(entry[2]) is str)
        ):
            raise Unsupported("entry")
    return entries


def _summary(entries: Any) -> Summary | None:
    """A namespace's entries dict, checked as the store checks it, reduced to a Summary."""
    entries = _entries(entries)
    if not entries:
        return None
    latest = max(entries)
    return Summary(len(entries), next(iter(entries.items())), (latest, entries[latest]))


def _latin1(text: str) -> str | bytes:
    """The bytes protocol 2's `_codecs.encode(text, "latin1")` stands for (the text itself
    where it is not latin-1, as the restricted unpickler's stub gives it)."""
    try:
        return text.encode("latin1")
    except UnicodeEncodeError:
        return text


def materialize(fd: int, value: Any, depth: int = 0) -> Any:
    """`value` with each StoredText replaced by its bytes, as the restricted unpickler gives
    it. For the few entries a listing keeps."""
    if depth > 20:
        raise Unsupported("too deep")
    kind = type(value)
    if kind is StoredText:
        length = value.size
        data = os.pread(fd, length, value.start)
        if len(data) != length:
            raise Unsupported("the file changed")
        try:
            return _latin1(data.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            raise Unsupported("not UTF-8") from None
    if kind is tuple:
        return tuple(materialize(fd, part, depth + 1) for part in value)
    if kind is dict:
        return {k: materialize(fd, v, depth + 1) for k, v in value.items()}
    return value
