"""A trace's top-level keys: deviceProperties, distributedInfo, versions, host, base time.

Why its own module: these keys are decoded from raw slices into plain values (no slice of
the file kept), with Kineto's conventions (CUDA versions as 1000*major + 10*minor, a rank
only when it is a non-negative integer) in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from perfdiff.readers.torch_profiler.events import ANY_DECODER, BadTrace, Trace, decode_replacing
from perfdiff.schema.model import DeviceInfo


@dataclass(frozen=True)
class TraceMeta:
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
    writer: str = ""  # who wrote the trace, as far as it says (for the error lines)


def trace_metadata(trace: Trace) -> TraceMeta:
    base_text = _version_text(trace.baseTimeNanoseconds)
    try:
        base_ns = int(base_text) if base_text is not None else 0
    except ValueError:
        raise BadTrace(f"baseTimeNanoseconds {base_text!r} is not an integer") from None
    rank, world = _distributed(trace.distributedInfo)
    return TraceMeta(
        base_ns=base_ns, devices=_device_properties(trace.deviceProperties), rank=rank,
        world_size=world,
        host=_version_text(trace.host_name) or _version_text(trace.hostname),
        schema_version=_version_text(trace.schemaVersion) or "unknown",
        driver_version=_cuda_version(trace.cuda_driver_version),
        cuda_version=_cuda_version(trace.cuda_runtime_version),
        cupti_version=_version_text(trace.cupti_version),
        writer=_writer(trace),
    )


def _writer(trace: Trace) -> str:
    """What the trace says of the software that wrote it. Kineto does not record the torch
    version (its category spellings tell the era: ``spellings.torch_of``); its schema version
    and the CUDA/HIP versions are what there is."""
    facts = [f"Kineto schema {_version_text(trace.schemaVersion) or 'not given'}"]
    for label, raw in (("CUDA runtime", trace.cuda_runtime_version),
                       ("HIP runtime", trace.hip_runtime_version),
                       ("roctracer", trace.roctracer_version)):
        text = _version_text(raw)
        if text:
            facts.append(f"{label} {text}")
    return ", ".join(facts)


def _raw_json(raw: msgspec.Raw) -> Any:
    return decode_replacing(ANY_DECODER.decode, raw) if len(raw) else None


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
            name=_device_name(entry),
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


def _device_name(entry: dict[str, Any]) -> str:
    """The GPU's name; a nameless entry (some ROCm builds write ``"name": ""``) is described
    by what it does say, so that two traces of one model still compare as one model."""
    name = entry.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    facts = []
    if entry.get("computeMajor") is not None:
        facts.append(f"compute {entry.get('computeMajor')}.{entry.get('computeMinor')}")
    if entry.get("numSms"):
        facts.append(f"{entry['numSms']} SMs/CUs")
    memory = entry.get("totalGlobalMem")
    if isinstance(memory, (int, float)) and memory > 0:
        facts.append(f"{memory / 2**30:.0f} GiB")
    return "unnamed GPU" + (f" ({', '.join(facts)})" if facts else "")


UNKNOWN_DEVICE = DeviceInfo(index=-1, name="unknown GPU", uuid="", sm_count=0, memory_bytes=0)


def device_for(device: int, known: dict[int, DeviceInfo],
               warnings: list[str]) -> DeviceInfo:
    """The deviceProperties entry of a device id used by the trace's GPU events.

    Kineto on ROCm writes the device of GPU events as the agent's id (``device: 9`` on an
    MI300X whose deviceProperties lists ids 0-7, or only 0), so an id may be missing from the
    list. When every listed GPU is one model (a node's GPUs nearly always are), the device is
    that model: its name is right whichever of them it is; otherwise it stays unknown.
    """
    if device in known:
        return known[device]
    models = {(d.name, d.sm_count, d.memory_bytes, d.compute_capability)
              for d in known.values()}
    if len(models) == 1:
        model = next(iter(known.values()))
        warnings.append(f"device {device} of the GPU events is not in deviceProperties "
                        f"(ids {', '.join(map(str, sorted(known)))}); every listed GPU is one "
                        f"model, {model.name}, so it is taken as that model")
        return model
    return UNKNOWN_DEVICE
