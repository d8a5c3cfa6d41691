"""Build synthetic run files in code (never saved under fixtures/).

Why a factory: unit tests need run files whose truth is known (kernel times, metric values,
warm-up cycles, several runs or devices, NaN samples, names that break markdown). Everything here
is deterministic for a given ``seed``.

Typical use::

    rf = make_run_file([KernelSpec("gemm", 1.0, {"tensor_pct": 80.0}), KernelSpec("relu", 0.2)])
    slower = make_run_file([KernelSpec("gemm", 1.2, {"tensor_pct": 60.0}), KernelSpec("relu", 0.2)])

Timeline per cycle and device: optional memcpy/memset first, then each kernel spec's launches in
order on one stream, each preceded by an idle gap of ``idle_ms``; the cycle ends ``idle_ms`` after
the last device finishes. PM samples are the exact time-weighted mean of the truth (kernel's
metric value while it runs, 0 while idle) over each window ``[t - interval, t]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfdiff.analysis.kernel_metrics import interval_means
from perfdiff.schema import (
    CURRENT_VERSION,
    Collection,
    CycleTable,
    DeviceInfo,
    Environment,
    KernelName,
    KernelTable,
    MetricSeries,
    Run,
    RunFile,
    Status,
    TransferTable,
    Workload,
)

ODD_NAMES = (
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<>(TensorIterator&)>",
    "kernel|with|pipes",
    "`backticked`_kernel",
    "templated<float, *ptr>",
    "name with <html> & *stars*",
)


@dataclass(frozen=True)
class KernelSpec:
    """One kernel of the synthetic workload: mean duration, metric values while it runs."""

    name: str
    ms: float
    metrics: Mapping[str, float] = field(default_factory=dict)
    launches: int = 1  # launches per cycle
    device: int | None = None  # None: runs on every device
    mangled: str | None = None


DEFAULT_KERNELS = (
    KernelSpec("gemm_kernel", 1.0, {"tensor_pct": 80.0, "dram_pct": 30.0}),
    KernelSpec("softmax_kernel", 0.3, {"tensor_pct": 0.0, "dram_pct": 70.0}),
    KernelSpec("layernorm_kernel", 0.2, {"tensor_pct": 0.0, "dram_pct": 60.0}, launches=2),
)


def make_run_file(
    kernels: Sequence[KernelSpec] = DEFAULT_KERNELS,
    *,
    n_cycles: int = 20,
    n_runs: int = 1,
    n_warmup: int = 1,
    n_devices: int = 1,
    idle_ms: float = 0.05,
    noise: float = 0.02,
    run_offset: float = 0.0,
    metrics: Sequence[str] | None = None,
    sample_interval_ns: int = 20_000,
    nan_metric_fraction: float = 0.0,
    nvml_clock_mhz: float | None = None,
    memcpy_per_cycle: int = 0,
    memset_per_cycle: int = 0,
    gpu_name: str = "NVIDIA H100 80GB HBM3",
    workload: str = "synthetic",
    seed: int = 0,
    pid: int = 1000,
) -> RunFile:
    """A complete synthetic :class:`RunFile` (see the module docstring for the timeline)."""
    rng = np.random.default_rng(seed)
    names = sorted({k.name for k in kernels})
    name_id = {n: i for i, n in enumerate(names)}
    mangled = {k.name: k.mangled or f"_Z{len(k.name)}{k.name}" for k in kernels}
    metric_names = (
        tuple(metrics)
        if metrics is not None
        else tuple(sorted({m for k in kernels for m in k.metrics}))
    )
    runs = tuple(
        _make_run(
            kernels,
            name_id,
            rng,
            run_index=r,
            pid=pid + r,
            n_cycles=n_cycles,
            n_warmup=n_warmup,
            n_devices=n_devices,
            idle_ms=idle_ms,
            noise=noise,
            run_scale=float(1.0 + run_offset * rng.standard_normal()),
            metric_names=metric_names,
            sample_interval_ns=sample_interval_ns,
            nan_metric_fraction=nan_metric_fraction,
            nvml_clock_mhz=nvml_clock_mhz,
            memcpy_per_cycle=memcpy_per_cycle,
            memset_per_cycle=memset_per_cycle,
        )
        for r in range(n_runs)
    )
    devices = tuple(
        DeviceInfo(
            index=d,
            name=gpu_name,
            uuid=f"GPU-synthetic-{d}",
            sm_count=132,
            memory_bytes=80 * 2**30,
            sm_clock_mhz=1980,
            mem_clock_mhz=2619,
            compute_capability="9.0",
        )
        for d in range(n_devices)
    )
    sources = ["cupti_activity"]
    if metric_names:
        sources.append("pm_sampling")
    if nvml_clock_mhz is not None:
        sources.append("nvml")
    return RunFile(
        schema_version=CURRENT_VERSION,
        tool_version="0.1.0",
        status=Status("complete"),
        environment=Environment(
            host="synthetic-host",
            driver_version="580.159.04",
            cuda_version="13.0",
            cupti_version="13.4",
            torch_version="2.11.0",
            python_version="3.12.3",
            devices=devices,
        ),
        collection=Collection(
            metrics=metric_names, sample_interval_ns=sample_interval_ns, sources=tuple(sources)
        ),
        workload=Workload(name=workload, params={"seed": seed}),
        strings=tuple(KernelName(mangled[n], n) for n in names),
        runs=runs,
        created_unix_s=None,
    )


def _make_run(
    kernels: Sequence[KernelSpec],
    name_id: Mapping[str, int],
    rng: np.random.Generator,
    *,
    run_index: int,
    pid: int,
    n_cycles: int,
    n_warmup: int,
    n_devices: int,
    idle_ms: float,
    noise: float,
    run_scale: float,
    metric_names: Sequence[str],
    sample_interval_ns: int,
    nan_metric_fraction: float,
    nvml_clock_mhz: float | None,
    memcpy_per_cycle: int,
    memset_per_cycle: int,
) -> Run:
    ms = 1_000_000.0
    k_cols: dict[str, list[int]] = {c: [] for c in ("name", "device", "start", "end", "cycle")}
    k_values: dict[str, list[float]] = {m: [] for m in metric_names}
    cp: dict[str, list[int]] = {c: [] for c in ("device", "start", "end", "cycle", "bytes")}
    cp_kind: list[str] = []
    ms_cols: dict[str, list[int]] = {c: [] for c in ("device", "start", "end", "cycle", "bytes")}
    cyc_start: list[int] = []
    cyc_end: list[int] = []
    t0 = 1_000_000_000 + run_index * 10_000_000_000
    for cycle in range(n_cycles):
        cyc_start.append(t0)
        ends = []
        for dev in range(n_devices):
            t = float(t0)
            for _ in range(memcpy_per_cycle):
                dur = 0.05 * ms * (1 + noise * abs(rng.standard_normal()))
                for col, v in zip(
                    ("device", "start", "end", "cycle", "bytes"),
                    (dev, int(t), int(t + dur), cycle, 1 << 20),
                    strict=True,
                ):
                    cp[col].append(v)
                cp_kind.append("HtoD")
                t += dur
            for _ in range(memset_per_cycle):
                dur = 0.01 * ms
                for col, v in zip(
                    ("device", "start", "end", "cycle", "bytes"),
                    (dev, int(t), int(t + dur), cycle, 1 << 16),
                    strict=True,
                ):
                    ms_cols[col].append(v)
                t += dur
            for spec in kernels:
                if spec.device is not None and spec.device != dev:
                    continue
                for _ in range(spec.launches):
                    t += idle_ms * ms * max(0.1, 1 + noise * rng.standard_normal())
                    dur = spec.ms * ms * run_scale * max(0.05, 1 + noise * rng.standard_normal())
                    k_cols["name"].append(name_id[spec.name])
                    k_cols["device"].append(dev)
                    k_cols["start"].append(int(t))
                    k_cols["end"].append(int(t + dur))
                    k_cols["cycle"].append(cycle)
                    for m in metric_names:
                        base = spec.metrics.get(m, 0.0)
                        k_values[m].append(base * max(0.0, 1 + noise * rng.standard_normal()))
                    t += dur
            ends.append(t)
        t0 = int(max(ends) + idle_ms * ms)
        cyc_end.append(t0)
    kern = KernelTable(
        name_id=_i(k_cols["name"]),
        device=_i(k_cols["device"]),
        stream=np.full(len(k_cols["name"]), 7, dtype=np.int64),
        start_ns=_i(k_cols["start"]),
        end_ns=_i(k_cols["end"]),
        cycle=_i(k_cols["cycle"]),
        correlation_id=np.arange(len(k_cols["name"]), dtype=np.int64),
        grid_x=np.full(len(k_cols["name"]), 128, dtype=np.int64),
        grid_y=np.ones(len(k_cols["name"]), dtype=np.int64),
        grid_z=np.ones(len(k_cols["name"]), dtype=np.int64),
        block_x=np.full(len(k_cols["name"]), 256, dtype=np.int64),
        block_y=np.ones(len(k_cols["name"]), dtype=np.int64),
        block_z=np.ones(len(k_cols["name"]), dtype=np.int64),
    )
    series = []
    for dev in range(n_devices):
        on = kern.device == dev
        for m in metric_names:
            series.append(
                _pm_series(
                    m,
                    dev,
                    kern.start_ns[on],
                    kern.end_ns[on],
                    np.asarray(k_values[m])[on],
                    cyc_start[0],
                    cyc_end[-1],
                    sample_interval_ns,
                    nan_metric_fraction,
                    rng,
                )
            )
        if nvml_clock_mhz is not None:
            ts = np.arange(cyc_start[0], cyc_end[-1], 100_000, dtype=np.int64)
            vals = nvml_clock_mhz + 15.0 * np.round(noise * rng.standard_normal(ts.shape[0]))
            series.append(MetricSeries("sm_clock_mhz", "MHz", "nvml", dev, ts, vals))
    return Run(
        index=run_index,
        pid=pid,
        rank=None,
        exit_code=0,
        cycles=CycleTable(
            index=np.arange(n_cycles, dtype=np.int64),
            start_ns=_i(cyc_start),
            end_ns=_i(cyc_end),
            label=tuple("step" for _ in range(n_cycles)),
            warmup=np.arange(n_cycles) < n_warmup,
        ),
        kernels=kern,
        memcpy=TransferTable(
            kind=tuple(cp_kind),
            bytes=_i(cp["bytes"]),
            device=_i(cp["device"]),
            stream=np.full(len(cp_kind), 7, dtype=np.int64),
            start_ns=_i(cp["start"]),
            end_ns=_i(cp["end"]),
            cycle=_i(cp["cycle"]),
        ),
        memset=TransferTable(
            kind=tuple("memset" for _ in ms_cols["device"]),
            bytes=_i(ms_cols["bytes"]),
            device=_i(ms_cols["device"]),
            stream=np.full(len(ms_cols["device"]), 7, dtype=np.int64),
            start_ns=_i(ms_cols["start"]),
            end_ns=_i(ms_cols["end"]),
            cycle=_i(ms_cols["cycle"]),
        ),
        metrics=tuple(series),
    )


def _pm_series(
    name: str,
    device: int,
    k_start: np.ndarray,
    k_end: np.ndarray,
    k_value: np.ndarray,
    t_first: int,
    t_last: int,
    interval_ns: int,
    nan_fraction: float,
    rng: np.random.Generator,
) -> MetricSeries:
    """Samples that are the exact window means of the truth (kernel value, 0 when idle)."""
    order = np.argsort(k_start, kind="stable")
    ks, ke, kv = k_start[order], k_end[order], k_value[order]
    # truth as contiguous segments: idle gaps (value 0) between kernels
    gap_start = np.concatenate(([t_first], ke))
    gap_end = np.concatenate((ks, [t_last]))
    seg_start = np.concatenate((ks, gap_start))
    seg_end = np.concatenate((ke, gap_end))
    seg_val = np.concatenate((kv, np.zeros(gap_start.shape[0])))
    o = np.argsort(seg_start, kind="stable")
    seg_start, seg_end, seg_val = seg_start[o], seg_end[o], seg_val[o]
    keep = seg_end > seg_start
    ts = np.arange(t_first + interval_ns, t_last + 1, interval_ns, dtype=np.int64)
    values = interval_means(
        ts - interval_ns,
        ts,
        seg_start[keep].astype(np.int64),
        seg_end[keep].astype(np.int64),
        seg_val[keep],
    )
    if nan_fraction > 0:
        values[rng.random(values.shape[0]) < nan_fraction] = np.nan
    unit = "pct" if name.endswith("pct") else ""
    return MetricSeries(name, unit, "pm_sampling", device, ts, values, interval_ns=interval_ns)


def _i(values: Sequence[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


class StepClock:
    """A fake clock that advances ``step`` ns per read, so every stamp is distinct, ordered
    and predictable (cycle boundaries, marks, call stamps)."""

    def __init__(self, step: int = 1000) -> None:
        self.now = 0
        self.step = step

    def __call__(self) -> int:
        self.now += self.step
        return self.now
