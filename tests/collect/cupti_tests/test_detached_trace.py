"""Untraced runs with CUPTI detached (collect/cupti/detached.py), on stand-in backends.

What a GPU cannot be asked here is whether CUPTI behaves so (``detach_probe.py`` asks that on
the lent GPU); what is checked is what perfdiff does with each answer: correlation ids that
restart after a finalize or go on, name addresses that a new attach reuses for other strings,
a finalize or a synchronise that fails, the clock while detached, and the order in which the
untraced cycles switch the samplers and the trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perfdiff.collect.columns import API_DTYPE, KERNEL_DTYPE, TraceColumns
from perfdiff.collect.cupti.detached import DetachingTrace, join_stretches
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.cycles.overhead import UntracedCycles
from perfdiff.collect.records import RawTrace
from perfdiff.collect.settings import ProgramRecordSettings

CUPTI_AHEAD = 1_000  # CUPTI's clock minus the host's, in the stand-ins


class World:
    """The process as the stand-ins see it: a host clock, CUPTI attached or not, and what
    happened in order."""

    def __init__(self, *, restart_ids: bool = True) -> None:
        self.host = 0
        self.attached = False
        self.events: list[str] = []
        self.restart_ids = restart_ids
        self.next_id = 1
        self.fail_finalize = False
        self.fail_sync = False
        self.queued: list[list[Any]] = []  # kernels the GPU has not run yet (synchronize runs them)

    def host_clock(self) -> int:
        self.host += 10
        return self.host

    def finalize(self) -> None:
        self.events.append("finalize")
        if self.fail_finalize:
            raise RuntimeError("CUPTI_ERROR_UNKNOWN")
        self.attached = False
        if self.restart_ids:
            self.next_id = 1

    def synchronize(self) -> None:
        self.events.append("synchronize")
        if self.fail_sync:
            raise RuntimeError("no current context")
        self.queued.clear()


class Stretch:
    """An activity backend: kernels launched while it records get ids from the world's
    counter and name keys that are addresses (the same address, 0x100, for a different name in
    every stretch: a new attach reusing freed memory)."""

    name = "cupti_activity"

    def __init__(self, world: World, launch_records: bool) -> None:
        self.world = world
        self.launch_records = launch_records
        self.number = sum(e.startswith("open") for e in world.events)
        world.events.append(f"open api={launch_records}")
        self.recording = False
        self.kernels: list[list[Any]] = []  # [id, start, name]
        self.warnings: list[str] = []

    def clock_ns(self) -> int:
        assert self.world.attached, "CUPTI's clock read while detached"
        return self.world.host + CUPTI_AHEAD

    def start(self) -> None:
        self.world.events.append("start")
        self.world.attached = True
        self.recording = True

    def pause(self) -> None:
        """The backend's forced flush: a kernel the GPU has not run yet comes back without
        its times (start 0), as CUPTI's forced flush returns it."""
        self.world.events.append("pause")
        self.recording = False
        for kernel in self.world.queued:
            if kernel in self.kernels:
                kernel[1] = 0
        self.world.queued = [k for k in self.world.queued if k not in self.kernels]

    def resume(self) -> None:
        self.world.events.append("resume")
        self.recording = True

    def records_so_far(self) -> int:
        return len(self.kernels)

    def launch(self, name: str) -> None:
        corr = self.world.next_id
        self.world.next_id += 1
        if self.recording:
            self.kernels.append([corr, self.world.host + CUPTI_AHEAD, name])
            self.world.queued.append(self.kernels[-1])

    def stop_api_records(self) -> bool:
        was, self.launch_records = self.launch_records, False
        return was

    def stop(self) -> RawTrace:
        self.world.events.append("stop")
        self.recording = False
        k = np.zeros(len(self.kernels), dtype=KERNEL_DTYPE)
        names: dict[int, str] = {}
        for i, (corr, start, name) in enumerate(self.kernels):
            key = 0x100 if name == "shared" else 0x1000 + sum(map(ord, name))
            names[key] = f"{name}@stretch{self.number}" if name == "shared" else name
            k[i] = (start, start + 5, key, corr, 0, 7, 1, 1, 1, 1, 1, 1)
        api = np.zeros(len(self.kernels), dtype=API_DTYPE)
        api["correlation_id"] = [c for c, _, _ in self.kernels]
        api["start"] = [s - 3 for _, s, _ in self.kernels]
        return RawTrace(columns=TraceColumns(kernels=k, api=api, names=names),
                        handovers=[(self.number, self.number + 1, len(self.kernels))])


