#!/usr/bin/env bash
# Set up a virtual environment (if needed) and run the main job on recorded inputs (no GPU):
# compare two run files recorded on an H100 and print the markdown report.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e . 2>&1 | grep -v '^WARNING: Location' || true
exec .venv/bin/perfdiff compare fixtures/gpt-infer-normal.json.gz fixtures/gpt-infer-contended.json.gz "$@"
