#!/usr/bin/env bash
# Issue 13 on the H100: raw CUPTI intake checks, saved buffers, stream and launch-bound bench.
# usage (repo root, PYTHONPATH with the wheels): OUT=/tmp/out bash scripts/gpu/intake.sh [STEP...]
#   steps: env check tests stream gpt2 overhead (default: env check tests stream gpt2)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/log"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

step_env() {
  run nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  run "$PY" -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
}
step_check() { run timeout 150 "$PY" scripts/gpu/intake_check.py --save "$OUT/buffers"; }
step_tests() {
  run timeout 240 "$PY" -m pytest -q -x -m gpu tests/gpu/test_raw_intake_gpu.py \
    tests/gpu/test_collect_gpu.py -p no:cacheprovider
}
step_stream() {
  run timeout 120 "$PY" bench/launch_bound/stream.py --mode graph --seconds 30 --json "$OUT/stream-graph.json"
  run timeout 90 "$PY" bench/launch_bound/stream.py --mode loop --seconds 20 --api --json "$OUT/stream-loop-api.json"
}
step_gpt2() {
  run timeout 300 "$PY" bench/launch_bound/gpt2_generate.py --rounds ${ROUNDS:-4} --steps ${STEPS:-5} --json "$OUT/gpt2.json"
}
step_overhead() {
  run timeout 400 "$PY" bench/overhead.py --alternate 10 --cycles 50 --modes perfdiff
}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env check tests stream gpt2)
for s in "${steps[@]}"; do "step_$s"; done
say done
