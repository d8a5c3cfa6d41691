"""Untraced runs with CUPTI detached: one activity backend per traced stretch (opt-in).

Why: an untraced cycle with CUPTI attached and every activity kind off still costs a program
that waits on its host: ResNet-50 AMP steps, one process, blocks alternated (H200,
2026-11-28, ``bench/record_truth/detach_probe.py``): 29.6 ms before CUPTI, 33.6 ms attached
with the kinds off, 29.4 ms after ``cuptiFinalize``. That residue is different in every
process and every variant, so it reaches the compare of two host-bound variants (issue 28).

How: at the switch-off (``pause``) the GPU is synchronised first (the backend's pause flushes
with force, and a kernel still queued would come back without its times: ``pause``), the
stretch's backend is paused and stopped (flushed, its buffers decoded, its kernel names read:
the raw intake keeps names as addresses of CUPTI's strings, which a finalize may free), the
host clock's offset to CUPTI's is taken, and CUPTI is finalised. The clock then reads
``perf_counter_ns`` plus that offset, without touching CUPTI (a CUPTI call from another
thread racing ``cuptiFinalize`` is what crashed Kineto: pytorch/kineto#686; the samplers are
paused first, and PM's drain holds its decodes). At the switch-on (``resume``) a new backend
starts, attaching CUPTI again; before the samplers stop, a run that ended detached attaches
once more (``attach_for_samplers``: PM's stop failed detached). At ``stop`` the stretches are
joined: names re-keyed by text and each stretch's correlation ids moved past the previous
stretch's (CUPTI restarts them at 1 after a finalize; moved, ids keep their launch order and
stay unique, which the boundary marks and the launch records need).

What the lent H100 answered (2026-12-07, ``detach_probe.py``; bench/README.md, issue 28): PM
sampling samples on through a finalize, correlation ids restart, kernel names stay readable
after a finalize and are not reused by a new attach, and the stream ids stay the same.

Costs, all outside cycles (the schedule times them as switches, ``untraced_schedule.py``):
the synchronise, the stretch's decode (11-130 ms per stretch of steps measured), the finalize
(2-3 ms) and the new attach (5-24 ms). Still opt-in behind ``--detach-untraced``: host-bound
programs of long steps gain (timm ViT-S bf16 1.50 x -> 1.10 x bare), runs of short cycles lose
(a 0.24 ms graph replay: 1.31 x -> 1.52 x).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from perfdiff.collect.columns import TraceColumns, concat
from perfdiff.collect.records import RawTrace

_U32 = 2**32


class DetachingTrace:
    """A :class:`perfdiff.collect.backends.TraceBackend` that detaches CUPTI in ``pause``.

    ``open_backend(launch_records)``: a new, unstarted activity backend;
    ``finalize``: ``cuptiFinalize``; ``synchronize``: waits for the GPU (``cuCtxSynchronize``).
    A step that fails leaves CUPTI attached from then on (the untraced cycles are then as
    before: attached, kinds off), with one warning saying why."""

    name = "cupti_activity"
    # its pause must not run beside another thread's call into CUPTI (overhead.py waits for
    # samplers' work under way before an untraced run)
    detaches_cupti = True

    def __init__(self, open_backend: Callable[[bool], Any], *, launch_records: bool,
                 finalize: Callable[[], object], synchronize: Callable[[], object],
                 host_clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self._open = open_backend
        self._launch_records = launch_records
        self._finalize = finalize
        self._synchronize = synchronize
        self._host_clock = host_clock
        self._inner: Any = open_backend(launch_records)
        self._parts: list[RawTrace] = []
        self._done_warnings: list[str] = []  # the stopped stretches' backends' warnings
        self._offset = 0  # CUPTI's clock minus the host clock, taken at the last detach
        self._detached = False
        self._detaches = 0
        self._gave_up = ""  # why detaching stopped; "" while it works
        self._stopped = False
        self._retired: list[object] = []  # stopped backends' C callbacks, kept alive

    @property
    def warnings(self) -> list[str]:
        own = [f"untraced cycles ran with CUPTI attached from a point on: {self._gave_up}"
               ] if self._gave_up else []
        return [*self._done_warnings, *getattr(self._inner, "warnings", []), *own]

    @property
    def detaches(self) -> int:
        """How many times CUPTI was detached (``cupti_detached`` in the run file's
        ``untraced_pause`` where any)."""
        return self._detaches

    def clock_ns(self) -> int:
        if self._detached:
            return self._host_clock() + self._offset
        return int(self._inner.clock_ns())

    def start(self) -> None:
        self._inner.start()

    def records_so_far(self) -> int:
        done = sum(_records(part) for part in self._parts)
        return done + (0 if self._detached else int(self._inner.records_so_far()))

    def drain(self) -> None:
        if not self._detached:
            self._inner.drain()

    def between_cycles(self) -> None:
        between = getattr(self._inner, "between_cycles", None)
        if between is not None and not self._detached:
            between()

    def stop_api_records(self) -> bool:
        """The launch records end for the rest of the run (found_marks.py): this stretch's
        backend stops them, and the next stretches' start without them."""
        were_on, self._launch_records = self._launch_records, False
        if self._detached:  # no backend now: the next stretch's starts without them
            return were_on
        stop = getattr(self._inner, "stop_api_records", None)
        return bool(stop()) if stop is not None else False

    def pause(self) -> None:
        """The GPU synchronised, tracing off (the backend's own pause), then CUPTI detached
        (module docstring).

        Why synchronised first: the backend's pause flushes CUPTI's buffers with force, and
        a kernel still queued then comes back as a record without its times; attached, CUPTI
        completes such records later, but a detached stretch has no later. On the H100
        (2026-12-07) a GPU-bound program's boundary marks came back so (GPU start 0: the
        clock check read -5e8 x)."""
        detach = not (self._gave_up or self._detached)
        if detach:
            try:
                self._synchronize()
            except Exception as exc:  # CUPTI stays attached, with its kinds off, as before
                self._give_up(f"the GPU could not be synchronised ({type(exc).__name__}: {exc})")
                detach = False
        self._inner.pause()
        if not detach:
            return
        offset = self._offset_now()
        try:
            self._parts.append(self._inner.stop())
        except Exception as exc:  # its records are lost; the next stretches still record
            self._give_up(f"a traced stretch's records could not be taken in "
                          f"({type(exc).__name__}: {exc}); they are missing")
            self._attach(paused=True)
            return
        self._done_warnings.extend(getattr(self._inner, "warnings", []))
        retire = getattr(self._inner, "retire", None)
        if retire is not None:
            self._retired.append(retire())
        self._offset, self._detached = offset, True  # before finalize: no clock read needs CUPTI
        try:
            self._finalize()
        except Exception as exc:
            self._detached = False
            self._give_up(f"cuptiFinalize failed ({type(exc).__name__}: {exc})")
            self._attach(paused=True)
            return
        self._detaches += 1

    def resume(self) -> None:
        """Tracing on: a new backend where CUPTI was detached (the clock stays on the host
        until it has started: an attach that fails leaves the run untraced from here, and the
        caller says so), else the backend's own resume."""
        if not self._detached:
            self._inner.resume()
            return
        try:
            self._attach(paused=False)
        except Exception as exc:
            self._give_up(f"CUPTI could not attach again ({type(exc).__name__}: {exc}); "
                          "no kernel after it was recorded")
            raise
        self._detached = False

    def attach_for_samplers(self) -> None:
        """CUPTI attached (paused) before the samplers stop: PM sampling's stop answered
        ERROR_UNKNOWN where the run ended detached and its values were lost (H100,
        2026-12-07), and stopped fine after an attach (detach_probe.py). The stretch records
        nothing; a failed attach is a warning, and PM's own stop then says what it lost."""
        if not self._detached or self._stopped:
            return
        try:
            self._attach(paused=True)
        except Exception as exc:
            self._give_up(f"CUPTI could not attach again before the samplers stopped "
                          f"({type(exc).__name__}: {exc})")
            return
        self._detached = False

    def _attach(self, *, paused: bool) -> None:
        """A new stretch's backend, started (CUPTI attaches again); paused where the cycle
        about to run is untraced."""
        self._inner = self._open(self._launch_records)
        self._inner.start()
        if paused:
            self._inner.pause()

    def _offset_now(self) -> int:
        """CUPTI's clock minus the host's, read while the stretch's backend is still there
        (the clock reads the host plus this once it is gone)."""
        return int(self._inner.clock_ns()) - self._host_clock()

    def _give_up(self, why: str) -> None:
        self._gave_up = self._gave_up or why

    def stop(self) -> RawTrace:
        """Every stretch's records, joined (module docstring)."""
        if not self._stopped:
            self._stopped = True
            if not self._detached:  # the clock goes on from the host: the run file's end,
                offset = self._offset_now()  # NVML's, are read later
                self._parts.append(self._inner.stop())
                self._done_warnings.extend(getattr(self._inner, "warnings", []))
                self._inner = None
                self._offset, self._detached = offset, True
        return join_stretches(self._parts)


