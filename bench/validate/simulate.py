"""Simulated per-cycle tables whose truth is known: the ground the statistics are measured on.

Why simulate: a false-alarm rate, a power or an interval's coverage can only be measured where the
truth is known, and it takes thousands of comparisons to measure them to a percent. Real GPU runs
are used too (``fixtures/aa/``), but only simulations can sweep correlation, run-to-run offsets,
heavy tails and injected effects of a chosen size.

What a simulated run looks like (every knob is a :class:`Scenario` field):

* ``n_kernels`` kernels with realistic, Zipf-like shares of the cycle (a few GEMMs and attention
  kernels dominate, a long tail of element-wise kernels), plus the GPU-idle pseudo-function;
* per-cycle noise of each kernel that is AR(1) over consecutive cycles with lag-1 correlation
  ``lag1`` (cycles are not independent samples), plus a cycle-wide component shared by all kernels
  (clock, contention);
* a GPU clock that moves in quantised steps (15 MHz bins, mostly pinned at its maximum, so its
  metric is near-constant) and stretches compute kernels when it drops;
* a run-to-run offset: every run multiplies each kernel's mean by its own random factor
  (standard deviation ``run_offset_pct``; half shared by all kernels of the run, half per kernel);
* heavy tails: with probability ``tail_prob`` a cycle gets a Pareto-distributed stall in GPU idle
  time and in one kernel;
* a warm-up transient: the first cycles of each run are slower, decaying exponentially;
* quantised clocks: every duration is rounded to ``tick_ms`` (the timer resolution).

Effects are applied to the abnormal side only: :class:`Slowdown` multiplies one kernel's time
(cycle time and every share are recomputed), :class:`CostShift` moves time from one kernel to
another so that every cycle keeps its duration. Everything is vectorised numpy and seeded: the same
``(scenario, seed)`` gives the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.signal import lfilter

from perfdiff.analysis.columns import COLUMNS, IDLE_FUNCTION

FloatArray = npt.NDArray[np.float64]

CLOCK_METRIC = "gpu_sm_clock_mhz"
DRAM_METRIC = "dram_throughput_pct"
MAX_CLOCK_MHZ = 1980.0
CLOCK_STEP_MHZ = 15.0

# Demangled names of the kind a transformer step launches; longer lists repeat with a suffix.
_KERNEL_NAMES = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x128x64_warpgroupsize1x1x1_execute",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<AddFunctor<float>>>",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float>",
    "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel>",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps<float, float>>>",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>",
    "rotary_embedding_kernel<c10::BFloat16, true>",
    "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>",
    "void at::native::catArrayBatchedCopy<c10::BFloat16, unsigned int, 3, 64, 64>",
    "triton_poi_fused_add_mul_rsqrt_0",
    "triton_red_fused_native_layer_norm_1",
)

TABLE_COLUMNS = tuple(COLUMNS)  # the cycle table's columns, in their declared order


@dataclass(frozen=True)
class Scenario:
    """One point of the simulation grid (defaults: a 20 ms inference step on one GPU)."""

    n_kernels: int = 12
    n_runs: int = 1  # runs per side
    n_cycles: int = 200  # measured cycles per run
    cycle_ms: float = 20.0  # mean cycle duration before warm-up and tails
    idle_pct: float = 6.0  # mean GPU-idle share of the cycle
    zipf_exponent: float = 1.3  # how strongly the largest kernels dominate
    lag1: float = 0.0  # AR(1) lag-1 correlation of consecutive cycles
    kernel_cv_pct: float = 2.0  # per-cycle noise of the largest kernel (smaller ones are noisier)
    common_cv_pct: float = 0.5  # per-cycle noise shared by every kernel of a cycle
    run_offset_pct: float = 0.0  # standard deviation of a run's multiplicative offset
    tail_prob: float = 0.02  # probability that a cycle stalls
    tail_scale_pct: float = 10.0  # scale of a stall, % of the cycle (Pareto, shape 2.5)
    warmup_cycles: float = 3.0  # e-folding length of the warm-up transient, cycles
    warmup_excess_pct: float = 10.0  # excess duration of the first measured cycle
    clock_drop_prob: float = 0.1  # share of cycles whose GPU clock is below maximum
    tick_ms: float = 0.001  # timer resolution: every duration is a multiple of it
    metrics: tuple[str, ...] = (CLOCK_METRIC, DRAM_METRIC)  # metric rows per kernel ("" if none)


@dataclass(frozen=True)
class Slowdown:
    """Multiply kernel ``kernel`` (index in share order, 0 = largest) by ``1 + pct / 100``."""

    kernel: int
    pct: float


@dataclass(frozen=True)
class CostShift:
    """Move ``pct`` % of kernel ``source``'s mean time to kernel ``target`` in every cycle."""

    source: int
    target: int
    pct: float


