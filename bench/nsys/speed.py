"""Reading speed and memory: perfdiff's reader vs nsys-stats SQL by hand vs the diff recipe.

Three ways to get per-kernel numbers out of the largest export found, each in a fresh Python
process (so that its peak RSS is its own; ``ru_maxrss`` of the child, minus that of a child
that only imported the same modules):

- ``perfdiff``: ``read_nsys`` (every kernel, memcpy, memset, launch time, cycles, checks);
- ``stats-sql``: the ``cuda_gpu_kern_sum``-style query of ``nsys stats`` run by hand
  (``SELECT name, COUNT, SUM, AVG, MIN, MAX ... GROUP BY``), into a pandas DataFrame;
- ``diff-recipe``: what the nsys ``diff`` recipe does with two such summary tables
  (``df2.reindex(df1.index)``, ``df1.subtract(df2)``): kernels only in the second file are
  dropped, which the script counts.

    PYTHONPATH=. python bench/nsys/speed.py EXPORT.sqlite [OTHER.sqlite] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, sqlite3, sys, time
mode, first, second, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import numpy, pandas
from perfdiff.readers.nsys import read_nsys
SUMMARY = ("SELECT s.value AS name, COUNT(*) AS n, SUM(k.end - k.start) AS total, "
           "AVG(k.end - k.start) AS mean, MIN(k.end - k.start) AS min, "
           "MAX(k.end - k.start) AS max FROM CUPTI_ACTIVITY_KIND_KERNEL k "
           "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")
def summary(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return pandas.read_sql_query(SUMMARY, db).set_index("name")
extra = {}
times = []
for _ in range(repeat if mode != "baseline" else 0):
    t0 = time.perf_counter()
    if mode == "perfdiff":
        rf = read_nsys(first)
        extra["kernels"] = sum(int(r.kernels.name_id.size) for r in rf.runs)
    elif mode == "stats-sql":
        df = summary(first)
        extra["kernels"] = int(df["n"].sum())
    elif mode == "diff-recipe":
        a, b = summary(first), summary(second)
        diff = a.select_dtypes("number").subtract(b.select_dtypes("number").reindex(a.index))
        extra["dropped_only_in_second"] = sorted(set(b.index) - set(a.index))
        extra["nan_only_in_first"] = int(diff["n"].isna().sum())
    times.append(time.perf_counter() - t0)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": times, "maxrss_kb": rss, **extra}))
"""


def child(mode: str, first: Path, second: Path, repeat: int) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(first), str(second),
                           str(repeat)], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("other", type=Path, nargs="?")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    second = args.other or args.export
    base = child("baseline", args.export, second, 0)
    print(f"{args.export} ({args.export.stat().st_size / 1e6:.1f} MB); imports alone: "
          f"{int(base['maxrss_kb']) / 1024:.0f} MiB RSS")
    for mode in ("perfdiff", "stats-sql", "diff-recipe"):
        got = child(mode, args.export, second, args.repeat)
        times = got.pop("times")
        assert isinstance(times, list)
        rss = (int(got.pop("maxrss_kb")) - int(base["maxrss_kb"])) / 1024  # type: ignore[call-overload]
        print(f"{mode:12s} median {statistics.median(times) * 1e3:8.1f} ms "
              f"(min {min(times) * 1e3:.1f}, n={len(times)}); peak RSS above imports "
              f"{rss:6.1f} MiB; {json.dumps(got)}")


if __name__ == "__main__":
    main()
