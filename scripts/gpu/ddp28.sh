#!/usr/bin/env bash
# Issue 28 (e) and issue 26 item 3 on the lent two-GPU machine: a two-rank torchrun DDP
# training loop (bench/record_truth/ddp_train.py), bare and `perfdiff collect -o F` processes
# alternated (bf16 and fp32), and `perfdiff collect --shards` of the normal job and of a job
# whose rank 1 is slowed on purpose.
# usage (repo root, wheels in .whl/): OUT=/tmp/out bash scripts/gpu/ddp28.sh STEP...
#   steps: install shards rounds check compare pmsweep gputest pack packsmall
#   (ROUNDS=3, DDP_STEPS=40, SLOW=250)
# Files land in $OUT/w/ and are packed into $OUT/*.tar (the device tool brings back 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/perfdiff-gpu}
W="$OUT/w"
mkdir -p "$W/rounds" "$W/shards"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=${PYTHON:-python3}
LOG="$OUT/ddp28.log"
PD=("$PY" -c "from perfdiff.cli.app import main; main()")
PROG=bench/record_truth/ddp_train.py
TR=("$PY" -m torch.distributed.run --nproc-per-node 2)
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

step_install() {
  OUT="$OUT" bash scripts/gpu_check.sh install env >>"$LOG" 2>&1; tail -8 "$LOG"
  run "$PY" -c "import pyarrow, pandas, scipy; print('pyarrow', pyarrow.__version__)"
  run nvidia-smi topo -m
}

args() {  # args NAME -> the program's arguments
  case $1 in
    bf16) echo "--precision bf16 --steps ${DDP_STEPS:-40}" ;;
    fp32) echo "--precision fp32 --steps ${DDP_STEPS:-40}" ;;
    slow) echo "--precision bf16 --steps ${DDP_STEPS:-40} --slow-rank 1 --slow-matmuls ${SLOW:-250}" ;;
  esac
}
bare() {  # bare NAME LOGFILE
  run timeout 150 "${TR[@]}" $PROG $(args "$1") | tee "$2"; return "${PIPESTATUS[0]}"
}
recorded() {  # recorded NAME OUTFILE [collect options]: the output also to OUTFILE.log
  local name=$1 out=$2; shift 2
  run timeout 200 "${PD[@]}" collect "$@" -o "$out" -- "${TR[@]}" $PROG $(args "$name") \
    | tee "$out.log"
  return "${PIPESTATUS[0]}"
}

step_shards() {  # issue 26 item 3: one shard per rank, written by collect on the GPU machine
  recorded bf16 "$W/shards/ddp-normal" --shards
  recorded slow "$W/shards/ddp-slow1" --shards
  bare slow "$W/shards/ddp-slow1-bare.log"
  ls -la "$W/shards"/* | tee -a "$LOG"
  for j in ddp-normal ddp-slow1; do
    [ -f "$W/shards/$j/perfdiff-shards.json" ] || continue
    run "${PD[@]}" ranks "$W/shards/$j" -o "$W/shards/$j-ranks.md"
  done
  [ -f "$W/shards/ddp-slow1/perfdiff-shards.json" ] && \
    run "${PD[@]}" compare "$W/shards/ddp-normal" "$W/shards/ddp-slow1" -o "$W/shards/compare.md"
  return 0
}

step_rounds() {  # bare and recorded alternated, order flipped every round
  local r p
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for p in bf16 fp32; do
      say "round $r ddp-$p"
      if [ $((r % 2)) -eq 1 ]; then
        recorded "$p" "$W/rounds/ddp-$p-r$r.json.gz"; bare "$p" "$W/rounds/ddp-$p-r$r-bare.log"
      else
        bare "$p" "$W/rounds/ddp-$p-r$r-bare.log"; recorded "$p" "$W/rounds/ddp-$p-r$r.json.gz"
      fi
    done
  done
}

step_check() {
  run "$PY" bench/record_truth/untraced_check.py "$W/rounds" --json "$W/untraced_check.json"
}

step_gputest() {  # the GPU tests, with the merged recorder (issue 28 item 5)
  run timeout 240 "$PY" -m pytest -q -m gpu tests/gpu/test_raw_intake_gpu.py \
    tests/gpu/test_collect_gpu.py -p no:cacheprovider
}

step_compare() {  # bf16 -> fp32 per round and bf16 vs bf16, against the bare change
  run "$PY" bench/record_truth/compare_pairs.py "$W/rounds" ddp-bf16 ddp-fp32 \
    --rounds "${ROUNDS:-3}" --json "$W/compare.json"
  run "$PY" bench/record_truth/pm_coverage.py "$W"/rounds/*.json.gz --json "$W/pm_coverage.json"
}

step_pmsweep() {  # issue 28 item 3 on this machine's GPU 0: issue28.sh's sweep, same $OUT/w
  OUT="$OUT" PYTHON="$PY" bash scripts/gpu/issue28.sh pmsweep
}

step_packsmall() {  # logs and summaries in one tar; run files are not brought back
  (cd "$W" && tar cf "$OUT/logs.tar" --exclude='*.json.gz' --exclude shards .)
  rm -rf "$W"
  ls -la "$OUT"
}

step_pack() {
  (cd "$W" && tar cf "$OUT/shards.tar" shards && tar cf "$OUT/rounds.tar" --exclude shards .)
  rm -rf "$W"
  ls -la "$OUT"
}

for s in "$@"; do
  say "step $s"
  "step_$s" || say "step $s FAILED (rc=$?)"
done
say done
