#!/usr/bin/env bash
# perfdiff beside HolisticTraceAnalysis on one many-rank job in trace form (bench/README.md,
# "Ranks on Dask", HTA). HTA in its own venv, never a perfdiff dependency:
#   python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis
# Usage: OUT=/tmp/bench-hta RANKS=8 LAUNCHES=125000 nice -n 10 bash bench/ranks/run_hta.sh
# The job: generate.py, one step per cycle (--micro 1: 113 cycles as the 64 x 1M job has),
# abnormal side rank SLOW's GEMMs 1.5 x; each side written as Kineto traces (to_kineto.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/bench-hta}
RANKS=${RANKS:-8}
LAUNCHES=${LAUNCHES:-125000}
SLOW=${SLOW:-5}  # the rank whose GEMMs are 1.5 x on the abnormal side
PY=${PY:-python}
PERFDIFF=${PERFDIFF:-perfdiff}
HTA_PY=${HTA_PY:-/tmp/hta-venv/bin/python}
export PYTHONPATH=$PWD
T='%e s wall, %M KiB peak RSS'
if [ -z "${REUSE:-}" ]; then  # REUSE=1: measure the job already in $OUT
    rm -rf "$OUT" && mkdir -p "$OUT"
    $PY -m bench.ranks.generate "$OUT/normal" --ranks "$RANKS" --launches "$LAUNCHES" --micro 1 \
        --seed 1
    $PY -m bench.ranks.generate "$OUT/abnormal" --ranks "$RANKS" --launches "$LAUNCHES" --micro 1 \
        --seed 2 --slow-factor 1.5 --slow-ranks "$SLOW"
    for side in normal abnormal; do $PY -m bench.ranks.to_kineto "$OUT/$side" "$OUT/$side-kineto"; done
fi
rm -rf "$OUT"/*-imported
du -sh "$OUT"/*-kineto
run() { echo "== $1"; shift; /usr/bin/time -f "$T" "$@" 2>&1 | tail -4; }
cd "$OUT"  # HTA's child runs from here (the repo's perfdiff is not on its path)
run "HTA get_temporal_breakdown (abnormal)" "$HTA_PY" "$OLDPWD/bench/ranks/hta_child.py" \
    breakdown abnormal-kineto
run "HTA compare_traces rank 0 (its default)" "$HTA_PY" "$OLDPWD/bench/ranks/hta_child.py" \
    diff normal-kineto abnormal-kineto 0
run "HTA compare_traces rank $SLOW" "$HTA_PY" "$OLDPWD/bench/ranks/hta_child.py" \
    diff normal-kineto abnormal-kineto "$SLOW"
cd "$OLDPWD"
run "perfdiff import --shards (abnormal traces)" $PERFDIFF import \
    "$OUT/abnormal-kineto" --shards -o "$OUT/abnormal-imported"
run "perfdiff ranks (imported traces)" $PERFDIFF ranks \
    "$OUT/abnormal-imported" -o "$OUT/ranks-traces.md"
sed -n 5,7p "$OUT/ranks-traces.md"
run "perfdiff import --shards (normal traces)" $PERFDIFF import \
    "$OUT/normal-kineto" --shards -o "$OUT/normal-imported"
run "perfdiff compare (imported traces)" $PERFDIFF compare \
    "$OUT/normal-imported" "$OUT/abnormal-imported" -o "$OUT/compare-traces.md"
run "perfdiff ranks (shards)" $PERFDIFF ranks "$OUT/abnormal" -o "$OUT/ranks.md"
run "perfdiff compare (shards)" $PERFDIFF compare "$OUT/normal" "$OUT/abnormal" \
    -o "$OUT/compare.md"
grep -m3 -E "^\*\*|^- \*\*|slower" "$OUT/compare.md" || true
