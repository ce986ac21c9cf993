"""The record of `ckpt types` (TypesRecord, docs/json.md "ckpt types"): the counts a type
census (ckpt.scan.census) kept, turned into types with their statuses, what strict mode
degrades, the allowlist to paste, and the store's era."""

from __future__ import annotations

import json
from typing import Any

from ckpt.decoders.safe_types import RELEASE
from ckpt.records.types import (
    AllowlistRecord,
    DegradeRecord,
    PickleGlobalRecord,
    TagCountRecord,
    TypeExampleRecord,
    TypesEncryptionRecord,
    TypesRecord,
    TypesStoreRecord,
    TypeUseRecord,
    UsesRecord,
)
from ckpt.scan.census import (
    _BECOMES,
    _STATUS_ORDER,
    LC1,
    LC2,
    Census,
    Example,
    TypeKey,
    _Uses,
    type_status,
)
from ckpt.stores.base import Store


def census_record(store: Store, census: Census) -> TypesRecord:
    """The record of a census the one pass fed (ckpt.scan.rows)."""
    census.flush()
    return _record(census, _store_record(store))


def _record(self: Census, store: TypesStoreRecord) -> TypesRecord:
    merged = _merge_by_class(self.types)
    types = sorted(
        (_type_record(key, codes, uses) for key, (codes, uses) in merged.items()),
        key=lambda t: (_STATUS_ORDER[t["status"]], t["module"], t["name"], t["method"] or ""),
    )
    return {
        "store": store,
        "safe_list": RELEASE,
        "scanned": {
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "blobs": self.blobs,
            "writes": self.writes,
            "values": self.values,
            "undecodable": self.undecodable,
        },
        "checkpoint_versions": [
            {"v": v, "checkpoints": n}
            for v, n in sorted(self.versions.items(), key=lambda i: (i[0] is None, i[0] or 0))
        ],
        "tags": _tag_records(self),
        "ext_codes": [
            {"code": code, "count": count, "malformed": malformed}
            for code, (count, malformed) in sorted(self.ext_counts.items())
        ],
        "types": types,
        "pickle": {
            "values": self.pickle_values,
            "globals": [_pickle_record(name, uses) for name, uses in sorted(self.pickles.items())],
        },
        "would_degrade": _degrade(types),
        "allowlist": _allowlist(types, pickle=self.pickle_values > 0),
        "encryption": _encryption_record(self),
        "undecodable": self.problems,
    }


def _tag_records(self: Census) -> list[TagCountRecord]:
    order = {"checkpoints": 0, "blobs": 1, "writes": 2, "metadata": 3}
    items = sorted(self.tags.items(), key=lambda i: (order[i[0][1]], i[0][0] or ""))
    return [
        {
            "tag": tag,
            "part": part,  # type: ignore[typeddict-item]
            "plain": entry.plain,
            "encrypted": entry.encrypted,
            "ciphers": sorted(entry.ciphers),
        }
        for (tag, part), entry in items
    ]


def _encryption_record(self: Census) -> TypesEncryptionRecord:
    note = None
    if self.hidden and self.aes_key is None:
        note = (
            f"{self.hidden} encrypted value(s): the classes inside them need the AES "
            "key (LANGGRAPH_AES_KEY); tags and counts are complete"
        )
    elif self.wrong_key:
        note = f"{self.wrong_key} value(s) did not decrypt with the key given"
    elif self.hidden:
        note = f"{self.hidden} value(s) use a cipher ckpt cannot decrypt"
    return {
        "encrypted": self.encrypted,
        "key": self.aes_key is not None,
        "decrypted": self.decrypted,
        "hidden": self.hidden,
        "note": note,
    }


def _merge_by_class(
    types: dict[TypeKey, _Uses],
) -> dict[tuple[str, str, str, str | None], tuple[list[int], _Uses]]:
    """One entry per (serde, module, name, method): a class stored with several ext codes
    (say ext 4 by an old release, ext 5 now) is one row with both codes."""
    merged: dict[tuple[str, str, str, str | None], tuple[list[int], _Uses]] = {}
    for (code, module, name, method), uses in sorted(types.items(), key=lambda i: i[0][0]):
        serde = "json" if code in (LC1, LC2) else "msgpack"
        # lc:1 and lc:2 envelopes of one class are told apart: LangGraph treats them apart.
        slot = (serde if serde == "msgpack" else f"json{code}", module, name, method)
        if slot not in merged:
            merged[slot] = ([code], _Uses(example=uses.example))
        codes, total = merged[slot]
        if code not in codes:
            codes.append(code)
        total.count += uses.count
        total.threads = max(total.threads, uses.threads)  # a class's threads, not their sum
        total.channels |= uses.channels
        total.writes |= uses.writes
        total.elsewhere |= uses.elsewhere
    return merged


