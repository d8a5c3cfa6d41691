#!/usr/bin/env bash
# Side-by-side scale benchmark: `perfdiff compare` of two 1,000,000-launch run files with the code
# of two commits, alternating (before, after, before, after, ...) so that both see the same load
# from whatever else runs on the machine. Each commit's perfdiff/ is exported with `git archive`
# into a scratch folder and put first on PYTHONPATH (the venv's packages are shared).
# Prints one markdown table row per run (load average, wall, CPU user+sys, peak RSS) and whether
# the commits wrote byte-identical reports.
# A third side, "unchecked", runs AFTER's tree through the Python code in $UNCHECKED_CODE when
# that is set (bench/hostile/scale_cost.sh: AFTER with checks switched off in its own wrapper).
# Usage: bench/scale_compare.sh [BEFORE_COMMIT] [AFTER_COMMIT] [REPEAT] [OUT_DIR]
# Defaults: 3ee081a (before the scale work of 2026-11-22 04:30 UTC), HEAD, 3, /tmp/perfdiff-scale
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:-3ee081a}
AFTER=${2:-HEAD}
REPEAT=${3:-3}
OUT=${4:-/tmp/perfdiff-scale}
PY=${PY:-$PWD/.venv/bin/python}  # PY=/path/to/python to use another venv
RUN='import sys; from perfdiff.cli.app import main; sys.argv[0] = "perfdiff"; main()'
SIDES=(before after)
if [ -n "${UNCHECKED_CODE:-}" ]; then SIDES+=(unchecked); fi
mkdir -p "$OUT"
if [ ! -f "$OUT/scale-normal.json.gz" ] || [ ! -f "$OUT/scale-abnormal.json.gz" ]; then
  "$PY" bench/scale_generate.py "$OUT"
fi
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
for side in before after; do
  commit=$BEFORE
  [ "$side" = after ] && commit=$AFTER
  mkdir -p "$SRC/$side"
  git archive "$commit" perfdiff | tar -x -C "$SRC/$side"
  (cd "$SRC/$side" && PYTHONPATH="$SRC/$side" "$PY" -c 'import perfdiff, sys
sys.exit(0 if perfdiff.__file__.startswith(sys.argv[1]) else "perfdiff not imported from " + sys.argv[1])' "$SRC/$side")
done
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then PIN=(taskset -c 0,1); fi
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "before: $(git rev-parse --short "$BEFORE"), after: $(git rev-parse --short "$AFTER")"
echo
echo "| run | code | load avg (1 min) | wall | CPU (user+sys) | peak RSS |"
echo "|---|---|---|---|---|---|"
for i in $(seq "$REPEAT"); do
  for side in "${SIDES[@]}"; do
    tree=$SRC/$side code=$RUN
    if [ "$side" = unchecked ]; then tree=$SRC/after code=$UNCHECKED_CODE; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    # run from the exported tree: `python -c` puts the working folder first on sys.path
    (cd "$tree" && PYTHONPATH="$tree" /usr/bin/time -v "${PIN[@]}" "$PY" -c "$code" \
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
for side in "${SIDES[@]:1}"; do
  if cmp -s "$OUT/report-before.md" "$OUT/report-$side.md"; then
    echo "reports: before = $side, byte-identical"
  else
    echo "reports: before vs $side DIFFERENT (diff $OUT/report-before.md $OUT/report-$side.md)"
  fi
done
if [ -n "${UNCHECKED_CODE:-}" ]; then
  cmp -s "$OUT/report-after.md" "$OUT/report-unchecked.md" && echo "after = unchecked: byte-identical" \
    || echo "after vs unchecked: DIFFERENT"
fi
