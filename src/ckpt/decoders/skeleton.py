"""A fast look at a checkpoint body's bookkeeping (versions, channel names) for listings.

Listing a thousand threads needs each newest checkpoint's versions, `versions_seen` and
which channels hold a value, never the values themselves. Here msgpack is parsed in C
with ext values left as opaque `slice(code, data)` placeholders: no Python runs per
message. Whenever the fields needed are not plain data, or Sends are pending (they must
be decoded for `next`), the caller falls back to `decode(..., shallow=True)`.
"""

from __future__ import annotations

from typing import Any

import ormsgpack

_PLAIN_SCALARS = (str, int, float, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN_SCALARS)
_STR = frozenset({str})
# The fields of a checkpoint body in every version (format.md §3.1).
BODY_KEYS = frozenset(
    {
        "v",
        "id",
        "ts",
        "channel_values",
        "channel_versions",
        "versions_seen",
        "updated_channels",
        "pending_sends",
    }
)


def peek_checkpoint(tag: str | None, payload: bytes) -> dict[str, Any] | None:
    """The body's `v`, `ts`, `id`, versions, `versions_seen`, `updated_channels`, and
    `channel_values` reduced to its keys (each mapped to True), or None to fall back."""
    if tag != "msgpack":
        return None
    try:
        body = ormsgpack.unpackb(payload, ext_hook=slice, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError):
        return None
    if type(body) is not dict or not body.keys() <= BODY_KEYS:
        return None  # not a checkpoint body we know all of: decode it properly
    values = body.get("channel_values", {})
    versions = body.get("channel_versions", {})
    seen = body.get("versions_seen", {})
    updated = body.get("updated_channels")
    if type(values) is not dict or not _plain_map(versions) or type(seen) is not dict:
        return None
    if not set(map(type, seen)) <= _STR or not all(map(_plain_map, seen.values())):
        return None
    if updated is not None and not (type(updated) is list and set(map(type, updated)) <= _STR):
        return None
    if body.get("pending_sends") or values.get("__pregel_tasks"):
        return None  # Sends are pending: `next` needs them decoded
    if not set(map(type, values)) <= _STR or any(k.startswith("join:") for k in values):
        return None  # barrier channels: their value decides `next`, decode it
    for key in ("v", "ts", "id"):
        if not isinstance(body.get(key), _PLAIN_SCALARS):
            return None
    peeked = {k: v for k, v in body.items() if k in ("v", "ts", "id")}
    peeked["channel_versions"] = versions
    peeked["versions_seen"] = seen
    if "updated_channels" in body:
        peeked["updated_channels"] = updated
    # A value of an `empty` placeholder never reaches a SQLite body; every key holds a value.
    peeked["channel_values"] = dict.fromkeys(values, True)
    return peeked


def _plain_map(value: Any) -> bool:
    # ormsgpack gives exact built-in types (ext values are slices): a set of the types
    # found, made at C speed, says what a loop over every item would.
    return (
        type(value) is dict
        and set(map(type, value)) <= _STR
        and set(map(type, value.values())) <= _PLAIN_TYPES
    )
