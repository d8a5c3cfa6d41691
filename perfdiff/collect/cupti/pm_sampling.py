"""CUPTI PM sampling: tensor-pipe and DRAM utilisation sampled every N ns of GPU time.

Why PM sampling rather than per-kernel profiling (ncu-style replay): it runs alongside the
workload without serialising or replaying kernels, so the overhead is near zero and the
timeline is the real one. A kernel's utilisation is then the time-weighted mean of the
samples overlapping it (``perfdiff.analysis.kernel_metrics``); for kernels shorter than the
interval that mean is diluted by whatever ran next to it (docs/reference/run-file.md).

Degradation: if the metrics cannot be configured together, each is tried alone on a fresh
collector (after one rejected name, CUPTI's host object fails every later name, see
gpu-notes) and only the accepted ones are sampled. Every metric dropped, and every failure
to start (no permission to profile, chip not supported), becomes a warning in the run file.

Decoding: cupti-python's ``Collector.decode()`` creates a fresh counter-data image and walks
every sample in Python. Here the raw ``pm_sampling_decode_data`` binding decodes into images
sized for the whole backlog, and timestamps and values are extracted only after the workload
ends. Measured on the H100 (scripts/gpu/pm_probe.py): CUPTI's decode costs the host ~20 us
per sample (an image takes ~11.7 KB per sample), as long as the GPU takes to produce one at
the 20 us default; a decode whose image fills drops the rest of what it read. Decoding every
20 ms into 8,000-sample images therefore left 20-160 ms holes (coverage 63-81 %) and kept a
core busy. Samples now wait in the 2 GiB hardware buffer and are decoded when sampling
stops, or while the run goes on once the buffer is 80 % full (~2.5 s of samples at 20 us).
That uses three private members of ``Collector`` (``_pm_sampling_object``, ``_chip_name``,
``_create_counter_data_image``), checked at construction: a cupti-python without them
degrades to "PM sampling unavailable" with a warning, never a crash.

Teardown: cupti-python's ``Collector`` frees its PM sampling object in a ``weakref.finalize``,
and such finalizers run from an ``atexit`` hook at interpreter exit. In a user program that
hook can run before perfdiff's own exit code (atexit is last-in first-out, and torch's import
registers the weakref hook after perfdiff's), so it disabled the object under the running
drain thread and ``stop()`` then used the freed object: the child died of SIGSEGV at exit.
So :meth:`PmSampler.start` takes the live object out of that hook (this class disables it in
``stop``); the drain loop and ``stop`` first check that the object is still ours.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from perfdiff.collect.settings import (
    DEFAULT_METRICS,
    DEFAULT_SAMPLE_INTERVAL_NS,
    DRAM_METRIC,
    TENSOR_METRIC,
)
from perfdiff.schema.model import CycleTable, MetricSeries

# the one default (5 us overflowed the hardware buffer on the H200, see below)
DEFAULT_INTERVAL_NS = DEFAULT_SAMPLE_INTERVAL_NS
# A sample record takes about 13 KB of the hardware buffer on GH100 (512 MiB overflowed after
# ~40,000 samples on the H200 test machine): 2 GiB hold ~160,000 samples, 3.2 s at 20 us.
HARDWARE_BUFFER_BYTES = 2 * 1024 * 1024 * 1024
FALLBACK_BUFFER_BYTES = 512 * 1024 * 1024
SAMPLE_RECORD_BYTES = 13_500
# Decoding costs the host ~20 us per sample on the H100 (18-37 us, scripts/gpu/pm_probe.py,
# bench/README.md issue 13): at the 20 us default it cannot keep up with the GPU while a
# program runs, and a decode whose image fills loses the rest of what it read (holes of
# 20-160 ms). So samples stay in the hardware buffer and are decoded when sampling stops;
# while the run goes on, the drain thread decodes only once the buffer is this full.
DECODE_AT_FILL = 0.8
# ... and at the latest once the backlog would fill this share of the largest image. Why: the
# buffer threshold above (~127,000 samples) exceeds what one image holds (~120,000 under
# MAX_IMAGE_BYTES), so the first decode while a program ran filled its image and the decode
# right after it answered ERROR_OUT_OF_MEMORY: every user program longer than ~2.5 s of
# sampling lost its PM values from there on (issue 28; H100 2026-11-28, GPT-2 generate: 19.5 %
# coverage; scripts/gpu/pm_long_probe.py).
DECODE_AT_IMAGE_SHARE = 0.5
# ... and while untraced cycles hold the drain with CUPTI attached (``hold``), only once the
# backlog would fill this share of the largest image: later than usual, so that a short
# untraced run has no decode in it, but before samples are lost. Why: a GPT-2 ``generate``
# run's untraced runs of ~20 cycles of 330 ms held the drain for ~6.6 s, past what the
# hardware buffer holds at 40 us (~6.4 s): 213,000 samples undecoded at stop, whose decode
# answered ERROR_OUT_OF_MEMORY, and a traced cycle without PM (H100, 2026-12-07).
DECODE_HELD_AT_IMAGE_SHARE = 0.75
DRAIN_PERIOD_S = 0.05  # how often the drain thread checks the backlog
IMAGE_MARGIN = 1.25  # an image holds the estimated backlog times this, plus IMAGE_MIN_SAMPLES
IMAGE_MIN_SAMPLES = 2_000
# Largest counter-data image asked for. A 5.5 s train-step run (H100, 2026-11-25) lost every
# PM sample: sized for its whole backlog, the image passed 2 GiB (~11.7 KB a sample) and CUPTI
# answered ERROR_OUT_OF_MEMORY; 122,302 samples (1.4 GB) had worked. A longer backlog is
# decoded into several images of this size (each full image may drop what that decode call
# had read beyond it: a stretch without samples, which the coverage warning reports).
MAX_IMAGE_BYTES = 1_400_000_000
FIRST_SAMPLE_WAIT_S = 0.002  # the first sample ended ~0.6 ms after start (clock_check.py)
_COLLECTOR_INTERNALS = ("_pm_sampling_object", "_chip_name", "_create_counter_data_image")


class PmSamplingUnavailable(Exception):
    """PM sampling cannot run here; the message says why (it becomes a warning)."""


class PmSampler:
    """:class:`MetricSampler` on ``cupti.pm_sampling.Collector`` for one device."""

    name = "pm_sampling"

    def __init__(
        self,
        metrics: tuple[str, ...],
        interval_ns: int,
        device_index: int,
        clock_ns: Any,
    ) -> None:
        try:
            from cupti import pm_sampling
        except ImportError as exc:
            raise PmSamplingUnavailable(
                f"PM sampling unavailable: cupti-python >= 13.4 with cupti.pm_sampling is "
                f"needed ({exc})"
            ) from None
        self._pm = pm_sampling
        self._interval_ns = interval_ns
        self._device = device_index
        self._clock_ns = clock_ns
        self.warnings: list[str] = []
        self.metrics = self._accepted(metrics)
        if not self.metrics:
            # the reasons CUPTI gave go with it: the warning is all a run file keeps
            reasons = "; ".join(self.warnings)
            raise PmSamplingUnavailable(
                "PM sampling unavailable: none of the requested metrics could be configured "
                f"({', '.join(metrics)})" + (f": {reasons}" if reasons else "")
            )
        self._collector = self._configured(self.metrics)
        missing = [name for name in _COLLECTOR_INTERNALS if not hasattr(self._collector, name)]
        if missing:
            self._collector.disable()
            raise PmSamplingUnavailable(
                "PM sampling unavailable: this cupti-python's Collector lacks "
                f"{', '.join(missing)}; install cupti-python 13.4"
            )
        self._start_ns = 0
        self.first_sample_offset_ns: int | None = None
        self._lock = threading.Lock()
        self._images: list[tuple[Any, int]] = []
        self._buffer_bytes = HARDWARE_BUFFER_BYTES
        self._decoded_until = 0  # end of the last decoded sample (trace clock)
        self._image_sample_bytes: int | None = None
        # one entry per decode call: (host ns before, host ns taken, image capacity, samples
        # decoded, first and last sample end, overflow, stop reason, from the drain thread)
        self.decode_log: list[tuple[int, int, int, int, int, int, bool, int, bool]] = []
        self._cupti: Any = None
        self._overflowed = False
        self._drain_error: BaseException | None = None
        self._stop_drain = threading.Event()
        self._held = threading.Event()  # set while an untraced cycle runs (hold, pause)
        self._soft_hold = False  # held by ``hold``: a backlog near the limit is still decoded
        self._drainer: threading.Thread | None = None

    def _new_collector(self) -> Any:
        collector = self._pm.Collector(self._device)
        try:
            collector.enable()
        except PermissionError as exc:
            raise PmSamplingUnavailable(
                f"PM sampling not permitted for this user ({exc}); run as admin or set the "
                "driver option NVreg_RestrictProfilingToAdminUsers=0"
            ) from None
        except Exception as exc:
            raise PmSamplingUnavailable(
                f"PM sampling could not be enabled on device {self._device} "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return collector

    def _configured(self, metrics: tuple[str, ...]) -> Any:
        collector = self._new_collector()
        try:
            try:
                self._configure(collector, metrics, HARDWARE_BUFFER_BYTES)
            except MemoryError:
                self._configure(collector, metrics, FALLBACK_BUFFER_BYTES)
                self.warnings.append("PM sampling hardware buffer reduced to 512 MiB")
        except Exception:
            collector.disable()
            raise
        return collector

    def _configure(self, collector: Any, metrics: tuple[str, ...], buffer_bytes: int) -> None:
        collector.configure(
            metrics=list(metrics),
            hardware_buffer_size=buffer_bytes,
            sampling_interval=self._interval_ns,
            trigger_mode=self._pm.TriggerMode.GPU_TIME_INTERVAL,
        )
        self._buffer_bytes = buffer_bytes

    def _accepted(self, metrics: tuple[str, ...]) -> tuple[str, ...]:
        """All metrics if they configure together, else those that configure alone."""
        try:
            self._configured(metrics).disable()
            return metrics
        except PmSamplingUnavailable:
            raise
        except Exception as exc:
            if len(metrics) == 1:
                self.warnings.append(f"PM metric {metrics[0]} rejected ({exc}); not sampled")
                return ()
        accepted: list[str] = []
        for metric in metrics:
            try:
                self._configured((metric,)).disable()
                accepted.append(metric)
            except PmSamplingUnavailable:
                raise
            except Exception as exc:
                self.warnings.append(f"PM metric {metric} rejected ({exc}); not sampled")
        if len(accepted) > 1:
            try:
                self._configured(tuple(accepted)).disable()
            except Exception as exc:
                self.warnings.append(
                    f"PM metrics cannot be sampled together ({exc}); keeping {accepted[0]} only"
                )
                accepted = accepted[:1]
        return tuple(accepted)

    def start(self) -> None:
        from cupti import cupti

        self._cupti = cupti
        self._start_ns = int(self._clock_ns())
        self._images = []
        self.decode_log = []
        self._drain_error = None
        self._overflowed = False
        self._stop_drain = threading.Event()
        self._collector.start()
        self._decoded_until = int(self._clock_ns())
        with self._lock:  # an image's size measured here, not by the drain thread under its
            self._max_image_samples()  # lock: busy() held untraced runs off for its ~0.2 s
        # Ours to tear down, in stop(): never from the interpreter's exit hook (module docstring).
        finalizer = getattr(self._collector, "_finalizer", None)
        if finalizer is not None and hasattr(finalizer, "atexit"):
            finalizer.atexit = False
        time.sleep(FIRST_SAMPLE_WAIT_S)
        self._drainer = threading.Thread(target=self._drain_loop, name="perfdiff-pm-drain",
                                         daemon=True)
        self._drainer.start()

    # pause()/resume() hold the drain, not the sampling: after cuptiPmSamplingStop,
    # cuptiPmSamplingStart answered ERROR_UNKNOWN (H100, CUPTI 13.4, 2026-11-25), so the hardware
    # samples on through untraced cycles (overhead.py); only our decode stays out of them.
    paused_as = "pm_drain"  # the run file's ``untraced_pause`` names this, not PM sampling

    def busy(self) -> bool:
        """A decode is running now: a trace that detaches CUPTI waits for it to end before an
        untraced run (overhead.py), so that no detach (``detached.py``) runs beside a call
        into CUPTI."""
        if not self._lock.acquire(blocking=False):
            return True
        self._lock.release()
        return False

    def hold(self) -> None:
        """Until ``resume``, no decode starts unless the backlog nears what the hardware and
        one image hold (DECODE_HELD_AT_IMAGE_SHARE); one already running finishes in its
        thread (the decode releases the interpreter): what an untraced run asks of PM while
        CUPTI stays attached. Returns at once, inside the program's step."""
        self._soft_hold = True
        self._held.set()

    def pause(self) -> None:
        """No decode starts until ``resume``, whatever the backlog, and a decode already
        running is waited for (``busy`` makes that rare): what a run that detaches CUPTI
        needs (no call into CUPTI beside a finalize). PM samples on meanwhile (bench/README.md
        issue 28, CUPTI detached with PM: PM kept sampling through cuptiFinalize); the paused
        run ends before the hardware buffer fills (``pause_limit_ns``)."""
        self._soft_hold = False
        self._held.set()
        with self._lock:
            pass

    def resume(self) -> None:
        self._held.clear()

    def pause_limit_ns(self) -> int:
        """How long a pause begun now may last before samples are lost: the time until the
        backlog reaches what a held decode would start at (DECODE_HELD_AT_IMAGE_SHARE of the
        largest image, or DECODE_AT_FILL of the hardware buffer). A paused sampler decodes
        nothing, so the untraced run that paused it ends by then (``overhead.UntracedCycles``:
        a detached GPT-2 run of ~6.6 s lost 213,000 samples at 40 us)."""
        left = self._drain_threshold(DECODE_HELD_AT_IMAGE_SHARE) - self._backlog()
        return max(0, left) * self._interval_ns

    def _drain_loop(self) -> None:
        """Decode while the run goes on only when the hardware buffer is filling up.

        Why: decoding costs the host about as much time as the GPU takes to produce the
        samples at 20 us (module constants); done continuously it took a core from the
        program and could not keep up anyway. Runs of < ~2.5 s of sampling at 20 us are
        decoded entirely after the workload ends. A longer one is decoded while it runs
        once the buffer is 80 % full; that decode chases the samples still arriving until
        its image fills, and the rest of what it read is lost (one 82 ms hole per such
        decode on the H100 with a 40 % threshold: bench/README.md issue 13).
        """
        threshold = self._drain_threshold()
        held_threshold = self._drain_threshold(DECODE_HELD_AT_IMAGE_SHARE)
        while not self._stop_drain.wait(DRAIN_PERIOD_S):
            if not self._decode_due(threshold, held_threshold):
                continue
            try:
                self._decode_available()
            except Exception as exc:
                self._drain_error = exc
                return

    def _decode_due(self, threshold: int, held_threshold: int) -> bool:
        """Whether the drain decodes now: past ``threshold``; while held by ``hold`` only past
        ``held_threshold``; while paused, never."""
        backlog = self._backlog()
        if not self._held.is_set():
            return backlog >= threshold
        return self._soft_hold and backlog >= max(threshold, held_threshold)

    def _drain_threshold(self, image_share: float = DECODE_AT_IMAGE_SHARE) -> int:
        """Backlog (samples) at which the drain decodes while the program runs: 80 % of the
        hardware buffer, but never more than ``image_share`` of the largest image."""
        with self._lock:
            image_samples = self._max_image_samples()
        return max(1, min(int(DECODE_AT_FILL * self._buffer_bytes / SAMPLE_RECORD_BYTES),
                          int(image_share * image_samples)))

    def _backlog(self) -> int:
        """Samples not decoded yet, estimated from the trace clock."""
        return max(0, (int(self._clock_ns()) - self._decoded_until) // self._interval_ns)

    def _decode_available(self) -> None:
        """Decode everything the hardware holds, into images sized to hold all of it.

        Why sized: when a decode fills its image, CUPTI drops the rest of what that call
        read (seen on the H100: each full 8,000-sample image followed by a 20-160 ms hole),
        so the image must hold the whole backlog; a full one is followed by another anyway.
        """
        cupti = self._cupti
        full = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        drainer = threading.current_thread() is self._drainer
        with self._lock:
            if drainer and self._held.is_set() and not self._soft_hold:
                return  # paused between the loop's look and the lock (pause)
            self._check_alive()
            while True:
                capacity = min(int(self._backlog() * IMAGE_MARGIN) + IMAGE_MIN_SAMPLES,
                               self._max_image_samples())
                image = self._collector._create_counter_data_image(capacity)
                began = time.perf_counter_ns()
                params = cupti.PmSamplingDecodeDataParams()
                params.struct_size = cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE
                params.p_pm_sampling_object = self._collector._pm_sampling_object
                params.p_counter_data_image = image.ctypes.data
                params.counter_data_image_size = len(image)
                cupti.pm_sampling_decode_data(params.ptr)
                taken = time.perf_counter_ns() - began
                if params.overflow:
                    self._overflowed = True
                completed = self._completed_samples(image)
                reason = int(params.decode_stop_reason)
                first = last = 0
                if completed:
                    first = self._sample_end(image, 0)
                    last = self._sample_end(image, completed - 1)
                    self._images.append((image, completed))
                    self._decoded_until = max(self._decoded_until, last)
                self.decode_log.append((began, taken, capacity, completed, first, last,
                                        bool(params.overflow), reason, drainer))
                if reason != full:
                    return
                if self._stop_drain.is_set() and drainer:
                    return  # stop() decodes the rest after sampling has stopped

    def _max_image_samples(self) -> int:
        """Samples an image of at most MAX_IMAGE_BYTES holds (its size per sample measured
        once on a small image: it depends on the metrics)."""
        if self._image_sample_bytes is None:
            small = self._collector._create_counter_data_image(IMAGE_MIN_SAMPLES)
            self._image_sample_bytes = max(1, len(small) // IMAGE_MIN_SAMPLES)
        return max(IMAGE_MIN_SAMPLES, MAX_IMAGE_BYTES // self._image_sample_bytes)

    def _sample_end(self, image: Any, index: int) -> int:
        cupti = self._cupti
        info = cupti.PmSamplingCounterDataGetSampleInfoParams()
        info.struct_size = cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
        info.p_pm_sampling_object = self._collector._pm_sampling_object
        info.p_counter_data_image = image.ctypes.data
        info.counter_data_image_size = len(image)
        info.sample_index = index
        cupti.pm_sampling_counter_data_get_sample_info(info.ptr)
        return int(info.end_timestamp)

    def _alive(self) -> bool:
        """Whether the PM sampling object still exists (no one else disabled it)."""
        finalizer = getattr(self._collector, "_finalizer", None)
        alive = finalizer is None or bool(getattr(finalizer, "alive", True))
        return alive and getattr(self._collector, "_pm_sampling_object", None) is not None

    def _check_alive(self) -> None:
        if not self._alive():
            raise RuntimeError("the PM sampling object was torn down before perfdiff stopped "
                               "it (interpreter exit?)")

    def _completed_samples(self, image: Any) -> int:
        cupti = self._cupti
        info = cupti.PmSamplingGetCounterDataInfoParams()
        info.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE
        info.p_counter_data_image = image.ctypes.data
        info.counter_data_image_size = len(image)
        cupti.pm_sampling_get_counter_data_info(info.ptr)
        return int(info.num_completed_samples)

    def stop(self) -> list[MetricSeries]:
        """Join the drain thread, stop sampling, decode the rest, evaluate, disable.

        Raises (the caller turns it into a warning, PM values dropped) rather than touch a PM
        sampling object that is gone or that the drain thread is still inside.
        """
        # Stop the drain first (it leaves after the image it is decoding), then sampling,
        # then decode what is left: sampling must not run on while a backlog is decoded.
        self._stop_drain.set()
        if self._drainer is not None:
            self._drainer.join(timeout=30.0)
            if self._drainer.is_alive():
                raise RuntimeError("the PM drain thread did not finish within 30 s")
        self._check_alive()
        self._collector.stop()
        try:
            try:
                # also after a failed decode while running (CUPTI ran out of memory once in a
                # 12 s user program): what is still in the hardware buffer may decode now
                self._decode_available()
            except Exception as exc:
                # What was decoded before is kept: a failed last decode once threw away every
                # sample of an 8 s run (239,192 decoded; H100, scripts/gpu/pm_long_probe.py).
                if not self._images:
                    raise
                word = "too" if self._drain_error is not None else "(earlier samples kept)"
                self.warnings.append(f"PM decode at stop failed {word} ({type(exc).__name__}: "
                                     f"{exc}) [{self.describe()}]; raise --sample-interval-ns "
                                     "for a program this long (the coverage warning says what "
                                     "is missing)")
            ends, values = self._evaluate()
        finally:
            self._collector.disable()
        if self._drain_error is not None:
            self.warnings.append(
                f"PM decoding failed while the program ran ({type(self._drain_error).__name__}: "
                f"{self._drain_error}) [{self.describe()}]; samples between that point and the "
                "end of sampling may be missing (the coverage warning says how many)"
            )
        if self._overflowed:
            self.warnings.append(
                "PM sampling hardware buffer overflowed; some samples are missing (raise "
                "--sample-interval-ns)"
            )
        if ends.size:
            # Recorded, not corrected: scripts/gpu/clock_check.py showed the clocks agree.
            self.first_sample_offset_ns = int(ends[0] - self._interval_ns - self._start_ns)
        return [
            MetricSeries(
                name=metric,
                unit="pct",
                source="pm_sampling",
                device=self._device,
                timestamps_ns=ends,
                values=np.round(values[:, i], 3),
                interval_ns=self._interval_ns,
            )
            for i, metric in enumerate(self.metrics)
        ]

    def describe(self) -> str:
        """Where the sampler stood, for a failure's warning: how many decodes and samples,
        the backlog still in the hardware buffer and the last image asked for. Why: the
        ERROR_OUT_OF_MEMORY seen at stop in long user programs (issue 28) said nothing about
        which of these had grown."""
        decoded = sum(entry[3] for entry in self.decode_log)
        last = self.decode_log[-1][2] if self.decode_log else 0
        span_s = (int(self._clock_ns()) - self._start_ns) / 1e9 if self._start_ns else 0.0
        return (f"{span_s:.1f} s of sampling, {len(self.decode_log)} decode(s) of "
                f"{decoded} samples, ~{self._backlog()} samples not decoded, last image "
                f"{last} samples, images kept {len(self._images)}")

    def _evaluate(self) -> tuple[Any, Any]:
        """Sample end timestamps and (n_samples, n_metrics) values, time-sorted."""
        cupti = self._cupti
        n = sum(count for _, count in self._images)
        ends = np.zeros(n, dtype=np.int64)
        values = np.zeros((n, len(self.metrics)), dtype=np.float64)
        if n == 0:
            return ends, values
        from cupti import profiler_host

        host = profiler_host.ProfilerHost(
            self._collector._chip_name, profiler_host.ProfilerType.PM_SAMPLING
        )
        host.initialize()
        metrics = list(self.metrics)
        row = 0
        try:
            for image, count in self._images:
                for index in range(count):
                    info = cupti.PmSamplingCounterDataGetSampleInfoParams()
                    info.struct_size = (
                        cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
                    )
                    info.p_pm_sampling_object = self._collector._pm_sampling_object
                    info.p_counter_data_image = image.ctypes.data
                    info.counter_data_image_size = len(image)
                    info.sample_index = index
                    cupti.pm_sampling_counter_data_get_sample_info(info.ptr)
                    ends[row] = int(info.end_timestamp)
                    values[row, :] = host.evaluate_metric_values(
                        counter_data_image=image, metrics=metrics, index=index
                    )
                    row += 1
        finally:
            host.deinitialize()
        order = np.argsort(ends, kind="stable")
        return ends[order], values[order]


__all__ = [
    "DEFAULT_INTERVAL_NS",
    "DEFAULT_METRICS",
    "DRAM_METRIC",
    "TENSOR_METRIC",
    "PmSampler",
    "PmSamplingUnavailable",
    "coverage_warning",
    "pm_coverage_warnings",
]



def coverage_warning(ends_ns: Any, interval_ns: int, span: tuple[int, int]) -> str | None:
    """A warning when PM samples cover less than 98 % of ``span`` (the measured cycles).

    Why: a decode whose counter-data image fills loses the rest of what it read, and a
    hardware buffer that overflows loses what came after; a stretch of GPU time then has no
    samples and the kernels in it get no Tensor/DRAM value. That must be said in the run
    file, not found out later. Seen on the H100 while decoding every 20 ms into 8,000-sample
    images (2026-11-22/25): holes of 20-160 ms, coverage 63-97 %; with decoding at stop
    (this module) 100 % on gpt-infer and train-step. A long run still loses one stretch per
    decode made while it runs.
    """
    start, end = span
    ends = np.asarray(ends_ns, dtype=np.int64)
    if end <= start or interval_ns <= 0:
        return None
    inside = ends[(ends > start) & (ends <= end + interval_ns)]
    covered = min(1.0, inside.size * interval_ns / (end - start))
    if covered >= 0.98:
        return None
    bounds = np.concatenate(([start], inside, [end]))
    gaps = np.diff(bounds)
    holes = int((gaps > 2 * interval_ns).sum())
    return (f"PM samples cover {100 * covered:.1f} % of the measured cycles ({holes} stretch(es) "
            f"without samples, {(1 - covered) * (end - start) / 1e6:.1f} ms); kernels there have "
            "no PM values (lost while decoding them on the host; a larger --sample-interval-ns "
            "helps)")


def pm_coverage_warnings(metrics: list[MetricSeries], cycles: CycleTable) -> list[str]:
    """One warning per device whose PM samples leave part of the measured cycles uncovered."""
    measured = ~cycles.warmup
    if not measured.any():
        return []
    span = (int(cycles.start_ns[measured][0]), int(cycles.end_ns[measured][-1]))
    out = []
    seen: set[int] = set()
    for series in metrics:
        if series.source != "pm_sampling" or series.device in seen or not series.interval_ns:
            continue
        seen.add(series.device)
        text = coverage_warning(series.timestamps_ns, series.interval_ns, span)
        if text is not None:
            out.append(text if series.device == 0 else f"GPU {series.device}: {text}")
    return out
