"""Where a CUDA event recorded at a host-bound call's return lands on CUPTI's timeline (GPU only).

Why: the in-situ cross-check (bench/crosscheck/README.md, "In-situ results on the H100") found
that the order of {end event record, return stamp} at a host-bound call's return moved the
events' time against perfdiff's by 20-130 us, more than the 11 us an event record costs the
host. CUPTI can report each event record's *device* timestamp on its own timeline
(``CUPTI_ACTIVITY_KIND_CUDA_EVENT`` with ``cuptiActivityEnableCudaEventDeviceTimestamps``), so
the event, the return stamps, the lead's spin kernel and the call's own GPU work can be put on
one clock and the question answered by measurement instead of by inference.

Per cycle, as the linalg workload runs one: L2 flush and spin (the lead), start mark, start
event, the call, then one of the return variants below, the end mark, synchronize. The
variants rotate cycle by cycle, so that they share the GPU's and the host's state:

- ``event,stamp``: end event record, then the return stamp (the in-situ order since run 3);
- ``stamp,event``: the return stamp, then the end event (the order of runs 4 and 5);
- ``stamp,event,stamp``: both, for the event's host cost and where it lands between them;
- ``stamp,kernel,stamp``: a one-element kernel instead of the event (launch latency).

Everything is written raw, one row per cycle (``--json``), and summarised per case and
variant on stdout; no analysis needs the GPU again.

usage: python scripts/gpu/event_timeline_probe.py [--cycles N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

VARIANTS = ("event,stamp", "stamp,event", "stamp,event,stamp", "stamp,kernel,stamp")
CASES = ((2, 2), (4, 4), (1, 64), (1, 512))  # (batch, n) of float32 eigh


class Timeline:
    """CUPTI activity records of one run: kernels, memcpy, memset and CUDA event records."""

    def __init__(self, cupti: Any) -> None:
        self.cupti = cupti
        self.kernels: list[tuple[str, int, int, int]] = []  # name, stream, start, end
        self.copies: list[tuple[str, int, int, int]] = []  # kind, stream, start, end
        self.events: list[tuple[int, int, int, int]] = []  # event id, stream, corr, device ts
        self.other: dict[str, int] = {}

    def requested(self) -> tuple[int, int]:
        return 32 * 1024 * 1024, 0

    def completed(self, activities: list[Any]) -> None:
        kinds = self.cupti.ActivityKind
        for a in activities:
            kind = int(a.kind)
            if kind == int(kinds.CONCURRENT_KERNEL):
                self.kernels.append((str(a.name), int(a.stream_id), int(a.start), int(a.end)))
            elif kind in (int(kinds.MEMCPY), int(kinds.MEMSET)):
                label = "memcpy" if kind == int(kinds.MEMCPY) else "memset"
                self.copies.append((label, int(a.stream_id), int(a.start), int(a.end)))
            elif kind == int(kinds.CUDA_EVENT):
                self.events.append((int(a.event_id), int(a.stream_id),
                                    int(a.correlation_id), int(a.device_timestamp)))
            else:
                self.other[str(kind)] = self.other.get(str(kind), 0) + 1


TRACE_MODES = ("events", "collector", "kernels", "none")


def start_tracing(cupti: Any, timeline: Timeline, mode: str) -> list[Any]:
    """``events``: the collector's kinds plus CUDA event records with device timestamps;
    ``collector``: what ``perfdiff collect --no-pm`` enables (kernel, memcpy, memset);
    ``kernels``: kernel records only; ``none``: no CUPTI at all (stamps on perf_counter)."""
    if mode == "none":
        return []
    cupti.activity_register_callbacks(timeline.requested, timeline.completed)
    kinds = [cupti.ActivityKind.CONCURRENT_KERNEL]
    if mode in ("events", "collector"):
        kinds += [cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET]
    if mode == "events":
        kinds.append(cupti.ActivityKind.CUDA_EVENT)
    for kind in kinds:
        cupti.activity_enable(kind)
    if mode == "events":
        cupti.activity_enable_cuda_event_device_timestamps(1)
    return kinds


class _UntracedMarker:
    """The boundary mark's fill without asking CUPTI for stream ids (``--trace none``)."""

    stream_ids: tuple[int, ...] = ()

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._stream = torch.cuda.Stream()
        self._flag = torch.zeros(1, dtype=torch.uint8, device="cuda")

    def mark(self) -> None:
        with self._torch.cuda.stream(self._stream):
            self._flag.fill_(1)