def _records(raw: RawTrace) -> int:
    cols = raw.columns
    count = len(raw.kernels) + len(raw.api) + len(raw.memcpy) + len(raw.memset)
    if cols is not None:
        count += cols.kernels.size + cols.api.size + cols.memcpy.size + cols.memset.size
    return count


def join_stretches(parts: list[RawTrace]) -> RawTrace:
    """One RawTrace from the stretches' own, in order (module docstring): kernel names keyed
    by their text (negative keys, as tuple-built records have), correlation ids moved so that
    each stretch's start after the previous stretch's last (0, no correlation, stays 0)."""
    if len(parts) == 1:
        return parts[0]
    keys: dict[str, int] = {}
    columns: list[TraceColumns] = []
    floor = 0  # the next stretch's ids start above this
    for part in parts:
        cols = part.as_columns()
        cols = TraceColumns(kernels=cols.kernels.copy(), memcpy=cols.memcpy.copy(),
                            memset=cols.memset.copy(), api=cols.api.copy(), names=cols.names)
        _rekey(cols, keys)
        floor = _move_ids(cols, floor)
        columns.append(cols)
    joined = concat(columns)
    joined.names = {key: name for name, key in keys.items()}
    out = RawTrace(columns=joined)
    for part in parts:
        out.add_tallies(part)
    return out


