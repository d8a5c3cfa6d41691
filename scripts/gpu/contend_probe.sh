#!/usr/bin/env bash
# Which --contend design slows the GEMMs? (issue 3: "the contended gpt-infer run's report puts
# GEMM kernels and their tensor-core utilisation first"). Records gpt-infer twice without a
# neighbour (normal, and an A/A twin) and under four neighbours: a second process (time-sliced)
# or a thread on its own stream (concurrent), each with a 50 ms and a 10 ms duty-cycle period.
# usage: scripts/gpu/contend_probe.sh DIR [CYCLES]
set -uo pipefail
D=${1:?DIR}; N=${2:-200}
mkdir -p "$D"
c() { echo "\$ perfdiff collect $*"; perfdiff collect "$@" -q || echo "FAILED rc=$?: $*"; }
c gpt-infer --cycles "$N" --warmup 5 -o "$D/normal.json.gz"
c gpt-infer --cycles "$N" --warmup 5 --contend 0.5 -o "$D/process-50.json.gz"
c gpt-infer --cycles "$N" --warmup 5 --contend 0.5 --contend-period-ms 10 -o "$D/process-10.json.gz"
c gpt-infer --cycles "$N" --warmup 5 --contend 0.5 --contend-mode stream -o "$D/stream-50.json.gz"
c gpt-infer --cycles "$N" --warmup 5 --contend 0.5 --contend-mode stream --contend-period-ms 10 \
  -o "$D/stream-10.json.gz"
c gpt-infer --cycles "$N" --warmup 5 -o "$D/normal-2.json.gz"
for v in process-50 process-10 stream-50 stream-10 normal-2; do
  echo "== compare normal vs $v"
  perfdiff compare "$D/normal.json.gz" "$D/$v.json.gz" --top 5 2>&1 | sed -n '/Verdict/p;/### Key Findings/,/Largest other/p' | head -40
done
ls -la "$D"