def _trace(world: World) -> tuple[DetachingTrace, list[Stretch]]:
    opened: list[Stretch] = []

    def open_backend(launch_records: bool) -> Stretch:
        opened.append(Stretch(world, launch_records))
        return opened[-1]

    trace = DetachingTrace(open_backend, launch_records=True, finalize=world.finalize,
                           synchronize=world.synchronize, host_clock=world.host_clock)
    return trace, opened


def test_a_detached_run_is_joined_with_unique_ids_in_launch_order_and_true_names() -> None:
    world = World(restart_ids=True)
    trace, opened = _trace(world)
    trace.start()
    opened[-1].launch("gemm_a")
    opened[-1].launch("shared")
    trace.pause()
    # the GPU waited for before the backend's forced flush: a queued kernel's record would
    # come back without its times, and no later attach completes it
    assert world.events[-4:] == ["synchronize", "pause", "stop", "finalize"]
    assert not world.attached and trace.detaches == 1
    now = trace.clock_ns()  # the host clock plus the offset, CUPTI untouched
    assert now == world.host + CUPTI_AHEAD - 10  # the offset was taken one host read earlier
    opened[-1].launch("never recorded")  # an untraced launch: no backend records it
    trace.resume()
    assert world.attached and len(opened) == 2
    opened[-1].launch("gemm_a")
    opened[-1].launch("shared")
    raw = trace.stop()
    assert world.events[-1] == "stop"
    assert (raw.as_columns().kernels["start"] > 0).all()  # none flushed before it ran
    # after the last stretch the clock goes on from the host (the shard's end and NVML's
    # offsets are read after stop; on the GPU this once read a backend that was gone)
    assert trace.clock_ns() == world.host + CUPTI_AHEAD - 10
    cols = raw.as_columns()
    ids = cols.kernels["correlation_id"].tolist()
    assert ids == sorted(ids) and len(set(ids)) == 4  # restarted at 1, moved past the first
    assert cols.api["correlation_id"].tolist() == ids  # API records moved with their kernels
    names = [cols.names[int(k)] for k in cols.kernels["name_key"]]
    assert names == ["gemm_a", "shared@stretch0", "gemm_a", "shared@stretch1"]
    assert len({int(k) for k in cols.kernels["name_key"]}) == 3  # one key per text
    assert raw.handovers == [(0, 1, 2), (1, 2, 2)]


def test_ids_that_go_on_after_a_finalize_are_left_as_they_are() -> None:
    world = World(restart_ids=False)
    trace, opened = _trace(world)
    trace.start()
    opened[-1].launch("gemm_a")
    trace.pause()
    opened[-1].launch("untraced")  # takes id 2 from CUPTI's counter, recorded by nobody
    trace.resume()
    opened[-1].launch("gemm_a")
    assert trace.stop().as_columns().kernels["correlation_id"].tolist() == [1, 3]


def test_correlation_zero_stays_zero_when_ids_move() -> None:
    first = RawTrace(columns=TraceColumns(kernels=_kernels([5, 6])))
    second = RawTrace(columns=TraceColumns(kernels=_kernels([0, 1, 2])))
    joined = join_stretches([first, second]).as_columns()
    assert joined.kernels["correlation_id"].tolist() == [5, 6, 0, 7, 8]


def _kernels(ids: list[int]) -> Any:
    k = np.zeros(len(ids), dtype=KERNEL_DTYPE)
    k["correlation_id"] = ids
    k["name_key"] = -1
    return k


def test_a_finalize_that_fails_leaves_cupti_attached_for_the_rest_of_the_run() -> None:
    world = World()
    world.fail_finalize = True
    trace, opened = _trace(world)
    trace.start()
    opened[-1].launch("gemm_a")
    trace.pause()  # stopped the stretch, finalize failed: a new backend, paused, attached
    assert trace.detaches == 0 and len(opened) == 2 and not opened[-1].recording
    assert trace.clock_ns() == world.host + CUPTI_AHEAD
    trace.resume()
    opened[-1].launch("gemm_b")
    trace.pause()  # gave up: the backend's own pause only
    assert world.events[-1] == "pause" and world.events.count("finalize") == 1
    trace.resume()
    raw = trace.stop()
    assert [raw.as_columns().names[int(k)] for k in raw.as_columns().kernels["name_key"]] == [
        "gemm_a", "gemm_b"]
    assert any("cuptiFinalize failed (RuntimeError: CUPTI_ERROR_UNKNOWN)" in w
               for w in trace.warnings)


