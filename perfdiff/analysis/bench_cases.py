"""Per-case statistics of benchmark run files (``rmsnorm``, ``linalg``): the numbers behind
``perfdiff bench``.

A *case* is the set of measured cycles sharing one label (``impl=cuda dtype=float16 ...``,
see ``perfdiff.collect.workloads.cases``). Per cycle:

- ``gpu_ms``: from the start of the cycle's first GPU activity (kernel, memcpy or memset
  launched in the cycle) to the end of its last: what CUDA events around the call measure
  when the GPU is kept busy while the call is launched (the workloads ensure that, as
  ``triton.testing.do_bench`` does). NaN for a cycle with no GPU activity (a CPU case);
- ``kernel_ms``: the sum of the cycle's kernel durations (busy time; equal to ``gpu_ms`` when
  the kernels run back to back);
- ``stream_ms``: from the end of the GPU lead (the spin kernel launched just before the cycle,
  see ``perfdiff.collect.kernels.lead``) to the end of the cycle's last GPU activity: the
  window CUDA events recorded right after the lead and after the call would measure, including
  the first launch's latency that ``gpu_ms`` leaves out (NaN without a lead);
- ``call_ms``: from the end of the GPU lead to the later of the cycle's last GPU end and the
  GPU start of its end boundary mark (issued when the call returned to Python, see
  ``perfdiff.collect.cycles.cycles``): the window of CUDA events recorded right after the lead and
  right after the call returns, host work after the call's last GPU operation included
  (NaN without a lead or without the mark's time);
- ``host_ms``: the cycle's host interval (for a CPU case, its CPU time).

Tables show the median per case. "Regressed" (and "faster") needs both (a) significance: the
Welch test of :func:`perfdiff.analysis.stats.welch` (standard error floored at ``REL_SE_FLOOR``
of the mean, 0.01 %: a numerical guard only) on the per-cycle GPU times, Benjamini-Hochberg q
over the cases compared, q < alpha; and (b) size above the case's noise floor: the median
changed by more than ``min_delta_us`` and by more than ``max(noise_floor_pct, spread_factor x
the case's within-run spread)``, the spread being the robust coefficient of variation (1.4826 x
MAD / median) of its per-cycle GPU times, the larger of the two runs'. Why (b): cycles of one
run share that run's conditions (clocks, memory placement, host speed), which a test on one run
per side cannot see, so a re-run of the same build differs by more than the test expects; the
cases whose time the host sets (syncs, launches) jitter within a run and drift between runs
alike, hence a floor that grows with the spread. The defaults are set from A/A pairs of real
recordings (docs/howto/benchmarks.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from perfdiff.analysis.stats import REL_SE_FLOOR, bh_qvalues, welch
from perfdiff.errors import IncomparableRunsError, InputError
from perfdiff.schema.model import FloatArray, Run, RunFile

DEFAULT_ALPHA = 0.05
DEFAULT_NOISE_FLOOR_PCT = 5.0
DEFAULT_MIN_DELTA_US = 1.0
DEFAULT_SPREAD_FACTOR = 3.0
MAD_TO_SD = 1.4826  # MAD x this estimates the standard deviation of a normal sample

Measure = Literal["span", "kernels", "stream", "call"]
CaseVerdict = Literal[
    "regressed", "faster", "no change", "insufficient data", "only before", "only after"
]


def parse_case_label(label: str) -> dict[str, str]:
    """``"impl=cuda dtype=float16"`` -> ``{"impl": "cuda", "dtype": "float16"}``.

    A label that is not ``key=value`` pairs (a user program's own labels) becomes
    ``{"case": label}``, so every run file still tabulates.
    """
    fields: dict[str, str] = {}
    for part in label.split():
        key, sep, value = part.partition("=")
        if not sep or not key or key in fields:
            return {"case": label}
        fields[key] = value
    return fields if fields else {"case": label}


@dataclass(frozen=True)
class CaseSamples:
    """Per-cycle values of one case in one run file (measured cycles only)."""

    label: str
    fields: Mapping[str, str]
    gpu_ms: FloatArray
    kernel_ms: FloatArray
    host_ms: FloatArray
    launches: FloatArray  # kernels launched per cycle
    stream_ms: FloatArray | None = None  # None: the run had no GPU lead to anchor on
    call_ms: FloatArray | None = None  # None: no lead, or no return/mark times in the file

    @property
    def n(self) -> int:
        return int(self.host_ms.size)

    @property
    def on_gpu(self) -> bool:
        return bool(np.isfinite(self.gpu_ms).any())


@dataclass(frozen=True)
class CaseSummary:
    """Medians of one case (``gpu_ms`` NaN for a case without GPU work)."""

    label: str
    fields: Mapping[str, str]
    n: int
    gpu_ms: float
    kernel_ms: float
    host_ms: float
    launches: float


@dataclass(frozen=True)
class CaseChange:
    """One case compared between two run files."""

    label: str
    fields: Mapping[str, str]
    before: CaseSummary | None
    after: CaseSummary | None
    ratio: float  # median GPU time after / before (NaN when undefined)
    delta_ms: float  # median after - median before
    p: float
    q: float
    floor_pct: float  # the noise floor applied to this case (percent of the median before)
    verdict: CaseVerdict


@dataclass(frozen=True)
class BenchRules:
    """The "regressed" rule's knobs (stated in every table's legend)."""

    alpha: float = DEFAULT_ALPHA
    noise_floor_pct: float = DEFAULT_NOISE_FLOOR_PCT
    min_delta_us: float = DEFAULT_MIN_DELTA_US
    spread_factor: float = DEFAULT_SPREAD_FACTOR

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise InputError(f"--alpha must be between 0 and 1, got {self.alpha}")
        knobs = (self.noise_floor_pct, self.min_delta_us, self.spread_factor)
        if not all(0 <= knob < math.inf for knob in knobs):  # NaN fails too: it silenced the gate
            raise InputError(
                "--noise-floor-pct, --min-delta-us and --spread-factor must be finite and not "
                "negative"
            )

    def legend(self) -> str:
        return (
            f"***regressed: the median GPU time per cycle grew by more than "
            f"{self.min_delta_us:g} us and by more than the case's noise floor, "
            f"max({self.noise_floor_pct:g} %, {self.spread_factor:g} x its within-run spread "
            f"(robust CV of the per-cycle GPU times)), and a Welch test on the per-cycle GPU "
            f"times (standard error floored at {100 * REL_SE_FLOOR:g} % of the mean) gives a "
            f"Benjamini-Hochberg "
            f"q below {self.alpha:g} over the cases compared; 'faster' is the same rule the "
            f"other way."
        )

    def floor_pct(self, before: FloatArray, after: FloatArray) -> float:
        """The noise floor of one case, in percent of its median GPU time."""
        spread = max(robust_cv_pct(before), robust_cv_pct(after))
        if not math.isfinite(spread):
            spread = 0.0
        return max(self.noise_floor_pct, self.spread_factor * spread)


def robust_cv_pct(x: FloatArray) -> float:
    """1.4826 x MAD / median, in percent (NaN without finite samples); outliers barely move it."""
    finite = np.asarray(x, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return math.nan
    median = float(np.median(finite))
    if median <= 0:
        return math.nan
    return 100.0 * MAD_TO_SD * float(np.median(np.abs(finite - median))) / median


@dataclass(frozen=True)
class BenchRun:
    """One benchmark run file reduced to its cases."""

    source: str
    workload: str
    params: Mapping[str, object]
    gpu: str
    cases: Mapping[str, CaseSamples] = field(default_factory=dict)
    measure: Measure = "span"  # what ``CaseSamples.gpu_ms`` holds (see select_measure)
    # every case's medians, in recording order: computed here so that renderers only read them
    case_summaries: tuple[CaseSummary, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "case_summaries",
                           tuple(summarise(s) for s in self.cases.values()))


def select_measure(run: BenchRun, measure: Measure) -> BenchRun:
    """The run with ``gpu_ms`` holding the chosen measure of GPU time per cycle.

    ``span`` (default): first GPU activity start to last end, what CUDA events around the call
    measure; it includes the gaps between kernels, a real cost of multi-kernel versions.
    ``kernels``: the sum of kernel durations, blind to gaps; use it when the host may have
    left the GPU idle between launches (runs recorded without the GPU lead, or a host-bound
    op), since host delays then drift between runs while the kernels do not.
    ``stream``: from the end of the GPU lead to the last end: what CUDA events around the call
    measure, first launch latency included (about 1.2 us on the H100); for checking against
    event-based benchmarks (bench/bench_crosscheck.py). Needs runs recorded with the lead.
    ``call``: from the end of the GPU lead to the later of the last GPU end and the moment
    the call returned to Python (its return stamp, schema 1.2; the end boundary mark's GPU
    start in 1.1 files): what those events measure when the call keeps the host busy after
    its last GPU operation (a host-bound op such as eigh), without recording events. Needs
    the lead and a file with return or mark times.
    """
    if measure == run.measure:
        return run
    if measure == "kernels":
        cases = {label: replace(c, gpu_ms=c.kernel_ms) for label, c in run.cases.items()}
        return replace(run, cases=cases, measure="kernels")
    if measure == "stream":
        cases = {}
        for label, c in run.cases.items():
            if c.stream_ms is None:
                raise InputError(f"{run.source}: recorded without the GPU lead (lead_us = 0), "
                                 "so there is no stream time; use --measure span or kernels")
            cases[label] = replace(c, gpu_ms=c.stream_ms)
        return replace(run, cases=cases, measure="stream")
    if measure == "call":
        cases = {}
        for label, c in run.cases.items():
            if c.call_ms is None:
                raise InputError(_no_call_time(run))
            cases[label] = replace(c, gpu_ms=c.call_ms)
        return replace(run, cases=cases, measure="call")
    raise InputError(f"unknown GPU time measure {measure!r}; use span, kernels or stream "
                     "(or call, with return times)")


def _no_call_time(run: BenchRun) -> str:
    if int(str(run.params.get("lead_us", 0) or 0)) <= 0:
        return (f"{run.source}: recorded without the GPU lead (lead_us = 0), so there is no "
                "call time; use --measure span or kernels")
    return (f"{run.source}: has no call-return times (recorded before run-file schema 1.1, "
            "or 1.1 with launch API records), so there is no call time; re-record it with "
            "this perfdiff, or use --measure stream")


def _per_cycle(
    run: Run, measured: np.ndarray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray | None]:
    """(gpu span, kernel sum, kernel count, stream time, call time) per measured cycle of
    ``run``; call time None when the run has neither return nor end-mark times."""
    n = run.cycles.index.size
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    position = {int(c): i for i, c in enumerate(run.cycles.index)}
    lookup = np.full(int(run.cycles.index.max()) + 1 if n else 0, -1, dtype=np.int64)
    for cycle, i in position.items():
        lookup[cycle] = i
    kernel_sum = np.zeros(n)
    launches = np.zeros(n)
    for table, is_kernel in ((run.kernels, True), (run.memcpy, False), (run.memset, False)):
        cyc = np.asarray(table.cycle, dtype=np.int64)
        ok = (cyc >= 0) & (cyc < lookup.size)
        idx = lookup[cyc[ok]]
        keep = idx >= 0
        idx = idx[keep]
        start = np.asarray(table.start_ns)[ok][keep]
        end = np.asarray(table.end_ns)[ok][keep]
        np.minimum.at(first, idx, start)
        np.maximum.at(last, idx, end)
        if is_kernel:
            np.add.at(kernel_sum, idx, (end - start) / 1e6)
            np.add.at(launches, idx, 1.0)
    has = last > np.iinfo(np.int64).min
    span = np.where(has, (last - first) / 1e6, np.nan)
    kernel_ms = np.where(has, kernel_sum, np.nan)
    anchor = _lead_ends(run, np.where(has, first, 0))
    stream = np.where(has & (anchor > 0), (last - anchor) / 1e6, np.nan)
    call = None
    returned = _call_returns(run)
    if returned is not None:
        ok = has & (anchor > 0) & (returned >= 0)
        call = np.where(ok, (np.maximum(last, returned) - anchor) / 1e6, np.nan)[measured]
    return span[measured], kernel_ms[measured], launches[measured], stream[measured], call


def _call_returns(run: Run) -> np.ndarray | None:
    """Per cycle, when its timed call returned on the trace's clock (-1 where unknown).

    The return stamp (schema 1.2) where the file has one; else the end mark's GPU start
    (1.1), which reaches the GPU 30-60 us after the return on the H100, so older files
    measure host-bound calls that much longer. None when the file has neither.
    """
    if run.cycles.return_ns is not None:
        return np.asarray(run.cycles.return_ns, dtype=np.int64)
    if run.cycles.mark_end_ns is not None:
        return np.asarray(run.cycles.mark_end_ns, dtype=np.int64)
    return None


def _lead_ends(run: Run, first: np.ndarray) -> np.ndarray:
    """Per cycle, the end of the last out-of-cycle kernel that ended by its first activity.

    In a benchmark run that is the GPU lead's spin kernel (launched just before the cycle
    opens, so it belongs to no cycle). 0 where there is none.
    """
    outside = np.asarray(run.kernels.cycle) < 0
    ends = np.sort(np.asarray(run.kernels.end_ns)[outside])
    if ends.size == 0:
        return np.zeros(first.shape, dtype=np.int64)
    pos = np.searchsorted(ends, first, side="right") - 1
    found: np.ndarray = np.where(pos >= 0, ends[np.clip(pos, 0, None)], 0)
    return found


def bench_run(run_file: RunFile, source: str = "<run file>") -> BenchRun:
    """Every labelled case of ``run_file`` with its per-cycle values (all runs pooled)."""
    gathered: dict[str, list[tuple[FloatArray, FloatArray, FloatArray, FloatArray,
                                   FloatArray, FloatArray | None]]] = {}
    led = int(str(run_file.workload.params.get("lead_us", 0) or 0)) > 0
    for run in run_file.runs:
        measured = ~np.asarray(run.cycles.warmup, dtype=bool)
        if not measured.any():
            continue
        span, kernel_ms, launches, stream, call = _per_cycle(run, measured)
        host = ((run.cycles.end_ns - run.cycles.start_ns) / 1e6)[measured]
        labels = np.asarray(run.cycles.label, dtype=object)[measured]
        for label in dict.fromkeys(labels.tolist()):
            sel = labels == label
            gathered.setdefault(str(label), []).append(
                (span[sel], kernel_ms[sel], host[sel], launches[sel], stream[sel],
                 None if call is None else call[sel])
            )
    cases = {
        label: CaseSamples(
            label=label,
            fields=parse_case_label(label),
            gpu_ms=np.concatenate([p[0] for p in parts]),
            kernel_ms=np.concatenate([p[1] for p in parts]),
            host_ms=np.concatenate([p[2] for p in parts]),
            launches=np.concatenate([p[3] for p in parts]),
            stream_ms=np.concatenate([p[4] for p in parts]) if led else None,
            call_ms=_concat_all([p[5] for p in parts]) if led else None,
        )
        for label, parts in gathered.items()
    }
    if not cases:
        raise InputError(
            f"{source}: no measured cycles; record one with perfdiff collect rmsnorm|linalg"
        )
    devices = run_file.environment.devices
    return BenchRun(
        source=source,
        workload=run_file.workload.name,
        params=dict(run_file.workload.params),
        gpu=devices[0].name if devices else "unknown GPU",
        cases=cases,
    )


def _concat_all(parts: Sequence[FloatArray | None]) -> FloatArray | None:
    """The parts joined, or None if any run lacked them (a mixed file has no call time)."""
    present = [p for p in parts if p is not None]
    return np.concatenate(present) if len(present) == len(parts) else None


def _median(x: FloatArray) -> float:
    finite = x[np.isfinite(x)]
    return float(np.median(finite)) if finite.size else math.nan


def summarise(samples: CaseSamples) -> CaseSummary:
    """Medians of a case's per-cycle values."""
    return CaseSummary(
        label=samples.label,
        fields=samples.fields,
        n=samples.n,
        gpu_ms=_median(samples.gpu_ms),
        kernel_ms=_median(samples.kernel_ms),
        host_ms=_median(samples.host_ms),
        launches=_median(samples.launches),
    )


