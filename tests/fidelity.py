"""Compare what ckpt says about every checkpoint with what LangGraph says (the oracle).

`compare_case(case)` opens the store with ckpt, builds the records every view prints
(`ckpt history --json`, `show --json --blobs`, `threads --json`), and checks them against
LangGraph's own `get_state` / `get_state_history` answers recorded by fixtures/fidelity.py:

* `next`, in order (stores that keep no channel order: push tasks in order, pull tasks
  as a set, since LangGraph's node order is the graph's code, which such a store lacks);
* every task: name, id, path, error, interrupts with their ids, finished;
* the interrupts of the step, with ids;
* values: each state channel LangGraph shows, against ckpt's channel values, with delta
  channels rebuilt;
* for the latest checkpoint of each namespace, what is still to run and which
  interrupts wait (`get_state()` without a checkpoint id).

It returns every mismatch as one line with the checkpoint and both answers.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fixtures.fidelity import FidelityCase, load_oracle

from ckpt.analysis.delta import rebuild
from ckpt.analysis.history import thread_tasks
from ckpt.analysis.records import checkpoint_record, thread_record
from ckpt.decoders import key_from_env_or_arg
from ckpt.stores import open_store

CONTROL = ("__interrupt__", "__resume__", "__error__", "__error_source_node__")

# Where ckpt deliberately answers differently from LangGraph (docs/json.md, "Where ckpt and
# LangGraph differ"). Each is counted, never hidden: the report lists how often it applied.
NO_VALUES_KEPT = "the store keeps no channel values: ckpt says next is unknown"
INLINE_MEMORY_VALUES = (
    "checkpoint 2.0.21 PersistentDict: values inline, which today's InMemorySaver ignores"
)
COLON_NAMESPACE = "a node name with ':': LangGraph resolves the namespace to the wrong graph"
UNKNOWN_ENTRYPOINT = "a LangGraph.js entrypoint whose name no checkpoint of the thread records"
LEGACY_MESSAGE = "a legacy lc:1 message: ckpt shows the stored fields and class path"
UNIMPORTABLE = "a class LangGraph cannot import here: it shows the raw fields"
LEGACY_DATETIME = "a legacy JSON datetime: LangGraph revives it as None, ckpt keeps the time"
REDIS_HISTORY = (
    "RedisSaver's get_state_history contradicts its get_state on this checkpoint (values "
    "left as stored JSON, writes its has_writes flag hides): ckpt gives get_state's answer"
)
REDIS_EMPTY_NS = (
    "ShallowRedisSaver's get_state_history names the root namespace by its storage "
    "sentinel __empty__ in each snapshot's config"
)
REDIS_EXCEPTION = (
    "RedisSaver keeps an exception as an lc:2 envelope of its __dict__ (no message) and "
    "returns it unrevived: ckpt shows the object"
)


@dataclass
class Report:
    """Mismatches, and how many of each thing were compared."""

    case: str
    mismatches: list[str] = field(default_factory=list)
    compared: Counter[str] = field(default_factory=Counter)
    differences: Counter[str] = field(default_factory=Counter)  # documented, not mismatches

    def fail(self, where: str, what: str, ours: Any, theirs: Any) -> None:
        self.mismatches.append(
            f"{self.case} {where} {what}: ckpt {_short(ours)} | LangGraph {_short(theirs)}"
        )


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def compare_case(case: FidelityCase) -> Report:
    oracle = load_oracle(case)
    report = Report(case["name"])
    key = key_from_env_or_arg(case["aes_key"]) if case["aes_key"] else None
    snapshots: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for snap in oracle["snapshots"]:
        if case["kind"] == "redis" and snap["checkpoint_ns"] == "__empty__":
            report.differences[REDIS_EMPTY_NS] += 1
            snap = {**snap, "checkpoint_ns": ""}
        where = (snap["thread_id"], snap["checkpoint_ns"])
        if snap["mode"] == "live":
            live[where] = snap
        else:
            snapshots[(*where, snap["checkpoint_id"], snap["mode"])] = snap
    js = case["writer"] == "js"
    if Path(case["spec"]).name == "memory_persistentdict_cp2.0.21.pkl":
        report.differences[INLINE_MEMORY_VALUES] += len(oracle["snapshots"])
        return report
    with open_store(case["spec"], aes_key=key) as store:
        threads = {t.thread_id: t for t in store.loaded_threads()}
        if not store.listing_reads_latest:  # a keys-only listing (DynamoDB)
            for summary in store.threads():
                _compare_keys_only(report, thread_record(summary), threads[summary.thread_id])
        for thread_id in sorted(threads):
            checkpoints = store.checkpoints(thread_id, values=True)
            load = {c.key: c for c in checkpoints}.get  # parents from the thread in hand
            checkpoints = [replace(c, deltas=rebuild(c, load)) for c in checkpoints]
            tasks = thread_tasks(checkpoints)
            latest: dict[str, Any] = {}
            for checkpoint in checkpoints:
                ns = checkpoint.checkpoint_ns
                record = checkpoint_record(checkpoint, tasks=tasks[(ns, checkpoint.checkpoint_id)])
                if ns not in latest or checkpoint.checkpoint_id > latest[ns]["checkpoint_id"]:
                    latest[ns] = record
                at_snap = snapshots.get((thread_id, ns, checkpoint.checkpoint_id, "at"))
                for mode in ("at", "history"):
                    snap = snapshots.pop((thread_id, ns, checkpoint.checkpoint_id, mode), None)
                    if (
                        case["kind"] == "redis"
                        and snap is not None
                        and mode == "history"
                        and at_snap is not None
                        and _answer(snap) != _answer(at_snap)
                    ):
                        # LangGraph contradicts itself: hold ckpt to get_state's answer.
                        report.differences[REDIS_HISTORY] += 1
                        snap = {**at_snap, "mode": "history"}
                    if snap is None:
                        report.fail(
                            f"{thread_id} {ns!r} {checkpoint.checkpoint_id}",
                            f"no LangGraph {mode} snapshot",
                            "a checkpoint",
                            None,
                        )
                        continue
                    _compare_snapshot(report, case, record, snap, js=js)
            for ns, record in latest.items():
                snap = live.pop((thread_id, ns), None)
                if snap is not None:
                    _compare_live(report, case, record, snap)
            _compare_thread(report, thread_record(threads[thread_id]), latest.get(""))
    for (thread_id, ns, checkpoint_id, mode), _ in sorted(snapshots.items()):
        report.fail(f"{thread_id} {ns!r} {checkpoint_id}", f"{mode} snapshot", "none", "one")
    return report


def _where(record: dict[str, Any], mode: str) -> str:
    ns = record["checkpoint_ns"]
    step = record["metadata"].get("step") if isinstance(record["metadata"], dict) else None
    return f"{record['thread_id']} ns={ns!r} {record['checkpoint_id']} step={step} ({mode})"


def _compare_snapshot(
    report: Report, case: FidelityCase, record: dict[str, Any], snap: dict[str, Any], *, js: bool
) -> None:
    where = _where(record, snap["mode"])
    ordered = case["keeps_order"]
    report.compared["checkpoints"] += 1
    if _colon_node(record["checkpoint_ns"]):
        report.differences[COLON_NAMESPACE] += 1
        return
    ours_next = record["next"]
    if ours_next is None and record.get("channel_values") is None and not snap["next"]:
        report.differences[NO_VALUES_KEPT] += 1
        return
    if ours_next is None:
        report.fail(where, "next", None, snap["next"])
        return
    if js and _unknown_entrypoint(record, snap):
        report.differences[UNKNOWN_ENTRYPOINT] += 1
        return
    if not _same_order(ours_next, record["tasks"], snap, ordered):
        report.fail(where, "next", ours_next, snap["next"])
    report.compared["next"] += 1
    ours_tasks = {t["id"]: t for t in record["tasks"]}
    names = Counter((t["name"]) for t in record["tasks"])
    theirs_names = Counter(t["name"] for t in snap["tasks"])
    if names != theirs_names:
        report.fail(where, "task names", sorted(names.elements()), sorted(theirs_names.elements()))
    for theirs in snap["tasks"]:
        report.compared["tasks"] += 1
        ours = ours_tasks.get(theirs["id"])
        if ours is None:
            report.fail(where, f"task {theirs['name']} {theirs['id']}", None, theirs)
            continue
        _compare_task(report, where, ours, theirs, js=js)
    ours_interrupts = [(i["id"], i["value"]) for i in record["interrupts"]]
    theirs_interrupts = [(i["id"], i["value"]) for i in snap["interrupts"]]
    report.compared["interrupts"] += len(theirs_interrupts)
    if sorted(map(_short, ours_interrupts)) != sorted(map(_short, theirs_interrupts)):
        report.fail(where, "interrupts", ours_interrupts, theirs_interrupts)
    _compare_values(report, where, record, snap, js=js)


def _colon_node(checkpoint_ns: str) -> bool:
    return any(":" in level.rsplit(":", 1)[0] for level in checkpoint_ns.split("|") if level)


def _unknown_entrypoint(record: dict[str, Any], snap: dict[str, Any]) -> bool:
    """An input checkpoint of a LangGraph.js functional-API thread that never got past its
    first step: JS keeps no task paths, and no checkpoint records the entrypoint's name."""
    return (
        record["metadata"].get("step") == -1
        and [t["name"] for t in record["tasks"]] == ["__start__"]
        and len(snap["next"]) == 1
        and snap["next"] != ["__start__"]
    )


