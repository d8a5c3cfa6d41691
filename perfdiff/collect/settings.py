"""Collection settings: one settings class per launcher over one shared base, one default per
setting, one table of bounds, and the one check of their values.

Why here: the PM sampling interval had three defaults (20 us in the collector, 5 us in the
child's config, 20 us on the command line) and its value was checked in one CLI branch only,
so ``perfdiff collect --sample-interval-ns -5 -- CMD`` ran the program and recorded -5. Then
the two settings classes (built-in workloads, user programs) each repeated the sampler fields
and the bounds lived twice, here and in the CLI's option table. Now :class:`RecordSettings`
holds what every recording samples; :class:`CollectSettings` (built-in workloads, in-process)
and :class:`perfdiff.collect.inject.config.InjectConfig` (user programs) add only what their
launcher needs; every object validates itself on construction against :data:`COLLECT_LIMITS`,
the table the command line checks too, so a bad value is refused before anything runs,
whichever path built it. Standard library only: the CLI reads the defaults for --help.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfdiff.errors import UsageError
from perfdiff.ranges import Limit

TENSOR_METRIC = "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
DRAM_METRIC = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DEFAULT_METRICS: tuple[str, ...] = (TENSOR_METRIC, DRAM_METRIC)
# PM sampling interval, one default per launcher. Built-in workloads: 20 us. Their cycles are a
# few seconds of sampling in all, decoded after the run, and 40 us diluted their 10-40 us
# kernels' values (gpt-infer elementwise tensor median 6.3 % > 5 %, tests/gpu/test_collect_gpu.py).
# 5 us overflowed the PM hardware buffer on the H200 (perfdiff.collect.cupti.pm_sampling).
DEFAULT_SAMPLE_INTERVAL_NS = 20_000
# User programs: 40 us. Why: a program runs as long as it likes, and the hardware buffer
# (~3 s at 20 us) can only be emptied by CUPTI's DecodeData while the program runs, which
# costs the host 16.5-25.6 us per sample with the two default metrics (15.5 us tensor alone;
# H200, stopped collectors under a GPT-2 generate load, bench/record_truth/pm_drain_probe.py,
# issue 28, 2026-11-28). At 20 us the drain falls behind and loses stretches (GPT-2 generate
# 51.6 / 71.4 % of traced cycles, HF Trainer 93.7-96.9 %, DDP fp32 91.7-98.2 %); at 40 us it
# kept up (100 % on GPT-2 generate and a 6 s dense probe). The metric evaluation (26-38 us a
# sample) already runs after the program, off the drain, so moving it would not help.
DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS = 40_000
DEFAULT_NVML_INTERVAL_MS = 10.0
DEFAULT_CYCLES = 30  # measured cycles per case of a built-in workload
# warm-up cycles first (flagged, not analysed): the CLI, CyclePlan and InjectConfig all had
# their own (5 on the command line, 0 in code), so a plan built in code measured differently
DEFAULT_WARMUP = 5
# None: the untraced cycles' share is chosen to meet DEFAULT_COST_TARGET (untraced_schedule.py);
# N >= 2: the last two of every N measured cycles, whatever they cost; 0: none
DEFAULT_UNTRACED_EVERY: int | None = None
DEFAULT_COST_TARGET = 1.10  # whole-run cost, recorded / bare (issue 28)

# `perfdiff collect`'s numeric options and their usable ranges, checked on the raw command
# line (perfdiff.cli.option_limits) and by every settings object below. Generous on purpose:
# they tell a typo or a hostile value from any setting a user could mean.
COLLECT_LIMITS: dict[str, Limit] = {
    "--cycles": Limit(0, 10**8, whole=True),
    "--warmup": Limit(0, 10**8, whole=True),
    "--sample-interval-ns": Limit(1, 10**12, "ns", whole=True),
    "--nvml-interval-ms": Limit(0.0, 1e6, "ms", low_open=True),
    "--contend": Limit(0.0, 1.0),
    "--contend-period-ms": Limit(0.0, 1e6, "ms", low_open=True),
    "--device": Limit(0, 4096, whole=True),
    "--cycle-ms": Limit(0.0, 1e7, "ms", low_open=True),
    "--runs": Limit(1, 10**4, whole=True),
    "--untraced-every": Limit(0, 10**9, whole=True),
    "--cost-target": Limit(1.0, 100.0),  # 1: trace only what the floors keep
}


class SettingsError(UsageError, ValueError):
    """A collection setting has a value no collection can use (exit 2, one line).

    Also a ValueError: the child collector treats a config it cannot use as malformed."""


def _option(name: str) -> str:
    return "--" + {"device_index": "device"}.get(name, name).replace("_", "-")


def _check_range(name: str, value: float, default: float | None = None) -> None:
    option = _option(name)
    limit = COLLECT_LIMITS[option]
    if not limit.allows(value):
        shown = "" if default is None else f" (default {default:g})"
        raise SettingsError(f"{option} {value!r} is not a usable value; give "
                            f"{limit.describe()}{shown}")


def check_recording(*, sample_interval_ns: int, nvml_interval_ms: float,
                    metrics: Iterable[str], untraced_every: int | None,
                    cost_target: float = DEFAULT_COST_TARGET) -> None:
    """Raise :class:`SettingsError` naming the first sampler setting that cannot be used."""
    _check_range("sample_interval_ns", sample_interval_ns, DEFAULT_SAMPLE_INTERVAL_NS)
    _check_range("nvml_interval_ms", nvml_interval_ms, DEFAULT_NVML_INTERVAL_MS)
    if any(not str(m).strip() for m in metrics):
        raise SettingsError("--metric needs a metric name, got an empty one")
    _check_range("cost_target", cost_target, DEFAULT_COST_TARGET)
    if untraced_every is None:
        return
    _check_range("untraced_every", untraced_every)
    if untraced_every == 1:
        raise SettingsError("--untraced-every must be 0 (off) or at least 2, got 1")


def check_program(*, warmup: int, cycle_ms: float | None, backend: str) -> None:
    """Raise :class:`SettingsError` for a user program's own settings that cannot be used."""
    _check_range("warmup", warmup, DEFAULT_WARMUP)
    if cycle_ms is not None:
        _check_range("cycle_ms", cycle_ms)
    module, _, attribute = backend.partition(":")
    if not module or not attribute.isidentifier():
        raise SettingsError(f"collector backend {backend!r} is not MODULE:FUNCTION (the "
                            "default is perfdiff.collect.inject.child:open_cupti_trace)")