def summaries(run: BenchRun) -> list[CaseSummary]:
    """Every case's summary, in recording order."""
    return list(run.case_summaries)


def regressed_cases(changes: Sequence[CaseChange], threshold_pct: float) -> list[CaseChange]:
    """``--fail-on-regression PCT``: cases flagged *regressed* whose median GPU time per call
    grew by more than ``threshold_pct`` %, largest first (ties: recording order).

    The same semantics as compare's gate: only what the statistics call a slowdown counts,
    and only above the user's threshold, so CI does not fail on noise.
    """
    found = [c for c in changes if c.verdict == "regressed" and math.isfinite(c.ratio)
             and 100.0 * (c.ratio - 1.0) > threshold_pct]
    return sorted(found, key=lambda c: -c.ratio)


def check_same_bench(before: BenchRun, after: BenchRun, *, force: bool) -> None:
    """The comparability rule of ``bench``: refuse runs of different workloads or GPU models
    unless ``force`` (GPU times do not compare across models)."""
    if force:
        return
    if before.workload != after.workload:
        raise IncomparableRunsError(
            f"{before.source} is workload '{before.workload}' but {after.source} is "
            f"'{after.workload}'; compare runs of one benchmark (or pass --force)"
        )
    if before.gpu != after.gpu:
        raise IncomparableRunsError(
            f"{before.source} was recorded on {before.gpu} but {after.source} on {after.gpu}; "
            "GPU times are not comparable across GPU models (pass --force to compare anyway)"
        )


