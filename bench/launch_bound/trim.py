"""Keep the first K cycles of a recorded run file, as if the recording had stopped there.

Why: the GPT-2 pair fixtures must stay under 1.5 MB, and one step of that program launches
~10,000 kernels. The cut keeps every record up to the end of cycle K-1 (kernels, copies,
metric samples) and drops the rest; nothing else is changed, and the file says so in a
warning. Usage: python bench/launch_bound/trim.py IN OUT --cycles K
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.schema.io import load_run_file, save_run_file


def rows(table: Any, keep: np.ndarray[Any, Any]) -> Any:
    """``table`` (a run-file table dataclass) with only the rows where ``keep``."""
    changes = {}
    for f in dataclasses.fields(table):
        value = getattr(table, f.name)
        if value is None:
            continue
        changes[f.name] = (tuple(v for v, k in zip(value, keep, strict=True) if k)
                           if isinstance(value, tuple) else np.asarray(value)[keep])
    return dataclasses.replace(table, **changes)


def _series_until(series: Any, cut: int) -> Any:
    keep = np.asarray(series.timestamps_ns) <= cut
    return dataclasses.replace(series, timestamps_ns=np.asarray(series.timestamps_ns)[keep],
                               values=np.asarray(series.values)[keep])


def trim(path: Path, out: Path, cycles: int) -> None:
    rf = load_run_file(path)
    runs = []
    for run in rf.runs:
        c = run.cycles
        cut = int(c.end_ns[cycles - 1])
        keep_cycles = np.asarray(c.index) < cycles
        kernels = rows(run.kernels, (np.asarray(run.kernels.start_ns) <= cut)
                        & (np.asarray(run.kernels.cycle) < cycles))
        memcpy = rows(run.memcpy, np.asarray(run.memcpy.start_ns) <= cut)
        memset = rows(run.memset, np.asarray(run.memset.start_ns) <= cut)
        metrics = tuple(_series_until(m, cut) for m in run.metrics)
        runs.append(dataclasses.replace(run, cycles=rows(c, keep_cycles), kernels=kernels,
                                        memcpy=memcpy, memset=memset, metrics=metrics))
    note = (f"trimmed to the first {cycles} cycles of the recording "
            f"(bench/launch_bound/trim.py {path.name} --cycles {cycles})")
    collection = dataclasses.replace(rf.collection,
                                     warnings=(*rf.collection.warnings, note))
    save_run_file(dataclasses.replace(rf, runs=tuple(runs), collection=collection), out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--cycles", type=int, required=True)
    args = parser.parse_args()
    trim(args.input, args.output, args.cycles)


if __name__ == "__main__":
    main()