def _same_order(
    ours: list[str], tasks: list[dict[str, Any]], snap: dict[str, Any], ordered: bool
) -> bool:
    theirs = snap["next"]
    if ordered:
        return ours == theirs
    # Without LangGraph's channel order: pushes (Sends) first and in order, then the pull
    # tasks in some order.
    pushes = [t["name"] for t in tasks if t["send_index"] is not None]
    their_tasks = snap["tasks"]
    their_pushes = [t["name"] for t in their_tasks if t["path"][0] == "__pregel_push"]
    return (
        ours[: len(pushes)] == theirs[: len(their_pushes)]
        and pushes == their_pushes
        and Counter(ours) == Counter(theirs)
    )


def _compare_task(
    report: Report, where: str, ours: dict[str, Any], theirs: dict[str, Any], *, js: bool
) -> None:
    label = f"task {theirs['name']} {theirs['id'][:8]}"
    if ours["name"] != theirs["name"]:
        report.fail(where, f"{label} name", ours["name"], theirs["name"])
    their_path = _path_text(theirs["path"])
    if ours["path"] != their_path and not js:
        report.fail(where, f"{label} path", ours["path"], their_path)
    error = _error_text(ours["error"], js=js)
    if error != theirs["error"]:
        if _canonical(error) == _canonical(_redis_exception(theirs["error"])):
            report.differences[REDIS_EXCEPTION] += 1
        else:
            report.fail(where, f"{label} error", error, theirs["error"])
    if ours["finished"] != theirs["finished"]:
        report.fail(where, f"{label} finished", ours["finished"], theirs["finished"])
    ours_interrupts = [(i["id"], i["value"]) for i in ours["interrupts"]]
    theirs_interrupts = [(i["id"], i["value"]) for i in theirs["interrupts"]]
    if ours_interrupts != theirs_interrupts:
        report.fail(where, f"{label} interrupts", ours_interrupts, theirs_interrupts)


