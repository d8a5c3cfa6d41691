"""Where the first finding sits on the first screen of the HTML report, for several pairs.

Why: issue 23 asks for the first finding on screen without scrolling at 1400x900;
tests/report/test_html_browser.py checks one pair (GPT-2 eager vs SDPA). This measures the
acceptance pairs (longer headlines: timm's 13 replaced kinds, few-cycle traces, DDP ranks) the
same way: headless Chromium, a probe script writing the first finding's box onto <body>.

Usage (repository root): python -m bench.families.first_screen
Needs Chromium (``chromium`` on PATH or PERFDIFF_CHROMIUM).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FIX = Path("fixtures")
PAIRS = {
    "timm run files": (FIX / "timm/timm-vit-bf16.json.gz", FIX / "timm/timm-vit-fp32.json.gz"),
    "gpt2 run files": (FIX / "gpt2/gpt2-generate-eager.json.gz",
                       FIX / "gpt2/gpt2-generate-sdpa.json.gz"),
    "timm torch.profiler": (FIX / "kineto/timm-vit-bf16.pt.trace.json.gz",
                            FIX / "kineto/timm-vit-fp32.pt.trace.json.gz"),
    "gpt2 torch.profiler": (FIX / "kineto/gpt2-generate-eager.pt.trace.json.gz",
                            FIX / "kineto/gpt2-generate-sdpa.pt.trace.json.gz"),
    "TraceLens falconsai H100/MI300X": (FIX / "kineto/tracelens/h100-falconsai-nsfw.json.gz",
                                        FIX / "kineto/tracelens/mi300-falconsai-nsfw.json.gz"),
    "DDP shards": (FIX / "ddp-shards/normal", FIX / "ddp-shards/slow-rank1"),
}
PROBE = """<script>
window.addEventListener('load', function () { setTimeout(function () {
  var b = document.body, f = document.getElementById('first-finding').getBoundingClientRect();
  b.setAttribute('data-first-top', String(Math.round(f.top)));
  b.setAttribute('data-first-bottom', String(Math.round(f.bottom)));
  b.setAttribute('data-view-height', String(window.innerHeight));
}, 100); });
</script>"""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--window-size=1400,900",
         "--virtual-time-budget=3000", "--dump-dom")


def main() -> None:
    browser = os.environ.get("PERFDIFF_CHROMIUM") or shutil.which("chromium")
    if not browser:
        sys.exit("no Chromium (apt-get install chromium, or set PERFDIFF_CHROMIUM)")
    with tempfile.TemporaryDirectory() as tmp:
        for label, (normal, abnormal) in PAIRS.items():
            page = Path(tmp) / "report.html"
            page.unlink(missing_ok=True)
            subprocess.run([str(Path(sys.executable).with_name("perfdiff")), "compare", str(normal),
                            str(abnormal), "--force", "--format", "html", "-o", str(page)],
                           check=True, capture_output=True)
            probed = Path(tmp) / "probed.html"
            probed.write_text(page.read_text(encoding="utf-8").replace("</body>",
                                                                       PROBE + "</body>"),
                              encoding="utf-8")
            dom = subprocess.run([browser, *FLAGS, f"--user-data-dir={tmp}/profile",
                                  probed.as_uri()], capture_output=True, text=True,
                                 timeout=120, check=False).stdout
            at = dict(re.findall(r'data-(first-top|first-bottom|view-height)="(-?\d+)"', dom))
            on = (0 < int(at.get("first-top", -1)) < int(at.get("first-bottom", 0))
                  <= int(at.get("view-height", 0)))
            print(f"{label}: first finding at {at.get('first-top')}-{at.get('first-bottom')} "
                  f"px of {at.get('view-height')}: {'on the first screen' if on else 'NOT'}")


if __name__ == "__main__":
    main()
