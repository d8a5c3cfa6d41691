"""How long one 256 KiB hand-over's decode takes on this host (issue 13): synthetic buffers
made of the real H100 records in fixtures/cupti_buffers/ (kernels only; a memcpy every 25
kernels, as HF GPT-2 generate; every 5), and the cost of the clock calls a hand-over makes.
Prints one JSON line."""

from __future__ import annotations

import json
import time

import numpy as np

from perfdiff.collect.cupti.decode import decode_buffer, layout_for, walk

LAYOUT = layout_for(130401)


def records() -> dict[int, list[np.ndarray]]:
    with np.load("fixtures/cupti_buffers/h100-cupti13.4-buffers.npz") as z:
        bufs = [z[k] for k in z.files]
    out: dict[int, list[np.ndarray]] = {}
    for b in bufs:
        for kind, off, cnt in walk(b, b.size, LAYOUT.sizes):
            size = LAYOUT.sizes[kind]
            out.setdefault(kind, []).extend(b[off + i * size:off + (i + 1) * size].copy()
                                            for i in range(cnt))
    return out


def make(recs: dict[int, list[np.ndarray]], every: int, nbytes: int = 256 * 1024) -> np.ndarray:
    parts, used, i = [], 0, 0
    while True:
        pool = recs[1] if i % every == every - 1 else recs[10]
        r = pool[i % len(pool)]
        if used + r.size > nbytes:
            return np.concatenate(parts)
        parts.append(r)
        used += r.size
        i += 1


def per_call_us(fn, n: int = 200) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return round((time.perf_counter() - t0) / n * 1e6, 2)


def main() -> None:
    recs = records()
    out: dict[str, float] = {}
    for every in (10**9, 25, 5):
        b = make(recs, every)
        out[f"decode_us_every_{every if every < 10**9 else 'none'}"] = per_call_us(
            lambda b=b: decode_buffer(b, b.size, LAYOUT))
    out["thread_time_ns_us"] = per_call_us(time.thread_time_ns, 10000)
    try:
        from cupti import cupti
        out["cupti_get_timestamp_us"] = per_call_us(cupti.get_timestamp, 10000)
    except ImportError:
        pass
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
