"""Build one side of a many-rank job as a sharded run, rank by rank, from a real recording.

Usage (from the repository root)::

    python -m bench.ranks.generate OUT_DIR --ranks 64 --launches 1000000 \\
        [--source fixtures/trainer-gpt2.json.gz] [--micro 8] [--slow-factor 1.15] [--seed 1]

The job runs in lock-step, as a DDP job does. Its cycles are built from the source recording's
measured steps: a cycle is ``--micro`` source steps drawn at random (one draw for the whole job)
and laid end to end, as one optimizer step of gradient accumulation over ``--micro``
micro-batches, and every rank runs that same sequence. Every launch keeps its recorded kernel,
stream, launch configuration and the gap before it; its duration is the one recorded at its
position in a source step drawn per launch and per rank (the recording's jitter, independent
from rank to rank), so the kernel mix and the launch-to-launch jitter are the recording's;
copies and memsets come along with their step. (Launches that overlapped on several streams are
laid one after another: the gap before a launch is never negative.) Each cycle ends in a
gradient all-reduce (an NCCL kernel name; the source, one GPU, has none): its own length is
0.4 ms +-5 %, the same on every rank, and on every rank but the slowest it lasts longer by the
time the rank waits for the slowest to reach it, so every rank's cycle ends at the same time.
The kernel and its base length are synthetic; nothing else is. ``--slow-factor`` makes every
GEMM (``gemm``, ``nvjet``, ``cutlass`` in the name) that much longer on every rank (or on
``--slow-ranks`` only: a straggler, whom the others then wait for): the abnormal side.

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
    KernelName,
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


COLLECTIVE = KernelName(
    mangled="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    demangled="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
COLLECTIVE_BASE_NS = 400_000  # the all-reduce itself, when nobody waits (jittered +-5 %)


def plan(steps: list[_Step], *, launches: int, micro: int, seed: int) -> IntArray:
    """The job's step sequence, shared by every rank: (cycles, micro) source step indices."""
    per_step = float(np.mean([s.name_id.size for s in steps]))
    n_cycles = max(2, round(launches / (micro * per_step)))
    rng = np.random.default_rng([seed])
    return np.asarray(rng.integers(0, len(steps), size=(n_cycles, micro)), dtype=np.int64)


def draw_durations(steps: list[_Step], picks: IntArray, *, rank: int, seed: int,
                   slow: np.ndarray, slow_factor: float) -> list[IntArray]:
    """Rank ``rank``'s kernel durations, one array per (cycle, micro) slot in order.

    Every rank runs the slot's step; each launch takes the duration recorded at its position in
    a step drawn at random among the source steps of the same launch sequence (a seed per
    rank): the recording's jitter, independent from rank to rank. ``slow_factor`` stretches the
    GEMMs.
    """
    rng = np.random.default_rng([seed, rank, 1])
    pools = _pools(steps)
    out = []
    for pick in picks.ravel():
        pool = pools[int(pick)]
        rows = rng.integers(0, pool.shape[0], size=pool.shape[1])
        dur = pool[rows, np.arange(pool.shape[1])]
        step = steps[int(pick)]
        if slow_factor != 1.0:
            dur = np.where(slow[step.name_id], np.rint(dur * slow_factor).astype(np.int64), dur)
        out.append(dur)
    return out


_POOLS: dict[int, list[np.ndarray]] = {}


def _pools(steps: list[_Step]) -> list[np.ndarray]:
    """Per source step, the durations of every source step with its launch sequence (rows)."""
    key = id(steps)
    if key not in _POOLS:
        by_seq: dict[bytes, list[int]] = {}
        for i, s in enumerate(steps):
            by_seq.setdefault(s.name_id.tobytes(), []).append(i)
        _POOLS.clear()
        _POOLS[key] = [np.stack([steps[j].dur_ns for j in by_seq[s.name_id.tobytes()]])
                       for s in steps]
    return _POOLS[key]


