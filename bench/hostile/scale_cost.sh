#!/usr/bin/env bash
# What issue 25's checks cost on the 2 x 1,000,000-launch compare (bench/scale_generate.py inputs).
# Three sides, alternating in every round so that all see the same load from other sessions:
#   before    the code before issue 25 (d9186d7 by default), exported with `git archive`;
#   after     the code at AFTER (default HEAD);
#   unchecked AFTER's code with issue 25's physical-sense rules switched off in the benchmark's
#             own wrapper (stream overlap and duplicates, cycle overlap, one cycle per launch),
#             so that after - unchecked is their cost and before - unchecked is everything else
#             that changed between the two commits (other issues' analysis).
# Prints one markdown row per run (load, wall, CPU user+sys, peak RSS from /usr/bin/time -v).
# Usage: bench/hostile/scale_cost.sh [BEFORE] [AFTER] [ROUNDS] [OUT_DIR]   (PY=python to pick one)
set -euo pipefail
cd "$(dirname "$0")/../.."
BEFORE=${1:-d9186d7}
AFTER=${2:-HEAD}
ROUNDS=${3:-3}
OUT=${4:-/tmp/perfdiff-scale}
PY=${PY:-$PWD/.venv/bin/python}
mkdir -p "$OUT"
if [ ! -f "$OUT/scale-normal.json.gz" ] || [ ! -f "$OUT/scale-abnormal.json.gz" ]; then
  "$PY" bench/scale_generate.py "$OUT"
fi
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
git archive "$BEFORE" perfdiff | (mkdir -p "$SRC/before" && tar -x -C "$SRC/before")
git archive "$AFTER" perfdiff | (mkdir -p "$SRC/after" && tar -x -C "$SRC/after")
RUN='import sys; from perfdiff.cli.app import main; sys.argv[0] = "perfdiff"; main()'
OFF='import sys; import perfdiff.schema.sense as s
for name in ("check_stream_overlap", "check_cycle_overlap", "check_one_cycle_per_launch"):
    setattr(s, name, lambda *a, **k: None)
from perfdiff.cli.app import main; sys.argv[0] = "perfdiff"; main()'
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "before: $(git rev-parse --short "$BEFORE"), after: $(git rev-parse --short "$AFTER")"
echo
echo "| round | code | load avg (1 min) | wall | CPU (user+sys) | peak RSS |"
echo "|---|---|---|---|---|---|"
for i in $(seq "$ROUNDS"); do
  for side in before after unchecked; do
    tree=$SRC/$side code=$RUN
    [ "$side" = unchecked ] && tree=$SRC/after code=$OFF
    load=$(cut -d' ' -f1 /proc/loadavg)
    (cd "$tree" && PYTHONPATH="$tree" /usr/bin/time -v "$PY" -c "$code" \
      compare "$OUT/scale-normal.json.gz" "$OUT/scale-abnormal.json.gz" \
      -o "$OUT/report-$side.md" 2> "$OUT/time-$side.txt")
    wall=$(grep 'Elapsed (wall clock)' "$OUT/time-$side.txt" | awk '{n = split($NF, p, ":"); s = 0;
      for (j = 1; j <= n; j++) s = s * 60 + p[j]; printf "%.2f", s}')
    rss=$(grep 'Maximum resident set size' "$OUT/time-$side.txt" | awk '{print $NF}')
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$OUT/time-$side.txt")
    echo "| $i | $side | $load | $wall s | $cpu s | $((rss / 1024)) MiB |"
  done
done
echo
cmp -s "$OUT/report-after.md" "$OUT/report-unchecked.md" && echo "after = unchecked: byte-identical" \
  || echo "after vs unchecked: DIFFERENT"
