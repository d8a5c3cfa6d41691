"""The H100 fixtures: each program recorded by torch.profiler and by perfdiff collect.

Issue 15's acceptance per pair (normal, abnormal): ``perfdiff compare`` of the two traces names
the same first finding as ``perfdiff compare`` of the two perfdiff recordings, and per-kernel
GPU time per step agrees within 2 % between the sources for kernels > 10 us. The recordings
are separate processes on one GPU (scripts/gpu/kineto_record.sh, fixtures/README.md): the same
kernels with the same launch counts per step, but their durations move with the GPU's clocks.
All twelve files come from one run (2026-11-25 03:45-03:53 UTC, ``SETTLE_S=20 GAP_MS=5``): each
process ran its step 20 s unmeasured first (kineto_prog.py --settle-s) and slept 5 ms after
every step (--gap-ms), a duty cycle that keeps the GPU below its power cap: NVML in every
recording, over the measured cycles, reads SM clock 1980 MHz, no throttle reason, 219-354 W
(the earlier run without the gap had gpt-normal at the SW power cap, 674-680 W, 1785-1830 MHz,
with four kernels 2.3-4.3 % apart). 147 of 149 (pair, kernel) rows > 10 us now agree within
2 %; the two others are both in train-abnormal (a GEMM +3.8 %, nll_loss backward +2.1 %) at
the same 1980 MHz, so the 2 % criterion is still not met for every row: the tests pin what was
measured rather than a bound the data does not meet. Recording both sources in ONE process
(kineto_prog.py --mode both, 04:35 UTC) did not meet it either: 146 of 149, a train GEMM
slower in the trace in every same-process train pair; those files were not adopted
(bench/README.md, torch.profiler section).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perfdiff.readers.dispatch import load_input
from perfdiff.schema.model import RunFile

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kineto"
PROGRAMS = ("gpt", "train", "hf")
VARIANTS = ("normal", "abnormal")
MIN_NS = 10_000


def _trace(program: str, variant: str) -> Path:
    return FIXTURES / f"kineto-{program}-{variant}.pt.trace.json.gz"


def _recording(program: str, variant: str) -> Path:
    return FIXTURES / f"kineto-{program}-{variant}-perfdiff.json.gz"


def per_step(run_file: RunFile) -> tuple[dict[str, float], dict[str, float]]:
    """Per kernel name: launches per measured step and GPU time (ns) per measured step."""
    run = run_file.runs[0]
    measured = run.cycles.index[~run.cycles.warmup]
    k = run.kernels
    keep = np.isin(k.cycle, measured)
    launches: dict[str, float] = {}
    time_ns: dict[str, float] = {}
    for name_id, dur in zip(k.name_id[keep].tolist(), (k.end_ns - k.start_ns)[keep].tolist(),
                            strict=True):
        name = run_file.strings[name_id].demangled
        launches[name] = launches.get(name, 0) + 1 / measured.size
        time_ns[name] = time_ns.get(name, 0) + dur / measured.size
    return launches, time_ns


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_trace_and_recording_hold_the_same_kernels_and_times(program: str, variant: str) -> None:
    trace = load_input(_trace(program, variant))
    recording = load_input(_recording(program, variant))
    launches_t, time_t = per_step(trace)
    launches_r, time_r = per_step(recording)
    assert launches_t.keys() == launches_r.keys()
    assert launches_t == pytest.approx(launches_r)
    assert np.abs(_ratios(time_t, time_r)).max() < 0.04


def _ratios(time_t: dict[str, float], time_r: dict[str, float]) -> np.ndarray:
    big = [n for n in time_r if max(time_r[n], time_t[n]) > MIN_NS]
    return np.asarray([time_t[n] / time_r[n] - 1 for n in big])


def test_most_kernels_agree_within_two_percent() -> None:
    """Pooled over the six pairs: 147 of 149 (pair, kernel) rows > 10 us within 2 %."""
    ratios = np.concatenate([
        _ratios(per_step(load_input(_trace(p, v)))[1], per_step(load_input(_recording(p, v)))[1])
        for p in PROGRAMS for v in VARIANTS])
    within = int((np.abs(ratios) <= 0.02).sum())
    assert (within, ratios.size) == (147, 149)


def test_the_rows_beyond_two_percent_are_two_of_train_abnormal() -> None:
    """Every row > 10 us of five pairs is within 2 % (the acceptance bound); the exceptions are
    train-abnormal's GEMM ``nvjet_sm90_tst_128x160_64x5_2x4_h_bz_NTT`` (57.4 us per step in the
    trace against 55.3 us in the recording, +3.8 %) and ``nll_loss_backward_reduce_cuda_kernel_2d``
    (11.5 against 11.2 us, +2.1 %). Not the clock: both processes ran at 1980 MHz with no
    throttle reason (NVML in the recording, nvidia-smi before and after the trace). The GEMM's
    22 and 20 launches spread 54.3-59.7 us within each process; the trace's sit more often in
    the slow mode (Welch p = 1.5e-6, so a difference between the processes, not sampling noise
    of the means); the same GEMM in train-normal agrees within 1 %. The two training processes
    also ran different numbers of unmeasured steps (1546 and 1149) before measuring, so their
    weights and dropout masks differ; whether that is the cause was not established."""
    beyond = []
    for program in PROGRAMS:
        for variant in VARIANTS:
            time_t = per_step(load_input(_trace(program, variant)))[1]
            time_r = per_step(load_input(_recording(program, variant)))[1]
            beyond += [(program, variant, name, round(time_t[name] / time_r[name] - 1, 3))
                       for name in time_r if max(time_r[name], time_t[name]) > MIN_NS
                       and abs(time_t[name] / time_r[name] - 1) > 0.02]
    assert [(p, v, r) for p, v, _, r in sorted(beyond, key=lambda row: row[3])] == [
        ("train", "abnormal", 0.021), ("train", "abnormal", 0.038)]
    names = sorted(name for *_, name, _ in beyond)
    assert names[0].startswith("nvjet_sm90_tst_128x160_64x5_2x4_h")
    assert "nll_loss_backward_reduce_cuda_kernel_2d" in names[1]


def _nvml_in_cycles(path: Path) -> dict[str, np.ndarray]:
    run = load_input(path).runs[0]
    lo, hi = int(run.cycles.start_ns.min()), int(run.cycles.end_ns.max())
    return {m.name: np.asarray(m.values)[(np.asarray(m.timestamps_ns) >= lo)
                                         & (np.asarray(m.timestamps_ns) <= hi)]
            for m in run.metrics}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_no_recording_ran_at_the_power_cap(program: str, variant: str) -> None:
    """The 5 ms gap after every step (kineto_prog.py --gap-ms) keeps the GPU below its power
    cap: over the measured cycles every NVML sample reads no throttle reason (the earlier
    gap-less gpt-normal read 0x4, SW power cap, at 674-680 W and 1785-1830 MHz, where the clock
    followed the power draw and its kernels differed by up to 4.3 %), the SM clock at its 1980
    MHz maximum, and at most 354 W of the H100's 700 W."""
    nvml = _nvml_in_cycles(_recording(program, variant))
    assert nvml["nvml.throttle_reasons"].size >= 30
    assert (nvml["nvml.throttle_reasons"] == 0).all()
    assert (nvml["nvml.sm_clock"] == 1980).all()
    assert nvml["nvml.power"].max() < 360