def _rekey(cols: TraceColumns, keys: dict[str, int]) -> None:
    """Name keys of ``cols`` replaced by the key of their text in ``keys`` (added as met)."""
    old = cols.kernels["name_key"]
    if old.size == 0:
        return
    distinct, inverse = np.unique(old, return_inverse=True)
    new = np.asarray([keys.setdefault(cols.names.get(int(k), ""), -1 - len(keys))
                      for k in distinct.tolist()], dtype=np.int64)
    cols.kernels["name_key"] = new[inverse]


def _move_ids(cols: TraceColumns, floor: int) -> int:
    """Shift the stretch's nonzero correlation ids so the smallest is above ``floor`` (none
    where they already are); the largest id after the shift."""
    tables = (cols.kernels, cols.memcpy, cols.memset, cols.api)
    ids = [t["correlation_id"].astype(np.int64) for t in tables if t.size]
    nonzero = [a[a > 0] for a in ids]
    low = min((int(a.min()) for a in nonzero if a.size), default=None)
    high = max((int(a.max()) for a in nonzero if a.size), default=0)
    if low is None:
        return floor
    shift = floor + 1 - low if low <= floor else 0
    if high + shift >= _U32:
        raise OverflowError("correlation ids of the joined stretches pass 2**32; record "
                            "fewer untraced runs (--untraced-every) or without "
                            "--detach-untraced")
    if shift:
        for table in tables:
            corr = table["correlation_id"]
            table["correlation_id"] = np.where(corr > 0, corr.astype(np.int64) + shift,
                                               0).astype(np.uint32)
    return high + shift


_libcuda: ctypes.CDLL | None = None


def cuda_context_synchronize() -> None:
    """``cuCtxSynchronize`` on the calling thread's current context (the program's, at a
    cycle boundary), through the driver library every CUDA program has loaded: no torch."""
    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
    status = int(_libcuda.cuCtxSynchronize())
    if status != 0:
        raise RuntimeError(f"cuCtxSynchronize returned CUDA error {status}")


def open_detaching(open_backend: Callable[[bool], Any], *, launch_records: bool,
                   cupti: Any) -> DetachingTrace:
    """The detaching trace on cupti-python's ``finalize`` and the driver's synchronise."""
    return DetachingTrace(open_backend, launch_records=launch_records,
                          finalize=cupti.finalize, synchronize=cuda_context_synchronize)


__all__ = ["DetachingTrace", "cuda_context_synchronize", "join_stretches", "open_detaching"]
