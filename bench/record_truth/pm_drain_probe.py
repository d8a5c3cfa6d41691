"""Where the PM drain's 16-24 us per sample go (issue 28 item 3): CUPTI's DecodeData, the image,
the per-sample metric evaluation, or our Python.

Why: at the 20 us default the drain of a long program falls behind (GPT-2 generate 51.6 / 71.4 %
coverage, ERROR_OUT_OF_MEMORY). Only DecodeData runs while the program runs (perfdiff's
PmSampler evaluates after the run); if evaluation were the slow part, moving it off the drain
would be the fix, if DecodeData is, it cannot be moved (it is the only way out of the hardware
buffer, which holds ~3 s at 20 us). This probe times each part apart, on fresh collectors
stopped before decoding (no samples arrive during the timed decode, so no chasing), with GPT-2
``generate`` (bench/record_truth/gpt2_generate.py's model, fp16, batch 1) looping on the GPU in a
thread of this process, as under ``perfdiff collect``. A ticker thread (1 ms sleeps) counts how
often it ran during each DecodeData: 0 ticks = the call held the interpreter.

Cases: capacity 1.05 x and 3 x the backlog (does the cost follow the image or the samples?),
tensor only, 2,000-sample chunks (fixed cost per call), 40 us, and one decode while sampling
runs (as the drain does). Prints one ``PMDRAIN {json}`` line per case.

Usage: python bench/record_truth/pm_drain_probe.py [--seconds 0.5] [--eval 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Ticker:
    """Counts 1 ms sleeps that got the interpreter back."""

    def __init__(self) -> None:
        self.ticks = 0
        self.max_gap_ns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.perf_counter_ns()
        while not self._stop.wait(0.001):
            now = time.perf_counter_ns()
            self.max_gap_ns = max(self.max_gap_ns, now - last)
            last = now
            self.ticks += 1

    def stop(self) -> None:
        self._stop.set()


def decode(cupti: Any, collector: Any, capacity: int) -> tuple[Any, int, int, int, bool]:
    """One DecodeData into a fresh image: (image, completed, reason, decode ns, overflow)."""
    image = collector._create_counter_data_image(capacity)
    params = cupti.PmSamplingDecodeDataParams()
    params.struct_size = cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE
    params.p_pm_sampling_object = collector._pm_sampling_object
    params.p_counter_data_image = image.ctypes.data
    params.counter_data_image_size = len(image)
    began = time.perf_counter_ns()
    cupti.pm_sampling_decode_data(params.ptr)
    taken = time.perf_counter_ns() - began
    info = cupti.PmSamplingGetCounterDataInfoParams()
    info.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE
    info.p_counter_data_image = image.ctypes.data
    info.counter_data_image_size = len(image)
    cupti.pm_sampling_get_counter_data_info(info.ptr)
    return (image, int(info.num_completed_samples), int(params.decode_stop_reason), taken,
            bool(params.overflow))


def case(name: str, cupti: Any, sampler: Any, metrics: tuple[str, ...],
         interval_ns: int, seconds: float, factor: float, chunk: int | None, live: bool,
         n_eval: int, ticker: Ticker) -> dict[str, Any]:
    from cupti import profiler_host

    sampler._interval_ns = interval_ns
    collector = sampler._configured(metrics)
    out: dict[str, Any] = {"case": name, "metrics": len(metrics), "interval_ns": interval_ns,
                           "seconds": seconds, "factor": factor, "chunk": chunk, "live": live}
    try:
        collector.start()
        time.sleep(seconds)
        if not live:
            collector.stop()
        backlog = int(seconds * 1e9 / interval_ns)
        full = int(cupti.PmSamplingDecodeStopReason.COUNTER_DATA_FULL)
        images: list[tuple[Any, int]] = []
        calls = []
        t_create = 0
        while True:
            cap = chunk if chunk else int(backlog * factor) + 2000
            c0 = time.perf_counter_ns()
            ticks0 = ticker.ticks
            ticker.max_gap_ns = 0
            image, done, reason, taken, overflow = decode(cupti, collector, cap)
            wall = time.perf_counter_ns() - c0
            t_create += wall - taken
            calls.append({"capacity": cap, "samples": done, "reason": reason,
                          "decode_ms": round(taken / 1e6, 2),
                          "us_per_sample": round(taken / 1e3 / max(1, done), 2),
                          "create_ms": round((wall - taken) / 1e6, 2),
                          "ticks": ticker.ticks - ticks0,
                          "max_tick_gap_ms": round(ticker.max_gap_ns / 1e6, 2),
                          "overflow": overflow})
            if done:
                images.append((image, done))
            if reason != full or len(calls) > 400:
                break
        if live:
            collector.stop()
        total = sum(n for _, n in images)
        dec = sum(c["decode_ms"] for c in calls)
        out.update({"calls": calls if len(calls) <= 6 else calls[:3] + calls[-2:],
                    "n_calls": len(calls), "samples": total, "backlog_est": backlog,
                    "decode_ms": round(dec, 1),
                    "decode_us_per_sample": round(1e3 * dec / max(1, total), 2),
                    "create_ms": round(t_create / 1e6, 1),
                    "image_bytes_per_sample": (len(images[0][0]) // max(1, calls[0]["capacity"])
                                               if images else None)})
        # per-sample sample-info (our Python + CUPTI) and evaluation, on the first image
        if images:
            image, count = images[0]
            k = min(count, n_eval)
            t0 = time.perf_counter_ns()
            for i in range(k):
                info = cupti.PmSamplingCounterDataGetSampleInfoParams()
                info.struct_size = cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
                info.p_pm_sampling_object = collector._pm_sampling_object
                info.p_counter_data_image = image.ctypes.data
                info.counter_data_image_size = len(image)
                info.sample_index = i
                cupti.pm_sampling_counter_data_get_sample_info(info.ptr)
            t1 = time.perf_counter_ns()
            host = profiler_host.ProfilerHost(collector._chip_name,
                                              profiler_host.ProfilerType.PM_SAMPLING)
            host.initialize()
            t2 = time.perf_counter_ns()
            for i in range(k):
                host.evaluate_metric_values(counter_data_image=image, metrics=list(metrics),
                                            index=i)
            t3 = time.perf_counter_ns()
            host.deinitialize()
            out.update({"evaluated": k, "sample_info_us": round((t1 - t0) / 1e3 / max(1, k), 2),
                        "evaluate_us": round((t3 - t2) / 1e3 / max(1, k), 2),
                        "host_init_ms": round((t2 - t1) / 1e6, 2)})
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        try:
            collector.disable()
        except Exception as exc:
            out["disable_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--eval", type=int, default=3000)
    a = ap.parse_args()
    import torch
    from cupti import cupti
    from transformers import AutoModelForCausalLM, GPT2Config

    from perfdiff.collect.cupti import pm_sampling as pm
    from perfdiff.collect.settings import DEFAULT_METRICS, TENSOR_METRIC

    torch.manual_seed(0)
    cfg = GPT2Config()
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    model = model.to(device="cuda", dtype=torch.float16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16), device="cuda")
    stop = threading.Event()
    steps = [0]

    def load() -> None:
        with torch.no_grad():
            while not stop.is_set():
                model.generate(prompt, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                               pad_token_id=0, attention_mask=torch.ones_like(prompt))
                torch.cuda.synchronize()
                steps[0] += 1

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    time.sleep(3.0)  # warm: cuBLAS handles, first generate
    sampler = pm.PmSampler(tuple(DEFAULT_METRICS), 20_000, 0, lambda: int(cupti.get_timestamp()))
    sampler._collector.disable()
    ticker = Ticker()
    both, tensor = tuple(sampler.metrics), (TENSOR_METRIC,)
    s = a.seconds
    plan = [("both_1.05x", both, 20_000, s, 1.05, None, False),
            ("both_3x", both, 20_000, s, 3.0, None, False),
            ("tensor_1.05x", tensor, 20_000, s, 1.05, None, False),
            ("both_chunk2000", both, 20_000, s, 1.0, 2000, False),
            ("both_40us", both, 40_000, s, 1.05, None, False),
            ("both_live_1.25x", both, 20_000, s, 1.25, None, True),
            ("both_1.05x_again", both, 20_000, s, 1.05, None, False)]
    for name, metrics, interval, secs, factor, chunk, live in plan:
        before = steps[0]
        row = case(name, cupti, sampler, metrics, interval, secs, factor, chunk, live,
                   a.eval, ticker)
        row["generate_steps_during"] = steps[0] - before
        print("PMDRAIN " + json.dumps(row), flush=True)
    ticker.stop()
    stop.set()
    worker.join(timeout=30)


if __name__ == "__main__":
    main()
