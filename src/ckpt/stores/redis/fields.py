"""RedisSaver's documents and the answers of its search index, read by themselves: a
key's name, a checkpoint or write document's fields and what they say against the key,
the values LangGraph.js keeps, and the search answers (ckpt.stores.redis.store reads
the server; this module only reads what it gave)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Any, Final

import orjson

from ckpt.decoders import undecodable_record
from ckpt.decoders.jsontext import long_integer
from ckpt.decoders.redisjson import (
    decode_redis_json,
    decode_redis_value,
)
from ckpt.errors import (
    DecodeError,
)
from ckpt.records.model import (
    CheckpointKey,
    PendingWrite,
    RawCheckpoint,
)
from ckpt.stores.documents import WriteFields
from ckpt.stores.redis.keys import (
    EMPTY_NS,
    CheckpointName,
    WriteName,
    from_storage_id,
    from_storage_ns,
    js_blob_key,
)
from ckpt.stores.redis.session import tag_escape


def _json_object(text: bytes | str) -> dict[str, Any] | None:
    """The JSON object `text` holds (a document, a JSON.GET answer of several paths), or
    None when it is not JSON or not an object."""
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def name(key: CheckpointKey) -> CheckpointName:
    return CheckpointName(key.thread_id, key.checkpoint_ns, key.checkpoint_id)


def write_fields(
    text: bytes, key: CheckpointKey | None = None, *, root: str = EMPTY_NS
) -> WriteFields:
    """`root`: how the saver spells the root namespace inside its write documents
    (`__empty__`; LangGraph.js's `""`)."""
    doc = _json_object(text) or {}
    fields = document_write(doc)
    if key is not None and "thread_id" in doc:
        # RedisSaver finds a checkpoint's writes by the document's fields, not its key:
        # a document naming another checkpoint is a write of that one (or of none).
        ns = doc.get("checkpoint_ns")
        home = (
            str(doc.get("thread_id")),
            "" if ns == "__empty__" else str(ns),
            str(doc.get("checkpoint_id")),
        )
        if home != (key.thread_id, key.checkpoint_ns, key.checkpoint_id):
            return dataclasses.replace(fields, home=home)
        if ns == "" and root:
            # RedisSaver searches the root's writes by `__empty__`: never found.
            why = f"its `checkpoint_ns` is '' where the saver writes {root!r}: never found"
            return dataclasses.replace(fields, misfiled=why)
    return fields


def document_write(doc: dict[str, Any]) -> WriteFields:
    blob = doc.get("blob")
    data: bytes | None = None
    if "blob" not in doc and "value" in doc:
        # LangGraph.js: the value itself, as JSON (type "json", or "string" for a primitive).
        data = orjson.dumps(doc["value"])
        tag = doc.get("type")
        return WriteFields(
            task_id=str(doc.get("task_id", "")),
            task_path=str(doc.get("task_path", "")),
            idx=doc["idx"] if type(doc.get("idx")) is int else 0,
            channel=str(doc.get("channel", "")),
            type="json" if tag in ("json", "string") else (tag if isinstance(tag, str) else None),
            data=data,
            size=len(data),
        )
    if isinstance(blob, str):
        try:
            data = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            data = blob.encode("utf-8", "surrogatepass")
        return WriteFields.judged(doc, data)
    # RedisSaver decodes every write's `blob` as base64 text, whatever its type says
    # (`_decode_blob_static`, a null value's too): anything else fails its read.
    why = f"its blob is {'missing' if 'blob' not in doc else type(blob).__name__}, not text"
    return dataclasses.replace(WriteFields.judged(doc, None), misfiled=why)


def decoded(tag: str | None, data: bytes | None, aes_key: bytes | None) -> Any:
    try:
        return decode_redis_value(tag, data, aes_key)
    except DecodeError as exc:
        return undecodable_record(data, str(exc), tag=tag)


def metadata(raw: Any) -> dict[str, Any]:
    """The document's `metadata`: a JSON string (the saver's serde JSON)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw:
        return {}
    text = raw.encode("utf-8", "surrogatepass")
    try:
        metadata = decode_redis_json(text)
    except DecodeError:
        return undecodable_record(text, "metadata is not JSON")
    return metadata if isinstance(metadata, dict) else {"value": metadata}


def raw_checkpoint(
    name: CheckpointName, text: bytes, *, data: bool, measured: int | None = None
) -> RawCheckpoint:
    doc = _json_object(text)
    body = b""
    metadata = b""
    parent = None
    parsed = None
    if doc is not None:
        checkpoint = doc.get("checkpoint")
        body = orjson.dumps(checkpoint) if checkpoint is not None else b""
        # What json_document(body) gives, read once: orjson's value is json's but for a
        # long integer (ckpt.decoders.jsontext), and orjson reads its own text back alike.
        if checkpoint is not None and data and not long_integer(text):
            parsed = checkpoint
        raw_metadata = doc.get("metadata")
        if isinstance(raw_metadata, str):
            metadata = raw_metadata.encode("utf-8", "surrogatepass")
        elif isinstance(raw_metadata, dict):  # ShallowRedisSaver keeps it as an object
            metadata = orjson.dumps(raw_metadata)
        stored_parent = doc.get("parent_checkpoint_id")
        # A parent of another type is what RedisSaver links to (check judges it as text).
        parent = (
            from_storage_id(stored_parent)
            if isinstance(stored_parent, str)
            else None
            if stored_parent is None
            else str(stored_parent)
        )
    else:
        body = text
    return RawCheckpoint(
        misfiled=misfiled(name, doc),
        thread_id=name.thread_id,
        checkpoint_ns=name.checkpoint_ns,
        checkpoint_id=name.checkpoint_id,
        parent_checkpoint_id=parent or None,
        type="json",
        body=body if data else b"",
        metadata_type="json",
        metadata=metadata if data else b"",
        body_size=len(body),
        metadata_size=len(metadata),
        measured=measured,
        parsed=parsed,
    )


# The fields RedisSaver searches and reads beside the body, and the types it writes.
FIELD_TYPES: Final = {
    "checkpoint_ts": (int, float),
    "has_writes": (bool,),
    "source": (str,),
    "step": (int,),
}


def misfiled(name: CheckpointName, doc: Any) -> str | None:
    """What a checkpoint document's own fields say against its key: RedisSaver finds
    checkpoints by those fields (the search index), so a document naming another
    thread, namespace or id, or holding a field of another type, is not the checkpoint
    its key says (or is dropped from the index)."""
    if not isinstance(doc, dict) or "thread_id" not in doc:
        return None  # LangGraph.js's documents, or no document: judged elsewhere
    ns = doc.get("checkpoint_ns")
    if ns == "":
        # The saver keeps the root as `__empty__` here, and searches by it: never found.
        return "its `checkpoint_ns` is '' where the saver writes '__empty__': never found"
    said = (doc.get("thread_id"), "" if ns == "__empty__" else ns, doc.get("checkpoint_id"))
    if said != (name.thread_id, name.checkpoint_ns, name.checkpoint_id):
        shown = ", ".join(str(part)[:60] for part in said)
        return f"the document names ({shown}), its key another checkpoint"
    for field_name, types in FIELD_TYPES.items():
        value = doc.get(field_name)
        if field_name in doc and (not isinstance(value, types) or (
            type(value) is bool and bool not in types
        )):  # fmt: skip
            return f"its `{field_name}` is {type(value).__name__}"
    return None


def indexing_failures(answer: Any) -> int:
    """FT.INFO's count of documents that failed indexing (RESP2: a flat list)."""
    if isinstance(answer, list):
        for at in range(0, len(answer) - 1, 2):
            if answer[at] in (b"hash_indexing_failures", "hash_indexing_failures"):
                try:
                    return int(answer[at + 1])
                except (TypeError, ValueError):
                    return 0
    return 0


def index_fields(answer: Any) -> list[tuple[str, str]]:
    """The top-level document fields an index reads, with their types, from FT.INFO."""
    found: list[tuple[str, str]] = []
    if not isinstance(answer, list):
        return found
    for at in range(0, len(answer) - 1, 2):
        if answer[at] not in (b"attributes", "attributes") or not isinstance(answer[at + 1], list):
            continue
        for attribute in answer[at + 1]:
            if not isinstance(attribute, list):
                continue
            pairs = {
                text_of(attribute[i]): text_of(attribute[i + 1])
                for i in range(0, len(attribute) - 1, 2)
            }
            path, kind = pairs.get("identifier", ""), pairs.get("type", "")
            if path.startswith("$.") and path[2:].isidentifier():
                found.append((path[2:], kind))
    return found


def text_of(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# The JSON types a field of each index type takes (RediSearch 2.x on JSON documents).
INDEXABLE: Final = {"TAG": (str, bool, list), "TEXT": (str, list), "NUMERIC": (int, float)}


def left_out_why(text: bytes, fields: list[tuple[str, str]]) -> str:
    """Why RedisSaver never reads a document its search index left out."""
    why = "the saver's search index leaves it out, so RedisSaver never reads it"
    doc = _json_object(text)
    if doc is None:
        return why
    for field_name, kind in fields:
        value = doc.get(field_name)
        types = INDEXABLE.get(kind)
        if value is None or types is None:
            continue
        wrong = not isinstance(value, types) or (kind == "NUMERIC" and type(value) is bool)
        if kind == "TAG" and isinstance(value, list):
            wrong = not all(isinstance(v, str | bool) for v in value)
        if wrong:
            return f"its `{field_name}` is {type(value).__name__}: {why}"
    return why


def paths(answer: Any) -> dict[str, Any]:
    """JSON.GET of several `$` paths: each path's one match."""
    if not isinstance(answer, bytes | str):
        return {}
    found = _json_object(answer)
    if found is None:
        return {}
    return {k: v[0] for k, v in found.items() if isinstance(v, list) and v}


def first(answer: Any) -> Any:
    """The one match of a `$` path (JSON.GET answers a JSON array)."""
    if not isinstance(answer, bytes | str):
        return None
    try:
        found = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return None
    return found[0] if isinstance(found, list) and found else None


def registry_order(writes: list[PendingWrite]) -> list[PendingWrite]:
    """RedisSaver's order, which its get_tuple() hands LangGraph: the write registry's
    (`write_keys_zset`, ZRANGE by score: a task's `__interrupt__` before its `__resume__`,
    tasks interleaved as they wrote), one write per (task id, idx), the last one read kept
    where the first stood (its `_load_writes` dict), not LangGraph's (task_path, task_id,
    idx) sort (issue 46 §5)."""
    kept: dict[tuple[str, int], PendingWrite] = {}
    for write in writes:
        kept[(write.task_id, write.idx)] = write
    return list(kept.values())


# What names a checkpoint's document, and a write's, in its own fields: how a key whose
# name does not split one way (keys.py) is named.
NAME_PATHS: Final = ("$.thread_id", "$.checkpoint_ns", "$.checkpoint_id")
WRITE_NAME_PATHS: Final = (*NAME_PATHS, "$.task_id", "$.idx")


def _first_values(answer: Any, paths: tuple[str, ...]) -> list[Any] | None:
    """The first value at each of `paths` in a JSON.GET answer of several paths (None
    where a path found nothing), or None when the answer is not such an object."""
    if not isinstance(answer, bytes | str):
        return None
    fields = _json_object(answer)
    if fields is None:
        return None
    return [(fields.get(path) or [None])[0] for path in paths]


def write_name_from_fields(answer: Any) -> WriteName | None:
    """A write's name from its document's fields (JSON.GET of WRITE_NAME_PATHS), or None."""
    values = _first_values(answer, WRITE_NAME_PATHS)
    if values is None:
        return None
    thread_id, ns, checkpoint_id, task_id, idx = values
    if not all(isinstance(v, str) for v in (thread_id, ns, checkpoint_id, task_id)):
        return None
    if isinstance(idx, str) and idx.lstrip("-").isdigit():
        idx = int(idx)
    if not isinstance(idx, int) or isinstance(idx, bool):
        return None
    return WriteName(
        from_storage_id(thread_id), from_storage_ns(ns), from_storage_id(checkpoint_id),
        task_id, idx,
    )  # fmt: skip


def name_from_fields(answer: Any) -> CheckpointName | None:
    """A checkpoint's name from its document's fields (JSON.GET of NAME_PATHS), or None."""
    values = _first_values(answer, NAME_PATHS)
    if values is None or not all(isinstance(v, str) for v in values):
        return None
    thread_id, ns, checkpoint_id = values
    return CheckpointName(
        from_storage_id(thread_id), from_storage_ns(ns), from_storage_id(checkpoint_id)
    )


def js_document(text: bytes, name: CheckpointName, blobs: dict[str, Any]) -> Any:
    """A LangGraph.js RedisSaver document with its channel values whole (the inline ones,
    then the blobs of the others), decoded: lc envelopes, and its `lg_name` Send and
    DeltaSnapshot, which LangGraph.js's own JSON elsewhere writes without the tag."""
    from ckpt.decoders.redisjson import decode_js_redis

    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None
    body = doc.get("checkpoint") if isinstance(doc, dict) else None
    if isinstance(body, dict):
        values = dict(body.get("channel_values") or {})
        versions = body.get("channel_versions")
        for channel, version in versions.items() if isinstance(versions, dict) else ():
            key = js_blob_key(name.thread_id, name.checkpoint_ns, channel, version)
            if channel not in values and key in blobs:
                values[channel] = blobs[key]
        body["channel_values"] = values
    metadata = doc.get("metadata") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and isinstance(metadata, dict):
        doc["metadata"] = orjson.dumps(metadata).decode()  # as Python's saver keeps it
    return decode_js_redis(doc)


def js_value(data: bytes | None) -> Any:
    """A LangGraph.js write's value (JSON we re-serialized from its document)."""
    from ckpt.decoders.redisjson import decode_js_redis

    if data is None:
        return None
    try:
        return decode_js_redis(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        return undecodable_record(data, str(exc), tag="json")


def writes_of(
    names: list[CheckpointName], listed: list[tuple[str, WriteName]]
) -> list[tuple[str, WriteName]]:
    """A thread's listed writes that belong to one of its checkpoints `names`."""
    ids = {(n.checkpoint_ns, n.checkpoint_id) for n in names}
    return [(k, w) for k, w in listed if (w.checkpoint_ns, w.checkpoint_id) in ids]


def stray_queries(run: list[list[CheckpointName]]) -> list[tuple[int, str]]:
    """The RediSearch queries for writes naming a thread's checkpoint ids under another
    thread, 50 ids a query, each with the place of its thread in `run`."""
    queries: list[tuple[int, str]] = []
    for at, names in enumerate(run):
        ids = sorted({n.checkpoint_id for n in names})
        thread = tag_escape(names[0].thread_id or "00000000-0000-0000-0000-000000000000")
        for start in range(0, len(ids), 50):
            wanted = "|".join(tag_escape(i) for i in ids[start : start + 50])
            queries.append((at, f"@checkpoint_id:{{{wanted}}} -@thread_id:{{{thread}}}"))
    return queries
