"""RMSNorm in plain PyTorch ops (``naive``), the same function compiled by TorchScript
(``torchscript``), and the float64 reference every implementation is checked against.

``rms_norm(x, w) = x / sqrt(mean(x², last dim) + eps) * w``, as in the seed benchmark
(``../shared/seeds/rmsnorm-custom-op-benchmark.md``). The naive version's backward is what
autograd derives from the ops; TorchScript may fuse the element-wise ops on the GPU.

torch is bound at module level on purpose: TorchScript resolves ``torch`` in the scripted
function's globals. The module is imported only from a workload's ``setup``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

torch: Any = importlib.import_module("torch")

RmsNormFn = Callable[[Any, Any], Any]  # (x, w) -> y, differentiable
DEFAULT_EPS = 1e-6


def rms_norm_naive(x: Any, w: Any, eps: float = DEFAULT_EPS) -> Any:
    """RMSNorm as four PyTorch ops (pow, mean, rsqrt, two multiplies)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# The same expression as rms_norm_naive, as TorchScript source compiled by a CompilationUnit
# (a constant of this module, never user input).
_SCRIPT_SOURCE = """
def rms_norm(x: Tensor, w: Tensor, eps: float) -> Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""


def scripted_rms_norm() -> Any:
    """The TorchScript version. torch.jit is deprecated in recent torch and may warn; the
    warning says nothing about this benchmark, so it is silenced here and only here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return torch.jit.CompilationUnit(_SCRIPT_SOURCE).rms_norm


def naive_impl(eps: float) -> RmsNormFn:
    def fn(x: Any, w: Any) -> Any:
        return rms_norm_naive(x, w, eps)

    return fn


def torchscript_impl(eps: float) -> RmsNormFn:
    scripted = scripted_rms_norm()

    def fn(x: Any, w: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            return scripted(x, w, eps)

    return fn


def reference(x: Any, w: Any, dy: Any, eps: float) -> tuple[Any, Any, Any]:
    """(y, dx, dw) in float64 by autograd through the naive ops: the ground truth."""
    x64 = x.detach().double().requires_grad_(True)
    w64 = w.detach().double().requires_grad_(True)
    y64 = rms_norm_naive(x64, w64, eps)
    dx64, dw64 = torch.autograd.grad(y64, (x64, w64), dy.detach().double())
    return y64.detach(), dx64, dw64


def autograd_function(forward: Callable[..., Any], backward: Callable[..., Any]) -> Any:
    """A ``torch.autograd.Function`` from kernel launchers: ``forward(x2d, w, eps) -> (y2d,
    rstd)`` and ``backward(dy2d, x2d, w, rstd) -> (dx2d, dw)``. Inputs are flattened to
    [rows, cols] and made contiguous here, once, for both the Triton and the CUDA kernels."""

    class RmsNorm(torch.autograd.Function):  # type: ignore[misc, unused-ignore]
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any, eps: float) -> Any:
            x2d = x.reshape(-1, x.shape[-1]).contiguous()
            w1 = w.contiguous()
            y2d, rstd = forward(x2d, w1, eps)
            ctx.save_for_backward(x2d, w1, rstd)
            return y2d.view(x.shape)

        @staticmethod
        def backward(ctx: Any, dy: Any) -> tuple[Any, Any, None]:
            x2d, w1, rstd = ctx.saved_tensors
            dx2d, dw = backward(dy.reshape(-1, dy.shape[-1]).contiguous(), x2d, w1, rstd)
            return dx2d.view(dy.shape), dw, None

    return RmsNorm


def impl_from_function(function: Any, eps: float) -> RmsNormFn:
    def fn(x: Any, w: Any) -> Any:
        return function.apply(x, w, eps)

    return fn


__all__ = [
    "DEFAULT_EPS",
    "RmsNormFn",
    "autograd_function",
    "impl_from_function",
    "naive_impl",
    "reference",
    "rms_norm_naive",
    "scripted_rms_norm",
    "torchscript_impl",
]