Effect = Slowdown | CostShift


def kernel_names(n_kernels: int) -> tuple[str, ...]:
    """Distinct, realistic kernel names in share order (largest first)."""
    base = len(_KERNEL_NAMES)
    return tuple(
        _KERNEL_NAMES[i % base] if i < base else f"{_KERNEL_NAMES[i % base]} #{i // base}"
        for i in range(n_kernels)
    )


def kernel_mean_ms(scenario: Scenario) -> FloatArray:
    """Nominal mean time per cycle of each kernel (Zipf-like shares of the busy time)."""
    ranks = np.arange(1, scenario.n_kernels + 1, dtype=np.float64)
    weights = ranks ** (-scenario.zipf_exponent)
    busy_ms = scenario.cycle_ms * (1.0 - scenario.idle_pct / 100.0)
    result: FloatArray = busy_ms * weights / weights.sum()
    return result


def _kernel_cv(scenario: Scenario, mean_ms: FloatArray) -> FloatArray:
    """Small kernels jitter more (launch latency dominates): CV grows as share^-1/4."""
    result: FloatArray = scenario.kernel_cv_pct / 100.0 * (mean_ms[0] / mean_ms) ** 0.25
    return result


def ar1(rng: np.random.Generator, shape: tuple[int, ...], lag1: float) -> FloatArray:
    """Stationary AR(1) series along axis 1 with unit variance and lag-1 correlation ``lag1``.

    Why stationary from the first cycle: otherwise the first cycles would be less noisy than the
    rest and a warm-up artefact would come from the noise model rather than from the scenario.
    """
    shocks = rng.standard_normal(shape)
    if lag1 == 0.0:
        return shocks
    innovation_sd = float(np.sqrt(1.0 - lag1 * lag1))
    shocks[:, 0] /= innovation_sd  # x_0 = e_0 ~ N(0, 1) after the filter multiplies it back
    result: FloatArray = lfilter([innovation_sd], [1.0, -lag1], shocks, axis=1)
    return result


def _lognormal_factor(x: FloatArray, sd: FloatArray | float) -> FloatArray:
    """exp(sd*x - sd^2/2): a positive factor with mean 1 when x ~ N(0, 1)."""
    result: FloatArray = np.exp(sd * x - 0.5 * np.square(sd))
    return result


def _clock_mhz(scenario: Scenario, rng: np.random.Generator, runs: int) -> FloatArray:
    """Per-cycle GPU clock: pinned at maximum, dropping by a few 15 MHz steps now and then."""
    shape = (runs, scenario.n_cycles)
    drops = rng.random(shape) < scenario.clock_drop_prob
    steps = 1.0 + rng.poisson(2.0, shape).astype(np.float64)
    result: FloatArray = MAX_CLOCK_MHZ - CLOCK_STEP_MHZ * steps * drops.astype(np.float64)
    return result


@dataclass(frozen=True)
class SimulatedSide:
    """Durations of one side before they are laid out as a long table."""

    kernel_ms: FloatArray  # (runs, cycles, kernels)
    idle_ms: FloatArray  # (runs, cycles)
    clock_mhz: FloatArray  # (runs, cycles)
    dram_pct: FloatArray  # (runs, cycles, kernels)


