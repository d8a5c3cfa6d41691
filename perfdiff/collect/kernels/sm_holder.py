"""A Triton kernel that holds part of the GPU's SMs with tensor-core work (``--contend-mode
partition``).

Why a kernel of our own rather than a matrix product from torch: the partition neighbour must
occupy a *known share of the SMs* for a long time, the way an MPS co-tenant limited by
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (or a green context) does. cuBLAS picks its own grid
(split-K, stream-K, one wave over every SM), so a torch product cannot promise that. Here one
program per held SM loads a 128x256 and a 256x128 bf16 tile once (128 KiB of shared memory, more
than half of an H100 SM's 228 KiB, so no two programs share an SM) and then runs tensor-core
products on them for ``iters`` rounds. Our own GEMMs, whose blocks need most of an SM's shared
memory, cannot be placed beside it; small elementwise blocks still can.

The ``# type: ignore`` comments: ``triton.jit`` is untyped where triton is installed, and
absent where it is not (the CPU CI), so mypy sees either an untyped decorator or ``Any``.
"""

from __future__ import annotations

import importlib
from typing import Any

import triton
import triton.language as tl

torch: Any = importlib.import_module("torch")

_ROWS = 128
_INNER = 256


@triton.jit  # type: ignore[untyped-decorator, misc, unused-ignore]
def _hold(A, B, OUT, iters, ROWS: tl.constexpr, INNER: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(0)
    rows = tl.arange(0, ROWS)
    inner = tl.arange(0, INNER)
    a = tl.load(A + rows[:, None] * INNER + inner[None, :])
    b = tl.load(B + inner[:, None] * ROWS + rows[None, :])
    acc = tl.zeros((ROWS, ROWS), dtype=tl.float32)
    for _ in range(iters):
        acc = tl.dot(a, b, acc)
    tl.store(OUT + pid * ROWS * ROWS + rows[:, None] * ROWS + rows[None, :], acc)


class SmHolder:
    """Launches ``programs`` long-running programs on the current stream, one per SM."""

    def __init__(self, programs: int, device: Any) -> None:
        self.programs = programs
        self._a = torch.randn(_ROWS, _INNER, device=device, dtype=torch.bfloat16) / 16
        self._b = torch.randn(_INNER, _ROWS, device=device, dtype=torch.bfloat16) / 16
        self._out = torch.empty(programs, _ROWS, _ROWS, device=device, dtype=torch.float32)

    def launch(self, iters: int) -> None:
        _hold[(self.programs,)](self._a, self._b, self._out, iters, ROWS=_ROWS, INNER=_INNER,
                                num_warps=8, num_stages=1)

    def iters_for(self, seconds: float, stream: Any) -> int:
        """Rounds that make one launch last about ``seconds`` (measured, not assumed)."""
        probe = 256
        self.launch(probe)  # compiles
        stream.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        self.launch(probe)
        end.record(stream)
        end.synchronize()
        per_iter_s = start.elapsed_time(end) / 1e3 / probe
        return max(1, int(seconds / per_iter_s))
