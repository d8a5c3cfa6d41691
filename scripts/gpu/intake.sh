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
  run timeout 300 "$PY" -m pytest -q -s -m gpu ${TESTS:-tests/gpu/test_raw_intake_gpu.py} \
    -p no:cacheprovider
}
step_stream() {
  run timeout 150 "$PY" bench/launch_bound/stream.py --mode graph --seconds 30 --json "$OUT/stream-graph.json"
}
step_gpt2() {
  run timeout 300 "$PY" bench/launch_bound/gpt2_generate.py --rounds ${ROUNDS:-12} --steps ${STEPS:-2} --json "$OUT/gpt2.json"
}
step_pair() {
  # the eager-vs-SDPA pair under perfdiff, and both variants bare (untraced step times)
  for attn in eager sdpa; do
    run timeout 150 "$PY" -c "from perfdiff.cli.app import main; main()" collect --cycle-range step \
      --warmup 3 -q -o "$OUT/gpt2-$attn.json.gz" -- "$PY" bench/launch_bound/gpt2_program.py --attn $attn --steps ${PAIR_STEPS:-30}
    run timeout 120 "$PY" bench/launch_bound/gpt2_program.py --attn $attn --steps ${PAIR_STEPS:-30}
  done
}
step_coverage() {
  for w in gpt-infer train-step; do
    run timeout 150 "$PY" -c "from perfdiff.cli.app import main; main()" collect $w --cycles 60 --warmup 5 -q -o "$OUT/$w.json.gz"
    run "$PY" -c "
from perfdiff.schema.io import load_run_file
from perfdiff.analysis.self_overhead import self_overhead_notes
rf = load_run_file('$OUT/$w.json.gz'); c = rf.runs[0].cycles
print('$w warnings:', rf.collection.warnings); print(self_overhead_notes(rf, '$w'))
print('$w hold max ms', int(c.hold_ns.max()) / 1e6 if c.hold_ns is not None else None)"
  done
}
step_overhead() {
  run timeout 400 "$PY" bench/overhead.py --alternate 10 --cycles 50 --modes perfdiff
}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env check tests stream gpt2)
for s in "${steps[@]}"; do "step_$s"; done
say done
