"""A CPU stand-in for CUPTI tracing, so user-program collection is tested without a GPU.

Why in the package (not under tests/): the child process imports its backend by the name in
its config, and test programs call :func:`launch` to "launch a kernel". A launch records what
CUPTI would: a launch API record on the host clock now, and a kernel that starts when the
simulated device is free and runs for the given time. Nothing sleeps; the host clock moves
only as the program runs. With no fake backend active, :func:`launch` does nothing.
"""

from __future__ import annotations

import time

from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace, TransferRecord
from perfdiff.schema.model import DeviceInfo

FAKE_GPU_NAME = "Fake GPU (perfdiff CPU tests)"

_active: FakeTrace | None = None


class FakeTrace:
    """:class:`perfdiff.collect.backends.TraceBackend` over simulated launches."""

    name = "cupti_activity"

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._raw = RawTrace()
        self._device_free_ns: dict[int, int] = {}
        self._next_correlation = 1
        self._recording = False
        self._paused = False

    def clock_ns(self) -> int:
        return time.monotonic_ns()

    def start(self) -> None:
        global _active
        self._recording = True
        _active = self

    def drain(self) -> None:
        return None

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def records_so_far(self) -> int:
        return len(self._raw.kernels) + len(self._raw.api)

    def stop(self) -> RawTrace:
        global _active
        self._recording = False
        if _active is self:
            _active = None
        raw, self._raw = self._raw, RawTrace()
        return raw

    def launch(self, name: str, ms: float, device: int, copy_bytes: int,
               traced_host_ms: float = 0.0) -> None:
        if not self._recording or self._paused:
            return
        if traced_host_ms > 0:  # what CUPTI's per-launch work costs the host while tracing
            time.sleep(traced_host_ms / 1e3)
        now = self.clock_ns()
        corr = self._next_correlation
        self._next_correlation += 1
        start = max(now + 1_000, self._device_free_ns.get(device, 0))
        end = start + max(1, int(ms * 1e6))
        self._device_free_ns[device] = end
        self._raw.api.append(ApiRecord(corr, now))
        if copy_bytes:
            self._raw.memcpy.append(TransferRecord("HtoD", copy_bytes, device, 7, start, end, corr))
            return
        self._raw.kernels.append(
            KernelRecord(name, device, 7, start, end, corr, (1, 1, 1), (128, 1, 1))
        )


def launch(name: str, ms: float = 0.1, *, device: int = 0, copy_bytes: int = 0,
           traced_host_ms: float = 0.0) -> None:
    """Record one simulated kernel (or a host-to-device copy when ``copy_bytes`` > 0).

    ``traced_host_ms``: host time the launch takes only while tracing is on (the program's
    thread sleeps that long), as CUPTI's per-launch work lengthens a traced cycle: a program
    whose traced cycles cost more than its untraced ones, for the cost-driven schedule."""
    trace = _active
    if trace is not None:
        trace.launch(name, ms, device, copy_bytes, traced_host_ms)


def fake_device(index: int) -> DeviceInfo:
    """The simulated GPU as the run file's environment describes it."""
    return DeviceInfo(index=index, name=FAKE_GPU_NAME, uuid=f"GPU-fake-{index}", sm_count=1,
                      memory_bytes=2**30)


__all__ = ["FAKE_GPU_NAME", "FakeTrace", "fake_device", "launch"]
