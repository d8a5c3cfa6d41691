"""Where an export was recorded: its GPUs, host, driver, processes and MPI ranks.

Why its own module: these come from small side tables (``TARGET_INFO_GPU``,
``TARGET_INFO_SYSTEM_ENV``, ``PROCESSES``, NVTX thread names) whose presence varies by nsys
version and recording options; each is optional, and its absence is said, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perfdiff.readers.nsys.database import Export
from perfdiff.readers.nsys.tables import (
    CUDA_DRIVER_KEY,
    DRIVER_KEY,
    GPU_TABLE,
    HOST_KEY,
    NVTX_TABLE,
    NVTX_THREAD_NAME_TYPE,
    PID_MASK,
    PID_SHIFT,
    PROCESS_TABLE,
    STRINGS_TABLE,
    SYSTEM_ENV_TABLE,
)
from perfdiff.schema.model import DeviceInfo

# nsys --trace=mpi names each rank's main thread "MPI Rank N" (an NVTX thread name).
RANK_NAME = re.compile(r"^MPI Rank (\d+)$")


@dataclass(frozen=True)
class Machine:
    """The recording machine as the export describes it."""

    devices: dict[int, DeviceInfo]  # by TARGET_INFO_GPU.id (the kernels' deviceId)
    host: str | None
    driver_version: str | None
    cuda_version: str | None
    process_names: dict[int, str]  # pid -> executable
    ranks: dict[int, int]  # pid -> MPI rank, where nsys named one


def read_machine(export: Export) -> Machine:
    env = _system_env(export)
    return Machine(devices=_devices(export), host=env.get(HOST_KEY),
                   driver_version=_driver(env.get(DRIVER_KEY)),
                   cuda_version=_cuda(env.get(CUDA_DRIVER_KEY)),
                   process_names=_processes(export), ranks=_ranks(export))


def _devices(export: Export) -> dict[int, DeviceInfo]:
    if not export.has(GPU_TABLE):
        return {}
    export.require(GPU_TABLE, ("id", "name"))
    cols = export.columns[GPU_TABLE]

    def col(name: str, default: str) -> str:
        return name if name in cols else default

    rows = export.rows(
        f"SELECT id, name, {col('uuid', 'NULL')}, {col('smCount', '0')}, "
        f"{col('totalMemory', '0')}, {col('computeMajor', 'NULL')}, "
        f"{col('computeMinor', 'NULL')} FROM {GPU_TABLE}")
    out: dict[int, DeviceInfo] = {}
    for gid, name, uuid, sms, memory, major, minor in rows:
        if not isinstance(gid, int) or gid in out:
            continue
        out[gid] = DeviceInfo(
            index=gid, name=str(name or "unknown GPU"), uuid=str(uuid or ""),
            sm_count=sms if isinstance(sms, int) and sms >= 0 else 0,
            memory_bytes=memory if isinstance(memory, int) and memory >= 0 else 0,
            compute_capability=(f"{major}.{minor}" if isinstance(major, int)
                                and isinstance(minor, int) else None))
    return out


def _system_env(export: Export) -> dict[str, str]:
    if not export.has(SYSTEM_ENV_TABLE) or not {"name", "value"} <= export.columns[
            SYSTEM_ENV_TABLE]:
        return {}
    rows = export.rows(f"SELECT name, value FROM {SYSTEM_ENV_TABLE} WHERE name IN (?, ?, ?)",
                       (HOST_KEY, DRIVER_KEY, CUDA_DRIVER_KEY))
    return {str(k): str(v) for k, v in rows if v is not None}


def _driver(text: str | None) -> str | None:
    """nsys writes 525.105.17 as "52510517" (major*1e5 + minor*100 + patch) on Linux and
    "591.44" on Windows; the first is spelled out, anything else kept as written."""
    if text is not None and len(text) == 8 and text.isascii() and text.isdigit():
        return f"{int(text[:3])}.{int(text[3:6]):02d}.{int(text[6:]):02d}"
    return text


def _cuda(text: str | None) -> str | None:
    """CUDA versions as 1000*major + 10*minor (12040 -> "12.4")."""
    if text is None or not (text.isascii() and text.isdigit()):  # "²".isdigit() is True
        return text
    number = int(text)
    return f"{number // 1000}.{(number % 1000) // 10}"


def _processes(export: Export) -> dict[int, str]:
    if not export.has(PROCESS_TABLE):
        return {}
    rows = export.rows(f"SELECT pid, name FROM {PROCESS_TABLE}")
    return {pid: str(name) for pid, name in rows if isinstance(pid, int) and name}


def _ranks(export: Export) -> dict[int, int]:
    if not export.has(NVTX_TABLE):
        return {}
    cols = export.columns[NVTX_TABLE]
    if not {"eventType", "globalTid", "text"} <= cols:
        return {}
    text = ("COALESCE(n.text, s.value)" if "textId" in cols else "n.text")
    join = (f"LEFT JOIN {STRINGS_TABLE} s ON s.id = n.textId" if "textId" in cols else "")
    rows = export.rows(
        f"SELECT (n.globalTid >> {PID_SHIFT}) & {PID_MASK}, {text} FROM {NVTX_TABLE} n "
        f"{join} WHERE n.eventType = ?", (NVTX_THREAD_NAME_TYPE,))
    ranks: dict[int, int] = {}
    for pid, name in rows:
        match = RANK_NAME.match(str(name or ""))
        if match and isinstance(pid, int):
            ranks.setdefault(pid, int(match.group(1)))
    return ranks
