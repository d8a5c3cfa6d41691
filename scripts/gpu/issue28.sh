#!/usr/bin/env bash
# Issue 28 on the lent GPU: fixtures for issue 23, torch.profiler traces, the CUDA-graph probe,
# and bare vs `perfdiff collect` processes alternated (bench/record_truth/ programs).
# usage (repo root, wheels in .whl/): OUT=/tmp/out bash scripts/gpu/issue28.sh STEP...
#   steps: var smi smistop install fixtures traces probe rounds check pausecmp graphfix gputest pmlong pmprobe
#          overhead timmlong gil stream timmvar gpt2holds gpuall costprobe bisect pmsweep gpt2pm
#          compare packsmall drainprobe overlapdump pmcheck graphmeans detachpm detachnames
#          detachtest
#          pack (COLLECT_OPTS: extra collect options)
#   (ROUNDS=3 rounds of bare/recorded pairs; pack: $W into one tar per program's rounds plus
#   traces.tar and rest.tar, then $W removed)
# Every file lands in $OUT/w/ and is packed into $OUT/all.tar at the end (the device tool
# brings back at most 8 files), so run the steps under `timeout` and pack after.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
W="$OUT/w"
mkdir -p "$W/fixtures" "$W/traces" "$W/rounds"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG="$OUT/issue28.log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")
# perfdiff collect with the children tracing through the CPU stand-in (tests/support/fake_cupti.py;
# the children import it, so the repository root goes first on PYTHONPATH where it is used)
PD_FAKE=("$PY" -c "from tests.support.fake_cupti import perfdiff_main; perfdiff_main()")
RT=bench/record_truth
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

step_install() { OUT="$OUT" bash scripts/gpu_check.sh install env >>"$LOG" 2>&1; tail -5 "$LOG"; }

prog() {  # prog NAME -> the program's argv
  case $1 in
    timm-bf16) echo "$RT/timm_train.py --precision bf16 --steps ${TIMM_STEPS:-40}" ;;
    timm-fp32) echo "$RT/timm_train.py --precision fp32 --steps ${TIMM_STEPS:-40}" ;;
    graph-bf16) echo "$RT/cuda_graph_mlp.py --dtype bf16 --steps ${GRAPH_STEPS:-80}" ;;
    graph-fp32) echo "$RT/cuda_graph_mlp.py --dtype fp32 --steps ${GRAPH_STEPS:-80}" ;;
    cnn-amp) echo "$RT/cnn_train.py --precision amp --steps ${CNN_STEPS:-40}" ;;
    cnn-fp32) echo "$RT/cnn_train.py --precision fp32 --steps ${CNN_STEPS:-40}" ;;
    trainer-off) echo "$RT/trainer_train.py --steps ${TRAINER_STEPS:-40}" ;;
    trainer-on) echo "$RT/trainer_train.py --gc --steps ${TRAINER_STEPS:-40}" ;;
    gpt2-sdpa) echo "$RT/gpt2_generate.py --attn sdpa --steps ${GPT2_STEPS:-30}" ;;
    gpt2-eager) echo "$RT/gpt2_generate.py --attn eager --steps ${GPT2_STEPS:-30}" ;;
  esac
}
opts() {  # COLLECT_OPTS: extra collect options for every recorded process (e.g. --no-pm)
  case $1 in graph-*) echo "--cycle-range step ${COLLECT_OPTS:-}" ;; *) echo "${COLLECT_OPTS:-}" ;; esac
}

bare() {  # bare NAME [LOGFILE]: the program's output also to LOGFILE
  run timeout 120 "$PY" $(prog "$1") | tee "${2:-/dev/null}"; return "${PIPESTATUS[0]}"
}
recorded() {  # recorded NAME OUTFILE: the output also to OUTFILE.log
  run timeout 180 "${PD[@]}" collect $(opts "$1") -o "$2" -- "$PY" $(prog "$1") | tee "$2.log"
  return "${PIPESTATUS[0]}"
}

step_fixtures() {  # round 0: its recorded processes are the issue-23 fixtures
  for p in timm-bf16 timm-fp32; do
    bare "$p"
    recorded "$p" "$W/fixtures/timm-vit-${p#timm-}.json.gz"
  done
}