def simulate_side(scenario: Scenario, rng: np.random.Generator) -> SimulatedSide:
    """Draw the durations of ``scenario.n_runs`` runs (no effect applied)."""
    runs, cycles, kernels = scenario.n_runs, scenario.n_cycles, scenario.n_kernels
    mean_ms = kernel_mean_ms(scenario)
    cv = _kernel_cv(scenario, mean_ms)

    offset_sd = scenario.run_offset_pct / 100.0
    run_shared = rng.standard_normal((runs, 1))
    run_own = rng.standard_normal((runs, kernels))
    run_factor = _lognormal_factor(
        np.sqrt(0.5) * run_shared + np.sqrt(0.5) * run_own, offset_sd
    )  # (runs, kernels)

    own = _lognormal_factor(ar1(rng, (runs, cycles, kernels), scenario.lag1), cv)
    common = _lognormal_factor(
        ar1(rng, (runs, cycles), scenario.lag1), scenario.common_cv_pct / 100.0
    )
    clock = _clock_mhz(scenario, rng, runs)
    # Compute-bound kernels (the even-ranked ones: GEMMs, attention) stretch when the clock drops.
    compute_bound = (np.arange(kernels) % 2 == 0).astype(np.float64)
    clock_stretch = 1.0 + compute_bound[None, None, :] * (MAX_CLOCK_MHZ / clock[:, :, None] - 1.0)

    position = np.arange(cycles, dtype=np.float64)
    warmup = 1.0 + scenario.warmup_excess_pct / 100.0 * np.exp(
        -position / max(scenario.warmup_cycles, 1e-9)
    )
    if scenario.warmup_cycles <= 0.0:
        warmup = np.ones(cycles)

    kernel_ms = (
        mean_ms[None, None, :]
        * run_factor[:, None, :]
        * own
        * common[:, :, None]
        * clock_stretch
        * warmup[None, :, None]
    )
    idle_mean = scenario.cycle_ms * scenario.idle_pct / 100.0
    idle_ms = (
        idle_mean
        * _lognormal_factor(ar1(rng, (runs, cycles), scenario.lag1), 0.1)
        * warmup[None, :]
    )

    stalls = rng.random((runs, cycles)) < scenario.tail_prob
    stall_ms = scenario.cycle_ms * scenario.tail_scale_pct / 100.0 * rng.pareto(2.5, (runs, cycles))
    stall_ms = np.where(stalls, stall_ms, 0.0)
    stalled_kernel = rng.integers(0, kernels, (runs, cycles))
    idle_ms = idle_ms + 0.5 * stall_ms
    run_index, cycle_index = np.nonzero(stalls)
    kernel_ms[run_index, cycle_index, stalled_kernel[run_index, cycle_index]] += (
        0.5 * stall_ms[run_index, cycle_index]
    )

    base_dram = 20.0 + 60.0 * (1.0 - compute_bound)  # memory-bound kernels use more DRAM
    dram_pct = np.clip(
        base_dram[None, None, :] * _lognormal_factor(rng.standard_normal(kernel_ms.shape), 0.05),
        0.0,
        100.0,
    )
    return SimulatedSide(
        kernel_ms=_quantise(kernel_ms, scenario.tick_ms),
        idle_ms=_quantise(idle_ms, scenario.tick_ms),
        clock_mhz=clock,
        dram_pct=dram_pct,
    )


def apply_effect(side: SimulatedSide, scenario: Scenario, effect: Effect | None) -> SimulatedSide:
    """The same side with ``effect`` applied; cycle time follows from the kernels' new times."""
    if effect is None:
        return side
    kernel_ms = side.kernel_ms.copy()
    if isinstance(effect, Slowdown):
        kernel_ms[:, :, effect.kernel] *= 1.0 + effect.pct / 100.0
    else:
        # A whole number of timer ticks, never more than the source has in a cycle: every cycle
        # must keep its exact duration after quantisation.
        moved_ms = _quantise(
            np.array([effect.pct / 100.0 * kernel_mean_ms(scenario)[effect.source]]),
            scenario.tick_ms,
        )[0]
        moved = np.minimum(moved_ms, kernel_ms[:, :, effect.source] - scenario.tick_ms)
        kernel_ms[:, :, effect.source] -= moved
        kernel_ms[:, :, effect.target] += moved
    return SimulatedSide(
        kernel_ms=kernel_ms, idle_ms=side.idle_ms, clock_mhz=side.clock_mhz, dram_pct=side.dram_pct
    )