def _type_record(
    key: tuple[str, str, str, str | None], codes: list[int], uses: _Uses
) -> TypeUseRecord:
    _, module, name, method = key
    code = codes[0]
    status = type_status(code, module, name, method)
    json_tag = code in (LC1, LC2)
    becomes = None
    if status in ("allowlist", "blocked"):
        becomes = " or ".join(dict.fromkeys(_BECOMES[c] for c in codes if c in _BECOMES))
    return {
        "module": module,
        "name": name,
        "method": method,
        "serde": "json" if json_tag else "msgpack",
        "ext": [] if json_tag else sorted(codes),
        "lc": (1 if code == LC1 else 2) if json_tag else None,
        "status": status,
        "becomes": becomes,
        **_uses_record(uses),
    }


def _pickle_record(name: str, uses: _Uses) -> PickleGlobalRecord:
    return {"name": name, **_uses_record(uses)}


def _uses_record(uses: _Uses) -> UsesRecord:
    """How often a type or global is named, where, and one place it is (both records end so)."""
    return {
        "count": uses.count,
        "threads": uses.threads,
        "channels": sorted(uses.channels),
        "writes": sorted(uses.writes),
        "elsewhere": sorted(uses.elsewhere),
        "example": _example_record(uses.example),
    }


def _example_record(example: Example | None) -> TypeExampleRecord:
    assert example is not None  # every counted use had one
    thread_id, ns, checkpoint_id, part, channel, version = example
    record: TypeExampleRecord = {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": checkpoint_id,
        "part": part,  # type: ignore[typeddict-item]
        "channel": channel,
    }
    if part == "blob":
        record["version"] = version
    return record


def _degrade(types: list[TypeUseRecord]) -> list[DegradeRecord]:
    """What strict mode gives back instead of the object, most frequent first."""
    found: list[DegradeRecord] = [
        {
            "module": t["module"],
            "name": t["name"],
            "method": t["method"],
            "serde": t["serde"],
            "count": t["count"],
            "becomes": t["becomes"] or "",
            "fixed_by_allowlist": t["status"] == "allowlist",
        }
        for t in types
        if t["status"] in ("allowlist", "blocked")
    ]
    return sorted(found, key=lambda d: (-d["count"], d["module"], d["name"]))


def _allowlist(types: list[TypeUseRecord], *, pickle: bool) -> AllowlistRecord:
    msgpack = sorted(
        {
            (t["module"], t["name"])
            for t in types
            if t["status"] == "allowlist" and t["serde"] == "msgpack"
        }
    )
    lc2 = sorted(
        {
            (*t["module"].split("."), t["name"]) if t["module"] else (t["name"],)
            for t in types
            if t["status"] == "allowlist" and t["serde"] == "json"
        }
    )
    python = _python_allowlist("allowed_msgpack_modules", [tuple(p) for p in msgpack])
    if lc2:
        python += ",\n" + _python_allowlist("allowed_json_modules", lc2)
    if pickle:
        python += ",\npickle_fallback=True"
    serde: dict[str, Any] = {"allowed_msgpack_modules": [list(p) for p in msgpack]}
    if lc2:
        serde["allowed_json_modules"] = [list(p) for p in lc2]
    if pickle:
        serde["pickle_fallback"] = True
    return {
        "msgpack": [list(p) for p in msgpack],
        "json": [list(p) for p in lc2],
        "pickle_fallback": pickle,
        "python": python,
        "langgraph_json": {"checkpointer": {"serde": serde}},
    }


def _python_allowlist(keyword: str, entries: list[tuple[str, ...]]) -> str:
    """`keyword=[("module", "Name"), ...]`, one entry a line, ready to paste into
    JsonPlusSerializer(...)."""
    if not entries:
        return f"{keyword}=[]"
    lines = "".join(f"    {_tuple_text(entry)},\n" for entry in entries)
    return f"{keyword}=[\n{lines}]"


def _tuple_text(entry: tuple[str, ...]) -> str:
    parts = ", ".join(json.dumps(part, ensure_ascii=False) for part in entry)
    return f"({parts},)" if len(entry) == 1 else f"({parts})"


# -- the store's era -----------------------------------------------------------------------


def _store_record(store: Store) -> TypesStoreRecord:
    """The schema era (format.md §4.1, 5.1, 6, 7), from what the reader found on opening."""
    return {
        "location": store.location,
        "kind": store.kind,
        "era": store.era,
        "era_note": store.era_note,
    }
