"""End-to-end collection on a real GPU: kernels, cycles, PM utilisation, partial files.

Each test runs ``perfdiff collect`` as the user would (a subprocess), with a small model so
the whole file takes well under a minute on an H100.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.kernel_metrics import kernel_metric_means
from perfdiff.collect.cupti.pm_sampling import DRAM_METRIC, TENSOR_METRIC
from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file

pytestmark = pytest.mark.gpu

PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]
SMALL = ["-p", "layers=2"]


def collect(tmp_path: Path, *args: str, name: str = "run.json.gz") -> tuple[Path, int, str]:
    out = tmp_path / name
    proc = subprocess.run([*PERFDIFF, "collect", *args, "-q", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    return out, proc.returncode, proc.stdout + proc.stderr


def test_gpt_infer_records_every_cycle_and_pm_utilisation(tmp_path: Path) -> None:
    path, rc, text = collect(tmp_path, "gpt-infer", "--cycles", "10", "--warmup", "2",
                             "--untraced-every", "8", *SMALL)
    assert rc == 0, text
    rf = load_run_file(path)
    run = rf.runs[0]
    assert rf.status.state == "complete"
    # measured cycles 7 and 8 of 10 run untraced (collect/cycles/overhead.py, a run of two): flagged
    # warm-up, no kernels
    traced = run.cycles.traced
    assert traced is not None and np.flatnonzero(traced == 0).tolist() == [8, 9]
    assert run.cycles.index.size == 12 and int(run.cycles.warmup.sum()) == 4
    assert set(rf.collection.sources) == {"cupti_activity", "pm_sampling", "nvml"}, \
        rf.collection.warnings
    in_cycle = run.kernels.cycle >= 0
    counts = np.bincount(run.kernels.cycle[in_cycle], minlength=12)
    assert counts[8] == counts[9] == 0
    counts = counts[traced == 1]
    # PM sampling starts with the first measured cycle: warm-up kernels have no samples.
    measured = in_cycle & ~run.cycles.warmup[np.clip(run.kernels.cycle, 0, None)]
    assert counts.min() == counts.max() > 10  # same launch sequence every cycle
    by_name = {m.name: m for m in run.metrics}
    tensor = kernel_metric_means(run, by_name[TENSOR_METRIC])
    dram = kernel_metric_means(run, by_name[DRAM_METRIC])
    names = [rf.strings[i].demangled for i in run.kernels.name_id]
    dur = run.kernels.end_ns - run.kernels.start_ns
    gemm = np.array([("gemm" in n or "nvjet" in n or "cutlass" in n) for n in names])
    long_gemm = gemm & (dur > 20_000) & measured
    elementwise = np.array(["elementwise" in n for n in names]) & measured & (dur > 10_000)
    assert long_gemm.any() and elementwise.any()
    assert np.nanmedian(tensor[long_gemm]) >= 50.0
    assert np.nanmedian(tensor[elementwise]) <= 5.0
    assert np.isfinite(dram[measured]).mean() > 0.9


def test_kernels_run_after_the_host_cycle_still_belong_to_it(tmp_path: Path) -> None:
    path, rc, text = collect(tmp_path, "gpt-infer", "--cycles", "5", "--warmup", "1", *SMALL)
    assert rc == 0, text
    run = load_run_file(path).runs[0]
    inside = run.kernels.cycle >= 0
    starts = run.cycles.start_ns[run.kernels.cycle[inside]]
    # Every kernel starts on the GPU after its cycle began on the host (launch precedes run).
    assert (run.kernels.start_ns[inside] >= starts).all()


def test_workload_exception_leaves_an_incomplete_file(tmp_path: Path) -> None:
    path, rc, text = collect(tmp_path, "gpt-infer", "--cycles", "10", "--warmup", "1",
                             "-p", "fail_after_cycles=4", *SMALL)
    assert rc == ExitCode.WORKLOAD_FAILED, text
    assert "partial run file written" in text
    rf = load_run_file(path)
    assert rf.status.state == "incomplete" and "RuntimeError" in (rf.status.reason or "")
    assert rf.runs[0].cycles.index.size == 4  # cycles 0-3 completed, 4 raised


def test_ctrl_c_leaves_an_incomplete_file(tmp_path: Path) -> None:
    out = tmp_path / "interrupted.json.gz"
    # --no-pm: a 5 us PM interval over 20 s would be millions of samples to decode.
    proc = subprocess.Popen([*PERFDIFF, "collect", "gpt-infer", "--cycles", "1000000",
                             "--warmup", "1", "--no-pm", *SMALL, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(20)
    proc.send_signal(signal.SIGINT)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, text
    rf = load_run_file(out)
    assert rf.status.state == "incomplete"
    assert re.match(r"interrupted \(Ctrl-C\) after \d+ cycles", rf.status.reason or "")
    assert rf.runs[0].cycles.index.size > 0


def test_boundary_marks_give_the_same_cycles_as_launch_api_records(tmp_path: Path) -> None:
    """The default (boundary marks) against --api-records: same kernels in every cycle."""
    runs = {}
    for name, extra in (("marks", []), ("api", ["--api-records"])):
        path, rc, text = collect(tmp_path, "gpt-infer", "--cycles", "6", "--warmup", "1",
                                 "--no-pm", *SMALL, *extra, name=f"{name}.json.gz")
        assert rc == 0, text
        rf = load_run_file(path)
        assert not any("mark" in w or "launch API" in w for w in rf.collection.warnings), \
            rf.collection.warnings
        runs[name] = rf
    per_cycle = {}
    for name, rf in runs.items():
        run = rf.runs[0]
        names = np.array([rf.strings[i].demangled for i in run.kernels.name_id])
        per_cycle[name] = [sorted(names[run.kernels.cycle == c].tolist())
                           for c in run.cycles.index]
        assert (run.kernels.cycle >= 0).sum() > 0
    assert per_cycle["marks"] == per_cycle["api"]


def test_partition_neighbour_slows_the_gemms_and_stays_out_of_the_run_file(
    tmp_path: Path,
) -> None:
    """--contend-mode partition holds half of the SMs: the workload's GEMMs, whose blocks need
    whole SMs, get slower; the neighbour's own kernel (``_hold``) is not in the run file."""
    args = ["gpt-infer", "--cycles", "10", "--warmup", "2", "--no-pm", *SMALL]
    normal, rc, text = collect(tmp_path, *args, name="normal.json.gz")
    assert rc == 0, text
    held, rc, text = collect(tmp_path, *args, "--contend", "0.5", "--contend-mode", "partition",
                             name="partition.json.gz")
    assert rc == 0, text
    rf = load_run_file(held)
    assert rf.workload.params["contend_mode"] == "partition"
    assert any("--contend neighbour" in w for w in rf.collection.warnings), rf.collection.warnings

    def gemm_ms_per_cycle(path: Path) -> float:
        f = load_run_file(path)
        run = f.runs[0]
        names = [f.strings[i].demangled for i in run.kernels.name_id]
        assert not any(n.startswith("_hold") for n in names)
        measured = (run.kernels.cycle >= 0) & ~run.cycles.warmup[
            np.clip(run.kernels.cycle, 0, None)]
        gemm = np.array(["nvjet" in n or "gemm" in n or "cutlass" in n for n in names])
        dur = (run.kernels.end_ns - run.kernels.start_ns)[gemm & measured]
        return float(dur.sum()) / 1e6 / int((~run.cycles.warmup).sum())

    assert gemm_ms_per_cycle(held) > 1.3 * gemm_ms_per_cycle(normal)
