"""``rmsnorm``: RMSNorm four ways (PyTorch ops, TorchScript, Triton, CUDA C++), forward and
backward, four dtypes, a grid of shapes: the seed benchmark
(``../shared/seeds/rmsnorm-custom-op-benchmark.md``) as labelled cases.

Each case (``impl=... dtype=... direction=... shape=4xSxH``) is ``warmup + cycles`` labelled
cycles. One cycle is one call, timed like ``triton.testing.do_bench`` times it, so the two
can be compared case by case with CUDA events (``bench/bench_crosscheck.py``):

1. outside the cycle, a 256 MB buffer is zeroed (it evicts the inputs from L2: a cold cache,
   as do_bench) and a spin kernel keeps the GPU busy for ``lead_us`` while the host launches
   the call's kernels, so the call's GPU time holds no host launch gaps
   (``perfdiff.collect.kernels.lead``);
2. inside the cycle, the call (forward: ``fn(x, w)``; backward: ``y.backward(dy)`` on a graph
   built outside the cycle), then ``torch.cuda.synchronize()`` so the cycle's host interval
   covers its GPU work.

Before anything is timed, every requested (implementation, dtype, direction, shape) is run on
fresh random inputs and compared with a float64 reference
(:mod:`perfdiff.collect.kernels.check`); one wrong result stops the run with its figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParamError, WorkloadParams
from perfdiff.collect.workloads.cases import case_label, parse_int_list, shape_text
from perfdiff.collect.workloads.gpt_infer import import_torch_cuda
from perfdiff.markers import CycleMarker, call_returned

IMPLS = ("naive", "torchscript", "triton", "cuda")
DTYPES = ("float64", "float32", "float16", "bfloat16")
DIRECTIONS = ("forward", "backward")
SEED_SEQ = "128,512,2048"
SEED_HIDDEN = "32,61,64,128,130,256,512,1024,1027,2048,4096,8192,16384"


@dataclass(frozen=True)
class RmsNormParams(WorkloadParams):
    """Comma-separated subsets of the seed grid; the defaults are the whole grid."""

    impls: str = ",".join(IMPLS)
    dtypes: str = ",".join(DTYPES)
    directions: str = ",".join(DIRECTIONS)
    batch: int = 4
    seq: str = SEED_SEQ
    hidden: str = SEED_HIDDEN
    eps: float = 1e-6
    seed: int = 0
    check: bool = True  # compare with the float64 reference before timing (keep it on)
    lead_us: int = 1000  # GPU spin before each call (kernels/lead.py); 0 turns it off


@dataclass(frozen=True)
class Case:
    impl: str
    dtype: str
    direction: str
    shape: tuple[int, int, int]

    @property
    def label(self) -> str:
        return case_label({"impl": self.impl, "dtype": self.dtype, "direction": self.direction,
                           "shape": shape_text(self.shape)})


def _choices(text: str, allowed: tuple[str, ...], key: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise WorkloadParamError(
            f"parameter '{key}' takes a comma-separated subset of {','.join(allowed)}; "
            f"got {text!r}"
        )
    return items


def plan_cases(params: RmsNormParams) -> tuple[Case, ...]:
    """Every case, in run order: dtype, direction, shape, then implementation innermost, so
    that the implementations of one shape run close together in time."""
    impls = _choices(params.impls, IMPLS, "impls")
    dtypes = _choices(params.dtypes, DTYPES, "dtypes")
    directions = _choices(params.directions, DIRECTIONS, "directions")
    try:
        seqs = parse_int_list(params.seq, "seq")
        hiddens = parse_int_list(params.hidden, "hidden")
    except ValueError as exc:
        raise WorkloadParamError(str(exc)) from None
    if params.batch <= 0:
        raise WorkloadParamError(f"parameter 'batch' must be positive, got {params.batch}")
    return tuple(
        Case(impl, dtype, direction, (params.batch, s, h))
        for dtype, direction, s, h, impl in itertools.product(
            dtypes, directions, seqs, hiddens, impls
        )
    )


def build_impls(names: tuple[str, ...], eps: float) -> dict[str, Callable[[Any, Any], Any]]:
    """name -> differentiable ``fn(x, w)``; Triton and the extension are loaded only if asked."""
    from perfdiff.collect.kernels import rmsnorm_torch as rt

    out: dict[str, Callable[[Any, Any], Any]] = {}
    for name in names:
        if name == "naive":
            out[name] = rt.naive_impl(eps)
        elif name == "torchscript":
            out[name] = rt.torchscript_impl(eps)
        elif name == "triton":
            from perfdiff.collect.kernels import rmsnorm_triton as tk

            out[name] = rt.impl_from_function(rt.autograd_function(tk.forward, tk.backward), eps)
        elif name == "cuda":
            from perfdiff.collect.kernels import rmsnorm_cuda as ck

            ck.load_extension()
            out[name] = rt.impl_from_function(rt.autograd_function(ck.forward, ck.backward), eps)
    return out


def make_inputs(torch: Any, case: Case, device: str, generator: Any) -> tuple[Any, Any, Any]:
    """x ~ N(0, 1), w ~ 1 + N(0, 0.1²), dy ~ N(0, 1) in the case's dtype (drawn in float32)."""
    dtype = getattr(torch, case.dtype)
    x = torch.randn(case.shape, generator=generator, device=device).to(dtype)
    w = (1.0 + 0.1 * torch.randn(case.shape[-1], generator=generator, device=device)).to(dtype)
    dy = torch.randn(case.shape, generator=generator, device=device).to(dtype)
    return x, w, dy


