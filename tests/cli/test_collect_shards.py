"""``perfdiff collect --shards -o DIR -- torchrun ...``: one Parquet shard per rank, each with
the run metadata, read by ``ranks`` and ``compare`` as the same job written as one file.

On CPU (the fake backend): the two workers replay the real two-GPU DDP recordings kernel by
kernel (``fixtures/ddp-*.json.gz``: each rank's recorded kernels, durations and cycles), so the
collector's whole path (injected child, per-rank files, merge, the shards) is fed by recorded
data. On the GPU: `fixtures/ddp-shards/` (tests/engine/test_ranks_ddp_gpu_shards.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfdiff.engine.run import compare_sharded, ranks_of_path
from perfdiff.errors import ExitCode
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import is_sharded_run, load_shard, read_manifest
from tests.support.fake_cupti import PERFDIFF_FAKE, fake_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

LAUNCHER = """
import os, subprocess, sys
procs = [subprocess.Popen([sys.executable, "worker.py", *sys.argv[1:]],
                          env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r),
                               "WORLD_SIZE": "2"}) for r in range(2)]
sys.exit(max(p.wait() for p in procs))
"""

# Replays rank RANK of a recorded run file: per recorded cycle, its kernels in start order with
# their recorded durations, then waits until the (simulated) GPU is done, as a step does.
WORKER = """
import os, sys, time
import numpy as np
import perfdiff
from tests.support.fake_cupti import launch
from perfdiff.schema.io import load_run_file

recorded = load_run_file(sys.argv[1])
run = next(r for r in recorded.runs if r.rank == int(os.environ["RANK"]))
k = run.kernels
for index in run.cycles.index:
    at = np.flatnonzero(k.cycle == index)
    at = at[np.argsort(k.start_ns[at], kind="stable")]
    with perfdiff.cycle():
        for i in at:
            launch(recorded.strings[int(k.name_id[i])].demangled,
                   (int(k.end_ns[i]) - int(k.start_ns[i])) / 1e6)
        time.sleep(0.002 + float((k.end_ns[at] - k.start_ns[at]).sum()) / 1e9)
"""


def _collect_shards(folder: Path, fixture: Path, out: Path,
                    **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = fake_env({**os.environ, "PYTHONPATH": str(ROOT)}, **extra_env)
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    return subprocess.run([*PERFDIFF_FAKE, "collect", "--shards", "-o", str(out), "--warmup", "5",
                           "--untraced-every", "0",
                           "--", sys.executable, "fake_torchrun.py", str(fixture)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("collect-shards")
    (folder / "fake_torchrun.py").write_text(LAUNCHER)
    (folder / "worker.py").write_text(WORKER)
    out = {}
    for name in ("ddp-normal", "ddp-contended-gpu1"):
        proc = _collect_shards(folder, FIXTURES / f"{name}.json.gz", folder / name)
        assert proc.returncode == 0, proc.stderr
        out[name] = folder / name
    return out


def test_one_shard_per_rank_with_the_recorded_kernels(jobs: dict[str, Path]) -> None:
    job = jobs["ddp-contended-gpu1"]
    assert is_sharded_run(job)
    sharded = read_manifest(job)
    assert [e.rank for e in sharded.entries] == [0, 1]
    recorded = load_run_file(FIXTURES / "ddp-contended-gpu1.json.gz")
    for entry in sharded.entries:
        shard = load_shard(sharded, entry)  # validated as a run file of one run
        (run,) = shard.runs
        assert run.rank == entry.rank and run.pid == entry.pid
        assert "collect_command" in shard.workload.params  # the run metadata travels along
        assert set(run.kernels.device.tolist()) == {run.rank}
        source = next(r for r in recorded.runs if r.rank == run.rank)
        measured = np.isin(source.kernels.cycle, source.cycles.index)
        names = sorted(recorded.strings[int(i)].demangled
                       for i in source.kernels.name_id[measured])
        assert sorted(shard.strings[int(i)].mangled for i in run.kernels.name_id) == names
        assert int((~run.cycles.warmup).sum()) == 40


def test_ranks_of_the_collected_shards_name_the_contended_rank(jobs: dict[str, Path]) -> None:
    report = ranks_of_path(jobs["ddp-contended-gpu1"])
    assert [r.rank for r in report.stragglers] == ["rank 1"]
    names = [k.function for k in report.ranks[0].kernels]
    assert "cutlass_80_simt_sgemm" in names[0]
    assert report.ranks[0].waits and "AllReduce" in report.ranks[0].waits[0].function
    assert ranks_of_path(jobs["ddp-normal"]).stragglers == ()


def test_compare_of_the_collected_shards_finds_the_contended_gpu(jobs: dict[str, Path]) -> None:
    comparison, _ = compare_sharded(jobs["ddp-normal"], jobs["ddp-contended-gpu1"])
    verdicts = {d.device: d.verdict for d in comparison.devices}
    assert verdicts["GPU 1"] == "slower"
    first = next(f for f in comparison.findings if not f.function.startswith("["))
    assert first.device == "GPU 1" and "gemm" in first.function.lower()


def test_an_existing_folder_is_not_overwritten_and_the_recording_is_kept(
        tmp_path: Path) -> None:
    (tmp_path / "fake_torchrun.py").write_text(LAUNCHER)
    (tmp_path / "worker.py").write_text(WORKER)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    proc = _collect_shards(tmp_path, FIXTURES / "ddp-normal.json.gz", taken,
                           TMPDIR=str(env_tmp))
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    assert (taken / "notes.txt").read_text() == "mine" and len(list(taken.iterdir())) == 1
    saved = [p for p in env_tmp.iterdir() if p.name.endswith("taken")]
    assert len(saved) == 1 and is_sharded_run(saved[0]), proc.stderr
    assert "saved to" in proc.stderr and "Traceback" not in proc.stderr


def test_shards_without_pyarrow_refuse_before_the_program_runs(tmp_path: Path) -> None:
    """The shards are written after the run: a missing pyarrow must stop the command before
    the program starts, not lose the recording after it."""
    hide_arrow = [sys.executable, "-c",
                  "import sys; sys.modules['pyarrow'] = None; "
                  "from tests.support.fake_cupti import perfdiff_main; perfdiff_main()"]
    out = tmp_path / "job"
    env = fake_env()
    env.pop("PERFDIFF_INJECT_CONFIG", None)
    proc = subprocess.run(
        [*hide_arrow, "collect", "--shards", "-o", str(out), "--", sys.executable, "-c",
         "open('ran', 'w').close()"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "pyarrow" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ran").exists() and not out.exists()
