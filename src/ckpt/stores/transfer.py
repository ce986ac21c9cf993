"""Moving a checkpoint between store layouts without decoding its values (`ckpt copy`).

Stores keep a checkpoint in one of three forms (format.md §4.2, 5.2, 7.1):

- **inline**: one serde body with every channel value inside (SQLite, MongoDB, the
  single-file PersistentDict of checkpoint ≤2.0.21);
- **jsonb**: Postgres' JSONB without the values, primitives inline, every other value a
  blob keyed by (channel, version);
- **skeleton**: the InMemorySaver's msgpack body without `channel_values`, every value a
  blob keyed by (channel, version) (the `langgraph dev` folder).

Values move as the bytes they are: a msgpack value is cut out of a body, or spliced into
one, by its byte span (ckpt.decoders.spans.skip); only the fields LangGraph itself keeps as JSON
in Postgres (ids, versions, primitives) are decoded, and those are plain msgpack types
that re-encode to the same bytes (ormsgpack writes the smallest encoding, as LangGraph
does). A value that cannot be carried exactly (a pickle, an encrypted value a layout
would have to split) raises CopyRefused, which names it; nothing is ever converted. The
one rewrite is asked for by name: `--renumber-versions` (`renumbered`), for integer
channel versions the target's saver cannot resume from; values stay as they are.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import ormsgpack

from ckpt.decoders.spans import SpanError, container, ext_code, skip
from ckpt.errors import CopyRefused
from ckpt.records.model import RawCheckpoint
from ckpt.records.vocabulary import TOO_LARGE

# LangGraph's own order of a checkpoint's fields (langgraph/checkpoint/base create_checkpoint).
FIELD_ORDER: Final = (
    "v", "ts", "id", "channel_values", "channel_versions", "versions_seen", "updated_channels"
)  # fmt: skip
DELTA_SNAPSHOT_EXT: Final = 7  # format.md §2.3, §3.8
# msgpack first bytes of the values PostgresSaver keeps inline in the JSONB (None, bool,
# int, float, str: format.md §5.2).
_PRIMITIVE: Final = frozenset(
    [*range(0x00, 0x80), *range(0xE0, 0x100), *range(0xA0, 0xC0),
     0xC0, 0xC2, 0xC3, 0xCA, 0xCB, *range(0xCC, 0xD4), 0xD9, 0xDA, 0xDB]
)  # fmt: skip
_BIN: Final = frozenset({0xC4, 0xC5, 0xC6})

Blob = tuple[str | None, bytes | None]  # (serde tag, bytes) of one stored value
BlobKey = tuple[str, str, str]  # (checkpoint_ns, channel, version)
# checkpoint id -> its `__pregel_tasks` writes in PostgresSaver's order (task_path, task_id,
# idx): where a pre-v4 checkpoint's pending Sends live in Postgres (format.md §5.3).
Sends = Mapping[str, list[Blob]]


@dataclass(frozen=True, slots=True)
class InlineRow:
    """A checkpoint as SqliteSaver stores it: one typed body, metadata as JSON text."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    type: str | None
    body: bytes
    metadata: bytes