def compare_cases(
    before: BenchRun, after: BenchRun, rules: BenchRules | None = None, *, gpu_only: bool = True
) -> list[CaseChange]:
    """Every case of either run, compared on GPU time (cases without GPU work are skipped
    when ``gpu_only``), in the order of ``before`` then cases new in ``after``."""
    rules = rules or BenchRules()
    labels = list(dict.fromkeys([*before.cases, *after.cases]))
    if gpu_only:
        labels = [
            lb
            for lb in labels
            if (lb in before.cases and before.cases[lb].on_gpu)
            or (lb in after.cases and after.cases[lb].on_gpu)
        ]
    both = [lb for lb in labels if lb in before.cases and lb in after.cases]
    p_values = _p_values(before, after, both)
    q_values = bh_qvalues(np.asarray([p_values[lb] for lb in both], dtype=np.float64))
    q_of = dict(zip(both, q_values.tolist(), strict=True))
    out: list[CaseChange] = []
    for label in labels:
        b = summarise(before.cases[label]) if label in before.cases else None
        a = summarise(after.cases[label]) if label in after.cases else None
        fields = (b or a).fields if (b or a) is not None else {}  # type: ignore[union-attr]
        if b is None or a is None:
            out.append(
                CaseChange(
                    label,
                    fields,
                    b,
                    a,
                    math.nan,
                    math.nan,
                    math.nan,
                    math.nan,
                    math.nan,
                    "only after" if b is None else "only before",
                )
            )
            continue
        delta = a.gpu_ms - b.gpu_ms
        ratio = a.gpu_ms / b.gpu_ms if b.gpu_ms > 0 else math.nan
        p = p_values[label]
        q = q_of[label]
        floor = rules.floor_pct(before.cases[label].gpu_ms, after.cases[label].gpu_ms)
        verdict = _verdict(b, a, delta, q, floor, rules)
        out.append(CaseChange(label, fields, b, a, ratio, delta, p, q, floor, verdict))
    return out


