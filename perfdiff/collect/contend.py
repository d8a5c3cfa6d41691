"""``--contend FRACTION``: a noisy neighbour keeps the same GPU busy with matrix products.

Why a duty cycle of matrix products: that is what a co-located job looks like, and it
changes no card setting. The neighbour runs bf16 matrix products for ``FRACTION`` of every
period (``--contend-period-ms``, default 50 ms) and sleeps for the rest. Two kinds:

- ``process`` (default): a second process. Without MPS the GPU time-slices between the two
  processes' contexts: our kernels do not run *beside* the neighbour's, they are paused for
  its time slice (~1 ms). Measured on the H200 and the H100: the pause lands mostly on the
  kernels that follow a GEMM, not on the GEMMs, so this models a time-shared GPU
  (docs/explanation/contention.md).
- ``stream``: a thread of the collecting process launches the products on its own CUDA
  stream, so they run *concurrently* with the workload's kernels and compete for SMs,
  tensor cores and DRAM: what MPS co-location, or a second model served by the same process,
  looks like. CUPTI sees the neighbour's kernels too (same process); the collector leaves
  them out of the run file (by CUPTI stream id) and says so in the run file's warnings,
  because a neighbour in another process would not be in our trace either.
- ``partition``: like ``stream``, but ``FRACTION`` is the share of the SMs the neighbour
  holds, all the time, with a tensor-core kernel of its own (``kernels/sm_holder.py``, one
  long-running program per held SM): an MPS co-tenant limited by
  ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, or a green context. Our kernels never wait for the
  whole GPU; the ones that need whole SMs (GEMMs, attention) get fewer of them, small
  elementwise blocks still fit beside the neighbour's.

The neighbour starts before the workload's setup, waits until its first products ran, and is
stopped when collection ends. Run the process kind as
``python -m perfdiff.collect.contend FRACTION DEVICE [PERIOD_MS]``.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal

from perfdiff.collect.cycles.boundary_marks import cupti_stream_ids
from perfdiff.errors import CollectorUnavailableError

PERIOD_MS = 50.0
MATRIX_SIZE = 4096
READY_TIMEOUT_S = 60.0
ContendMode = Literal["process", "stream", "partition"]
CONTEND_MODES: tuple[ContendMode, ...] = ("process", "stream", "partition")


class Contender:
    """Context manager owning the neighbour (no-op when fraction is 0).

    ``excluded_streams`` holds the CUPTI stream ids whose kernels are the neighbour's (stream
    kind only), for the collector to leave out of the run file.
    """

    def __init__(self, fraction: float, device_index: int, *, mode: ContendMode = "process",
                 period_ms: float = PERIOD_MS) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"--contend must be between 0 and 1, got {fraction}")
        if mode not in CONTEND_MODES:
            raise ValueError(f"--contend-mode must be one of {', '.join(CONTEND_MODES)}, "
                             f"got {mode!r}")
        if not period_ms > 0.0:
            raise ValueError(f"--contend-period-ms must be positive, got {period_ms}")
        self.fraction = fraction
        self.device_index = device_index
        self.mode = mode
        self.period_ms = period_ms
        self.excluded_streams: tuple[int, ...] = ()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: _StreamNeighbour | None = None

    def __enter__(self) -> Contender:
        if self.fraction <= 0.0:
            return self
        if self.mode in ("stream", "partition"):
            self._thread = _StreamNeighbour(self.fraction, self.device_index,
                                            self.period_ms / 1e3, self.mode)
            self.excluded_streams = self._thread.begin()
            return self
        argv = [sys.executable, "-m", "perfdiff.collect.contend", repr(self.fraction),
                str(self.device_index), repr(self.period_ms)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()  # "ready" after the first products ran
        if line.strip() != b"ready":
            self._stop()
            raise CollectorUnavailableError(
                f"the --contend helper process failed to start (said {line!r}); "
                "run without --contend or check that torch sees the GPU"
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.end()
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class _StreamNeighbour:  # pragma: no cover - GPU only
    """The in-process kinds: a daemon thread running the neighbour on its own CUDA stream."""

    def __init__(self, fraction: float, device_index: int, period_s: float,
                 mode: ContendMode) -> None:
        self._fraction = fraction
        self._device_index = device_index
        self._period_s = period_s
        self._mode = mode
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._failure: str | None = None
        self._stream_ids: tuple[int, ...] = ()
        self._thread = threading.Thread(target=self._main, name="perfdiff-contend", daemon=True)

    def begin(self) -> tuple[int, ...]:
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_S) or self._failure is not None:
            self.end()
            raise CollectorUnavailableError(
                f"the --contend-mode {self._mode} neighbour failed to start "
                f"({self._failure or 'timed out'}); run without --contend"
            )
        return self._stream_ids

    def end(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _main(self) -> None:
        try:
            torch: Any = importlib.import_module("torch")  # typed Any: GPU-only code path
            device = torch.device("cuda", self._device_index)
            stream = torch.cuda.Stream(device=device)
            with torch.cuda.stream(stream):
                burst, time_share = self._prepare(torch, device, stream)
            stream.synchronize()
            self._stream_ids = cupti_stream_ids(int(stream.cuda_stream))
        except Exception as exc:
            self._failure = f"{type(exc).__name__}: {exc}"
            self._ready.set()
            return
        self._ready.set()
        with torch.cuda.stream(stream):
            duty_cycle(time_share, self._period_s, burst, self._stop)
        stream.synchronize()

    def _prepare(self, torch: Any, device: Any, stream: Any) -> tuple[Callable[[], None], float]:
        """The burst to repeat and the share of time to repeat it (after one run of it)."""
        if self._mode == "partition":
            from perfdiff.collect.kernels.sm_holder import SmHolder

            sm_count = int(torch.cuda.get_device_properties(device).multi_processor_count)
            holder = SmHolder(max(1, round(self._fraction * sm_count)), device)
            iters = holder.iters_for(self._period_s, stream)

            def hold() -> None:
                holder.launch(iters)
                stream.synchronize()  # releases the GIL while the GPU works
            return hold, 1.0
        a, b = _operands(torch, device)
        c = a @ b

        def products() -> None:
            for _ in range(4):
                torch.matmul(a, b, out=c)
            stream.synchronize()  # releases the GIL while the GPU works
        return products, self._fraction


def duty_cycle(time_share: float, period_s: float, burst: Callable[[], None],
               stop: threading.Event) -> None:
    """Repeat ``burst`` for ``time_share`` of every period and idle for the rest, until
    ``stop`` is set: the one loop behind every neighbour kind."""
    busy_s = period_s * time_share
    while not stop.is_set():
        period_start = time.perf_counter()
        while time.perf_counter() - period_start < busy_s and not stop.is_set():
            burst()
        rest = period_s - (time.perf_counter() - period_start)
        if rest > 0:
            stop.wait(rest)


def _operands(torch: Any, device: Any) -> tuple[Any, Any]:  # pragma: no cover - GPU only
    # PERFDIFF_CONTEND_MATRIX: an experiment knob (scripts/gpu/contend_probe.sh), not a setting
    n = int(os.environ.get("PERFDIFF_CONTEND_MATRIX", MATRIX_SIZE))
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    return a, b


def _contend(fraction: float, device_index: int, period_s: float) -> None:  # pragma: no cover
    import torch

    device = torch.device("cuda", device_index)
    a, b = _operands(torch, device)
    torch.cuda.synchronize()
    (a @ b).sum().item()
    print("ready", flush=True)

    def products() -> None:
        for _ in range(4):
            a @ b
        torch.cuda.synchronize()
    duty_cycle(fraction, period_s, products, threading.Event())  # runs until terminated


if __name__ == "__main__":  # pragma: no cover - child process entry point
    _contend(float(sys.argv[1]), int(sys.argv[2]),
             (float(sys.argv[3]) if len(sys.argv) > 3 else PERIOD_MS) / 1e3)
