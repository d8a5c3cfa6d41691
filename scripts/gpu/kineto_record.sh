#!/usr/bin/env bash
# Issue 15 on the H100: torch.profiler traces and perfdiff recordings of the same programs.
# For each program (gpt, train, hf) and variant (normal, abnormal): one torch.profiler trace
# (schedule wait 1, warm-up 4, active STEPS; export_chrome_trace .json.gz) and one
# `perfdiff collect --no-pm --warmup 5` recording of the same program (perfdiff.cycle() per
# step), one process each. --no-pm because torch.profiler does not PM-sample: like with like
# for the per-kernel time check (PM sampling can stretch memory-bound kernels by a few %).
# usage (repo root, perfdiff on PYTHONPATH): OUT=/tmp/out bash scripts/gpu/kineto_record.sh
# Results: $OUT/kineto-fixtures.tar (the 12 files) and $OUT/kineto_record.log (provenance).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-kineto}
W="$OUT/work"
mkdir -p "$W"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/kineto_record.log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")
say() { echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
run "$PY" -c 'import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__, torch.cuda.get_device_name(0))'
for model in gpt train hf; do
  steps=25
  [ "$model" = train ] && steps=22
  for variant in normal abnormal; do
    name="$model-$variant"
    run timeout 120 "$PY" scripts/gpu/kineto_prog.py --model "$model" --variant "$variant" \
      --mode profiler --steps "$steps" --out "$W/kineto-$name.pt.trace.json.gz" \
      || say "FAILED profiler $name"
    run timeout 150 "${PD[@]}" collect --no-pm --warmup 5 -o "$W/kineto-$name-perfdiff.json.gz" \
      -- "$PY" scripts/gpu/kineto_prog.py --model "$model" --variant "$variant" \
      --mode perfdiff --steps "$steps" || say "FAILED perfdiff $name"
  done
done
run ls -la "$W"
tar -C "$W" -cf "$OUT/kineto-fixtures.tar" .
say done
