"""Resolve what a user typed (id, prefix, short id, THREAD, THREAD~N) to one checkpoint."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Final

from ckpt.errors import Ambiguous, BadOption, CkptError, NotFound, RefusedGlobal
from ckpt.records.model import CheckpointKey, DumpQuery
from ckpt.records.vocabulary import FIND_LIMIT
from ckpt.records.when import When
from ckpt.stores.base import Store

_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
SHORT_ID_LENGTH = 8
FULL_ID_LENGTH = 32  # a uuid6 without dashes; LangGraph writes 36 (0.1 thread_ts too)


def short_id(checkpoint_id: str) -> str:
    """The id as tables print it: its last 8 characters, the random part of a uuid6.

    The leading characters of a uuid6 are its timestamp, which checkpoints written in the
    same half-minute share, so a prefix of 8 would rarely be unique (format.md §3.3).
    """
    return checkpoint_id[-SHORT_ID_LENGTH:]


SHOWN = 5  # candidates an ambiguous selector's message names


def did_you_mean(store: Store, thread_id: str) -> str:
    """`; did you mean 'support-1'?` for a misspelt thread id, or nothing."""
    try:
        ids = store.thread_ids()
    except CkptError:  # a suggestion must never hide the error it adds to
        return ""
    return closest_thread(thread_id, ids)


def closest_thread(thread_id: str, ids: Iterable[str]) -> str:
    """`did_you_mean` among thread ids already in hand (`ckpt browse` has them listed)."""
    import difflib

    close = difflib.get_close_matches(thread_id, list(ids), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def missing(store: Store, message: str) -> CkptError:
    """NotFound(message) for a thread a store does not hold; RefusedGlobal (exit 9) when
    what holds its threads was refused, so the thread may be there (Store.threads_refused)."""
    if store.threads_refused:
        return RefusedGlobal(f"{message.split(';')[0]}, but {store.threads_refused}")
    return NotFound(message)


def resolve(store: Store, selector: str, *, checkpoint_ns: str | None = None) -> CheckpointKey:
    """Find the one checkpoint a selector names, or raise NotFound / Ambiguous."""
    ns = checkpoint_ns or ""
    if store.thread_exists(selector):  # a blank id too: `threads` shows it quoted ('')
        return _latest(store, selector, ns)
    if not selector.strip():
        raise BadOption("empty checkpoint selector: give an id, a prefix, THREAD or THREAD~N")
    thread, tilde, back = selector.rpartition("~")
    if tilde and thread and back.isdigit() and store.thread_exists(thread):
        return ancestor(store, _latest(store, thread, ns), int(back))
    # A full id (what `threads --json`, `stats` and `history --json` print) is probed
    # through the key index; a prefix or a short id is matched by `find`.
    keys = store.find_exact(selector) if len(selector) >= FULL_ID_LENGTH else []
    keys = keys or store.find(selector)
    if checkpoint_ns is not None:
        keys = [k for k in keys if k.checkpoint_ns == checkpoint_ns]
    exact = [k for k in keys if k.checkpoint_id == selector]
    if exact:
        keys = exact
    if not keys:
        raise missing(
            store,
            f"no thread or checkpoint matches {selector!r} in {store.location}"
            + did_you_mean(store, selector),
        )
    if len({k.checkpoint_id for k in keys}) > 1 or len(keys) > 1:
        candidates = [
            f"{k.checkpoint_id} (thread {k.thread_id}"
            + (f", ns {k.checkpoint_ns}" if k.checkpoint_ns else "")
            + ")"
            for k in keys
        ]
        count = f"{len(keys)} or more" if len(keys) >= FIND_LIMIT else str(len(keys))
        raise Ambiguous(
            f"{selector!r} matches {count} checkpoints: "
            + "; ".join(candidates[:SHOWN])
            + (
                ("; and more" if len(keys) >= FIND_LIMIT else f"; and {len(keys) - SHOWN} more")
                if len(candidates) > SHOWN
                else ""
            ),
            candidates,
        )
    return keys[0]


def _latest(store: Store, thread_id: str, checkpoint_ns: str) -> CheckpointKey:
    key = store.latest_key(thread_id, checkpoint_ns)
    if key is None and checkpoint_ns:
        # `--ns research` for `research:<task id>`: the node's name, when one run has it.
        runs = [
            ns
            for ns in store.namespaces(thread_id)
            if ns and "|".join(p.split(":", 1)[0] for p in ns.split("|")) == checkpoint_ns
        ]
        if len(runs) == 1:
            key = store.latest_key(thread_id, runs[0])
        elif runs:
            shown = ", ".join(repr(ns) for ns in runs[:SHOWN])
            more = f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
            raise Ambiguous(
                f"{checkpoint_ns!r} names {len(runs)} subgraph runs of thread {thread_id!r}: "
                f"{shown}{more} (pick one with `ns`)",
                runs,
            )
    if key is None:
        where = f"namespace {checkpoint_ns!r}" if checkpoint_ns else "the root namespace"
        others = [ns for ns in store.namespaces(thread_id) if ns != checkpoint_ns]
        shown = ", ".join(repr(ns or "") for ns in others[:SHOWN])
        more = f" and {len(others) - SHOWN} more" if len(others) > SHOWN else ""
        hint = f"; its namespaces: {shown}{more} (pick one with `ns`)" if others else ""
        raise NotFound(f"thread {thread_id!r} has no checkpoint in {where}{hint}")
    return key


def ancestor(store: Store, key: CheckpointKey, generations: int) -> CheckpointKey:
    """Follow parent ids (never id order, format.md §8.14) `generations` steps back."""
    current = key
    for step in range(generations):
        parent = store.load(current, values=False).parent_checkpoint_id
        if parent is None:
            raise NotFound(
                f"{key.thread_id}~{generations}: the thread has only {step + 1} "
                f"checkpoint(s) on this chain"
            )
        current = CheckpointKey(current.thread_id, current.checkpoint_ns, parent)
    return current


def id_bound(store: Store, value: When, name: str, now: dt.datetime) -> str:
    """A time as a checkpoint id bound (uuid6 ids sort by time, format.md §3.3): a time,
    an age, a full checkpoint id, or a selector whose checkpoint's id bounds."""
    from ckpt.decoders import uuid6_lower_bound
    from ckpt.records.when import EXAMPLES, moment, parse_when

    parsed = parse_when(value, name)
    if not isinstance(parsed, str):
        return uuid6_lower_bound(moment(parsed, now))
    if _UUID.fullmatch(parsed):
        return parsed.lower()
    try:
        return resolve(store, parsed).checkpoint_id
    except NotFound as exc:
        raise NotFound(
            f"`{name}` {parsed!r} is neither {EXAMPLES} nor a checkpoint or thread ({exc})"
        ) from None


