"""The run file: typed model, reader/writer, version gate (see docs/reference/run-file.md)."""

from __future__ import annotations

from perfdiff.schema.io import (
    empty_transfer_table,
    load_run_file,
    run_file_from_dict,
    run_file_to_dict,
    save_run_file,
)
from perfdiff.schema.model import (
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
    TransferTable,
    Workload,
)
from perfdiff.schema.versions import CURRENT_VERSION

__all__ = [
    "CURRENT_VERSION",
    "Collection",
    "CycleTable",
    "DeviceInfo",
    "Environment",
    "KernelName",
    "KernelTable",
    "MetricSeries",
    "Run",
    "RunFile",
    "Status",
    "TransferTable",
    "Workload",
    "empty_transfer_table",
    "load_run_file",
    "run_file_from_dict",
    "run_file_to_dict",
    "save_run_file",
]
