"""Issue 28 probe: what differs inside a process run bare and under ``perfdiff collect``.

Why: recorded timm bf16 processes stepped slower than bare ones even in their untraced cycles
(H200, 2026-11-28), with PM, NVML and the API kinds ruled out one by one between processes.
This module is put on PYTHONPATH (bare: alone; recorded: after perfdiff's boot folder, whose
sitecustomize chains to it) and prints one ``PROBE {json}`` line at exit with what could make
a step slower without tracing: garbage-collector passes (start on the perf_counter clock,
duration, generation), objects the collector tracks, the threads alive and how often each was
scheduled, CPU affinity, the environment variables that steer CUDA, OpenMP and Python, and the
process's own CPU time. A program's STEPTIMER ``ends`` (same clock) give the steady window.
Nothing here is imported by perfdiff; it only runs when a bench script puts it on the path.
"""

import atexit
import gc
import json
import os
import resource
import sys
import time

_EVENTS = []
_OPEN = {}


def _gc_callback(phase, info):
    if phase == "start":
        _OPEN["t"] = time.perf_counter()
    elif "t" in _OPEN:
        t = _OPEN.pop("t")
        _EVENTS.append((round(t, 6), round((time.perf_counter() - t) * 1e6, 1),
                        info.get("generation", -1), info.get("collected", 0)))


def _threads():
    out = []
    base = "/proc/self/task"
    try:
        tids = sorted(os.listdir(base), key=int)
    except OSError:
        return out
    for tid in tids:
        row = {"tid": int(tid)}
        try:
            with open(f"{base}/{tid}/comm") as fh:
                row["comm"] = fh.read().strip()
            with open(f"{base}/{tid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            row["utime"], row["stime"] = int(fields[11]), int(fields[12])
            with open(f"{base}/{tid}/status") as fh:
                for line in fh:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt",
                                        "Cpus_allowed_list")):
                        key, value = line.split(":", 1)
                        row[key] = value.strip()
        except (OSError, IndexError, ValueError):
            pass
        out.append(row)
    return out


def _report():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    keep = ("CUDA", "OMP", "MKL", "PYTHON", "TORCH", "NCCL", "LD_", "CUPTI", "NVIDIA", "OPENBLAS",
            "KMP", "MALLOC", "GOMP")
    env = {k: (v if not k.startswith("PERFDIFF") else "<set>")
           for k, v in sorted(os.environ.items()) if k.startswith((*keep, "PERFDIFF"))}
    try:
        tracked = len(gc.get_objects())
    except Exception:
        tracked = -1
    import threading
    print("PROBE " + json.dumps({
        "pid": os.getpid(), "affinity": len(os.sched_getaffinity(0)),
        "gc_events": _EVENTS, "gc_tracked_at_exit": tracked, "gc_threshold": gc.get_threshold(),
        "gc_freeze_count": gc.get_freeze_count(),
        "py_threads": [t.name for t in threading.enumerate()],
        "threads": _threads(), "switch_interval": sys.getswitchinterval(),
        "modules": len(sys.modules), "meta_path": [type(f).__name__ for f in sys.meta_path],
        "ru_utime": usage.ru_utime, "ru_stime": usage.ru_stime, "ru_nvcsw": usage.ru_nvcsw,
        "ru_nivcsw": usage.ru_nivcsw, "maxrss_kb": usage.ru_maxrss, "env": env,
        "profile": sys.getprofile() is not None, "trace": sys.gettrace() is not None,
    }), flush=True)


if os.environ.get("PERFDIFF_INJECT_OWNER", str(os.getpid())) == str(os.getpid()):
    gc.callbacks.append(_gc_callback)
    atexit.register(_report)


def _chain():
    """Run the sitecustomize this one shadows (not perfdiff's boot one), as the boot one does."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here
            and not os.path.abspath(p or ".").endswith(os.path.join("inject", "boot"))]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _chain()
except Exception as exc:  # a probe never stops the program
    print(f"probe_site: shadowed sitecustomize failed ({exc})", file=sys.stderr)