def time_of(store: Store, value: When, name: str, now: dt.datetime) -> dt.datetime:
    """A time as a moment: a checkpoint id or thread gives its checkpoint's time."""
    from ckpt.decoders import uuid6_time
    from ckpt.records.when import EXAMPLES, moment, parse_when, updated_at

    parsed = parse_when(value, name)
    if not isinstance(parsed, str):
        return moment(parsed, now)
    try:
        key = resolve(store, parsed)
    except NotFound as exc:
        raise NotFound(
            f"`{name}` {parsed!r} is neither {EXAMPLES} nor a checkpoint or thread ({exc})"
        ) from None
    # Its `ts`, which the threads' `updated_at` is, else the time in its uuid6 id.
    when = updated_at(store.load(key, values=False).ts) or uuid6_time(key.checkpoint_id)
    if when is None:
        raise BadOption(f"`{name}` {parsed!r}: checkpoint {key.checkpoint_id} tells no time")
    return when


def dump_query(
    store: Store,
    *,
    threads: Sequence[str] = (),
    ns: str | None = None,
    since: When | None = None,
    until: When | None = None,
    since_id: str | None = None,
    until_id: str | None = None,
    latest: bool = False,
) -> DumpQuery:
    """What `dump` asks the store for: the threads, a namespace, and the times or ids
    that bound the checkpoints (a time, an age, a checkpoint or a thread: `id_bound`)."""
    if since is not None and since_id is not None:
        raise BadOption("`since` and `since_id`: give one")
    if until is not None and until_id is not None:
        raise BadOption("`until` and `until_id`: give one")
    now = dt.datetime.now(dt.UTC)
    return DumpQuery(
        thread_ids=tuple(threads),
        checkpoint_ns=ns,
        since_id=id_bound(store, since, "since", now) if since is not None else since_id,
        until_id=id_bound(store, until, "until", now) if until is not None else until_id,
        latest_only=latest,
    )


def known_threads(store: Store, threads: Sequence[str]) -> tuple[str, ...]:
    """`threads` as the API takes them: each one there (NotFound names the first that is
    not), duplicates dropped, in the order given."""
    for thread_id in threads:
        if not thread_id.strip() and not store.thread_exists(thread_id):
            raise BadOption(f"empty thread id {thread_id!r} in `threads`: no thread has it")
        if not store.thread_exists(thread_id):
            raise missing(store, f"no thread {thread_id!r} in {store.location}")
    return tuple(dict.fromkeys(threads))
