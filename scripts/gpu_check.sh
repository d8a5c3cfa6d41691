#!/usr/bin/env bash
# Everything perfdiff checks on the GPU machine, in one script (run from the repo root there):
# install the carried wheels, run the GPU tests, record the fixtures with provenance, run the
# accuracy checks (ncu, torch.profiler) and the overhead benchmark. Results go under $OUT.
#
# usage: scripts/gpu_check.sh STEP...   steps: install env clock smoke tests fixtures
#        accuracy inprocess overhead overhead_alt kineto pmrate early pack;
#        "all" = install env clock tests fixtures accuracy overhead pack
# Timings on the H100 test machine (2026-11-22): install 6-35 s, smoke 20 s, tests ~170 s (with
# the user-program and benchmark tests), fixtures ~170 s, accuracy ~45-100 s, overhead ~240 s
# (6 rounds x 4 modes x 80 cycles); the in-process overhead design (bench/overhead.py
# --alternate 20) ~160 s. "all" runs past the device tool's 10-minute limit per command, so
# split it, e.g.
#   scripts/gpu_check.sh install smoke fixtures tests pack   then   install accuracy overhead
# Env: OUT (results), FIX_INTERVAL (PM interval of the fixtures), ROUNDS/CYCLES/MODES
# (overhead benchmark).
# Wheels: .whl/ (cupti-python>=13.4 cp312, nvidia-cuda-cupti 13.4.x, pyelftools,
# cuda-pathfinder, nvtx, and msgspec, which the GPU image lacks and the GPU tests import through
# perfdiff's torch.profiler reader), prepared on a networked machine; see docs/howto/collect.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/perfdiff-gpu}
mkdir -p "$OUT" "$OUT/work"
PY=${PYTHON:-python3}
LOG="$OUT/gpu_check.log"
FIX=${FIXTURES:-fixtures}
export PYTHONUNBUFFERED=1

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

step_install() {
  run $PY -m pip install -q --no-deps --disable-pip-version-check \
    .whl/cupti_python-*cp312*.whl .whl/nvidia_cuda_cupti-*.whl .whl/pyelftools-*.whl \
    .whl/cuda_pathfinder-*.whl .whl/nvtx-*cp312*.whl .whl/msgspec-*cp312*.whl
  run $PY -m pip install -q --no-deps --no-build-isolation --disable-pip-version-check -e .
}

step_env() {
  run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  run $PY -c 'import torch, cupti.cupti as c; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  run $PY -m pip list 2>/dev/null | grep -i -E 'cupti|nvtx|nvidia-ml|torch |pathfinder'
}

step_clock() {  # at the check's 2 us and at the collector's default 20 us
  run $PY scripts/gpu/clock_check.py --json "$OUT/clock_check.json"
  run $PY scripts/gpu/clock_check.py --interval-ns 20000 --json "$OUT/clock_check_20us.json"
}

step_smoke() {
  run perfdiff collect gpt-infer --cycles 30 --warmup 5 -o "$OUT/work/a.json.gz"
  run perfdiff kernels "$OUT/work/a.json.gz" | head -40
  run perfdiff kernels --by name "$OUT/work/a.json.gz" | head -30
  run $PY - "$OUT/work/a.json.gz" <<'PY'
import sys
from perfdiff.schema.io import load_run_file
rf = load_run_file(sys.argv[1])
r = rf.runs[0]
print("warnings:", rf.collection.warnings, "sources:", rf.collection.sources)
import numpy as np
for m in r.metrics:
    print(m.name, m.source, m.values.size, m.timestamps_ns[:2], m.values[:5])
    if m.source == "pm_sampling" and m.values.size > 1:
        gaps = np.diff(m.timestamps_ns)
        print("  span ms", (m.timestamps_ns[-1] - m.timestamps_ns[0]) / 1e6, "median dt", np.median(gaps),
              "gaps>2x", int((gaps > 2 * m.interval_ns).sum()), "max gap us", gaps.max() / 1e3)
print("cycles span ms", (r.cycles.end_ns[-1] - r.cycles.start_ns[0]) / 1e6)
print("kernels/cycle:", r.kernels.cycle[r.kernels.cycle >= 0].size / max(1, r.cycles.index.size))
print("outside cycles:", int((r.kernels.cycle < 0).sum()), "memcpy:", r.memcpy.kind[:5])
d = (r.cycles.end_ns - r.cycles.start_ns) / 1e6
print("cycle ms:", d.round(3).tolist())
PY
}