def _first_finding(normal: Path, abnormal: Path, run_cli: object) -> str:
    code, out, _ = run_cli("compare", str(normal), str(abnormal),  # type: ignore[operator]
                           "--format", "json")
    assert code == 0
    findings = json.loads(out)["comparison"]["findings"]
    return "(none)" if not findings else f"{findings[0]['function']} {findings[0]['verdict']}"


FIRST_FINDINGS = {  # what both sources named, 2026-11-25 03:45 run (fixtures/README.md)
    "gpt": "[GPU idle] slower",
    "train": "(none)",
    "hf": "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast"
          "<at::native::CUDAFunctor_add<c10::Half> >",
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_compare_names_the_same_first_finding(program: str, run_cli: object) -> None:
    """gpt: the abnormal side's attention kernels are listed as appeared, and of the shared
    rows ``[GPU idle]`` grew (+1.69 ms per step in the traces, +1.59 ms in the recordings);
    train: nothing significant on either side; hf: the fp16 add of the eager attention's mask."""
    from_traces = _first_finding(_trace(program, "normal"), _trace(program, "abnormal"),
                                 run_cli)
    from_recordings = _first_finding(_recording(program, "normal"),
                                     _recording(program, "abnormal"), run_cli)
    assert from_traces == from_recordings
    assert from_traces.startswith(FIRST_FINDINGS[program])
    assert from_traces.endswith(" slower") or from_traces == "(none)"


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_trace_without_steps_gets_cycles_from_its_launch_period(program: str,
                                                                  tmp_path: Path) -> None:
    """The same H100 trace with its ProfilerStep ranges taken out: the repeating launch
    sequence (perfdiff.schema.periods) gives cycles of the same kernels as the steps did."""
    import gzip

    path = _trace(program, "normal")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if not str(e.get("name", "")).startswith("ProfilerStep#")]
    stepless = tmp_path / "no-steps.json"
    stepless.write_text(json.dumps(doc))
    detected = load_input(stepless)
    stepped = load_input(path)
    assert "cycles from the launch sequence, detected period of" in (
        detected.collection.warnings[0])
    k_detected, k_stepped = detected.runs[0].kernels, stepped.runs[0].kernels
    per_cycle = np.bincount(k_detected.cycle[k_detected.cycle >= 0])
    per_stepped = np.bincount(k_stepped.cycle - stepped.runs[0].cycles.index.min())
    assert set(per_cycle.tolist()) == set(per_stepped.tolist())  # one period = one step
    assert detected.runs[0].cycles.index.size >= stepped.runs[0].cycles.index.size - 1
    _, time_detected = per_step(detected)
    _, time_stepped = per_step(stepped)
    assert time_detected.keys() == time_stepped.keys()
    assert np.abs(_ratios(time_detected, time_stepped)).max() < 0.05
