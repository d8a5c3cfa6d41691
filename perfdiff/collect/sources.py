"""Open the real sources (CUPTI activity with its spool, the boundary marker, PM sampling,
NVML), for both launchers.

Why here and not in the CLI: deciding what is available, and turning each unavailable
optional source into a warning rather than a failure, is collection policy. Only tracing is
required; without cupti-python or a GPU there is nothing to record and collection stops
with one line naming everything that is missing and how to get it. Why one module for both
launchers: a built-in workload opens everything at once (:func:`open_sources`); a user
program's recorder core (``recorder.py``) opens the marker and the samplers once the program
has initialised CUDA, and its trace (``inject/child.py``) when it does; they open each source
with the same function here, so the two cannot drift apart again (issue 28).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from perfdiff.collect.backends import BoundaryMarker, MetricSampler, Sources, TraceBackend
from perfdiff.collect.environment import gather_environment
from perfdiff.collect.sampler_life import ClockNs, open_nvml_sampler, open_pm_sampler
from perfdiff.collect.settings import CollectSettings, RecordSettings
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
        from perfdiff.collect.cupti.cupti_activity import INSTALL_HINT

        missing.append(f"cupti-python is not importable ({exc}); {INSTALL_HINT}")
    if missing:
        raise CollectorUnavailableError("cannot collect: " + "; ".join(missing))
    return torch


def open_sources(settings: CollectSettings) -> OpenedSources:
    """A built-in workload's sources, all opened before it runs (its GPU is known): tracing
    (required), the boundary marker, PM sampling and NVML (optional, degrading to warnings).
    CUPTI's buffers are spooled to a temporary folder and decoded at stop, as a user
    program's are (``spool.py``); ``Sources.spool_dir`` names the folder to remove after."""
    torch = check_prerequisites()
    device_index = settings.device_index
    if device_index >= torch.cuda.device_count():
        raise CollectorUnavailableError(
            f"--device {device_index} does not exist ({torch.cuda.device_count()} GPU(s) visible)"
        )
    torch.cuda.set_device(device_index)
    torch.cuda.init()
    warnings: list[str] = []
    marker = None if settings.trace_api else open_marker(
        torch, device_index, warnings,
        instead="recording launch API calls instead (costs more overhead)")
    spool_dir = tempfile.mkdtemp(prefix="perfdiff-spool-")
    try:
        trace = open_trace(settings, launch_records=settings.trace_api or marker is None,
                           spool_dir=spool_dir)
        samplers: list[MetricSampler] = []
        pm = open_pm_sampler(settings, device_index, trace.clock_ns, warnings)
        if pm is not None:
            samplers.append(pm)
        nvml = nvml_library(settings.nvml, warnings)
        environment = gather_environment(torch, device_index, nvml)
        poller = open_nvml(settings, nvml, torch, device_index, trace.clock_ns,
                           warnings) if nvml is not None else None
        if poller is not None:
            samplers.append(poller)
    except BaseException:  # nothing was recorded yet: leave no empty folder behind
        remove_spool_dir(spool_dir)
        raise
    sources = Sources(trace=trace, samplers=samplers, warnings=warnings,
                      synchronize=torch.cuda.synchronize, boundary_marker=marker,
                      spool_dir=spool_dir)
    return OpenedSources(sources=sources, environment=environment, device=f"cuda:{device_index}")


def open_trace(settings: RecordSettings, *, launch_records: bool,
               spool_dir: str | None) -> TraceBackend:
    """CUPTI activity tracing as ``settings`` ask, its completed buffers spooled into
    ``spool_dir`` (``spool.py``: none decoded while the program runs). ``launch_records``:
    record launch API calls, where cycles have no boundary marks to go by
    (``program_marks.py``)."""
    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend, import_cupti

    def backend(api: bool) -> CuptiActivityBackend:
        return CuptiActivityBackend(trace_memory=settings.trace_memory, trace_api=api,
                                    spool_dir=spool_dir)

    if not settings.detach_untraced:
        return backend(launch_records)
    from perfdiff.collect.cupti.detached import open_detaching

    return open_detaching(backend, launch_records=launch_records, cupti=import_cupti())


def open_marker(torch: Any, device_index: int, warnings: list[str], *,
                instead: str) -> BoundaryMarker | None:
    """The cycle-boundary marker on ``device_index``, or None and a warning ending with what
    the recording does ``instead``."""
    from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker

    try:
        marker: BoundaryMarker = TorchBoundaryMarker(torch, device_index)
    except Exception as exc:
        warnings.append(f"cycle boundary marks unavailable ({type(exc).__name__}: {exc}); "
                        f"{instead}")
        return None
    return marker


def nvml_library(wanted: bool, warnings: list[str]) -> Any:
    """The NVML bindings, or None (a warning where NVML polling is ``wanted``; the run file's
    environment reads clocks from it either way)."""
    from perfdiff.collect.nvml.sampler import NvmlUnavailable, load_nvml

    try:
        return load_nvml()
    except NvmlUnavailable as exc:
        if wanted:
            warnings.append(str(exc))
        return None


def open_nvml(settings: RecordSettings, nvml: Any, torch: Any, device_index: int,
              clock_ns: ClockNs, warnings: list[str]) -> MetricSampler | None:
    """NVML polling of ``device_index`` as ``settings`` ask, or None (and why)."""
    from perfdiff.collect.environment import torch_device_info

    if not settings.nvml:
        return None
    uuid = torch_device_info(torch, device_index, nvml).uuid
    return open_nvml_sampler(settings, device_index, clock_ns, nvml, uuid, warnings)


def remove_spool_dir(spool_dir: str | None) -> None:
    """Remove a built-in run's temporary spool folder; safe to call twice (the session removes
    it after stop, the CLI again if the run never reached the session, e.g. a ``--contend``
    neighbour that failed to start)."""
    if spool_dir is not None:
        shutil.rmtree(spool_dir, ignore_errors=True)


__all__ = ["OpenedSources", "check_prerequisites", "nvml_library", "open_marker", "open_nvml",
           "open_sources", "open_trace", "remove_spool_dir"]
