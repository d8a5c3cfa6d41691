"""The reduce gives today's report: a run compared as shards (mapped shard by shard in this
process) reads exactly as the same run compared as one file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfdiff.analysis.ranks.entry import ranks_of_loaded
from perfdiff.cli.compare_run import compare_paths
from perfdiff.engine.run import ranks_of_path
from perfdiff.errors import InputError
from perfdiff.readers.dispatch import open_input
from perfdiff.report.json_report import render_json
from perfdiff.report.markdown import render_markdown
from perfdiff.report.ranks import render_ranks_markdown
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.shards import write_shards
from tests.factories import make_run_file
from tests.rank_factories import make_job

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def _as_shards(source: Path, folder: Path) -> Path:
    return write_shards(load_run_file(source), folder)


def _same_text(sharded: str, single: str, names: dict[str, str]) -> None:
    for folder, file in names.items():
        sharded = sharded.replace(folder, file)
    assert sharded == single


def test_the_ddp_pair_as_shards_gives_the_report_of_the_files(tmp_path: Path) -> None:
    normal, abnormal = FIXTURES / "ddp-normal.json.gz", FIXTURES / "ddp-contended-gpu1.json.gz"
    shards = (_as_shards(normal, tmp_path / "n"), _as_shards(abnormal, tmp_path / "a"))
    seen: list[tuple[str, int, int]] = []
    comparison, _ = compare_paths(*shards, progress=lambda *a: seen.append(a))
    single = compare_paths(normal, abnormal)[0]
    names = {str(shards[0]): str(normal), str(shards[1]): str(abnormal)}
    _same_text(render_markdown(comparison), render_markdown(single), names)
    _same_text(render_json(comparison), render_json(single), names)
    assert seen == [("normal", 1, 2), ("normal", 2, 2), ("abnormal", 1, 2), ("abnormal", 2, 2)]


def test_replicate_runs_pool_as_in_one_file(tmp_path: Path) -> None:
    """Three runs of one process role (rank None): one shard each, pooled as runs."""
    normal, abnormal = make_run_file(n_runs=3, seed=1), make_run_file(n_runs=3, seed=2)
    files = (save_run_file(normal, tmp_path / "n.json"), save_run_file(abnormal,
                                                                      tmp_path / "a.json"))
    shards = (write_shards(normal, tmp_path / "ns"), write_shards(abnormal, tmp_path / "as"))
    comparison, _ = compare_paths(*shards)
    assert comparison.test_unit == "runs"
    _same_text(render_json(comparison), render_json(compare_paths(*files)[0]),
               {str(shards[0]): str(files[0]), str(shards[1]): str(files[1])})


def test_one_side_sharded_the_other_a_file(tmp_path: Path) -> None:
    normal, abnormal = FIXTURES / "ddp-normal.json.gz", FIXTURES / "ddp-contended-gpu1.json.gz"
    shard = _as_shards(abnormal, tmp_path / "a")
    comparison, _ = compare_paths(normal, shard)
    _same_text(render_markdown(comparison), render_markdown(compare_paths(normal, abnormal)[0]),
               {str(shard): str(abnormal)})


def test_ranks_of_shards_is_ranks_of_the_file(tmp_path: Path) -> None:
    job = make_job(8, slower={4: {"gemm_kernel": 1.3}})
    file = save_run_file(job, tmp_path / "job.json.gz")
    shards = write_shards(job, tmp_path / "job")
    sharded = render_ranks_markdown(ranks_of_path(shards))
    single = render_ranks_markdown(ranks_of_loaded(open_input(file)))
    _same_text(sharded, single, {str(shards): str(file)})
    assert "**rank 4 is a straggler**" in sharded


def test_cycle_range_on_shards_is_refused(tmp_path: Path) -> None:
    shards = _as_shards(FIXTURES / "ddp-normal.json.gz", tmp_path / "n")
    with pytest.raises(InputError, match="--cycle-range"):
        compare_paths(shards, shards, cycle_range="step")


def test_small_inputs_do_not_load_dask() -> None:
    """compare of run files pays no Dask import time (bench/README.md, "Ranks on Dask").
    (pyarrow, when installed, is pandas' own import: pandas 3 stores strings in it.)"""
    code = (
        "import sys\n"
        "from perfdiff.cli.compare_run import CompareArgs, run_compare\n"
        "from pathlib import Path\n"
        f"run_compare(CompareArgs(Path({str(FIXTURES / 'ddp-normal.json.gz')!r}), "
        f"Path({str(FIXTURES / 'ddp-contended-gpu1.json.gz')!r}), output=Path('/dev/null')))\n"
        "print(sorted(m for m in ('distributed', 'dask') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_when_a_local_cluster_starts() -> None:
    """Measured (bench/README.md): on 2 cores the in-process map wins at every size."""
    from perfdiff.engine.settings import EngineSettings

    assert not EngineSettings(workers=2).local_cluster(10**9)
    assert not EngineSettings(workers=8).local_cluster(1_000_000)
    assert EngineSettings(workers=8).local_cluster(100_000_000)
    assert EngineSettings(workers=2, min_cores=2, in_process_max_launches=0).local_cluster(1)
