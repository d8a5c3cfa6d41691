#!/usr/bin/env bash
# The largest job HolisticTraceAnalysis loads on this machine, and perfdiff on the same job
# (bench/README.md, "Ranks on Dask", "HTA's loading, growing jobs"). HTA in its own venv, never
# a perfdiff dependency:
#   python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis
# Usage (from anywhere; one command, run alone on the machine):
#   OUT=/tmp/bench-hta-scale nice -n 19 bash bench/ranks/run_hta_scale.sh
# One job of RANKS ranks x LAUNCHES launches per side (generate.py --micro 1, abnormal side rank
# SLOW's GEMMs 1.5 x) in Kineto form (to_kineto.py); HTA's TraceAnalysis loads the abnormal
# side's first N ranks for each N in SIZES (a folder of links to those rank files), each load
# under a wall-clock cap (TIMEOUT s) and an address-space cap per process (MAX_GIB), measured
# by measure.py cmd (wall; peak RSS of every process of the tree, HTA's parsing pool included).
# Then, on the largest job HTA loaded: perfdiff compare and ranks on the traces and on the
# shards, in-process and on a LocalCluster (the Dask path; this 2-core machine's default is
# in-process, see perfdiff/engine/settings.py). STOP_AFTER_FAIL=1: no larger size after a
# failed load.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/bench-hta-scale}
RANKS=${RANKS:-32}
LAUNCHES=${LAUNCHES:-60000}
SIZES=${SIZES:-4 8 16 32}
SLOW=${SLOW:-5}
TIMEOUT=${TIMEOUT:-1800}  # 30 minutes: what a user would wait for a trace to load
MAX_GIB=${MAX_GIB:-8}     # of the 23 GiB this shared machine has
PY=${PY:-python}
HTA_PY=${HTA_PY:-/tmp/hta-venv/bin/python}
export PYTHONPATH=$PWD
measure() { $PY -m bench.ranks.measure "$@" 2>&1 | grep -v '^ *[0-9]* *[0-9,]* MiB' || true; }
if [ -z "${REUSE:-}" ]; then  # REUSE=1: measure the job already in $OUT
    rm -rf "$OUT" && mkdir -p "$OUT"
    $PY -m bench.ranks.generate "$OUT/normal" --ranks "$RANKS" --launches "$LAUNCHES" --micro 1 \
        --seed 1
    $PY -m bench.ranks.generate "$OUT/abnormal" --ranks "$RANKS" --launches "$LAUNCHES" \
        --micro 1 --seed 2 --slow-factor 1.5 --slow-ranks "$SLOW"
    for side in normal abnormal; do $PY -m bench.ranks.to_kineto "$OUT/$side" "$OUT/$side-kineto"; done
fi
largest=0
for n in $SIZES; do
    for side in normal abnormal; do
        dir="$OUT/$side-kineto-$n"
        rm -rf "$dir" && mkdir -p "$dir"
        for ((r = 0; r < n; r++)); do ln -s "$OUT/$side-kineto/rank-$r.json.gz" "$dir/"; done
    done
    events=$($PY -c "import sys, gzip; print(sum(gzip.open(f, 'rt').read().count('\"ph\"') for f in sys.argv[1:]))" "$OUT"/abnormal-kineto-"$n"/*.json.gz)
    echo "== HTA TraceAnalysis load, $n ranks x $LAUNCHES launches ($events events)"
    result=$(measure cmd --timeout "$TIMEOUT" --max-gib "$MAX_GIB" -- "$HTA_PY" \
        bench/ranks/hta_child.py load "$OUT/abnormal-kineto-$n")
    echo "$result"
    if echo "$result" | grep -q '^exit 0,'; then
        largest=$n
    elif [ -n "${STOP_AFTER_FAIL:-}" ]; then
        break
    fi
done
[ "$largest" = 0 ] && { echo "HTA loaded no size"; exit 0; }
n=$largest
echo "== perfdiff on the largest job HTA loaded: $n ranks x $LAUNCHES launches per side"
echo "-- compare, traces (in-process: this machine's default)"
measure cli "$OUT/normal-kineto-$n" "$OUT/abnormal-kineto-$n" -o "$OUT/compare-traces-$n.md"
echo "-- ranks, traces"
measure ranks "$OUT/abnormal-kineto-$n" -o "$OUT/ranks-traces-$n.md"
for side in normal abnormal; do
    rm -rf "$OUT/$side-imported-$n"
    echo "-- import --shards, $side traces"
    measure cmd -- "$PY" -c "from perfdiff.cli.entry import main; main()" import "$OUT/$side-kineto-$n" --shards \
        -o "$OUT/$side-imported-$n"
done
echo "-- compare, shards, in-process map"
measure engine "$OUT/normal-imported-$n" "$OUT/abnormal-imported-$n" -o "$OUT/compare-$n.md"
echo "-- compare, shards, LocalCluster of 2 workers (the Dask path)"
measure engine "$OUT/normal-imported-$n" "$OUT/abnormal-imported-$n" --local 2 \
    -o "$OUT/compare-local-$n.md"
echo "-- ranks, shards (in-process)"
measure ranks "$OUT/abnormal-imported-$n" -o "$OUT/ranks-$n.md"
cmp "$OUT/compare-$n.md" "$OUT/compare-local-$n.md" && echo "in-process and LocalCluster reports identical"
sed -n 5,7p "$OUT/ranks-$n.md"
grep -m3 -E "^\*\*|^- \*\*|slower" "$OUT/compare-$n.md" || true
