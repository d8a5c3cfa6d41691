#!/usr/bin/env bash
# Issue 4 on the GPU machine, in one script: build the RMSNorm CUDA extension (and its
# compile_commands.json), run the benchmark GPU tests (every implementation vs the float64
# reference), record the rmsnorm and linalg fixtures (reduced rmsnorm grid; linalg on two
# backends plus re-runs for the A/A checks), and cross-check per-case GPU times against
# CUDA events (same L2 flush + GPU spin before each call; each case timed once without
# tracing and once with CUPTI activity tracing as the recording had it: no API records).
# The crosscheck step times the events once per file and compares them with perfdiff's
# `--measure call` (lead end to the later of the last GPU end and the end boundary mark) and
# `--measure stream` (lead end to the last GPU end; from the same event times, no GPU), then
# checks that the new fixtures hold their marks' GPU times, and runs the GPU test of the
# marks and of the CUPTI clock warning (tests/gpu/test_marks_clock_gpu.py). It "FAILS"
# (rc 1) while any case over 20 us is off by more than 5 % (bench/crosscheck/README.md,
# "Cross-check with CUDA events"); every part runs whatever an earlier one returned.
# Everything lands under $OUT (fixtures as one tar).
#
# The insitu step records rmsnorm (the fixtures' grid) and linalg (both backends) inside
# bench/bench_crosscheck.py --in-situ, with a CUDA event pair around every measured call of
# that same collection, and compares per cycle and per case (JSON and run files under
# $OUT/insitu; about 2 minutes on an H100 once the extension is built).
#
# One call for issue 4 on the GPU:
#   OUT=/tmp/out bash scripts/gpu_bench.sh install build fixtures crosscheck tables pack
# The in-situ cross-check alone:
#   OUT=/tmp/out bash scripts/gpu_bench.sh install build insitu
# usage: scripts/gpu_bench.sh [STEP...]
#   steps: install env build fixtures crosscheck insitu tables pack tests (the default: all,
#   in order)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/perfdiff-bench}
FIX="$OUT/fixtures"
mkdir -p "$OUT" "$FIX"
PY=${PYTHON:-python3}
LOG="$OUT/gpu_bench.log"
export PYTHONUNBUFFERED=1
export PERFDIFF_EXT_CACHE=${PERFDIFF_EXT_CACHE:-/tmp/perfdiff-ext}
# cuSOLVER's eigh launches up to ~900 kernels per call: fewer linalg cycles keep files < 2 MB
RMS_CYCLES=(--cycles "${CYCLES:-15}" --warmup "${WARMUP:-3}")
LINALG_CYCLES=(--cycles "${LINALG_CYCLES:-8}" --warmup "${LINALG_WARMUP:-1}")
# reduced grid of the seed (S in 128..2048, H in 32..16384): small, odd, medium, large rows
RMS_GRID=(-p seq=128,2048 -p hidden=64,1027,4096,16384)

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }
c() { run perfdiff collect "$@" -q --no-pm; }

step_install() { OUT="$OUT" PYTHON="$PY" bash scripts/gpu_check.sh install; }  # one wheel list

step_env() {
  run nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  run nvcc --version
  run $PY - <<'PY'
import torch, triton
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)
print("gpu", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
print("has_magma", torch.cuda.has_magma)
print("preferred_linalg_library (default):", torch.backends.cuda.preferred_linalg_library())
for b in ("cusolver", "magma", "default"):
    try:
        print("set", b, "->", torch.backends.cuda.preferred_linalg_library(b))
    except Exception as exc:
        print("set", b, "failed:", type(exc).__name__, exc)
torch.backends.cuda.preferred_linalg_library("default")
PY
}

step_build() {
  run $PY -m perfdiff.collect.kernels.rmsnorm_cuda --compile-commands "$OUT"
}

step_tests() { run $PY -m pytest -q -m gpu tests/gpu/test_bench_workloads.py -p no:cacheprovider; }

backends() {  # the two linalg backends to record: magma vs cusolver, or default vs cusolver
  if $PY -c 'import sys, torch; sys.exit(0 if torch.cuda.has_magma else 1)'; then
    echo "magma cusolver"
  else
    echo "default cusolver"
  fi
}

gpu_tag() {  # h100 / h200 / gpu: fixture names say which GPU recorded them
  nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null \
    | grep -o -i -E 'h100|h200|a100|l40s?' | head -1 | tr 'A-Z' 'a-z' | grep . || echo gpu
}

step_fixtures() {
  local tag
  tag=$(gpu_tag)
  c rmsnorm "${RMS_GRID[@]}" "${RMS_CYCLES[@]}" -o "$FIX/rmsnorm-$tag.json.gz"
  c rmsnorm "${RMS_GRID[@]}" "${RMS_CYCLES[@]}" -o "$FIX/rmsnorm-$tag-rerun.json.gz"
  read -r b1 b2 <<<"$(backends)"
  say "linalg backends: before=$b1 after=$b2"
  c linalg -p backend="$b1" "${LINALG_CYCLES[@]}" -o "$FIX/linalg-$tag-$b1.json.gz"
  c linalg -p backend="$b2" -p cpu=false "${LINALG_CYCLES[@]}" -o "$FIX/linalg-$tag-$b2.json.gz"
  c linalg -p backend="$b2" -p cpu=false "${LINALG_CYCLES[@]}" \
    -o "$FIX/linalg-$tag-$b2-rerun.json.gz"
  ls -la "$FIX" | tee -a "$LOG"
}

