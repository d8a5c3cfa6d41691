"""The benchmark workloads on a real GPU: all four RMSNorm implementations against the float64
reference (the CUDA extension is built here if it is not cached), labelled cases in recorded
run files, GPU time per case from kernel records, and the linalg backend choice.

Shapes are those of the fixtures' reduced grid (hidden 64 and 1027), so Triton's compile cache
and the extension build are shared with ``scripts/gpu_bench.sh``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfdiff.analysis.bench_cases import bench_run
from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file

pytestmark = pytest.mark.gpu

PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]


def collect(tmp_path: Path, *args: str) -> tuple[Path, int, str]:
    out = tmp_path / "run.json.gz"
    proc = subprocess.run([*PERFDIFF, "collect", *args, "-q", "--no-pm", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    return out, proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_every_implementation_matches_the_float64_reference(dtype: str, direction: str) -> None:
    import torch

    from perfdiff.collect.workloads.rmsnorm import IMPLS, Case, build_impls, check_case

    impls = build_impls(IMPLS, 1e-6)
    gen = torch.Generator(device="cuda").manual_seed(7)
    for shape in ((4, 128, 64), (4, 128, 1027)):
        for name, fn in impls.items():
            for result in check_case(torch, fn, Case(name, dtype, direction, shape), "cuda",
                                     gen, 1e-6):
                print(result.line())
                assert result.ok, result.line()


def test_cuda_extension_writes_compile_commands() -> None:
    from perfdiff.collect.kernels import rmsnorm_cuda

    module = rmsnorm_cuda.load_extension()
    db = Path(module.__file__).parent / "compile_commands.json"
    assert db.exists() and "rmsnorm_kernels.cu" in db.read_text()


def test_rmsnorm_run_file_has_one_labelled_case_per_combination(tmp_path: Path) -> None:
    path, rc, text = collect(
        tmp_path, "rmsnorm", "--cycles", "4", "--warmup", "1", "-p", "seq=128",
        "-p", "hidden=64", "-p", "dtypes=float32,bfloat16",
    )
    assert rc == 0, text
    run = bench_run(load_run_file(path), str(path))
    assert len(run.cases) == 4 * 2 * 2
    for case in run.cases.values():
        assert case.n == 4
        assert np.all(case.launches >= 1), case.label
        assert np.all(case.gpu_ms > 0), case.label
        # kernels of one call run one after another: busy time never exceeds the span
        assert np.all(case.kernel_ms <= case.gpu_ms * 1.0001 + 1e-6), case.label
    naive = run.cases["impl=naive dtype=float32 direction=forward shape=4x128x64"]
    cuda = run.cases["impl=cuda dtype=float32 direction=forward shape=4x128x64"]
    assert np.median(naive.launches) > np.median(cuda.launches) == 1


def test_linalg_run_file_has_gpu_and_cpu_cases(tmp_path: Path) -> None:
    path, rc, text = collect(
        tmp_path, "linalg", "--cycles", "3", "--warmup", "1", "-p", "sizes=2,64",
        "-p", "batches=[],[2]", "-p", "backend=cusolver",
    )
    assert rc == 0, text
    run = bench_run(load_run_file(path), str(path))
    gpu = [c for c in run.cases.values() if c.fields["device"] == "cuda"]
    cpu = [c for c in run.cases.values() if c.fields["device"] == "cpu"]
    assert len(gpu) == len(cpu) == 4
    assert all(c.on_gpu for c in gpu) and not any(c.on_gpu for c in cpu)
    assert all(np.all(c.host_ms > 0) for c in cpu)


def test_magma_backend_is_refused_when_torch_lacks_it(tmp_path: Path) -> None:
    import torch

    if torch.cuda.has_magma:
        pytest.skip("this torch has MAGMA; nothing to refuse")
    _, rc, text = collect(tmp_path, "linalg", "--cycles", "1", "-p", "backend=magma")
    assert rc == ExitCode.USAGE, text
    assert "has_magma is False" in text and "cusolver" in text
