"""Build fixtures/kernel-names/kernel-names.tsv.gz from harvest.py's output.

Usage: python -m bench.families.harvest ... > names.tsv
       python -m bench.families.build_table names.tsv fixtures/kernel-names/kernel-names.tsv.gz
       python -m bench.families.build_table --append names.tsv fixtures/kernel-names/\
           kernel-names.tsv.gz

``--append`` keeps the table's other sources as they are (rows, labels and order) and puts
the sources of names.tsv after them: how a source is added without re-fetching every trace.

Per source, the names that make up 99.5 % of its kernel time (largest first) are kept, and
one ``(rest)`` row carries the time of the others, so that the coverage test can count it as
"other" (the worst case). Labels are what ``perfdiff.analysis.families.classify`` says at
build time; they were reviewed by hand before the table was committed, and the test keeps
them from changing unnoticed (a rule change shows up as a diff of this table).
"""

from __future__ import annotations

import gzip
import sys
from collections import defaultdict

from perfdiff.analysis.families import classify

KEEP_SHARE = 0.995
# reruns and re-cut copies of a recording add no names
SKIP = frozenset({
    "linalg-h100-cusolver-rerun", "rmsnorm-h100-rerun", "trainer-gpt2-ms200",
    "trainer-gpt2-gc-ms200", "generate-found", "gpt-infer-contended", "ddp-contended-gpu1",
})
HEADER = "source\ttime_us\tlaunches\tfamily\tprecision\tengine\tname"


def main(src: str, dst: str, *, append: bool = False) -> None:
    by_source: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
    with open(src) as fh:
        for line in fh:
            source, us, n, name = line.rstrip("\n").split("\t")
            if source not in SKIP:
                by_source[source].append((float(us), int(n), name))
    kept_rows: dict[str, list[str]] = defaultdict(list)
    order = sorted(by_source)
    if append:  # the table's sources in their order, the new ones after them
        with gzip.open(dst, "rt") as old:
            assert old.readline().rstrip("\n") == HEADER
            for line in old:
                source = line.split("\t", 1)[0]
                if source not in by_source:
                    kept_rows[source].append(line.rstrip("\n"))
        order = list(kept_rows) + order
    lines = [HEADER]
    for source in order:
        if source in kept_rows:
            lines.extend(kept_rows[source])
            continue
        rows = sorted(by_source[source], key=lambda r: (-r[0], r[2]))
        total = sum(r[0] for r in rows)
        kept = 0.0
        for i, (us, n, name) in enumerate(rows):
            if total > 0 and kept >= KEEP_SHARE * total:
                rest = rows[i:]
                lines.append(f"{source}\t{sum(r[0] for r in rest):.3f}\t"
                             f"{sum(r[1] for r in rest)}\t\t\t\t(rest: {len(rest)} names)")
                break
            kept += us
            c = classify(name)
            lines.append(f"{source}\t{us:.3f}\t{n}\t{c.family}\t{c.precision}\t{c.engine}\t{name}")
    with gzip.open(dst, "wt", compresslevel=9) as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--append":
        main(sys.argv[2], sys.argv[3], append=True)
    else:
        main(sys.argv[1], sys.argv[2])
