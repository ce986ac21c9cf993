"""Long fuzz run of the decoder (`make fuzz`): mutated real blobs, then a LangGraph differential.

usage: python bench/fuzz.py [--seconds 60] [--seed N] [--oracle-examples 3000]

Phase 1 mutates real blobs (the checked-in sample stores and values LangGraph serializes
here) and decodes each result under a random tag and options. The property: decode returns
JSON-ready data (or ABSENT), or raises ckpt.errors.DecodeError, within two seconds. Any
other exception, or a slow case, is printed and its input saved under bench/out/fuzz/.

Phase 2 runs the hypothesis differential of tests/test_decode_oracle.py (decode against
LangGraph's own loads_typed) with many more examples than the test suite does.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import pickle
import random
import sqlite3
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import ormsgpack  # noqa: E402

from ckpt.decoders import ABSENT, decode  # noqa: E402
from ckpt.errors import DecodeError  # noqa: E402

OUT = ROOT / "bench" / "out" / "fuzz"
TAGS = ["msgpack", "msgpack", "msgpack", "json", "pickle", None, "msgpack+aes", "bytes", "x"]
KEY = b"0123456789abcdef"
INTERESTING = [0x00, 0x7F, 0x80, 0x90, 0xC0, 0xC1, 0xC4, 0xC6, 0xC7, 0xC9, 0xCB, 0xD4, 0xD9]
INTERESTING += [0xDC, 0xDD, 0xDE, 0xDF, 0xFF]
SLOW_SECONDS = 2.0


def corpus() -> list[tuple[str | None, bytes]]:
    """Real blobs: every row of the sample stores, plus rich values LangGraph serializes."""
    blobs: list[tuple[str | None, bytes]] = []
    for store in sorted((ROOT / "tests" / "data").glob("*.db")):
        with sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True) as connection:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            columns = {row[1] for row in connection.execute("PRAGMA table_info(checkpoints)")}
            if "type" in columns:
                rows = list(connection.execute("SELECT type, checkpoint FROM checkpoints"))
                if "writes" in tables:
                    rows += connection.execute("SELECT type, value FROM writes")
            else:
                rows = [
                    (None, body)
                    for (body,) in connection.execute("SELECT checkpoint FROM checkpoints")
                ]
        blobs.extend((tag, bytes(payload)) for tag, payload in rows if payload)
    blobs.extend((None, path.read_bytes()) for path in (ROOT / "tests" / "data").glob("*.pkl"))
    blobs.append(("pickle", pickle.dumps({"a": [1, 2.5, "x"], "b": {1, 2}}, protocol=4)))
    try:
        from hypothesis import HealthCheck, given, settings
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        from decode_values import values

        serde = JsonPlusSerializer()

        @settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
        @given(values)
        def collect(value: Any) -> None:
            blobs.append(serde.dumps_typed(value))

        collect()
    except ImportError as exc:  # the test extras are not installed
        print(f"(no generated values: {exc})")
    return [(tag, payload) for tag, payload in blobs if payload]


def mutate(rng: random.Random, blobs: list[tuple[str | None, bytes]]) -> tuple[str | None, bytes]:
    tag, blob = rng.choice(blobs)
    data = bytearray(blob)
    for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 16])):
        at = rng.randrange(len(data) + 1)
        action = rng.randrange(8)
        if action == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif action == 1 and data:
            data[min(at, len(data) - 1)] = rng.choice(INTERESTING)
        elif action == 2:
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        elif action == 3:
            del data[at : at + rng.randint(1, 16)]
        elif action == 4:
            other = rng.choice(blobs)[1]
            start = rng.randrange(len(other))
            data[at:at] = other[start : start + rng.randint(1, 256)]
        elif action == 5:
            data = data[:at]  # truncate
        elif action == 6 and data:
            # Repeat a header byte: deeper nesting, bigger counts.
            byte = data[min(at, len(data) - 1)]
            data[at:at] = bytes([byte]) * rng.choice([2, 10, 1000, 5000])
        else:
            # Wrap in an ext value of any code.
            payload = bytes(data)
            data = bytearray(ormsgpack.packb(ormsgpack.Ext(rng.randrange(12), payload)))
    if rng.random() < 0.2:
        tag = rng.choice(TAGS)
    return tag, bytes(data)


def json_ready(value: Any) -> None:
    """Raise AssertionError unless `value` is strict-JSON data (iterative: any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool | int | str):
            continue
        if isinstance(item, float):
            assert math.isfinite(item), f"non-finite float {item!r}"
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            assert all(isinstance(key, str) for key in item), "non-string key"
            stack.extend(item.values())
        else:
            raise AssertionError(f"not JSON: {type(item).__name__}")


def check(tag: str | None, payload: bytes, options: dict[str, Any]) -> str | None:
    """None if the property holds, else a description of the failure."""
    started = time.perf_counter()
    try:
        value = decode(tag, payload, **options)
        if value is not ABSENT:
            json_ready(value)
    except DecodeError:
        pass
    except Exception:
        return traceback.format_exc()
    elapsed = time.perf_counter() - started
    if elapsed > SLOW_SECONDS:
        return f"slow: {elapsed:.1f} s"
    return None


def save(tag: str | None, payload: bytes, options: dict[str, Any], failure: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(payload).hexdigest()[:16]
    (OUT / f"{name}.bin").write_bytes(payload)
    (OUT / f"{name}.txt").write_text(f"tag={tag!r} options={options!r}\n{failure}\n")
    return OUT / f"{name}.bin"


def mutation_phase(seconds: float, seed: int) -> int:
    blobs = corpus()
    rng = random.Random(seed)
    print(f"phase 1: mutating {len(blobs)} real blobs for {seconds:.0f} s (seed {seed})")
    cases = failures = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tag, payload = mutate(rng, blobs)
        options: dict[str, Any] = {"shallow": rng.random() < 0.3}
        if rng.random() < 0.3:
            options["aes_key"] = KEY
        failure = check(tag, payload, options)
        cases += 1
        if failure:
            failures += 1
            path = save(tag, payload, options, failure)
            print(f"FAILURE ({path}):\n{failure}")
    print(f"phase 1: {cases} cases, {failures} failures ({cases / seconds:.0f} cases/s)")
    return failures


def oracle_phase(examples: int) -> int:
    if examples <= 0:
        return 0
    from hypothesis import HealthCheck, given, settings

    from decode_values import SERDE, assert_same, oracle, values

    print(f"phase 2: {examples} values against LangGraph's loads_typed")
    started = time.perf_counter()

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(values)
    def differential(value: Any) -> None:
        tag, payload = SERDE.dumps_typed(value)
        assert_same(decode(tag, payload), oracle(tag, payload))

    try:
        differential()
    except AssertionError:
        traceback.print_exc()
        return 1
    print(f"phase 2: passed in {time.perf_counter() - started:.0f} s")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--oracle-examples", type=int, default=3000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # LangGraph logs each unregistered test class once
    failures = mutation_phase(args.seconds, args.seed) + oracle_phase(args.oracle_examples)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
