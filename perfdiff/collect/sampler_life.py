"""Opening, starting and stopping samplers and the trace, every failure one warning.

Why one place: both launchers (built-in workloads in ``session.py``, user programs in
``inject/child.py``) open and start PM sampling and NVML (at different moments: a user
program's GPU is known only once it has initialised CUDA), stop them after a GPU synchronize
and then stop the trace; their two copies worded the same failure differently (one kept the
exception's type and the sampler's state, the other neither) and one let a multi-line
message into the run file. A sampler's trouble never stops a recording: kernels are still
traced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfdiff.collect.backends import MetricSampler, TraceBackend
from perfdiff.collect.records import RawTrace
from perfdiff.collect.settings import RecordSettings
from perfdiff.schema.model import MetricSeries

ClockNs = Callable[[], int]


def one_line(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    text = " ".join(str(exc).split())
    return text[:300] if text else "(no message)"


def open_pm_sampler(settings: RecordSettings, device_index: int, clock_ns: ClockNs,
                    warnings: list[str]) -> MetricSampler | None:
    """PM sampling on ``device_index`` as ``settings`` ask, or None (and why, as a warning).

    Imported here, not at the top: the user-program child imports this module at interpreter
    start, long before it may touch CUPTI."""
    if not settings.pm_wanted:
        return None
    from perfdiff.collect.cupti.pm_sampling import PmSampler, PmSamplingUnavailable

    try:
        pm = PmSampler(settings.metrics, settings.sample_interval_ns, device_index, clock_ns)
    except PmSamplingUnavailable as exc:
        warnings.append(str(exc))
        return None
    warnings.extend(pm.warnings)  # metrics this GPU rejected, said once, at open
    pm.warnings.clear()
    return pm


def open_nvml_sampler(settings: RecordSettings, device_index: int, clock_ns: ClockNs,
                      nvml: Any, uuid: str | None, warnings: list[str]) -> MetricSampler | None:
    """NVML polling of ``device_index`` (the GPU whose ``uuid`` is given), or None and why."""
    if not settings.nvml:
        return None
    from perfdiff.collect.nvml.nvml_process import NvmlDefaultSampler
    from perfdiff.collect.nvml.sampler import NvmlUnavailable

    try:
        return NvmlDefaultSampler(device_index, clock_ns, settings.nvml_interval_ms / 1000.0,
                                  nvml=nvml, uuid=uuid or None)
    except NvmlUnavailable as exc:
        warnings.append(str(exc))
        return None


def start_sampler(sampler: MetricSampler, warnings: list[str]) -> bool:
    """Start ``sampler``; False (and a warning) when it refuses."""
    try:
        sampler.start()
    except Exception as exc:
        warnings.append(f"{sampler.name} could not start ({one_line(exc)}); not sampled")
        return False
    return True


def synchronize_gpu(synchronize: Callable[[], object] | None, warnings: list[str]) -> None:
    """Wait for the GPU before stopping, so the last cycle's records and samples exist."""
    if synchronize is None:
        return
    try:
        synchronize()
    except Exception as exc:
        warnings.append(f"GPU synchronize failed at stop ({one_line(exc)})")


def stop_samplers(samplers: list[MetricSampler], warnings: list[str]) -> list[MetricSeries]:
    """Stop every sampler (the GPU already synchronized) and return their series."""
    series: list[MetricSeries] = []
    for sampler in samplers:
        try:
            series.extend(sampler.stop())
        except Exception as exc:
            warnings.append(f"{sampler.name} failed at stop ({type(exc).__name__}: "
                            f"{one_line(exc)}){_state(sampler)}; its values are dropped")
        warnings.extend(getattr(sampler, "warnings", []))
    return series


def stop_trace(trace: TraceBackend, warnings: list[str]) -> RawTrace:
    """Stop tracing and take its records; empty (and a warning) when that fails."""
    raw = RawTrace()
    try:
        raw = trace.stop()
    except Exception as exc:
        warnings.append(f"trace failed at stop ({one_line(exc)}); kernels lost")
    warnings.extend(getattr(trace, "warnings", []))
    return raw


def _state(sampler: Any) -> str:
    """`` [its state]`` where the sampler can describe it (PM sampling), to explain a failure."""
    describe = getattr(sampler, "describe", None)
    if not callable(describe):
        return ""
    try:
        return f" [{describe()}]"
    except Exception:  # a description must never hide the failure
        return ""


__all__ = ["ClockNs", "one_line", "open_nvml_sampler", "open_pm_sampler", "start_sampler",
           "stop_samplers", "stop_trace", "synchronize_gpu"]
