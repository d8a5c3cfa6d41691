"""Time the analysis stages of a compare on two run files: load, cycle tables, statistics.

Why beside bench/scale.sh: that script times the whole command; this one says which stage the
time goes to (CPU seconds, so a loaded machine does not blur it) and the peak memory.

Usage: python bench/analysis_stages.py NORMAL.json.gz ABNORMAL.json.gz
(inputs: e.g. the two files bench/scale_generate.py writes)
"""

from __future__ import annotations

import resource
import sys
import time

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.schema import load_run_file


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    t0 = time.process_time()
    run_files = [load_run_file(p) for p in argv]
    t1 = time.process_time()
    sides = [side_from_run_file(rf, source=p) for rf, p in zip(run_files, argv, strict=True)]
    t2 = time.process_time()
    comparison = compare_tables(
        sides[0].table,
        sides[1].table,
        CompareOptions(),
        normal_meta=sides[0].meta,
        abnormal_meta=sides[1].meta,
    )
    t3 = time.process_time()
    launches = sum(r.kernels.start_ns.shape[0] for rf in run_files for r in rf.runs)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"launches (both files): {launches:,}")
    print(f"load + validate: {t1 - t0:.2f} s CPU")
    rows = " + ".join(f"{len(side.table):,}" for side in sides)
    print(f"cycle tables: {t2 - t1:.2f} s CPU ({rows} rows)")
    print(f"compare_tables: {t3 - t2:.2f} s CPU ({len(comparison.rows):,} rows)")
    print(f"peak RSS: {peak_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
