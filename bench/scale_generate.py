"""Generate two synthetic run files for the compare scale benchmark (see bench/README.md).

Each file holds ``--cycles`` x ``--kernels-per-cycle`` kernel launches (default 1,000 x 1,000 =
1,000,000) over ``--names`` distinct kernel names, back to back on one GPU with small gaps, plus
two PM-sampled metrics (tensor, DRAM) every 20 us of GPU time and an NVML SM clock every 10 ms:
the shape of a real ``perfdiff collect`` recording, at the size issue 3 asks compare to handle.
The abnormal file makes the GEMM-like kernels 20 % slower with lower tensor utilisation.

Usage: python bench/scale_generate.py OUT_DIR [--cycles N] [--kernels-per-cycle N]
Deterministic for a given --seed. Never written under fixtures/ (these are not recordings).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

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
    Workload,
    empty_transfer_table,
    save_run_file,
)

TENSOR = "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SAMPLE_NS = 20_000
NVML_NS = 10_000_000


def _names(n: int) -> tuple[KernelName, ...]:
    out = []
    for i in range(n):
        if i % 4 == 0:
            demangled = f"ampere_fp16_s16816gemm_fp16_{64 * (1 + i % 3)}x128_ldg8_f2f_tn_{i}"
        else:
            demangled = (f"void at::native::vectorized_elementwise_kernel<4, "
                         f"at::native::Functor{i}<float>, at::detail::Array<char*, 2> >(int)")
        out.append(KernelName(mangled=f"_Z{len(demangled)}k{i}", demangled=demangled))
    return tuple(out)


def _run(n_cycles: int, per_cycle: int, n_names: int, abnormal: bool,
         rng: np.random.Generator) -> Run:
    n = n_cycles * per_cycle
    name_id = np.tile(np.arange(per_cycle, dtype=np.int64) % n_names, n_cycles)
    is_gemm = name_id % 4 == 0
    base = np.where(is_gemm, 30_000.0, 4_000.0) * (1.0 + 0.02 * rng.standard_normal(n))
    if abnormal:
        base = np.where(is_gemm, base * 1.2, base)
    dur = np.maximum(base, 500.0).astype(np.int64)
    gap = np.full(n, 1_000, dtype=np.int64)
    cycle_gap = 50_000
    gap[::per_cycle] = cycle_gap  # idle time at each cycle start
    start = np.cumsum(gap + dur) - dur
    end = start + dur
    cycle = np.repeat(np.arange(n_cycles, dtype=np.int64), per_cycle)
    c_start = start[::per_cycle] - cycle_gap // 2
    c_end = np.append(c_start[1:], end[-1] + cycle_gap // 2)
    zeros = np.zeros(n, dtype=np.int64)
    kernels = KernelTable(
        name_id=name_id, device=zeros, stream=zeros + 7, start_ns=start, end_ns=end,
        cycle=cycle, correlation_id=np.arange(n, dtype=np.int64), grid_x=zeros + 132,
        grid_y=zeros + 1, grid_z=zeros + 1, block_x=zeros + 256, block_y=zeros + 1,
        block_z=zeros + 1,
    )
    cycles = CycleTable(index=np.arange(n_cycles, dtype=np.int64), start_ns=c_start,
                        end_ns=c_end, label=("step",) * n_cycles,
                        warmup=np.arange(n_cycles) < 5)
    ts = np.arange(int(c_start[0]) + SAMPLE_NS, int(c_end[-1]), SAMPLE_NS, dtype=np.int64)
    k = np.searchsorted(start, ts, side="right") - 1
    in_gemm = is_gemm[np.clip(k, 0, n - 1)]
    tensor = np.where(in_gemm, 55.0 if abnormal else 75.0, 1.0) + rng.normal(0, 2, ts.size)
    dram = np.where(in_gemm, 25.0, 60.0) + rng.normal(0, 3, ts.size)
    nvml_ts = np.arange(int(c_start[0]), int(c_end[-1]), NVML_NS, dtype=np.int64)
    metrics = (
        MetricSeries(TENSOR, "pct", "pm_sampling", 0, ts, np.clip(tensor, 0, 100), SAMPLE_NS),
        MetricSeries(DRAM, "pct", "pm_sampling", 0, ts, np.clip(dram, 0, 100), SAMPLE_NS),
        MetricSeries("sm_clock", "MHz", "nvml", 0, nvml_ts,
                     np.full(nvml_ts.size, 1980.0)),
    )
    empty = empty_transfer_table()
    return Run(index=0, pid=4242, rank=None, exit_code=0, cycles=cycles, kernels=kernels,
               memcpy=empty, memset=empty, metrics=metrics)


def make(n_cycles: int, per_cycle: int, n_names: int, abnormal: bool, seed: int) -> RunFile:
    rng = np.random.default_rng(seed)
    device = DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-bench-0", sm_count=132,
                        memory_bytes=80 * 2**30, sm_clock_mhz=1980, mem_clock_mhz=2619,
                        compute_capability="9.0")
    return RunFile(
        schema_version=CURRENT_VERSION, tool_version="0.1.0", status=Status("complete"),
        environment=Environment(host="bench", driver_version="580.159.04", cuda_version="13.0",
                                cupti_version="13.4", torch_version=None,
                                python_version="3.12.3", devices=(device,)),
        collection=Collection(metrics=(TENSOR, DRAM), sample_interval_ns=SAMPLE_NS,
                              sources=("cupti_activity", "pm_sampling", "nvml")),
        workload=Workload(name="scale-bench", params={"kernels_per_cycle": per_cycle}),
        strings=_names(n_names),
        runs=(_run(n_cycles, per_cycle, n_names, abnormal, rng),),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--kernels-per-cycle", type=int, default=1000)
    parser.add_argument("--names", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for label, abnormal in (("normal", False), ("abnormal", True)):
        t0 = time.perf_counter()
        run_file = make(args.cycles, args.kernels_per_cycle, args.names, abnormal,
                        args.seed + abnormal)
        path = save_run_file(run_file, args.out_dir / f"scale-{label}.json.gz")
        print(f"{path}: {args.cycles * args.kernels_per_cycle:,} launches, "
              f"{path.stat().st_size / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