def _answer(snap: dict[str, Any]) -> str:
    """A snapshot's answer, without the mode that asked for it."""
    return _canonical({k: v for k, v in snap.items() if k != "mode"})


def _redis_exception(error: Any) -> Any:
    """The repr() of RedisSaver's unrevived exception envelope as ckpt shows the object."""
    import ast

    if not isinstance(error, str) or not error.startswith("{'lc': 2"):
        return error
    try:
        envelope = ast.literal_eval(error)
    except (ValueError, SyntaxError):
        return error
    ident, kwargs = envelope.get("id"), envelope.get("kwargs") or {}
    if not isinstance(ident, list) or not isinstance(kwargs, dict):
        return error
    return {"__type__": ".".join(map(str, ident)), **kwargs}


def _path_text(path: Any) -> str:
    """LangGraph's task_path_str of a path, from its JSON form."""
    if isinstance(path, list):
        return "~" + ", ".join(_path_text(p) for p in path)
    if isinstance(path, bool):
        return f"{int(path):010d}"
    if isinstance(path, int):
        return f"{path:010d}"
    return str(path)


def _error_text(error: Any, *, js: bool) -> Any:
    if js and isinstance(error, dict) and "message" in error:
        return f"{error.get('name', 'Error')}: {error['message']}"
    return error


