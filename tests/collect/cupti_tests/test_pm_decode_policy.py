"""PM decoding: images sized for the whole backlog, nothing decoded below the threshold.

Why: on the H100 a decode whose counter-data image filled lost the rest of what it read
(every PM hole followed a full 8,000-sample image, bench/README.md issue 13). The stand-in
CUPTI below behaves that way: a decode hands over at most the image's capacity and drops the
rest of the pending samples, so a test that loses samples fails here as it did on the GPU.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import numpy as np

from perfdiff.collect.cupti import pm_sampling
from perfdiff.collect.cupti.pm_sampling import PmSampler

INTERVAL = 20_000


class FakeCupti:
    """Samples every INTERVAL ns of the fake clock; decode drops what does not fit."""

    PmSamplingDecodeStopReason = types.SimpleNamespace(COUNTER_DATA_FULL=1)
    PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE = 1
    PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE = 1
    PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE = 1

    def __init__(self) -> None:
        self.now = 0
        self.taken_until = 0  # end of the last sample handed over or dropped
        self.images: dict[int, list[int]] = {}
        self.dropped = 0
        self.calls = 0

    @staticmethod
    def _params() -> Any:
        p = types.SimpleNamespace(overflow=0, decode_stop_reason=0, num_completed_samples=0,
                                  end_timestamp=0, sample_index=0)
        p.ptr = p
        return p

    PmSamplingDecodeDataParams = _params
    PmSamplingGetCounterDataInfoParams = _params
    PmSamplingCounterDataGetSampleInfoParams = _params

    def pm_sampling_decode_data(self, params: Any) -> None:
        self.calls += 1
        pending = list(range(self.taken_until + INTERVAL, self.now + 1, INTERVAL))
        capacity = params.counter_data_image_size
        kept = pending[:capacity]
        self.images[params.p_counter_data_image] = kept
        self.dropped += len(pending) - len(kept)
        self.taken_until = pending[-1] if pending else self.taken_until
        params.decode_stop_reason = 1 if len(pending) > capacity else 0

    def pm_sampling_get_counter_data_info(self, params: Any) -> None:
        params.num_completed_samples = len(self.images.get(params.p_counter_data_image, []))

    def pm_sampling_counter_data_get_sample_info(self, params: Any) -> None:
        params.end_timestamp = self.images[params.p_counter_data_image][params.sample_index]


class FakeCollector:
    _pm_sampling_object = 1
    _finalizer = None

    def _create_counter_data_image(self, max_samples: int) -> Any:
        return np.zeros(max_samples, dtype=np.uint8)  # one byte per sample slot


def _sampler(fake: FakeCupti) -> PmSampler:
    sampler = object.__new__(PmSampler)
    sampler._interval_ns = INTERVAL
    sampler._clock_ns = lambda: fake.now
    sampler._collector = FakeCollector()
    sampler._cupti = fake
    sampler._lock = threading.Lock()
    sampler._images = []
    sampler.decode_log = []
    sampler._decoded_until = 0
    sampler._overflowed = False
    sampler._stop_drain = threading.Event()
    sampler._held = threading.Event()
    sampler._drainer = None
    sampler._buffer_bytes = pm_sampling.HARDWARE_BUFFER_BYTES
    sampler._image_sample_bytes = None
    return sampler


def test_a_backlog_larger_than_the_old_image_is_decoded_whole() -> None:
    fake = FakeCupti()
    sampler = _sampler(fake)
    fake.now = 50_000 * INTERVAL  # 1 s of samples waiting, far more than 8,000
    sampler._decode_available()
    assert fake.dropped == 0
    assert sum(count for _, count in sampler._images) == 50_000
    assert fake.calls == 1
    (entry,) = sampler.decode_log
    assert entry[2] >= 50_000 and entry[3] == 50_000  # capacity, samples decoded


def test_successive_decodes_lose_nothing_and_track_the_backlog() -> None:
    fake = FakeCupti()
    sampler = _sampler(fake)
    for step in (3_000, 20_000, 20_001, 90_000):
        fake.now = step * INTERVAL
        assert sampler._backlog() == step - sum(c for _, c in sampler._images)
        sampler._decode_available()
    assert fake.dropped == 0
    assert sum(count for _, count in sampler._images) == 90_000
    assert sampler._backlog() == 0


def test_the_drain_waits_for_the_threshold() -> None:
    threshold = int(pm_sampling.DECODE_AT_FILL * pm_sampling.HARDWARE_BUFFER_BYTES
                    / pm_sampling.SAMPLE_RECORD_BYTES)
    # a 20 us default run of 2 s stays below it: decoded only when sampling stops
    assert threshold * INTERVAL > 2_000_000_000
    assert threshold * pm_sampling.SAMPLE_RECORD_BYTES < pm_sampling.HARDWARE_BUFFER_BYTES


def test_a_backlog_past_the_image_cap_is_decoded_in_several_capped_images(
        monkeypatch: Any) -> None:
    """A 5.5 s train-step run at 20 us lost every sample on the H100: its one image passed
    2 GiB (~11.7 KB a sample) and CUPTI ran out of memory. Images are capped (here at 50,000
    one-byte slots); a larger backlog takes several, and the rest of a full image's read is
    lost as on the GPU (reported by the coverage warning), never the whole run."""
    assert 100_000 * 11_700 < pm_sampling.MAX_IMAGE_BYTES < 2**31
    monkeypatch.setattr(pm_sampling, "MAX_IMAGE_BYTES", 50_000)
    fake = FakeCupti()
    sampler = _sampler(fake)
    fake.now = 300_000 * INTERVAL
    sampler._decode_available()
    capacities = [entry[2] for entry in sampler.decode_log]
    assert capacities and max(capacities) <= 50_000
    assert 0 < sum(count for _, count in sampler._images) <= 300_000


def test_the_drain_decodes_before_the_backlog_outgrows_one_image(monkeypatch: Any) -> None:
    """The buffer threshold (~127,000 samples) once exceeded the largest image (~120,000):
    the first decode while a program ran filled its image and the next answered
    ERROR_OUT_OF_MEMORY (H100, 2026-11-28). The drain now starts at half an image."""
    sampler = _sampler(FakeCupti())
    buffer_threshold = int(pm_sampling.DECODE_AT_FILL * pm_sampling.HARDWARE_BUFFER_BYTES
                           / pm_sampling.SAMPLE_RECORD_BYTES)
    assert sampler._drain_threshold() == buffer_threshold  # one-byte slots: images are huge
    monkeypatch.setattr(pm_sampling, "MAX_IMAGE_BYTES", 50_000)
    sampler = _sampler(FakeCupti())
    assert sampler._drain_threshold() == int(pm_sampling.DECODE_AT_IMAGE_SHARE * 50_000)


def test_a_paused_sampler_starts_no_decode_until_resumed_and_loses_nothing() -> None:
    """Untraced cycles hold the drain (overhead.py): none of its host work in them, and no
    call into CUPTI beside a detach (cupti/detached.py). The hardware samples on, so the held
    backlog is decoded whole after resume."""
    fake = FakeCupti()
    sampler = _sampler(fake)
    sampler._drainer = threading.current_thread()  # decode as the drain thread would
    sampler.pause()
    fake.now = 5_000 * INTERVAL
    sampler._decode_available()
    assert fake.calls == 0 and not sampler._images
    sampler.resume()
    sampler._decode_available()
    assert fake.dropped == 0 and sum(c for _, c in sampler._images) == 5_000


def test_busy_while_a_decode_runs_and_pause_waits_for_it() -> None:
    """An untraced cycle is not begun while a decode runs (busy); a pause that lands in one
    returns only after it, so a detach never runs beside it."""
    fake = FakeCupti()
    sampler = _sampler(fake)
    entered, release = threading.Event(), threading.Event()
    decode = fake.pm_sampling_decode_data

    def slow_decode(params: Any) -> None:
        entered.set()
        release.wait(5)
        decode(params)

    fake.pm_sampling_decode_data = slow_decode  # type: ignore[method-assign]
    fake.now = 1_000 * INTERVAL
    worker = threading.Thread(target=sampler._decode_available)
    assert not sampler.busy()
    worker.start()
    assert entered.wait(5)
    assert sampler.busy()
    paused = threading.Thread(target=sampler.pause)
    paused.start()
    paused.join(0.2)
    assert paused.is_alive()  # waiting for the decode
    release.set()
    paused.join(5)
    worker.join(5)
    assert not paused.is_alive() and not sampler.busy()
    assert sum(c for _, c in sampler._images) == 1_000


def test_a_held_sampler_decodes_only_a_backlog_near_the_limit_and_a_paused_one_never(
        monkeypatch: Any) -> None:
    """``hold`` (untraced runs, CUPTI attached): a short run has no decode in it, a long one
    is decoded before the hardware buffer overflows (a GPT-2 run held for ~6.6 s lost 213,000
    samples and its stop decode ran out of memory, H100 2026-12-07). ``pause`` (a detach
    follows): never, whatever the backlog."""
    monkeypatch.setattr(pm_sampling, "MAX_IMAGE_BYTES", 100_000)  # thresholds by the image
    fake = FakeCupti()
    sampler = _sampler(fake)
    sampler._soft_hold = False
    sampler._drainer = threading.current_thread()
    normal = sampler._drain_threshold()
    held = sampler._drain_threshold(pm_sampling.DECODE_HELD_AT_IMAGE_SHARE)
    assert (normal, held) == (50_000, 75_000)
    fake.now = normal * INTERVAL
    assert sampler._decode_due(normal, held)
    sampler.hold()
    assert not sampler._decode_due(normal, held)
    fake.now = held * INTERVAL
    assert sampler._decode_due(normal, held)
    sampler._decode_available()  # the drain's own decode is not refused under a hold
    assert sum(c for _, c in sampler._images) == held and fake.dropped == 0
    sampler.resume()
    sampler.pause()
    fake.now = 10 * held * INTERVAL
    assert not sampler._decode_due(normal, held)
    sampler._decode_available()
    assert sum(c for _, c in sampler._images) == held  # nothing more while paused


def test_a_held_threshold_lies_below_the_hardware_buffer_and_one_image() -> None:
    sampler = _sampler(FakeCupti())
    held = sampler._drain_threshold(pm_sampling.DECODE_HELD_AT_IMAGE_SHARE)
    assert held * pm_sampling.SAMPLE_RECORD_BYTES < pm_sampling.HARDWARE_BUFFER_BYTES
    assert pm_sampling.DECODE_AT_IMAGE_SHARE < pm_sampling.DECODE_HELD_AT_IMAGE_SHARE < 1


def test_a_pause_may_last_until_the_backlog_reaches_the_held_threshold(monkeypatch: Any) -> None:
    """What a detached untraced run may take (``pause_limit_ns``; overhead.py ends the run by
    then): the time until the backlog reaches the held decode's threshold, less what is
    already waiting; 0 once it is there."""
    monkeypatch.setattr(pm_sampling, "MAX_IMAGE_BYTES", 100_000)  # held threshold 75,000
    fake = FakeCupti()
    sampler = _sampler(fake)
    assert sampler.pause_limit_ns() == 75_000 * INTERVAL
    fake.now = 25_000 * INTERVAL  # a third of it undecoded already
    assert sampler.pause_limit_ns() == 50_000 * INTERVAL
    fake.now = 90_000 * INTERVAL
    assert sampler.pause_limit_ns() == 0