def run_cycles(torch: Any, cupti: Any, cycles: int, traced: bool) -> list[dict[str, Any]]:
    from perfdiff.collect.cycles.boundary_marks import TorchBoundaryMarker
    from perfdiff.collect.kernels.lead import GpuLead

    torch.backends.cuda.preferred_linalg_library("cusolver")
    lead = GpuLead(torch, "cuda", 1000)
    marker = TorchBoundaryMarker(torch, 0) if traced else _UntracedMarker(torch)
    one = torch.zeros(1, device="cuda")
    stamp = cupti.get_timestamp if traced else time.perf_counter_ns
    rows: list[dict[str, Any]] = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    for batch, n in CASES:
        a = torch.randn(batch, n, n, device="cuda", generator=gen)
        a = a + a.transpose(-1, -2)
        for i in range(4 + cycles * len(VARIANTS)):
            variant = VARIANTS[i % len(VARIANTS)]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            row: dict[str, Any] = {"case": f"[{batch}] n={n}", "variant": variant,
                                   "warmup": i < 4}
            row["c0"] = stamp()
            lead()
            marker.mark()
            start.record()
            torch.linalg.eigh(a)
            if variant == "event,stamp":
                end.record()
                row["s1"] = stamp()
            elif variant == "stamp,event":
                row["s0"] = stamp()
                end.record()
            elif variant == "stamp,event,stamp":
                row["s0"] = stamp()
                end.record()
                row["s1"] = stamp()
            else:
                row["s0"] = stamp()
                one.add_(1)
                row["s1"] = stamp()
                end.record()
            marker.mark()
            torch.cuda.synchronize()
            row["elapsed_ns"] = round(start.elapsed_time(end) * 1e6)
            row["start_event"] = event_id(cupti, start) if traced else None
            row["end_event"] = event_id(cupti, end) if traced else None
            row["mark_streams"] = list(marker.stream_ids) if traced else []
            rows.append(row)
    lead.release()
    return rows


def event_id(cupti: Any, event: Any) -> int | None:
    try:
        return int(cupti.get_cuda_event_id(int(event.cuda_event)))
    except Exception:  # matched by order instead (place())
        return None


def place(rows: list[dict[str, Any]], tl: Timeline) -> None:
    """Put each cycle's GPU facts beside its stamps (all on CUPTI's clock)."""
    by_event: dict[int, list[int]] = {}
    ordered = sorted(tl.events, key=lambda e: e[2])
    for eid, _stream, _corr, ts in ordered:
        by_event.setdefault(eid, []).append(ts)
    if any(r["start_event"] is None for r in rows) and len(ordered) == 2 * len(rows):
        # no event ids: two records per cycle (start, end), in correlation order
        for k, row in enumerate(rows):
            row["start_event"], row["end_event"] = -2 * k - 1, -2 * k - 2
            by_event[-2 * k - 1] = [ordered[2 * k][3]]
            by_event[-2 * k - 2] = [ordered[2 * k + 1][3]]
    kernels = sorted(tl.kernels, key=lambda k: k[2])
    copies = sorted(tl.copies, key=lambda c: c[2])
    starts = [r["c0"] for r in rows] + [2**63]
    for k, row in enumerate(rows):
        lo, hi = starts[k], starts[k + 1]
        marks = set(row["mark_streams"])
        spins = [x for x in kernels if lo <= x[2] < hi and "spin" in x[0].lower()]
        if not spins:
            row["error"] = "no spin kernel"
            continue
        spin_end = spins[0][3]
        row["spin_end"] = spin_end
        mine = [(x[0], x[1], x[2], x[3]) for x in kernels + copies
                if spin_end <= x[2] < hi and x[1] not in marks]
        tail_kernel = [x for x in mine if "add" in x[0].lower() or "elementwise" in x[0].lower()]
        if row["variant"] == "stamp,kernel,stamp" and tail_kernel:
            row["probe_kernel_start"] = tail_kernel[-1][2]
            mine = [x for x in mine if x is not tail_kernel[-1]]
        row["call_first"] = min(x[2] for x in mine) if mine else None
        row["call_last_end"] = max(x[3] for x in mine) if mine else None
        row["call_activities"] = len(mine)
        mark_starts = [x[2] for x in kernels + copies if lo <= x[2] < hi and x[1] in marks]
        row["mark_gpu"] = mark_starts
        for key in ("start_event", "end_event"):
            ts = by_event.get(row[key], [])
            row[key + "_ts"] = ts[-1] if ts else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    measured = [r for r in rows if not r["warmup"] and "error" not in r]
    for case in dict.fromkeys(r["case"] for r in measured):
        for variant in VARIANTS:
            sel = [r for r in measured if r["case"] == case and r["variant"] == variant]
            stats: dict[str, list[float]] = {}

            def add(name: str, value: float | None, into: dict[str, list[float]] = stats) -> None:
                if value is not None:
                    into.setdefault(name, []).append(value / 1e3)

            for r in sel:
                s_end, e_start = r.get("end_event_ts"), r.get("start_event_ts")
                spin_end, last_end = r.get("spin_end"), r.get("call_last_end")
                add("events_elapsed", r["elapsed_ns"])
                if s_end and e_start:
                    add("elapsed_minus_ts_diff", r["elapsed_ns"] - (s_end - e_start))
                    if spin_end is not None:
                        add("start_event_minus_spin_end", e_start - spin_end)
                    if last_end is not None:
                        add("end_event_minus_call_last_end", s_end - last_end)
                    if "s0" in r:
                        add("end_event_minus_s0", s_end - r["s0"])
                    if "s1" in r:
                        add("s1_minus_end_event", r["s1"] - s_end)
                if "s0" in r and "s1" in r:
                    add("s1_minus_s0", r["s1"] - r["s0"])
                if "probe_kernel_start" in r and "s0" in r:
                    add("kernel_start_minus_s0", r["probe_kernel_start"] - r["s0"])
                stamp = r.get("s0", r.get("s1"))
                if stamp is not None and last_end is not None and spin_end is not None:
                    call = max(last_end, stamp) - spin_end
                    add("perfdiff_call", call)
                    add("perfdiff_call_minus_elapsed", call - r["elapsed_ns"])
                    add("stamp_minus_call_last_end", stamp - last_end)
                if len(r.get("mark_gpu", [])) >= 2 and stamp is not None:
                    add("end_mark_minus_stamp", r["mark_gpu"][-1] - stamp)
            out[f"{case} {variant}"] = {
                name: {"n": len(v), "median_us": round(statistics.median(v), 2),
                       "min_us": round(min(v), 2), "max_us": round(max(v), 2)}
                for name, v in stats.items()
            }
    return out