step_tests() { run $PY -m pytest -q -m gpu tests/gpu -p no:cacheprovider; }

step_fixtures() { run bash scripts/gpu/record_fixtures.sh "$OUT/fixtures"; }

step_accuracy() {
  run $PY scripts/gpu/accuracy_ncu.py --work "$OUT/work" --json "$OUT/accuracy_ncu.json"
  run $PY scripts/gpu/accuracy_profiler.py --work "$OUT/work" --json "$OUT/accuracy_profiler.json"
}

# both tools in one process, perfdiff's variants then torch.profiler's (see the script)
step_inprocess() {
  run $PY scripts/gpu/accuracy_profiler.py --work "$OUT/work" --json "$OUT/accuracy_inprocess.json" \
    --in-process ${BLOCKS:-4}
}

# the in-process overhead design (bench/README.md, "Collection overhead")
step_overhead_alt() {
  run timeout ${OVERHEAD_TIMEOUT:-400} $PY bench/overhead.py --alternate ${PAIRS:-20} \
    --cycles ${CYCLES:-50} --modes ${MODES:-perfdiff,torch.profiler} --json "$OUT/overhead_alt.json"
}

step_overhead() {
  run timeout ${OVERHEAD_TIMEOUT:-200} $PY bench/overhead.py --rounds ${ROUNDS:-4} --cycles ${CYCLES:-80} \
    --modes ${MODES:-bare,perfdiff-trace,perfdiff,torch.profiler} \
    --json "$OUT/overhead.json"
}

# issue 15: torch.profiler traces and perfdiff recordings of the same programs (see the script);
# KINETO_MODES="separate both separate" records each program once per word, the N-th into
# $OUT/kineto-N-MODE/ (a mode named twice is a replicate)
step_kineto() {
  local n=0
  for mode in ${KINETO_MODES:-separate}; do
    n=$((n + 1))
    MODE=$mode OUT="$OUT/kineto-$n-$mode" run bash scripts/gpu/kineto_record.sh
  done
}

# issue 13: does CUPTI PM sampling's cost to a launch-bound program follow its sample rate?
# (tiny launches, one process, PM alone at 20 us, 100 us and 1 ms against untraced and the floor)
step_pmrate() {
  mkdir -p "$OUT/pmrate"
  run timeout ${PMRATE_TIMEOUT:-240} $PY bench/launch_bound/parts.py --rounds ${PMRATE_ROUNDS:-6} \
    --steps 3 --pin ${PIN:-3} --modes ${PMRATE_MODES:-untraced,floor,pm_alone,pm_alone_100us,pm_alone_1ms} \
    --json "$OUT/pmrate/parts-pmrate.json"
}

# issue 15: does CUPTI started at CUDA initialisation (where `perfdiff collect`'s child starts
# it) change what a torch.profiler trace of the train program reads? (kineto_prog.py --cupti-early)
step_early() {
  mkdir -p "$OUT/early"
  for rep in 1 2; do
    for e in no model settle; do
      run timeout 100 $PY scripts/gpu/kineto_prog.py --model train --variant normal --mode profiler \
        --steps 22 --settle-s 20 --gap-ms 15 --cupti-early $e \
        --out "$OUT/early/train-normal-early-$e-$rep.pt.trace.json.gz"
    done
  done
}

step_pack() {
  if [ -d "$OUT/fixtures" ]; then
    tar -C "$OUT/fixtures" -cf "$OUT/fixtures_aa.tar" aa && rm -rf "$OUT/fixtures/aa"
    tar -C "$OUT" -cf "$OUT/fixtures.tar" fixtures && rm -rf "$OUT/fixtures"
  fi
  rm -rf "$OUT/work"
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(all)
[ "${steps[0]}" = all ] && steps=(install env clock tests fixtures accuracy overhead pack)
for s in "${steps[@]}"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
say done
