"""The typed result of a comparison: what ``report/`` renders and ``--format json`` serialises.

Why frozen dataclasses: renderers are pure ``render(comparison) -> str`` (pyinstrument's idea),
so every output format is one small module that cannot change a number. Statistics live in
``perfdiff.analysis.stats``; the entry point that builds a :class:`Comparison` is
``perfdiff.analysis.comparison.compare_tables(normal_table, abnormal_table, options)``.

Conventions: percentages are in percent (0-100), times in milliseconds unless the field name
says otherwise, NaN means "not defined" (renderers print "n/a"), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["slower", "faster", "no change", "insufficient data", "appeared", "vanished"]

# How independent samples were formed for the tests (said in the report):
#   "runs"        - run-level means, >= 2 runs per side
#   "batch means" - one run per side, cycles grouped into ~10 consecutive batches
#   "cycles"      - raw per-cycle samples (only in --seed-compatible mode)
TestUnit = Literal["runs", "batch means", "cycles"]

# Run-to-run variation (CV of a process's mean cycle time, %) assumed for a side recorded in one
# run, which cannot show it. Defined here once: ``compare``'s option takes its default from it.
# Where the figure comes from and what it costs: docs/explanation/statistics.md ("One run per
# side") and bench/README.md (issue 28, "CPU only, 2026-11-28").
DEFAULT_RUN_CV_PCT = 3.0
# ... but that median hides two populations: steps that wait on the GPU vary 0.02-1.4 % between
# processes, steps that wait on the host 4-25 % (timm bf16, CNN AMP, DDP bf16, HF Trainer). How
# much a process's host speed moves its cycle scales with the share of the cycle the GPU idles,
# so a one-run side is assumed to vary by at least this % times that share (timm ViT-S bf16:
# GPU idle 62 % of the cycle, between-process CV 4-25 %, median 11 %; H100/H200). Where from:
# bench/README.md, issue 28, "Host-bound sides" (2026-12-08).
HOST_RUN_CV_PCT = 18.0


@dataclass(frozen=True)
class CompareOptions:
    """Knobs of a comparison (the CLI maps its flags onto these)."""

    alpha: float = 0.05  # false-discovery rate for Benjamini-Hochberg q-values
    practical_threshold_pct: float = 1.0  # a change must exceed this share of cycle time
    seed_compatible: bool = False  # reproduce LatencyPrism's own numbers and ranking
    n_batches: int = 10  # batch-means batches when each side has one run
    bootstrap_resamples: int = 2000
    seed: int = 0  # bootstrap RNG seed: output is deterministic
    top: int = 3  # key findings to describe in prose
    force: bool = False  # compare runs from different GPU models / workloads anyway
    # added by the statistics: run-to-run variation (coefficient of variation, %) assumed when a
    # side has one run, since one run cannot show it (docs/explanation/statistics.md)
    run_cv_pct: float = DEFAULT_RUN_CV_PCT
    # run-to-run CV (%) of a cycle's host part: a one-run side whose GPU idles a share s of its
    # cycle is assumed to vary by max(run_cv_pct, host_run_cv_pct * s); 0: run_cv_pct alone
    host_run_cv_pct: float = HOST_RUN_CV_PCT
    # set by the comparison from each side's GPU idle (noise.host_aware_cv): the CV (%) assumed
    # for each one-run side, normal and abnormal; None: run_cv_pct for both
    side_run_cv_pct: tuple[float, float] | None = None
    # the GPU idle share of each side's cycle those figures came from
    side_idle_share: tuple[float, float] | None = None
    # added by the statistics (issue 6): the same assumption for GPU idle, in % of the *cycle*
    # time (idle is the remainder of the cycle and moves with it); None: run_cv_pct
    idle_run_cv_pct: float | None = None
    # the unit of a row (grouping.py): kernel, family, op (launching framework op) or module
    by: str = "kernel"

    def side_cv(self, side: int) -> float:
        """The run-to-run CV (a fraction) assumed for side ``side`` (0 normal, 1 abnormal)
        when it is one run."""
        pct = self.run_cv_pct if self.side_run_cv_pct is None else self.side_run_cv_pct[side]
        return pct / 100.0


@dataclass(frozen=True)
class SideSummary:
    """One side (normal or abnormal) of the comparison."""

    label: str  # "normal" / "abnormal" (or user-given)
    source: str  # path of the input
    n_runs: int
    n_cycles: int  # measured (non-warm-up) cycles
    cycle_ms_mean: float
    cycle_ms_median: float
    cycle_ms_desc: tuple[float, ...]  # cycle durations sorted longest first (rank table)
    cycle_definition: str  # anchor / cycle marker, e.g. "Scheduler.run_batch" or "gpt-infer step"
    workload: str
    environment: tuple[tuple[str, str], ...] = ()  # ordered (key, value): GPU, driver, CUDA, ...


@dataclass(frozen=True)
class CycleTimeChange:
    """Section 1: the change of mean cycle time, with a 95 % bootstrap interval."""

    comparable: bool  # False when the two sides' cycles were cut differently
    delta_ms: float
    delta_pct: float
    ci_low_pct: float
    ci_high_pct: float
    p_value: float
    verdict: Verdict


@dataclass(frozen=True)
class MetricRow:
    """One (function, metric, device, pid) row of the detailed comparison table.

    ``cycle_share_*`` is LatencyPrism's β and ``metric_mean_*`` its μ; the report prints those
    symbols and ``--format json`` keeps the names ``beta_*`` / ``mu_*``
    (:data:`perfdiff.report.json_report.JSON_KEY_OF_FIELD`).
    """

    function: str  # full (demangled) name; renderers shorten, JSON keeps it
    func_type: str  # "kernel", "idle", "memcpy", "memset", or an imported type ("oncpu", ...)
    metric: str  # "" when the function has no metric samples
    device: str  # "GPU 0", "Host", ...
    pid: int | None
    cycle_share_pct_normal: float  # mean share of cycle time, %
    cycle_share_pct_abnormal: float
    delta_cycle_share_pp: float  # percentage points
    z_cycle_share: float
    p_cycle_share: float  # Welch t-test
    u_p_cycle_share: float  # Mann-Whitney U
    metric_mean_normal: float  # time-weighted mean of the metric while the function ran (unit
    # of the metric; seed-compatible mode: LatencyPrism's x100 convention)
    metric_mean_abnormal: float
    delta_metric_mean: float
    z_metric_mean: float
    z_log_metric_mean: float
    p_metric_mean: float
    u_p_metric_mean: float
    suspicion: float  # |Δβ| · (|Z(β)| + |Z(log μ)|)
    q_value: float  # Benjamini-Hochberg across the report's tests
    time_ms_normal: float  # mean time in the function per cycle
    time_ms_abnormal: float
    time_delta_ms: float
    time_ci_low_ms: float  # 95 % bootstrap interval of time_delta_ms
    time_ci_high_ms: float
    verdict: Verdict
    n_normal: int  # samples behind the tests (runs, batches or cycles: see Comparison.test_unit)
    n_abnormal: int
    # added by the statistics: Welch p of time per cycle (the test behind q_value when cycle
    # times are comparable; otherwise q_value comes from p_cycle_share)
    p_time: float = float("nan")


@dataclass(frozen=True)
class MetricMove:
    """A metric change that moved with a finding (key-findings prose)."""

    metric: str
    metric_mean_normal: float
    metric_mean_abnormal: float
    p_value: float


@dataclass(frozen=True)
class Finding:
    """A key finding: a function whose time changed, and the metrics that moved with it."""

    function: str
    device: str
    pid: int | None
    verdict: Verdict
    cycle_share_pct_normal: float
    cycle_share_pct_abnormal: float
    delta_cycle_share_pp: float
    time_ms_normal: float
    time_ms_abnormal: float
    time_delta_ms: float
    time_ci_low_ms: float
    time_ci_high_ms: float
    p_value: float
    q_value: float
    metric_moves: tuple[MetricMove, ...]


@dataclass(frozen=True)
class InventoryChange:
    """A function present on one side only (section 4), never zero-filled into the stats."""

    function: str
    device: str
    pid: int | None
    change: Literal["appeared", "vanished"]
    time_ms_per_cycle: float  # on the side where it exists
    launches_per_cycle: float  # NaN when unknown (imported data)


@dataclass(frozen=True)
class LaunchChange:
    """A function launched a different number of times per cycle (``launch_changes.py``)."""

    function: str
    device: str
    pid: int | None
    launches_normal: float  # mean launches per measured cycle
    launches_abnormal: float
    time_ms_normal: float  # mean time per cycle
    time_ms_abnormal: float


@dataclass(frozen=True)
class DeviceSummary:
    """Per-device summary: which GPU departs from the others (multi-GPU inputs)."""

    device: str
    pid: int | None
    busy_ms_normal: float  # kernel time per cycle
    busy_ms_abnormal: float
    delta_pct: float
    verdict: Verdict
    # added for the figures (issue 17): 95 % bootstrap interval of delta_pct (NaN: not defined)
    ci_low_pct: float = float("nan")
    ci_high_pct: float = float("nan")


@dataclass(frozen=True)
class Comparison:
    """Everything a report shows. Rows are ranked so that findings come first."""

    normal: SideSummary
    abnormal: SideSummary
    cycle_time: CycleTimeChange
    rows: tuple[MetricRow, ...]
    findings: tuple[Finding, ...]
    inventory: tuple[InventoryChange, ...]
    devices: tuple[DeviceSummary, ...]
    test_unit: TestUnit
    options: CompareOptions
    mde_pct: float  # minimum detectable change of a function's time, % of cycle time (NaN: n/a)
    notes: tuple[str, ...] = field(default=())  # warnings shown at the top of the report
    # functions launched more or fewer times per cycle (comparable cycles only)
    launch_changes: tuple[LaunchChange, ...] = field(default=())
    # added by issue 23: kernels replaced by others, and the split of the cycle-time change
    replacements: tuple[Replacement, ...] = field(default=())
    headline: Headline | None = None
    # with few cycles per side (``few_cycles.FEW_CYCLES``): the changes, largest first,
    # described instead of tested; empty otherwise
    described: tuple[DescribedChange, ...] = field(default=())
    # what a row is (``grouping.py``): "kernel", or the group of kernels "family", "op",
    # "module" (rows then name the group, and there are no family or replaced rows)
    by: str = "kernel"


@dataclass(frozen=True)
class ReplacementMember:
    """Kernels that took each other's place (``alignment.Replaced``), and how often per cycle."""

    before: tuple[str, ...]  # normal side, launch order
    after: tuple[str, ...]  # abnormal side
    per_cycle: float  # mean occurrences per measured cycle (both sides' alignments averaged)