def _compare_values(
    report: Report, where: str, record: dict[str, Any], snap: dict[str, Any], *, js: bool
) -> None:
    values = record.get("channel_values")
    if values is None:
        return
    rebuilt = {
        ch: delta["value"]
        for ch, delta in (record.get("delta_channels") or {}).items()
        if "value" in delta
    }
    output = snap["output_channels"]
    theirs = snap["values"] if isinstance(output, list) else {output: snap["values"]}
    if not isinstance(theirs, dict):
        return
    for channel, their_value in theirs.items():
        report.compared["values"] += 1
        if channel in rebuilt:
            ours = rebuilt[channel]
        elif channel in values:
            ours = _unwrap(values[channel])
        else:
            if their_value in ([], {}, None, ""):
                # A reducer channel never written reads as its empty value in LangGraph.
                report.differences["empty channel shown as empty"] += 1
                continue
            report.fail(where, f"value of {channel}", "absent", their_value)
            continue
        if js:
            their_value = _from_lc(their_value)
        if _canonical(ours) == _canonical(their_value):
            continue
        if _legacy_messages_match(ours, their_value):
            report.differences[LEGACY_MESSAGE] += 1
        elif _canonical(_none_for_datetimes(ours, their_value)) == _canonical(their_value):
            report.differences[LEGACY_DATETIME] += 1
        elif _canonical(_as_langgraph_falls_back(ours)) == _canonical(their_value):
            report.differences[UNIMPORTABLE] += 1
        else:
            report.fail(where, f"value of {channel}", ours, their_value)


def _legacy_messages_match(ours: Any, theirs: Any) -> bool:
    """lc:1 messages keep only the fields that differed from the defaults, under the old
    LangChain path (format.md §2.6); LangGraph revives full messages. Same fields, same class."""
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs = zip(ours, theirs, strict=True)
        return bool(ours) and all(_legacy_messages_match(a, b) for a, b in pairs)
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        return False
    kind = str(ours.get("__type__", ""))
    if not kind.startswith("langchain.schema.messages."):
        return False
    if str(theirs.get("__type__", "")).rsplit(".", 1)[-1] != kind.rsplit(".", 1)[-1]:
        return False
    return all(
        _canonical(v) == _canonical(theirs.get(k)) for k, v in ours.items() if k != "__type__"
    )


