"""The `pickle` tag: list what a pickle would import, with pickletools only; never unpickle it."""

from __future__ import annotations

import base64
import functools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from ckpt.decoders.values import MARK_KEY
from ckpt.errors import DecodeError

if TYPE_CHECKING:
    import pickletools

_STRING_OPS: Final = frozenset(
    {
        "UNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE",
        "BINUNICODE8",
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
    }
)
_GET_OPS: Final = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUT_OPS: Final = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_EXTENSION_OPS: Final = frozenset({"EXT1", "EXT2", "EXT4"})


@functools.cache
def _pickletools() -> Any:
    """pickletools, imported once a pickle shows up (~5 ms of every command's start-up
    otherwise), and then never again: a decode runs no import statement."""
    import pickletools

    return pickletools


@contextmanager
def escapes_unwarned() -> Iterator[None]:
    """Pickle decoding without the DeprecationWarning of an invalid backslash escape.

    Reading a STRING opcode (CPython's unpickler and pickletools) and a GLOBAL or INST
    name (pickletools only) goes through `codecs.escape_decode`, which warns about an
    escape such as `\\c`. No pickle module writes one: it is damage, and what it decodes
    to is the unpickler's business, not the user's. Under `-W error` or
    `PYTHONWARNINGS=error` (pytest's `filterwarnings = error` too) the warning would be
    raised out of the decode as an exception that says nothing of the file; here it is
    off, around the loops that decode, which call no code but the decoders'.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def pickle_ops(payload: bytes) -> Iterator[tuple[pickletools.OpcodeInfo, str, Any]]:
    """Each opcode of a pickle, its name and its argument, read by pickletools.genops
    (nothing is built) with escapes_unwarned around the loop that reads them; a malformed
    pickle raises what genops raises, where it goes wrong."""
    with escapes_unwarned():
        for opcode, arg, _ in _pickletools().genops(payload):
            yield opcode, opcode.name, arg


def pickle_globals(payload: bytes) -> list[str]:
    """The "module.name" of every global a pickle names, in order, without duplicates.

    Reads opcodes with pickletools.genops and follows only the strings on the pickle stack,
    so that STACK_GLOBAL (protocol 4+) names come out too. Nothing is loaded or imported.
    A name that cannot be followed (built at run time) shows as "?". Raises DecodeError on
    a malformed pickle.
    """
    pickletools = _pickletools()
    markobject = pickletools.markobject
    found: dict[str, None] = {}
    stack: list[Any] = []  # only str values are tracked; anything else is None
    marks: list[int] = []
    memo: dict[Any, Any] = {}
    try:
        for opcode, name, arg in pickle_ops(payload):
            if name == "MARK":
                marks.append(len(stack))
                continue
            if name in _STRING_OPS:
                stack.append(arg if isinstance(arg, str) else None)
                continue
            if name in _GET_OPS:
                stack.append(memo.get(arg))
                continue
            if name in _PUT_OPS:
                memo[arg] = stack[-1] if stack else None
                continue
            if name == "MEMOIZE":
                memo[len(memo)] = stack[-1] if stack else None
                continue
            if name == "DUP":
                stack.append(stack[-1] if stack else None)
                continue
            if name in ("GLOBAL", "INST"):
                module, _, attribute = str(arg).partition(" ")
                found[f"{module}.{attribute}"] = None
            elif name == "STACK_GLOBAL":
                top = stack.pop() if stack else None
                below = stack.pop() if stack else None
                found[f"{below or '?'}.{top or '?'}"] = None
                stack.append(None)
                continue
            elif name in _EXTENSION_OPS:
                # The copyreg extension registry picks the class at load time.
                found[f"?.<copyreg extension {arg}>"] = None
            _apply_stack_effect(opcode, stack, marks, markobject)
    except (ValueError, IndexError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise DecodeError(f"invalid pickle: {exc}") from None
    return list(found)


def _apply_stack_effect(
    opcode: pickletools.OpcodeInfo, stack: list[Any], marks: list[int], markobject: Any
) -> None:
    before = opcode.stack_before
    if markobject in before:
        below_mark = before.index(markobject)
        start = marks.pop() if marks else 0
        del stack[start:]
        if below_mark:
            del stack[-below_mark:]
    elif before:
        del stack[-len(before) :]
    stack.extend([None] * len(opcode.stack_after))


def pickle_record(payload: bytes) -> dict[str, Any]:
    """What `decode` returns for the `pickle` tag (format.md §2.1): the globals it would import,
    and its bytes, never the value."""
    return {
        MARK_KEY: "pickle",
        "globals": pickle_globals(payload),
        "size": len(payload),
        "base64": base64.b64encode(payload).decode("ascii"),
    }