@dataclass(frozen=True, kw_only=True)
class RecordSettings:
    """What every recording samples, built-in workload or user program; defaults are the
    documented ones (docs/howto/collect.md). Keyword-only, so each launcher's own settings
    extend it without repeating a field."""

    metrics: tuple[str, ...] = DEFAULT_METRICS
    sample_interval_ns: int = DEFAULT_SAMPLE_INTERVAL_NS
    pm_sampling: bool = True
    nvml: bool = True
    nvml_interval_ms: float = DEFAULT_NVML_INTERVAL_MS
    trace_memory: bool = True
    # which measured cycles run untraced, to time the program without the collector
    # (overhead.py): None, as many as the cost target needs; N, the last two of every N
    untraced_every: int | None = DEFAULT_UNTRACED_EVERY
    cost_target: float = DEFAULT_COST_TARGET
    # untraced runs with CUPTI detached (cupti/detached.py): opt-in and hidden until measured
    # (PM sampling lives through the detach: H100 2026-12-07, detach_probe.py --scenario pm)
    detach_untraced: bool = False

    def __post_init__(self) -> None:
        check_recording(sample_interval_ns=self.sample_interval_ns,
                        nvml_interval_ms=self.nvml_interval_ms, metrics=self.metrics,
                        untraced_every=self.untraced_every, cost_target=self.cost_target)

    @property
    def pm_wanted(self) -> bool:
        """Whether PM sampling is asked for (on, with at least one metric)."""
        return bool(self.pm_sampling and self.metrics)


@dataclass(frozen=True, kw_only=True)
class ProgramRecordSettings(RecordSettings):
    """What a user program's recording samples: :class:`RecordSettings` with the program
    launcher's own PM interval (DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS says why it differs).
    Declared here so that every sampler setting and default stays in this one module."""

    sample_interval_ns: int = DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS


@dataclass(frozen=True, kw_only=True)
class CollectSettings(RecordSettings):
    """A built-in workload's recording, in this process."""

    # launch API records for cycle assignment; False: boundary marks (boundary_marks.py), the
    # default since they cost ~2 % less of cycle time
    trace_api: bool = False
    device_index: int = 0
    # CUPTI stream ids whose kernels are an in-process noisy neighbour's (--contend-mode
    # stream): left out of the run file, with a warning saying how many
    exclude_streams: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_range("device_index", self.device_index)


__all__ = ["COLLECT_LIMITS", "DEFAULT_COST_TARGET", "DEFAULT_CYCLES",
           "DEFAULT_METRICS",
           "DEFAULT_NVML_INTERVAL_MS", "DEFAULT_PROGRAM_SAMPLE_INTERVAL_NS",
           "DEFAULT_SAMPLE_INTERVAL_NS", "DEFAULT_UNTRACED_EVERY",
           "DEFAULT_WARMUP", "DRAM_METRIC", "TENSOR_METRIC", "CollectSettings",
           "ProgramRecordSettings", "RecordSettings",
           "SettingsError", "check_program", "check_recording"]
