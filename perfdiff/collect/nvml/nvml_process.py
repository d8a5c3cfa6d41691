"""NVML sampled from a process of its own; the thread sampler only where that cannot start.

Why: NVML has no push interface, and polling it from a thread of the profiled program costs
that program more than the polling itself. Each of the 7 NVML calls per poll releases the
interpreter lock and takes it back, and each take-back waits for the program's thread to
hand the lock over; on a launch-bound program that is hundreds of hand-overs a second (H100,
2026-11-25, bench/launch_bound/parts.py: the NVML thread at 10 ms added ~2.6 points of step
time over the rest of the collector). The poller (``nvml_poller.py``) runs beside the
program instead: no lock shared, no Python of ours in the program between start and stop.

Timestamps: the poller stamps ``time.perf_counter_ns`` (CLOCK_MONOTONIC, shared by every
process of the host); the trace clock (CUPTI's) ticks at the same rate (clock_check.py) with
an offset, read here at start and at stop and interpolated between the two. An offset that
moved by more than 1 ms is a warning (the series is still placed by the interpolation).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.collect.inject.config import CONFIG_ENV
from perfdiff.collect.nvml.sampler import NvmlSampler, NvmlUnavailable, nvml_series
from perfdiff.schema.model import MetricSeries

START_TIMEOUT_S = 20.0
OFFSET_DRIFT_WARN_NS = 1_000_000


def clock_offset_ns(clock_ns: Callable[[], int], reads: int = 7) -> int:
    """``clock_ns() - perf_counter_ns()``, from the read bracketed most tightly."""
    best: tuple[int, int] | None = None
    for _ in range(reads):
        before = time.perf_counter_ns()
        now = int(clock_ns())
        after = time.perf_counter_ns()
        spread = after - before
        if best is None or spread < best[0]:
            best = (spread, now - (before + after) // 2)
    assert best is not None
    return best[1]


class NvmlProcessSampler:
    """:class:`perfdiff.collect.backends.MetricSampler`: NVML polled by ``nvml_poller``."""

    name = "nvml"

    def __init__(self, device_index: int, clock_ns: Callable[[], int], interval_s: float = 0.01,
                 uuid: str | None = None, env: dict[str, str] | None = None) -> None:
        self._device = device_index
        self._clock_ns = clock_ns
        self._interval_s = interval_s
        self._uuid = uuid or ""
        self._env = env
        self.warnings: list[str] = []
        self._dir: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._header: dict[str, Any] = {}
        self._offsets: list[tuple[int, int]] = []  # (perf_counter ns, offset ns)

    def start(self) -> None:
        """Start the poller and wait for its header (raises NvmlUnavailable if it fails)."""
        self._dir = tempfile.mkdtemp(prefix="perfdiff-nvml-")
        out = Path(self._dir) / "nvml.bin"
        env = dict(os.environ if self._env is None else self._env)
        env.pop(CONFIG_ENV, None)  # the poller must not record itself
        with open(Path(self._dir) / "stderr.txt", "wb") as err:
            self._proc = subprocess.Popen(  # no shell; our own module, our own arguments
                [sys.executable, "-m", "perfdiff.collect.nvml.nvml_poller", "--index",
                 str(self._device), "--uuid", self._uuid, "--interval-s",
                 repr(self._interval_s), "--out", str(out)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env,
                close_fds=True)
        self._header = self._wait_for_header(out)
        self._offsets.append((time.perf_counter_ns(), clock_offset_ns(self._clock_ns)))

    def _wait_for_header(self, out: Path) -> dict[str, Any]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                data = out.read_bytes()
                if b"\n" in data:
                    header: dict[str, Any] = json.loads(data.split(b"\n", 1)[0])
                    if "error" in header or not header.get("names"):
                        self._abandon()
                        why = header.get("error") or "no quantity could be read"
                        raise NvmlUnavailable(f"NVML unavailable: {why}")
                    self.warnings.extend(header.get("warnings", []))
                    return header
            if self._proc is not None and self._proc.poll() is not None:
                break
            time.sleep(0.01)
        reason = self._stderr_tail() or "no header within 20 s"
        self._abandon()
        raise NvmlUnavailable(f"NVML poller did not start ({reason})")

    def _stderr_tail(self) -> str:
        if self._dir is None:
            return ""
        with contextlib.suppress(OSError):
            text = (Path(self._dir) / "stderr.txt").read_text(errors="replace").strip()
            return text.splitlines()[-1][:300] if text else ""
        return ""

    def _abandon(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(timeout=5)
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def pause(self) -> None:
        """Stop polling until :meth:`resume` (an untraced cycle: ``overhead.py``)."""
        self._command(b"p")

    def resume(self) -> None:
        self._command(b"r")

    def _command(self, byte: bytes) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            os.write(self._proc.stdin.fileno(), byte)

    def stop(self) -> list[MetricSeries]:
        """Stop the poller (its last row comes now) and return the series on the trace clock."""
        if self._proc is None or self._dir is None:
            return []
        self._offsets.append((time.perf_counter_ns(), clock_offset_ns(self._clock_ns)))
        try:
            self._proc.terminate()  # SIGTERM: the poller writes its last row and exits
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
            self.warnings.append("NVML poller did not stop within 10 s; killed")
        finally:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        try:
            data = (Path(self._dir) / "nvml.bin").read_bytes()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return self._series(data)

    def _series(self, data: bytes) -> list[MetricSeries]:
        names: list[str] = self._header["names"]
        units: list[str] = self._header["units"]
        body = data[data.index(b"\n") + 1:]
        dtype = np.dtype([("t", "<i8"), ("v", "<f8", (len(names),))])
        rows = np.frombuffer(body[:len(body) - len(body) % dtype.itemsize], dtype=dtype)
        host = rows["t"].astype(np.int64)
        (t0, o0), (t1, o1) = self._offsets[0], self._offsets[-1]
        if abs(o1 - o0) > OFFSET_DRIFT_WARN_NS:
            self.warnings.append(f"trace clock moved {(o1 - o0) / 1e6:.1f} ms against the host "
                                 "clock during the run; NVML samples placed by interpolation")
        span = max(t1 - t0, 1)
        offset = o0 + np.rint((host - t0) * ((o1 - o0) / span)).astype(np.int64)
        times = host + offset
        return nvml_series(self._device, times, rows["v"], list(zip(names, units, strict=True)))


class NvmlDefaultSampler:
    """:class:`perfdiff.collect.backends.MetricSampler`: the poller process, or the thread
    sampler where the poller cannot start (the reason is among the warnings). ``start``
    raises NvmlUnavailable when neither can."""

    name = "nvml"

    def __init__(self, device_index: int, clock_ns: Callable[[], int], interval_s: float = 0.01,
                 nvml: Any = None, uuid: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self._args = (device_index, clock_ns, interval_s)
        self._nvml = nvml
        self._env = env
        self._uuid = uuid
        self._inner: Any = None
        self.mode = ""

    @property
    def warnings(self) -> list[str]:
        return list(getattr(self._inner, "warnings", []))

    def start(self) -> None:
        device_index, clock_ns, interval_s = self._args
        proc = NvmlProcessSampler(device_index, clock_ns, interval_s, self._uuid, self._env)
        try:
            proc.start()
            self._inner, self.mode = proc, "process"
            return
        except NvmlUnavailable as exc:
            reason = str(exc)
        thread = NvmlSampler(device_index, clock_ns, interval_s, nvml=self._nvml, uuid=self._uuid)
        thread.warnings.append(f"{reason}; NVML polled from a thread of this process instead")
        thread.start()
        self._inner, self.mode = thread, "thread"

    def pause(self) -> None:
        if self._inner is not None:
            self._inner.pause()

    def resume(self) -> None:
        if self._inner is not None:
            self._inner.resume()

    def stop(self) -> list[MetricSeries]:
        if self._inner is None:
            return []
        series: list[MetricSeries] = self._inner.stop()
        return series


__all__ = ["NvmlDefaultSampler", "NvmlProcessSampler", "clock_offset_ns"]