step_traces() {
  run timeout 120 "$PY" $RT/timm_train.py --precision bf16 --steps 11 --trace "$W/traces/timm-vit-bf16.pt.trace.json.gz"
  run timeout 120 "$PY" $RT/timm_train.py --precision fp32 --steps 11 --trace "$W/traces/timm-vit-fp32.pt.trace.json.gz"
  run timeout 150 "$PY" $RT/gpt2_generate.py --attn eager --steps 6 --active 1 --trace "$W/traces/gpt2-generate-eager.pt.trace.json.gz"
  run timeout 150 "$PY" $RT/gpt2_generate.py --attn sdpa --steps 6 --active 1 --trace "$W/traces/gpt2-generate-sdpa.pt.trace.json.gz"
  run timeout 120 "$PY" $RT/cuda_graph_mlp.py --dtype bf16 --steps 13 --trace "$W/traces/graph-bf16.pt.trace.json.gz"
  run timeout 120 "$PY" $RT/cuda_graph_mlp.py --dtype fp32 --steps 13 --trace "$W/traces/graph-fp32.pt.trace.json.gz"
  ls -la "$W/traces" | tee -a "$LOG"
}

step_probe() {
  run timeout 90 "$PY" scripts/gpu/graph_probe.py --when after --intake raw
  [ -n "${PROBE_ALL:-}" ] || return 0
  run timeout 90 "$PY" scripts/gpu/graph_probe.py --when before --intake raw
  run timeout 90 "$PY" scripts/gpu/graph_probe.py --when after --intake objects
}

step_graphfix() {  # the CUDA-graph programs recorded by the fixed collector
  recorded graph-bf16 "$W/rounds/graph-bf16-fixed.json.gz"
  recorded graph-fp32 "$W/rounds/graph-fp32-fixed.json.gz"
}

step_gputest() {  # the record-for-record test (raw decode vs cupti-python's objects)
  run timeout 200 "$PY" -m pytest -q -m gpu tests/gpu/test_raw_intake_gpu.py -p no:cacheprovider
}

step_detachtest() {  # the detach's GPU tests, their outcome in the log that comes back (a call's
  # stdout past its last 12,000 characters is lost: 2026-12-07 17:03)
  run timeout 200 "$PY" -m pytest -q -m gpu tests/gpu/test_detach_gpu.py -rA -p no:cacheprovider
}

step_pmlong() {  # the configuration whose PM sampling failed at stop (issue 28)
  run timeout 200 "${PD[@]}" collect --cycle-function transformers.generation.utils:GenerationMixin.generate \
    -o "$W/rounds/gpt2-sdpa-function.json.gz" -- "$PY" $RT/gpt2_generate.py --attn sdpa --steps 30
}

step_pmprobe() {  # the drain threshold before the fix (image share 2.0), then as fixed
  run timeout 90 "$PY" scripts/gpu/pm_long_probe.py --seconds 8 --image-share 2.0
  run timeout 90 "$PY" scripts/gpu/pm_long_probe.py --seconds 8
  run timeout 120 "$PY" scripts/gpu/pm_long_probe.py --seconds 20
}

step_overhead() {  # gpt-infer in-process alternation (bench/README.md "Collection overhead")
  PAIRS=${PAIRS:-10} MODES=${MODES:-perfdiff} OUT="$OUT" bash scripts/gpu_check.sh overhead_alt \
    >>"$LOG" 2>&1
  cp "$OUT/overhead_alt.json" "$W/" 2>/dev/null
  grep -E "median|pooled|overhead" "$OUT/gpu_check.log" | tail -8 | tee -a "$LOG"
}

step_timmlong() {  # (a) long enough for PM to be decoded while the program runs
  TIMM_STEPS=150 recorded timm-bf16 "$W/rounds/timm-bf16-long.json.gz"
}

step_pausecmp() {  # timm bf16: bare, as committed (API ids off), API kinds off (the patch)
  local r
  for r in $(seq 1 "${ROUNDS:-3}"); do
    say "pausecmp round $r"
    bare timm-bf16 "$W/rounds/timm-bf16-r$r-bare.log"
    recorded timm-bf16 "$W/rounds/timm-bf16-r$r.json.gz"
    git apply bench/record_truth/patches/kinds_off.patch || { say "patch failed"; return 1; }
    recorded timm-bf16 "$W/rounds/timm-bf16K-r$r.json.gz"
    git apply -R bench/record_truth/patches/kinds_off.patch
  done
}

