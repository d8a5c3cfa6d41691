"""decode.py on synthetic buffers laid out like CUPTI 13.4's records.

The buffers are built field by field at the offsets ``decode.FIELDS_BY_KIND`` names, with the
record sizes of the registered layout; tests/collect/cupti_tests/test_raw_buffers.py does the same
checks on buffers saved from a real H100 collection.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.collect.cupti import decode
from perfdiff.collect.cupti.decode import (
    FIELDS_BY_KIND,
    KIND_CONCURRENT_KERNEL,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_RUNTIME,
    RecordLayout,
    RecordLayoutError,
    decode_buffer,
    layout_for,
    walk,
)

LAYOUT = layout_for(130401)


def _record(kind: int, values: dict[str, int]) -> bytes:
    size = LAYOUT.sizes[kind]
    out = np.zeros(size, dtype=np.uint8)
    np.ndarray((1,), dtype="<i4", buffer=out, offset=0)[0] = kind
    for name, (fmt, offset) in FIELDS_BY_KIND[kind].items():
        if name in values:
            np.ndarray((1,), dtype=fmt, buffer=out, offset=offset)[0] = values[name]
    return out.tobytes()


def _kernel(i: int) -> bytes:
    return _record(KIND_CONCURRENT_KERNEL, {
        "start": 1000 + 10 * i, "end": 1005 + 10 * i, "device_id": 0, "stream_id": 7 + i % 2,
        "grid_x": i + 1, "grid_y": 2, "grid_z": 3, "block_x": 128, "block_y": 1, "block_z": 1,
        "correlation_id": 100 + i, "name": 0xABC0 + (i % 3),
    })


def _buffer(parts: list[bytes], slack: int = 64) -> tuple[np.ndarray[Any, Any], int]:
    data = b"".join(parts)
    buf = np.zeros(len(data) + slack, dtype=np.uint8)
    buf[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return buf, len(data)


def test_kernels_only_is_one_run_with_every_field() -> None:
    buf, valid = _buffer([_kernel(i) for i in range(300)])
    assert walk(buf, valid, LAYOUT.sizes) == [(KIND_CONCURRENT_KERNEL, 0, 300)]
    cols = decode_buffer(buf, valid, LAYOUT)
    k = cols.kernels
    assert k.size == 300
    assert k["start"].tolist() == [1000 + 10 * i for i in range(300)]
    assert k["end"].tolist() == [1005 + 10 * i for i in range(300)]
    assert k["stream"].tolist() == [7 + i % 2 for i in range(300)]
    assert k["grid_x"].tolist() == [i + 1 for i in range(300)]
    assert set(k["grid_y"].tolist()) == {2} and set(k["block_x"].tolist()) == {128}
    assert k["correlation_id"].tolist() == [100 + i for i in range(300)]
    assert k["name_key"].tolist() == [0xABC0 + i % 3 for i in range(300)]


def test_mixed_kinds_alternating_and_in_runs() -> None:
    api = [_record(KIND_RUNTIME, {"start": 50 + i, "correlation_id": 100 + i}) for i in range(4)]
    copy = _record(KIND_MEMCPY, {"copy_kind": 1, "bytes": 4096, "start": 7, "end": 9,
                                 "device_id": 0, "stream_id": 13, "correlation_id": 5})
    fill = _record(KIND_MEMSET, {"bytes": 16, "start": 11, "end": 12, "device_id": 0,
                                 "stream_id": 14, "correlation_id": 6})
    parts = [api[0], _kernel(0), api[1], _kernel(1), copy, fill, api[2], api[3]]
    parts += [_kernel(i) for i in range(2, 40)]
    buf, valid = _buffer(parts)
    runs = walk(buf, valid, LAYOUT.sizes)
    assert [(kind, count) for kind, _, count in runs] == [
        (KIND_RUNTIME, 1), (KIND_CONCURRENT_KERNEL, 1), (KIND_RUNTIME, 1),
        (KIND_CONCURRENT_KERNEL, 1), (KIND_MEMCPY, 1), (KIND_MEMSET, 1), (KIND_RUNTIME, 2),
        (KIND_CONCURRENT_KERNEL, 38)]
    cols = decode_buffer(buf, valid, LAYOUT)
    assert cols.kernels.size == 40 and cols.api.size == 4
    assert sorted(cols.api["correlation_id"].tolist()) == [100, 101, 102, 103]
    assert cols.memcpy[["bytes", "kind", "stream", "correlation_id"]].tolist() == [
        (4096, 1, 13, 5)]
    assert cols.memset[["bytes", "kind", "stream", "start", "end"]].tolist() == [
        (16, 11, 14, 11, 12)]


def test_truncated_buffer_is_one_line() -> None:
    buf, valid = _buffer([_kernel(0), _kernel(1)])
    with pytest.raises(RecordLayoutError) as info:
        decode_buffer(buf, valid - 8, LAYOUT)
    text = str(info.value)
    assert "truncated" in text and "\n" not in text
    with pytest.raises(RecordLayoutError, match="truncated"):
        decode_buffer(buf[:100], valid, LAYOUT)


def test_unknown_kind_and_unknown_cupti_are_one_line() -> None:
    bogus = np.zeros(64, dtype=np.uint8)
    bogus[:4] = np.frombuffer(np.int32(99).tobytes(), dtype=np.uint8)
    with pytest.raises(RecordLayoutError, match="kind 99 at byte 0") as info:
        decode_buffer(bogus, 64, LAYOUT)
    assert "\n" not in str(info.value)
    with pytest.raises(RecordLayoutError, match=r"API version 999 .*not checked") as info:
        layout_for(999)
    assert "\n" not in str(info.value)


def test_a_layout_too_small_for_its_fields_is_rejected() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        decode.register_layout(RecordLayout(1, {KIND_CONCURRENT_KERNEL: 64}, "bad"))


def test_empty_buffer_decodes_to_nothing() -> None:
    cols = decode_buffer(np.zeros(16, dtype=np.uint8), 0, LAYOUT)
    assert cols.kernels.size == cols.api.size == cols.memcpy.size == 0


def _walker_from(sizes: dict[int, int]) -> Any:
    """A stand-in for CUPTI's cuptiActivityGetNextRecord walk, with the true sizes."""
    def walk(address: int, valid: int) -> list[int]:
        data = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * valid).from_address(address))
        out, offset = [], 0
        while offset < valid:
            out.append(offset)
            offset += sizes[int(data[offset:offset + 4].view("<i4")[0])]
        return out
    return walk


