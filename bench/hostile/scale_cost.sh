#!/usr/bin/env bash
# What issue 25's checks cost on the 2 x 1,000,000-launch compare (bench/scale_generate.py inputs).
# Three sides, alternating in every round so that all see the same load from other sessions
# (the timing loop is bench/scale_compare.sh's; this script adds the third side):
#   before    the code before issue 25 (d9186d7 by default), exported with `git archive`;
#   after     the code at AFTER (default HEAD);
#   unchecked AFTER's code with issue 25's physical-sense rules switched off in the benchmark's
#             own wrapper (stream overlap and duplicates, cycle overlap, one cycle per launch),
#             so that after - unchecked is their cost and before - unchecked is everything else
#             that changed between the two commits (other issues' analysis).
# Prints one markdown row per run (load, wall, CPU user+sys, peak RSS from /usr/bin/time -v).
# Usage: bench/hostile/scale_cost.sh [BEFORE] [AFTER] [ROUNDS] [OUT_DIR]   (PY=python to pick one)
set -euo pipefail
cd "$(dirname "$0")/../.."
UNCHECKED_CODE='import sys; import perfdiff.schema.sense as s
for name in ("check_stream_overlap", "check_cycle_overlap", "check_one_cycle_per_launch"):
    setattr(s, name, lambda *a, **k: None)
from perfdiff.cli.app import main; sys.argv[0] = "perfdiff"; main()'
export UNCHECKED_CODE
exec bench/scale_compare.sh "${1:-d9186d7}" "${2:-HEAD}" "${3:-3}" "${4:-/tmp/perfdiff-scale}"
