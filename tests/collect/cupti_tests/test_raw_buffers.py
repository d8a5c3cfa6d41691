"""The decoder on CUPTI buffers saved from a real H100 collection gives the object path's records.

Fixture ``fixtures/cupti_buffers/h100-cupti13.4-*`` (provenance in fixtures/README.md):
six activity buffers as perfdiff's raw intake received them (CUPTI 13.4, API version
130401: kernel13, memcpy7 and launch API records), the kernel names at CUPTI's addresses,
and, per buffer, the records the object path gave for the same bytes (cupti-python's classes
on CUPTI's own walk, then ``CuptiActivityBackend._take_in``): scripts/gpu/intake_check.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfdiff.collect.columns import TRANSFER_KINDS, TraceColumns
from perfdiff.collect.cupti.decode import RecordLayoutError, decode_buffer, layout_for

HERE = Path(__file__).resolve().parents[3] / "fixtures" / "cupti_buffers"
BUFFERS = HERE / "h100-cupti13.4-buffers.npz"
RECORDS = HERE / "h100-cupti13.4-records.json.gz"


@pytest.fixture(scope="module")
def saved() -> tuple[list[np.ndarray[Any, Any]], dict[str, Any]]:
    if not BUFFERS.exists() or not RECORDS.exists():
        pytest.skip(f"fixture {BUFFERS.name} absent")
    with np.load(BUFFERS, allow_pickle=False) as npz:
        buffers = [npz[f"buffer{i}"] for i in range(len(npz.files))]
    with gzip.open(RECORDS, "rt", encoding="utf-8") as f:
        return buffers, json.load(f)


def _as_tuples(cols: TraceColumns, names: dict[str, str]) -> dict[str, list[list[Any]]]:
    k = cols.kernels
    kernels = sorted([names[str(int(r["name_key"]))], *(int(r[f]) for f in (
        "device", "stream", "start", "end", "correlation_id", "grid_x", "grid_y", "grid_z",
        "block_x", "block_y", "block_z"))] for r in k)

    def transfers(t: Any) -> list[list[Any]]:
        return sorted([TRANSFER_KINDS[int(r["kind"])], *(int(r[f]) for f in (
            "bytes", "device", "stream", "start", "end", "correlation_id"))] for r in t)

    return {"kernels": kernels, "memcpy": transfers(cols.memcpy),
            "memset": transfers(cols.memset),
            "api": sorted([int(r["correlation_id"]), int(r["start"])] for r in cols.api)}


def test_saved_buffers_decode_to_the_object_paths_records(saved: Any) -> None:
    buffers, doc = saved
    layout = layout_for(doc["meta"]["cupti_api_version"])
    assert {int(k): v for k, v in doc["meta"]["layout_sizes"].items()} == layout.sizes
    total = 0
    for buf, expected in zip(buffers, doc["buffers"], strict=True):
        got = _as_tuples(decode_buffer(buf, buf.size, layout), doc["names"])
        assert got == expected
        total += sum(len(v) for v in expected.values())
    assert total > 2000  # kernels, memcpys and launch records of six buffers


def test_a_saved_buffer_cut_short_is_refused_in_one_line(saved: Any) -> None:
    buffers, doc = saved
    layout = layout_for(doc["meta"]["cupti_api_version"])
    buf = buffers[0]
    with pytest.raises(RecordLayoutError, match="truncated") as info:
        decode_buffer(buf, buf.size - 100, layout)
    assert "\n" not in str(info.value)
