"""Build one side of a many-rank job as a sharded run, rank by rank, from a real recording.

Usage (from the repository root)::

    python -m bench.ranks.generate OUT_DIR --ranks 64 --launches 1000000 \\
        [--source fixtures/trainer-gpt2.json.gz] [--micro 8] [--slow-factor 1.15] [--seed 1]

Each rank is built from the source recording's measured cycles: a cycle of the job is ``--micro``
source steps drawn at random (with replacement, a seed per rank) and laid end to end, as one
optimizer step of gradient accumulation over ``--micro`` micro-batches. Every launch keeps its
recorded kernel, duration, stream and launch configuration, and the gap before it, so the
kernel mix and the launch-to-launch jitter are the recording's; copies and memsets come along
with their step. (Launches that overlapped on several streams are laid one after another: the
gap before a launch is never negative.) ``--slow-factor`` makes every GEMM (``gemm``,
``nvjet``, ``cutlass`` in the name) that much longer on every rank (or on ``--slow-ranks``
only: a straggler): the abnormal side.

Only one rank's arrays are in memory at a time; each is written as a shard
(``perfdiff.schema.shards.ShardWriter``) and dropped. Rank r runs on GPU r (as ``perfdiff merge``
names the ranks of a job), pid 100000 + r. PM and NVML samples are left out (the comparison of
kernel times is what scales with launches; the samples would only add to the files).
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import (
    Collection,
    CycleTable,
    IntArray,
    KernelTable,
    Run,
    RunFile,
    TransferTable,
    Workload,
)
from perfdiff.schema.shards import ShardWriter

GEMM = re.compile(r"gemm|nvjet|cutlass", re.IGNORECASE)
_KERNEL_CONFIG = ("stream", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


@dataclass(frozen=True)
class _Step:
    """One measured source step, times relative to its start, launches in start order."""

    ms_ns: int  # the step's length
    name_id: IntArray
    gap_ns: IntArray  # idle before each launch (>= 0), the first from the step's start
    dur_ns: IntArray
    config: dict[str, IntArray]
    tail_ns: int  # idle after the last launch to the step's end
    copies: tuple[tuple[str, int, int, int], ...]  # (kind, bytes, offset, duration) memcpy
    sets: tuple[tuple[int, int, int], ...]  # (bytes, offset, duration) memset


def source_steps(run: Run) -> list[_Step]:
    """The measured steps of ``run`` (warm-up left out)."""
    k, cyc = run.kernels, run.cycles
    steps = []
    for i in np.flatnonzero(~cyc.warmup):
        index, start, end = int(cyc.index[i]), int(cyc.start_ns[i]), int(cyc.end_ns[i])
        at = np.flatnonzero(k.cycle == index)
        at = at[np.argsort(k.start_ns[at], kind="stable")]
        if at.size == 0:
            continue
        begin, finish = k.start_ns[at] - start, k.end_ns[at] - start
        dur = finish - begin
        ends = np.maximum.accumulate(finish)
        gap = np.maximum(0, begin - np.concatenate([[0], ends[:-1]]))
        copies = tuple((run.memcpy.kind[j], int(run.memcpy.bytes[j]),
                        int(run.memcpy.start_ns[j] - start),
                        int(run.memcpy.end_ns[j] - run.memcpy.start_ns[j]))
                       for j in np.flatnonzero(run.memcpy.cycle == index))
        sets = tuple((int(run.memset.bytes[j]), int(run.memset.start_ns[j] - start),
                      int(run.memset.end_ns[j] - run.memset.start_ns[j]))
                     for j in np.flatnonzero(run.memset.cycle == index))
        steps.append(_Step(end - start, k.name_id[at], gap, dur,
                           {c: getattr(k, c)[at] for c in _KERNEL_CONFIG},
                           max(0, int(end - start - ends[-1])), copies, sets))
    return steps


def build_rank(source: RunFile, steps: list[_Step], *, rank: int, launches: int, micro: int,
               slow: np.ndarray, slow_factor: float, seed: int) -> Run:
    """Rank ``rank``'s run: cycles of ``micro`` random source steps until ``launches``."""
    rng = np.random.default_rng([seed, rank])
    per_step = float(np.mean([s.name_id.size for s in steps]))
    n_cycles = max(2, round(launches / (micro * per_step)))
    picks = rng.integers(0, len(steps), size=(n_cycles, micro))
    parts: dict[str, list[IntArray]] = {c: [] for c in ("name_id", "gap", "dur", "cycle",
                                                         *_KERNEL_CONFIG)}
    cyc_start, cyc_end = [], []
    cp: list[tuple[str, int, int, int, int]] = []
    ms: list[tuple[int, int, int, int]] = []
    t = 1_000_000_000
    for cycle in range(n_cycles):
        cyc_start.append(t)
        for pick in picks[cycle]:
            step = steps[int(pick)]
            dur = np.where(slow[step.name_id],
                           np.rint(step.dur_ns * slow_factor).astype(np.int64), step.dur_ns)
            parts["name_id"].append(step.name_id)
            parts["gap"].append(step.gap_ns)
            parts["dur"].append(dur)
            parts["cycle"].append(np.full(step.name_id.size, cycle, dtype=np.int64))
            for c in _KERNEL_CONFIG:
                parts[c].append(step.config[c])
            # copies keep their offset within the step (they sit between kernels there)
            cp.extend((kind, b, t + off, d, cycle) for kind, b, off, d in step.copies)
            ms.extend((b, t + off, d, cycle) for b, off, d in step.sets)
            t += int(step.gap_ns.sum() + dur.sum()) + step.tail_ns
        cyc_end.append(t)
        t += 1000
    cat = {c: np.concatenate(v) for c, v in parts.items()}
    # the timeline: each cycle's launches one after another, each after its recorded gap
    cycle_first = np.searchsorted(cat["cycle"], np.arange(n_cycles))
    step_len = cat["gap"] + cat["dur"]
    csum = np.cumsum(step_len)
    before = np.concatenate([[0], csum[:-1]]) - np.concatenate([[0], csum])[cycle_first][
        cat["cycle"]]
    start = np.asarray(cyc_start, dtype=np.int64)[cat["cycle"]] + before + cat["gap"]
    end = start + cat["dur"]
    # a cycle ends after its last launch and copy (the steps' tails keep their idle)
    ends = np.asarray(cyc_end, dtype=np.int64)
    np.maximum.at(ends, cat["cycle"], end)
    for _, _, st, d, c in cp:
        ends[c] = max(ends[c], st + d)
    n = cat["name_id"].size
    kernels = KernelTable(name_id=cat["name_id"], device=np.full(n, rank, dtype=np.int64),
                          start_ns=start, end_ns=end, cycle=cat["cycle"],
                          correlation_id=np.arange(n, dtype=np.int64),
                          **{c: cat[c] for c in _KERNEL_CONFIG})
    cycles = CycleTable(index=np.arange(n_cycles, dtype=np.int64),
                        start_ns=np.asarray(cyc_start, dtype=np.int64), end_ns=ends,
                        label=tuple("optimizer step" for _ in range(n_cycles)),
                        warmup=np.zeros(n_cycles, dtype=bool))
    return replace(source.runs[0], index=0, pid=100_000 + rank, rank=rank, exit_code=0,
                   cycles=cycles, kernels=kernels, memcpy=_transfers(cp, rank),
                   memset=_transfers([("memset", *m) for m in ms], rank), metrics=(),
                   dropped_records=0)


