"""Synthetic multi-rank jobs (built in code, never saved under fixtures/).

Why: ``perfdiff ranks`` and the distributed compare need jobs whose truth is known: N ranks in
lock-step, one GPU each, meeting once per cycle in an all-reduce. A straggler is planted by
making some of its kernels slower and every *other* rank's all-reduce longer by the same delay
(they wait for it there), as on a real data-parallel job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from perfdiff.schema.model import Run, RunFile
from tests.factories import KernelSpec, make_run_file

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
RANK_KERNELS = (
    KernelSpec("gemm_kernel", 1.0),
    KernelSpec("softmax_kernel", 0.3),
    KernelSpec("layernorm_kernel", 0.2, launches=2),
)
ALL_REDUCE_MS = 0.4


def make_job(n_ranks: int = 8, *, slower: Mapping[int, Mapping[str, float]] | None = None,
             n_cycles: int = 30, noise: float = 0.02, seed: int = 0,
             pid: int = 4000) -> RunFile:
    """A job of ``n_ranks`` ranks; ``slower[rank][kernel]`` multiplies that kernel's time on
    that rank, and the other ranks' all-reduce grows by the rank's added time per cycle."""
    slower = slower or {}
    delay_ms = max((sum(k.ms * k.launches * (slower.get(r, {}).get(k.name, 1.0) - 1.0)
                        for k in RANK_KERNELS) for r in range(n_ranks)), default=0.0)
    runs: list[Run] = []
    template: RunFile | None = None
    for rank in range(n_ranks):
        factors = slower.get(rank, {})
        own_delay = sum(k.ms * k.launches * (factors.get(k.name, 1.0) - 1.0)
                        for k in RANK_KERNELS)
        wait_ms = ALL_REDUCE_MS + max(0.0, delay_ms - own_delay)
        specs = [replace(k, ms=k.ms * factors.get(k.name, 1.0)) for k in RANK_KERNELS]
        specs.append(KernelSpec(ALL_REDUCE, wait_ms))
        one = make_run_file(specs, n_cycles=n_cycles, noise=noise, seed=seed * 1000 + rank,
                            pid=pid + rank, workload="ddp-synthetic")
        template = template or one
        run = one.runs[0]
        kernels = replace(run.kernels, device=np.full_like(run.kernels.device, rank))
        runs.append(replace(run, rank=rank, kernels=kernels))
    assert template is not None
    devices = make_run_file(RANK_KERNELS, n_cycles=2, n_devices=n_ranks).environment.devices
    return replace(template, runs=tuple(runs),
                   environment=replace(template.environment, devices=devices))
