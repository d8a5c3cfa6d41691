"""Which JSON parser reads Kineto traces fastest and leanest (issue 15, step 2).

Each (parser, file) runs in a fresh child process, so its peak RSS (``ru_maxrss`` of the
child) is its own; the time is the parse alone (the gzip inflate is done before the clock
starts and is the same for all). What each parser does:
- ``json``, ``orjson``, ``msgspec-any``: the whole document into Python dicts/lists;
- ``ijson``: streams ``traceEvents`` and keeps the GPU and launch events only (yajl2_c backend);
- ``msgspec-typed``: msgspec with a typed struct per event (category, name, ids, ``ts``/``dur``
  as raw slices, the args perfdiff reads), every event decoded (perfdiff's first design);
- ``msgspec-raw``: perfdiff's first pass: ``traceEvents`` as raw slices of the file (no copy),
  each looked at for its category only, the GPU/launch/annotation events decoded as structs;
- ``perfdiff-reader``: the whole reader (decode, filter, columns, cycles) -> RunFile.

Usage: python bench/kineto/parse_bench.py [--repeat N] [FILE...]   (default: HTA's trace_diff
pair under ../shared/kineto). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = [ROOT.parent / "shared/kineto/hta/trace_diff/control/control.json.gz",
           ROOT.parent / "shared/kineto/hta/trace_diff/test/test.json.gz"]
PARSERS = ["json", "orjson", "msgspec-any", "ijson", "msgspec-typed", "msgspec-raw",
           "perfdiff-reader"]
# the module each parser needs: a parser whose module is not installed is listed as such (orjson
# and ijson are no perfdiff dependency and may be absent from the venv)
NEEDS = {"orjson": "orjson", "msgspec-any": "msgspec", "ijson": "ijson",
         "msgspec-typed": "msgspec", "msgspec-raw": "msgspec", "perfdiff-reader": "msgspec"}
KEEP = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "user_annotation"}


def child(parser: str, path: str) -> None:
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    start = time.perf_counter()
    if parser == "json":
        events = len(json.loads(data)["traceEvents"])
    elif parser == "orjson":
        import orjson

        events = len(orjson.loads(data)["traceEvents"])
    elif parser == "msgspec-any":
        import msgspec

        events = len(msgspec.json.decode(data)["traceEvents"])
    elif parser == "ijson":
        import io

        import ijson

        kept = [e for e in ijson.items(io.BytesIO(data), "traceEvents.item", use_float=True)
                if e.get("cat") in KEEP]
        events = len(kept)
    elif parser == "msgspec-typed":
        import msgspec

        from perfdiff.readers.torch_profiler import events as tp

        trace_type = msgspec.defstruct("Trace", [("traceEvents", list[tp.Event])], gc=False)
        events = len(msgspec.json.Decoder(trace_type).decode(data).traceEvents)
    elif parser == "msgspec-raw":
        from perfdiff.readers.torch_profiler import events as tp

        trace = tp.TRACE_DECODER.decode(data)
        kept = tp.sort_events(trace.traceEvents)
        events = sum(len(tp.decode_kept(raws, tp.EVENT_DECODER))
                     for raws in (*kept.gpu.values(), *kept.ranges.values()))
        events += len(tp.decode_kept(kept.launches, tp.LAUNCH_DECODER))
    else:
        from perfdiff.readers.torch_profiler import read_torch_profiler

        del data
        start = time.perf_counter()
        run_file = read_torch_profiler([path])
        events = int(run_file.runs[0].kernels.name_id.size)
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed, "events": events}))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    files = args.files or DEFAULT
    print(f"| parser | file | parse s (best of {args.repeat}) | peak RSS MiB | events |")
    print("|---|---|---:|---:|---:|")
    import importlib.util

    for name in PARSERS:
        if name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None:
            print(f"| {name} | (all) | not installed | | |")
            continue
        for path in files:
            best, peak, events = float("inf"), 0.0, 0
            for _ in range(args.repeat):
                proc = subprocess.run(
                    ["/usr/bin/time", "-f", "%M", sys.executable, __file__, "--child", name,
                     str(path)], check=True, capture_output=True, text=True)
                result = json.loads(proc.stdout)
                best = min(best, float(result["seconds"]))
                peak = max(peak, int(proc.stderr.strip().splitlines()[-1]) / 1024)
                events = int(result["events"])
            print(f"| {name} | {path.name} | {best:.3f} | {peak:.0f} | {events} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
