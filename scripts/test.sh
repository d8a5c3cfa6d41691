#!/usr/bin/env bash
# Set up a virtual environment (if needed) and run the whole test suite: lint, types, pytest.
# GPU tests (-m gpu) skip cleanly on machines without an NVIDIA GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
# torch (CPU build) only for the tests that drive built-in workloads on the CPU.
.venv/bin/python -c 'import torch' 2>/dev/null || .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
# Debian's chromium for the HTML report's browser test (tests/report/test_html_browser.py);
# where it cannot be installed (not root, no apt-get, offline) that test is skipped with its reason
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
    || echo "scripts/test.sh: could not install chromium; the browser test will be skipped"
fi
.venv/bin/ruff check .
.venv/bin/mypy perfdiff
.venv/bin/python -m pytest -q "$@"
