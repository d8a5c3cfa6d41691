"""CUPTI started when the user's program initialises CUDA, not at interpreter start.

Why: CUPTI touched in a process before CUDA is initialised there (activity enabled, or only
a callback subscribed) makes every later PM-sampling configuration fail with
CUPTI_ERROR_INVALID_PARAMETER (H100, CUPTI 13.4, 2026-11-25, scripts/gpu/pm_order_probe.py:
of fourteen orders tried, only those starting CUPTI after CUDA initialisation let PM
sampling configure). The child used to start activity at interpreter start, so PM sampling
was never available in user programs. No kernel can run before CUDA is initialised, so
starting at that moment loses no record.

When: PyTorch initialises CUDA lazily and runs the callables queued with
``torch.cuda._lazy_call`` right after ``torch._C._cuda_init()``, before any tensor exists
(every CUDA tensor's creation goes through it): the real backend starts there. A program that
reaches CUDA another way (CuPy, JAX, Numba, PyCUDA, TensorFlow) gets CUPTI as soon as one of
those is imported, which may be before CUDA is initialised: PM sampling may then be
unavailable, and the run file's warning says why. A cycle stamped before any of that needs
the trace clock, so it starts CUPTI at once (same consequence). A program that never reaches
CUDA ends with a warning and no kernels. A process forked from the program (a DataLoader
worker) inherits the hooks but never starts CUPTI.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from perfdiff.collect.cycles.import_hooks import when_imported
from perfdiff.collect.records import RawTrace

OTHER_CUDA_MODULES = ("cupy", "jax", "numba.cuda", "pycuda.driver", "tensorflow")
PM_NOTE = ("CUPTI started before CUDA was initialised ({reason}), so PM sampling is likely "
           "unavailable in this run (CUPTI refuses PM configurations once it was started "
           "before CUDA: docs/howto/collect.md)")


class DeferredTrace:
    """A :class:`perfdiff.collect.backends.TraceBackend` whose real backend (``factory()``)
    starts once the program initialises CUDA."""

    name = "cupti_activity"

    def __init__(self, factory: Callable[[], Any], *, pm_requested: bool = True,
                 detaches_cupti: bool = False) -> None:
        self._factory = factory
        # whether the real backend will detach CUPTI in pause (--detach-untraced): asked
        # before an untraced run (overhead.py), when the real one may not exist yet
        self.detaches_cupti = detaches_cupti
        self._pm_requested = pm_requested
        self._real: Any = None
        self._failed: str | None = None
        self._lock = threading.RLock()
        self._paused = False
        self._pid = os.getpid()
        self._notes: list[str] = []
        self._stopped = False
        self._clock: Callable[[], int] | None = None  # the real backend's, kept after stop
        self._stopped_real: Any = None  # the real backend once stopped (its ``detaches``)
        self.started_by: str | None = None

    @property
    def warnings(self) -> list[str]:
        real = list(getattr(self._real, "warnings", [])) if self._real is not None else []
        return self._notes + real

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        """Wait for CUDA: hooks on ``torch.cuda`` and the other CUDA libraries' imports."""
        hooks: dict[str, Callable[[ModuleType], None]] = {"torch.cuda": self._on_torch_cuda}
        hooks.update({name: self._on_other_library for name in OTHER_CUDA_MODULES})
        when_imported(hooks)

    def _on_torch_cuda(self, module: ModuleType) -> None:
        initialized = getattr(module, "is_initialized", None)
        if callable(initialized) and initialized():
            self.begin("torch had initialised CUDA before perfdiff's hook", pm_note=True)
            return
        lazy_call = getattr(module, "_lazy_call", None)
        if not callable(lazy_call):
            self.begin("this torch has no torch.cuda._lazy_call", pm_note=True)
            return
        lazy_call(self._from_torch_init)

    def _from_torch_init(self) -> None:
        """Inside torch's CUDA initialisation: nothing may escape into it."""
        try:
            self.begin("torch initialised CUDA")
        except Exception as exc:
            self._failed = f"{type(exc).__name__}: {exc}"

    def _on_other_library(self, module: ModuleType) -> None:
        self.begin(f"{module.__name__} was imported", pm_note=True)

    def begin(self, reason: str, *, pm_note: bool = False) -> None:
        """Start the real backend now (once, in the process that made this object)."""
        with self._lock:
            if (self._real is not None or self._failed is not None or self._stopped
                    or os.getpid() != self._pid):
                return
            try:
                real = self._factory()
                real.start()
            except Exception as exc:
                self._failed = f"{type(exc).__name__}: {exc}"
                self._notes.append(f"CUPTI activity tracing could not start ({self._failed}); "
                                   "no kernels recorded")
                return
            if self._paused:
                real.pause()
            self._real = real
            self._clock = real.clock_ns
            self.started_by = reason
            if pm_note and self._pm_requested:
                self._notes.append(PM_NOTE.format(reason=reason))

    # ------------------------------------------------------------------ the backend

    def clock_ns(self) -> int:
        if self._clock is None:
            self.begin("a cycle was stamped before the program initialised CUDA", pm_note=True)
        if self._clock is None:  # CUPTI could not start: no kernels to line up with
            return time.perf_counter_ns()
        return int(self._clock())

    def records_so_far(self) -> int:
        return int(self._real.records_so_far()) if self._real is not None else 0

    def drain(self) -> None:
        if self._real is not None:
            self._real.drain()

    def between_cycles(self) -> None:
        between = getattr(self._real, "between_cycles", None)
        if between is not None:
            between()

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            if self._real is not None:
                self._real.pause()

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            if self._real is not None:
                self._real.resume()

    def attach_for_samplers(self) -> None:
        """The real backend's (``cupti/detached.py``); nothing where it has none."""
        with self._lock:
            attach = getattr(self._real, "attach_for_samplers", None)
            if attach is not None:
                attach()

    @property
    def detaches(self) -> int:
        """How often the real backend detached CUPTI (``cupti/detached.py``); 0 if it never
        does, kept after stop."""
        real = self._real if self._real is not None else self._stopped_real
        return int(getattr(real, "detaches", 0) or 0)

    def stop_api_records(self) -> bool:
        """The real backend's ``stop_api_records`` (found_marks.py); False before it started
        or where it has none."""
        with self._lock:
            stop = getattr(self._real, "stop_api_records", None)
            return bool(stop()) if stop is not None else False

    def stop(self) -> RawTrace:
        with self._lock:
            real, self._real = self._real, None
            self._stopped = True
        if real is None:
            if self._failed is None:
                self._notes.append("the program never initialised CUDA through PyTorch or "
                                   f"imported {', '.join(OTHER_CUDA_MODULES)}; CUPTI was not "
                                   "started and no kernels were recorded")
            return RawTrace()
        raw: RawTrace = real.stop()
        self._stopped_real = real
        self._notes.extend(getattr(real, "warnings", []))
        return raw


__all__ = ["OTHER_CUDA_MODULES", "DeferredTrace"]
