"""Why PM sampling is refused in user programs (issue 13): one variant per process.

Variants (argv[1]):
  pm_first      CUDA init, then PmSampler (no activity): the control
  act_after     CUDA init, activity (raw intake) on, then PmSampler: the in-process bench
  act_before    activity (raw intake) on BEFORE CUDA init, then CUDA init, then PmSampler:
                what the user-program child does (inject/child.py)
  objpath_before  as act_before with cupti-python's object callback instead of raw intake
  enable_before   cupti.activity_enable before CUDA init with no buffer callbacks at all
  profinit_before cupti.profiler_initialize, then as act_before
  disable_reenable as act_before; after CUDA init activity off, PmSampler, activity on again
  cuinit_cb       a CUPTI resource callback starts activity when cuInit has finished
  ctx_cb          a CUPTI resource callback starts activity when a context is created
  ctx_cb_pm_first that callback builds the PmSampler first, then starts activity
  subscribe_only  a CUPTI resource callback that does nothing; no activity at all
  cuinit_first    cuInit(0) through ctypes first, then as act_before
  lazy_hook       activity started from torch's lazy-init queue (torch.cuda._lazy_call), no
                  CUPTI call before torch initialises CUDA
  finalize_reinit as act_before; after CUDA init: activity stopped, cuptiFinalize, PmSampler
                  built, activity started again (a second backend)
Prints one JSON line: variant, ok, metrics, warnings or the error.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    variant = sys.argv[1]
    out: dict[str, object] = {"variant": variant}
    from perfdiff.collect.cupti.pm_sampling import DEFAULT_METRICS, PmSampler, PmSamplingUnavailable
    trace = None
    holder: dict[str, object] = {}
    if variant == "cuinit_first":
        import ctypes
        out["cuInit"] = ctypes.CDLL("libcuda.so.1").cuInit(0)
    if variant == "lazy_hook":
        import torch as _torch

        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

        def on_init() -> None:
            t = CuptiActivityBackend(trace_api=False, trace_memory=True)
            t.start()
            holder["trace"] = t
            holder["calls"] = [f"context {_torch.cuda.is_initialized()}"]

        _torch.cuda._lazy_call(on_init)
    if variant in ("act_before", "objpath_before", "disable_reenable", "finalize_reinit",
                   "cuinit_first"):
        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
        trace = CuptiActivityBackend(trace_api=False, trace_memory=True,
                                     raw_intake=variant == "act_before")
        trace.start()
    if variant == "enable_before":
        from cupti import cupti
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
    if variant == "profinit_before":
        from cupti import cupti
        params = cupti.ProfilerInitializeParams()
        params.struct_size = cupti.PROFILER_INITIALIZE_PARAMS_STRUCT_SIZE
        cupti.profiler_initialize(params.ptr)
        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
        trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
        trace.start()
    if variant in ("cuinit_cb", "ctx_cb", "ctx_cb_pm_first", "subscribe_only"):
        from cupti import cupti

        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

        def on_resource(*args: object) -> None:
            holder.setdefault("calls", []).append(str(args[2]))  # type: ignore[union-attr]
            if variant == "subscribe_only":
                return
            if variant == "ctx_cb_pm_first" and "pm" not in holder:
                try:
                    holder["pm"] = PmSampler(DEFAULT_METRICS, 20_000, 0,
                                             lambda: int(cupti.get_timestamp()))
                except Exception as exc:
                    holder["pm_error"] = f"{type(exc).__name__}: {exc}"
            if "trace" not in holder:
                t = CuptiActivityBackend(trace_api=False, trace_memory=True)
                t.start()
                holder["trace"] = t

        sub = cupti.subscribe(on_resource, None)
        cbid = (cupti.CallbackIdResource.CU_INIT_FINISHED if variant == "cuinit_cb"
                else cupti.CallbackIdResource.CONTEXT_CREATED)
        cupti.enable_callback(1, sub, cupti.CallbackDomain.RESOURCE, cbid)
        holder["sub"] = sub
    import torch
    x = torch.zeros(1, device="cuda")
    x.add_(1)
    torch.cuda.synchronize()
    if "trace" in holder:
        trace = holder["trace"]  # type: ignore[assignment]
        out["callback_calls"] = holder.get("calls")
    if variant == "disable_reenable" and trace is not None:
        trace.pause()
    first_kernels = None
    if variant == "finalize_reinit" and trace is not None:
        from cupti import cupti

        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
        first_kernels = int(trace.stop().as_columns().kernels.size)
        cupti.finalize()
        out["first_kernels"] = first_kernels
    if variant == "act_after":
        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
        trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
        trace.start()
    clock = (trace.clock_ns if trace is not None
             else (lambda: time.perf_counter_ns()))
    try:
        if "pm_error" in holder:
            raise RuntimeError(f"in the callback: {holder['pm_error']}")
        pm = holder.get("pm") or PmSampler(DEFAULT_METRICS, 20_000, 0, clock)
        if variant == "finalize_reinit":
            trace = CuptiActivityBackend(trace_api=False, trace_memory=True)
            trace.start()
        if variant == "disable_reenable" and trace is not None:
            trace.resume()
        pm.start()
        for _ in range(2000):
            x.add_(1)
        torch.cuda.synchronize()
        series = pm.stop()
        out.update(ok=True, metrics=list(pm.metrics), warnings=pm.warnings,
                   samples=[int(s.timestamps_ns.size) for s in series])
    except PmSamplingUnavailable as exc:
        out.update(ok=False, error=str(exc))
    except Exception as exc:
        out.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    if trace is not None:
        raw = trace.stop()
        out["kernels"] = int(raw.as_columns().kernels.size)
        out["trace_warnings"] = trace.warnings
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
