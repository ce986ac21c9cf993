"""Safe decoders: (type tag, bytes) -> plain JSON-ready values; never imports or runs stored names.

The representation is documented in docs/json.md ("Decoded values") and docs/value.schema.json.
"""

from __future__ import annotations

from ckpt.decoders.channel_versions import compare_versions, parse_version
from ckpt.decoders.crypto import key_from_env_or_arg
from ckpt.decoders.ids import uuid6_lower_bound, uuid6_time
from ckpt.decoders.lcjson import decode_json_text
from ckpt.decoders.pickle_imports import pickle_globals
from ckpt.decoders.serde import decode
from ckpt.decoders.skeleton import peek_checkpoint
from ckpt.decoders.values import ABSENT, MARK_KEY, TYPE_KEY, is_marked, undecodable_record

__all__ = [
    "ABSENT",
    "MARK_KEY",
    "TYPE_KEY",
    "compare_versions",
    "decode",
    "decode_json_text",
    "is_marked",
    "key_from_env_or_arg",
    "parse_version",
    "peek_checkpoint",
    "pickle_globals",
    "uuid6_lower_bound",
    "undecodable_record",
    "uuid6_time",
]
