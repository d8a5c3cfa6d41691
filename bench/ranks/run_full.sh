#!/usr/bin/env bash
# The issue-26 measurement: a 64-rank job per side at ~1,000,000 launches per rank, compared as
# shards. Usage: OUT=/tmp/bench-ranks RANKS=64 nice -n 10 bash bench/ranks/run_full.sh
# (bench/README.md, "Ranks on Dask", has the numbers; about 25 min on the loaded 2-core box).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/bench-ranks}
RANKS=${RANKS:-64}
PY=${PY:-python}
export PYTHONPATH=$PWD
if [ -z "${REUSE:-}" ]; then  # REUSE=1: measure the job already in $OUT
    rm -rf "$OUT/normal" "$OUT/abnormal"
    mkdir -p "$OUT"
    $PY -m bench.ranks.generate "$OUT/normal" --ranks "$RANKS" --launches 1000000 --seed 1
    $PY -m bench.ranks.generate "$OUT/abnormal" --ranks "$RANKS" --launches 1000000 --seed 2 \
        --slow-factor 1.5 --slow-ranks 17
fi
du -sh "$OUT/normal" "$OUT/abnormal"
echo "== perfdiff compare (the command line; 2 cores: in-process map)"
$PY -m bench.ranks.measure cli "$OUT/normal" "$OUT/abnormal" -o "$OUT/report.md"
echo "== perfdiff ranks of the abnormal side (rank 17's GEMMs 1.5 x)"
$PY -m bench.ranks.measure ranks "$OUT/abnormal" -o "$OUT/ranks.md"
sed -n '1,12p' "$OUT/ranks.md"
