"""Values of every type LangGraph writes, as Hypothesis strategies, and the oracle the
decoder tests hold ckpt to: LangGraph's own `JsonPlusSerializer.loads_typed` (permissive,
so that it rebuilds the classes defined here) mapped by tests/normalize.py. Shared by
tests/test_decode_oracle.py, test_decode_schema.py and `make fuzz` (bench/fuzz.py)."""

from __future__ import annotations

import collections
import dataclasses
import enum
import ipaddress
import json
import pathlib
import re
from datetime import timedelta, timezone
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Command, Interrupt, Send, TimeoutPolicy
from pydantic import BaseModel, SecretStr
from pydantic import v1 as pydantic_v1

from normalize import normalize

SERDE = JsonPlusSerializer(allowed_msgpack_modules=True)  # rebuild every class: the oracle


def oracle(tag: str, payload: bytes, serde: Any = SERDE) -> Any:
    return normalize(serde.loads_typed((tag, payload)))


def assert_same(decoded: Any, expected: Any) -> None:
    # Compare as JSON text too: catches 1 vs True and 1 vs 1.0 that == would let through.
    assert decoded == expected
    assert json.dumps(decoded, sort_keys=True) == json.dumps(expected, sort_keys=True)


class Color(enum.Enum):
    RED = "red"
    GREEN = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 10


@dataclasses.dataclass
class Point:
    x: Any
    y: Any = None


Pair = collections.namedtuple("Pair", ["left", "right"])


class Profile(BaseModel):
    name: str
    score: float
    tags: list[str] = []
    secret: SecretStr | None = None


class LegacyModel(pydantic_v1.BaseModel):
    a: int
    b: str = "x"


INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)
text = st.text(max_size=12)
scalars = st.one_of(
    st.none(), st.booleans(), INT64, st.floats(allow_nan=True), text, st.binary(max_size=12)
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), text)
# Map keys msgpack allows and LangGraph writes (format.md §2.2): any hashable scalar or tuple.
keys = st.one_of(
    text,
    INT64,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.binary(max_size=4),
    st.tuples(st.integers(-5, 5), text),
)
offsets = st.timedeltas(
    min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23, minutes=59)
)
fixed_zones = st.builds(timezone, offsets) | st.builds(timezone, offsets, st.text(min_size=1))
zones = st.none() | st.timezones() | fixed_zones

tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": text,
            "args": st.dictionaries(text, json_scalars, max_size=3),
            "id": text,
            "type": st.just("tool_call"),
        }
    ),
    max_size=2,
)
messages = st.one_of(
    st.builds(HumanMessage, content=text, id=st.none() | text),
    st.builds(SystemMessage, content=text),
    st.builds(AIMessage, content=text, id=st.none() | text, tool_calls=tool_calls),
    st.builds(ToolMessage, content=text, tool_call_id=text, id=st.none() | text),
)
arrays = hnp.arrays(
    dtype=hnp.boolean_dtypes()
    | hnp.integer_dtypes(endianness="?")
    | hnp.unsigned_integer_dtypes(endianness="?")
    | hnp.floating_dtypes(endianness="?")
    | hnp.complex_number_dtypes(endianness="?")
    | hnp.unicode_string_dtypes(max_len=3),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
).map(lambda array: np.asfortranarray(array) if array.ndim > 1 and array.size % 2 else array)

leaves = st.one_of(
    scalars,
    st.datetimes(timezones=zones),
    st.dates(),
    st.times(timezones=zones),
    st.timedeltas(),
    fixed_zones,
    st.timezones(),
    st.uuids(),
    st.decimals(places=None),
    st.sets(st.integers(-50, 50) | text, max_size=4),
    st.frozensets(text, max_size=4),
    st.builds(collections.deque, st.lists(st.integers(-100, 100), max_size=3)),
    st.sampled_from(list(Color) + list(Level)),
    st.builds(pathlib.PurePosixPath, text).map(lambda path: pathlib.Path(str(path))),
    st.sampled_from([re.compile("^a+b$", re.I), re.compile(b"x|y")]),
    st.ip_addresses().map(ipaddress.ip_address),
    st.builds(Profile, name=text, score=st.floats(allow_nan=False), tags=st.lists(text)),
    st.builds(Profile, name=text, score=st.just(1.0), secret=st.builds(SecretStr, text)),
    st.builds(LegacyModel, a=st.integers(-5, 5), b=text),
    messages,
    arrays,
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(text, children, max_size=4),
        st.dictionaries(keys, children, max_size=3),
        st.builds(Point, children, children),
        st.builds(Pair, children, children),
        st.builds(Send, text, children),
        st.builds(Send, text, children, timeout=st.builds(TimeoutPolicy, run_timeout=st.just(5.0))),
        st.builds(Interrupt, value=children, id=text),
        st.builds(Command, update=st.dictionaries(text, children, max_size=2), goto=text),
        st.builds(_DeltaSnapshot, children),
    )


values = st.recursive(leaves, _containers, max_leaves=12)
