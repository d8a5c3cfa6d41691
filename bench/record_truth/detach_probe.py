"""Issue 28: what an *untraced* cycle still costs a host-bound program, CUPTI state by state,
in ONE process, and whether detaching CUPTI (``cuptiFinalize``) between traced stretches
would give it back.

Why: on the lent H200 (2026-11-28 20:05 UTC) the host-bound ResNet-50 AMP loop of
``cnn_train.py`` stepped 31.9-32.1 ms bare and 34.3-37.7 ms in perfdiff's *untraced* cycles
(+7-18 %), fp32 +0-5 %, so `perfdiff compare` AMP -> fp32 read -4 to -7 % where the bare
programs changed +3.5 %; the CUDA-graph MLP's untraced replays were +4-16 % over bare with
PM on or off, but +2-3 % with perfdiff's Python side alone (fake backend). Across processes
those few percent drown in the host's drift, so the states are switched inside one process,
in blocks of ``--block`` steps, rounds in turn:

- ``bare``: before CUPTI is touched (the first blocks), and ``detached`` after each
  ``cuptiFinalize``;
- ``traced``: perfdiff's backend as a found-cycle user program has it once its marks took
  over (kernel, memcpy, memset kinds; no API kinds), spooled;
- ``off``: its untraced state (``pause()``: those kinds off, CUPTI attached);
- ``off_pm``: the same with PM sampling running (40 us, the user-program default);
- ``detached``: ``stop()``, then ``cupti.finalize()``; the next ``traced`` block starts a new
  backend (CUPTI attaches again), and both switches are timed.

``--scenario pm`` asks what detaching does to PM sampling (issue 28: untraced runs with CUPTI
detached need PM sampling that survives ``cuptiFinalize``, or one sampler per traced stretch):
one PM sampler started before CUPTI's activity API is touched runs on through rounds of
``traced`` / ``off`` / ``detached`` blocks (``stop()`` + ``finalize`` before each detached
block, a new backend after it), then is stopped; its samples are counted per block. Then a
second sampler is opened after a finalize, for one traced block, to time a per-stretch
sampler's open, start and stop. Also asked: whether CUPTI's correlation ids start again after
a finalize (each backend's kernel ids, ``corr``), and whether reading CUPTI's clock while
detached attaches it again (``detached_clock``: a detached block that reads it every step).

``--finalize exit-site`` calls ``cuptiFinalize`` the way CUPTI's dynamic-detach notes and Kineto
(pytorch/kineto#686, "Safely teardown CUPTI": a direct call raced other threads' CUPTI calls
and crashed in ``cuptiActivityFlushAll``) do it: from a runtime-API callback at its exit site,
on the thread making the call, here the ``cudaDeviceSynchronize`` of ``torch.cuda.synchronize``.
Asked: whether that works from Python (cupti-python's ``subscribe``), what it costs beside
``direct``, and whether a PM sampler's drain thread (``--scenario pm``) survives either.

``--scenario names`` asks what a finalize does to the kernel names still to be read: the raw
intake keeps each kernel's name as the address of CUPTI's string and reads it at stop
(``raw_intake.resolve_names``), so a detached run would read, after ``cuptiFinalize``,
addresses CUPTI may have freed. One traced block is decoded without names, its names read
before and after a finalize and compared (a ``NAMES {json}`` line is printed before the read
after, so a crash there still leaves the first answer and the exit status says the rest);
then a second attach's name addresses are set against the first's, and its stream ids (the
kernels', and CUPTI's id of the program's stream: the boundary marks find their own records
by it) against the first attach's.

One ``DETACHPROBE {json}`` line at the end. Usage: python bench/record_truth/detach_probe.py
[--block 10] [--rounds 3] [--warm 10] [--precision amp|fp32] [--scenario states|pm|names]
[--finalize direct|exit-site]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warm", type=int, default=10)
    p.add_argument("--precision", choices=("amp", "fp32"), default="amp")
    p.add_argument("--scenario", choices=("states", "pm", "names"), default="states")
    p.add_argument("--finalize", choices=("direct", "exit-site"), default="direct")
    a = p.parse_args()
    import torch
    from cnn_train import make_step
    from cupti import cupti

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cupti.pm_sampling import PmSampler
    from perfdiff.collect.settings import DEFAULT_METRICS

    step = make_step(a.precision)  # cnn_train.py's own step
    finalize = (cupti.finalize if a.finalize == "direct"
                else lambda: finalize_at_exit_site(cupti, torch.cuda.synchronize))

    rows: dict[str, list[float]] = {}
    order: list[str] = []
    switches: dict[str, list[float]] = {}

    windows: list[tuple[str, int, int]] = []  # (block, first, last perf_counter_ns)

    def block(name: str, also: Any = None) -> None:
        """``also``: called after each step, inside its time (``--scenario pm``)."""
        step()  # the first step after a switch pays the switch: not counted
        torch.cuda.synchronize()
        windows.append((name, time.perf_counter_ns(), 0))
        times = []
        for _ in range(a.block):
            t0 = time.perf_counter()
            step()
            if also is not None:
                also()
            times.append(1e3 * (time.perf_counter() - t0))
        torch.cuda.synchronize()
        windows[-1] = (name, windows[-1][1], time.perf_counter_ns())
        rows.setdefault(name, []).extend(times)
        order.append(f"{name}:{statistics.median(times):.2f}")
        print(f"block {name} median {statistics.median(times):.2f} ms", flush=True)

    def timed(name: str, action: Any) -> Any:
        t0 = time.perf_counter()
        out = action()
        switches.setdefault(name, []).append(round(1e3 * (time.perf_counter() - t0), 3))
        return out

    spool = tempfile.mkdtemp(prefix="detachprobe-")

    def new_backend() -> CuptiActivityBackend:
        backend = CuptiActivityBackend(trace_memory=True, trace_api=False, spool_dir=spool)
        backend.start()
        return backend

    for _ in range(a.warm):
        step()
    torch.cuda.synchronize()
    block("bare")
    block("bare")
    errors: list[str] = []
    kernels = 0
    extra: dict[str, Any] = {}
    if a.scenario == "pm":
        extra = pm_scenario(a.rounds, block, timed, new_backend, windows, errors, finalize)
    if a.scenario == "names":
        extra = names_scenario(block, timed, new_backend, finalize,
                               lambda: stream_id(cupti, torch.cuda.current_stream().cuda_stream))
    for r in range(a.rounds if a.scenario == "states" else 0):
        try:
            backend = timed("attach", new_backend)
            block("traced")
            timed("pause", backend.pause)
            block("off")
            pm = PmSampler(DEFAULT_METRICS, 40_000, 0, backend.clock_ns)
            pm.start()
            block("off_pm")
            pm.stop()
            timed("resume", backend.resume)
            block("traced")
            raw = timed("stop", backend.stop)
            kernels += (int(raw.columns.kernels.size) if raw.columns is not None
                        else len(raw.kernels))
            timed("finalize", finalize)
            block("detached")
        except Exception as exc:
            errors.append(f"round {r}: {type(exc).__name__}: {exc}")
            print("ERROR", errors[-1], flush=True)
            break
    summary = {name: {"median_ms": round(statistics.median(v), 3), "n": len(v)}
               for name, v in rows.items()}
    print("DETACHPROBE " + json.dumps({
        "precision": a.precision, "summary": summary, "order": order, "errors": errors,
        "switch_ms": switches, "kernels": kernels, "scenario": a.scenario,
        "finalize": a.finalize, **extra,
        "steps": {k: [round(x, 3) for x in v] for k, v in rows.items()}}), flush=True)


def finalize_at_exit_site(cupti: Any, call: Any) -> None:
    """``cuptiFinalize`` from the exit site of the runtime API call ``call()`` makes (module
    docstring); raises what the callback met, or if it never ran."""
    met: list[BaseException | None] = []

    def on_api(_userdata: Any, _domain: Any, _cbid: Any, cbdata: Any) -> None:
        if met or cbdata.callback_site != cupti.ApiCallbackSite.API_EXIT:
            return
        try:
            cupti.finalize()
            met.append(None)
        except BaseException as exc:  # carried to the caller: a callback cannot raise
            met.append(exc)

    subscriber = cupti.subscribe(on_api, None)
    try:
        cupti.enable_domain(1, subscriber, cupti.CallbackDomain.RUNTIME_API)
        call()
    finally:
        if not met or met[0] is not None:  # finalize unsubscribes; otherwise do it here
            with contextlib.suppress(Exception):
                cupti.unsubscribe(subscriber)
    if not met:
        raise RuntimeError("no runtime API call reached its exit site")
    if met[0] is not None:
        raise met[0]


def stream_id(cupti: Any, handle: int) -> int | str:
    try:
        return int(cupti.get_stream_id_ex(0, int(handle), 0))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def names_scenario(block: Any, timed: Any, new_backend: Any, finalize: Any,
                   program_stream: Any) -> dict[str, Any]:
    """``--scenario names`` (module docstring): are CUPTI's name strings readable after a
    finalize, and does a new attach reuse their addresses?"""
    from perfdiff.collect.cupti.raw_intake import resolve_names

    streams: list[dict[str, Any]] = []

    def keys_of(backend: Any) -> np.ndarray[Any, Any]:
        intake = backend.intake
        timed("pause", backend.pause)
        timed("decode", lambda: (intake.decode_spool(), intake.decode_pending()))
        parts = [chunk.kernels["name_key"] for chunk in intake.chunks]
        kernel_streams = sorted({int(x) for chunk in intake.chunks
                                 for x in np.unique(chunk.kernels["stream"]).tolist()})
        streams.append({"program_stream": program_stream(), "kernel_streams": kernel_streams})
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    first = new_backend()
    block("traced")
    keys = keys_of(first)
    before = resolve_names(keys, {})
    out: dict[str, Any] = {"keys": int(keys.size),
                           "names_sample": sorted(set(before.values()))[:5]}
    timed("finalize", finalize)
    print("NAMES " + json.dumps(out), flush=True)  # a crash below leaves this answer
    after = resolve_names(keys, {})
    out["changed_after_finalize"] = sum(before[k] != after[k] for k in before)
    out["changed_sample"] = [[before[k][:60], after[k][:60]] for k in before
                             if before[k] != after[k]][:5]
    second = new_backend()
    block("traced")
    keys2 = keys_of(second)
    again = resolve_names(keys2, {})
    by_name = {name: key for key, name in before.items()}
    out["second_keys"] = int(keys2.size)
    out["second_same_address"] = sum(by_name.get(name) == key for key, name in again.items())
    out["second_names_new"] = sum(name not in by_name for name in again.values())
    out["streams_per_attach"] = streams
    timed("stop", second.stop)
    timed("finalize", finalize)
    block("detached")
    return out


def pm_scenario(rounds: int, block: Any, timed: Any, new_backend: Any,
                windows: list[tuple[str, int, int]], errors: list[str],
                finalize: Any) -> dict[str, Any]:
    """``--scenario pm`` (module docstring): what PM sampling does across ``cuptiFinalize``."""
    from cupti import cupti

    from perfdiff.collect.cupti.pm_sampling import PmSampler
    from perfdiff.collect.settings import DEFAULT_METRICS

    def cupti_clock() -> int:
        return int(cupti.get_timestamp())

    out: dict[str, Any] = {"corr": []}

    def corr(raw: Any) -> None:
        """The kernel correlation ids of one backend: first, last, count."""
        cols = getattr(raw, "columns", None)
        ids = cols.kernels["correlation_id"] if cols is not None and cols.kernels.size else []
        if len(ids):
            out["corr"].append([int(np.min(ids)), int(np.max(ids)), len(ids)])

    offsets: list[int] = []  # CUPTI clock minus perf_counter_ns, taken while attached

    def pair() -> None:
        offsets.append(cupti_clock() - time.perf_counter_ns())

    def step_of(name: str, action: Any) -> Any:
        try:
            return timed(name, action)
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            print("ERROR", errors[-1], flush=True)
            return None

    pm = step_of("pm_open", lambda: PmSampler(DEFAULT_METRICS, 40_000, 0, cupti_clock))
    pair()
    if pm is not None:
        step_of("pm_start", pm.start)
    block("pm_only")
    for _ in range(rounds):
        backend = step_of("attach", new_backend)
        pair()
        block("traced")
        step_of("pause", backend.pause)
        block("off")
        corr(step_of("stop", backend.stop))
        step_of("finalize", finalize)
        block("detached")
        block("detached_clock", cupti_clock)
    backend = step_of("attach", new_backend)
    pair()
    series = step_of("pm_stop", pm.stop) if pm is not None else None
    out["pm_warnings"] = list(pm.warnings) if pm is not None else []
    out["offset_spread_us"] = (max(offsets) - min(offsets)) / 1e3 if offsets else None
    if series:
        ends = np.asarray(series[0].timestamps_ns, dtype=np.int64) - offsets[0]
        out["pm_samples"] = int(ends.size)
        out["pm_per_block"] = [
            {"block": name, "ms": round((t1 - t0) / 1e6, 1),
             "samples": int(((ends >= t0) & (ends <= t1)).sum()),
             "expected": int((t1 - t0) / 40_000)}
            for name, t0, t1 in windows if t1]
    # one sampler per traced stretch: opened after a finalize, for one traced block
    corr(step_of("stop", backend.stop))
    step_of("finalize", finalize)
    block("detached")
    pm2 = step_of("pm_open_after_finalize",
                  lambda: PmSampler(DEFAULT_METRICS, 40_000, 0, cupti_clock))
    if pm2 is not None:
        step_of("pm_start_after_finalize", pm2.start)
    backend = step_of("attach", new_backend)
    block("traced_own_pm")
    if pm2 is not None:
        series2 = step_of("pm_stop_after_finalize", pm2.stop)
        out["pm2_samples"] = int(series2[0].timestamps_ns.size) if series2 else None
        out["pm2_warnings"] = list(pm2.warnings)
    step_of("stop", backend.stop)
    step_of("finalize", finalize)
    block("detached")
    return out


if __name__ == "__main__":
    main()
