#!/usr/bin/env bash
# Which --contend design slows the GEMMs? (issue 3: "the contended gpt-infer run's report puts
# GEMM kernels and their tensor-core utilisation first"). Records gpt-infer without a neighbour
# (normal, and an A/A twin recorded last) and under each neighbour named, then prints the head of
# each report against the normal run (docs/explanation/contention.md).
# usage: scripts/gpu/contend_probe.sh DIR [CYCLES [VARIANT...]]
#   VARIANT: process-50 process-10 stream-50 stream-10 (a second process or a thread on its own
#   stream, busy half of a 50 or 10 ms period) or partition-25 partition-50 (a thread holding
#   25 or 50 % of the SMs all the time). Default: the first four.
set -uo pipefail
D=${1:?DIR}; N=${2:-200}
shift $(( $# < 2 ? $# : 2 ))
VARIANTS=("$@")
[ ${#VARIANTS[@]} -eq 0 ] && VARIANTS=(process-50 process-10 stream-50 stream-10)
mkdir -p "$D"
c() { echo "\$ perfdiff collect $*"; perfdiff collect "$@" -q || echo "FAILED rc=$?: $*"; }
options() {  # VARIANT -> its --contend options
  local mode=${1%-*} n=${1##*-}
  case $mode in
    process|stream) echo "--contend 0.5 --contend-mode $mode --contend-period-ms $n" ;;
    partition) echo "--contend 0.$n --contend-mode partition" ;;
    *) echo "unknown variant $1" >&2; return 1 ;;
  esac
}
c gpt-infer --cycles "$N" --warmup 5 -o "$D/normal.json.gz"
for v in "${VARIANTS[@]}"; do
  # shellcheck disable=SC2046  # the options are words on purpose
  c gpt-infer --cycles "$N" --warmup 5 $(options "$v") -o "$D/$v.json.gz"
done
c gpt-infer --cycles "$N" --warmup 5 -o "$D/normal-2.json.gz"
for v in "${VARIANTS[@]}" normal-2; do
  echo "== compare normal vs $v"
  perfdiff compare "$D/normal.json.gz" "$D/$v.json.gz" --top 5 2>&1 \
    | sed -n '/Verdict/p;/### Key Findings/,/Largest other/p' | head -40
done
ls -la "$D"