def _quantise(values: FloatArray, tick_ms: float) -> FloatArray:
    if tick_ms <= 0.0:
        return values
    result: FloatArray = np.maximum(np.round(values / tick_ms), 1.0) * tick_ms
    return result


def to_table(
    side: SimulatedSide, scenario: Scenario, *, first_run: int = 0, pid: int = 4242
) -> pd.DataFrame:
    """Lay one side out as the long cycle table (one row per run, cycle, function, metric)."""
    # Quantised again: a slowdown multiplies durations that were whole ticks.
    kernel_ms = _quantise(side.kernel_ms, scenario.tick_ms)
    idle_ms = _quantise(side.idle_ms, scenario.tick_ms)
    runs, cycles, kernels = kernel_ms.shape
    cycle_ms = kernel_ms.sum(axis=2) + idle_ms  # (runs, cycles)

    names = np.array([*kernel_names(kernels), IDLE_FUNCTION], dtype=object)
    func_types = np.array(["kernel"] * kernels + ["idle"], dtype=object)
    time_ms = np.concatenate([kernel_ms, idle_ms[:, :, None]], axis=2)  # (runs, cycles, functions)
    functions = kernels + 1

    metric_names = scenario.metrics or ("",)
    # Row blocks: every kernel once per metric, the idle pseudo-function once with metric "".
    func_index = np.concatenate(
        [np.repeat(np.arange(kernels), len(metric_names)), np.array([kernels])]
    )
    metric_of_row = np.array([*(list(metric_names) * kernels), ""], dtype=object)
    metric_mean_of_row = np.full((runs, cycles, func_index.size), np.nan)
    for m, metric in enumerate(metric_names):
        columns = np.arange(kernels) * len(metric_names) + m
        if metric == CLOCK_METRIC:
            metric_mean_of_row[:, :, columns] = side.clock_mhz[:, :, None]
        elif metric == DRAM_METRIC:
            metric_mean_of_row[:, :, columns] = side.dram_pct

    rows_per_cycle = func_index.size
    run_ids = np.arange(first_run, first_run + runs)
    table = pd.DataFrame(
        {
            "run": np.repeat(run_ids, cycles * rows_per_cycle),
            "pid": pid,
            "device": "GPU 0",
            "cycle": np.tile(np.repeat(np.arange(cycles), rows_per_cycle), runs),
            "cycle_ms": np.repeat(cycle_ms.ravel(), rows_per_cycle),
            "anchor": "simulated step",
            "function": np.tile(names[func_index], runs * cycles),
            "func_type": np.tile(func_types[func_index], runs * cycles),
            "metric": np.tile(metric_of_row, runs * cycles),
            "time_ms": time_ms[:, :, func_index].ravel(),
            "cycle_share_pct": (100.0 * time_ms / cycle_ms[:, :, None])[:, :, func_index].ravel(),
            "metric_mean": metric_mean_of_row.ravel(),
        },
        columns=list(TABLE_COLUMNS),
    )
    assert functions == kernels + 1
    return table


def simulate_pair(
    scenario: Scenario, effect: Effect | None, seed: int | np.random.SeedSequence
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A normal and an abnormal table drawn independently from ``scenario``; ``effect`` on the
    abnormal side. With no effect this is an A/A pair."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    normal_seq, abnormal_seq = seq.spawn(2)
    normal = simulate_side(scenario, np.random.default_rng(normal_seq))
    abnormal = apply_effect(
        simulate_side(scenario, np.random.default_rng(abnormal_seq)), scenario, effect
    )
    return (
        to_table(normal, scenario, first_run=0),
        to_table(abnormal, scenario, first_run=scenario.n_runs),
    )


def expected_kernel_ms(scenario: Scenario, *, runs: int = 4000, seed: int = 12345) -> FloatArray:
    """Population mean time per cycle of every kernel, by a large simulation.

    Why simulate rather than derive: warm-up, clock drops, stalls and quantisation all move the
    mean a little; the true effect of a :class:`Slowdown` is ``pct/100`` times this mean, and an
    interval's coverage is judged against that truth.
    """
    big = Scenario(**{**scenario.__dict__, "n_runs": runs})
    side = simulate_side(big, np.random.default_rng(seed))
    result: FloatArray = side.kernel_ms.mean(axis=(0, 1))
    return result