@dataclass(frozen=True, slots=True)
class SplitRow:
    """A checkpoint as PostgresSaver stores it: JSONB text, metadata JSONB text, and the
    blobs its channel_versions name (every one, the caller writes each version once)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: str
    metadata: str
    blobs: dict[tuple[str, str], Blob]  # (channel, version) -> value


def form(row: RawCheckpoint) -> str:
    """Which of the three forms a raw checkpoint row is in."""
    if row.type == "jsonb":
        return "jsonb"
    return "inline" if row.channel_versions is None else "skeleton"


def _checked(row: RawCheckpoint) -> None:
    if row.body.startswith(TOO_LARGE) or row.metadata.startswith(TOO_LARGE):
        raise CopyRefused(
            f"checkpoint {row.checkpoint_id} is larger than ckpt reads in one piece "
            f"({row.size:,} bytes)"
        )


# -- metadata --------------------------------------------------------------------------------


def metadata_json(row: RawCheckpoint) -> bytes:
    """The metadata as JSON text: as stored when it is JSON already (SQLite, Postgres,
    MongoDB's decoded fields), else a msgpack map of plain values (the pickle folder)."""
    if row.metadata_type in ("json", "jsonb") or not row.metadata:
        return row.metadata or b"{}"
    if row.metadata_type == "mongodb-pairs":
        raise CopyRefused(
            f"checkpoint {row.checkpoint_id}: its metadata holds a typed value (a msgpack "
            "ext) that the target's JSON metadata cannot keep"
        )
    if row.metadata_type == "msgpack":
        try:
            value = ormsgpack.unpackb(row.metadata)
            return json.dumps(value, ensure_ascii=False).encode()
        except (ValueError, TypeError):
            raise CopyRefused(
                f"checkpoint {row.checkpoint_id}: its metadata holds a typed value (a msgpack "
                "ext) that the target's JSON metadata cannot keep"
            ) from None
    raise CopyRefused(
        f"checkpoint {row.checkpoint_id}: metadata stored as {row.metadata_type!r} has no JSON form"
    )


# -- msgpack spans ---------------------------------------------------------------------------


def _items(data: bytes, kind: str, what: str) -> list[bytes]:
    """The items of the one msgpack map (keys and values in turn) or array `data` is, each
    as its bytes (the header walk of ckpt.decoders.spans)."""
    try:
        shape = container(data, 0)
        if shape is None or shape[0] != kind:
            raise CopyRefused(f"{what} is not a msgpack {kind}")
        _, count, i = shape
        items = []
        for _ in range(2 * count if kind == "map" else count):
            end = skip(data, i)
            items.append(data[i:end])
            i = end
    except (SpanError, IndexError, struct.error) as exc:
        raise CopyRefused(f"{what} is damaged ({exc})") from None
    if i != len(data):
        raise CopyRefused(f"{what} has bytes after its end")
    return items


def _map_entries(data: bytes, what: str) -> list[tuple[str, bytes]]:
    """The (key, value bytes) of a msgpack map, in order; keys must be strings."""
    items = _items(data, "map", what)
    entries = []
    for packed, value in zip(items[::2], items[1::2], strict=True):
        try:
            key = ormsgpack.unpackb(packed)
        except (ValueError, TypeError):
            raise CopyRefused(f"{what} has a key that is not plain data") from None
        if not isinstance(key, str):
            raise CopyRefused(f"{what} has a key that is not a string ({key!r})")
        entries.append((key, value))
    return entries


def _header(kind: str, count: int) -> bytes:
    """A msgpack map or array header for `count` items, in its smallest form."""
    small, wide16, wide32 = (0x80, b"\xde", b"\xdf") if kind == "map" else (0x90, b"\xdc", b"\xdd")
    if count < 16:
        return bytes([small + count])
    if count < 0x10000:
        return wide16 + count.to_bytes(2)
    return wide32 + count.to_bytes(4)


def _pack_map(entries: list[tuple[str, bytes]]) -> bytes:
    return _header("map", len(entries)) + b"".join(
        ormsgpack.packb(key) + value for key, value in entries
    )


def _plain(packed: bytes, what: str) -> Any:
    """A msgpack field LangGraph keeps as JSON in Postgres, decoded (no ext allowed)."""
    try:
        return ormsgpack.unpackb(packed)
    except (ValueError, TypeError):
        raise CopyRefused(f"{what} holds a value JSON cannot keep") from None


def _packed_json(value: Any) -> bytes:
    return ormsgpack.packb(value)


def _inline_value(channel: str, blob: Blob, where: str) -> bytes | None:
    """A stored value as the msgpack it is inside a body; None for `empty` (no value)."""
    tag, data = blob
    if tag == "empty":
        return None
    if tag == "msgpack" and data:
        return data
    if tag == "null":
        return b"\xc0"
    if tag in ("bytes", "bytearray"):
        # What SqliteSaver writes for either inside its body: a msgpack bin (ormsgpack has
        # one binary type), which reads back as bytes, as it does from a SqliteSaver store.
        return ormsgpack.packb(bytes(data or b""))
    raise CopyRefused(
        f"{where}: channel {channel!r} is stored as {tag!r}, which a SQLite body cannot hold "
        "without decoding it"
    )


# -- into the inline form (SQLite) -----------------------------------------------------------


def stored(blobs: Mapping[BlobKey, Blob], ns: str, channel: str, version: str) -> Blob | None:
    """A channel's stored value at a version. ShallowPostgresSaver keeps one blob per
    channel, without a version (format.md §6), keyed here by version "": the value of its
    one checkpoint."""
    found = blobs.get((ns, channel, version))
    return found if found is not None else blobs.get((ns, channel, ""))


def _legacy(version: Any) -> bool:
    return isinstance(version, int) and not isinstance(version, bool) and version < 4


def _parent_sends(row: RawCheckpoint, sends: Sends, where: str) -> list[bytes]:
    """The Sends a pre-v4 checkpoint runs, as its parent's `__pregel_tasks` writes hold
    them (what PostgresSaver reads them from), each as its msgpack bytes."""
    found = []
    for tag, data in sends.get(row.parent_checkpoint_id or "", []):
        if tag != "msgpack" or not data:
            raise CopyRefused(f"{where}: a pending Send is stored as {tag!r}, not msgpack")
        found.append(data)
    return found


def _array(items: list[bytes]) -> bytes:
    return _header("array", len(items)) + b"".join(items)


def msgpack_inline(
    row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends, refusal: str
) -> InlineRow:
    """`to_inline`, for a target that rewrites the msgpack body (MongoDB, Redis): any other
    body is refused, `refusal` saying why after what it is stored as."""
    inline = to_inline(row, blobs, sends)
    if inline.type != "msgpack":
        raise CopyRefused(
            f"checkpoint {row.checkpoint_id}: its body is stored as {inline.type!r}{refusal}"
        )
    return inline


def to_inline(row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends) -> InlineRow:
    """The row as SqliteSaver keeps it; `blobs` are the thread's stored values, `sends`
    its `__pregel_tasks` writes by checkpoint id."""
    _checked(row)
    kind = form(row)
    where = f"checkpoint {row.checkpoint_id}"
    if kind == "inline":
        tag, body = row.type, row.body
    else:
        versions = row.channel_versions or {}
        if kind == "jsonb":
            try:
                document = json.loads(row.body)
            except ValueError:
                raise CopyRefused(f"{where}: its JSONB is not JSON") from None
            if not isinstance(document, dict):
                raise CopyRefused(f"{where}: its JSONB is not an object")
            inline = document.pop("channel_values", None) or {}
            if _legacy(document.get("v")) and row.parent_checkpoint_id:
                # Postgres keeps a pre-v4 checkpoint's Sends as its parent's writes, and
                # SqliteSaver in the body's `pending_sends`: moved there, as stored.
                pending = _parent_sends(row, sends, where)
                document.pop("pending_sends", None)
            else:
                pending = None
            head = [(key, _packed_json(value)) for key, value in document.items()]
            if pending is not None:
                head.append(("pending_sends", _array(pending)))
            values = {str(ch): _packed_json(v) for ch, v in inline.items()}
        else:
            if row.type != "msgpack":
                raise CopyRefused(f"{where}: its body is {row.type!r}, not msgpack")
            head = [e for e in _map_entries(row.body, where) if e[0] != "channel_values"]
            values = {}
        for channel, version in versions.items():
            blob = stored(blobs, row.checkpoint_ns, channel, version)
            if blob is None:
                continue
            packed = _inline_value(channel, blob, where)
            if packed is not None:
                values[channel] = packed  # a blob overrides an inline marker (§5.3)
        head.append(("channel_values", _pack_map(list(values.items()))))
        rank = {name: i for i, name in enumerate(FIELD_ORDER)}
        head.sort(key=lambda entry: rank.get(entry[0], len(rank)))
        tag, body = "msgpack", _pack_map(head)
    metadata = metadata_json(row)
    if kind == "jsonb":  # as SqliteSaver writes it: json.dumps(..., ensure_ascii=False)
        metadata = json.dumps(json.loads(metadata), ensure_ascii=False).encode()
    return InlineRow(
        row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id, tag, body, metadata
    )


# -- into the split form (Postgres) ----------------------------------------------------------


def to_split(row: RawCheckpoint, blobs: Mapping[BlobKey, Blob], sends: Sends) -> SplitRow:
    """The row as PostgresSaver keeps it: primitives inline in the JSONB, other values as
    blobs at their versions (a DeltaChannel snapshot both: `true` and its blob)."""
    _checked(row)
    kind = form(row)
    where = f"checkpoint {row.checkpoint_id}"
    metadata = _jsonb_text(metadata_json(row), f"{where}'s metadata")
    versions = row.channel_versions or {}
    out: dict[tuple[str, str], Blob] = {}
    if kind == "jsonb":
        for channel, version in versions.items():
            blob = stored(blobs, row.checkpoint_ns, channel, version)
            if blob is not None:
                out[(channel, version)] = blob
        return SplitRow(
            row.checkpoint_ns,
            row.checkpoint_id,
            row.parent_checkpoint_id,
            row.body.decode(),
            metadata,
            out,
        )
    if row.type != "msgpack":
        raise CopyRefused(
            f"{where}: its body is stored as {row.type!r}; only a msgpack body can be split "
            "into Postgres' layout"
        )
    document: dict[str, Any] = {}
    values: dict[str, bytes | Blob] = {}
    pending: list[bytes] = []
    for key, packed in _map_entries(row.body, where):
        if key == "channel_values":
            values.update(_map_entries(packed, f"{where}'s channel_values"))
        elif key == "pending_sends":
            pending = _items(packed, "array", f"{where}'s pending_sends")
            document[key] = []
        else:
            document[key] = _plain(packed, f"{where}'s {key!r}")
    if pending and not (
        _legacy(document.get("v"))
        and row.parent_checkpoint_id
        and pending == _parent_sends(row, sends, where)
    ):
        # PostgresSaver reads a pre-v4 checkpoint's Sends from its parent's writes only.
        raise CopyRefused(
            f"{where}: its pending_sends are not its parent's __pregel_tasks writes, where "
            "Postgres keeps them"
        )
    if kind == "skeleton":
        for channel, version in versions.items():
            blob = stored(blobs, row.checkpoint_ns, channel, version)
            if blob is None or blob[0] == "empty":
                continue
            if blob[0] == "null":
                values[channel] = b"\xc0"
            elif blob[0] == "msgpack" and blob[1]:
                values[channel] = blob[1]
            else:
                values[channel] = blob
    else:
        plain_versions = document.get("channel_versions")
        versions = (
            {str(k): str(v) for k, v in plain_versions.items()}
            if isinstance(plain_versions, dict)
            else {}
        )
    inline: dict[str, Any] = {}
    for channel, value in values.items():
        if isinstance(value, tuple):  # a stored blob of another tag ("bytes", ...)
            blob = value
        elif value[0] in _PRIMITIVE:
            inline[channel] = _plain(value, f"{where}'s channel {channel!r}")
            continue
        elif value[0] in _BIN:
            blob = ("bytes", ormsgpack.unpackb(value))
        else:
            blob = ("msgpack", value)
            if ext_code(value, 0) == DELTA_SNAPSHOT_EXT:
                inline[channel] = True  # PostgresSaver's marker (format.md §3.8)
        at = versions.get(channel)
        if at is None:
            raise CopyRefused(f"{where}: channel {channel!r} has a value but no version")
        out[(channel, at)] = blob
    document["channel_values"] = inline
    try:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise CopyRefused(f"{where}: a value JSON cannot keep (NaN or infinity)") from None
    if _has_nul(document):
        raise CopyRefused(f"{where}: a string holds a NUL character, which JSONB cannot hold")
    return SplitRow(
        row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id, text, metadata, out
    )


def _jsonb_text(data: bytes, where: str) -> str:
    """JSON text Postgres' JSONB takes as it is: UTF-8, no NUL in a string (PostgresSaver
    itself fails on those); anything else is refused rather than altered."""
    try:
        text = data.decode()
        parsed = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        raise CopyRefused(f"{where} is not UTF-8 JSON") from None
    if _has_nul(parsed):
        raise CopyRefused(f"{where}: a string holds a NUL character, which JSONB cannot hold")
    return text


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


# -- integer channel versions (MongoDBSaver, custom savers: format.md §3.4) -------------------


def renumbered(row: RawCheckpoint) -> RawCheckpoint:
    """The row with integer channel versions written as SqliteSaver and PostgresSaver write
    theirs (`f"{n:032}.{0.0:016}"`), in `channel_versions` and `versions_seen`: their
    order kept, and new versions (n + 1 and up, any suffix) sort after them. Values are
    not touched. Only for bodies that keep their values inline (MongoDBSaver's)."""
    where = f"checkpoint {row.checkpoint_id}"
    if form(row) != "inline" or row.type != "msgpack":
        raise CopyRefused(f"{where}: renumbering versions reads msgpack bodies, not {row.type!r}")
    entries = []
    for key, packed in _map_entries(row.body, where):
        if key in ("channel_versions", "versions_seen"):
            packed = ormsgpack.packb(_as_text(_plain(packed, f"{where}'s {key!r}")))
        entries.append((key, packed))
    return replace(row, body=_pack_map(entries))


def _as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _as_text(v) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:032}.{0.0:016}"
    return value


