"""Time the stages of a compare on two run files: imports, load, cycle tables, statistics, report.

Why beside bench/scale.sh: that script times the whole command; this one says which stage the
time goes to (CPU seconds, so a loaded machine blurs it less) and the peak memory.

Usage: python bench/analysis_stages.py NORMAL.json.gz ABNORMAL.json.gz
(inputs: e.g. the two files bench/scale_generate.py writes)
"""

from __future__ import annotations

import resource
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    t_start = time.process_time()
    from perfdiff.analysis.comparison import compare_tables
    from perfdiff.analysis.model import CompareOptions
    from perfdiff.analysis.sides import side_from_run_file
    from perfdiff.report.markdown import render_markdown
    from perfdiff.schema import load_run_file
    from perfdiff.schema.io import _read_json

    t_imports = time.process_time()
    for path in argv:  # the reading half of load_run_file alone (gunzip + JSON)
        _read_json(__import__("pathlib").Path(path))
    t_read = time.process_time()
    run_files = [load_run_file(p) for p in argv]
    t0 = time.process_time()
    sides = [side_from_run_file(rf, source=p) for rf, p in zip(run_files, argv, strict=True)]
    t1 = time.process_time()
    comparison = compare_tables(
        sides[0].table,
        sides[1].table,
        CompareOptions(),
        normal_meta=sides[0].meta,
        abnormal_meta=sides[1].meta,
    )
    t2 = time.process_time()
    render_markdown(comparison)
    t3 = time.process_time()
    launches = sum(r.kernels.start_ns.shape[0] for rf in run_files for r in rf.runs)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"launches (both files): {launches:,}")
    print(f"imports (analysis, report): {t_imports - t_start:.2f} s CPU")
    print(f"read (gunzip + JSON decode): {t_read - t_imports:.2f} s CPU")
    print(f"load + validate (read included): {t0 - t_read:.2f} s CPU")
    rows = " + ".join(f"{len(side.table):,}" for side in sides)
    print(f"cycle tables: {t1 - t0:.2f} s CPU ({rows} rows)")
    print(f"compare_tables: {t2 - t1:.2f} s CPU ({len(comparison.rows):,} rows)")
    print(f"markdown report: {t3 - t2:.2f} s CPU")
    print(f"peak RSS: {peak_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
