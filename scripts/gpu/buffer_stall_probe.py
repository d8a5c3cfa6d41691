"""Does CUPTI's activity-buffer processing stall the traced program? (GPU only)

Why: in the in-situ cross-check the cuSOLVER eigh [4] n = 512 case (4,623 kernels per call)
had cycles where perfdiff's window was 14-47 ms longer than the CUDA events around the same
call, i.e. the host stalled between the GPU lead and the call's start event for longer than
the lead. A suspect: the collector's buffer-completed callback, which turns a full 32 MiB
activity buffer into Python records while holding the GIL. This runs the in-situ check on
the largest linalg cases with a chosen buffer size and logs every buffer completion (its
start and end on the trace's clock, the records in it, and whether it ran on the main
thread), so that the stalls can be put beside the cycles of the saved run file.

usage: python scripts/gpu/buffer_stall_probe.py BUFFER_MB OUT_PREFIX [CYCLES] [--no-drain]
(--no-drain: the collector's drain between cycles switched off, as before it existed)
writes OUT_PREFIX.json (in-situ rows), OUT_PREFIX.json.gz (run file), OUT_PREFIX.buffers.json
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path
from typing import Any


def main() -> int:
    from perfdiff.collect.cupti import cupti_activity as ca

    buffer_mb, prefix = int(sys.argv[1]), sys.argv[2]
    cycles = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3].isdigit() else "30"
    ca.BUFFER_BYTES = buffer_mb << 20  # read at each buffer request
    if "--no-drain" in sys.argv:
        from perfdiff.collect import session

        session.DRAIN_EVERY_S = float("inf")
    main_thread = threading.get_ident()
    log: list[list[Any]] = []
    original = ca.CuptiActivityBackend._buffer_completed

    def timed(self: Any, activities: list[Any]) -> None:
        t0 = self.clock_ns()
        original(self, activities)
        log.append([t0, self.clock_ns(), len(activities), threading.get_ident() == main_thread])

    ca.CuptiActivityBackend._buffer_completed = timed  # type: ignore[method-assign]
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_crosscheck.py"
    spec = importlib.util.spec_from_file_location("bench_crosscheck", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rc = int(module.main([
        "--in-situ", "linalg", "-p", "backend=cusolver", "-p", "cpu=false", "-p", "batches=[4]",
        "-p", "sizes=512,1024", "--cycles", cycles, "--warmup", "1",
        "--json", f"{prefix}.json", "--save-run", f"{prefix}.json.gz"]))
    Path(f"{prefix}.buffers.json").write_text(json.dumps({"buffer_mb": buffer_mb, "log": log}))
    from perfdiff.schema.io import load_run_file

    for warning in load_run_file(f"{prefix}.json.gz").collection.warnings:
        print("run file warning:", warning)
    print("buffer completions (ms, records, on main thread):",
          [(round((b - a) / 1e6, 1), n, m) for a, b, n, m in log])
    return rc


if __name__ == "__main__":
    sys.exit(main())
