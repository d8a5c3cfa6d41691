#!/usr/bin/env bash
# Issue 15 on the H100: torch.profiler traces and perfdiff recordings of the same programs.
# For each program (gpt, train, hf) and variant (normal, abnormal): one torch.profiler trace
# (schedule wait 1, warm-up 4, active STEPS; export_chrome_trace .json.gz) and one
# `perfdiff collect --no-pm --warmup 5` recording of the same program (perfdiff.cycle() per
# step), one process each, interleaved (trace, recording, trace, ...). --no-pm because
# torch.profiler does not PM-sample: like with like for the per-kernel time check (PM sampling
# can stretch memory-bound kernels by a few %). Each process first runs its step SETTLE_S
# seconds unmeasured (kineto_prog.py --settle-s) so that both sources measure the GPU in a
# steady state, not two phases of its ramp out of idle; every step is followed by GAP_MS
# (default 5) ms of sleep inside its cycle/profiler step (kineto_prog.py --gap-ms), a duty
# cycle below 100 % that keeps the GPU under its power cap (at the cap the clock follows power
# draw and the two tools' different host overhead gives different clocks); the GPU's clocks,
# temperature, power and throttle reasons are logged before and after each process (provenance).
# MODE=both (default: MODE=separate, as above) records each program ONCE, in one process:
# kineto_prog.py --mode both settles, records the steps with perfdiff's own collector
# in-process (same settings: no PM, warm-up 5, NVML, memcpy/memset, boundary marks), then
# traces them with torch.profiler (same schedule), so that both files share every process-level
# condition; its settle runs before perfdiff's tracing starts, so nothing is trimmed.
# usage (repo root, perfdiff on PYTHONPATH): [MODE=both] [SETTLE_S=20] [SETTLE_STEPS=N]
#   [GAP_MS=5] [MODELS="gpt train hf"] OUT=/tmp/out bash scripts/gpu/kineto_record.sh
# Results: $OUT/kineto-fixtures.tar (the 12 files, appended as each is written) and
# $OUT/kineto_record.log (provenance). A recording holds the settle's kernels before its first
# cycle (one to three hundred thousand, 1-7 MB): scripts/gpu/kineto_trim.py drops them here,
# right after each recording, and only the trimmed file goes into the tar (the raw ones stay in
# $WORK, outside $OUT: the device tool brings back 8 files of 16 MiB at most). Wall time with
# SETTLE_S=20 on the H100: 422 s for the 12 processes without the gap, 439 s with GAP_MS=5
# (2026-11-25; the settle is timed, the gap adds about steps x GAP_MS per process).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-kineto}
SETTLE_S=${SETTLE_S:-20}
GAP_MS=${GAP_MS:-5}
GAP_MS_TRAIN=${GAP_MS_TRAIN:-15}  # train's step is ~4x longer since 2026-11-25: the same duty cycle
SETTLE_STEPS=${SETTLE_STEPS:-0}  # > 0: settle exactly that many steps (same model state)
MODELS=${MODELS:-gpt train hf}
MODE=${MODE:-separate}
W="$OUT/work"
RAW=${WORK:-/tmp/kineto-raw}
mkdir -p "$W" "$RAW"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/kineto_record.log"
TAR="$OUT/kineto-fixtures.tar"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")
say() { echo "== $(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }
gpu() {  # the GPU's state now, one csv line, tagged
  say "gpu $1: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader 2>&1)"
}
keep() {  # move one result file into the tar as soon as it exists (a cut-off run keeps it)
  if [ -f "$W/$1" ]; then ls -la "$W/$1" >>"$LOG"; tar -C "$W" -rf "$TAR" "$1" && rm "$W/$1"
  else say "MISSING $1"; fi
}

run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
run nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv
run "$PY" -c 'import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__, torch.cuda.get_device_name(0))'
say "settle ${SETTLE_S} s per process, gap ${GAP_MS} ms after every step (train ${GAP_MS_TRAIN})"
say "settle steps ${SETTLE_STEPS} (0: timed), models ${MODELS}, mode ${MODE}"
for model in $MODELS; do
  steps=25
  gap=$GAP_MS
  [ "$model" = train ] && steps=22 && gap=$GAP_MS_TRAIN
  for variant in normal abnormal; do
    name="$model-$variant"
    if [ "$MODE" = both ]; then  # one process: perfdiff recording first, then the trace
      f="kineto-$name.pt.trace.json.gz"
      r="kineto-$name-perfdiff.json.gz"
      gpu "before $name (both)"
      run timeout $((SETTLE_S + 150)) "$PY" scripts/gpu/kineto_prog.py --model "$model" \
        --variant "$variant" --mode both --steps "$steps" --settle-s "$SETTLE_S" \
        --settle-steps "$SETTLE_STEPS" --gap-ms "$gap" --out "$W/$f" --run-file "$W/$r" \
        || say "FAILED both $name"
      gpu "after $name (both)"
      keep "$r"
      keep "$f"
      continue
    fi
    f="kineto-$name.pt.trace.json.gz"
    gpu "before $f"
    run timeout $((SETTLE_S + 70)) "$PY" scripts/gpu/kineto_prog.py --model "$model" \
      --variant "$variant" --mode profiler --steps "$steps" --settle-s "$SETTLE_S" \
      --settle-steps "$SETTLE_STEPS" --gap-ms "$gap" --out "$W/$f" || say "FAILED profiler $name"
    gpu "after $f"
    keep "$f"
    f="kineto-$name-perfdiff.json.gz"
    gpu "before $f"
    run timeout $((SETTLE_S + 90)) "${PD[@]}" collect --no-pm --warmup 5 -o "$RAW/$f" \
      -- "$PY" scripts/gpu/kineto_prog.py --model "$model" --variant "$variant" \
      --mode perfdiff --steps "$steps" --settle-s "$SETTLE_S" --settle-steps "$SETTLE_STEPS" --gap-ms "$gap" \
      || say "FAILED perfdiff $name"
    gpu "after $f"
    run "$PY" scripts/gpu/kineto_trim.py "$RAW/$f" "$W/$f" || say "FAILED trim $name"
    keep "$f"
  done
done
run ls -la "$RAW"
run tar -tvf "$TAR"
rmdir "$W"
say done
