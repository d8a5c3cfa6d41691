"""The rmsnorm and linalg workloads on CPU torch: correctness gate, cases, cycles.

The naive and TorchScript implementations run on the CPU, so their agreement with the float64
reference and the gate that stops a wrong implementation are tested here; Triton and the CUDA
extension are tested on the GPU (tests/gpu/test_bench_workloads.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from perfdiff.collect.kernels.check import (  # noqa: E402
    TOLERANCES,
    WrongResultError,
    compare_to_reference,
    require,
)
from perfdiff.collect.workloads import get_workload_class, linalg, rmsnorm  # noqa: E402
from perfdiff.collect.workloads.base import CyclePlan, WorkloadParamError  # noqa: E402
from perfdiff.errors import ExitCode  # noqa: E402

SHAPES = ((2, 8, 61), (1, 16, 130))


class RecordingMarker:
    """Records (label, warmup) of every cycle a workload opens."""

    def __init__(self) -> None:
        self.cycles: list[tuple[str, bool]] = []

    @contextlib.contextmanager
    def cycle(self, label: str = "", *, warmup: bool = False) -> Iterator[None]:
        self.cycles.append((label, warmup))
        yield


@pytest.fixture
def cpu_torch(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The workloads' setup on CPU torch (they ask for CUDA otherwise)."""
    monkeypatch.setattr(rmsnorm, "import_torch_cuda", lambda: torch)
    monkeypatch.setattr(linalg, "import_torch_cuda", lambda: torch)
    return torch


@pytest.mark.parametrize("direction", rmsnorm.DIRECTIONS)
@pytest.mark.parametrize("dtype", rmsnorm.DTYPES)
def test_naive_and_torchscript_match_the_float64_reference(dtype: str, direction: str) -> None:
    impls = rmsnorm.build_impls(("naive", "torchscript"), 1e-6)
    gen = torch.Generator().manual_seed(3)
    for shape in SHAPES:
        for name, fn in impls.items():
            results = rmsnorm.check_case(torch, fn, rmsnorm.Case(name, dtype, direction, shape),
                                         "cpu", gen, 1e-6)
            assert len(results) == (1 if direction == "forward" else 2)
            for result in results:
                assert result.ok, result.line()