def test_a_gpu_that_cannot_be_synchronised_is_not_detached() -> None:
    world = World()
    world.fail_sync = True
    trace, opened = _trace(world)
    trace.start()
    trace.pause()
    assert "finalize" not in world.events and "stop" not in world.events
    assert len(opened) == 1 and world.attached
    trace.resume()
    assert opened[0].recording
    assert any("could not be synchronised" in w for w in trace.warnings)


def test_launch_records_switched_off_while_detached_stay_off_in_the_next_stretch() -> None:
    world = World()
    trace, opened = _trace(world)
    trace.start()
    trace.pause()
    assert trace.stop_api_records() is True  # they were on: the caller's marks take over
    trace.resume()
    assert opened[-1].launch_records is False
    assert trace.stop_api_records() is False


def _ticking_log() -> CycleLog:
    """A cycle log whose clock moves 10 ns a read (the untraced-cycle switch tests)."""
    clock = [0]

    def now() -> int:
        clock[0] += 10
        return clock[0]

    return CycleLog(clock_ns=now)


def test_untraced_cycles_pause_samplers_before_the_trace_and_resume_them_after() -> None:
    """A sampler's thread stamps samples on the trace's clock: it stops before CUPTI goes and
    starts after CUPTI is back (pytorch/kineto#686: CUPTI calls racing a finalize crashed)."""
    world = World()
    trace, _ = _trace(world)
    trace.start()

    class Sampler:
        name = "nvml"

        def pause(self) -> None:
            world.events.append("sampler pause")

        def resume(self) -> None:
            world.events.append("sampler resume")

    log = _ticking_log()
    untraced = UntracedCycles(4, trace, log, [Sampler()])
    for _ in range(5):
        log.begin_cycle("", False)
        log.end_cycle()
    pause_at = world.events.index("sampler pause")
    assert world.events[pause_at:pause_at + 5] == [
        "sampler pause", "synchronize", "pause", "stop", "finalize"]
    back_at = world.events.index("sampler resume")
    assert world.events[back_at - 2:back_at] == ["open api=True", "start"]
    assert untraced.params()["untraced_pause"] == ["cupti_activity", "cupti_detached", "nvml"]


def test_no_untraced_run_begins_while_a_sampler_is_busy_and_pm_is_named_by_its_drain() -> None:
    """PM's drain decoding (``PmSampler.busy``): the cycle stays traced and the schedule is
    asked at the next one, so no decode runs in an untraced cycle nor beside a finalize; the
    run file names what was held (``pm_drain``), not PM sampling, which runs on."""
    world = World()
    trace, _ = _trace(world)
    trace.start()
    busy = [True]

    class Pm:
        name = "pm_sampling"
        paused_as = "pm_drain"

        def busy(self) -> bool:
            return busy[0]

        def pause(self) -> None:
            assert not busy[0], "paused while its decode ran"
            world.events.append("pm pause")

        def resume(self) -> None:
            world.events.append("pm resume")

    log = _ticking_log()
    untraced = UntracedCycles(4, trace, log, [Pm()])
    for _ in range(12):
        log.begin_cycle("", False)
        log.end_cycle()
    assert "finalize" not in world.events and untraced.positions == []
    busy[0] = False
    for _ in range(8):
        log.begin_cycle("", False)
        log.end_cycle()
    assert world.events.count("finalize") >= 1 and untraced.positions
    assert untraced.params()["untraced_pause"] == ["cupti_activity", "cupti_detached",
                                                   "pm_drain"]


def test_detaching_works_with_pm_sampling_on() -> None:
    """PM sampling lived through cuptiFinalize on the H100 (detach_probe.py --scenario pm,
    2026-12-07: every detached block had all its samples), so the option no longer needs
    --no-pm."""
    assert ProgramRecordSettings(detach_untraced=True).detach_untraced
    assert ProgramRecordSettings(detach_untraced=True).pm_wanted


