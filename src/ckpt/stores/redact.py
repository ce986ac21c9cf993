"""`ckpt copy --redact`: a thread's content replaced, its structure and types kept, at the
msgpack level, for a store that can go into a bug report.

Kept: every checkpoint field but the channel values (ids, versions, versions_seen, parent
links), channel and node names, dict keys, every ext type code and class path, numbers
and booleans, and the values of the keys that name rather than say: `id`, `type`,
`tool_call_id`, the tool `name` of a tool call and of a ToolMessage, a Send's node, a
datetime, a UUID. Replaced: every other string by a placeholder of the same length and
shape (letters x/X, digits 0, the rest as it was) and every bytes value by zero bytes of
the same length, inside ext payloads too. No class is imported or constructed: ext
payloads are walked as msgpack. Metadata keeps LangGraph's own keys (`source`, `step`,
`parents`, `langgraph_*` ...). Encrypted values need the key; they are written decrypted
and redacted (their tag loses `+aes`), so that whoever reads the report needs no key.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Final

import ormsgpack

from ckpt.decoders.crypto import decrypt_aes
from ckpt.errors import CopyRefused
from ckpt.records.model import RawCheckpoint, RawWrite, trigger_node

# Keys whose string values name things rather than say them (format.md §2.4).
KEEP_KEYS: Final = frozenset({"id", "type", "tool_call_id"})
# Checkpoint metadata LangGraph writes itself (format.md §3.2): kept whole.
METADATA_KEYS: Final = frozenset(
    {"source", "step", "parents", "thread_id", "checkpoint_ns", "checkpoint_id", "run_id",
     "graph_id", "assistant_id", "run_attempt", "counters_since_delta_snapshot"}
)  # fmt: skip
# ext 0 single-argument types whose argument is an identifier, not content.
_KEEP_SINGLE_ARG: Final = frozenset({"uuid", "zoneinfo"})
_EXT_CLASS = range(0, 6)  # [module, name, payload, (method)] (format.md §2.3)
_EXT_NUMPY, _EXT_DELTA = 6, 7
_OPTIONS: Final = ormsgpack.OPT_NON_STR_KEYS
_SHAPE: Final = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "x" * 26 + "X" * 26 + "0" * 10,
)
_ERROR: Final = re.compile(r"([A-Za-z_][\w.]*)(\(.*\))", re.DOTALL)


def placeholder(text: str) -> str:
    """`text` with its content gone and its shape kept: same length, letters x/X, digits
    0, spaces and punctuation as they were; other letters x."""
    shaped = text.translate(_SHAPE)
    return "".join("x" if c.isalpha() and c not in "xX" else c for c in shaped)


class _Ext:
    """An ext value as read (ormsgpack.Ext cannot be read back): code and payload."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def _ext(code: int, data: bytes) -> _Ext:
    return _Ext(code, data)


def _pack(value: Any) -> bytes:
    return ormsgpack.packb(value, default=_as_ext, option=_OPTIONS)


def _as_ext(value: Any) -> ormsgpack.Ext:
    if isinstance(value, _Ext):
        return ormsgpack.Ext(value.code, value.data)
    raise TypeError(f"cannot pack {type(value).__name__}")


