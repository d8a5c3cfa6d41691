# ruff: noqa: UP031  (printf-style templates: one line per event, millions of them)
"""Write a sharded run (``bench/ranks/generate.py``'s job) as Kineto traces, one per rank.

Usage (from the repository root)::

    python -m bench.ranks.to_kineto JOB_DIR OUT_DIR [--ranks N]

Why: HolisticTraceAnalysis reads torch.profiler (Kineto) traces only, one file per rank in a
folder, so the HTA side of the ranks benchmark needs the same job in that form. Each rank's
file ``rank-R.json.gz`` holds what HTA needs from a real trace: ``distributedInfo`` (rank,
world size), one ``ProfilerStep#C`` CPU annotation per cycle, one ``cudaLaunchKernel`` runtime
event per kernel inside its step (HTA gives a kernel the iteration of its launch, linked by
``correlation``), and the kernels with their stream, grid, block and times (microseconds);
copies and memsets as ``gpu_memcpy``/``gpu_memset``. The file is written event by event, one
rank at a time, so the conversion's memory is one rank's arrays.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from perfdiff.schema.shards import load_shard, read_manifest

HOST_PID = 4242
LAUNCH_US = 4.0  # a launch's CPU time, ending 2 us before its kernel starts (or at the step)


def write_rank(folder: Path, position: int, out: Path, world: int) -> int:
    """Write shard ``position`` of ``folder`` as one Kineto trace; the events written."""
    sharded = read_manifest(folder)
    run_file = load_shard(sharded, sharded.entries[position])
    (run,) = run_file.runs
    rank = run.rank if run.rank is not None else position
    k, cyc = run.kernels, run.cycles
    names = [json.dumps(s.demangled or s.mangled) for s in run_file.strings]
    base = int(cyc.start_ns.min()) if cyc.index.size else int(k.start_ns.min())
    us = lambda ns: (np.asarray(ns, dtype=np.int64) - base) / 1000.0  # noqa: E731
    pid, tid = HOST_PID + rank, 1
    n = 0
    with gzip.open(out, "wt", compresslevel=1) as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, '
                '"world_size": %d}, "deviceProperties": [], "traceEvents": [\n' % (rank, world))
        first = True

        def emit(text: str) -> None:
            nonlocal first, n
            f.write(text if first else ",\n" + text)
            first = False
            n += 1

        starts, ends = us(cyc.start_ns), us(cyc.end_ns)
        for i, index in enumerate(cyc.index):
            emit('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, '
                 '"tid": %d, "ts": %.3f, "dur": %.3f, "args": {}}'
                 % (int(index), pid, tid, starts[i], ends[i] - starts[i]))
        step_start = dict(zip(cyc.index.tolist(), starts.tolist(), strict=True))
        ks, ke = us(k.start_ns), us(k.end_ns)
        for j in range(k.name_id.size):
            c = int(k.cycle[j])
            corr = int(k.correlation_id[j])
            launch = max(step_start.get(c, ks[j] - 6.0), ks[j] - 2.0 - LAUNCH_US)
            emit('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, '
                 '"tid": %d, "ts": %.3f, "dur": %.3f, "args": {"correlation": %d}}'
                 % (pid, tid, launch, LAUNCH_US, corr))
            emit('{"ph": "X", "cat": "kernel", "name": %s, "pid": %d, "tid": %d, "ts": %.3f, '
                 '"dur": %.3f, "args": {"device": %d, "stream": %d, "correlation": %d, '
                 '"grid": [%d, %d, %d], "block": [%d, %d, %d]}}'
                 % (names[int(k.name_id[j])], rank, int(k.stream[j]), ks[j], ke[j] - ks[j],
                    rank, int(k.stream[j]), corr, int(k.grid_x[j]), int(k.grid_y[j]),
                    int(k.grid_z[j]), int(k.block_x[j]), int(k.block_y[j]),
                    int(k.block_z[j])))
        for table, cat in ((run.memcpy, "gpu_memcpy"), (run.memset, "gpu_memset")):
            s, e = us(table.start_ns), us(table.end_ns)
            for j in range(table.start_ns.size):
                label = "Memset (Device)" if cat == "gpu_memset" else f"Memcpy {table.kind[j]}"
                emit('{"ph": "X", "cat": "%s", "name": "%s", "pid": %d, "tid": %d, '
                     '"ts": %.3f, "dur": %.3f, "args": {"device": %d, "stream": %d, '
                     '"bytes": %d}}' % (cat, label, rank, int(table.stream[j]), s[j],
                                        e[j] - s[j], rank, int(table.stream[j]),
                                        int(table.bytes[j])))
        f.write("\n]}\n")
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=0, help="the first N ranks only")
    args = parser.parse_args()
    sharded = read_manifest(args.job)
    count = len(sharded.entries) if args.ranks <= 0 else min(args.ranks, len(sharded.entries))
    args.out.mkdir(parents=True, exist_ok=False)
    total = 0
    for position in range(count):
        total += write_rank(args.job, position, args.out / f"rank-{position}.json.gz", count)
    print(f"wrote {args.out}: {count} ranks, {total:,} events")


if __name__ == "__main__":
    main()