def _none_for_datetimes(ours: Any, theirs: Any) -> Any:
    """ckpt's value with None wherever LangGraph has None and ckpt an ISO datetime: the lc:2
    datetime envelopes of checkpoint 1.0.x, whose `method` LangGraph now ignores, so that
    `datetime("...")` fails and it returns None (format.md §2.6, surprise 1)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return {k: _none_for_datetimes(v, theirs.get(k)) for k, v in ours.items()}
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [_none_for_datetimes(a, b) for a, b in zip(ours, theirs, strict=True)]
    if theirs is None and isinstance(ours, str) and _is_iso_datetime(ours):
        return None
    return ours


def _is_iso_datetime(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text


def _as_langgraph_falls_back(value: Any) -> Any:
    """What LangGraph returns for an object whose class it cannot import: the raw payload
    (`_reconstruction_fallback`, format.md §2.3), where ckpt keeps the class name."""
    if isinstance(value, list):
        return [_as_langgraph_falls_back(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("__type__")
    if isinstance(kind, str) and not _importable(kind.rsplit(".", 1)[0]):
        fields = {k: v for k, v in value.items() if k != "__type__"}
        if fields.keys() == {"value"}:
            return _as_langgraph_falls_back(fields["value"])
        if fields.keys() == {"args"}:
            return _as_langgraph_falls_back(fields["args"])
        return {k: _as_langgraph_falls_back(v) for k, v in fields.items()}
    return {k: _as_langgraph_falls_back(v) for k, v in value.items()}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None  # finds, never imports it
    except (ImportError, ValueError):
        return False


def _unwrap(value: Any) -> Any:
    if isinstance(value, dict) and value.get("__ckpt__") == "delta_snapshot":
        return value.get("value")
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _from_lc(value: Any) -> Any:
    """LangChain.js's JSON of a message (lc:1 constructor) as ckpt shows an object."""
    if isinstance(value, list):
        return [_from_lc(v) for v in value]
    if isinstance(value, dict):
        if value.get("lc") == 1 and value.get("type") == "constructor":
            ident = value.get("id") or []
            kwargs = value.get("kwargs") or {}
            return {"__type__": ".".join(map(str, ident)), **_from_lc(kwargs)}
        return {k: _from_lc(v) for k, v in value.items()}
    return value


def _compare_live(
    report: Report, case: FidelityCase, record: dict[str, Any], snap: dict[str, Any]
) -> None:
    """The latest checkpoint of a namespace: what get_state() (no id) says is left."""
    where = _where(record, "live")
    report.compared["live"] += 1
    if _colon_node(record["checkpoint_ns"]):
        report.differences[COLON_NAMESPACE] += 1
        return
    if case["writer"] == "js" and _unknown_entrypoint(record, snap):
        report.differences[UNKNOWN_ENTRYPOINT] += 1
        return
    if record["checkpoint_id"] != snap["checkpoint_id"]:
        report.fail(where, "latest checkpoint", record["checkpoint_id"], snap["checkpoint_id"])
        return
    tasks = record["tasks"] or []
    left = [t["name"] for t in tasks if not t["finished"]]
    if (left if case["keeps_order"] else sorted(left)) != (
        snap["next"] if case["keeps_order"] else sorted(snap["next"])
    ):
        report.fail(where, "still to run", left, snap["next"])
    waiting = [(i["id"], i["value"]) for t in tasks for i in t["interrupts"] if not i["answered"]]
    theirs = [(i["id"], i["value"]) for i in snap["interrupts"]]
    if sorted(map(_short, waiting)) != sorted(map(_short, theirs)):
        report.fail(where, "waiting interrupts", waiting, theirs)


def _compare_keys_only(report: Report, ours: dict[str, Any], loaded: Any) -> None:
    """A keys-only listing's row agrees with the row read from the latest payload where
    keys tell (failed, interrupted, counts, ids) and says `unknown` where they cannot."""
    full = thread_record(loaded)
    told = full["status"] if full["status"] in ("error", "interrupted") else "unknown"
    if ours["status"] != told:
        report.fail(ours["thread_id"], "keys-only status", ours["status"], full["status"])
    for name in ("namespaces", "checkpoints", "checkpoint_id", "pending_writes"):
        if ours[name] != full[name]:
            report.fail(ours["thread_id"], f"keys-only {name}", ours[name], full[name])
    if ours["step"] is not None or ours["next"] is not None:
        report.fail(ours["thread_id"], "keys-only guess", ours["step"], ours["next"])
    report.compared["keys-only threads"] += 1


def _compare_thread(
    report: Report, thread: dict[str, Any], latest_root: dict[str, Any] | None
) -> None:
    """`ckpt threads` agrees with the history records of the same latest checkpoint."""
    if latest_root is None:
        if thread["checkpoint_id"] is not None:
            report.fail(thread["thread_id"], "thread root", thread["checkpoint_id"], None)
        return
    tasks = latest_root["tasks"]
    if tasks is None:
        return
    left = [t["name"] for t in tasks if not t["finished"]]
    if thread["next"] != left:
        report.fail(thread["thread_id"], "threads next", thread["next"], left)