class Redactor:
    """Redacts the rows of one copy (`keep_keys`: more keys to keep)."""

    def __init__(
        self, *, keep_keys: frozenset[str], keep_errors: bool, aes_key: bytes | None
    ) -> None:
        self.keep = KEEP_KEYS | keep_keys
        self.metadata_keep = METADATA_KEYS | keep_keys
        self.keep_errors = keep_errors
        self.aes_key = aes_key

    # -- rows ------------------------------------------------------------------------------
    def checkpoint(self, row: RawCheckpoint) -> RawCheckpoint:
        where = f"checkpoint {row.checkpoint_id}"
        metadata = self._metadata(row.metadata_type, row.metadata, where)
        tag: str | None = row.type
        if row.type == "jsonb":  # Postgres: the inline primitives are values
            document = json.loads(row.body)
            values = document.get("channel_values")
            if isinstance(values, dict):
                document["channel_values"] = {
                    k: self._plain(v, None) if not isinstance(v, bool) and _content(k) else v
                    for k, v in values.items()
                }
            body = json.dumps(document, ensure_ascii=False).encode()
        elif row.channel_versions is not None:  # a skeleton: its values are blobs
            body = row.body
        else:
            tag, plain = self._open(row.type, row.body, where)
            if tag != "msgpack":
                raise CopyRefused(f"{where}: redacting reads msgpack bodies, not {tag!r}")
            document = self._unpack(plain, where)
            if not isinstance(document, dict):
                raise CopyRefused(f"{where}: its body is not a map")
            values = document.get("channel_values")
            if isinstance(values, dict):
                document["channel_values"] = {
                    k: self._walk(v, None) if _content(k) else v for k, v in values.items()
                }
            if "pending_sends" in document:
                document["pending_sends"] = self._walk(document["pending_sends"], None)
            body = _pack(document)
        return replace(row, type=tag, body=body, metadata=metadata)

    def value(
        self, channel: str, tag: str | None, data: bytes | None, where: str
    ) -> tuple[str | None, Any]:
        """A stored value (a blob, a write) of `channel` redacted: (tag, bytes)."""
        if tag in (None, "null", "empty") or data is None or not _content(channel):
            return tag, data
        if tag in ("bytes", "bytearray"):
            return tag, bytes(len(data))
        tag, plain = self._open(tag, data, where)
        if tag == "msgpack":
            return tag, _pack(self._walk(self._unpack(plain, where), None))
        if tag == "json":
            return tag, json.dumps(self._walk(json.loads(plain), None)).encode()
        raise CopyRefused(
            f"{where}: a value stored as {tag!r} cannot be redacted without loading it"
        )

    def write(self, write: RawWrite) -> RawWrite:
        where = f"a write of checkpoint {write.checkpoint_id}"
        if write.channel == "__error__" and write.type == "msgpack" and write.data:
            error = self._unpack(self._open(write.type, write.data, where)[1], where)
            if isinstance(error, str):  # repr(exc), format.md §2.4 #23
                return replace(write, data=ormsgpack.packb(self._error(error)))
        tag, data = self.value(write.channel, write.type, write.data, where)
        return replace(write, type=tag, data=data)

    # -- values ----------------------------------------------------------------------------
    def _open(self, tag: str | None, data: bytes, where: str) -> tuple[str | None, bytes]:
        if tag is not None and tag.endswith("+aes"):
            opened = decrypt_aes(data, self.aes_key) if self.aes_key else None
            if opened is None:
                raise CopyRefused(
                    f"{where}: encrypted; redacting needs the AES key (LANGGRAPH_AES_KEY) to "
                    "read what it replaces"
                )
            return tag.removesuffix("+aes"), opened
        return tag, data

    def _unpack(self, data: bytes, where: str) -> Any:
        try:
            return ormsgpack.unpackb(data, ext_hook=_ext, option=_OPTIONS)
        except (ValueError, TypeError) as exc:
            raise CopyRefused(f"{where}: not msgpack ({exc})") from None

    def _error(self, text: str) -> str:
        match = _ERROR.fullmatch(text) if self.keep_errors else None
        if match:
            return match.group(1) + placeholder(match.group(2))
        return placeholder(text)

    def _plain(self, value: Any, key: Any) -> Any:
        if isinstance(value, str):
            return value if key in self.keep else placeholder(value)
        return value

    def _walk(self, value: Any, key: Any) -> Any:
        """`value` with its content replaced; `key` is the dict key it is held under."""
        if isinstance(value, str):
            return value if key in self.keep else placeholder(value)
        if isinstance(value, bytes):
            return bytes(len(value))
        if isinstance(value, dict):
            # A tool call ({name, args, id}) and a ToolMessage ({name, tool_call_id, ...}):
            # the tool's name names, as the AI message's call to it does.
            tool = "name" in value and ("args" in value or "tool_call_id" in value)
            return {
                k: (v if tool and k == "name" and isinstance(v, str) else self._walk(v, k))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._walk(item, None) for item in value]
        if isinstance(value, _Ext):
            return self._ext(value)
        return value  # numbers, booleans, None

    def _ext(self, ext: _Ext) -> _Ext:
        code, data = ext.code, ext.data
        if code == _EXT_DELTA:
            inner = self._walk(ormsgpack.unpackb(data, ext_hook=_ext, option=_OPTIONS), None)
            return _ext(code, _pack(inner))
        payload = ormsgpack.unpackb(data, ext_hook=_ext, option=_OPTIONS)
        if code == _EXT_NUMPY and isinstance(payload, list) and len(payload) == 4:
            dtype, shape, order, buffer = payload
            zeros = bytes(len(buffer)) if isinstance(buffer, bytes) else buffer
            return _ext(code, _pack([dtype, shape, order, zeros]))
        if code not in _EXT_CLASS or not isinstance(payload, list) or len(payload) < 3:
            return ext  # an ext LangGraph does not write: nothing of ours to read in it
        module, name, argument, *rest = payload
        if code == 3 or (code == 0 and module in _KEEP_SINGLE_ARG):
            redacted = argument  # datetime.fromisoformat's text, a UUID, a zone name
        elif (module, name) == ("langgraph.types", "Send") and isinstance(argument, list):
            # The node it goes to stays; its argument is content.
            redacted = [argument[0], *(self._walk(v, None) for v in argument[1:])]
        else:
            redacted = self._walk(argument, None)
        return _ext(code, _pack([module, name, redacted, *rest]))

    # -- metadata --------------------------------------------------------------------------
    def _metadata(self, kind: str | None, data: bytes, where: str) -> bytes:
        if not data:
            return data
        if kind in ("json", "jsonb"):
            metadata = json.loads(data)
        elif kind == "msgpack":
            metadata = self._unpack(data, where)
        else:
            raise CopyRefused(f"{where}: metadata stored as {kind!r} cannot be redacted")
        if isinstance(metadata, dict):
            metadata = {
                k: v if _kept_metadata(k, self.metadata_keep) else self._walk(v, k)
                for k, v in metadata.items()
            }
        else:
            metadata = self._walk(metadata, None)
        if kind == "msgpack":
            return _pack(metadata)
        return json.dumps(metadata, ensure_ascii=False).encode()


def _kept_metadata(key: Any, keep: frozenset[str]) -> bool:
    return isinstance(key, str) and (key in keep or key.startswith("langgraph_"))


def _content(channel: Any) -> bool:
    """Whether a channel's values are content: not a trigger channel, whose values are
    node names and markers (`join:a+b:c` holds the nodes that finished, format.md §3.6)."""
    return not (isinstance(channel, str) and trigger_node(channel) is not None)