def _transfers(rows: list[tuple[str, int, int, int, int]], rank: int) -> TransferTable:
    n = len(rows)
    col = [np.asarray([r[i] for r in rows], dtype=np.int64) for i in (1, 2, 3, 4)]
    return TransferTable(kind=tuple(r[0] for r in rows), bytes=col[0],
                         device=np.full(n, rank, dtype=np.int64),
                         stream=np.full(n, 7, dtype=np.int64), start_ns=col[1],
                         end_ns=col[1] + col[2], cycle=col[3])


def job_header(source: RunFile, ranks: int, source_path: str, micro: int) -> RunFile:
    """The job's header: the source's, with one GPU per rank and no samples."""
    device = source.environment.devices[0]
    devices = tuple(replace(device, index=r, uuid=f"{device.uuid}-rank{r}")
                    for r in range(ranks))
    return replace(
        source, environment=replace(source.environment, devices=devices),
        collection=Collection(metrics=(), sample_interval_ns=source.collection.sample_interval_ns,
                              sources=("cupti_activity",), warnings=()),
        workload=Workload(name=f"{source.workload.name} (bench/ranks/generate.py)",
                          params={"source": source_path, "ranks": ranks, "micro_steps": micro,
                                  "cycles_from": "optimizer step"}),
        runs=())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--launches", type=int, default=1_000_000, help="per rank")
    parser.add_argument("--source", default="fixtures/trainer-gpt2.json.gz")
    parser.add_argument("--micro", type=int, default=8, help="source steps per cycle")
    parser.add_argument("--slow-factor", type=float, default=1.0)
    parser.add_argument("--slow-ranks", default="", help="comma-separated ranks the slow "
                        "factor applies to (default: every rank)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    source = load_run_file(args.source)
    steps = source_steps(source.runs[0])
    slow = np.asarray([bool(GEMM.search(s.demangled or s.mangled)) for s in source.strings])
    header = job_header(source, args.ranks, args.source, args.micro)
    writer = ShardWriter(args.out, args.ranks)
    total = 0
    slow_ranks = ({int(r) for r in args.slow_ranks.split(",")} if args.slow_ranks
                  else set(range(args.ranks)))
    for rank in range(args.ranks):
        factor = args.slow_factor if rank in slow_ranks else 1.0
        run = build_rank(source, steps, rank=rank, launches=args.launches, micro=args.micro,
                         slow=slow, slow_factor=factor, seed=args.seed)
        total += run.kernels.name_id.size
        writer.add(header, run)
    writer.finish()
    print(f"wrote {args.out}: {args.ranks} ranks, {total:,} launches, "
          f"{time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
