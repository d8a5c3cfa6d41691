"""Timestamps, detection and bad input of the torch.profiler reader, on small traces made here.

Why made here: each case isolates one rule (exact nanoseconds from the JSON text, a kernel
without its launch, a truncated file); the real traces are in test_torch_profiler_shared.py.
"""

from __future__ import annotations

import gzip
import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfdiff.errors import InputError
from perfdiff.readers.dispatch import ReadOptions, load_input
from perfdiff.readers.torch_profiler import (
    is_torch_profiler_input,
    read_torch_profiler,
    us_text_to_ns,
    us_texts_to_ns,
)
from perfdiff.readers.torch_profiler.columns import gather
from perfdiff.readers.torch_profiler.files import decode_trace
from perfdiff.readers.torch_profiler.metadata import trace_metadata

MAX_NS = 2**62


def ns_to_us_text(ns: int) -> str:
    """Integer ns -> microseconds with three decimals, as Kineto writes them."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    return f"{sign}{whole}.{frac:03d}"


@given(st.integers(min_value=-MAX_NS, max_value=MAX_NS))
def test_us_text_round_trips_every_nanosecond(ns: int) -> None:
    text = ns_to_us_text(ns)
    assert us_text_to_ns(text) == ns
    assert us_texts_to_ns([text.encode()]).tolist() == [ns]


@given(st.decimals(min_value=-10**15, max_value=10**15, allow_nan=False, allow_infinity=False,
                   places=6))
def test_us_text_agrees_with_decimal_arithmetic(value: Decimal) -> None:
    text = str(value)
    expected = int((value * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
    assert us_text_to_ns(text) == expected
    assert us_texts_to_ns([text.encode(), b"1.5"]).tolist() == [expected, 1500]


@given(st.lists(st.integers(min_value=0, max_value=9_000_000_000_000_000), max_size=20))
def test_vectorised_equals_one_by_one_for_integer_microseconds(values: list[int]) -> None:
    texts = [str(v).encode() for v in values]
    assert us_texts_to_ns(texts).tolist() == [us_text_to_ns(t) for t in texts]


def test_absolute_microseconds_keep_nanosecond_decimals() -> None:
    # a float would give 1712195495505772800 +- 256
    assert us_text_to_ns("1712195495505772.853") == 1712195495505772853
    assert us_text_to_ns('"12.5"') == 12500
    assert us_text_to_ns("1e3") == 1_000_000
    for bad in ("", "abc", "NaN", "Infinity", "null"):
        with pytest.raises(ValueError):
            us_text_to_ns(bad)


# ----------------------------------------------------------------------------- small traces


def _event(cat: str, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    gpu = cat in ("kernel", "gpu_memcpy", "gpu_memset")
    return {"ph": "X", "cat": cat, "name": name, "pid": 0 if gpu else 100,
            "tid": 7 if gpu else 100, "ts": ts, "dur": dur, "args": args}


def _trace(events: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    props = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85017493504,
              "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": events, **top}


def _steps(n: int) -> list[dict[str, Any]]:
    return [_event("user_annotation", f"ProfilerStep#{i}", 1000.0 * i, 900.0) for i in range(n)]


def _launched(i: int, name: str = "gemm") -> list[dict[str, Any]]:
    """A launch inside step i, and its kernel running a little later (past the step's end
    for the last one: the step it belongs to is the launch's)."""
    return [_event("cuda_runtime", "cudaLaunchKernel", 1000.0 * i + 100, 5.0, correlation=i),
            _event("kernel", name, 1000.0 * i + 850.5, 200.25, correlation=i, device=0,
                   stream=7, grid=[4, 1, 1], block=[128, 1, 1])]


def _write(tmp_path: Path, doc: Any, name: str = "t.json.gz", raw: bytes | None = None) -> Path:
    path = tmp_path / name
    data = raw if raw is not None else json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def test_kernel_belongs_to_the_step_of_its_launch(tmp_path: Path) -> None:
    events = _steps(3) + [e for i in range(3) for e in _launched(i)]
    path = _write(tmp_path, _trace(events, baseTimeNanoseconds="1700000000000000000"))
    run_file = read_torch_profiler([path])
    run = run_file.runs[0]
    assert run.cycles.index.tolist() == [0, 1, 2]
    assert run.kernels.cycle.tolist() == [0, 1, 2]
    base = 1_700_000_000_000_000_000
    assert run.kernels.start_ns.tolist() == [base + 850_500 + 1_000_000 * i for i in range(3)]
    assert (run.kernels.end_ns - run.kernels.start_ns).tolist() == [200_250] * 3
    assert (run.kernels.grid_x[0], run.kernels.block_x[0]) == (4, 128)
    assert run_file.environment.devices[0].name == "NVIDIA H100 80GB HBM3"
    assert run_file.environment.devices[0].compute_capability == "9.0"


def test_hip_names_and_plain_json_are_read_alike(tmp_path: Path) -> None:
    events = _steps(2) + [e for i in range(2) for e in _launched(i)]
    for e in events:
        if e["cat"] == "cuda_runtime":
            e["name"] = "hipLaunchKernel"
    path = _write(tmp_path, _trace(events), name="rank0.pt.trace.json")
    assert is_torch_profiler_input(path) and is_torch_profiler_input(tmp_path)
    assert load_input(path).runs[0].kernels.cycle.tolist() == [0, 1]


def test_kernels_without_their_launch(tmp_path: Path) -> None:
    events = _steps(2) + _launched(0) + [_launched(1)[1]]  # step 1's launch is missing
    run_file = read_torch_profiler([_write(tmp_path, _trace(events))])
    assert run_file.runs[0].kernels.cycle.tolist() == [0, -1]
    assert "1 of 2 GPU events have no matching launch" in run_file.collection.warnings[0]
    only_kernels = [*_steps(2), _launched(0)[1], _launched(1)[1]]
    with pytest.raises(InputError, match="none of the 2 GPU events has a matching launch"):
        read_torch_profiler([_write(tmp_path, _trace(only_kernels), name="k.json.gz")])


@pytest.mark.parametrize(("doc", "words"), [
    (_trace(_steps(2)), "CPU-only"),
    (_trace([_event("kernel", "k", 1.0, -2.0, correlation=1), *_launched(0)]), "ends before"),
    (_trace(_launched(0)), "no ProfilerStep#N"),
    (_trace([*_steps(1), {**_launched(0)[1], "ts": "soon"}, _launched(0)[0]]), "bad time"),
    (_trace([*_steps(1), {**_launched(0)[1], "pid": "GPU", "args": {"correlation": 0}},
             _launched(0)[0]]), "not an integer"),
    ({"traceEvents": [1, 2]}, "malformed trace event"),
    ({"traceEvents": "x"}, "not a torch.profiler trace as expected"),
])
def test_bad_traces_are_one_line(tmp_path: Path, doc: Any, words: str) -> None:
    with pytest.raises(InputError) as raised:
        read_torch_profiler([_write(tmp_path, doc)])
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_truncated_files(tmp_path: Path) -> None:
    events = _steps(3) + [e for i in range(3) for e in _launched(i)]
    data = json.dumps(_trace(events)).encode()
    plain = _write(tmp_path, None, name="cut.json", raw=data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated"):
        load_input(plain)
    packed = gzip.compress(data)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match="truncated or corrupt"):
        load_input(cut)


def test_ranks_of_one_job_merge_and_others_are_refused(tmp_path: Path) -> None:
    events = _steps(2) + [e for i in range(2) for e in _launched(i)]
    for rank in (0, 1):
        folder = tmp_path / "job"
        folder.mkdir(exist_ok=True)
        _write(folder, _trace(events, distributedInfo={"rank": rank, "world_size": 2}),
               name=f"rank{rank}.json.gz")
    merged = load_input(tmp_path / "job")
    assert [r.rank for r in merged.runs] == [0, 1]
    assert [r.kernels.device.tolist() for r in merged.runs] == [[0, 0], [1, 1]]
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("a.json.gz", "b.json.gz"):
        _write(twice, _trace(events, distributedInfo={"rank": 0}), name=name)
    with pytest.raises(InputError, match="same distributedInfo rank"):
        load_input(twice)


def test_a_run_file_is_not_taken_for_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": "1.2", "runs": [], "traceEvents": []}))
    assert not is_torch_profiler_input(path)
    with pytest.raises(InputError, match=r"--cycle-range applies to torch\.profiler traces"):
        load_input(path, ReadOptions(cycle_range="step"))


def test_hardware_counter_samples_become_pm_series(tmp_path: Path) -> None:
    metric = "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
    counters = [{"ph": "C", "cat": "hardware_counters", "name": "PM", "pid": 0, "tid": 0,
                 "ts": 1000.0 * i + 500.0, "args": {metric: 10.0 * i, "label": "x"}}
                for i in range(4)]
    events = [*_steps(3), *[e for i in range(3) for e in _launched(i)], *counters]
    run_file = read_torch_profiler([_write(tmp_path, _trace(events))])
    (series,) = run_file.runs[0].metrics
    assert (series.name, series.unit, series.source, series.device) == (
        metric, "pct", "pm_sampling", 0)
    assert series.timestamps_ns.tolist() == [500_000, 1_500_000, 2_500_000, 3_500_000]
    assert series.values.tolist() == [0.0, 10.0, 20.0, 30.0]
    assert series.interval_ns == 1_000_000
    assert run_file.collection.metrics == (metric,)


def test_the_pass_lets_go_of_the_file(tmp_path: Path) -> None:
    """Every raw slice holds the whole decompressed file (35 MB for 100k events): once the one
    pass is done no slice is left, so the file's bytes are freed before the columns are built
    (peak memory, bench/README.md); a whitespace-only file is refused without copying it."""
    events = _steps(3) + [e for i in range(3) for e in _launched(i)]
    data = json.dumps(_trace(events, baseTimeNanoseconds="5")).encode() + b"\n"
    before = sys.getrefcount(data)
    trace = decode_trace(tmp_path / "t.json", data)
    meta = trace_metadata(trace)
    raws = trace.traceEvents
    del trace
    assert sys.getrefcount(data) > before  # the slices point into it
    gathered = gather(raws, meta.base_ns)
    assert raws == [] and sys.getrefcount(data) == before
    assert len(gathered.kernels.name) == 3 and meta.base_ns == 5
    with pytest.raises(InputError, match="empty"):
        read_torch_profiler([_write(tmp_path, None, name="blank.json", raw=b" \n\t ")])