step_check() {  # untraced cycles vs the programs' own timers, recorded vs bare (item 1)
  run "$PY" $RT/untraced_check.py "$W/rounds" --json "$W/untraced_check.json"
}

step_gil() {  # item 2: do PM sampling's decode or NVML hold the program's interpreter?
  run timeout 120 "$PY" scripts/gpu/gil_probe.py --seconds "${GIL_SECONDS:-5}"
}

step_stream() {  # item 2: holds of the synthetic ~100,000 launches/s stream, spooled and not
  run timeout 100 "$PY" bench/launch_bound/stream.py --mode graph --rate 100000 --seconds 10 --spool --json "$W/stream-graph-spool.json"
  run timeout 100 "$PY" bench/launch_bound/stream.py --mode loop --seconds 10 --spool --json "$W/stream-loop-spool.json"
  run timeout 100 "$PY" bench/launch_bound/stream.py --mode graph --rate 100000 --seconds 10 --json "$W/stream-graph-decode.json"
}

step_timmvar() {  # timm bf16: bare, recorded (defaults), recorded --no-pm --no-nvml, alternated
  local r
  for r in $(seq 1 "${ROUNDS:-3}"); do
    say "timmvar round $r"
    bare timm-bf16 "$W/rounds/timm-bf16-r$r-bare.log"
    recorded timm-bf16 "$W/rounds/timm-bf16-r$r.json.gz"
    COLLECT_OPTS="--no-pm --no-nvml" recorded timm-bf16 "$W/rounds/timm-bf16Q-r$r.json.gz"
  done
}

step_gpt2holds() {  # (d) GPT-2 generate, the launch-bound program: holds, NVTX and function cycles
  local g="$RT/gpt2_generate.py --attn sdpa --steps ${GPT2_STEPS:-30}"
  run timeout 150 "$PY" $g | tee "$W/rounds/gpt2R-r1-bare.log" >/dev/null
  run timeout 200 "${PD[@]}" collect --cycle-range step -o "$W/rounds/gpt2R-r1.json.gz" -- "$PY" $g \
    | tee "$W/rounds/gpt2R-r1.json.gz.log" >/dev/null
  run timeout 200 "${PD[@]}" collect --cycle-function transformers.generation.utils:GenerationMixin.generate \
    -o "$W/rounds/gpt2F-r1.json.gz" -- "$PY" $g | tee "$W/rounds/gpt2F-r1.json.gz.log" >/dev/null
}

step_gpuall() {  # every GPU test (collect, user programs, raw intake, graphs)
  run timeout "${GPUALL_S:-300}" "$PY" -m pytest -q -m gpu tests/gpu -p no:cacheprovider ${GPUALL_X--x}
}

step_pack() {  # one tar per program's rounds (each file back is at most 16 MB)
  local p
  for p in $(ls "$W/rounds" 2>/dev/null | sed -E 's/-r[0-9]+.*//' | sort -u); do
    (cd "$W/rounds" && tar cf "$OUT/rounds-$p.tar" "$p"-r*)
  done
  (cd "$W" && tar cf "$OUT/traces.tar" traces && tar cf "$OUT/rest.tar" --exclude traces --exclude rounds .)
  rm -rf "$W"
  ls -la "$OUT"
}

PROBE_SITE="$(pwd)/$RT/probe_site"
probed() {  # probed CMD...: the command with probe_site on PYTHONPATH (a PROBE line at exit)
  PYTHONPATH="$PROBE_SITE${PYTHONPATH:+:$PYTHONPATH}" "$@"
}

step_drainprobe() {  # item 3: where the PM drain's time per sample goes (GPT-2 generate load)
  run timeout "${DRAIN_S:-120}" "$PY" $RT/pm_drain_probe.py --seconds "${DRAIN_SECONDS:-0.5}" \
    | tee "$W/pmdrain.log" >/dev/null
}