# -- string channel versions into integers (MongoDBSaver: format.md §3.4) --------------------


def integer_versions(body: bytes, where: str, *, renumber: bool) -> bytes:
    """A msgpack body with its channel versions as MongoDBSaver counts them (1, 2, 3):
    SqliteSaver's and PostgresSaver's `f"{n:032}.{random}"` become `n` (their order kept:
    n grows by one a step, in every lineage), integers stay. MongoDBSaver's
    get_next_version cannot continue from a string (NotImplementedError), so a body that
    holds string versions is refused unless `renumber` (`--renumber-versions`)."""
    entries = []
    for key, packed in _map_entries(body, where):
        if key in ("channel_versions", "versions_seen"):
            value = _plain(packed, f"{where}'s {key!r}")
            converted = _as_integer(value, where)
            if converted != value and not renumber:
                raise CopyRefused(
                    f"{where}: its channel versions are strings, from which MongoDBSaver "
                    "cannot resume (it counts 1, 2, 3): pass `renumber_versions=True` to "
                    "write them as its integers"
                )
            packed = ormsgpack.packb(converted)
        entries.append((key, packed))
    return _pack_map(entries)


def _as_integer(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {k: _as_integer(v, where) for k, v in value.items()}
    if isinstance(value, str):
        head, dot, _ = value.partition(".")
        if head.isdigit() and head.isascii():
            return int(head)
        raise CopyRefused(f"{where}: channel version {value!r} is not a counted version")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# -- metadata as MongoDBSaver keeps it ---------------------------------------------------------


def metadata_pairs(row: RawCheckpoint) -> dict[str, Any]:
    """The metadata as MongoDBSaver's `dumps_metadata` stores it: a document whose
    dicts stay documents and every other value is a serde `(type, bytes)` pair
    (msgpack; `null` for None), as its JsonPlusSerializer writes plain values. A
    MongoDB source's pairs are carried as they are."""
    where = f"checkpoint {row.checkpoint_id}'s metadata"
    if row.metadata_type == "mongodb-pairs":
        try:
            stored = json.loads(row.metadata or b"{}")
        except ValueError:
            raise CopyRefused(f"{where} is not JSON") from None
        pairs = _pairs_back(stored, where)
        if not isinstance(pairs, dict):
            raise CopyRefused(f"{where} is not an object")
        return pairs
    value = metadata_object(row, where)
    return {str(k): _pairs(v) for k, v in value.items()}


def metadata_object(row: RawCheckpoint, what: str) -> dict[str, Any]:
    """A row's metadata as the JSON object it is, or CopyRefused saying `what` is not one
    (not JSON, or JSON of another kind)."""
    try:
        value = json.loads(metadata_json(row))
    except ValueError:
        raise CopyRefused(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise CopyRefused(f"{what} is not an object")
    return value


def _pairs(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _pairs(v) for k, v in value.items()}
    if value is None:
        return ("null", b"")
    return ("msgpack", ormsgpack.packb(value))


def _pairs_back(value: Any, where: str) -> Any:
    """A MongoDB source's metadata as ckpt read it (ckpt.stores.mongo: payloads as
    `{"__ckpt__": "bytes", "base64": ...}` records) turned back into its pairs."""
    import base64

    if isinstance(value, dict) and value.get("__ckpt__") == "bytes":
        return base64.b64decode(value.get("base64", ""))
    if isinstance(value, dict):
        return {str(k): _pairs_back(v, where) for k, v in value.items()}
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return (value[0], _pairs_back(value[1], where))
    raise CopyRefused(f"{where} holds a value that is not a serde pair")
