#!/usr/bin/env bash
# Scale benchmark of `perfdiff compare` (issue 3): two run files of 1,000,000 kernel launches each.
# Generates the inputs once (bench/scale_generate.py), then times the compare REPEAT times with
# /usr/bin/time -v, pinned to 2 CPUs, and prints wall time and peak RSS. Targets: <= 15 s, <= 2 GB.
# Usage: bench/scale.sh [OUT_DIR] [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/perfdiff-scale}
REPEAT=${2:-3}
PY=.venv/bin/python
mkdir -p "$OUT"
if [ ! -f "$OUT/scale-normal.json.gz" ] || [ ! -f "$OUT/scale-abnormal.json.gz" ]; then
  "$PY" bench/scale_generate.py "$OUT"
fi
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then PIN=(taskset -c 0,1); fi
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPEAT"); do
  /usr/bin/time -v "${PIN[@]}" .venv/bin/perfdiff compare "$OUT/scale-normal.json.gz" \
    "$OUT/scale-abnormal.json.gz" -o "$OUT/report.md" 2> "$OUT/time.txt"
  wall=$(grep 'Elapsed (wall clock)' "$OUT/time.txt" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$OUT/time.txt" | awk '{print $NF}')
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$OUT/time.txt")
  echo "run $i: wall ${wall} (m:ss), cpu ${cpu} s, peak RSS $((rss / 1024)) MiB"
done