step_overlapdump() {  # same-stream overlaps: dump them, as committed and with a plain flush
  local v  # at the untraced switch-off (patches/pause_flush0.patch: activity_flush_all(0))
  for v in forced plain; do
    [ "$v" = plain ] && { git apply $RT/patches/pause_flush0.patch || return 1; }
    git apply $RT/patches/dump_overlaps.patch || return 1
    OVERLAP_DUMP="$W/overlap-cnn-$v" recorded cnn-amp "$W/rounds/cnnO$v-r1.json.gz" >/dev/null
    OVERLAP_DUMP="$W/overlap-graph-$v" recorded graph-bf16 "$W/rounds/graphO$v-r1.json.gz" >/dev/null
    git apply -R $RT/patches/dump_overlaps.patch
    [ "$v" = plain ] && git apply -R $RT/patches/pause_flush0.patch
  done
  ls "$W" | grep overlap | tee -a "$LOG"
}

step_pmcheck() {  # item 3 with the launchers' own PM defaults: programs, built-ins, Triton
  recorded timm-bf16 "$W/rounds/timmP-r1.json.gz" >/dev/null
  GPT2_STEPS=${GPT2_STEPS:-20} recorded gpt2-sdpa "$W/rounds/gpt2P-r1.json.gz" >/dev/null
  run timeout 150 "${PD[@]}" collect gpt-infer -q -o "$W/rounds/builtinG-r1.json.gz" >/dev/null
  run timeout 150 "${PD[@]}" collect rmsnorm -q -p impls=triton -p dtypes=bfloat16 -p seq=512 \
    -p hidden=1024,4096 -o "$W/rounds/builtinT-r1.json.gz" >/dev/null
  run "$PY" $RT/pm_coverage.py "$W"/rounds/timmP-r1.json.gz "$W"/rounds/gpt2P-r1.json.gz \
    "$W"/rounds/builtin*.json.gz --json "$W/pm_coverage_check.json" | tee "$W/pm_coverage_check.log"
}

step_graphmeans() {  # (f) torch.profiler traces and per-kernel means beside round 1
  local d
  for d in bf16 fp32; do
    run timeout 120 "$PY" $RT/cuda_graph_mlp.py --dtype $d --steps 13 --trace "$W/traces/graph-$d.pt.trace.json.gz" >/dev/null
    run "$PY" $RT/kernel_means.py "$W/rounds/graph-$d-r1.json.gz" "$W/traces/graph-$d.pt.trace.json.gz" \
      --json "$W/kernel_means-$d.json" | tail -30
  done
}

step_detachpm() {  # item 1: does PM sampling live through cuptiFinalize? (detach_probe.py --scenario pm)
  # each finalize mode (DETACH_FINALIZE: direct, exit-site = from a runtime-API exit callback)
  local r f
  for r in $(seq "${DETACH_RUNS:-2}"); do
    for f in ${DETACH_FINALIZE:-direct exit-site}; do
      run timeout 200 "$PY" $RT/detach_probe.py --scenario pm --precision "${DETACH_PREC:-amp}" \
        --rounds "${DETACH_ROUNDS:-5}" --block "${DETACH_BLOCK:-20}" --finalize "$f" \
        | tee "$W/detachpm-$f-r$r.log" >/dev/null
    done
  done
}

step_detachnames() {  # item 1: are CUPTI's kernel-name strings readable after cuptiFinalize?
  # (a detached run would read them at stop: raw_intake.resolve_names); a crash is an answer too
  local f
  for f in ${DETACH_FINALIZE:-direct exit-site}; do
    run timeout 120 "$PY" $RT/detach_probe.py --scenario names --precision "${DETACH_PREC:-amp}" \
      --block "${DETACH_BLOCK:-20}" --finalize "$f" | tee "$W/detachnames-$f.log" >/dev/null
    say "detachnames $f exit status ${PIPESTATUS[0]}"
  done
}

step_costprobe() {  # item 1: CUPTI states switched inside one timm bf16 process
  run timeout 150 "$PY" $RT/cost_probe.py --rounds "${COST_ROUNDS:-4}" | tee "$W/costprobe.log" >/dev/null
}

