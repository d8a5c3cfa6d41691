"""A trace's top-level keys: deviceProperties, distributedInfo, versions, host, base time.

Why its own module: these keys are decoded from raw slices into plain values (no slice of
the file kept), with Kineto's conventions (CUDA versions as 1000*major + 10*minor, a rank
only when it is a non-negative integer) in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from perfdiff.readers.torch_profiler.events import _ANY, _Bad, _Trace
from perfdiff.schema.model import DeviceInfo


@dataclass(frozen=True)
class _Meta:
    """A trace's top-level keys, decoded (no raw slice of the file kept)."""

    base_ns: int
    devices: dict[int, DeviceInfo]
    rank: int | None
    world_size: int | None
    host: str | None
    schema_version: str
    driver_version: str | None
    cuda_version: str | None
    cupti_version: str | None


def _metadata(trace: _Trace) -> _Meta:
    base_text = _version_text(trace.baseTimeNanoseconds)
    try:
        base_ns = int(base_text) if base_text is not None else 0
    except ValueError:
        raise _Bad(f"baseTimeNanoseconds {base_text!r} is not an integer") from None
    rank, world = _distributed(trace.distributedInfo)
    return _Meta(
        base_ns=base_ns, devices=_device_properties(trace.deviceProperties), rank=rank,
        world_size=world,
        host=_version_text(trace.host_name) or _version_text(trace.hostname),
        schema_version=_version_text(trace.schemaVersion) or "unknown",
        driver_version=_cuda_version(trace.cuda_driver_version),
        cuda_version=_cuda_version(trace.cuda_runtime_version),
        cupti_version=_version_text(trace.cupti_version),
    )


def _raw_json(raw: msgspec.Raw) -> Any:
    return _ANY.decode(raw) if len(raw) else None


def _version_text(raw: msgspec.Raw) -> str | None:
    value = _raw_json(raw)
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _cuda_version(raw: msgspec.Raw) -> str | None:
    """Kineto writes CUDA versions as 1000*major + 10*minor (12040 -> "12.4")."""
    text = _version_text(raw)
    if text is None or not text.isdigit():
        return text
    number = int(text)
    return f"{number // 1000}.{(number % 1000) // 10}"


def _device_properties(raw: msgspec.Raw) -> dict[int, DeviceInfo]:
    value = _raw_json(raw)
    out: dict[int, DeviceInfo] = {}
    if not isinstance(value, list):
        return out
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            continue
        major, minor = entry.get("computeMajor"), entry.get("computeMinor")
        out[entry["id"]] = DeviceInfo(
            index=entry["id"],
            name=str(entry.get("name", "unknown GPU")),
            uuid="",
            sm_count=int(entry.get("numSms", 0) or 0),
            memory_bytes=int(entry.get("totalGlobalMem", 0) or 0),
            compute_capability=f"{major}.{minor}" if major is not None else None,
        )
    return out


def _distributed(raw: msgspec.Raw) -> tuple[int | None, int | None]:
    value = _raw_json(raw)
    if not isinstance(value, dict):
        return None, None
    rank, world = value.get("rank"), value.get("world_size")
    return (rank if isinstance(rank, int) and rank >= 0 else None,
            world if isinstance(world, int) and world > 0 else None)
