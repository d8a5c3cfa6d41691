#!/usr/bin/env bash
# Measure perfdiff's statistics (issue 6): the full simulation grid, then the real A/A
# recordings if fixtures/aa/ holds them. Results: bench/validate-results.md (and stdout).
# Usage: bench/validate.sh [TRIALS_PER_CELL] [WORKERS]   (defaults: 100, all CPUs)
# Takes about 25-30 min on 2 CPUs with 100 trials per cell; see docs/explanation/validation.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
TRIALS=${1:-100}
WORKERS=${2:-$(nproc)}
ARGS=(--trials "$TRIALS" --workers "$WORKERS" -o bench/validate-results.md)
if compgen -G "fixtures/aa/gpt-infer-aa-*.json.gz" > /dev/null; then
  ARGS+=(--real-aa fixtures/aa)
fi
"$PY" -m bench.validate "${ARGS[@]}"
