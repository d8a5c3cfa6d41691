"""Key findings and the order of the detailed table.

Why separate: what a report says first is a decision of its own (which changes lead, which
metric moves go with them), not a statistic; keeping it here keeps ``comparison`` about numbers.
"""

from __future__ import annotations

import numpy as np

from perfdiff.analysis import columns as C
from perfdiff.analysis.collectives import is_collective
from perfdiff.analysis.families import family_of
from perfdiff.analysis.family_rules import FAMILY_RULES
from perfdiff.analysis.model import (
    CompareOptions,
    CycleTimeChange,
    Finding,
    Headline,
    MetricMove,
    MetricRow,
)
from perfdiff.analysis.stats import bh_qvalues

CHANGE: frozenset[str] = frozenset({"slower", "faster"})
FAMILY_LABELS: frozenset[str] = frozenset(f"[{family}]" for family, _ in FAMILY_RULES)
MIN_METRIC_MOVE_REL = 0.01  # a μ move smaller than 1 % of its baseline is not worth a sentence


def abs0(value: float) -> float:
    """|value|, with NaN (undefined) counting as 0 in scores."""
    return abs(value) if np.isfinite(value) else 0.0


def primary_change(row: MetricRow) -> float:
    """The change verdicts are about: time per cycle, or β when cycles are not comparable."""
    return row.time_delta_ms if np.isfinite(row.time_delta_ms) else row.delta_cycle_share_pp


def key_findings(
    rows: list[MetricRow],
    opts: CompareOptions,
    comparable: bool,
    cycle_time: CycleTimeChange,
) -> list[Finding]:
    """Key findings, each with the μ moves that went with it.

    Comparable cycles: every function whose time changed, largest change first; when none did
    but the cycle time did (many kernels each a little slower), the significant contributors in
    the cycle's direction, so the report still says where the time went. Cycles cut
    differently: time and even β are not comparable (β is a share of another kind of cycle), but
    μ is (the metric while the function ran), so the findings are the functions whose metrics
    moved, ranked by share x |relative μ change|.
    """
    by_fn: dict[tuple[int | None, str, str], list[MetricRow]] = {}
    for row in rows:
        by_fn.setdefault((row.pid, row.device, row.function), []).append(row)
    q_metric_mean = bh_qvalues(np.asarray([r.p_metric_mean for r in rows], dtype=np.float64))
    q_of = {id(r): float(q) for r, q in zip(rows, q_metric_mean, strict=True)}
    moves_of = {
        key: sorted(
            (m for m in fn_rows if _moved(m, q_of[id(m)], opts.alpha)),
            key=lambda m: (is_device_state(m.metric), -abs(log_change(m)), m.metric),
        )
        for key, fn_rows in by_fn.items()
    }
    if comparable:
        heads = {k: v[0] for k, v in by_fn.items() if v[0].verdict in CHANGE}
        if not heads and cycle_time.verdict in CHANGE:
            direction = np.sign(cycle_time.delta_ms)
            heads = {
                k: v[0]
                for k, v in by_fn.items()
                if np.isfinite(v[0].q_value)
                and v[0].q_value < opts.alpha
                and np.sign(primary_change(v[0])) == direction
            }
        weight = {k: abs(primary_change(r)) for k, r in heads.items()}
    else:
        heads = {k: v[0] for k, v in by_fn.items() if moves_of[k]}
        weight = {
            k: (r.cycle_share_pct_normal + r.cycle_share_pct_abnormal)
            / 200.0
            * abs(log_change(moves_of[k][0]))
            for k, r in heads.items()
        }
    # With several devices, a collective that grew is usually a fast rank waiting for the
    # straggler: it comes after the compute kernels that changed (collectives.py).
    several = len({key[1] for key in by_fn}) > 1
    ordered = sorted(
        heads.items(),
        key=lambda kv: (several and is_collective(kv[0][2]), -weight[kv[0]], kv[0][2], kv[0][1]),
    )
    findings = []
    for key, row in ordered:
        moves = moves_of[key]
        findings.append(
            finding_of(
                row,
                p_value=row.p_time if np.isfinite(row.time_delta_ms) else row.p_cycle_share,
                moves=[
                    MetricMove(
                        m.metric, m.metric_mean_normal, m.metric_mean_abnormal, m.p_metric_mean
                    )
                    for m in moves
                ],
            )
        )
    return specific_first(findings)[: max(0, opts.top)]


# a kernel whose change is at least this share of its family's change is what the family
# finding is about: it comes first (the more specific name)
MEMBER_EXPLAINS = 0.8