def _p_values(before: BenchRun, after: BenchRun, labels: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for label in labels:
        x = before.cases[label].gpu_ms
        y = after.cases[label].gpu_ms
        result = welch(x[np.isfinite(x)][:, None], y[np.isfinite(y)][:, None])
        p = float(result.p[0])
        if bool(result.constant[0]):
            p = 0.0 if float(result.delta[0]) != 0.0 else 1.0
        out[label] = p
    return out


def _verdict(
    b: CaseSummary, a: CaseSummary, delta_ms: float, q: float, floor_pct: float,
    rules: BenchRules,
) -> CaseVerdict:
    if b.n < 2 or a.n < 2 or not (math.isfinite(b.gpu_ms) and math.isfinite(a.gpu_ms)):
        return "insufficient data"
    if not math.isfinite(q) or q >= rules.alpha:
        return "no change"
    rel_pct = 100.0 * abs(delta_ms) / b.gpu_ms if b.gpu_ms > 0 else math.inf
    big = rel_pct > floor_pct and abs(delta_ms) * 1000.0 > rules.min_delta_us
    if not big:
        return "no change"
    return "regressed" if delta_ms > 0 else "faster"


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_DELTA_US",
    "DEFAULT_NOISE_FLOOR_PCT",
    "DEFAULT_SPREAD_FACTOR",
    "BenchRules",
    "BenchRun",
    "CaseChange",
    "CaseSamples",
    "CaseSummary",
    "CaseVerdict",
    "Measure",
    "bench_run",
    "compare_cases",
    "parse_case_label",
    "robust_cv_pct",
    "select_measure",
    "summaries",
    "summarise",
]
