"""The collector's three sources as small interfaces, so the session can run with fakes.

Why protocols: the session (start, run the workload, stop, build the run file, survive an
interrupt) is the logic worth testing on a CPU; CUPTI, PM sampling and NVML are thin
adapters behind these interfaces (``cupti_activity``, ``pm_sampling``, ``nvml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from perfdiff.collect.records import RawTrace
from perfdiff.schema.model import MetricSeries


class TraceBackend(Protocol):
    """Kernel/memcpy/memset/API activity tracing; its clock stamps the cycle boundaries."""

    name: str

    def clock_ns(self) -> int:
        """Now, on the clock of the trace's timestamps."""
        ...

    def start(self) -> None:
        """Begin recording activity."""
        ...

    def records_so_far(self) -> int:
        """Records delivered so far (for the progress display; may lag behind)."""
        ...

    def drain(self) -> None:
        """Take in every record so far, before returning. Only while the GPU is idle (a
        record of work still running would be incomplete)."""
        ...

    def stop(self) -> RawTrace:
        """Flush, stop recording and hand over everything gathered."""
        ...


class MetricSampler(Protocol):
    """A sampled metric source (PM sampling or NVML)."""

    name: str

    def start(self) -> None:
        """Begin sampling."""
        ...

    def stop(self) -> list[MetricSeries]:
        """Stop and return the series gathered (timestamps on the trace clock)."""
        ...


class BoundaryMarker(Protocol):
    """Marks cycle boundaries on the correlation-id axis (see ``boundary_marks.py``)."""

    stream_ids: tuple[int, ...]  # the trace's stream ids of the marks' own records

    def mark(self) -> None:
        """Launch one mark now."""
        ...


@dataclass
class Sources:
    """What the session records with; ``warnings`` say what could not be had and why."""

    trace: TraceBackend
    samplers: list[MetricSampler] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # None: the trace records launch API calls itself (or cannot tell launches at all)
    boundary_marker: BoundaryMarker | None = None
    synchronize: Callable[[], object] | None = None  # waits for the GPU (torch.cuda.synchronize)
    # the folder the trace spools CUPTI's buffers into (spool.py), removed once it has stopped
    spool_dir: str | None = None


__all__ = ["BoundaryMarker", "MetricSampler", "Sources", "TraceBackend"]
