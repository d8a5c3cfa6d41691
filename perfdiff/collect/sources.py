"""Open the real sources (CUPTI activity, PM sampling, NVML) for a collection.

Why here and not in the CLI: deciding what is available, and turning each unavailable
optional source into a warning rather than a failure, is collection policy. Only tracing is
required; without cupti-python or a GPU there is nothing to record and collection stops
with one line naming everything that is missing and how to get it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfdiff.collect.backends import MetricSampler, Sources
from perfdiff.collect.cupti_activity import INSTALL_HINT, CuptiActivityBackend
from perfdiff.collect.environment import gather_environment
from perfdiff.collect.nvml import NvmlUnavailable, load_nvml
from perfdiff.collect.sampler_life import open_nvml_sampler, open_pm_sampler
from perfdiff.collect.settings import CollectSettings
from perfdiff.errors import CollectorUnavailableError
from perfdiff.schema.model import Environment


@dataclass
class OpenedSources:
    """The sources plus what the caller needs for the run file's environment."""

    sources: Sources
    environment: Environment
    device: str


def check_prerequisites() -> Any:
    """torch with CUDA and cupti-python, or one line naming all that is missing."""
    missing: list[str] = []
    torch: Any = None
    try:
        import torch as torch_module

        torch = torch_module
        if not torch.cuda.is_available():
            missing.append(
                "no CUDA GPU is visible (torch.cuda.is_available() is False): collect on a "
                "machine with an NVIDIA GPU, driver and a CUDA build of torch"
            )
    except ImportError:
        missing.append("PyTorch is not installed (built-in workloads need a CUDA build of torch)")
    try:
        import cupti.cupti  # noqa: F401
    except ImportError as exc:
        missing.append(f"cupti-python is not importable ({exc}); {INSTALL_HINT}")
    if missing:
        raise CollectorUnavailableError("cannot collect: " + "; ".join(missing))
    return torch


def open_sources(settings: CollectSettings) -> OpenedSources:
    """Open tracing (required) and PM sampling / NVML (optional, degrading to warnings)."""
    torch = check_prerequisites()
    device_index = settings.device_index
    if device_index >= torch.cuda.device_count():
        raise CollectorUnavailableError(
            f"--device {device_index} does not exist ({torch.cuda.device_count()} GPU(s) visible)"
        )
    torch.cuda.set_device(device_index)
    torch.cuda.init()
    warnings: list[str] = []
    marker = None if settings.trace_api else _boundary_marker(torch, device_index, warnings)
    trace = CuptiActivityBackend(trace_memory=settings.trace_memory,
                                 trace_api=settings.trace_api or marker is None)
    samplers: list[MetricSampler] = []
    pm = open_pm_sampler(settings, device_index, trace.clock_ns, warnings)
    if pm is not None:
        samplers.append(pm)
    nvml: Any = None
    try:
        nvml = load_nvml()
    except NvmlUnavailable as exc:
        if settings.nvml:
            warnings.append(str(exc))
    environment = gather_environment(torch, device_index, nvml)
    if nvml is not None:
        uuid = environment.devices[0].uuid if environment.devices else None
        poller = open_nvml_sampler(settings, device_index, trace.clock_ns, nvml, uuid, warnings)
        if poller is not None:
            samplers.append(poller)
    sources = Sources(trace=trace, samplers=samplers, warnings=warnings,
                      synchronize=torch.cuda.synchronize, boundary_marker=marker)
    return OpenedSources(sources=sources, environment=environment, device=f"cuda:{device_index}")


def _boundary_marker(torch: Any, device_index: int, warnings: list[str]) -> Any:
    """The cycle-boundary marker, or None (and a warning): then API records are traced."""
    from perfdiff.collect.boundary_marks import TorchBoundaryMarker

    try:
        return TorchBoundaryMarker(torch, device_index)
    except Exception as exc:
        warnings.append(f"cycle boundary marks unavailable ({type(exc).__name__}: {exc}); "
                        "recording launch API calls instead (costs more overhead)")
        return None


__all__ = ["OpenedSources", "check_prerequisites", "open_sources"]
