"""Collective-communication kernels (NCCL and the like): on a fast rank, their time is waiting.

Why they are set apart: in a data-parallel job every rank enters each all-reduce and waits
there for the slowest rank. When one GPU is slowed (a noisy neighbour, a throttled card), the
*other* GPUs' collective kernels get longer by about the straggler's delay while their compute
kernels do not change. Counted like any kernel, those collectives would make every GPU look
equally "slower" and would rank first, pointing at the healthy GPUs. So, when a comparison spans
several devices, the per-device summary counts compute kernels only, and key findings on
collectives come after the compute kernels that changed (they are still reported).
"""

from __future__ import annotations

_MARKERS = (
    "nccl",  # ncclKernel_*, ncclDevKernel_* (NCCL, RCCL's ported names)
    "allreduce", "all_reduce",  # custom all-reduce kernels (vLLM, symmetric memory)
    "allgather", "all_gather",
    "reducescatter", "reduce_scatter",
    "alltoall", "all_to_all",
)


def is_collective(function: str) -> bool:
    """Whether a kernel name is a collective communication kernel (by its name)."""
    name = function.lower()
    return any(marker in name for marker in _MARKERS)



def collective_note(devices: set[str], functions: set[str]) -> str:
    """The report's note when the collective rule applied, else ""."""
    if len(devices) < 2 or not any(is_collective(f) for f in functions):
        return ""
    return (
        "Several devices with collective kernels (NCCL): the per-device summary counts compute "
        "kernels only, and collectives are ranked after compute kernels, because on the GPUs "
        "that wait for the slowest one their time is waiting, not work."
    )


__all__ = ["collective_note", "is_collective"]
