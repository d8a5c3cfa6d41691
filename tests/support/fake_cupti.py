"""A CPU stand-in for CUPTI tracing, so user-program collection is tested without a GPU.

Why here and not in perfdiff/: nothing in the package exists only for tests. The child process
opens the backend its config names (``InjectConfig.backend``, MODULE:FUNCTION), so tests name
:data:`FAKE_BACKEND` there: in process by setting ``perfdiff.cli.collect_program.TRACE_BACKEND``
(:func:`use_fake_backend`), and for ``perfdiff collect`` run as a subprocess through
:data:`PERFDIFF_FAKE`, which does the same before the CLI starts. Children import this module
by name, so their ``PYTHONPATH`` must hold the repository root (:func:`fake_env`).

Test programs call :func:`launch` to "launch a kernel". A launch records what CUPTI would: a
launch API record on the host clock now, and a kernel that starts when the simulated device is
free and runs for the given time. Nothing sleeps; the host clock moves only as the program
runs. With no fake backend active, :func:`launch` does nothing.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from perfdiff.collect.cupti.detached import DetachingTrace
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace, TransferRecord
from perfdiff.schema.model import DeviceInfo, Environment

ROOT = Path(__file__).resolve().parents[2]
FAKE_BACKEND = "tests.support.fake_cupti:open_fake"
# `perfdiff collect` in a subprocess, its children tracing with FakeTrace (env: fake_env())
PERFDIFF_FAKE = [sys.executable, "-c",
                 "from tests.support.fake_cupti import perfdiff_main; perfdiff_main()"]

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

    def environment(self) -> Environment:
        """The run file's environment: this host, the simulated GPU (the child asks a backend
        that is no GPU to describe the device it stands for)."""
        return Environment(host=socket.gethostname(), driver_version=None, cuda_version=None,
                           cupti_version=None, torch_version=None,
                           python_version=platform.python_version(), devices=(fake_device(0),))

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


class FakeDetaching(DetachingTrace):
    """``--detach-untraced`` over FakeTrace stretches: each "attach" is a new FakeTrace, whose
    correlation ids start again at 1 (the case perfdiff must join); finalize and the GPU
    synchronise do nothing."""

    def __init__(self) -> None:
        self.finalized = 0
        super().__init__(lambda _api: FakeTrace(), launch_records=True,
                         finalize=self._finalize, synchronize=lambda: None,
                         host_clock=time.monotonic_ns)

    def _finalize(self) -> None:
        self.finalized += 1

    def environment(self) -> Environment:
        return FakeTrace().environment()


def open_fake(config: Any) -> FakeTrace | FakeDetaching:
    """The backend factory :data:`FAKE_BACKEND` names (the child calls it with its config)."""
    return FakeDetaching() if getattr(config, "detach_untraced", False) else FakeTrace()


def fake_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this environment) with the repository root first on PYTHONPATH, so
    that the CLI and the program's processes import this module, plus ``extra``."""
    env = dict(os.environ if base is None else base)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    env.update(extra)
    return env


@contextmanager
def use_fake_backend() -> Iterator[None]:
    """``perfdiff collect -- CMD`` run in this process traces its children with FakeTrace."""
    from perfdiff.cli import collect_program

    saved = collect_program.TRACE_BACKEND
    collect_program.TRACE_BACKEND = FAKE_BACKEND
    try:
        yield
    finally:
        collect_program.TRACE_BACKEND = saved


def perfdiff_main() -> None:
    """The perfdiff CLI with children tracing through FakeTrace (:data:`PERFDIFF_FAKE`)."""
    from perfdiff.cli import collect_program
    from perfdiff.cli.app import main

    collect_program.TRACE_BACKEND = FAKE_BACKEND
    main()


__all__ = ["FAKE_BACKEND", "FAKE_GPU_NAME", "PERFDIFF_FAKE", "ROOT", "FakeDetaching", "FakeTrace",
           "fake_device", "fake_env", "launch", "open_fake", "perfdiff_main", "use_fake_backend"]