def check_case(torch: Any, fn: Callable[[Any, Any], Any], case: Case, device: str,
               generator: Any, eps: float) -> list[Any]:
    """Run ``case`` once on fresh inputs and compare with the float64 reference."""
    from perfdiff.collect.kernels.check import compare_to_reference
    from perfdiff.collect.kernels.rmsnorm_torch import reference

    x, w, dy = make_inputs(torch, case, device, generator)
    y_ref, dx_ref, dw_ref = reference(x, w, dy, eps)
    if case.direction == "forward":
        with torch.no_grad():
            y = fn(x, w)
        return [compare_to_reference(f"{case.label}: y", y, y_ref, case.dtype)]
    xg = x.detach().requires_grad_(True)
    wg = w.detach().requires_grad_(True)
    fn(xg, wg).backward(dy)
    return [
        compare_to_reference(f"{case.label}: dx", xg.grad, dx_ref, case.dtype),
        compare_to_reference(f"{case.label}: dw", wg.grad, dw_ref, case.dtype),
    ]


def make_call(torch: Any, fn: Callable[[Any, Any], Any], case: Case, device: str,
              generator: Any) -> Callable[[], object]:
    """The timed call of ``case``, its inputs (and, for backward, its graph) built now.

    Also used by ``bench/bench_crosscheck.py`` to time the same call with CUDA events.
    """
    x, w, dy = make_inputs(torch, case, device, generator)
    if case.direction == "forward":
        def forward() -> object:
            with torch.no_grad():
                return fn(x, w)

        return forward
    xg = x.detach().requires_grad_(True)
    wg = w.detach().requires_grad_(True)
    y = fn(xg, wg)

    def backward() -> object:
        xg.grad = None
        wg.grad = None
        y.backward(dy, retain_graph=True)
        return None

    return backward


class RmsNorm(Workload):
    """The RMSNorm benchmark; one case per implementation x dtype x direction x shape."""

    name = "rmsnorm"
    summary = "RMSNorm naive/torchscript/triton/cuda, fwd+bwd, 4 dtypes (the RMSNorm seed)"
    params_class = RmsNormParams
    idle_between_cycles = True  # each cycle ends with a synchronize
    untraced_cycles = False  # a benchmark: every cycle of every case is a sample

    def cases(self) -> tuple[str, ...]:
        p = self.params
        assert isinstance(p, RmsNormParams)
        return tuple(c.label for c in plan_cases(p))

    def setup(self, device: str) -> None:
        p = self.params
        assert isinstance(p, RmsNormParams)
        self._plan = plan_cases(p)
        torch = import_torch_cuda()
        self._torch = torch
        self._device = device
        self._impls = build_impls(tuple(dict.fromkeys(c.impl for c in self._plan)), p.eps)
        from perfdiff.collect.kernels.lead import GpuLead

        # L2 flush + spin before each call; GPU-only (no-ops on "cpu", in unit tests)
        self._lead = GpuLead(torch, device, p.lead_us)
        self._sync = self._lead.synchronize
        self.check_results: list[Any] = []
        if p.check:
            from perfdiff.collect.kernels.check import require

            generator = torch.Generator(device=device).manual_seed(p.seed + 1_000_003)
            for case in self._plan:
                results = check_case(torch, self._impls[case.impl], case, device, generator,
                                     p.eps)
                self.check_results.extend(results)
                require(results)
        self._sync()

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        p = self.params
        assert isinstance(p, RmsNormParams)
        torch = self._torch
        generator = torch.Generator(device=self._device).manual_seed(p.seed)
        for case in self._plan:
            call = make_call(torch, self._impls[case.impl], case, self._device, generator)
            for i in range(plan.warmup + plan.measured):
                self._lead()
                with marker.cycle(case.label, warmup=i < plan.warmup):
                    call()
                    call_returned()  # the end boundary mark: where a CUDA end event would be
                    self._sync()

    def teardown(self) -> None:
        self._impls = {}
        self._lead.release()


__all__ = ["DIRECTIONS", "DTYPES", "IMPLS", "Case", "RmsNorm", "RmsNormParams", "build_impls",
           "check_case", "make_call", "make_inputs", "plan_cases"]
