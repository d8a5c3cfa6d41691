"""CUDA-graph replays recorded right (issue 28 item 7): with untraced cycles between traced
ones, every traced replay keeps its 32 kernels with their own start and end.

Before the flush in ``CuptiActivityBackend.pause`` the replay traced just before each untraced
cycle got its kernels' ends from the next replay (32 x ~310 us in a 0.33 ms cycle on the H100,
2026-11-28). Written after the H100 runs of bench/record_truth/cuda_graph_mlp.py that it repeats
(bench/README.md, issue 28); as a test it has not run on a GPU yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfdiff.schema.io import load_run_file

pytestmark = pytest.mark.gpu
PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]
PROGRAM = Path(__file__).resolve().parents[2] / "bench" / "record_truth" / "cuda_graph_mlp.py"
KERNELS_PER_REPLAY = 32  # 8 blocks x (layer norm, GEMM, GELU, GEMM)


def test_graph_replays_keep_their_kernels_around_untraced_cycles(tmp_path: Path) -> None:
    out = tmp_path / "graph.json.gz"
    env = dict(os.environ)
    proc = subprocess.run(
        [*PERFDIFF, "collect", "-q", "--cycle-range", "step", "--untraced-every", "4",
         "--warmup", "3", "--no-pm", "--no-nvml", "-o", str(out), "--", sys.executable,
         str(PROGRAM), "--dtype", "bf16", "--steps", "40"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    assert not any("overlapped" in w for w in rf.collection.warnings), rf.collection.warnings
    run = rf.runs[0]
    cycles, kernels = run.cycles, run.kernels
    traced = np.asarray(cycles.traced)
    assert (traced == 0).sum() >= 5
    measured = np.flatnonzero((traced == 1) & ~np.asarray(cycles.warmup))
    inside = kernels.cycle >= 0
    counts = np.bincount(kernels.cycle[inside], minlength=cycles.index.size)
    assert set(counts[measured].tolist()) == {KERNELS_PER_REPLAY}
    busy = np.bincount(kernels.cycle[inside], weights=(kernels.end_ns - kernels.start_ns)[inside],
                       minlength=cycles.index.size)
    assert (busy[measured] <= (cycles.end_ns - cycles.start_ns)[measured]).all()
