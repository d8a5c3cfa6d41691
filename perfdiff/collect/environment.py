"""What machine and software a run was recorded on (the run file's ``environment``).

Why gathered once, at the start: ``compare`` refuses runs from different GPU models, and a
reader of a fixture needs the driver, CUDA, CUPTI and torch versions to reproduce it. Every
probe is optional: a missing library leaves its field None rather than failing collection.
"""

from __future__ import annotations

import importlib.metadata
import platform
import socket
from typing import Any

from perfdiff.schema.model import DeviceInfo, Environment


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cupti_version_text() -> str | None:
    """cupti-python's version, with the libcupti wheel's version when it is installed."""
    binding = _package_version("cupti-python")
    if binding is None:
        return None
    lib = _package_version("nvidia-cuda-cupti")
    return f"cupti-python {binding}" + (f", nvidia-cuda-cupti {lib}" if lib else "")


def _nvml_details(nvml: Any, device_index: int) -> tuple[str | None, int | None, int | None]:
    """(driver version, SM clock MHz, memory clock MHz) from NVML, each None if unreadable."""
    if nvml is None:
        return None, None, None
    driver = sm = mem = None
    try:
        raw = nvml.nvmlSystemGetDriverVersion()
        driver = raw.decode() if isinstance(raw, bytes) else str(raw)
    except Exception:
        driver = None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
        sm = int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        mem = int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))
    except Exception:
        sm = mem = None
    return driver, sm, mem


def torch_device_info(torch: Any, device_index: int, nvml: Any) -> DeviceInfo:
    """One device's description from torch (name, UUID, SMs, memory) and NVML (clocks)."""
    props = torch.cuda.get_device_properties(device_index)
    _, sm, mem = _nvml_details(nvml, device_index)
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid and not uuid.startswith("GPU-"):
        uuid = f"GPU-{uuid}"
    return DeviceInfo(
        index=device_index,
        name=str(props.name),
        uuid=uuid,
        sm_count=int(props.multi_processor_count),
        memory_bytes=int(props.total_memory),
        sm_clock_mhz=sm,
        mem_clock_mhz=mem,
        compute_capability=f"{props.major}.{props.minor}",
    )


def gather_environment(torch: Any, device_index: int, nvml: Any) -> Environment:
    """The environment of this process for ``device_index`` (torch may be None)."""
    driver, _, _ = _nvml_details(nvml, device_index)
    devices: tuple[DeviceInfo, ...] = ()
    cuda_version = torch_version = None
    if torch is not None:
        torch_version = str(torch.__version__)
        cuda_version = getattr(torch.version, "cuda", None)
        if torch.cuda.is_available():
            devices = (torch_device_info(torch, device_index, nvml),)
    return Environment(
        host=socket.gethostname(),
        driver_version=driver,
        cuda_version=None if cuda_version is None else str(cuda_version),
        cupti_version=cupti_version_text(),
        torch_version=torch_version,
        python_version=platform.python_version(),
        devices=devices,
    )


__all__ = ["cupti_version_text", "gather_environment", "torch_device_info"]