def busy_ns(steps: list[_Step], picks: IntArray, durations: list[IntArray]) -> IntArray:
    """Per cycle, how long the rank computes before it reaches the cycle's all-reduce."""
    micro = picks.shape[1]
    out = np.zeros(picks.shape[0], dtype=np.int64)
    for slot, pick in enumerate(picks.ravel()):
        step = steps[int(pick)]
        out[slot // micro] += int(step.gap_ns.sum() + durations[slot].sum()) + step.tail_ns
    return out


def build_rank(source: RunFile, steps: list[_Step], picks: IntArray,
               durations: list[IntArray], *, rank: int,
               collective: tuple[int, IntArray] | None = None) -> Run:
    """Rank ``rank``'s run: the planned cycles of source steps with its durations.

    ``collective``: (name id, per cycle the all-reduce's length on this rank): the kernel that
    closes each cycle, as a DDP job's gradient all-reduce does; on a rank that computed faster
    than the slowest it lasts the base plus the wait (``main`` computes it over every rank).
    """
    n_cycles, micro = picks.shape
    parts: dict[str, list[IntArray]] = {c: [] for c in ("name_id", "gap", "dur", "cycle",
                                                         *_KERNEL_CONFIG)}
    cyc_start, cyc_end = [], []
    cp: list[tuple[str, int, int, int, int]] = []
    ms: list[tuple[int, int, int, int]] = []
    t = 1_000_000_000
    for cycle in range(n_cycles):
        cyc_start.append(t)
        for m in range(micro):
            step = steps[int(picks[cycle, m])]
            dur = durations[cycle * micro + m]
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
        if collective is not None:
            name_id, length = collective
            last = steps[int(picks[cycle, -1])]
            tails = sum(steps[int(p)].tail_ns for p in picks[cycle])
            parts["name_id"].append(np.asarray([name_id], dtype=np.int64))
            # after the steps' idle tails: the all-reduce ends the cycle
            parts["gap"].append(np.asarray([tails], dtype=np.int64))
            parts["dur"].append(np.asarray([length[cycle]], dtype=np.int64))
            parts["cycle"].append(np.asarray([cycle], dtype=np.int64))
            for c in _KERNEL_CONFIG:
                parts[c].append(last.config[c][-1:])
            t += int(length[cycle])
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


def collective_base(n_cycles: int, seed: int) -> IntArray:
    """Per cycle, the all-reduce's own length (shared by the ranks: it ends on all at once)."""
    rng = np.random.default_rng([seed, 2**31])
    return np.rint(COLLECTIVE_BASE_NS * rng.uniform(0.95, 1.05, n_cycles)).astype(np.int64)


def job_header(source: RunFile, ranks: int, source_path: str, micro: int) -> RunFile:
    """The job's header: the source's, with one GPU per rank and no samples."""
    device = source.environment.devices[0]
    devices = tuple(replace(device, index=r, uuid=f"{device.uuid}-rank{r}")
                    for r in range(ranks))
    return replace(
        source, environment=replace(source.environment, devices=devices),
        strings=(*source.strings, COLLECTIVE),
        collection=Collection(metrics=(), sample_interval_ns=source.collection.sample_interval_ns,
                              sources=("cupti_activity",), warnings=()),
        workload=Workload(name=f"{source.workload.name} (bench/ranks/generate.py)",
                          params={"source": source_path, "ranks": ranks, "micro_steps": micro,
                                  "cycles_from": "optimizer step"}),
        runs=())


def generate(out: Path, *, source_path: str, ranks: int, launches: int, micro: int,
             slow_factor: float, slow_ranks: set[int], seed: int) -> int:
    """Write the job (module docstring) as shards under ``out``; the launches written."""
    source = load_run_file(source_path)
    steps = source_steps(source.runs[0])
    slow = np.asarray([bool(GEMM.search(s.demangled or s.mangled)) for s in source.strings])
    header = job_header(source, ranks, source_path, micro)
    picks = plan(steps, launches=launches, micro=micro, seed=seed)

    def durations(rank: int) -> list[IntArray]:
        factor = slow_factor if rank in slow_ranks else 1.0
        return draw_durations(steps, picks, rank=rank, seed=seed, slow=slow,
                              slow_factor=factor)

    # lock-step: every rank's all-reduce ends when the slowest rank reaches it (one pass to
    # learn each rank's compute per cycle, a second to write; only one rank in memory)
    busy = np.stack([busy_ns(steps, picks, durations(r)) for r in range(ranks)])
    base = collective_base(picks.shape[0], seed)
    writer = ShardWriter(out, ranks)
    total = 0
    for rank in range(ranks):
        wait = base + busy.max(axis=0) - busy[rank]
        run = build_rank(source, steps, picks, durations(rank), rank=rank,
                         collective=(len(header.strings) - 1, wait))
        total += run.kernels.name_id.size
        writer.add(header, run)
    writer.finish()
    return total


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
    slow_ranks = ({int(r) for r in args.slow_ranks.split(",")} if args.slow_ranks
                  else set(range(args.ranks)))
    total = generate(args.out, source_path=args.source, ranks=args.ranks,
                     launches=args.launches, micro=args.micro, slow_factor=args.slow_factor,
                     slow_ranks=slow_ranks, seed=args.seed)
    print(f"wrote {args.out}: {args.ranks} ranks, {total:,} launches, "
          f"{time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
