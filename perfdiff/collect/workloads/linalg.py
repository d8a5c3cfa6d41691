"""``linalg``: batched ``torch.linalg.eigh`` in float32 by backend, with CPU time beside: the
seed table ``../shared/seeds/linalg-magma-vs-cusolver-table.md`` as labelled cases.

Why eigh: it is the batched float32 op whose MAGMA path costs milliseconds even for one 2x2
matrix (the seed's ~7 ms for batch ``[]``) - MAGMA's syevd is a hybrid CPU/GPU algorithm with
a large fixed cost - while cuSOLVER's costs about 0.1 ms. ``-p backend=magma|cusolver|default``
sets ``torch.backends.cuda.preferred_linalg_library`` for the whole run; asking for MAGMA on a
torch built without it (``torch.cuda.has_magma`` false) is refused with the backends that exist.

Cases: ``op=eigh device=cuda|cpu batch=[..] n=N dtype=float32``. A GPU cycle is preceded,
outside the cycle, by an L2 flush and a GPU spin (``perfdiff.collect.kernels.lead``), then
calls eigh and synchronises inside it; a CPU cycle calls eigh on host tensors, so its host
interval is the CPU time. Before timing, every case's eigenvalues are checked against float64
LAPACK on fresh inputs, and ``|A V - V diag(w)|`` against ``|A|``; one failure stops the run
with its figures.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParamError, WorkloadParams
from perfdiff.collect.workloads.cases import batch_text, case_label, parse_batches, parse_int_list
from perfdiff.collect.workloads.gpt_infer import import_torch_cuda
from perfdiff.markers import CycleMarker, call_returned

Backend = Literal["default", "cusolver", "magma"]
SEED_BATCHES = "[],[1],[2],[4]"
SEED_SIZES = "2,4,8,16,32,64,128,256,512,1024"
# eigenvalues and residual relative to max |eigenvalue|: float32 backward-stable algorithms
# reach ~n * 1.2e-7; this allows ~100x that before calling a result wrong.
EIG_RTOL_PER_N = 1e-5
EIG_RTOL_MIN = 1e-4


@dataclass(frozen=True)
class LinalgParams(WorkloadParams):
    """Backend and the grid (comma-separated; batches as ``[],[1],[2],[4]``)."""

    op: Literal["eigh"] = "eigh"
    backend: Backend = "default"
    batches: str = SEED_BATCHES
    sizes: str = SEED_SIZES
    dtype: Literal["float32", "float64"] = "float32"
    cpu: bool = True  # also time the op on the CPU (the seed's cpu_time column)
    seed: int = 0
    check: bool = True
    lead_us: int = 1000  # GPU spin before each call (kernels/lead.py); 0 turns it off


@dataclass(frozen=True)
class LinalgCase:
    device: str  # "cuda" or "cpu"
    batch: tuple[int, ...]
    n: int
    dtype: str
    op: str = "eigh"

    @property
    def label(self) -> str:
        return case_label({"op": self.op, "device": self.device, "batch": batch_text(self.batch),
                           "n": str(self.n), "dtype": self.dtype})


def plan_cases(params: LinalgParams) -> tuple[LinalgCase, ...]:
    """GPU cases in the seed's order (batch, then n); CPU cases after them."""
    try:
        batches = parse_batches(params.batches)
        sizes = parse_int_list(params.sizes, "sizes")
    except ValueError as exc:
        raise WorkloadParamError(str(exc)) from None
    devices = ("cuda", "cpu") if params.cpu else ("cuda",)
    return tuple(
        LinalgCase(device, batch, n, params.dtype, params.op)
        for device, batch, n in itertools.product(devices, batches, sizes)
    )


def available_backends(torch: Any) -> tuple[str, ...]:
    """Backends this torch build can use for CUDA linear algebra."""
    out = ["default", "cusolver"]
    if bool(getattr(torch.cuda, "has_magma", False)):
        out.append("magma")
    return tuple(out)


def select_backend(torch: Any, backend: str) -> str:
    """Set the preferred library; returns what torch reports back. MAGMA absent -> refused."""
    have = available_backends(torch)
    if backend not in have:
        raise WorkloadParamError(
            f"linalg backend '{backend}' is not in this torch build ({torch.__version__}: "
            f"torch.cuda.has_magma is False); available: {', '.join(have)}"
        )
    chosen = torch.backends.cuda.preferred_linalg_library(backend)
    return str(chosen).rsplit(".", 1)[-1].lower()


