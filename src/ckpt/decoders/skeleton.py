"""A fast look at a checkpoint body's bookkeeping (versions, channel names) for listings.

Listing a thousand threads needs each newest checkpoint's versions, `versions_seen` and
which channels hold a value, never the values themselves. Here msgpack is parsed in C
with ext values left as opaque `slice(code, data)` placeholders: no Python runs per
message. Whenever the fields needed are not plain data, or Sends are pending (they must
be decoded for `next`), the caller falls back to `decode(..., shallow=True)`.
"""

from __future__ import annotations

from typing import Any

import orjson
import ormsgpack

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
TASKS = "__pregel_tasks"


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
    values = body.pop("channel_values", {})
    if type(values) is not dict or body.pop("pending_sends", None):
        return None  # Sends are pending: `next` needs them decoded
    if values.get(TASKS) not in ([], None):
        # Sends, or anything else (a falsy b"" decodes to a bytes record, which `next`
        # takes as an unread value): only the full decode says what it means.
        return None
    # A value of an `empty` placeholder never reaches a SQLite body; every key holds a value.
    channels = dict.fromkeys(values, True)
    # What the full decode would change (make_json_ready) is what orjson refuses (an ext
    # value's placeholder, bin, a non-string key) or writes as text that a marker below
    # finds (NaN and infinities as null, a reserved key): one pass in C over every field
    # kept, where a check per map costs more than the unpacking. A marker may also be
    # found in a string; then the body is only decoded the slow way.
    updated = body.get("updated_channels", ())
    if updated is None:  # after update_state: plain, but written as null
        del body["updated_channels"]
    try:
        text = orjson.dumps((body, channels))
    except (TypeError, orjson.JSONEncodeError):
        return None
    if b"null" in text or b'__type__"' in text or b'__ckpt__"' in text:
        return None
    if "join:" in "\0".join(channels):
        return None  # barrier channels: their value decides `next`, decode it
    if updated is None:
        body["updated_channels"] = None
    body.setdefault("channel_versions", {})
    body.setdefault("versions_seen", {})
    body["channel_values"] = channels
    return body