SCHEDULES = {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}  # cudaDeviceSchedule*


def set_schedule(name: str) -> None:
    """cudaSetDeviceFlags before the context exists: whether a synchronising call spins,
    yields or sleeps while it waits, which sets how warm the host is when the call returns."""
    if name == "auto":
        return
    import ctypes

    for lib in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            cudart = ctypes.CDLL(lib)
            break
        except OSError:
            continue
    else:
        raise SystemExit("no libcudart to set the schedule with")
    rc = cudart.cudaSetDeviceFlags(ctypes.c_uint(SCHEDULES[name]))
    if rc != 0:
        raise SystemExit(f"cudaSetDeviceFlags({name}) failed: {rc}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=30, help="measured cycles per case and variant")
    ap.add_argument("--json", default=None, help="write raw rows and the summary here")
    ap.add_argument("--trace", choices=TRACE_MODES, default="events",
                    help="what CUPTI records (default: events)")
    ap.add_argument("--schedule", choices=tuple(SCHEDULES), default="auto",
                    help="how the host waits for the GPU (cudaSetDeviceFlags; default auto)")
    args = ap.parse_args()
    import torch

    set_schedule(args.schedule)
    cupti: Any = None
    if args.trace != "none":
        import cupti.cupti as cupti
    tl = Timeline(cupti)
    kinds = start_tracing(cupti, tl, args.trace)
    try:
        rows = run_cycles(torch, cupti, args.cycles, args.trace != "none")
        torch.cuda.synchronize()
    finally:
        if kinds:
            cupti.activity_flush_all(1)
        for kind in kinds:
            cupti.activity_disable(kind)
    if args.trace != "none":
        place(rows, tl)
    summary = summarise(rows)
    for key, stats in summary.items():
        print(key)
        for name, s in stats.items():
            print(f"  {name:32s} median {s['median_us']:9.2f}  [{s['min_us']:9.2f} .. "
                  f"{s['max_us']:9.2f}] us  n={s['n']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": torch.cuda.get_device_name(0), "trace": args.trace,
                       "schedule": args.schedule,
                       "summary": summary, "event_records": len(tl.events), "other_kinds": tl.other,
                       "rows": rows}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
