"""RMSNorm forward and backward as Triton kernels (the ``triton`` implementation).

Design, for comparison with the CUDA extension (``csrc/rmsnorm_kernels.cu``), which follows
the same plan so that the two differ in code generation, not in algorithm:

- forward: one program per row holds the whole row in registers (``BLOCK`` = next power of two
  of the row length), accumulates in float32 (float64 for float64) and stores ``rstd`` per row;
- backward ``dx``: one program per row, ``dx = rstd * (dy*w - x * rstd² * mean(dy*w*x))``;
- backward ``dw``: (column block x row block) tiles write float32 partial sums, then one
  reduction over the row blocks (a fixed order, so results are deterministic).

The ``# type: ignore`` comments: ``triton.jit`` is untyped where triton is installed, and
absent where it is not (the CPU CI), so mypy sees either an untyped decorator or ``Any``.
"""

from __future__ import annotations

import importlib
from typing import Any

import triton
import triton.language as tl

torch: Any = importlib.import_module("torch")

_MAX_PARTS = 256
_DW_BLOCK_COLS = 64
_DW_BLOCK_ROWS = 32


@triton.jit  # type: ignore[untyped-decorator, misc, unused-ignore]
def _rmsnorm_fwd(X, W, Y, RSTD, cols, eps, BLOCK: tl.constexpr, ACC: tl.constexpr):  # type: ignore[no-untyped-def]
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(X + row * cols + offs, mask=mask, other=0.0).to(ACC)
    mean_sq = tl.sum(x * x, axis=0) / cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + offs, mask=mask, other=0.0).to(ACC)
    y = x * rstd * w
    tl.store(Y + row * cols + offs, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit  # type: ignore[untyped-decorator, misc, unused-ignore]
def _rmsnorm_bwd_dx(DY, X, W, RSTD, DX, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):  # type: ignore[no-untyped-def]
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(X + row * cols + offs, mask=mask, other=0.0).to(ACC)
    dy = tl.load(DY + row * cols + offs, mask=mask, other=0.0).to(ACC)
    w = tl.load(W + offs, mask=mask, other=0.0).to(ACC)
    rstd = tl.load(RSTD + row)
    g = dy * w
    coef = rstd * rstd * rstd * tl.sum(g * x, axis=0) / cols
    dx = rstd * g - coef * x
    tl.store(DX + row * cols + offs, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit  # type: ignore[untyped-decorator, misc, unused-ignore]
def _rmsnorm_bwd_dw_partial(DY, X, RSTD, PARTIAL, rows, cols,  # type: ignore[no-untyped-def]
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr):
    # program (column block, row block): one tile, summed over its rows into PARTIAL[row block]
    col = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    part = tl.program_id(1).to(tl.int64)
    row = part * BLOCK_R + tl.arange(0, BLOCK_R)
    col_mask = col < cols
    row_mask = row < rows
    mask = row_mask[:, None] & col_mask[None, :]
    offs = row[:, None] * cols + col[None, :]
    dy = tl.load(DY + offs, mask=mask, other=0.0).to(ACC)
    x = tl.load(X + offs, mask=mask, other=0.0).to(ACC)
    rstd = tl.load(RSTD + row, mask=row_mask, other=0.0)
    tile = dy * x * rstd[:, None]
    tl.store(PARTIAL + part * cols + col, tl.sum(tile, axis=0), mask=col_mask)


def _acc_dtypes(x: Any) -> tuple[Any, Any]:
    """(triton accumulation dtype, torch dtype of rstd/partials) for input ``x``."""
    if x.dtype == torch.float64:
        return tl.float64, torch.float64
    return tl.float32, torch.float32


def _num_warps(block: int) -> int:
    return max(1, min(16, block // 256))


def forward(x2d: Any, w: Any, eps: float) -> tuple[Any, Any]:
    """(y, rstd) for contiguous ``x2d`` [rows, cols] and ``w`` [cols]."""
    rows, cols = x2d.shape
    acc, acc_torch = _acc_dtypes(x2d)
    y = torch.empty_like(x2d)
    rstd = torch.empty(rows, dtype=acc_torch, device=x2d.device)
    block = triton.next_power_of_2(cols)
    if rows:
        _rmsnorm_fwd[(rows,)](x2d, w, y, rstd, cols, eps, BLOCK=block, ACC=acc,
                              num_warps=_num_warps(block))
    return y, rstd


def backward(dy2d: Any, x2d: Any, w: Any, rstd: Any) -> tuple[Any, Any]:
    """(dx, dw) for contiguous inputs; dw sums partials over row chunks in a fixed order."""
    rows, cols = x2d.shape
    acc, acc_torch = _acc_dtypes(x2d)
    dx = torch.empty_like(x2d)
    block = triton.next_power_of_2(cols)
    if rows:
        _rmsnorm_bwd_dx[(rows,)](dy2d, x2d, w, rstd, dx, cols, BLOCK=block, ACC=acc,
                                 num_warps=_num_warps(block))
    # row blocks of at least 32 rows, at most _MAX_PARTS of them (a power of two tall)
    block_r = max(_DW_BLOCK_ROWS, triton.next_power_of_2(triton.cdiv(max(rows, 1), _MAX_PARTS)))
    parts = triton.cdiv(max(rows, 1), block_r)
    partial = torch.empty((parts, cols), dtype=acc_torch, device=x2d.device)
    grid = (triton.cdiv(cols, _DW_BLOCK_COLS), parts)
    _rmsnorm_bwd_dw_partial[grid](dy2d, x2d, rstd, partial, rows, cols,
                                  BLOCK_R=block_r, BLOCK_C=_DW_BLOCK_COLS, ACC=acc,
                                  num_warps=4)
    dw = partial.sum(dim=0).to(w.dtype)
    return dx, dw


__all__ = ["backward", "forward"]
