"""What an Nsight Systems SQLite export is made of, as data: tables, columns, codes, units.

Why data and not code: the export's schema changes with nsys releases (``META_DATA_EXPORT``
replaced ``EXPORT_META_DATA`` in 2022.4; ``greenContextId`` and cluster columns came later;
GPU metrics moved from JSON in ``GENERIC_EVENTS`` to ``GPU_METRICS`` rows). Each spelling the
reader depends on is one row here, tested against the exports under ``fixtures/nsys/`` (nsys
2022.2 to 2025.5), so a new release that renames something fails one test, not a report.
"""

from __future__ import annotations

# The metadata table, newest spelling first (2022.4+ writes META_DATA_EXPORT).
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
PRODUCT_VERSION_KEY = "EXPORT_PRODUCT_VERSION"  # e.g. "2024.5.1.113"
SCHEMA_VERSION_KEY = "EXPORT_SCHEMA_VERSION"  # e.g. "3.13.2"

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
STRINGS_TABLE = "StringIds"
GPU_TABLE = "TARGET_INFO_GPU"
NVTX_TABLE = "NVTX_EVENTS"
PROCESS_TABLE = "PROCESSES"
SYSTEM_ENV_TABLE = "TARGET_INFO_SYSTEM_ENV"
METRICS_TABLE = "GPU_METRICS"
METRIC_NAMES_TABLE = "TARGET_INFO_GPU_METRICS"

# Columns read from each table (a table that is absent is read as empty, except the two that
# make a file an export: StringIds and one of the CUPTI activity tables).
COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL_TABLE: ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                   "demangledName", "mangledName", "gridX", "gridY", "gridZ",
                   "blockX", "blockY", "blockZ"),
    MEMCPY_TABLE: ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                   "bytes", "copyKind"),
    MEMSET_TABLE: ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                   "bytes"),
    RUNTIME_TABLE: ("start", "correlationId", "globalTid"),
    STRINGS_TABLE: ("id", "value"),
    GPU_TABLE: ("id", "name", "uuid", "smCount", "totalMemory", "computeMajor",
                "computeMinor"),
    NVTX_TABLE: ("start", "end", "eventType", "text", "textId", "globalTid"),
    PROCESS_TABLE: ("globalPid", "pid", "name"),
    SYSTEM_ENV_TABLE: ("name", "value"),
    METRICS_TABLE: ("timestamp", "typeId", "metricId", "value"),
    METRIC_NAMES_TABLE: ("typeId", "metricId", "metricName"),
}
ACTIVITY_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE)

# globalPid / globalTid pack (hardware id, VM id, pid, tid): pid = (value >> 24) & 0xFFFFFF.
PID_SHIFT = 24
PID_MASK = 0xFFFFFF
# GPU_METRICS.typeId: the GPU is its low byte (as the nsys recipe gpu_metric_util_map reads it).
METRIC_GPU_MASK = 0xFF

# NVTX_EVENTS.eventType of ranges that have a start and an end (ENUM_NSYS_EVENT_TYPE):
# push/pop ranges (nvtxRangePush, torch.cuda.nvtx.range) and start/end ranges.
NVTX_RANGE_TYPES = (59, 60)
NVTX_THREAD_NAME_TYPE = 39  # NvtxThread: a thread's name, e.g. "MPI Rank 0" (nsys --trace=mpi)

# CUpti_ActivityMemcpyKind (cupti_activity.h); the exports before schema 3 have no
# ENUM_CUDA_MEMCPY_OPER table, so the codes are read from this table for every version.
MEMCPY_KINDS: dict[int, str] = {
    0: "unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD",
    7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP",
}

# Unit written in brackets at the end of a GPU metric's name ("SMs Active [Throughput %]")
# -> the run file's unit. A unit not listed is kept as written (lower case).
METRIC_UNITS: dict[str, str] = {
    "throughput %": "pct",
    "%": "pct",
    "mhz": "MHz",
    "ghz": "GHz",
    "bytes": "bytes",
    "w": "W",
}

# TARGET_INFO_SYSTEM_ENV rows that name the machine.
HOST_KEY = "Hostname"
DRIVER_KEY = "NvDriverVersion"  # "52510517" (525.105.17) or "591.44"
CUDA_DRIVER_KEY = "CudaDriverVersion"  # 12000 -> "12.0"