bisect_one() {  # bisect_one CFG ROUND: timm bf16 bare or recorded as CFG, probed
  local cfg=$1 r=$2 f="$W/rounds/timm$1-r$2"
  case $cfg in
    B) run probed timeout 120 "$PY" $(prog timm-bf16) | tee "$W/rounds/timmD-r$r-bare.log" >/dev/null ;;
    F) PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" run probed timeout 150 "${PD_FAKE[@]}" collect --no-pm --no-nvml \
         -o "$f.json.gz" -- "$PY" $(prog timm-bf16) | tee "$f.json.gz.log" >/dev/null ;;
    Q) run probed timeout 180 "${PD[@]}" collect --no-pm --no-nvml -o "$f.json.gz" -- "$PY" \
         $(prog timm-bf16) | tee "$f.json.gz.log" >/dev/null ;;
    K) git apply $RT/patches/kernel_only.patch || { say "patch failed"; return 1; }
       run probed timeout 180 "${PD[@]}" collect --no-pm --no-nvml -o "$f.json.gz" -- "$PY" \
         $(prog timm-bf16) | tee "$f.json.gz.log" >/dev/null
       git apply -R $RT/patches/kernel_only.patch ;;
    D) run probed timeout 180 "${PD[@]}" collect -o "$f.json.gz" -- "$PY" $(prog timm-bf16) \
         | tee "$f.json.gz.log" >/dev/null ;;
  esac
}

step_bisect() {  # item 1: bare, hooks only (fake backend), kernel kind only, --no-pm --no-nvml,
  local r c cfgs  # defaults; order rotated every round
  for r in $(seq 1 "${ROUNDS:-3}"); do
    cfgs=${BISECT:-B F K Q D}
    for _ in $(seq 2 "$r"); do cfgs="${cfgs#* } ${cfgs%% *}"; done
    say "bisect round $r: $cfgs"
    for c in $cfgs; do bisect_one "$c" "$r"; done
  done
}

step_pmsweep() {  # item 3: interval, metrics, drain cadence, image margin on a dense load
  local v
  for v in "20000 both" "20000 tensor" "40000 both" "40000 both 0.05 3" "20000 both 0.05 3"; do
    set -- $v
    run timeout 60 "$PY" scripts/gpu/pm_long_probe.py --seconds "${PM_SECONDS:-6}" \
      --interval-ns "$1" --metrics "$2" ${3:+--image-share $3} ${4:+--margin $4} \
      | tee -a "$W/pmsweep.log" >/dev/null
  done
}

