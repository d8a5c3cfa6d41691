"""NVML sampler thread: clocks, utilisation, memory, power, temperature, throttle reasons.

Why a thread polling every few ms: NVML has no push interface; polling from a daemon thread
costs the workload a few microseconds of GIL per poll. Timestamps come from the trace
backend's clock so that NVML samples line up with kernels and cycles. Each quantity is read
on its own: one the driver refuses (e.g. power on some boards) is dropped with a warning,
the others keep going.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfdiff.schema.model import MetricSeries


class NvmlUnavailable(Exception):
    """NVML cannot be used here; the message says why (it becomes a warning)."""


@dataclass(frozen=True)
class NvmlQuantity:
    """One polled quantity: its series name, unit and how to read it from a handle."""

    name: str
    unit: str
    read: Callable[[Any, Any], float]


def _quantities() -> tuple[NvmlQuantity, ...]:
    def clock(kind: str) -> Callable[[Any, Any], float]:
        return lambda nv, h: float(nv.nvmlDeviceGetClockInfo(h, getattr(nv, kind)))

    def throttle(nv: Any, h: Any) -> float:
        reader = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if reader is None:
            reader = nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return float(reader(h))

    return (
        NvmlQuantity("nvml.sm_clock", "MHz", clock("NVML_CLOCK_SM")),
        NvmlQuantity("nvml.mem_clock", "MHz", clock("NVML_CLOCK_MEM")),
        NvmlQuantity("nvml.gpu_util", "pct",
                     lambda nv, h: float(nv.nvmlDeviceGetUtilizationRates(h).gpu)),
        NvmlQuantity("nvml.memory_used", "bytes",
                     lambda nv, h: float(nv.nvmlDeviceGetMemoryInfo(h).used)),
        NvmlQuantity("nvml.power", "W", lambda nv, h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
        NvmlQuantity("nvml.temperature", "C",
                     lambda nv, h: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
        NvmlQuantity("nvml.throttle_reasons", "bitmask", throttle),
    )


def load_nvml() -> Any:
    """The initialised ``pynvml`` module, or NvmlUnavailable with the reason."""
    try:
        import pynvml
    except ImportError:
        raise NvmlUnavailable(
            "NVML unavailable: nvidia-ml-py is not installed (pip install nvidia-ml-py)"
        ) from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise NvmlUnavailable(f"NVML unavailable: nvmlInit failed ({exc})") from None
    return pynvml


def device_handle(nv: Any, index: int, uuid: str | None) -> Any:
    """NVML's handle of the device: by UUID where it resolves, else by index."""
    if uuid:
        try:
            return nv.nvmlDeviceGetHandleByUUID(uuid)
        except Exception:  # fall back to the index (UUID formats differ between APIs)
            pass
    return nv.nvmlDeviceGetHandleByIndex(index)


def working_quantities(nv: Any, handle: Any, warnings: list[str]) -> list[NvmlQuantity]:
    """The quantities this device answers; one warning for each it refuses."""
    working = []
    for q in _quantities():
        try:
            q.read(nv, handle)
        except Exception as exc:
            warnings.append(f"NVML {q.name} unavailable ({exc}); not sampled")
            continue
        working.append(q)
    return working


def read_row(quantities: list[NvmlQuantity], nv: Any, handle: Any) -> list[float]:
    """Each quantity read once, NaN where a read fails now."""
    row = []
    for q in quantities:
        try:
            row.append(q.read(nv, handle))
        except Exception:
            row.append(float("nan"))
    return row


class NvmlSampler:
    """:class:`perfdiff.collect.backends.MetricSampler` polling NVML in a daemon thread."""

    name = "nvml"

    def __init__(
        self,
        device_index: int,
        clock_ns: Callable[[], int],
        interval_s: float = 0.01,
        nvml: Any = None,
        uuid: str | None = None,
    ) -> None:
        self._nv = nvml if nvml is not None else load_nvml()
        self._device = device_index
        self._clock_ns = clock_ns
        self._interval_s = interval_s
        self.warnings: list[str] = []
        try:
            self._handle = device_handle(self._nv, device_index, uuid)
        except Exception as exc:
            raise NvmlUnavailable(f"NVML has no handle for device {device_index} ({exc})") from None
        self._quantities = working_quantities(self._nv, self._handle, self.warnings)
        if not self._quantities:
            raise NvmlUnavailable("NVML unavailable: no quantity could be read")
        self._times: list[int] = []
        self._values: list[list[float]] = []
        self._stop = threading.Event()
        self._paused = False
        self._thread: threading.Thread | None = None

    def pause(self) -> None:
        """Skip polls until :meth:`resume` (an untraced cycle: ``overhead.py``)."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def poll_once(self) -> None:
        """Read every working quantity once (NaN where a read fails now)."""
        row = read_row(self._quantities, self._nv, self._handle)
        self._times.append(int(self._clock_ns()))
        self._values.append(row)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self._paused:
                self.poll_once()
            self._stop.wait(self._interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="perfdiff-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> list[MetricSeries]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self.poll_once()  # one sample at the very end, so short runs still get two
        times = np.asarray(self._times, dtype=np.int64)
        values = np.asarray(self._values, dtype=np.float64).reshape(len(self._times), -1)
        return nvml_series(self._device, times, values,
                           [(q.name, q.unit) for q in self._quantities])


def nvml_series(device: int, times: Any, values: Any,
                names_units: list[tuple[str, str]]) -> list[MetricSeries]:
    """One series per quantity from a (samples, quantities) array of readings, whichever
    sampler polled them."""
    return [MetricSeries(name=name, unit=unit, source="nvml", device=device,
                         timestamps_ns=times, values=np.array(values[:, i], dtype=np.float64),
                         interval_ns=None)
            for i, (name, unit) in enumerate(names_units)]


__all__ = ["NvmlSampler", "NvmlUnavailable", "device_handle", "load_nvml", "nvml_series",
           "read_row", "working_quantities"]
