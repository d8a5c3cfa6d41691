"""The reader's column helpers: their fast paths give what the one-event-at-a-time rules give.

Why: the columns of GPU events are built a list at a time (bench/README.md, issue 15), with
shortcuts for the usual case (plain ints, grid/block as three ints); each shortcut must agree
with the per-event rule it skips, and the chunking must keep file order.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.readers.torch_profiler.columns import (
    _CHUNK,
    _chunks,
    _dim3,
    _dim3s,
    _int_value,
    _int_values,
)
from perfdiff.readers.torch_profiler.events import BadTrace

SCALARS = st.one_of(st.integers(-3, 2**40), st.booleans(), st.none(), st.floats(-2, 2),
                    st.text(max_size=3))
DIMS = st.one_of(SCALARS, st.lists(SCALARS, max_size=5))


@given(st.lists(DIMS, max_size=30))
def test_dim3s_is_dim3_of_each(values: list[Any]) -> None:
    assert _dim3s(values) == [x for v in values for x in _dim3(v)]


@given(st.lists(st.lists(st.integers(0, 2**31), min_size=3, max_size=3), max_size=30))
def test_dim3s_takes_plain_triples_as_they_are(values: list[list[int]]) -> None:
    assert _dim3s(values) == [x for v in values for x in v]


@given(st.lists(st.one_of(st.integers(), st.booleans(), st.text(max_size=4)), max_size=20))
def test_int_values_is_int_value_of_each(values: list[Any]) -> None:
    names = [f"k{i}" for i in range(len(values))]
    at = list(range(7, 7 + len(values)))
    try:
        expected: list[int] | None = [_int_value(v, "device", n, i) for v, n, i in
                                      zip(values, names, at, strict=True)]
    except BadTrace:
        expected = None
    try:
        got: list[int] | None = _int_values(values, "device", names, at)
    except BadTrace:
        got = None
    assert got == expected


def test_chunks_keep_order_and_empty_the_list() -> None:
    for n in (0, 1, _CHUNK - 1, _CHUNK, _CHUNK + 1, 2 * _CHUNK + 5):
        raws = [msgspec.Raw(str(i).encode()) for i in range(n)]
        chunks = list(_chunks(raws))
        assert raws == []
        assert all(0 < len(c) <= _CHUNK for c in chunks)
        assert [int(bytes(r)) for c in chunks for r in c] == list(range(n))
