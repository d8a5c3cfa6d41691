"""How much the figures add to ``perfdiff compare`` (issue 17: <= 2 s on the gpt-infer pair).

Whole commands, as users run them, alternated so that a busy moment of a shared machine hits
each variant alike: ``compare -o report.md`` (no figures), ``... --plots`` (5 figures max, PNG
and SVG files, linked), ``--format html`` (SVG inline). Prints each run and the medians.

    .venv/bin/python bench/figures/run.py [REPEAT] [NORMAL ABNORMAL]
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]



def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    pair = sys.argv[2:4] or [str(REPO / "fixtures" / "gpt-infer-normal.json.gz"),
                             str(REPO / "fixtures" / "gpt-infer-contended.json.gz")]
    variants = {
        "markdown, no figures": ["-o", "{d}/plain.md"],
        "markdown --plots": ["-o", "{d}/report.md", "--plots"],
        "--format html": ["--format", "html", "-o", "{d}/report.html"],
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as d:
        for i in range(repeat):
            for name, args in variants.items():
                cmd = [str(REPO / ".venv" / "bin" / "perfdiff"), "compare", *pair,
                       *(a.format(d=d) for a in args)]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(after.ru_utime + after.ru_stime
                                 - before.ru_utime - before.ru_stime)
                print(f"run {i + 1} {name}: {times[name][-1]:.2f} s wall, "
                      f"{cpu[name][-1]:.2f} s CPU", flush=True)
    base = statistics.median(times["markdown, no figures"])
    base_cpu = statistics.median(cpu["markdown, no figures"])
    for name, values in times.items():
        med, med_cpu = statistics.median(values), statistics.median(cpu[name])
        print(f"{name:24s} wall median {med:.2f} s (min {min(values):.2f}, max "
              f"{max(values):.2f}), added {med - base:+.2f} s; CPU median {med_cpu:.2f} s, "
              f"added {med_cpu - base_cpu:+.2f} s")


if __name__ == "__main__":
    main()