crosscheck_file() {  # FIXTURE NAME: events timed once (--measure call), stream from them
  local fixture=$1 name=$2 rc=0
  if [ ! -f "$fixture" ]; then say "no $fixture (fixtures step failed?)"; return 1; fi
  run $PY bench/bench_crosscheck.py "$fixture" --measure call \
    --json "$OUT/crosscheck-$name-call.json" || rc=1
  if [ -f "$OUT/crosscheck-$name-call.json" ]; then
    run $PY bench/bench_crosscheck.py "$fixture" --measure stream \
      --events-from "$OUT/crosscheck-$name-call.json" --json "$OUT/crosscheck-$name-stream.json" \
      || rc=1
  fi
  return $rc
}

step_crosscheck() {
  local tag b1 b2 rc=0
  tag=$(gpu_tag)
  read -r b1 b2 <<<"$(backends)"
  crosscheck_file "$FIX/rmsnorm-$tag.json.gz" rmsnorm || rc=1
  crosscheck_file "$FIX/linalg-$tag-$b2.json.gz" "linalg-$b2" || rc=1
  crosscheck_file "$FIX/linalg-$tag-$b1.json.gz" "linalg-$b1" || rc=1
  mark_summary || rc=1
  run $PY -m pytest -q -s -m gpu tests/gpu/test_marks_clock_gpu.py -p no:cacheprovider || rc=1
  return $rc
}

insitu_one() {  # NAME WORKLOAD ARGS...: one in-situ cross-check, JSON + run file
  local name=$1 workload=$2
  shift 2
  mkdir -p "$OUT/insitu"
  run $PY bench/bench_crosscheck.py --in-situ "$workload" "$@" --measure call \
    --json "$OUT/insitu/insitu-$name.json" --save-run "$OUT/insitu/insitu-$name.json.gz"
}

step_insitu() {  # CUDA events of the very calls perfdiff measures, one process per workload
  # INSITU_PASSES=N (default 1): N passes, one process each, pooled per workload afterwards
  # (bench/insitu_pool.py: every cycle of every pass, each paired with its own events)
  local b k w n=${INSITU_PASSES:-1} rc=0 sfx="" bs
  bs=$(backends)  # one torch import, not one per pass
  for k in $(seq 1 "$n"); do
    [ "$n" -gt 1 ] && sfx="-p$k"
    insitu_one "rmsnorm$sfx" rmsnorm "${RMS_GRID[@]}" "${RMS_CYCLES[@]}" || rc=1
    for b in $bs; do
      insitu_one "linalg-$b$sfx" linalg -p backend="$b" -p cpu=false "${LINALG_CYCLES[@]}" || rc=1
    done
  done
  if [ "$n" -gt 1 ]; then
    for w in rmsnorm $(for b in $bs; do echo "linalg-$b"; done); do
      run $PY bench/insitu_pool.py "$OUT"/insitu/insitu-"$w"-p*.json --measure call \
        --json "$OUT/insitu/pooled-$w.json" || rc=1
    done
  fi
  return $rc
}

mark_summary() {  # per fixture: cycles with end-mark times, schema version, clock warnings
  run $PY - "$FIX" "$OUT/marks-summary.json" <<'PY'
import json, pathlib, sys
import numpy as np
from perfdiff.schema.io import load_run_file
out = {}
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json.gz")):
    rf = load_run_file(path)
    c = rf.runs[0].cycles
    out[path.name] = {
        "schema_version": rf.schema_version, "cycles": int(c.index.size),
        "with_mark_start": -1 if c.mark_start_ns is None else int((c.mark_start_ns >= 0).sum()),
        "with_mark_end": -1 if c.mark_end_ns is None else int((c.mark_end_ns >= 0).sum()),
        "clock_warnings": [w for w in rf.collection.warnings if "CUPTI timestamps" in w],
        "warnings": list(rf.collection.warnings)}
    print(path.name, {k: v for k, v in out[path.name].items() if k != "warnings"})
pathlib.Path(sys.argv[2]).write_text(json.dumps(out, indent=1))
ok = all(v["with_mark_end"] == v["cycles"] and not v["clock_warnings"] for v in out.values())
sys.exit(0 if out and ok else 1)
PY
}

step_tables() {  # the seeds' tables and the A/A checks from what was just recorded
  local tag b1 b2
  tag=$(gpu_tag)
  read -r b1 b2 <<<"$(backends)"
  {
    perfdiff bench "$FIX/rmsnorm-$tag.json.gz" --plain
    perfdiff bench "$FIX/rmsnorm-$tag.json.gz" "$FIX/rmsnorm-$tag-rerun.json.gz" --plain
    perfdiff bench "$FIX/linalg-$tag-$b1.json.gz" "$FIX/linalg-$tag-$b2.json.gz" --plain
    perfdiff bench "$FIX/linalg-$tag-$b2.json.gz" "$FIX/linalg-$tag-$b2-rerun.json.gz" --plain
  } > "$OUT/tables.md" 2>&1
  grep -E "cases compared" "$OUT/tables.md" | tee -a "$LOG"
}

step_pack() {
  tar -C "$OUT" -cf "$OUT/fixtures.tar" fixtures && rm -rf "$FIX"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(install env build fixtures crosscheck insitu tables pack tests)
for s in "${steps[@]}"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
say done