@pytest.mark.parametrize("dtype", rmsnorm.DTYPES)
def test_a_wrong_implementation_is_stopped_with_its_error_figures(dtype: str) -> None:
    def forgot_the_weight(x: Any, w: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    gen = torch.Generator().manual_seed(5)
    case = rmsnorm.Case("naive", dtype, "forward", (2, 8, 64))
    results = rmsnorm.check_case(torch, forgot_the_weight, case, "cpu", gen, 1e-6)
    with pytest.raises(WrongResultError) as raised:
        require(results)
    message = str(raised.value)
    assert case.label in message and "max |err|" in message and "\n" not in message
    assert raised.value.exit_code == ExitCode.WORKLOAD_FAILED


def test_nan_output_fails_the_check() -> None:
    ref = torch.ones(4, dtype=torch.float64)
    out = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    assert not compare_to_reference("x", out, ref, "float32").ok


def test_tolerances_are_looser_for_narrower_dtypes() -> None:
    order = [TOLERANCES[d][1] for d in ("float64", "float32", "float16", "bfloat16")]
    assert order == sorted(order)


def test_rmsnorm_grid_defaults_to_the_seed_and_takes_subsets() -> None:
    default = rmsnorm.plan_cases(rmsnorm.RmsNormParams())
    assert len(default) == 4 * 4 * 2 * 3 * 13
    sub = rmsnorm.plan_cases(rmsnorm.RmsNormParams.from_strings(
        {"impls": "cuda,naive", "dtypes": "float16", "seq": "128", "hidden": "61,4096"}))
    assert [c.label for c in sub[:2]] == [
        "impl=cuda dtype=float16 direction=forward shape=4x128x61",
        "impl=naive dtype=float16 direction=forward shape=4x128x61",
    ]
    assert len(sub) == 2 * 2 * 2


@pytest.mark.parametrize(("key", "value"), [("impls", "naive,fortran"), ("dtypes", "int8"),
                                            ("hidden", "0"), ("seq", "a,b"), ("directions", "")])
def test_bad_rmsnorm_parameters_are_one_clear_error(key: str, value: str) -> None:
    with pytest.raises(WorkloadParamError, match=key):
        rmsnorm.plan_cases(rmsnorm.RmsNormParams.from_strings({key: value}))


def test_rmsnorm_checks_every_case_then_runs_labelled_cycles(cpu_torch: Any) -> None:
    cls = get_workload_class("rmsnorm")
    params = cls.params_class.from_strings({"impls": "naive,torchscript", "seq": "8",
                                            "hidden": "61", "dtypes": "float32,bfloat16"})
    workload = cls(params)
    workload.setup("cpu")
    marker = RecordingMarker()
    workload.run(marker, CyclePlan(measured=3, warmup=1))
    workload.teardown()
    labels = list(dict.fromkeys(label for label, _ in marker.cycles))
    assert labels == list(workload.cases())
    assert len(labels) == 2 * 2 * 2
    assert len(workload.check_results) == 2 * 2 * (1 + 2)  # y; dx and dw
    per_case = [flags for flags in ([w for lb, w in marker.cycles if lb == label]
                                    for label in labels)]
    assert all(flags == [True, False, False, False] for flags in per_case)


def test_rmsnorm_setup_stops_before_any_cycle_when_an_impl_is_wrong(
    cpu_torch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong_impls(names: tuple[str, ...], eps: float) -> dict[str, Any]:
        return {name: (lambda x, w: x * w) for name in names}

    monkeypatch.setattr(rmsnorm, "build_impls", wrong_impls)
    workload = rmsnorm.RmsNorm(rmsnorm.RmsNormParams.from_strings(
        {"impls": "naive", "seq": "8", "hidden": "32", "dtypes": "float32"}))
    with pytest.raises(WrongResultError, match="impl=naive dtype=float32"):
        workload.setup("cpu")


def test_linalg_cases_cover_gpu_and_cpu_in_the_seed_order() -> None:
    cases = linalg.plan_cases(linalg.LinalgParams())
    assert len(cases) == 2 * 4 * 10
    assert cases[0].label == "op=eigh device=cuda batch=[] n=2 dtype=float32"
    assert cases[10].label == "op=eigh device=cuda batch=[1] n=2 dtype=float32"
    assert cases[-1].label == "op=eigh device=cpu batch=[4] n=1024 dtype=float32"
    no_cpu = linalg.plan_cases(linalg.LinalgParams.from_strings({"cpu": "false"}))
    assert {c.device for c in no_cpu} == {"cuda"}


def test_linalg_refuses_magma_when_torch_has_none() -> None:
    class FakeCuda:
        has_magma = False

    class FakeTorch:
        __version__ = "2.11.0+cu130"
        cuda = FakeCuda()

    with pytest.raises(WorkloadParamError, match=r"has_magma is False.*available: default, "
                                                  "cusolver"):
        linalg.select_backend(FakeTorch(), "magma")


def test_linalg_eigh_passes_its_check_and_runs_cycles_on_cpu(cpu_torch: Any) -> None:
    workload = linalg.Linalg(linalg.LinalgParams.from_strings(
        {"sizes": "2,16", "batches": "[],[2]"}))
    workload.setup("cpu")
    assert workload.check_results and all(r.ok for r in workload.check_results)
    marker = RecordingMarker()
    workload.run(marker, CyclePlan(measured=2, warmup=1))
    assert len(marker.cycles) == 8 * 3
    assert {lb.split()[1] for lb, _ in marker.cycles} == {"device=cuda", "device=cpu"}


def test_a_wrong_eigensolver_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real_eigh = torch.linalg.eigh

    def bad_eigh(a: Any) -> Any:
        w, v = real_eigh(a)
        return w * 1.01, v

    monkeypatch.setattr(torch.linalg, "eigh", bad_eigh)
    case = linalg.LinalgCase("cpu", (), 32, "float32")
    results = linalg.check_case(torch, case, "cpu", torch.Generator().manual_seed(1))
    with pytest.raises(WrongResultError, match="eigenvalues"):
        require(results)


def test_the_gpu_lead_flushes_then_spins_and_is_a_no_op_on_cpu() -> None:
    from perfdiff.collect.kernels.lead import FLUSH_BYTES, SPIN_CYCLES_PER_US, GpuLead

    calls: list[tuple[str, object]] = []

    class Buffer:
        def zero_(self) -> None:
            calls.append(("zero", None))

    class FakeCuda:
        @staticmethod
        def _sleep(cycles: int) -> None:
            calls.append(("sleep", cycles))

        @staticmethod
        def synchronize() -> None:
            calls.append(("sync", None))

    class FakeTorch:
        int32 = "int32"
        cuda = FakeCuda()

        @staticmethod
        def empty(n: int, **kwargs: object) -> Buffer:
            calls.append(("empty", n))
            return Buffer()

    lead = GpuLead(FakeTorch(), "cuda:0", lead_us=250)
    lead()
    lead.synchronize()
    assert calls == [("empty", FLUSH_BYTES // 4), ("zero", None),
                     ("sleep", 250 * SPIN_CYCLES_PER_US), ("sync", None)]
    calls.clear()
    off = GpuLead(FakeTorch(), "cpu", lead_us=250)
    off()
    off.synchronize()
    assert calls == []
