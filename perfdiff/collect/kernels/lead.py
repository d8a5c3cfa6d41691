"""What runs on the GPU just before each timed call, outside its cycle.

Why: a cycle's GPU time is measured from its first kernel's start to its last kernel's end.
If the GPU were idle when the host begins launching a call, every host-side delay between two
launches (Python, the autograd engine, TorchScript's executor, CUPTI's own callbacks) would
become a gap inside that span, and the GPU time would measure the host. So before each call:

1. a 256 MB buffer is zeroed: it evicts the call's inputs from L2 (a cold cache, as
   ``triton.testing.do_bench`` does), and
2. a spin kernel (``torch.cuda._sleep``) keeps the GPU busy for about ``lead_us``, long enough
   for the host to queue all of the call's kernels behind it.

Both are launched before the cycle opens, so they belong to no cycle and count in no case.
The cross-check (``bench/bench_crosscheck.py``) uses the same lead before its CUDA events.
"""

from __future__ import annotations

from typing import Any

FLUSH_BYTES = 256 * 1024 * 1024  # as triton.testing.do_bench's L2 flush
SPIN_CYCLES_PER_US = 2000  # ~2 GHz SM clock; approximate, the lead need only be long enough


class GpuLead:
    """Callable: flush L2, then spin ``lead_us``. A no-op on a CPU device (unit tests)."""

    def __init__(self, torch: Any, device: str, lead_us: int) -> None:
        self._torch = torch
        self.on_gpu = str(device).startswith("cuda")
        self._spin_cycles = max(0, int(lead_us)) * SPIN_CYCLES_PER_US
        self._flush = (torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
                       if self.on_gpu else None)

    def __call__(self) -> None:
        if self._flush is None:
            return
        self._flush.zero_()
        if self._spin_cycles:
            self._torch.cuda._sleep(self._spin_cycles)

    def synchronize(self) -> None:
        """Wait for the GPU (a no-op on a CPU device)."""
        if self.on_gpu:
            self._torch.cuda.synchronize()

    def release(self) -> None:
        self._flush = None


__all__ = ["FLUSH_BYTES", "SPIN_CYCLES_PER_US", "GpuLead"]
