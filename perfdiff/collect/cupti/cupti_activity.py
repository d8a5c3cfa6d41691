"""CUPTI activity tracing: kernels, memcpy, memset, launch API calls.

Intake: CUPTI's buffers are taken over raw and decoded with numpy (``raw_intake.py``,
``decode.py``): no Python object per record while the program runs. Where this CUPTI's record
layout is not one perfdiff has checked, the backend says so in one warning and falls back to
cupti-python's own callback, which builds an object per record (correct, but it holds the
interpreter for ~0.5-1 s per full 32 MiB buffer: H100, 2026-11-24).

Only launch-type runtime API calls (launch, memcpy, memset, graph launch) are recorded: they
are what cycle assignment needs (see ``cycles.py``); recording every ``cudaGetDevice`` that
frameworks call would cost time for nothing. ``trace_api=False`` drops the launch records too
(kernels are then assigned to cycles by their GPU start, with a warning): it exists to measure
what the API records cost (bench/overhead.py), not as a user setting.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

from perfdiff.collect.cupti.decode import RecordLayoutError
from perfdiff.collect.cupti.raw_intake import RawIntake
from perfdiff.collect.cupti.spool import SPOOL_SUFFIX, SpoolError
from perfdiff.collect.records import ApiRecord, KernelRecord, RawTrace, TransferRecord
from perfdiff.errors import CollectorUnavailableError

BUFFER_BYTES = 32 * 1024 * 1024
_API_KEEP = ("Launch", "Memcpy", "Memset")

INSTALL_HINT = "install it with: pip install 'perfdiff[collect]' (cupti-python>=13.4)"


def import_cupti() -> Any:
    """The ``cupti.cupti`` bindings module, or a one-line CollectorUnavailableError."""
    try:
        from cupti import cupti
    except ImportError as exc:
        raise CollectorUnavailableError(
            f"cupti-python is not installed or cannot load libcupti ({exc}); {INSTALL_HINT}"
        ) from None
    return cupti


class CuptiActivityBackend:
    """:class:`perfdiff.collect.backends.TraceBackend` on CUPTI's activity API."""

    name = "cupti_activity"

    def __init__(self, *, trace_memory: bool = True, trace_api: bool = True,
                 raw_intake: bool = True, spool_dir: str | None = None) -> None:
        """``spool_dir``: write CUPTI's completed buffers to a spool file there and decode
        them at stop (``spool.py``: no decode while the program runs); None decodes them as
        they come (built-in workloads, which drain between their cycles)."""
        self._cupti = import_cupti()
        self._spool_dir = spool_dir
        self._trace_memory = trace_memory
        self._trace_api = trace_api
        self._raw = RawTrace()
        self._enabled: list[Any] = []
        self._kept_api: list[tuple[Any, int]] = []  # (toggle, call id) of the kept API records
        self._delivered = 0
        self.warnings: list[str] = []
        self._keep_buffers: list[Any] = []
        self.intake: RawIntake | None = None
        if raw_intake:
            try:
                self.intake = RawIntake.for_cupti(self._cupti, self.clock_ns)
            except RecordLayoutError as exc:
                self.warnings.append(f"{exc}; records taken in through cupti-python's objects "
                                     "instead (slower: they hold the interpreter)")

    def clock_ns(self) -> int:
        return int(self._cupti.get_timestamp())

    def records_so_far(self) -> int:
        return self.intake.records if self.intake is not None else self._delivered

    def drain(self) -> None:
        """Force CUPTI to hand over its buffers now; returns once they are taken in (CUPTI runs
        the callback on its own thread while this one waits: H100, 2026-11-24).

        Why: a full 32 MiB buffer (about 136,000 kernel records) is otherwise handed over by a
        CUPTI thread whenever it fills, and turning it into records holds the interpreter for
        about half a second (H100, 2026-11-24: 485-589 ms), stalling whatever cycle is running.
        Between cycles of a workload that synchronizes, the stall lands outside every cycle.
        """
        self._cupti.activity_flush_all(1)

    def start(self) -> None:
        cupti = self._cupti
        kinds = [cupti.ActivityKind.CONCURRENT_KERNEL]
        if self._trace_api:
            kinds += [cupti.ActivityKind.RUNTIME, cupti.ActivityKind.DRIVER]
        if self._trace_memory:
            kinds += [cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET]
        try:
            if self.intake is not None:
                self._attach_spool(self.intake)
                self.intake.register()
            else:
                cupti.activity_register_callbacks(self._buffer_requested,
                                                  self._buffer_completed)
            for kind in kinds:
                cupti.activity_enable(kind)
                self._enabled.append(kind)
        except cupti.cuptiError as exc:
            self._disable()
            raise CollectorUnavailableError(
                f"CUPTI activity tracing could not start ({exc}); check that the NVIDIA "
                "driver is loaded and matches the CUDA/CUPTI version"
            ) from None
        if self._trace_api:
            self._restrict_api_records()

    def _attach_spool(self, intake: RawIntake) -> None:
        """The spool file in ``spool_dir`` (one per process); a warning if it cannot be made."""
        if self._spool_dir is None:
            return
        path = Path(self._spool_dir) / f"pid{os.getpid()}{SPOOL_SUFFIX}"
        try:
            intake.attach_spool(path)
        except (SpoolError, OSError) as exc:
            self.warnings.append(f"cannot create the activity spool {path} ({exc}); buffers "
                                 "are decoded as CUPTI hands them over (holds the interpreter "
                                 "inside cycles)")

    def retire(self) -> object:
        """After ``stop`` and ``cuptiFinalize`` (``detached.py``): what must outlive this
        backend (the raw intake's C callbacks), its buffers freed."""
        return self.intake.retire() if self.intake is not None else None

    def between_cycles(self) -> None:
        """A cycle has ended (``CycleLog.on_cycle_end``): decode the buffers completed since,
        now, on the program's thread, outside every cycle; and from now on keep completed
        buffers for this call instead of decoding them as CUPTI hands them over
        (``RawIntake.defer``). Why only once a cycle has ended: a program whose cycles are
        found at exit (or cut into fixed windows) never calls this, and its buffers are
        decoded as they come, never piled up."""
        if self.intake is not None:
            self.intake.defer = True
            self.intake.decode_pending()

    def pause(self) -> None:
        """Switch tracing off for an untraced cycle (overhead.py), after a forced flush.

        Why the flush: CUPTI finalises the records of kernels replayed from a CUDA graph
        late; switched off first, the last traced replay's kernels got their start from that
        replay and their end from the next, untraced one (H100, 2026-11-28, CUPTI 13.4:
        scripts/gpu/graph_probe.py), overlapping on one stream. ``stream_overlap`` drops any
        such record that still gets through. The buffers the flush completes are parked, not
        decoded here (``RawIntake.defer``): decoding them held the interpreter ~8 ms before
        the untraced cycle (timm ViT-S, H100 2026-11-28), time in which the GPU ran ahead and
        the untraced cycle waited less.

        What is switched off: the kernel, memcpy and memset kinds, and the launch API
        records (their ~260 kept call ids, not the kinds: re-enabling the RUNTIME and DRIVER kinds
        records every API call again, and restricting them anew is ~1,500 CUPTI calls, ~6 ms
        of host time after each untraced cycle)."""
        intake = self.intake
        parked = intake.defer if intake is not None else False
        if intake is not None:
            intake.defer = True
        try:
            self._cupti.activity_flush_all(1)
        finally:
            if intake is not None:
                intake.defer = parked
        for kind in self._record_kinds():
            self._cupti.activity_disable(kind)
        self._toggle_kept_api(0)

    def resume(self) -> None:
        """Switch tracing on again: the kinds and the launch API records ``pause`` stopped."""
        for kind in self._record_kinds():
            self._cupti.activity_enable(kind)
        self._toggle_kept_api(1)

    def stop_api_records(self) -> bool:
        """Switch the RUNTIME and DRIVER kinds off for the rest of the run (boundary marks
        give the launch records from here: ``found_marks.py``); True if they were on.

        Why off and not only their call ids: with the kinds on, every CUDA API call goes
        through CUPTI's recording path even where its id is off (timm ViT-S bf16 step, one
        process, H200 2026-11-28: 35.6 ms untraced with the kinds on and their ids off,
        31.2 ms with every kind off; 40.7 ms traced with them, 32.7 ms with the kernel kind
        alone: ``bench/record_truth/cost_probe.py``)."""
        api = {self._cupti.ActivityKind.RUNTIME, self._cupti.ActivityKind.DRIVER}
        kinds = [kind for kind in self._enabled if kind in api]
        for kind in kinds:
            self._cupti.activity_disable(kind)
        self._enabled = [kind for kind in self._enabled if kind not in api]
        self._kept_api = []
        self._trace_api = False
        return bool(kinds)

    def _record_kinds(self) -> list[Any]:
        """The enabled kinds other than the API ones (those stay on, with their ids off)."""
        api = {self._cupti.ActivityKind.RUNTIME, self._cupti.ActivityKind.DRIVER}
        return [kind for kind in self._enabled if kind not in api]

    def _toggle_kept_api(self, on: int) -> None:
        for toggle, value in self._kept_api:
            try:
                toggle(value, on)
            except self._cupti.cuptiError:
                continue

    def _restrict_api_records(self) -> None:
        """Keep API records only for launch/memcpy/memset calls (see module docstring)."""
        cupti = self._cupti
        tables = [
            (getattr(cupti, "RuntimeApiTraceCbid", None), cupti.activity_enable_runtime_api),
            (getattr(cupti, "DriverApiTraceCbid", None), cupti.activity_enable_driver_api),
        ]
        self._kept_api = []
        for enum_cls, toggle in tables:
            if enum_cls is None:
                continue
            for member in enum_cls:
                if member.value <= 0 or member.name.endswith(("SIZE", "FORCE_INT", "INVALID")):
                    continue
                keep = any(word in member.name for word in _API_KEEP)
                try:
                    toggle(int(member.value), 1 if keep else 0)
                except cupti.cuptiError:
                    continue
                if keep:
                    self._kept_api.append((toggle, int(member.value)))

    def _buffer_requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def _buffer_completed(self, activities: list[Any]) -> None:
        started = self.clock_ns()
        self._take_in(activities)
        self._raw.handovers.append((started, self.clock_ns(), len(activities)))

    def _take_in(self, activities: list[Any]) -> None:
        cupti = self._cupti
        kernel_kind = int(cupti.ActivityKind.CONCURRENT_KERNEL)
        api_kinds = (int(cupti.ActivityKind.RUNTIME), int(cupti.ActivityKind.DRIVER))
        memcpy_kind = int(cupti.ActivityKind.MEMCPY)
        memset_kind = int(cupti.ActivityKind.MEMSET)
        raw = self._raw
        for a in activities:
            kind = int(a.kind)
            if kind == kernel_kind:
                raw.kernels.append(KernelRecord(
                    str(a.name), int(a.device_id), int(a.stream_id), int(a.start), int(a.end),
                    int(a.correlation_id), (int(a.grid_x), int(a.grid_y), int(a.grid_z)),
                    (int(a.block_x), int(a.block_y), int(a.block_z)),
                ))
            elif kind in api_kinds:
                raw.api.append(ApiRecord(int(a.correlation_id), int(a.start)))
            elif kind == memcpy_kind:
                raw.memcpy.append(TransferRecord(
                    _copy_kind_text(cupti, int(a.copy_kind)), int(a.bytes), int(a.device_id),
                    int(a.stream_id), int(a.start), int(a.end), int(a.correlation_id),
                ))
            elif kind == memset_kind:
                raw.memset.append(TransferRecord(
                    "memset", int(a.bytes), int(a.device_id), int(a.stream_id), int(a.start),
                    int(a.end), int(a.correlation_id),
                ))
        self._delivered += len(activities)

    def stop(self) -> RawTrace:
        cupti = self._cupti
        try:
            cupti.activity_flush_all(1)
        finally:
            self._raw.dropped_records += self._dropped()
            self._disable()
        raw, self._raw = self._raw, RawTrace()
        intake = self.intake
        if intake is not None:
            raw.columns = intake.columns()
            raw.handovers = list(intake.handovers)
            raw.deferred_ns = intake.deferred_ns
            raw.after_run_ns = intake.stop_decode_ns
            raw.spool_write_ns = intake.spool_write_ns
            self.warnings.extend(dict.fromkeys(intake.errors))
            intake.chunks = []
        return raw

    def _dropped(self) -> int:
        counter = ctypes.c_size_t(0)
        try:
            self._cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(counter))
        except Exception as exc:  # a count we cannot read is a warning, not a crash
            self.warnings.append(f"CUPTI dropped-record count unavailable ({exc})")
            return 0
        return int(counter.value)

    def _disable(self) -> None:
        for kind in reversed(self._enabled):
            try:
                self._cupti.activity_disable(kind)
            except Exception:  # best effort during teardown
                continue
        self._enabled.clear()


def _copy_kind_text(cupti: Any, value: int) -> str:
    """CUPTI's memcpy kind as "HtoD", "DtoH", "DtoD", ... ("unknown" if not listed)."""
    try:
        name = str(cupti.ActivityMemcpyKind(value).name)
    except ValueError:
        return "unknown"
    return name.replace("TO", "to") if len(name) == 4 else name.lower()


__all__ = ["INSTALL_HINT", "CuptiActivityBackend", "import_cupti"]
