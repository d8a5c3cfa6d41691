"""Collection settings: one default per setting, and the one check of their values.

Why here: the PM sampling interval had three defaults (20 us in the collector, 5 us in the
child's config, 20 us on the command line) and its value was checked in one CLI branch only,
so ``perfdiff collect --sample-interval-ns -5 -- CMD`` ran the program and recorded -5. Both
settings objects (:class:`perfdiff.collect.session.CollectSettings` for built-in workloads,
:class:`perfdiff.collect.inject.config.InjectConfig` for user programs) take their defaults
from here and validate themselves on construction, so a bad value is refused before anything
runs, whichever path built it. Standard library only: the CLI reads the defaults for --help.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from perfdiff.errors import UsageError

TENSOR_METRIC = "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
DRAM_METRIC = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DEFAULT_METRICS: tuple[str, ...] = (TENSOR_METRIC, DRAM_METRIC)
# 5 us overflowed the PM sampler's hardware buffer on the H200 (perfdiff.collect.pm_sampling)
DEFAULT_SAMPLE_INTERVAL_NS = 20_000
DEFAULT_NVML_INTERVAL_MS = 10.0
DEFAULT_CYCLES = 30  # measured cycles per case of a built-in workload
# warm-up cycles first (flagged, not analysed): the CLI, CyclePlan and InjectConfig all had
# their own (5 on the command line, 0 in code), so a plan built in code measured differently
DEFAULT_WARMUP = 5
DEFAULT_UNTRACED_EVERY = 8  # one measured cycle in N left untraced (collect/overhead.py)
BACKENDS = ("cupti", "fake")


class SettingsError(UsageError, ValueError):
    """A collection setting has a value no collection can use (exit 2, one line).

    Also a ValueError: the child collector treats a config it cannot use as malformed."""


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_settings(*, sample_interval_ns: int, nvml_interval_ms: float,
                   metrics: Iterable[str], device_index: int = 0,
                   warmup: int = DEFAULT_WARMUP, cycle_ms: float | None = None,
                   backend: str = "cupti", untraced_every: int = DEFAULT_UNTRACED_EVERY) -> None:
    """Raise :class:`SettingsError` naming the first setting whose value cannot be used."""
    if isinstance(sample_interval_ns, bool) or not isinstance(sample_interval_ns, int) or (
            sample_interval_ns <= 0):
        raise SettingsError(f"{_option('sample_interval_ns')} must be a positive whole number "
                            f"of ns (default {DEFAULT_SAMPLE_INTERVAL_NS}), got "
                            f"{sample_interval_ns!r}")
    if not math.isfinite(nvml_interval_ms) or nvml_interval_ms <= 0:
        raise SettingsError(f"{_option('nvml_interval_ms')} must be a positive number of ms "
                            f"(default {DEFAULT_NVML_INTERVAL_MS:g}), got {nvml_interval_ms!r}")
    if cycle_ms is not None and (not math.isfinite(cycle_ms) or cycle_ms <= 0):
        raise SettingsError(f"--cycle-ms must be positive, got {cycle_ms!r}")
    if warmup < 0:
        raise SettingsError(f"--warmup must be 0 or more, got {warmup}")
    if device_index < 0:
        raise SettingsError(f"--device must be 0 or more, got {device_index}")
    empty = [m for m in metrics if not str(m).strip()]
    if empty:
        raise SettingsError("--metric needs a metric name, got an empty one")
    if untraced_every < 0 or untraced_every == 1:
        raise SettingsError(f"--untraced-every must be 0 (off) or at least 2, got "
                            f"{untraced_every}")
    if backend not in BACKENDS:
        raise SettingsError(f"collector backend {backend!r} is unknown (known: "
                            f"{', '.join(BACKENDS)})")


__all__ = ["DEFAULT_CYCLES", "DEFAULT_METRICS", "DEFAULT_NVML_INTERVAL_MS",
           "DEFAULT_SAMPLE_INTERVAL_NS", "DEFAULT_UNTRACED_EVERY", "DEFAULT_WARMUP",
           "DRAM_METRIC", "TENSOR_METRIC", "SettingsError", "check_settings"]
