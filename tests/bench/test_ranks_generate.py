"""bench/ranks/generate.py: the generated job keeps the recording's kernel mix and jitter, and
every shard it writes is a valid run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.ranks.generate import GEMM, build_rank, job_header, source_steps
from perfdiff.schema.io import load_run_file
from perfdiff.schema.shards import ShardWriter, load_shard, read_manifest

SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "trainer-gpt2.json.gz"


def test_a_generated_rank_keeps_the_mix_and_the_durations(tmp_path: Path) -> None:
    source = load_run_file(SOURCE)
    steps = source_steps(source.runs[0])
    slow = np.asarray([bool(GEMM.search(s.demangled)) for s in source.strings])
    header = job_header(source, 2, str(SOURCE), micro=4)
    writer = ShardWriter(tmp_path / "job", 2)
    runs = [build_rank(source, steps, rank=r, launches=50_000, micro=4, slow=slow,
                       slow_factor=1.0 if r == 0 else 1.5, seed=3) for r in range(2)]
    for run in runs:
        writer.add(header, run)
    sharded = read_manifest(writer.finish())
    loaded = [load_shard(sharded, e).runs[0] for e in sharded.entries]  # validated
    assert [r.rank for r in loaded] == [0, 1] and [r.pid for r in loaded] == [100000, 100001]
    src = source.runs[0].kernels
    measured = np.isin(src.cycle, source.runs[0].cycles.index[~source.runs[0].cycles.warmup])
    mix_source = np.bincount(src.name_id[measured], minlength=len(source.strings))
    mix_rank = np.bincount(loaded[0].kernels.name_id, minlength=len(source.strings))
    np.testing.assert_allclose(mix_rank / mix_rank.sum(), mix_source / mix_source.sum(),
                               atol=0.002)
    assert abs(loaded[0].kernels.name_id.size - 50_000) < 4 * 1106
    # every duration of rank 0 is a recorded one; rank 1's GEMMs are 1.5 x theirs
    recorded = set((src.end_ns - src.start_ns)[measured].tolist())
    duration = loaded[0].kernels.end_ns - loaded[0].kernels.start_ns
    assert set(duration.tolist()) <= recorded
    gemm = slow[loaded[1].kernels.name_id]
    assert gemm.any()
    ratio = ((loaded[1].kernels.end_ns - loaded[1].kernels.start_ns)[gemm].mean()
             / duration[slow[loaded[0].kernels.name_id]].mean())
    assert 1.35 < ratio < 1.65
