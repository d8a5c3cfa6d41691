"""Harvest real kernel names and their total time from run files and torch.profiler traces.

Why: the family rules (perfdiff/analysis/family_rules.py) are tested against a table of real
names (fixtures/kernel-names/); this script is how that table's rows were gathered. It reads
perfdiff run files (fixtures/*.json.gz), Kineto traces (fixtures/kineto, /work/shared/kineto)
and TraceLens' public traces (fetch github:AMD-AGI/TraceLens, then
``git --git-dir=/work/.mirror/AMD-AGI+TraceLens/repo archive HEAD tests/traces | tar -x -C DIR``).

LatencyPrism folders (/work/shared/latencyprism/sglang/*/*_perf_data) and Nsight Systems
exports (fixtures/nsys/*.sqlite) are read through perfdiff's own readers.

Usage: python -m bench.families.harvest SOURCE_LABEL=PATH ... > names.tsv
Each output line: source, kernel time (us, summed), launches, name.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfdiff.schema.model import RunFile


def trace_kernels(path: Path) -> dict[str, list[float]]:
    """name -> [total us, launches] of a Kineto trace's GPU kernels (cat "kernel")."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    events = data["traceEvents"] if isinstance(data, dict) else data
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for event in events:
        if str(event.get("cat", "")).lower() != "kernel":
            continue
        acc = out[str(event.get("name", ""))]
        acc[0] += float(event.get("dur", 0.0))
        acc[1] += 1
    return out


def run_file_kernels(path: Path) -> dict[str, list[float]]:
    """name -> [total us, launches] of a perfdiff run file's kernels (demangled names)."""
    from perfdiff.schema.io import load_run_file

    return _kernels_of(load_run_file(path))


def export_kernels(path: Path) -> dict[str, list[float]]:
    """name -> [total us, launches] of an Nsight Systems SQLite export, read by perfdiff's own
    reader (the names as ``perfdiff compare`` shows them)."""
    from perfdiff.readers.dispatch import ReadOptions, open_input

    run_file = open_input(path, ReadOptions()).run_file
    assert run_file is not None, path
    return _kernels_of(run_file)


def _kernels_of(run_file: RunFile) -> dict[str, list[float]]:
    import numpy as np

    names = [s.demangled or s.mangled for s in run_file.strings]
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for run in run_file.runs:
        k = run.kernels
        dur = (k.end_ns - k.start_ns) / 1e3
        total = np.bincount(k.name_id, weights=dur, minlength=len(names))
        count = np.bincount(k.name_id, minlength=len(names))
        for i in np.nonzero(count)[0]:
            acc = out[names[i]]
            acc[0] += float(total[i])
            acc[1] += int(count[i])
    return out


def latencyprism_kernels(folder: Path) -> dict[str, list[float]]:
    """name -> [total us, launches (unknown: 0)] of a LatencyPrism ``*_perf_data`` folder's GPU
    functions (its CSV has no launch counts)."""
    from perfdiff.analysis.sides import side_of
    from perfdiff.readers.dispatch import ReadOptions, open_input

    table = side_of(open_input(folder, ReadOptions())).table
    gpu = table[table["func_type"].str.startswith("gpu_")]
    gpu = gpu.drop_duplicates(["run", "pid", "device", "cycle", "function"])
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for name, ms in gpu.groupby("function")["time_ms"].sum().items():
        out[str(name)][0] += float(ms) * 1e3
    return out


def main(argv: list[str]) -> None:
    for arg in argv:
        label, _, path_text = arg.partition("=")
        path = Path(path_text)
        if path.is_dir():
            table = latencyprism_kernels(path)
        elif path.suffix == ".sqlite":
            table = export_kernels(path)
        # perfdiff run files live directly under fixtures/ (fixtures/kineto holds traces)
        elif path.parts[0] == "fixtures" and "kineto" not in path.parts:
            table = run_file_kernels(path)
        else:
            table = trace_kernels(path)
        for name, (us, n) in sorted(table.items(), key=lambda kv: -kv[1][0]):
            print(f"{label}\t{us:.3f}\t{n}\t{name.replace(chr(9), ' ')}")


if __name__ == "__main__":
    main(sys.argv[1:])
