"""Cross-check: per-case GPU times from a recorded run file vs CUDA-event timings.

For every GPU case of an ``rmsnorm`` or ``linalg`` run file, rebuild the same call on this GPU
(same implementation, dtype, direction, shape; or same eigh batch and size with the run's
linalg backend) and time it with CUDA events, in a process without CUPTI, under the protocol
the workload's cycles use: L2 flush and GPU spin first (``perfdiff.collect.kernels.lead``),
then start event, call, end event, synchronize; median over ``--reps`` calls. Compare with the
case's median GPU time per cycle from the kernel records (``perfdiff.analysis.bench_cases``).
Acceptance (issue 4): within 5 % for cases longer than 20 us.

Each case is timed twice, both in this process: first with no tracing at all (``event_ms``),
then again with perfdiff's CUPTI activity tracing switched on (``event_cupti_ms``; the records
are thrown away) in the recording's own configuration: kernel, memcpy and memset records and
no launch API records (``trace_api=False``), as ``perfdiff collect`` records by default (it
assigns kernels to cycles with boundary marks instead; the H100 numbers of 2026-11-22 05:02
in bench/crosscheck/README.md were taken with API records on, which cost the host more per
launch than the recording did). The second column compares like with like: it checks that
perfdiff reads the GPU time of a case correctly. The gap between the two columns is what
tracing itself costs the case, which a short case of several kernels feels most.

``--measure`` picks perfdiff's per-case time (``perfdiff bench --measure``): ``call``, the
default here (end of the GPU lead to the later of the last GPU end and the end boundary mark,
the events' window for host-bound calls too; needs a recording with mark times),
``stream`` (lead end to the last GPU end), ``span`` (first GPU start to last end). Every row
also carries the medians of the other measures the file has (``span_ms``, ``stream_ms``,
``call_ms``).

In-situ mode (``--in-situ WORKLOAD``): why a second method. For host-bound calls (eigh on
cuSOLVER and MAGMA) the CUDA-event reference is not reproducible across runs: on the H100
(2026-11-22 07:57, bench/crosscheck/results/crosscheck-linalg-*-h100-0757.json) the untraced and
the traced event passes of the same process differed by up to 116 % for one case (MAGMA
batch [] n=256: 19.1 vs 8.9 ms), so a recording compared with events of another run compares
two runs, not two measurements. In-situ, this script runs the collection itself, in this
process (``rmsnorm`` or ``linalg``, the recording's default configuration without PM
sampling), and records a CUDA event pair around every measured call of it
(``bench.timers.EventPairTimer``): the start event right after the cycle opens (after the
GPU lead and the start mark, right before the call), the end event when the call returns
(``perfdiff.markers.call_returned``, first thing at the return: before perfdiff's return
stamp, its end mark and the workload's synchronize, so that the mark's issue is inside
neither window; the end event's CUDA event is created at that record, as in user code).
Each cycle of the run file is paired with its own events (by order; labels and warm-up flags
must match), and per case the median of perfdiff's measure (span, stream, call) is compared
with the median of the events, beside the median of the per-cycle (paired) differences.
Same calls, same timeline, same tracing: what differs is only the measurement. The in-situ
verdict is on the paired difference: each cycle is one call measured both ways, while the two
medians of a case can come from different cycles (with 8 cycles per case, one host stall on
one side moves a median of a bimodal case by more than 5 % while every other cycle agrees).

usage: python bench/bench_crosscheck.py RUN.json.gz [--json OUT.json] [--limit-pct 5]
       [--measure span|stream|call] [--events-from EARLIER.json  (no GPU: reuse its event times)]
       python bench/bench_crosscheck.py --in-situ rmsnorm|linalg [-p KEY=VALUE ...]
       [--cycles 15 --warmup 3] [--measure call] [--json OUT.json] [--save-run RUN.json.gz]
exit: 0 every case over 20 us within the limit (in-situ: by the paired difference), 1 some
case is not, 2 unusable input.
Needs the GPU the file was recorded on (or one like it) and torch (triton for rmsnorm).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/NAME.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from perfdiff.analysis.bench_cases import BenchRun, bench_run, select_measure, summarise
from perfdiff.errors import InputError, PerfdiffError
from perfdiff.schema.io import load_run_file

MIN_CASE_MS = 0.020
MEASURES = ("span", "stream", "call")
IN_SITU_WORKLOADS = ("rmsnorm", "linalg")  # the workloads that call markers.call_returned


def _event_ms(torch: Any, call: Any, lead: Any, reps: int) -> float:
    """Median CUDA-event time of ``call``, each call behind the same lead as in a cycle."""
    for _ in range(2):
        lead()
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        lead()
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def _rmsnorm_call(torch: Any, fields: dict[str, str], params: dict[str, Any], impls: dict[str, Any],
                  gen: Any) -> Any:
    from perfdiff.collect.workloads.rmsnorm import Case, build_impls, make_call

    shape = tuple(int(d) for d in fields["shape"].split("x"))
    case = Case(fields["impl"], fields["dtype"], fields["direction"], shape)  # type: ignore[arg-type]
    if case.impl not in impls:
        impls.update(build_impls((case.impl,), float(params.get("eps", 1e-6))))
    return make_call(torch, impls[case.impl], case, "cuda", gen)


def _linalg_call(torch: Any, fields: dict[str, str], gen: Any) -> Any:
    from perfdiff.collect.workloads.cases import parse_batches
    from perfdiff.collect.workloads.linalg import LinalgCase, symmetric

    case = LinalgCase("cuda", parse_batches(fields["batch"])[0], int(fields["n"]), fields["dtype"])
    a = symmetric(torch, case, "cuda", gen)
    return lambda: torch.linalg.eigh(a)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run_file", type=Path, nargs="?", default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--limit-pct", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--no-cupti-pass", action="store_true",
                        help="skip the second timing with CUPTI tracing on")
    parser.add_argument("--measure", choices=("span", "stream", "call"), default="call",
                        help="perfdiff's GPU time per case (perfdiff bench --measure); call, "
                        "the events' own window, needs a recording with mark times")
    parser.add_argument("--events-from", type=Path, default=None, metavar="JSON",
                        help="reuse the CUDA-event times of an earlier --json output (no GPU)")
    parser.add_argument("--in-situ", default=None, metavar="WORKLOAD",
                        choices=IN_SITU_WORKLOADS,
                        help="record WORKLOAD here and compare with CUDA events of the same "
                        "calls (no RUN file)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                        help="--in-situ: a workload parameter, as perfdiff collect -p")
    parser.add_argument("--cycles", type=int, default=15, help="--in-situ: cycles per case")
    parser.add_argument("--warmup", type=int, default=3, help="--in-situ: warm-up cycles")
    parser.add_argument("--save-run", type=Path, default=None, metavar="RUN.json.gz",
                        help="--in-situ: also write the recorded run file")
    args = parser.parse_args(argv)
    if (args.in_situ is None) == (args.run_file is None):
        print("bench_crosscheck: give a RUN file or --in-situ WORKLOAD (not both)",
              file=sys.stderr)
        return 2
    if args.in_situ is not None:
        return _main_in_situ(args)
    try:
        whole = bench_run(load_run_file(args.run_file), str(args.run_file))
        bench = select_measure(whole, args.measure)
        earlier_rows = (json.loads(args.events_from.read_text())["rows"]
                        if args.events_from is not None else None)
    except InputError as exc:
        print(f"bench_crosscheck: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"bench_crosscheck: {args.events_from}: not an earlier --json output ({exc})",
              file=sys.stderr)
        return 2
    measures = _measure_medians(whole)
    started = time.perf_counter()
    if earlier_rows is not None:
        earlier = {r["case"]: r for r in earlier_rows}
        rows = []
        for label, samples in bench.cases.items():
            if not samples.on_gpu or label not in earlier:
                continue
            ours = summarise(samples)
            row = {"case": label, "perfdiff_gpu_ms": ours.gpu_ms, "kernel_ms": ours.kernel_ms,
                   "n": ours.n, **measures.get(label, {})}
            for key, tag in (("event_ms", ""), ("event_cupti_ms", "_cupti")):
                if key in earlier[label]:
                    ref = float(earlier[label][key])
                    row |= {key: ref, f"diff{tag}_pct": _diff(ours.gpu_ms, ref)}
            rows.append(row)
        return _report(args, bench, rows, started)
    import torch

    from perfdiff.collect.kernels.lead import GpuLead

    params = dict(bench.params)
    if bench.workload == "linalg":
        from perfdiff.collect.workloads.linalg import select_backend

        select_backend(torch, str(params.get("backend", "default")))
    lead = GpuLead(torch, "cuda", int(params.get("lead_us", 1000)))
    gen = torch.Generator(device="cuda").manual_seed(12345)
    impls: dict[str, Any] = {}
    cases = [(label, samples) for label, samples in bench.cases.items() if samples.on_gpu]

    def timed(samples: Any) -> float:
        # the inputs are built per case and dropped after: all cases at once need GBs
        fields = dict(samples.fields)
        if bench.workload == "rmsnorm":
            call = _rmsnorm_call(torch, fields, params, impls, gen)
        else:
            call = _linalg_call(torch, fields, gen)
        return _event_ms(torch, call, lead, args.reps)

    rows = []
    for label, samples in cases:
        ours = summarise(samples)
        ref_ms = timed(samples)
        rows.append({"case": label, "perfdiff_gpu_ms": ours.gpu_ms, "kernel_ms": ours.kernel_ms,
                     "event_ms": ref_ms, "diff_pct": _diff(ours.gpu_ms, ref_ms), "n": ours.n,
                     **measures.get(label, {})})
    if not args.no_cupti_pass:
        from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

        # the recording's configuration: activity records, no launch API records
        tracer = CuptiActivityBackend(trace_memory=True, trace_api=False)
        tracer.start()
        try:
            for row, (_, samples) in zip(rows, cases, strict=True):
                ref_ms = timed(samples)
                row |= {"event_cupti_ms": ref_ms,
                        "diff_cupti_pct": _diff(float(row["perfdiff_gpu_ms"]), ref_ms)}
        finally:
            tracer.stop()
    return _report(args, bench, rows, started)


def _measure_medians(whole: BenchRun) -> dict[str, dict[str, float]]:
    """Per GPU case, the median of every measure the file has (span_ms, stream_ms, call_ms)."""
    out: dict[str, dict[str, float]] = {}
    for name in ("span", "stream", "call"):
        try:
            chosen = select_measure(whole, name)
        except InputError:
            continue  # no lead / no mark times: that measure is absent
        for label, samples in chosen.cases.items():
            if samples.on_gpu:
                out.setdefault(label, {})[f"{name}_ms"] = summarise(samples).gpu_ms
    return out


def _report(args: argparse.Namespace, bench: Any, rows: list[dict[str, Any]],
            started: float) -> int:
    """Print the per-case table and the summary, write --json; 0 when every case is within."""
    summary = {"run_file": str(args.run_file), "gpu": bench.gpu, "cases": len(rows),
               "measure": bench.measure, "limit_pct": args.limit_pct, "min_case_ms": MIN_CASE_MS}
    ok = True
    for key, tag in (("event_ms", ""), ("event_cupti_ms", "_cupti")):
        if not all(key in r for r in rows):
            continue
        gated = [r for r in rows if r[key] > MIN_CASE_MS]
        within = [r for r in gated if abs(r["diff" + tag + "_pct"]) <= args.limit_pct]
        abs_diffs = sorted(abs(r["diff" + tag + "_pct"]) for r in gated)
        summary |= {
            f"cases_over_20us{tag}": len(gated),
            f"within_limit{tag}": len(within),
            f"median_abs_diff{tag}_pct": abs_diffs[len(abs_diffs) // 2] if abs_diffs else math.nan,
            f"max_abs_diff{tag}_pct": abs_diffs[-1] if abs_diffs else math.nan,
        }
        ok = ok and len(within) == len(gated)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    print(f"{'case':<64} {'perfdiff ms':>11} {'events ms':>10} {'diff %':>7} "
          f"{'events+CUPTI':>12} {'diff %':>7}")
    for r in rows:
        print(f"{r['case']:<64} {r['perfdiff_gpu_ms']:>11.4f} {r['event_ms']:>10.4f} "
              f"{r['diff_pct']:>+7.2f} {r.get('event_cupti_ms', math.nan):>12.4f} "
              f"{r.get('diff_cupti_pct', math.nan):>+7.2f}")
    print(json.dumps(summary))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0 if ok else 1


def _diff(ours_ms: float, ref_ms: float) -> float:
    return 100.0 * (ours_ms - ref_ms) / ref_ms if ref_ms > 0 else math.nan


# --- in-situ: CUDA events of the very calls perfdiff measures --------------------------------

def pair_events(labels: Sequence[str], warmups: Sequence[bool],
                calls: Sequence[tuple[str, bool, float]]) -> dict[str, list[float]]:
    """Per case, the event times (ms) of its measured cycles, in cycle order.

    ``labels``/``warmups``: the run file's cycles; ``calls``: (label, warm-up, event ms) per
    cycle the timer saw, in order. They must be the same cycles: same count, and at every
    position the same label and warm-up flag; otherwise one line says where they part.
    """
    if len(calls) != len(labels):
        raise InputError(f"in-situ: the run file has {len(labels)} cycles but the events cover "
                         f"{len(calls)}; a cycle was cut short or opened outside the collector")
    out: dict[str, list[float]] = {}
    for i, (label, warmup, (ev_label, ev_warmup, ms)) in enumerate(
            zip(labels, warmups, calls, strict=True)):
        if label != ev_label or bool(warmup) != bool(ev_warmup):
            raise InputError(f"in-situ: cycle {i} is {label!r} (warm-up {bool(warmup)}) in the "
                             f"run file but {ev_label!r} (warm-up {bool(ev_warmup)}) for the "
                             "events; they cannot be paired")
        if not warmup:
            out.setdefault(label, []).append(float(ms))
    return out


def _finite_median(x: np.ndarray) -> float:
    finite = x[np.isfinite(x)]
    return float(np.median(finite)) if finite.size else math.nan


def in_situ_rows(whole: BenchRun, events: Mapping[str, Sequence[float]]
                 ) -> list[dict[str, Any]]:
    """Per GPU case: the median event time, and per measure the file has its median, the
    difference of the medians (``diff_M_pct``) and the median of the per-cycle differences
    (``paired_diff_M_pct``, ``paired_diff_M_us``: the same cycle measured both ways). Each row
    keeps its per-cycle times (``cycles``) so that passes can be pooled (bench/insitu_pool.py)."""
    rows: list[dict[str, Any]] = []
    for label, samples in whole.cases.items():
        if not samples.on_gpu:
            continue
        ev = np.asarray(events.get(label, ()), dtype=np.float64)
        if ev.size != samples.n:
            raise InputError(f"in-situ: case {label!r} has {samples.n} measured cycles but "
                             f"{ev.size} event pairs")
        per_measure = {"span": samples.gpu_ms if whole.measure == "span" else None,
                       "stream": samples.stream_ms, "call": samples.call_ms}
        rows.append(case_row(label, ev, {k: np.asarray(v, dtype=np.float64)
                                         for k, v in per_measure.items() if v is not None},
                             summarise(samples).kernel_ms))
    return rows


def case_row(label: str, ev: np.ndarray, measures: Mapping[str, np.ndarray],
             kernel_ms: float) -> dict[str, Any]:
    """One case's row from its per-cycle event times and perfdiff's per-cycle times."""
    event_ms = _finite_median(ev)
    row: dict[str, Any] = {"case": label, "n": int(ev.size), "event_ms": event_ms,
                           "kernel_ms": kernel_ms}
    cycles: dict[str, list[float | None]] = {"event_ms": _listed(ev)}
    for name, ours in measures.items():
        ok = np.isfinite(ours) & np.isfinite(ev) & (ev > 0)
        median = _finite_median(ours)
        row[f"{name}_ms"] = median
        row[f"diff_{name}_pct"] = _diff(median, event_ms)
        row[f"paired_diff_{name}_pct"] = (
            float(np.median(100.0 * (ours[ok] - ev[ok]) / ev[ok])) if ok.any() else math.nan)
        row[f"paired_diff_{name}_us"] = (
            float(np.median(1000.0 * (ours[ok] - ev[ok]))) if ok.any() else math.nan)
        cycles[f"{name}_ms"] = _listed(ours)
    row["cycles"] = cycles
    return row


def _listed(x: np.ndarray) -> list[float | None]:
    """Per-cycle times for JSON: NaN (no time) as null."""
    return [float(v) if math.isfinite(v) else None for v in x.tolist()]


def in_situ_summary(rows: Sequence[Mapping[str, Any]], measure: str, limit_pct: float
                    ) -> dict[str, Any]:
    """Per measure: cases whose event median is over 20 us, how many are within the limit
    (difference of medians), how many by the paired median, median and max |diff|. The
    chosen ``measure``'s figures are also the top-level ones (the exit code's)."""
    by_measure: dict[str, Any] = {}
    for name in MEASURES:
        key = f"diff_{name}_pct"
        if not rows or not all(key in r for r in rows):
            continue  # the recording has no such time (no lead, no mark times)
        gated = [r for r in rows if r["event_ms"] > MIN_CASE_MS]
        diffs = sorted(abs(float(r[key])) if math.isfinite(r[key]) else math.inf
                       for r in gated)
        paired = [abs(float(r[f"paired_diff_{name}_pct"])) for r in gated]
        by_measure[name] = {
            "cases_over_20us": len(gated),
            "within_limit": sum(d <= limit_pct for d in diffs),
            "within_limit_paired": sum(p <= limit_pct for p in paired),
            "median_abs_diff_pct": diffs[len(diffs) // 2] if diffs else math.nan,
            "max_abs_diff_pct": diffs[-1] if diffs else math.nan,
        }
    summary: dict[str, Any] = {"cases": len(rows), "measure": measure, "limit_pct": limit_pct,
                               "min_case_ms": MIN_CASE_MS}
    chosen = by_measure.get(measure)
    if chosen is not None:
        summary |= {k: chosen[k] for k in ("cases_over_20us", "within_limit",
                                           "within_limit_paired", "median_abs_diff_pct",
                                           "max_abs_diff_pct")}
    summary["by_measure"] = by_measure
    return summary


def in_situ_ok(summary: Mapping[str, Any]) -> bool:
    """Every gated case of the chosen measure within the limit by its paired difference (the
    median over its cycles of each cycle's two measurements), and the measure present."""
    return ("within_limit_paired" in summary
            and summary["within_limit_paired"] == summary["cases_over_20us"])


def collect_with_events(workload: Any, plan: Any, sources: Any, environment: Any,
                        settings: Any, new_event: Callable[[], Any], *, device: str,
                        extra_params: dict[str, Any]) -> tuple[Any, list[tuple[str, bool, float]]]:
    """One collection with an :class:`bench.timers.EventPairTimer` installed: the run
    file and, per cycle the timer saw, (label, warm-up, event ms). Refuses an incomplete run."""
    from bench.timers import EventPairTimer, TimedWorkload
    from perfdiff.collect.session import run_collection

    timer = EventPairTimer(new_event)
    outcome = run_collection(TimedWorkload(workload, timer), plan, sources, environment,
                             settings, device=device, extra_params=extra_params)
    if outcome.run_file.status.state != "complete":
        raise InputError(f"in-situ: the collection did not complete: "
                         f"{outcome.run_file.status.reason}")
    if sources.synchronize is not None:
        sources.synchronize()  # every end event has passed before it is read
    return outcome.run_file, [(c.label, c.warmup, c.elapsed_ms()) for c in timer.calls]


def compare_in_situ(run_file: Any, calls: Sequence[tuple[str, bool, float]], source: str
                    ) -> tuple[BenchRun, list[dict[str, Any]]]:
    """The run file's cases and their rows against the events of the same cycles."""
    if len(run_file.runs) != 1:
        raise InputError(f"in-situ: expected one run in the recording, found {len(run_file.runs)}")
    cycles = run_file.runs[0].cycles
    events = pair_events(list(cycles.label), [bool(w) for w in cycles.warmup], calls)
    whole = bench_run(run_file, source)
    return whole, in_situ_rows(whole, events)


def _main_in_situ(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        import torch

        from perfdiff.collect.session import CollectSettings
        from perfdiff.collect.sources import open_sources
        from perfdiff.collect.workloads import get_workload_class
        from perfdiff.collect.workloads.base import CyclePlan
        from perfdiff.schema.io import save_run_file

        params: dict[str, str] = {}
        for item in args.param:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise InputError(f"-p {item!r}: expected KEY=VALUE")
            params[key.strip()] = value.strip()
        cls = get_workload_class(args.in_situ)
        workload = cls(cls.params_class.from_strings(params))
        plan = CyclePlan(measured=args.cycles, warmup=args.warmup)
        settings = CollectSettings(pm_sampling=False)  # as the fixtures' --no-pm
        opened = open_sources(settings)
        command = "bench_crosscheck.py --in-situ " + " ".join(
            [args.in_situ, *(f"-p {p}" for p in args.param), f"--cycles {args.cycles}",
             f"--warmup {args.warmup}"])
        run_file, calls = collect_with_events(
            workload, plan, opened.sources, opened.environment, settings,
            lambda: torch.cuda.Event(enable_timing=True), device=opened.device,
            extra_params={"collect_command": command})
        warnings = list(run_file.collection.warnings)
        for warning in warnings:  # e.g. marks that failed: then there is no call time
            print(f"bench_crosscheck: warning: {warning}", file=sys.stderr)
        if args.save_run is not None:
            try:
                save_run_file(run_file, args.save_run)
            except OSError as exc:
                raise InputError(f"cannot write {args.save_run}: {exc}") from None
        whole, rows = compare_in_situ(run_file, calls, f"in-situ {args.in_situ}")
    except PerfdiffError as exc:
        print(f"bench_crosscheck: {exc}", file=sys.stderr)
        return 2
    summary = {"mode": "in-situ", "workload": args.in_situ, "params": args.param,
               "cycles": args.cycles, "warmup": args.warmup, "gpu": whole.gpu,
               "warnings": warnings,
               **in_situ_summary(rows, args.measure, args.limit_pct),
               "seconds": round(time.perf_counter() - started, 1)}
    print_in_situ(rows)
    print(json.dumps(summary))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    if "within_limit" not in summary:
        print(f"bench_crosscheck: no {args.measure} time in this recording (no GPU lead, or "
              "no mark times)", file=sys.stderr)
        return 2
    return 0 if in_situ_ok(summary) else 1


def print_in_situ(rows: Sequence[Mapping[str, Any]]) -> None:
    head = "".join(f" {m + ' ms':>10} {'diff %':>7} {'paired %':>8}" for m in MEASURES)
    print(f"{'case':<64} {'n':>3} {'events ms':>10}{head}")
    for r in rows:
        cells = "".join(
            f" {r.get(f'{m}_ms', math.nan):>10.4f} {r.get(f'diff_{m}_pct', math.nan):>+7.2f}"
            f" {r.get(f'paired_diff_{m}_pct', math.nan):>+8.2f}" for m in MEASURES)
        print(f"{r['case']:<64} {r['n']:>3} {r['event_ms']:>10.4f}{cells}")


if __name__ == "__main__":
    sys.exit(main())