step_gpt2pm() {  # item 3: GPT-2 generate 30 steps (its PM failed at stop), intervals as given
  local g="$RT/gpt2_generate.py --attn sdpa --steps ${GPT2_STEPS:-30}" i
  for i in ${GPT2_INTERVALS:-20000 50000}; do
    run timeout 200 "${PD[@]}" collect --cycle-range step --no-nvml --sample-interval-ns "$i" \
      -o "$W/rounds/gpt2P$i-r1.json.gz" -- "$PY" $g | tee "$W/rounds/gpt2P$i-r1.json.gz.log" >/dev/null
  done
  run "$PY" $RT/pm_coverage.py "$W"/rounds/*.json.gz | tee "$W/pm_coverage.log" >/dev/null
}

step_compare() {  # A -> B per round and A vs A against the bare change (PAIRS="A:B ..."); PM
  local pair
  for pair in ${COMPARE_PAIRS:-timm-bf16:timm-fp32}; do
    run "$PY" $RT/compare_pairs.py "$W/rounds" "${pair%%:*}" "${pair##*:}" \
      --rounds "${ROUNDS:-3}" --json "$W/compare-${pair%%:*}.json"
  done
  run "$PY" $RT/pm_coverage.py "$W"/rounds/*.json.gz --json "$W/pm_coverage.json" >/dev/null
}

step_packsmall() {  # logs and summaries in one tar, run files in one tar per program family
  (cd "$W" && tar cf "$OUT/logs.tar" --exclude='*.json.gz' .)
  local fam
  for fam in timm graph gpt2 ddp cnn trainer builtin; do
    ls "$W/rounds/$fam"*.json.gz >/dev/null 2>&1 || continue
    (cd "$W/rounds" && tar cf "$OUT/runs-$fam.tar" "$fam"*.json.gz)
  done
  rm -rf "$W"
  ls -la "$OUT"
}

variant() {  # variant PROG CFG ROUND: PROG recorded as CFG (D defaults, P --no-pm, Q --no-pm
  # --no-nvml, F perfdiff's Python side only: the fake CUPTI backend, --no-pm --no-nvml,
  # X --no-pm --detach-untraced: CUPTI detached in the untraced runs, cupti/detached.py;
  # Y --detach-untraced with PM on (the defaults but the detach); Z --no-pm --no-nvml
  # --detach-untraced (what is left of the collector in a detached untraced cycle);
  # T torch.profiler over every steady step, the program's own --trace: timm, graph, cnn, gpt2;
  # L --cost-target 1.02: long untraced runs; N the floor under an NVTX cycle, no perfdiff:
  # bench/nvtx_boundary/floor_probe.py)
  local p=$1 c=$2 r=$3 f="$W/rounds/$1$2-r$3" extra
  case $c in  # the real collector's variants differ only in their options
    D) extra="" ;; P) extra="--no-pm" ;; Q) extra="--no-pm --no-nvml" ;;
    X) extra="--no-pm --detach-untraced" ;; Y) extra="--detach-untraced" ;;
    Z) extra="--no-pm --no-nvml --detach-untraced" ;;
    L) extra="--cost-target 1.02" ;;  # long untraced runs (PM's held decode near its buffer)
  esac
  case $c in
    B) bare "$p" "$W/rounds/$p-r$r-bare.log" >/dev/null ;;
    N) run timeout 120 "$PY" bench/nvtx_boundary/floor_probe.py $(prog "$p") \
         | tee "$W/rounds/$p-r$r-floor.log" >/dev/null ;;
    D|P|Q|X|Y|Z|L) run timeout 180 "${PD[@]}" collect $(opts "$p") $extra -o "$f.json.gz" -- "$PY" $(prog "$p") \
         | tee "$f.json.gz.log" >/dev/null ;;
    T) STEPTIMER_PROFILE_ALL=1 run timeout 180 "$PY" $(prog "$p") --trace "/tmp/$p-r$r.pt.trace.json" \
         | tee "$W/rounds/$p-r$r-profiler.log" >/dev/null; rm -f "/tmp/$p-r$r.pt.trace.json" ;;
    F) PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" run timeout 150 "${PD_FAKE[@]}" collect $(opts "$p") --no-pm --no-nvml \
         -o "$f.json.gz" -- "$PY" $(prog "$p") | tee "$f.json.gz.log" >/dev/null ;;
  esac
}

step_var() {  # each of VARS (B bare, D, P, Q, F, X, Y, T) for each of VARPROGS, order rotated every
  local r c cfgs p  # round; every variant's run gets its round's bare log (untraced_check.py)
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for p in ${VARPROGS:-graph-bf16}; do
      cfgs=${VARS:-B D P F}
      for _ in $(seq 2 "$r"); do cfgs="${cfgs#* } ${cfgs%% *}"; done
      say "var $p round $r: $cfgs"
      for c in $cfgs; do variant "$p" "$c" "$r"; done
      for c in $cfgs; do
        case $c in B|T|N) ;; *) cp "$W/rounds/$p-r$r-bare.log" "$W/rounds/$p$c-r$r-bare.log" 2>/dev/null ;; esac
      done
    done
  done
}

step_smi() {  # GPU clocks, power, temperature every 200 ms in the background (read only)
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 > "$W/smi.csv" 2>&1 &
  echo $! > "$W/smi.pid"
}

step_smistop() { kill "$(cat "$W/smi.pid")" 2>/dev/null; rm -f "$W/smi.pid"; wc -l "$W/smi.csv" | tee -a "$LOG"; }

step_rounds() {  # bare and recorded alternated, order flipped every round
  local r p
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for p in ${PROGS:-graph-bf16 graph-fp32 timm-bf16 timm-fp32}; do
      say "round $r $p"
      if [ $((r % 2)) -eq 1 ]; then
        recorded "$p" "$W/rounds/$p-r$r.json.gz"; bare "$p" "$W/rounds/$p-r$r-bare.log"
      else
        bare "$p" "$W/rounds/$p-r$r-bare.log"; recorded "$p" "$W/rounds/$p-r$r.json.gz"
      fi
    done
  done
}

for s in "$@"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
say done