def test_an_unregistered_cupti_learns_its_sizes_from_cuptis_walk() -> None:
    from perfdiff.collect.cupti.raw_intake import RawIntake, learn_layout

    api = _record(KIND_RUNTIME, {"start": 5, "correlation_id": 9})
    buf, valid = _buffer([_kernel(0), api, _kernel(1)], slack=0)
    assert learn_layout(_walker_from(LAYOUT.sizes), buf, valid) == {
        KIND_CONCURRENT_KERNEL: 248, KIND_RUNTIME: 40}
    intake = RawIntake.__new__(RawIntake)
    intake.layout = RecordLayout(1, {}, "learnt")
    intake.chunks, intake.records, intake.bytes_taken = [], 0, 0
    intake._walker = lambda: _walker_from(LAYOUT.sizes)  # type: ignore[method-assign]
    assert intake.take(buf, valid) == 3
    assert intake.layout.sizes == {KIND_CONCURRENT_KERNEL: 248, KIND_RUNTIME: 40}
    assert intake.chunks[0].kernels["correlation_id"].tolist() == [100, 101]


def test_a_record_size_of_no_known_version_is_refused_in_one_line() -> None:
    from perfdiff.collect.cupti.raw_intake import learn_layout

    buf, valid = _buffer([_kernel(0), _kernel(1)], slack=0)
    with pytest.raises(RecordLayoutError, match=r"kind 10 of \[496\] bytes") as info:
        learn_layout(lambda address, size: [0], buf, valid)
    assert "\n" not in str(info.value)


def _reference_walk(buf: np.ndarray[Any, Any], valid: int,
                    sizes: dict[int, int]) -> list[tuple[int, int, int]]:
    """Record by record, the plainest reading of the layout: what ``walk`` must equal."""
    runs: list[tuple[int, int, int]] = []
    offset = 0
    while offset < valid:
        kind = int(np.frombuffer(buf[offset:offset + 4].tobytes(), "<i4")[0])
        if runs and runs[-1][0] == kind and runs[-1][1] + runs[-1][2] * sizes[kind] == offset:
            runs[-1] = (kind, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((kind, offset, 1))
        offset += sizes[kind]
    return runs


_KINDS = (KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET, KIND_RUNTIME)


@given(st.lists(st.tuples(st.sampled_from(_KINDS), st.integers(1, 40)), max_size=30),
       st.integers(0, 2**31 - 1))
@settings(max_examples=150, deadline=None)
def test_walk_equals_a_record_by_record_reading(runs: list[tuple[int, int]], seed: int) -> None:
    """Any mix of kinds and run lengths, with record bodies that repeat the kind values at
    slot boundaries (where the run-length table could be fooled): the same runs as a
    record-by-record reading."""
    rng = np.random.default_rng(seed)
    parts = []
    for kind, count in runs:
        for _ in range(count):
            body = bytearray(_record(kind, {"start": int(rng.integers(0, 2**40))}))
            for slot in range(1, len(body) // 8):  # decoys: other kinds' values inside
                if rng.random() < 0.3:
                    body[8 * slot:8 * slot + 4] = int(rng.choice(_KINDS)).to_bytes(4, "little")
            parts.append(bytes(body))
    buf, valid = _buffer(parts)
    assert walk(buf, valid, LAYOUT.sizes) == _reference_walk(buf, valid, LAYOUT.sizes)
    cols = decode_buffer(buf, valid, LAYOUT)
    assert cols.kernels.size == sum(c for k, c in runs if k == KIND_CONCURRENT_KERNEL)
    assert cols.memcpy.size == sum(c for k, c in runs if k == KIND_MEMCPY)
