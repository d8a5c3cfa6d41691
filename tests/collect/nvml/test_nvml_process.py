"""NVML polled from its own process (nvml_process.py, nvml_poller.py), over a stand-in
``pynvml`` module that the poller imports from PYTHONPATH."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from perfdiff.collect.nvml.nvml_process import (
    NvmlDefaultSampler,
    NvmlProcessSampler,
    clock_offset_ns,
)
from perfdiff.collect.nvml.sampler import NvmlUnavailable

ROOT = Path(__file__).resolve().parents[3]
FAKE_PYNVML = textwrap.dedent("""
    from types import SimpleNamespace
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    def nvmlInit():
        pass
    def nvmlDeviceGetHandleByIndex(i):
        return f"h{i}"
    def nvmlDeviceGetHandleByUUID(u):
        raise RuntimeError("uuid lookup refused")
    def nvmlDeviceGetClockInfo(h, kind):
        return 1980 if kind == NVML_CLOCK_SM else 3201
    def nvmlDeviceGetUtilizationRates(h):
        return SimpleNamespace(gpu=97)
    def nvmlDeviceGetMemoryInfo(h):
        return SimpleNamespace(used=123)
    def nvmlDeviceGetPowerUsage(h):
        raise RuntimeError("Not Supported")
    def nvmlDeviceGetTemperature(h, kind):
        return 41
    def nvmlDeviceGetCurrentClocksEventReasons(h):
        return 4
""")
SHIFT = 5_000_000_000  # the stand-in trace clock runs 5 s ahead of perf_counter


def _env(tmp: Path, module: str | None) -> dict[str, str]:
    if module is not None:
        (tmp / "pynvml.py").write_text(module)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp), str(ROOT)])
    env["PERFDIFF_INJECT_CONFIG"] = "{}"  # dropped for the poller: it must not record itself
    return env


def _clock() -> int:
    return time.perf_counter_ns() + SHIFT


def test_the_poller_samples_beside_the_program_on_the_trace_clock(tmp_path: Path) -> None:
    sampler = NvmlProcessSampler(0, _clock, 0.005, uuid="GPU-x", env=_env(tmp_path, FAKE_PYNVML))
    before = _clock()
    sampler.start()
    time.sleep(0.1)
    series = {s.name: s for s in sampler.stop()}
    after = _clock()
    assert "nvml.power" not in series
    assert any("nvml.power unavailable (Not Supported)" in w for w in sampler.warnings)
    assert set(series["nvml.sm_clock"].values.tolist()) == {1980.0}
    assert set(series["nvml.throttle_reasons"].values.tolist()) == {4.0}
    ts = series["nvml.temperature"].timestamps_ns
    assert ts.size >= 5 and bool(np.all(np.diff(ts) > 0))
    assert before - 1_000_000_000 < ts[0] and ts[-1] <= after + 1_000_000  # on the trace clock
    assert all(s.source == "nvml" and s.device == 0 for s in series.values())


def test_a_poller_that_cannot_read_nvml_says_why(tmp_path: Path) -> None:
    broken = FAKE_PYNVML.replace("def nvmlInit():\n    pass",
                                 "def nvmlInit():\n    raise RuntimeError('driver not loaded')")
    sampler = NvmlProcessSampler(0, _clock, 0.005, env=_env(tmp_path, broken))
    with pytest.raises(NvmlUnavailable, match="driver not loaded"):
        sampler.start()


def test_without_a_poller_nvml_is_polled_from_a_thread(tmp_path: Path) -> None:
    """No pynvml for the poller to import: the thread sampler takes over, saying why."""
    import importlib.util

    source = tmp_path / "fake_pynvml_here.py"
    source.write_text(FAKE_PYNVML)
    spec = importlib.util.spec_from_file_location("fake_pynvml_here", source)
    assert spec is not None and spec.loader is not None
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    env = _env(tmp_path, None)
    if importlib.util.find_spec("pynvml") is not None:
        (tmp_path / "pynvml.py").write_text("raise ImportError('hidden for this test')\n")
    sampler = NvmlDefaultSampler(0, _clock, 0.005, nvml=fake, env=env)
    sampler.start()
    time.sleep(0.02)
    series = sampler.stop()
    assert sampler.mode == "thread"
    assert any("polled from a thread" in w for w in sampler.warnings)
    assert {s.name for s in series} >= {"nvml.sm_clock", "nvml.temperature"}


def test_clock_offset_is_read_from_the_tightest_bracket() -> None:
    offset = clock_offset_ns(_clock)
    assert abs(offset - SHIFT) < 1_000_000


def test_a_forked_worker_holding_the_pipe_does_not_delay_the_stop(tmp_path: Path) -> None:
    """A DataLoader-style worker forked from the program inherits the poller's stdin pipe;
    the stop (SIGTERM) must not wait for that worker."""
    sampler = NvmlProcessSampler(0, _clock, 0.005, env=_env(tmp_path, FAKE_PYNVML))
    sampler.start()
    child = os.fork()
    if child == 0:  # the worker: holds every descriptor of the program for a while
        time.sleep(5)
        os._exit(0)
    try:
        began = time.monotonic()
        series = sampler.stop()
        assert time.monotonic() - began < 3.0
        assert series and not any("killed" in w for w in sampler.warnings)
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_a_paused_poller_skips_its_polls_until_resumed(tmp_path: Path) -> None:
    """Untraced cycles pause the poller (collect/cycles/overhead.py): no NVML reads in between."""
    sampler = NvmlProcessSampler(0, _clock, 0.005, env=_env(tmp_path, FAKE_PYNVML))
    sampler.start()
    time.sleep(0.05)
    sampler.pause()
    paused_at = _clock()
    time.sleep(0.3)
    resumed_at = _clock()
    sampler.resume()
    time.sleep(0.05)
    ts = sampler.stop()[0].timestamps_ns
    inside = ts[(ts > paused_at + 20_000_000) & (ts < resumed_at)]
    assert inside.size == 0
    assert (ts < paused_at).sum() >= 3 and (ts > resumed_at).sum() >= 3


def test_the_stop_signal_is_not_swallowed_by_a_failing_read() -> None:
    """SIGTERM lands inside an NVML read more often than anywhere else; ``read_row`` turns a
    read's Exception into NaN, so the poller's stop must get through it (a stop swallowed
    there kept the poller polling until the parent killed it after 10 s)."""
    from perfdiff.collect.nvml.nvml_poller import _stop, _Stopped
    from perfdiff.collect.nvml.sampler import NvmlQuantity, read_row

    def read(nv: object, handle: object) -> float:
        _stop(signal.SIGTERM, None)  # the signal handler, run as the signal would run it
        return 0.0

    with pytest.raises(_Stopped):
        read_row([NvmlQuantity("nvml.sm_clock", "MHz", read)], None, None)