@dataclass(frozen=True)
class Replacement:
    """Kernels replaced by others in nearly every cycle (``replacements.py``).

    ``function`` names the pseudo-function row that carries its statistics (time per cycle,
    interval, q, verdict) in :attr:`Comparison.rows`.
    """

    function: str
    found_pct_normal: float  # share of measured cycles in which it was found, %
    found_pct_abnormal: float
    launches_normal: float  # kernels replaced per cycle (normal) and replacing (abnormal)
    launches_abnormal: float
    members: tuple[ReplacementMember, ...]  # largest first, at most a few
    n_members: int  # distinct member pairs or groups in all


@dataclass(frozen=True)
class HeadlinePart:
    """One part of the cycle-time change (``headline.py``)."""

    label: str  # "GEMM", "GPU idle", "kernel overlap", ...
    kind: Literal["family", "idle", "overlap", "host"]
    ms_normal: float  # mean per cycle
    ms_abnormal: float
    delta_ms: float
    replaced_delta_ms: float = 0.0  # the part of delta_ms in replaced kernels (families)
    detail_normal: str = ""  # precision/engine mix: "bf16 tensor core 97 %"
    detail_abnormal: str = ""


@dataclass(frozen=True)
class Headline:
    """The change of mean cycle time split into parts that sum to it."""

    device: str
    pid: int | None
    cycle_ms_normal: float
    cycle_ms_abnormal: float
    delta_ms: float
    gpu_work_delta_ms: float  # sum of the family parts (kernel + copy time)
    gpu_work_ms_normal: float
    gpu_work_ms_abnormal: float
    parts: tuple[HeadlinePart, ...]  # largest |delta| first
    host_bound: bool  # GPU idle >= half of the cycle on a side
    traced: bool  # an input is a trace or traced cycles: tracing inflates host time
    # the processes whose cycles the split pools, each on its busiest device, as the
    # comparison's mean cycle time pools them (several: ``pid`` is None, ``device`` names the
    # devices)
    pids: tuple[int, ...] = ()

    @property
    def processes(self) -> int:
        return max(1, len(self.pids))


@dataclass(frozen=True)
class DescribedChange:
    """A change of time per cycle described, not tested (few cycles: ``few_cycles.py``)."""

    function: str
    device: str
    pid: int | None
    func_type: str  # "kernel", "family", "replaced", "idle", ...
    change: Literal["slower", "faster", "appeared", "vanished"]
    time_ms_normal: float  # mean per cycle (0 on the side where it does not exist)
    time_ms_abnormal: float
    delta_ms: float
