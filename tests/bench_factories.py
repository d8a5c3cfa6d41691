"""Synthetic benchmark run files (labelled cases) built in code for the ``perfdiff bench`` tests.

Why separate from ``tests/factories.py``: benchmark files need many labelled cases per run with
known per-case kernel times, gaps and CPU-only cases; that factory makes one unlabelled case.
Nothing here is ever saved under fixtures/.

Timeline of one cycle: ``lead_ms`` of host time, then the case's kernels one after another on
one stream separated by ``gap_ms`` (so the GPU span is sum(kernels) + gaps), then ``tail_ms``.
A case with no kernels is a CPU case: its cycle lasts ``cpu_ms``. Every duration is scaled by
``scale`` and multiplied by ``1 + noise * N(0, 1)`` per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfdiff.schema import (
    CURRENT_VERSION,
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    KernelName,
    KernelTable,
    Run,
    RunFile,
    Status,
    TransferTable,
    Workload,
)


@dataclass(frozen=True)
class CaseSpec:
    """One case: its label, its kernels' mean durations (ms), the gaps between them."""

    label: str
    kernel_ms: Sequence[float] = (0.05,)
    gap_ms: float = 0.0
    cpu_ms: float = 0.0  # for a CPU case (no kernels): the cycle's duration
    scale: float = 1.0


@dataclass(frozen=True)
class BenchFileSpec:
    cases: Sequence[CaseSpec]
    n_cycles: int = 12
    n_warmup: int = 2
    noise: float = 0.01
    seed: int = 0
    workload: str = "rmsnorm"
    params: Mapping[str, Any] = field(default_factory=dict)
    gpu_name: str = "NVIDIA H100 80GB HBM3"
    # a GPU lead (spin kernel, outside every cycle) ending this long before each cycle's
    # first kernel; None: no lead
    lead_gap_ms: float | None = None


def _empty_transfers() -> TransferTable:
    z = np.zeros(0, dtype=np.int64)
    return TransferTable(kind=(), bytes=z, device=z, stream=z, start_ns=z, end_ns=z, cycle=z)


