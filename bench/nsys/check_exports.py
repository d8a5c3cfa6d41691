"""Every public nsys export fetched into /work/.mirror: read by perfdiff, checked against SQL.

For each SQLite export found in the mirrored repositories (every blob named *.sqlite in
their history, Git LFS pointers and other non-SQLite blobs skipped): the nsys version from
its own metadata table; what ``read_nsys`` gives (a run file, or its one-line error); and
whether perfdiff's per-kernel launch counts and GPU time equal a direct
``SELECT name, COUNT(*), SUM(end - start) ... GROUP BY name`` on the same file (for every
export with kernels, through the activity layer; and through the run file where one is
built). Prints a markdown table and a summary line; exits 1 if any total differs or any
error is not one line.

Fetch the repositories first (the ``fetch`` tool of this workplace, or ``git clone --mirror``
into /work/.mirror/OWNER+NAME/repo); bench/nsys/README.md lists the ones used.

    PYTHONPATH=. python bench/nsys/check_exports.py [--mirror /work/.mirror]
        [--cache /tmp/perfdiff-nsys-exports]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from perfdiff.errors import PerfdiffError
from perfdiff.readers.nsys import read_nsys
from perfdiff.readers.nsys.activity import kernel_names, read_kernels
from perfdiff.readers.nsys.database import SQLITE_MAGIC, open_export

Totals = dict[str, tuple[int, int]]


def extract(mirror: Path, cache: Path) -> list[tuple[str, Path]]:
    """(origin "owner/name:path@blob", extracted file) for every *.sqlite blob."""
    cache.mkdir(parents=True, exist_ok=True)
    found: list[tuple[str, Path]] = []
    for git_dir in sorted(mirror.glob("*/repo")):
        repo = git_dir.parent.name.replace("+", "/", 1)
        listing = subprocess.run(["git", "--git-dir", str(git_dir), "rev-list", "--all",
                                  "--objects"], capture_output=True, text=True).stdout
        listing += subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "HEAD"],
                                  capture_output=True, text=True).stdout
        blobs: dict[str, str] = {}
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].endswith(".sqlite"):
                blobs.setdefault(parts[0], parts[1])
            elif len(parts) == 4 and parts[3].endswith(".sqlite"):
                blobs.setdefault(parts[2], parts[3])
        for blob, path in sorted(blobs.items(), key=lambda b: b[1]):
            out = cache / f"{git_dir.parent.name}__{blob[:10]}.sqlite"
            if not out.exists():
                data = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob",
                                       blob], capture_output=True).stdout
                if not data.startswith(SQLITE_MAGIC):
                    continue  # an LFS pointer or a missing object
                out.write_bytes(data)
            found.append((f"{repo}:{path}@{blob[:10]}", out))
    return found


def sql_totals(path: Path) -> Totals:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            return {}
        rows = db.execute("SELECT s.value, COUNT(*), SUM(k.end - k.start) "
                          "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                          "ON s.id = k.demangledName GROUP BY s.value")
        return {name: (count, total) for name, count, total in rows}


def activity_totals(path: Path) -> Totals:
    with open_export(path) as export:
        kernels = read_kernels(export)
        names = kernel_names(export, kernels)
    out: Totals = {}
    for name_id in np.unique(kernels.extra["demangledName"]).tolist():
        mine = kernels.extra["demangledName"] == name_id
        out[names[name_id][1]] = (int(mine.sum()),
                                  int((kernels.end[mine] - kernels.start[mine]).sum()))
    return out


def version(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master")}
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if table in tables:
                row = db.execute(f"SELECT value FROM {table} WHERE name = "
                                 "'EXPORT_PRODUCT_VERSION'").fetchone()
                return str(row[0]) if row else "?"
    return "-"


def check(origin: str, path: Path) -> tuple[str, bool]:
    """One markdown row, and whether this export passed."""
    expected = sql_totals(path)
    ok = True
    try:
        run_file = read_nsys(path)
        runs = run_file.runs
        outcome = (f"report: {len(runs)} run(s), "
                   f"{sum(int(r.cycles.index.size) for r in runs)} cycles, "
                   f"{sum(int(r.kernels.name_id.size) for r in runs)} kernels")
        got: Totals = {}
        for run in runs:
            for name_id in np.unique(run.kernels.name_id).tolist():
                mine = run.kernels.name_id == name_id
                name = run_file.strings[name_id].demangled
                count, total = got.get(name, (0, 0))
                got[name] = (count + int(mine.sum()), total + int(
                    (run.kernels.end_ns[mine] - run.kernels.start_ns[mine]).sum()))
        totals = "equal" if got == expected else "DIFFER (run file)"
    except PerfdiffError as exc:
        message = str(exc)
        ok = "\n" not in message
        outcome = "one line: " + message.split(": ", 1)[-1][:110].replace("|", "/")
        totals = "-"
        if expected:
            try:
                totals = ("equal (activity)" if activity_totals(path) == expected
                          else "DIFFER (activity)")
            except PerfdiffError:
                totals = "- (unreadable)"
    ok = ok and "DIFFER" not in totals
    return (f"| {origin} | {version(path)} | {sum(c for c, _ in expected.values())} | "
            f"{outcome} | {totals} |"), ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/perfdiff-nsys-exports"))
    args = parser.parse_args()
    exports = extract(args.mirror, args.cache)
    print("| export (repository:path@blob) | nsys | kernels | perfdiff "
          "| per-kernel totals vs SQL |")
    print("|---|---|---:|---|---|")
    passed, versions, outcomes = 0, Counter[str](), Counter[str]()
    for origin, path in exports:
        row, ok = check(origin, path)
        print(row)
        passed += ok
        versions[version(path)] += 1
        outcomes["report" if "| report:" in row else "one line"] += 1
    print(f"\n{len(exports)} exports, {len([v for v in versions if v != '-'])} nsys versions "
          f"({', '.join(sorted(v for v in versions if v != '-'))}); {outcomes['report']} "
          f"reports, {outcomes['one line']} one-line errors; {passed} passed")
    return 0 if passed == len(exports) else 1


if __name__ == "__main__":
    sys.exit(main())
