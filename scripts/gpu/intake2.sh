#!/usr/bin/env bash
# Issue 13, second pass, on the H100: PM coverage probe (decode log, holes), PM in a user
# program, the GPT-2 in-process bench (torch.profiler last), the stream, gpt-infer overhead,
# the GPU test suite. Writes $OUT/log and $OUT/results.tgz.
# usage (repo root, wheels on PYTHONPATH): OUT=/tmp/out bash scripts/gpu/intake2.sh [STEP...]
#   steps: env probe user gpt2 stream overhead tests pmorder parts topo decode nvmlcost switched
#   (default: env probe user
#   gpt2 stream overhead)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
R=${R:-$OUT/r}  # R=$OUT: every file straight into $OUT (a run cut short still returns them)
mkdir -p "$R"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/log"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }
PD=("$PY" -c "from perfdiff.cli.app import main; main()")

step_env() {
  run nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  run "$PY" -c "import torch, transformers, sys; print(torch.__version__, transformers.__version__, sys.version)"
}
step_probe() {
  for w in ${PROBE_WORKLOADS:-gpt-infer train-step}; do
    run timeout 90 "$PY" scripts/gpu/pm_probe.py $w ${PROBE_ARGS:-} --json "$R/probe-$w.json"
  done
  if [ -n "${PROBE_LONG:-}" ]; then  # a run long enough to decode while it runs
    run timeout 150 "$PY" scripts/gpu/pm_probe.py train-step --cycles $PROBE_LONG --json "$R/probe-train-step-long.json"
  fi
}
step_user() {
  # PM in a user program (issue 13 item 2) and the self-measured overhead of the GPT-2 program
  run timeout 150 "${PD[@]}" collect --cycle-range step --warmup 3 -q ${USER_ARGS:-} -o "$R/gpt2-sdpa.json.gz" -- \
    "$PY" bench/launch_bound/gpt2_program.py --attn sdpa --steps ${USER_STEPS:-43}
  run "$PY" - "$R/gpt2-sdpa.json.gz" <<'PYEOF'
import sys
import numpy as np
from perfdiff.schema.io import load_run_file
from perfdiff.analysis.self_overhead import self_overhead_notes
rf = load_run_file(sys.argv[1]); run = rf.runs[0]; c = run.cycles
print("sources", rf.collection.sources, "metrics", rf.collection.metrics)
print("pm samples", {m.name[:24]: int(np.asarray(m.timestamps_ns).size) for m in run.metrics if m.source == "pm_sampling"})
print("nvml samples", {m.name: int(np.asarray(m.timestamps_ns).size) for m in run.metrics if m.source == "nvml"})
print("warnings", rf.collection.warnings)
print(self_overhead_notes(rf, "gpt2-sdpa"))
print("hold max ms", None if c.hold_ns is None else int(np.asarray(c.hold_ns).max()) / 1e6)
PYEOF
  run timeout 150 "${PD[@]}" compare "$R/gpt2-sdpa.json.gz" "$R/gpt2-sdpa.json.gz"
}
step_gpt2() {
  run timeout ${GPT2_TIMEOUT:-170} "$PY" bench/launch_bound/gpt2_generate.py --rounds ${ROUNDS:-6} \
    --steps ${STEPS:-3} --warm ${WARM:-1} --pin ${PIN:--1} --modes ${GPT2_MODES:-untraced,floor,perfdiff,torch.profiler} \
    --json "$R/gpt2.json"
}
step_topo() {
  run lscpu
  run bash -c 'for c in 0 1 2 3 4 5 6 7; do echo cpu$c $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list); done; nproc'
}
step_decode() {  # one hand-over's decode on this host, synthetic buffers of real records
  run "$PY" scripts/gpu/decode_probe.py
}
step_pmorder() {  # why PM is refused in user programs: one process per variant
  for v in ${PM_VARIANTS:-pm_first act_after act_before objpath_before enable_before profinit_before disable_reenable cuinit_cb ctx_cb}; do
    run timeout 60 "$PY" scripts/gpu/pm_order_probe.py $v
  done
}
step_parts() {  # what each part of the collector costs per tiny launch, one process
  run timeout ${PARTS_TIMEOUT:-200} "$PY" bench/launch_bound/parts.py --rounds ${PARTS_ROUNDS:-8} \
    --steps 3 --pin ${PIN:--1} ${PARTS_MODES:+--modes $PARTS_MODES} --json "$R/parts.json"
}
step_stream() {
  run timeout 130 "$PY" bench/launch_bound/stream.py --mode graph --seconds ${STREAM_S:-30} --json "$R/stream-graph.json"
}
step_overhead() {
  run timeout 120 "$PY" bench/overhead.py --alternate 10 --cycles 50 --modes perfdiff --json "$R/overhead.json"
}
step_nvmlcost() {  # each NVML read's latency on this GPU
  run timeout 60 "$PY" scripts/gpu/nvml_cost_probe.py --json "$R/nvml-cost.json"
}
step_switched() {  # the collector started once, its parts switched step by step
  for p in ${SWITCHED_PROGRAMS:-gpt2 tiny}; do
    run timeout ${SWITCHED_TIMEOUT:-200} "$PY" bench/launch_bound/switched.py --program $p \
      --rounds ${SWITCHED_ROUNDS:-24} --warm ${SWITCHED_WARM:-1} --pin ${PIN:--1} \
      --modes ${SWITCHED_MODES:-untraced,floor,activity,pm,nvml,perfdiff} --json "$R/switched-$p.json"
  done
}
step_tests() {
  run timeout ${TESTS_TIMEOUT:-300} "$PY" -m pytest -m gpu -q ${TESTS:-tests/gpu} -p no:cacheprovider -rs
}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(env probe user gpt2 stream overhead)
for s in "${steps[@]}"; do "step_$s"; done
say done
[ "$R" = "$OUT/r" ] && tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
