"""Drop what a recording holds from before its first cycle: the settle's kernels.

Why: ``kineto_prog.py --settle-s`` runs the step for seconds before the first
``perfdiff.cycle()`` so that the GPU is steady when measuring starts; under ``perfdiff collect``
those kernels (one to three hundred thousand) are recorded too, outside every cycle (cycle -1),
and would make the fixture several MB. The torch.profiler trace never holds them (the settle
runs before the profiler starts), so dropping them also makes the two sources alike. Kept:
every cycle and every record from the first cycle's start on (kernels, copies, memsets, NVML
samples); nothing else is changed, and the file says so in a warning.
Usage: python scripts/gpu/kineto_trim.py IN OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np

# run as a script, its own folder is on sys.path, not the repository root that holds bench/
# (the 2026-11-27 re-recording lost both train recordings to "No module named 'bench'")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.launch_bound.trim import rows
from perfdiff.schema.io import load_run_file, save_run_file


def _from(table: Any, first: int) -> Any:
    """Rows of a kernel/memcpy/memset table that lie in a cycle or start at ``first`` or later."""
    keep = (np.asarray(table.cycle) >= 0) | (np.asarray(table.start_ns) >= first)
    return rows(table, keep)


def trim(path: Path, out: Path) -> int:
    """Write ``out`` without the records before the first cycle; how many kernels went."""
    rf = load_run_file(path)
    runs, dropped = [], 0
    for run in rf.runs:
        first = int(np.asarray(run.cycles.start_ns).min())
        kernels = _from(run.kernels, first)
        dropped += run.kernels.cycle.size - kernels.cycle.size
        metrics = []
        for m in run.metrics:
            keep = np.asarray(m.timestamps_ns) >= first
            metrics.append(dataclasses.replace(m, timestamps_ns=np.asarray(m.timestamps_ns)[keep],
                                               values=np.asarray(m.values)[keep]))
        runs.append(dataclasses.replace(run, kernels=kernels, memcpy=_from(run.memcpy, first),
                                        memset=_from(run.memset, first), metrics=tuple(metrics)))
    note = (f"{dropped} kernels before the first cycle dropped (the unmeasured settle of "
            f"scripts/gpu/kineto_prog.py --settle-s; scripts/gpu/kineto_trim.py {path.name})")
    collection = dataclasses.replace(rf.collection, warnings=(*rf.collection.warnings, note))
    save_run_file(dataclasses.replace(rf, runs=tuple(runs), collection=collection), out)
    return dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    args = parser.parse_args()
    print(f"kineto_trim: {args.output}: dropped {trim(args.input, args.output)} kernels")


if __name__ == "__main__":
    main()
