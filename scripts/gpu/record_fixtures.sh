#!/usr/bin/env bash
# Record every fixture under DIR (default fixtures/) with `perfdiff collect` on the GPU.
# Provenance: each run file holds the command (workload.params.collect_command), the GPU,
# driver, CUDA/CUPTI/torch versions (environment) and the date (created_unix_s);
# fixtures/README.md tabulates them (scripts/gpu/fixture_table.py).
set -uo pipefail
D=${1:-fixtures}
mkdir -p "$D/aa"
I=${FIX_INTERVAL:-20000}         # PM interval (ns) of the main fixtures (the default)
IA=$(( I > 10000 ? I : 10000 ))  # the A/A runs: coarser, to keep ten files small
# COLLECT_EXTRA: options added to every collect (e.g. --api-records)
c() { echo "\$ perfdiff collect $*"; perfdiff collect "$@" ${COLLECT_EXTRA:-} -q || echo "FAILED rc=$?: $*"; }
c gpt-infer --cycles 100 --warmup 5 --sample-interval-ns "$I" -o "$D/gpt-infer-normal.json.gz"
c gpt-infer --cycles 100 --warmup 5 --contend 0.5 --contend-mode partition --sample-interval-ns "$I" -o "$D/gpt-infer-contended.json.gz"
c train-step --cycles 30 --warmup 5 --sample-interval-ns "$I" -o "$D/train-step-normal.json.gz"
c train-step --cycles 30 --warmup 5 -p optimizer=loop --sample-interval-ns "$I" -o "$D/train-step-adamw-loop.json.gz"
for i in 01 02 03 04 05 06 07 08 09 10; do
  c gpt-infer --cycles 30 --warmup 5 --sample-interval-ns "$IA" -o "$D/aa/gpt-infer-aa-$i.json.gz"
done
ls -la "$D" "$D/aa"
