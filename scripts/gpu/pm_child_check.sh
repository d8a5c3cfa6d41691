#!/usr/bin/env bash
# PM sampling in user programs, on the 2-GPU machine: the fix for the child's SIGSEGV at exit
# (PM sampling stopped after the interpreter's weakref exit hook had freed it; see
# perfdiff/collect/cupti/pm_sampling.py, "Teardown"). Unlike scripts/gpu/user_programs.sh, the DDP
# pair is recorded WITH PM sampling and there is no --no-pm fallback: a crash is a failure.
#   1. install the carried wheels (as scripts/gpu_check.sh install)
#   2. pytest -m gpu tests/gpu/test_user_program_gpu.py (its nvtx case runs with PM sampling)
#   3. the DDP pair with PM sampling (normal; rank 1's GPU contended) -> $OUT/fixtures/
#   4. each file: complete, both ranks, PM series with samples on each rank, no PM warning
# PYTHONFAULTHANDLER=1: should a child still crash, its threads' Python stacks are in the log.
# usage (repo root, wheels in .whl/): OUT=/tmp/out bash scripts/gpu/pm_child_check.sh
# (SKIP_INSTALL=1 PYTHON=.venv/bin/python: a CPU dry run of the flow; it must end FAILED)
# Device tool: run(command="bash scripts/gpu/pm_child_check.sh", kind="nvidia-h200-x2",
#              carry=[".whl"]); ~2.5 min; log and fixtures come back under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
mkdir -p "$OUT/fixtures"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PYTHON:-python3}
LOG="$OUT/pm_child_check.log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")  # no PATH assumption
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }
failed=()

step_install() {
  OUT="$OUT" bash scripts/gpu_check.sh install
  run nvidia-smi --query-gpu=index,name,driver_version --format=csv
}

step_tests() {
  run timeout 200 "$PY" -m pytest -q -m gpu tests/gpu/test_user_program_gpu.py -p no:cacheprovider
}

record_ddp() {  # record_ddp OUTFILE: PM sampling on, no fallback
  run timeout 120 "${PD[@]}" collect -o "$1" --warmup 5 --cycle-range step \
    --sample-interval-ns 50000 -- "$PY" -m torch.distributed.run --nproc-per-node 2 \
    docs/examples/ddp_train.py --steps 45
}

check_pm() {  # check_pm FILE...: complete, 2 ranks, PM samples on each rank, PM not lost
  run "$PY" - "$@" <<'PY'
import sys
from perfdiff.schema.io import load_run_file
FATAL = ("failed at stop", "torn down", "drain thread", "could not start", "unavailable",
         "not permitted", "could not write")  # PM lost; overflow notes are only printed
bad = 0
for path in sys.argv[1:]:
    rf = load_run_file(path)
    pm_warn = [w for w in rf.collection.warnings if any(f in w for f in FATAL)]
    print(path, rf.status, "metrics:", rf.collection.metrics, "warnings:", rf.collection.warnings)
    problems = []
    if rf.status.state != "complete":
        problems.append("not complete")
    if sorted(r.rank for r in rf.runs) != [0, 1]:
        problems.append(f"ranks {[r.rank for r in rf.runs]}")
    for run in rf.runs:
        pm = [m for m in run.metrics if m.source == "pm_sampling"]
        sizes = [int(m.values.size) for m in pm]
        print(f"  rank {run.rank}: {run.cycles.index.size} cycles, {run.kernels.cycle.size} "
              f"kernels, PM series {[m.name for m in pm]} samples {sizes}")
        if not pm or min(sizes) == 0:
            problems.append(f"rank {run.rank} has no PM samples")
    if pm_warn:
        problems.append(f"PM warnings {pm_warn}")
    print("  OK" if not problems else f"  FAIL: {problems}")
    bad += bool(problems)
sys.exit(1 if bad else 0)
PY
}

step_ddp() {
  record_ddp "$OUT/fixtures/ddp-normal.json.gz" || failed+=("ddp-normal")
  say "contender on GPU 1"
  "$PY" -m perfdiff.collect.contend 1.0 1 > "$OUT/contend.out" 2>&1 &
  local cpid=$!
  for _ in $(seq 120); do grep -q ready "$OUT/contend.out" && break; sleep 0.5; done
  run cat "$OUT/contend.out"
  record_ddp "$OUT/fixtures/ddp-contended-gpu1.json.gz" || failed+=("ddp-contended")
  kill "$cpid"; wait "$cpid" 2>/dev/null
  check_pm "$OUT/fixtures/ddp-normal.json.gz" "$OUT/fixtures/ddp-contended-gpu1.json.gz" \
    || failed+=("pm-check")
  run "${PD[@]}" compare "$OUT/fixtures/ddp-normal.json.gz" \
    "$OUT/fixtures/ddp-contended-gpu1.json.gz" -o "$OUT/ddp-report.md" || failed+=("compare")
}

say "start"
if [ "${SKIP_INSTALL:-0}" = 1 ]; then say "install skipped (SKIP_INSTALL=1)"
else step_install || failed+=("install"); fi
step_tests || failed+=("tests")
step_ddp
if [ ${#failed[@]} -eq 0 ]; then say "ALL OK"; exit 0; fi
say "FAILED: ${failed[*]}"
exit 1