def specific_first(findings: list[Finding]) -> list[Finding]:
    """A family finding (``[GEMM]``) after the kernel of that family that explains most of it.

    Why: a family row sums its kernels, so one kernel that slowed makes its family slow by as
    much; the kernel's name says more. The family leads only when no single kernel explains
    it (a precision change that swapped all GEMMs, many kernels each a little slower).
    """
    out = list(findings)
    for family_finding in [f for f in findings if f.function in FAMILY_LABELS]:
        family = family_finding.function[1:-1]
        delta = family_finding.time_delta_ms if np.isfinite(family_finding.time_delta_ms) \
            else family_finding.delta_cycle_share_pp
        at = out.index(family_finding)
        for member in out[at + 1:]:
            change = member.time_delta_ms if np.isfinite(member.time_delta_ms) \
                else member.delta_cycle_share_pp
            if (member.device == family_finding.device and member.pid == family_finding.pid
                    and not member.function.startswith("[")
                    and family_of(member.function) == family
                    and change * delta > 0 and abs(change) >= MEMBER_EXPLAINS * abs(delta)):
                out.remove(member)
                out.insert(at, member)
                break
    return out


def lead_with_gpu_work(findings: list[Finding], split: Headline | None) -> list[Finding]:
    """Never lead with ``[GPU idle]`` alone when the GPU's work moved more.

    Why: GPU idle is the host's part of the cycle, and under tracing it holds the recording's
    own cost per launch; when the GPU's work per cycle changed by more than idle did, that
    change is what the program did, so the first finding is the largest change of work
    (a family, a replaced group or a kernel) and idle comes after it.
    """
    if split is None or len(findings) < 2 or findings[0].function != C.IDLE_FUNCTION:
        return findings
    if not idle_leads(split):
        return [findings[1], findings[0], *findings[2:]]
    return findings


def idle_leads(split: Headline) -> bool:
    """May ``[GPU idle]`` be the first finding? Not under tracing of a host-bound cycle (the
    recording's own host cost is in it), nor when the GPU's work moved more than idle did."""
    if split.traced and split.host_bound:
        return False
    idle_delta = next((p.delta_ms for p in split.parts if p.kind == "idle"), 0.0)
    return abs(idle_delta) > abs(split.gpu_work_delta_ms)


def finding_of(row: MetricRow, *, p_value: float, moves: list[MetricMove]) -> Finding:
    """A key finding from the head row of its function (default and seed-compatible modes)."""
    return Finding(
        function=row.function,
        device=row.device,
        pid=row.pid,
        verdict=row.verdict,
        cycle_share_pct_normal=row.cycle_share_pct_normal,
        cycle_share_pct_abnormal=row.cycle_share_pct_abnormal,
        delta_cycle_share_pp=row.delta_cycle_share_pp,
        time_ms_normal=row.time_ms_normal,
        time_ms_abnormal=row.time_ms_abnormal,
        time_delta_ms=row.time_delta_ms,
        time_ci_low_ms=row.time_ci_low_ms,
        time_ci_high_ms=row.time_ci_high_ms,
        p_value=p_value,
        q_value=row.q_value,
        metric_moves=tuple(moves),
    )


def is_device_state(metric: str) -> bool:
    """NVML quantities (clocks, power, temperature, throttle reasons, memory used).

    Why they come after the others in a finding's list of moves: NVML is sampled every few
    milliseconds for the whole device, so it moves alike for every kernel of the run; the
    PM-sampled metrics (tensor pipes, DRAM) are resolved to the time each kernel ran, and
    name the resource that kernel used.
    """
    return metric.startswith("nvml.")


def log_change(row: MetricRow) -> float:
    """log(μ_abnormal / μ_normal), with a small offset so that 0 -> x stays finite."""
    a, b = abs(row.metric_mean_normal), abs(row.metric_mean_abnormal)
    if not (np.isfinite(a) and np.isfinite(b)):
        return 0.0
    eps = 1e-3 * max(a, b, 1e-300)
    return float(np.log((b + eps) / (a + eps)))


def _moved(row: MetricRow, q_metric_mean: float, alpha: float) -> bool:
    """A metric moved with a finding: significant (or exact) and not negligibly small."""
    if not row.metric or not np.isfinite(row.delta_metric_mean):
        return False
    base = max(abs(row.metric_mean_normal), abs(row.metric_mean_abnormal), 1e-12)
    if abs(row.delta_metric_mean) / base < MIN_METRIC_MOVE_REL:
        return False
    if np.isfinite(q_metric_mean):
        return q_metric_mean < alpha
    return not np.isfinite(row.p_metric_mean) and row.n_normal >= 2 and row.n_abnormal >= 2


def rank_rows(rows: list[MetricRow], findings: list[Finding]) -> list[MetricRow]:
    """Findings first (in key-finding order), then every other row by suspicion score."""
    order = {(f.pid, f.device, f.function): i for i, f in enumerate(findings)}
    changed = {
        (r.pid, r.device, r.function): abs(primary_change(r)) for r in rows if r.verdict in CHANGE
    }

    def key(r: MetricRow) -> tuple[int, float, float, float, str, str, str]:
        fk = (r.pid, r.device, r.function)
        group = 0 if fk in order else (1 if fk in changed else 2)
        return (
            group,
            order.get(fk, 0) if group == 0 else -changed.get(fk, 0.0),
            -abs0(r.suspicion),
            -abs0(r.z_log_metric_mean),
            r.function,
            r.device,
            r.metric,
        )

    return sorted(rows, key=key)
