#!/usr/bin/env bash
# Issue 14 on the H100: cycles in programs nobody edited.
#   trainer  unmodified HF Trainer (GPT-2 small, random init, synthetic tokens, 50 steps, bf16,
#            8 x 512), with and without gradient checkpointing, `perfdiff collect` with no cycle
#            option (optimizer steps found by themselves), then the same pair with --cycle-ms 200
#   generate unmodified model.generate loop, with --cycle-function ...GenerationMixin.generate
#            and with no option (detected period or the warning)
#   bench    --cycle-function vs NVTX marks (and no option) on gpt-infer as a user program,
#            interleaved, 4 rounds (bench/cycle_function/); BENCH_MODES (default
#            "nvtx function found"; also "cycle", "windows") and BENCH_ROUNDS pick them
# usage (repo root, perfdiff and cupti-python importable): OUT=/tmp/out bash scripts/gpu/cycles_check.sh [STEP...]
# Fixtures come back under $OUT/fixtures/, reports and bench lines in $OUT/extra.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-cycles}
mkdir -p "$OUT/fixtures" "$OUT/extra"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error
PY=${PYTHON:-python3}
LOG="$OUT/log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }
F="$OUT/fixtures"

step_env() {
  run nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv
  run "$PY" -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__)"
}

step_trainer() {
  run timeout 200 "${PD[@]}" collect --no-pm -o "$F/trainer-gpt2.json.gz" -- "$PY" scripts/gpu/cycles_trainer.py
  run timeout 200 "${PD[@]}" collect --no-pm -o "$F/trainer-gpt2-gc.json.gz" -- "$PY" scripts/gpu/cycles_trainer.py --gc
  run timeout 120 "${PD[@]}" compare "$F/trainer-gpt2.json.gz" "$F/trainer-gpt2-gc.json.gz" -o "$OUT/extra/trainer-report.md"
  run head -c 5000 "$OUT/extra/trainer-report.md"
}

step_windows() {
  run timeout 200 "${PD[@]}" collect --no-pm --cycle-ms 200 -o "$F/trainer-gpt2-ms200.json.gz" -- "$PY" scripts/gpu/cycles_trainer.py
  run timeout 200 "${PD[@]}" collect --no-pm --cycle-ms 200 -o "$F/trainer-gpt2-gc-ms200.json.gz" -- "$PY" scripts/gpu/cycles_trainer.py --gc
  run timeout 120 "${PD[@]}" compare "$F/trainer-gpt2-ms200.json.gz" "$F/trainer-gpt2-gc-ms200.json.gz" -o "$OUT/extra/windows-report.md"
  run head -c 3000 "$OUT/extra/windows-report.md"
}

step_generate() {
  run timeout 150 "${PD[@]}" collect --no-pm --warmup 1 -o "$F/generate-function.json.gz" \
    --cycle-function transformers.generation.utils:GenerationMixin.generate -- "$PY" scripts/gpu/cycles_generate.py
  run timeout 150 "${PD[@]}" collect --no-pm --warmup 1 -o "$F/generate-found.json.gz" -- "$PY" scripts/gpu/cycles_generate.py
}

step_bench() {
  local dir=bench/cycle_function
  for round in $(seq "${BENCH_ROUNDS:-4}"); do
    for mode in ${BENCH_MODES:-nvtx function found}; do
      local opt=()
      [ "$mode" = nvtx ] && opt=(--cycle-range step)
      [ "$mode" = function ] && opt=(--cycle-function gpt_infer_program:step)
      [ "$mode" = windows ] && opt=(--cycle-ms 50)
      say "bench round $round mode $mode"
      (cd "$dir" && timeout 120 "${PD[@]}" collect --no-pm --no-nvml -q -o "/tmp/bench-$mode-$round.json.gz" \
        "${opt[@]}" -- "$PY" -c "import gpt_infer_program as g; g.main()" "$mode") 2>&1 | tee -a "$LOG" | grep -E "BENCH|wrote|warning" | tee -a "$OUT/extra/bench.txt"
    done
  done
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env trainer generate bench windows)
for s in "${steps[@]}"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
run ls -la "$F"
tar czf "$OUT/extra.tar.gz" -C "$OUT" extra
rm -rf "$OUT/extra"
say done