def test_a_stretch_that_cannot_be_stopped_costs_its_records_not_the_rest_of_the_run() -> None:
    world = World()
    trace, opened = _trace(world)
    trace.start()

    def broken() -> RawTrace:
        raise RuntimeError("decode failed")

    opened[0].stop = broken  # type: ignore[method-assign]
    trace.pause()
    assert "finalize" not in world.events and len(opened) == 2 and not opened[1].recording
    trace.resume()
    opened[1].launch("gemm_b")
    raw = trace.stop()
    cols = raw.as_columns()
    assert [cols.names[int(k)] for k in cols.kernels["name_key"]] == ["gemm_b"]
    assert any("could not be taken in (RuntimeError: decode failed)" in w
               for w in trace.warnings)


def test_an_attach_that_fails_keeps_the_host_clock_and_the_records_so_far() -> None:
    world = World()
    trace, opened = _trace(world)
    trace.start()
    opened[0].launch("gemm_a")
    trace.pause()

    def refuse() -> None:
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    trace._open = lambda api: type("Refusing", (), {"start": staticmethod(refuse)})()
    with pytest.raises(RuntimeError):
        trace.resume()
    assert trace.clock_ns() == world.host + CUPTI_AHEAD - 10  # still the host clock + offset
    cols = trace.stop().as_columns()
    assert [cols.names[int(k)] for k in cols.kernels["name_key"]] == ["gemm_a"]
    assert any("could not attach again" in w for w in trace.warnings)


def test_a_run_that_ends_detached_attaches_again_before_the_samplers_stop() -> None:
    """PM sampling's stop answered ERROR_UNKNOWN where the run ended with CUPTI detached, and
    its values were lost (H100, 2026-12-07): the samplers are stopped after an attach that
    records nothing."""
    world = World()
    trace, opened = _trace(world)
    trace.start()
    opened[-1].launch("gemm_a")
    trace.pause()
    assert not world.attached
    trace.attach_for_samplers()
    assert world.attached and len(opened) == 2 and not opened[-1].recording
    opened[-1].launch("after the program")  # not recorded: the stretch is paused
    trace.attach_for_samplers()  # attached already: nothing more
    assert len(opened) == 2
    cols = trace.stop().as_columns()
    assert [cols.names[int(k)] for k in cols.kernels["name_key"]] == ["gemm_a"]
    assert not trace.warnings


def test_an_attached_trace_neither_waits_for_a_busy_sampler_nor_skips_its_untraced_run() -> None:
    """CUPTI stays attached (the default): PM's decode runs on in its own thread, so the
    untraced run begins on schedule and PM is only held (``hold``: no new decode), never
    waited for in the program's step (a GPT-2 run's decode ran at most boundaries)."""
    events: list[str] = []

    class AttachedTrace:
        def pause(self) -> None:
            events.append("pause")

        def resume(self) -> None:
            events.append("resume")

    class Pm:
        name = "pm_sampling"
        paused_as = "pm_drain"

        def busy(self) -> bool:
            return True

        def hold(self) -> None:
            events.append("pm hold")

        def pause(self) -> None:
            raise AssertionError("waited for a decode with CUPTI attached")

        def resume(self) -> None:
            events.append("pm resume")

    log = _ticking_log()
    untraced = UntracedCycles(4, AttachedTrace(), log, [Pm()])
    for _ in range(12):
        log.begin_cycle("", False)
        log.end_cycle()
    assert untraced.positions and events[:2] == ["pm hold", "pause"]
    assert "traced_while_sampler_busy" not in untraced.params()["untraced_schedule"]
    assert untraced.params()["untraced_pause"] == ["cupti_activity", "pm_drain"]


def test_a_deferred_trace_says_whether_its_backend_will_detach() -> None:
    """The child's trace exists before CUPTI does: it must still say it will detach, or a
    detach could run beside PM's decode (``UntracedCycles._samplers_busy``)."""
    from perfdiff.collect.inject.deferred_trace import DeferredTrace

    assert DeferredTrace(lambda: None, detaches_cupti=True).detaches_cupti
    assert not DeferredTrace(lambda: None).detaches_cupti
