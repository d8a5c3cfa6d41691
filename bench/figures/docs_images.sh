#!/usr/bin/env bash
# Regenerate the figures and the HTML screenshot shown in docs/user-guide.md (docs/images/).
# Needs .venv with matplotlib (bash scripts/test.sh sets it up) and chromium for the screenshot.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/images
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
P=.venv/bin/perfdiff
$P compare fixtures/gpt-infer-normal.json.gz fixtures/gpt-infer-contended.json.gz \
  -o "$tmp/gpt-infer.md" --plots "$tmp/gpt-infer"
$P compare fixtures/ddp-normal.json.gz fixtures/ddp-contended-gpu1.json.gz \
  -o "$tmp/ddp.md" --plots "$tmp/ddp"
for name in what-changed cycles why; do cp "$tmp/gpt-infer/$name.png" "$out/gpt-infer-$name.png"; done
for name in what-changed where-it-ran cycles; do cp "$tmp/ddp/$name.png" "$out/ddp-$name.png"; done
cp "$tmp/gpt-infer/what-changed.svg" "$out/gpt-infer-what-changed.svg"
$P compare fixtures/gpt-infer-normal.json.gz fixtures/gpt-infer-contended.json.gz \
  --format html -o "$tmp/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --window-size=1280,1700 \
  --screenshot="$out/gpt-infer-report-html.png" "file://$tmp/report.html" 2>/dev/null
ls -la "$out"
