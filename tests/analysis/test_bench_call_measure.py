"""``perfdiff bench --measure call`` on synthetic run files with return or boundary-mark times.

Why hand-computed: the call time is max(last GPU end, the call's return) - end of the GPU
lead, per cycle (the return stamp of schema 1.2, else the end mark's GPU start of 1.1); the
factory's timeline (tests/bench_factories.py) makes every term known, so each expected value
is written out here from the spec, not from the code.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.bench_cases import bench_run, select_measure
from perfdiff.errors import ExitCode, InputError
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.model import RunFile
from tests.bench_factories import BenchFileSpec, CaseSpec, make_bench_file
from tests.conftest import Runner

# one case, two kernels of 10 and 20 us, 1 us apart, lead ending 1.2 us before the first:
# stream = 1.2 + 10 + 1 + 20 = 32.2 us per cycle
SPEC = BenchFileSpec([CaseSpec("impl=a", (0.010, 0.020), gap_ms=0.001)], noise=0.0,
                     n_cycles=4, n_warmup=1, params={"lead_us": 1000}, lead_gap_ms=0.0012)


def _with_marks(rf: RunFile, end_offset_ns: list[int]) -> RunFile:
    """The file with each cycle's end mark at (its last GPU end + offset)."""
    run = rf.runs[0]
    last_end = np.full(run.cycles.index.size, -1, dtype=np.int64)
    np.maximum.at(last_end, run.kernels.cycle[run.kernels.cycle >= 0],
                  run.kernels.end_ns[run.kernels.cycle >= 0])
    mark_end = last_end + np.asarray(end_offset_ns, dtype=np.int64)
    cycles = replace(run.cycles, mark_start_ns=run.cycles.start_ns + 5_000,
                     mark_end_ns=mark_end)
    return replace(rf, runs=(replace(run, cycles=cycles),))


def test_call_time_is_the_stream_time_when_the_call_returned_before_its_gpu_work_ended() -> None:
    rf = _with_marks(make_bench_file(SPEC), [-15_000] * 5)  # mark ran during the call
    call = select_measure(bench_run(rf), "call")
    assert call.measure == "call"
    np.testing.assert_allclose(call.cases["impl=a"].gpu_ms, [0.0322] * 4, atol=1e-6)


def test_call_time_runs_to_the_end_mark_when_the_host_returned_later() -> None:
    # host-bound: the call returned 40, 0, 7 and 100 us after its last GPU op (warm-up first)
    rf = _with_marks(make_bench_file(SPEC), [999_000, 40_000, 0, 7_000, 100_000])
    run = bench_run(rf)
    call = select_measure(run, "call").cases["impl=a"].gpu_ms
    np.testing.assert_allclose(call, [0.0722, 0.0322, 0.0392, 0.1322], atol=1e-6)
    stream = select_measure(run, "stream").cases["impl=a"].gpu_ms
    np.testing.assert_allclose(stream, [0.0322] * 4, atol=1e-6)


def test_return_stamp_is_preferred_to_the_end_mark() -> None:
    # 1.2 files: the end mark reached the GPU 50 us after the return; the return stamp counts
    rf = _with_marks(make_bench_file(SPEC), [50_000, 90_000, 50_000, 57_000, 150_000])
    run = rf.runs[0]
    returns = run.cycles.mark_end_ns - 50_000  # type: ignore[operator]
    rf = replace(rf, runs=(replace(run, cycles=replace(run.cycles, return_ns=returns)),))
    call = select_measure(bench_run(rf), "call").cases["impl=a"].gpu_ms
    np.testing.assert_allclose(call, [0.0722, 0.0322, 0.0392, 0.1322], atol=1e-6)


def test_unknown_mark_times_give_nan_cycles_not_wrong_ones() -> None:
    rf = _with_marks(make_bench_file(SPEC), [0, 40_000, 0, 0, 0])
    run = rf.runs[0]
    mark_end = run.cycles.mark_end_ns.copy()  # type: ignore[union-attr]
    mark_end[2] = -1  # the second measured cycle lost its end mark
    rf = replace(rf, runs=(replace(run, cycles=replace(run.cycles, mark_end_ns=mark_end)),))
    call = select_measure(bench_run(rf), "call").cases["impl=a"].gpu_ms
    assert np.isnan(call[1]) and np.isfinite(np.delete(call, 1)).all()


def test_files_without_mark_times_or_lead_refuse_call_with_one_line() -> None:
    old = bench_run(make_bench_file(SPEC), "old.json.gz")  # no mark columns (schema 1.0)
    with pytest.raises(InputError, match=r"old\.json\.gz: has no call-return times.*"
                                         r"--measure stream"):
        select_measure(old, "call")
    unled = replace(SPEC, params={}, lead_gap_ms=None)
    with pytest.raises(InputError, match="without the GPU lead"):
        select_measure(bench_run(_with_marks(make_bench_file(unled), [0] * 5)), "call")


def test_cli_measure_call_and_its_error(run_cli: Runner, tmp_path: Path) -> None:
    spec = replace(SPEC, workload="own")  # the one-row-per-case layout shows the GPU ms
    marked = save_run_file(_with_marks(make_bench_file(spec), [0, 40_000, 40_000, 40_000,
                                                                40_000]),
                           tmp_path / "marked.json.gz")
    assert load_run_file(marked).runs[0].cycles.mark_end_ns is not None
    code, out, err = run_cli("bench", str(marked), "--measure", "call", "--plain")
    assert code == 0, err
    assert re.search(r"\| impl=a \|\s+4 \|\s+0\.072 \|", out), out  # median call: 72.2 us
    code, out, err = run_cli("bench", str(marked), "--plain")
    assert code == 0 and re.search(r"\| impl=a \|\s+4 \|\s+0\.031 \|", out), out  # span
    old = save_run_file(make_bench_file(SPEC), tmp_path / "old.json.gz")
    code, out, err = run_cli("bench", str(old), "--measure", "call", "--plain")
    assert code == ExitCode.BAD_INPUT
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "no call-return times" in lines[0], err
