"""The H100 fixtures: each program recorded by perfdiff's collector and by torch.profiler.

Issue 15's acceptance per pair (normal, abnormal): ``perfdiff compare`` of the two traces names
the same first finding as ``perfdiff compare`` of the two perfdiff recordings, and per-kernel
GPU time per step agrees within 2 % between the sources for kernels > 10 us. All twelve files
come from one device call (2026-11-27 16:45:38-16:49:23 UTC, NVIDIA H100 80GB HBM3, driver
580.159.04, torch 2.11.0+cu130; ``MODE=both SETTLE_S=20 GAP_MS=5 GAP_MS_TRAIN=15 bash
scripts/gpu/kineto_record.sh``, fixtures/README.md): each program ran in ONE process
(kineto_prog.py --mode both): a 20 s settle, a recording by perfdiff's own collector
in-process (``run_collection``, the code path of ``perfdiff collect``: no PM, warm-up 5, NVML,
1 cycle in 8 untraced), then a torch.profiler trace of the same program, so both sources
measure the same process, tensors and clock. Every step sleeps 5 ms (train 15 ms) after its
work, which keeps the GPU below its power cap: NVML over every recording's measured cycles
reads SM clock 1980 MHz, no throttle reason, 252-365 W. The train program is GPU-bound since
commit 4db4395 (64 x 512 tokens at d_model 1024). The acceptance is met: **145 of 145** (pair,
kernel) rows > 10 us agree within 2 % (worst -0.92 %, train-abnormal; +1.34 %, hf-normal),
and the first findings agree in all three programs. Every older set (separate processes, or
the smaller, host-paced train program) left 2-6 rows beyond 2 % (bench/README.md,
torch.profiler section).
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


ROWS = {  # (pair, kernel) rows > 10 us per pair, 145 in all
    ("gpt", "normal"): 10, ("gpt", "abnormal"): 15, ("train", "normal"): 40,
    ("train", "abnormal"): 46, ("hf", "normal"): 15, ("hf", "abnormal"): 19,
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_trace_and_recording_hold_the_same_kernels_and_times(program: str, variant: str) -> None:
    """Same kernel names, same launches per step, every kernel > 10 us within 2 % (worst per
    pair: gpt -0.87 % and -0.29 %, train +0.65 % and -0.92 %, hf +1.34 % and +1.24 %), and
    all kernel time per step within 0.5 % (at most +0.46 %, hf-abnormal)."""
    trace = load_input(_trace(program, variant))
    recording = load_input(_recording(program, variant))
    launches_t, time_t = per_step(trace)
    launches_r, time_r = per_step(recording)
    assert launches_t.keys() == launches_r.keys()
    assert launches_t == pytest.approx(launches_r)
    ratios = _ratios(time_t, time_r)
    assert ratios.size == ROWS[program, variant]
    assert np.abs(ratios).max() <= 0.02
    assert abs(sum(time_t.values()) / sum(time_r.values()) - 1) < 0.005


def _ratios(time_t: dict[str, float], time_r: dict[str, float]) -> np.ndarray:
    big = [n for n in time_r if max(time_r[n], time_t[n]) > MIN_NS]
    return np.asarray([time_t[n] / time_r[n] - 1 for n in big])


def test_every_kernel_agrees_within_two_percent() -> None:
    """Pooled over the six pairs: 145 of 145 (pair, kernel) rows > 10 us within 2 %, all
    within 1.4 % (issue 15's bound, met for every row)."""
    ratios = np.concatenate([
        _ratios(per_step(load_input(_trace(p, v)))[1], per_step(load_input(_recording(p, v)))[1])
        for p in PROGRAMS for v in VARIANTS])
    within = int((np.abs(ratios) <= 0.02).sum())
    assert (within, ratios.size) == (145, 145)
    assert np.abs(ratios).max() < 0.014


def _nvml_in_cycles(path: Path) -> dict[str, np.ndarray]:
    run = load_input(path).runs[0]
    lo, hi = int(run.cycles.start_ns.min()), int(run.cycles.end_ns.max())
    return {m.name: np.asarray(m.values)[(np.asarray(m.timestamps_ns) >= lo)
                                         & (np.asarray(m.timestamps_ns) <= hi)]
            for m in run.metrics}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_no_recording_ran_at_the_power_cap(program: str, variant: str) -> None:
    """The gap after every step (kineto_prog.py --gap-ms: 5 ms, train 15 ms) keeps the GPU
    below its power cap: over the measured cycles (23-67 samples per recording) every NVML
    sample reads no throttle reason (an earlier gap-less gpt-normal read 0x4, SW power cap, at
    674-680 W and 1785-1830 MHz, where the clock followed the power draw and its kernels
    differed by up to 4.3 %), the SM clock at its 1980 MHz maximum, and at most 365 W
    (gpt-abnormal; 252-365 W over all six) of the H100's 700 W."""
    nvml = _nvml_in_cycles(_recording(program, variant))
    assert nvml["nvml.throttle_reasons"].size >= 20
    assert (nvml["nvml.throttle_reasons"] == 0).all()
    assert (nvml["nvml.sm_clock"] == 1980).all()
    assert nvml["nvml.power"].max() < 370


def _first_finding(normal: Path, abnormal: Path, run_cli: object) -> str:
    code, out, _ = run_cli("compare", str(normal), str(abnormal),  # type: ignore[operator]
                           "--format", "json")
    assert code == 0
    findings = json.loads(out)["comparison"]["findings"]
    return "(none)" if not findings else f"{findings[0]['function']} {findings[0]['verdict']}"


FIRST_FINDINGS = {  # what both sources named (recordings of 2026-11-27 16:45, fixtures/README.md)
    "gpt": "[replaced] attention → GEMM + softmax slower",
    "train": "[elementwise] slower",
    "hf": "[replaced] attention → GEMM + softmax slower",
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_compare_names_the_same_first_finding(program: str, run_cli: object) -> None:
    """gpt and hf: the fused attention kernel replaced by GEMMs + softmax (issue 23's
    replaced groups; before them the report led with ``[GPU idle]`` and the fp16 mask add);
    train: the fused AdamW replaced by its unfused elementwise kernels, which no single kernel
    row showed ("(none)" before kernel families)."""
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
    assert "cycles from the kernel sequence as run on the GPU, detected period of" in (
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
