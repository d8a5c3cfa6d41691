"""Every real trace under ../shared/kineto gives a run file or one clear line, never a traceback.

Why the real files: they are torch.profiler output of several PyTorch and Kineto versions,
recorded by others (HolisticTraceAnalysis' test data): old absolute microsecond timestamps,
``baseTimeNanoseconds``, ranks, a ROCm trace, CPU-only and counter-only traces. Expected
numbers were read off the files independently (tests/readers/kineto_reference.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.sides import side_from_run_file
from perfdiff.errors import InputError
from perfdiff.readers.dispatch import load_input
from perfdiff.readers.torch_profiler import read_torch_profiler
from tests.readers.kineto_reference import reference_step_totals

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "kineto"
HTA = SHARED / "hta"

# file -> (steps, kernels, kernels inside a step, rank) for traces that give a run file
RUNS = {
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": (2, 14, 14, None),
    "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": (5, 4350, 4350, 0),
    "trace_compare/base/base.json.gz": (2, 6, 2, 1),
    "trace_compare/test/test.json.gz": (2, 5, 1, 1),
    "trace_diff/control/control.json.gz": (6, 8568, 8568, 3),
    "trace_diff/test/test.json.gz": (6, 9876, 9330, 1),
    "trace_filter/sampled_rank-0.json.gz": (2, 1154, 1154, 0),
    "trace_filter/sampled_rank-1.json.gz": (2, 1104, 1104, 1),
    "triton_example/triton_example.json.gz": (1, 1, 1, None),
}
# file -> words the one-line error must contain
ERRORS = {
    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": "CPU-only",
    "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": "--cycle-range",
    "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz": "cuda_profiler_range",
}


def _shared_files() -> list[str]:
    if not SHARED.is_dir():
        return []
    return sorted(str(p.relative_to(SHARED)) for p in SHARED.rglob("*") if p.is_file())


def _need_shared() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"shared traces not found at {SHARED} (they sit beside the repository as "
                    "../shared/kineto); nothing to read")


def test_the_expectations_name_every_trace() -> None:
    _need_shared()
    traces = {f[len("hta/"):] for f in _shared_files() if f.endswith((".json", ".json.gz"))}
    assert traces == set(RUNS) | set(ERRORS)


@pytest.mark.parametrize("name", _shared_files() or ["(none)"])
def test_every_shared_file_gives_a_run_or_one_line(name: str, run_cli: object) -> None:
    _need_shared()
    path = SHARED / name
    try:
        run_file = load_input(path)
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message and str(path) in message
        short = name[len("hta/"):]
        if short in ERRORS:
            assert ERRORS[short] in message
        else:
            assert short not in RUNS, message
        return
    steps, kernels, in_steps, rank = RUNS[name[len("hta/"):]]
    run = run_file.runs[0]
    assert (run.cycles.index.size, run.kernels.name_id.size) == (steps, kernels)
    assert int((run.kernels.cycle >= 0).sum()) == in_steps
    assert run.rank == rank
    assert (run.kernels.end_ns >= run.kernels.start_ns).all()
    side = side_from_run_file(run_file, source=str(path))
    assert dict(side.meta.environment)["source"].startswith("torch.profiler")


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_traces_exit_3_with_one_line(name: str, run_cli: object) -> None:
    _need_shared()
    path = HTA / name
    code, out, err = run_cli("kernels", str(path))  # type: ignore[operator]
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and err.startswith("perfdiff: error: ") and ERRORS[name] in err


def test_steps_and_kernel_totals_match_an_independent_reading() -> None:
    """Per step, per name: launches and summed duration (ns) equal what a plain json reading
    of the trace gives with the rule "a GPU event belongs to the step of its launch"."""
    _need_shared()
    for name in ("trace_diff/control/control.json.gz", "trace_diff/test/test.json.gz",
                 "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                 "triton_example/triton_example.json.gz"):
        path = HTA / name
        run_file = read_torch_profiler([path])
        run = run_file.runs[0]
        expected = reference_step_totals(path)
        got: dict[tuple[int, str], list[int]] = {}
        k = run.kernels
        for name_id, cycle, dur in zip(k.name_id.tolist(), k.cycle.tolist(),
                                       (k.end_ns - k.start_ns).tolist(), strict=True):
            if cycle >= 0:
                entry = got.setdefault((cycle, run_file.strings[name_id].demangled), [0, 0])
                entry[0] += 1
                entry[1] += dur
        assert got == expected, name
        assert sorted(run.cycles.index.tolist()) == sorted({c for c, _ in expected} |
                                                           set(run.cycles.index.tolist()))


def test_relative_timestamps_add_the_base_and_keep_nanoseconds() -> None:
    _need_shared()
    run_file = read_torch_profiler([HTA / "triton_example/triton_example.json.gz"])
    kernel = run_file.runs[0].kernels
    # baseTimeNanoseconds 1727743122000000000 + ts "..." us with ns decimals
    assert int(kernel.start_ns[0]) > 1727743122000000000
    assert int(kernel.start_ns[0]) % 1000 != 0 or int(kernel.end_ns[0]) % 1000 != 0


def test_two_ranks_merge_like_shards() -> None:
    _need_shared()
    folder = HTA / "trace_filter"
    run_file = load_input(folder)
    assert [r.rank for r in run_file.runs] == [0, 1]
    assert [sorted(set(r.kernels.device.tolist())) for r in run_file.runs] == [[0], [1]]
    assert run_file.workload.params["ranks"] == ["rank 0: GPU 0", "rank 1: GPU 1"]
    assert run_file.workload.params["world_size"] == 128
    side = side_from_run_file(run_file, source=str(folder))
    assert dict(side.meta.environment)["ranks"] == "rank 0: GPU 0; rank 1: GPU 1"


def test_cycle_range_selects_a_user_annotation() -> None:
    _need_shared()
    path = HTA / "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    name = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
    # the exact name (regex characters in it read literally); its two ranges are nested (the
    # second starts and ends inside the first), so the outer one is the one cycle
    run_file = read_torch_profiler([path], cycle_range=name)
    run = run_file.runs[0]
    assert run.cycles.index.tolist() == [0]
    assert run.cycles.label == (name,)
    assert (run.kernels.cycle >= 0).sum() > 0
    assert any("inside another matching range" in w for w in run_file.collection.warnings)
    assert run_file.workload.params["cycles_from"] == (
        f"user_annotation ranges matching {name!r}")
    # a regular expression: both forward ranges (warm-up and measure) of the model
    forward = read_torch_profiler([path], cycle_range=r".*alex_net.*\|forward\]")
    assert forward.runs[0].cycles.index.size == 2  # warm-up ranges nest too: outer ones kept
    with pytest.raises(InputError, match="no user_annotation or gpu_user_annotation range"):
        read_torch_profiler([path], cycle_range="no such range")


def test_cycle_range_on_gpu_annotations_takes_kernels_by_their_start() -> None:
    _need_shared()
    path = HTA / "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    run = read_torch_profiler([path], cycle_range="## backward ##").runs[0]
    assert run.cycles.index.size == 5  # the CPU ranges of that name are taken first
    gpu_only = read_torch_profiler([path], cycle_range="DistributedDataParallel.forward")
    assert gpu_only.runs[0].cycles.index.size == 5


def test_compare_of_two_traces_reports_every_step_and_the_source(run_cli: object) -> None:
    _need_shared()
    control = HTA / "trace_diff/control/control.json.gz"
    test = HTA / "trace_diff/test/test.json.gz"
    code, out, err = run_cli("compare", str(control), str(test))  # type: ignore[operator]
    assert code == 4 and "different GPU models" in err  # A100 vs V100, as HTA's pair is
    code, out, _ = run_cli("compare", str(control), str(test), "--force")  # type: ignore[operator]
    assert code == 0
    assert "torch.profiler (Kineto chrome trace), schema 1; cycles from ProfilerStep#N" in out
    assert "rank 3: GPU 0 (cuda:3 in the trace)" in out
    assert "rank 1: GPU 0 (cuda:1 in the trace)" in out
    assert "6 measured cycles" in out  # every step, not only the first as HTA compares
    assert "| Measured cycles        |      6 |        6 |" in out
    assert "No rows" not in out


def test_import_writes_a_run_file_with_provenance(tmp_path: Path, run_cli: object) -> None:
    _need_shared()
    from perfdiff.schema.io import load_run_file

    trace = HTA / "trace_diff/control/control.json.gz"
    out = tmp_path / "control.json.gz"
    code, stdout, _ = run_cli("import", str(trace), "-o", str(out))  # type: ignore[operator]
    assert code == 0 and "6 cycles, 8568 kernels" in stdout
    saved = load_run_file(out)
    direct = read_torch_profiler([trace])
    assert saved.workload.params["source_files"] == [str(trace)]
    assert saved.workload.params["kineto_schema_version"] == ["1"]
    np.testing.assert_array_equal(saved.runs[0].kernels.start_ns,
                                  direct.runs[0].kernels.start_ns)
    assert saved.strings == direct.strings
    code, _, err = run_cli("import", str(out), "-o", str(tmp_path / "x.json.gz"))  # type: ignore[operator]
    assert code == 3 and "not a torch.profiler trace" in err


def test_merge_and_kernels_take_traces(tmp_path: Path, run_cli: object) -> None:
    _need_shared()
    ranks = [HTA / f"trace_filter/sampled_rank-{r}.json.gz" for r in (0, 1)]
    out = tmp_path / "job.json.gz"
    code, stdout, _ = run_cli("merge", *map(str, ranks), "-o", str(out))  # type: ignore[operator]
    assert code == 0 and "ranks [0, 1], devices GPU 0, GPU 1" in stdout
    code, stdout, _ = run_cli("kernels", "--by", "name", "--plain",  # type: ignore[operator]
                              str(HTA / "trace_filter"))
    assert code == 0 and "| Kernel" in stdout
