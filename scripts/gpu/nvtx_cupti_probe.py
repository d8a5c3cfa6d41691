"""Does CUPTI itself record NVTX ranges as MARKER activity records? (see docs/howto)

Why a probe: gpu-notes recorded that a first try saw no MARKER records even with
NVTX_INJECTION64_PATH set; perfdiff captures NVTX in-process instead
(collect/cycles/nvtx_cycles.py).
This runs three children and prints, for each: which libcupti files are mapped, whether the
nvtx package's default domain is its no-op "dummy" domain, and how many MARKER records CUPTI
delivered. Variants: no injection variable; the variable naming the libcupti that
cupti-python loaded; and that, with MARKER enabled before the first NVTX call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, sys
from cupti import cupti
records = []
def requested():
    return 8 << 20, 0
def completed(activities):
    for a in activities:
        records.append(int(a.kind))
cupti.activity_register_callbacks(requested, completed)
enable_first = sys.argv[1] == "marker-first"
kinds = [cupti.ActivityKind.CONCURRENT_KERNEL]
marker = getattr(cupti.ActivityKind, "MARKER", None)
if marker is not None and enable_first:
    kinds.insert(0, marker)
for k in kinds:
    cupti.activity_enable(k)
import torch, nvtx
if marker is not None and not enable_first:
    cupti.activity_enable(marker)
x = torch.ones(1 << 20, device="cuda")
for i in range(3):
    nvtx.push_range("step")
    x = x * 1.5
    nvtx.pop_range()
    with torch.cuda.nvtx.range("tstep"):
        x = x + 1
torch.cuda.synchronize()
cupti.activity_flush_all(1)
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "cupti" in l or "nvToolsExt" in l
               or "libnvtx" in l.lower()})
try:
    from nvtx._lib import dummy_domain
    dummy = nvtx.get_domain(None) is dummy_domain
except Exception as exc:
    dummy = f"n/a ({exc})"
counts = {}
for k in records:
    counts[k] = counts.get(k, 0) + 1
print(json.dumps({"marker_kind": None if marker is None else int(marker),
                  "records_by_kind": counts, "maps": maps, "nvtx_dummy_domain": dummy,
                  "env": os.environ.get("NVTX_INJECTION64_PATH")}))
"""


def cupti_library() -> str | None:
    code = ("from cupti import cupti; cupti.get_timestamp(); "
            "print(next((l.split()[-1] for l in open('/proc/self/maps') if 'libcupti' in l), ''))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    return out.stdout.strip() or None


def main() -> None:
    lib = cupti_library()
    print("libcupti loaded by cupti-python:", lib)
    variants = [("none", "marker-after", None), ("injection", "marker-after", lib),
                ("injection", "marker-first", lib)]
    for name, order, path in variants:
        env = dict(os.environ)
        env.pop("NVTX_INJECTION64_PATH", None)
        if path:
            env["NVTX_INJECTION64_PATH"] = path
        proc = subprocess.run([sys.executable, "-c", CHILD, order], env=env, capture_output=True,
                              text=True, timeout=180, check=False)
        last = proc.stdout.strip().splitlines()[-1:] or [""]
        try:
            result = json.loads(last[0])
        except json.JSONDecodeError:
            result = {"rc": proc.returncode, "stderr": proc.stderr[-1500:]}
        print(json.dumps({"variant": name, "order": order, **result}))


if __name__ == "__main__":
    main()
