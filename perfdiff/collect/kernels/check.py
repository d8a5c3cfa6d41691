"""Correctness gate: every implementation against a float64 reference before it is timed.

Why a scale-aware tolerance: RMSNorm outputs and gradients are O(1) on average but the
backward's ``dx`` is a difference of two similar terms, so a plain relative tolerance fails on
entries near zero for reasons that are not bugs. An entry passes when
``|out - ref| <= atol * rms(ref) + rtol * |ref|`` (``rms`` over the whole tensor); ``atol`` and
``rtol`` per dtype are a few units in the last place of that dtype, widened for the
accumulation of long rows. A failure raises :class:`WrongResultError` carrying the figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perfdiff.errors import WorkloadError

# dtype -> (atol as a share of rms(ref), rtol). Machine epsilons: float64 2.2e-16,
# float32 1.2e-7, float16 9.8e-4, bfloat16 7.8e-3.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-10),
    "float32": (2e-5, 2e-5),
    "float16": (4e-3, 4e-3),
    "bfloat16": (3e-2, 3e-2),
}


class WrongResultError(WorkloadError):
    """An implementation disagrees with the float64 reference: nothing is timed after it."""


@dataclass(frozen=True)
class CheckResult:
    """How far one output is from its reference, in absolute terms and against the tolerance."""

    what: str  # e.g. "impl=cuda dtype=float16 direction=backward shape=4x128x61: dx"
    max_abs_err: float
    ref_scale: float
    worst_ratio: float  # max over entries of |err| / allowed; <= 1 passes
    atol: float
    rtol: float

    @property
    def ok(self) -> bool:
        return math.isfinite(self.worst_ratio) and self.worst_ratio <= 1.0

    def line(self) -> str:
        """One line with the figures (used in error messages and the GPU logs)."""
        return (
            f"{self.what}: max |err| {self.max_abs_err:.3g} (reference scale "
            f"{self.ref_scale:.3g}), worst err/allowed {self.worst_ratio:.3g} with allowed = "
            f"{self.atol:g}*scale + {self.rtol:g}*|ref|"
        )


def compare_to_reference(what: str, out: Any, ref: Any, dtype_name: str) -> CheckResult:
    """Compare tensor ``out`` (any dtype) with float64 tensor ``ref`` under ``dtype_name``'s
    tolerance; NaN or inf in ``out`` gives an infinite ratio (a failure)."""
    atol, rtol = TOLERANCES[dtype_name]
    got = out.detach().double()
    want = ref.detach().double().to(got.device)
    err = (got - want).abs()
    ref_scale = float(want.pow(2).mean().sqrt()) if want.numel() else 0.0
    allowed = atol * ref_scale + rtol * want.abs()
    ratio = err / allowed.clamp_min(1e-300)
    finite = bool(got.isfinite().all())
    worst = float(ratio.max()) if ratio.numel() else 0.0
    return CheckResult(
        what=what,
        max_abs_err=float(err.max()) if err.numel() else 0.0,
        ref_scale=ref_scale,
        worst_ratio=worst if finite else math.inf,
        atol=atol,
        rtol=rtol,
    )


def require(results: list[CheckResult]) -> None:
    """Raise :class:`WrongResultError` with the figures of the first failing result."""
    for result in results:
        if not result.ok:
            raise WrongResultError(
                f"wrong result, run stopped before timing: {result.line()}"
            )


__all__ = ["TOLERANCES", "CheckResult", "WrongResultError", "compare_to_reference", "require"]