def make_bench_file(spec: BenchFileSpec) -> RunFile:
    """A complete run file with one labelled case per :class:`CaseSpec`, in order."""
    rng = np.random.default_rng(spec.seed)
    ms = 1_000_000.0
    names = sorted({f"kernel_{i}" for c in spec.cases for i in range(len(c.kernel_ms))})
    names.append("spin_kernel")
    name_id = {n: i for i, n in enumerate(names)}
    k: dict[str, list[int]] = {c: [] for c in ("name", "start", "end", "cycle")}
    starts: list[int] = []
    ends: list[int] = []
    labels: list[str] = []
    warm: list[bool] = []
    t = 1_000_000_000.0
    cycle = 0
    for case in spec.cases:
        for i in range(spec.n_warmup + spec.n_cycles):
            jitter = spec.noise * rng.standard_normal()
            factor = case.scale * max(0.05, 1.0 + jitter)
            if spec.lead_gap_ms is not None and case.kernel_ms:
                t += 0.5 * ms  # room for the GPU lead below: it ran before this cycle, and
                # kernels of one stream cannot overlap (perfdiff.schema.sense, issue 25)
            starts.append(int(t))
            t += 0.01 * ms  # host lead before the first launch
            if not case.kernel_ms:
                t += case.cpu_ms * factor * ms
            if spec.lead_gap_ms is not None and case.kernel_ms:
                k["name"].append(name_id["spin_kernel"])
                k["start"].append(int(t - 0.5 * ms))
                k["end"].append(int(t - spec.lead_gap_ms * ms))
                k["cycle"].append(-1)
            for j, kms in enumerate(case.kernel_ms):
                if j:
                    t += case.gap_ms * ms
                dur = kms * factor * ms
                k["name"].append(name_id[f"kernel_{j}"])
                k["start"].append(int(t))
                k["end"].append(int(t + dur))
                k["cycle"].append(cycle)
                t += dur
            t += 0.005 * ms
            ends.append(int(t))
            labels.append(case.label)
            warm.append(i < spec.n_warmup)
            t += 0.02 * ms  # between cycles (the L2 flush, outside any cycle)
            cycle += 1
    n_k = len(k["name"])

    def col(values: Sequence[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    ones = np.ones(n_k, dtype=np.int64)
    kernels = KernelTable(
        name_id=col(k["name"]), device=np.zeros(n_k, dtype=np.int64), stream=7 * ones,
        start_ns=col(k["start"]), end_ns=col(k["end"]), cycle=col(k["cycle"]),
        correlation_id=np.arange(n_k, dtype=np.int64), grid_x=ones, grid_y=ones, grid_z=ones,
        block_x=128 * ones, block_y=ones, block_z=ones,
    )
    run = Run(
        index=0, pid=4242, rank=None, exit_code=0,
        cycles=CycleTable(index=np.arange(cycle, dtype=np.int64), start_ns=col(starts),
                          end_ns=col(ends), label=tuple(labels), warmup=np.asarray(warm)),
        kernels=kernels, memcpy=_empty_transfers(), memset=_empty_transfers(), metrics=(),
    )
    device = DeviceInfo(index=0, name=spec.gpu_name, uuid="GPU-bench-0", sm_count=132,
                        memory_bytes=80 * 2**30, compute_capability="9.0")
    return RunFile(
        schema_version=CURRENT_VERSION, tool_version="0.1.0", status=Status("complete"),
        environment=Environment(host="synthetic", driver_version="580.159.04",
                                cuda_version="13.0", cupti_version="13.4",
                                torch_version="2.11.0", python_version="3.12.3",
                                devices=(device,)),
        collection=Collection(metrics=(), sample_interval_ns=5000, sources=("cupti_activity",)),
        workload=Workload(name=spec.workload, params=dict(spec.params)),
        strings=tuple(KernelName(f"_Z{len(n)}{n}", n) for n in names),
        runs=(run,),
    )


def rmsnorm_cases(scale_of: Mapping[str, float] | None = None) -> list[CaseSpec]:
    """A small rmsnorm grid: 4 impls x 2 dtypes x 2 directions x 2 shapes, kernel counts and
    times roughly as on an H100 (naive: several kernels with gaps; cuda/triton: one or three).
    ``scale_of`` multiplies the times of the named labels (a planted regression)."""
    scale_of = scale_of or {}
    per_impl = {"naive": (0.006, 0.005, 0.004, 0.006), "torchscript": (0.008, 0.006),
                "triton": (0.009,), "cuda": (0.007,)}
    out = []
    for dtype in ("float32", "bfloat16"):
        for direction in ("forward", "backward"):
            for shape, size in (("4x128x64", 1.0), ("4x2048x4096", 40.0)):
                for impl, kernels in per_impl.items():
                    label = f"impl={impl} dtype={dtype} direction={direction} shape={shape}"
                    times = tuple(size * t * (2.0 if direction == "backward" else 1.0)
                                  for t in kernels)
                    out.append(CaseSpec(label, times, gap_ms=0.0005,
                                        scale=scale_of.get(label, 1.0)))
    return out


def linalg_cases(scale_of: Mapping[str, float] | None = None, *, cpu: bool = True
                 ) -> list[CaseSpec]:
    """eigh cases: batches [], [2] x n in 2, 64, 512 on the GPU (and the CPU, if ``cpu``)."""
    scale_of = scale_of or {}
    out = []
    devices = ("cuda", "cpu") if cpu else ("cuda",)
    for device in devices:
        for batch in ("[]", "[2]"):
            for n in (2, 64, 512):
                label = f"op=eigh device={device} batch={batch} n={n} dtype=float32"
                size = (n / 64.0) ** 1.5 + 0.1
                if device == "cuda":
                    out.append(CaseSpec(label, (0.03 * size, 0.05 * size, 0.02), gap_ms=0.01,
                                        scale=scale_of.get(label, 1.0)))
                else:
                    out.append(CaseSpec(label, (), cpu_ms=0.2 * size))
    return out
