#!/usr/bin/env bash
# Issue 5 on the 2-GPU machine: user-program GPU tests, the NVTX/CUPTI probe, and the DDP
# fixture pair (normal, and rank 1's GPU contended by a matrix-product process).
# usage (repo root, wheels in .whl/): OUT=/tmp/out bash scripts/gpu/user_programs.sh [STEP...]
#   steps: install probe tests ddp (default: all four, in that order)
# Device tool: run(command="OUT=$OUT bash scripts/gpu/user_programs.sh", kind="nvidia-h200-x2",
#              carry=[".whl"]); the fixtures come back under $OUT/fixtures/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
mkdir -p "$OUT/fixtures"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PYTHON:-python3}
LOG="$OUT/user_programs.log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")  # no PATH assumption
perfdiff() { "${PD[@]}" "$@"; }
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

step_install() {
  OUT="$OUT" bash scripts/gpu_check.sh install env
  run nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv
}

step_probe() { run timeout 150 "$PY" scripts/gpu/nvtx_cupti_probe.py; }

step_tests() {
  run timeout 300 "$PY" -m pytest -q -s -m gpu tests/gpu/test_user_program_gpu.py -p no:cacheprovider
}

record_ddp() {  # record_ddp OUTFILE: with PM sampling; if the job fails, once more without it
  local ddp=(--warmup 5 --cycle-range step --sample-interval-ns 50000 -- "$PY" -m
             torch.distributed.run --nproc-per-node 2 docs/examples/ddp_train.py --steps 45)
  run timeout 150 "${PD[@]}" collect -o "$1" "${ddp[@]}" && return 0
  say "DDP recording with PM sampling failed; recording again with --no-pm"
  run timeout 150 "${PD[@]}" collect --no-pm -o "$1" "${ddp[@]}"
}

step_ddp() {
  record_ddp "$OUT/fixtures/ddp-normal.json.gz"
  say "contender on GPU 1"
  "$PY" -m perfdiff.collect.contend 1.0 1 > "$OUT/contend.out" 2>&1 &
  local cpid=$!
  for _ in $(seq 120); do grep -q ready "$OUT/contend.out" && break; sleep 0.5; done
  run cat "$OUT/contend.out"
  record_ddp "$OUT/fixtures/ddp-contended-gpu1.json.gz"
  kill "$cpid"; wait "$cpid" 2>/dev/null
  run ls -la "$OUT/fixtures"
  run perfdiff compare "$OUT/fixtures/ddp-normal.json.gz" \
    "$OUT/fixtures/ddp-contended-gpu1.json.gz" -o "$OUT/ddp-report.md"
  run head -c 6000 "$OUT/ddp-report.md"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(install probe tests ddp)
for s in "${steps[@]}"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
say done