def symmetric(torch: Any, case: LinalgCase, device: str, generator: Any) -> Any:
    """A random symmetric matrix batch (M + Mᵀ)/2, M ~ N(0, 1), drawn on ``device``."""
    m = torch.randn((*case.batch, case.n, case.n), generator=generator, device=device)
    return ((m + m.transpose(-1, -2)) / 2).to(getattr(torch, case.dtype))


def check_case(torch: Any, case: LinalgCase, device: str, generator: Any) -> list[Any]:
    """eigh on fresh input vs float64 CPU eigenvalues, and the eigenvector residual."""
    from perfdiff.collect.kernels.check import CheckResult

    a = symmetric(torch, case, device, generator)
    w, v = torch.linalg.eigh(a)
    a64 = a.detach().double().cpu()
    w_ref = torch.linalg.eigvalsh(a64)
    scale = float(w_ref.abs().max()) if w_ref.numel() else 1.0
    tol = max(EIG_RTOL_MIN, EIG_RTOL_PER_N * case.n)
    w_err = float((w.double().cpu() - w_ref).abs().max())
    v64 = v.double().cpu()
    residual = float((a64 @ v64 - v64 * w.double().cpu().unsqueeze(-2)).abs().max())
    return [
        CheckResult(f"{case.label}: eigenvalues", w_err, scale, w_err / (tol * scale), tol, 0.0),
        CheckResult(f"{case.label}: |AV - VW|", residual, scale, residual / (tol * scale), tol,
                    0.0),
    ]


class Linalg(Workload):
    """Batched eigh per (device, batch, n); the backend is one per run."""

    name = "linalg"
    summary = "batched torch.linalg.eigh by backend (magma/cusolver), CPU time beside"
    params_class = LinalgParams
    idle_between_cycles = True  # each cycle ends with a synchronize
    untraced_cycles = False  # a benchmark: every cycle of every case is a sample

    def cases(self) -> tuple[str, ...]:
        p = self.params
        assert isinstance(p, LinalgParams)
        return tuple(c.label for c in plan_cases(p))

    def setup(self, device: str) -> None:
        p = self.params
        assert isinstance(p, LinalgParams)
        self._plan = plan_cases(p)
        torch = import_torch_cuda()
        self._torch = torch
        self._device = device
        on_gpu = str(device).startswith("cuda")
        self.backend_used = select_backend(torch, p.backend) if on_gpu else "cpu"
        from perfdiff.collect.kernels.lead import GpuLead

        # L2 flush + spin before each GPU call; no-ops on "cpu" (unit tests)
        self._lead = GpuLead(torch, device, p.lead_us)
        self._sync = self._lead.synchronize
        self.check_results: list[Any] = []
        if p.check:
            from perfdiff.collect.kernels.check import require

            gen = {d: torch.Generator(device=d).manual_seed(p.seed + 1_000_003)
                   for d in (device, "cpu")}
            for case in self._plan:
                on = device if case.device == "cuda" else "cpu"
                results = check_case(torch, case, on, gen[on])
                self.check_results.extend(results)
                require(results)
        self._sync()

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        p = self.params
        assert isinstance(p, LinalgParams)
        torch = self._torch
        gen = {d: torch.Generator(device=d).manual_seed(p.seed) for d in (self._device, "cpu")}
        for case in self._plan:
            on_gpu = case.device == "cuda"
            on = self._device if on_gpu else "cpu"
            a = symmetric(torch, case, on, gen[on])
            for i in range(plan.warmup + plan.measured):
                if on_gpu:
                    self._lead()
                with marker.cycle(case.label, warmup=i < plan.warmup):
                    torch.linalg.eigh(a)
                    if on_gpu:
                        call_returned()  # the end boundary mark (perfdiff.markers)
                        self._sync()

    def teardown(self) -> None:
        self._lead.release()


__all__ = ["Linalg", "LinalgCase", "LinalgParams", "available_backends", "check_case",
           "plan_cases", "select_backend", "symmetric"]
