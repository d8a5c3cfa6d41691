"""The run file's typed model: frozen dataclasses, columns as numpy arrays.

Why columnar: a run holds up to millions of kernel launches; one object per launch would cost
hundreds of bytes each and make ``compare`` slow. Each table (kernels, memcpy, memset, cycles)
is a frozen dataclass whose fields are equal-length 1-D numpy arrays. Kernel names are interned:
``KernelTable.name_id`` indexes ``RunFile.strings``.

Times are nanoseconds on the CUPTI timestamp clock of the process that recorded them.
Version history of the format lives in ``perfdiff.schema.versions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

RunState = Literal["complete", "incomplete"]
MetricSource = Literal["pm_sampling", "nvml", "derived", "imported"]


@dataclass(frozen=True)
class Status:
    """Whether the collection finished; an incomplete file still holds every cycle gathered."""

    state: RunState
    reason: str | None = None  # e.g. "interrupted (Ctrl-C)", "workload raised ValueError: ..."


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU as seen at the start of collection."""

    index: int
    name: str
    uuid: str
    sm_count: int
    memory_bytes: int
    sm_clock_mhz: int | None = None  # clocks at start (NVML), None when NVML is unavailable
    mem_clock_mhz: int | None = None
    compute_capability: str | None = None


@dataclass(frozen=True)
class Environment:
    """Where the run was recorded; compare refuses runs from different GPU models."""

    host: str
    driver_version: str | None
    cuda_version: str | None
    cupti_version: str | None
    torch_version: str | None
    python_version: str
    devices: tuple[DeviceInfo, ...]


@dataclass(frozen=True)
class Collection:
    """What was asked for and what actually worked (warnings say what degraded and why)."""

    metrics: tuple[str, ...]
    sample_interval_ns: int
    sources: tuple[str, ...]  # subset of: cupti_activity, pm_sampling, nvml
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    """The workload and its parameters (JSON-compatible values only)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()  # argv of a user program, empty for built-in workloads


@dataclass(frozen=True)
class KernelName:
    """One interned kernel name: as CUPTI reported it and demangled for reports."""

    mangled: str
    demangled: str


@dataclass(frozen=True)
class CycleTable:
    """Cycles (iterations) of one run; ``warmup`` cycles are excluded from statistics.

    ``mark_start_ns`` / ``mark_end_ns`` (schema 1.1, optional): GPU start time of the cycle's
    boundary marks (``perfdiff.collect.cycles.boundary_marks``), -1 where unknown; None (absent from
    the file) when the run had no marks (API-records mode, user programs, files before 1.1).
    Why kept: the end mark is issued when the timed call has returned to Python, the moment a
    CUDA end event would be recorded, so ``perfdiff bench --measure call`` can measure the
    window CUDA events measure without recording any event.

    ``return_ns`` (schema 1.2, optional): when the timed call returned to Python, stamped on
    the trace's clock (CUPTI's, the clock of every GPU time here) before the end mark is
    issued; -1 for a cycle without such a return; None when no cycle had one. Why, beside the
    end mark: the mark reaches the GPU tens of microseconds after it is issued (measured on
    the H100: 30-60 us), which an end event recorded at the return does not; for a call that
    returns after its last GPU work (host-bound, like ``eigh``) that delay would be counted
    as call time.

    ``traced`` (schema 1.3, optional): 1 for a cycle recorded with activity tracing on, 0 for
    one the collector left untraced to measure its own overhead
    (``perfdiff.collect.cycles.overhead``; such cycles are also flagged ``warmup``, so no
    kernel statistic sees them); None: every cycle traced. ``hold_ns`` (1.3, optional): how
    long the collector held the Python interpreter inside the cycle (taking in CUPTI
    buffers), 0 where it did not.
    """

    index: IntArray
    start_ns: IntArray
    end_ns: IntArray
    label: tuple[str, ...]
    warmup: BoolArray
    mark_start_ns: IntArray | None = None
    mark_end_ns: IntArray | None = None
    return_ns: IntArray | None = None
    traced: IntArray | None = None
    hold_ns: IntArray | None = None


@dataclass(frozen=True)
class KernelTable:
    """Kernel launches, columnar; ``cycle`` is the launch cycle index, -1 if outside any cycle."""

    name_id: IntArray
    device: IntArray
    stream: IntArray
    start_ns: IntArray
    end_ns: IntArray
    cycle: IntArray
    correlation_id: IntArray
    grid_x: IntArray
    grid_y: IntArray
    grid_z: IntArray
    block_x: IntArray
    block_y: IntArray
    block_z: IntArray
    # the framework op and the module that launched each kernel: indices into RunFile.ops, -1
    # where unknown; absent (None) where the input never says (perfdiff's own recordings)
    op_id: IntArray | None = None
    module_id: IntArray | None = None


@dataclass(frozen=True)
class TransferTable:
    """memcpy or memset records, columnar. ``kind`` is e.g. "HtoD", "DtoH", "DtoD", "memset"."""

    kind: tuple[str, ...]
    bytes: IntArray
    device: IntArray
    stream: IntArray
    start_ns: IntArray
    end_ns: IntArray
    cycle: IntArray


@dataclass(frozen=True)
class MetricSeries:
    """A sampled metric: PM sampling (per GPU-time interval) or NVML (polled)."""

    name: str
    unit: str  # "pct" (0-100), "MHz", "W", "C", "bytes", "bitmask"
    source: MetricSource
    device: int
    timestamps_ns: IntArray  # sample end times (PM sampling) or poll times (NVML)
    values: FloatArray
    # nominal sampling interval: a PM sample covers [t - interval, t]
    interval_ns: int | None = None


@dataclass(frozen=True)
class Run:
    """One process's recording (a run). Several runs per file give run-level replicates."""

    index: int
    pid: int
    rank: int | None
    exit_code: int | None
    cycles: CycleTable
    kernels: KernelTable
    memcpy: TransferTable
    memset: TransferTable
    metrics: tuple[MetricSeries, ...]
    dropped_records: int = 0


@dataclass(frozen=True)
class RunFile:
    """A whole run file (schema v1)."""

    schema_version: str
    tool_version: str
    status: Status
    environment: Environment
    collection: Collection
    workload: Workload
    strings: tuple[KernelName, ...]
    runs: tuple[Run, ...]
    created_unix_s: float | None = None
    # labels of the launching ops and modules (``aten::linear > aten::addmm``,
    # ``VisionTransformer_0/Block_3/Mlp_3``) that KernelTable.op_id / module_id point at
    ops: tuple[str, ...] = ()
