"""What the collector cost this run, from its own untraced cycles; and its holds per cycle.

Why: the collector leaves some measured cycles untraced (``perfdiff.collect.cycles.overhead``; how
many: ``untraced_schedule.py``), so each run file carries cycle times with and without
tracing, from the same process. Each timed untraced cycle is set against the traced cycles
next to it (``_pairs``); the overhead is the median of those ratios - 1, with a 95 %
bootstrap interval (percentile, 2,000 resamples of the untraced cycles, fixed seed: the
report is deterministic). Beside it, the share of cycles traced and the whole-run cost it
adds up to (``untraced_schedule`` in the run file); without untraced cycles, one line saying
that cycle time is traced time, and why. Statements about this run, printed beside the
comparison, never findings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfdiff.analysis.untraced_time import timed_untraced
from perfdiff.schema.model import CycleTable, RunFile

HOLD_WARN_NS = 1_000_000
MIN_FOR_INTERVAL = 3  # untraced cycles a bootstrap interval needs to mean anything
_RESAMPLES = 2_000


@dataclass(frozen=True)
class SelfOverhead:
    """Traced vs untraced cycle time of one run file (all its runs pooled)."""

    traced_median_ms: float
    untraced_median_ms: float
    overhead_pct: float
    low_pct: float
    high_pct: float
    traced_cycles: int
    untraced_cycles: int


NEIGHBOURS = 2  # traced cycles taken on each side of an untraced one


def _pairs(run_file: RunFile) -> tuple[np.ndarray, np.ndarray, int]:
    """Per timed untraced cycle (``untraced_time.timed_untraced``; every untraced cycle in
    run files of single ones): its duration and the median duration of the traced measured
    cycles next to it (up to NEIGHBOURS on each side, in time order, same run); and the
    number of traced measured cycles.

    Why neighbours, not all traced cycles: the host's speed drifts within a run (on the lent
    H100 VM the same step ran up to 2x slower from one second to the next), and a traced
    cycle next to an untraced one saw the same machine.
    """
    untraced: list[float] = []
    near: list[float] = []
    traced_total = 0
    for run in run_file.runs:
        c = run.cycles
        if c.traced is None:
            continue
        order = np.argsort(np.asarray(c.start_ns), kind="stable")
        dur = (np.asarray(c.end_ns) - np.asarray(c.start_ns))[order].astype(np.float64)
        flags = np.asarray(c.traced)[order]
        measured = ~np.asarray(c.warmup, dtype=bool)[order]
        is_traced = (flags == 1) & measured
        traced_total += int(is_traced.sum())
        traced_at = np.flatnonzero(is_traced)
        # runs of two (collect/cycles/overhead.py): only the timed one of each run, not its lead-in
        timed = timed_untraced(c)[order]
        for i in np.flatnonzero(timed if timed.any() else flags == 0).tolist():
            cut = int(np.searchsorted(traced_at, i))
            side = np.concatenate([traced_at[max(0, cut - NEIGHBOURS):cut],
                                   traced_at[cut:cut + NEIGHBOURS]])
            if side.size:
                untraced.append(float(dur[i]))
                near.append(float(np.median(dur[side])))
    return np.asarray(untraced), np.asarray(near), traced_total


def self_overhead(run_file: RunFile) -> SelfOverhead | None:
    """The run's self-measured overhead, or None without untraced (or traced) cycles.

    The figure is the median over untraced cycles of (their traced neighbours' median /
    the untraced cycle) - 1, its interval a percentile bootstrap over the untraced cycles."""
    untraced, near, traced_total = _pairs(run_file)
    if untraced.size == 0 or traced_total == 0:
        return None
    ratios = near / np.maximum(untraced, 1.0)
    rng = np.random.default_rng(0)
    boot = 100 * (np.median(rng.choice(ratios, (_RESAMPLES, ratios.size)), axis=1) - 1)
    return SelfOverhead(
        traced_median_ms=float(np.median(near)) / 1e6,
        untraced_median_ms=float(np.median(untraced)) / 1e6,
        overhead_pct=100 * (float(np.median(ratios)) - 1),
        low_pct=float(np.percentile(boot, 2.5)), high_pct=float(np.percentile(boot, 97.5)),
        traced_cycles=traced_total, untraced_cycles=int(untraced.size),
    )


def self_overhead_notes(run_file: RunFile, source: str) -> list[str]:
    """Report lines: the self-measured overhead, and measured cycles the collector held the
    interpreter in for more than 1 ms."""
    notes = []
    found = self_overhead(run_file)
    if found is not None:
        notes.append(
            f"{source}: perfdiff's tracing overhead on this run {found.overhead_pct:+.1f} % "
            f"({_interval_text(found)}): median cycle "
            f"{found.traced_median_ms:.3f} ms traced vs {found.untraced_median_ms:.3f} ms in "
            f"{found.untraced_cycles} untraced cycle(s) ({found.traced_cycles} traced); "
            f"{_what_it_covers(run_file)}{_between_cycles(run_file)}"
        )
        notes.extend(_schedule_note(run_file, source))
    else:
        notes.extend(_traced_time_note(run_file, source))
    held = 0
    longest = 0
    for run in run_file.runs:
        c = run.cycles
        over = held_cycles(c)
        if over is None:
            continue
        held += int(over.sum())
        hold = np.asarray(c.hold_ns)[~np.asarray(c.warmup, dtype=bool)]
        longest = max(longest, int(hold.max()) if hold.size else 0)
    if held:
        notes.append(f"{source}: perfdiff held the interpreter for more than 1 ms inside "
                     f"{held} measured cycle(s) (up to {longest / 1e6:.1f} ms), which those "
                     "cycles include")
    return notes


def _interval_text(found: SelfOverhead) -> str:
    """The figure's 95 % interval, or why there is none: a bootstrap over one or two untraced
    cycles repeats them and would print a zero-width interval (recordings of single untraced
    cycles, before runs of two, have one or two timed against their neighbours)."""
    if found.untraced_cycles < MIN_FOR_INTERVAL:
        return (f"{found.untraced_cycles} untraced cycle(s): too few for an interval")
    return f"95 % interval {found.low_pct:+.1f} to {found.high_pct:+.1f} %"


_SCHEDULE_NUMBERS = ("traced_share", "measured_cycles", "traced_cost_ratio",
                     "traced_cost_ratio_low", "traced_cost_ratio_high", "expected_cost")


def _schedules(params: dict[str, object]) -> list[dict[str, object]]:
    """Every run's schedule: one dict, or a list of them where runs were merged (``merge``
    keeps each input's, nested where merged files were merged again)."""
    out: list[dict[str, object]] = []
    waiting: list[object] = [params.get("untraced_schedule")]
    while waiting:
        value = waiting.pop(0)
        if isinstance(value, dict):
            out.append(value)
        elif isinstance(value, list):
            waiting.extend(value)
    return out


def _numbers(schedule: dict[str, object]) -> tuple[float, ...] | None:
    """(share, measured cycles, ratio, low, high, whole-run cost), or None before both kinds
    of cycle were timed (nothing measured to say)."""
    found = [v for v in (schedule.get(key) for key in _SCHEDULE_NUMBERS)
             if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return tuple(float(v) for v in found) if len(found) == len(_SCHEDULE_NUMBERS) else None


def _why_chosen(schedule: dict[str, object], cost: float) -> str:
    target = schedule.get("cost_target")
    chosen = str(schedule.get("chosen_by", ""))
    if isinstance(target, (int, float)) and chosen == "cost target":
        why = f"chosen while it ran to keep the whole run within {target:.2f} x its untraced time"
        floor = schedule.get("floor_bound_stretches")
        if isinstance(floor, int) and floor > 0 and cost > target:
            why += (f"; out of reach: {floor} traced stretch(es) were kept anyway, so that the "
                    "kernel statistics have samples")
        return why
    if isinstance(target, (int, float)) and chosen.startswith("ranks in lock-step"):
        return (f"{chosen}: a fixed pattern, so that the ranks of the job switch at the same "
                f"cycles, for a target of {target:.2f} x")
    return f"fixed by {chosen}" if chosen else "fixed"


# What "untraced" leaves on, said wherever the whole-run cost is stated against the untraced
# cycles: CUPTI stays attached with its recording off, and on the lent H200 that alone made
# host-bound steps 4-18 % slower than the program run without perfdiff (CUDA-graph replays,
# ResNet-50 AMP, 2026-11-28: bench/README.md, "What an untraced cycle still costs").
UNTRACED_IS_NOT_BARE = ("untraced cycles still run with CUPTI attached, which made steps "
                        "that wait on the host up to ~18 % slower than the program without "
                        "perfdiff (docs/explanation/untraced-cycles.md)")
# ... and where CUPTI was detached in them (--detach-untraced): that cost is gone, the rest of
# the collector (its Python hooks, the samplers) is not (H100, 2026-12-07: timm ViT-S bf16
# untraced steps 42.1-42.3 ms against 36.3-39.8 ms bare on a slow host).
UNTRACED_DETACHED = ("CUPTI was detached in the untraced cycles; perfdiff's own hooks and "
                     "samplers still ran in them (docs/explanation/untraced-cycles.md)")


def _untraced_caveat(run_file: RunFile) -> str:
    """What the untraced cycles still carried: which of the two notes above applies."""
    paused = run_file.workload.params.get("untraced_pause")
    detached = isinstance(paused, list) and "cupti_detached" in paused
    return UNTRACED_DETACHED if detached else UNTRACED_IS_NOT_BARE


def _schedule_note(run_file: RunFile, source: str) -> list[str]:
    """How many cycles were traced and why (``untraced_schedule`` in the workload params,
    written by ``collect/cycles/untraced_schedule.py``): the share, what a traced cycle cost against
    an untraced one while the program ran, and the whole-run cost they add up to against the
    target; for several runs (ranks, ``--runs``), their ranges. Why: the overhead figure is
    per traced cycle; what the user's program paid over the whole run is that figure times
    the share, and the share was chosen for it."""
    measured = [(schedule, numbers) for schedule in _schedules(run_file.workload.params)
                if (numbers := _numbers(schedule)) is not None]
    if not measured:
        return []
    if len(measured) == 1:
        schedule, (share, cycles, ratio, low, high, cost) = measured[0]
        switch = schedule.get("switch_ms")
        switch_text = (f", switching tracing off and on {switch:.2f} ms"
                       if isinstance(switch, (int, float)) and switch > 0 else "")
        return [f"{source}: {100 * share:.0f} % of {cycles:.0f} measured cycles traced "
                f"({_why_chosen(schedule, cost)}): a traced cycle took {ratio:.2f} x an "
                f"untraced one (95 % interval {low:.2f} to {high:.2f}){switch_text}, so the "
                f"whole run cost about {cost:.2f} x the program's untraced time; "
                f"{_untraced_caveat(run_file)}"]
    shares = [100 * n[0] for _, n in measured]
    ratios = [n[2] for _, n in measured]
    costs = [n[5] for _, n in measured]
    return [f"{source}: {len(measured)} runs, {_span(shares, '.0f')} % of their measured cycles "
            f"traced ({_why_chosen(measured[0][0], max(costs))}): a traced cycle took "
            f"{_span(ratios, '.2f')} x an untraced one, so each run cost about "
            f"{_span(costs, '.2f')} x its untraced time; {_untraced_caveat(run_file)}"]


def _span(values: list[float], spec: str) -> str:
    """``low-high``, or one value where both print the same."""
    low, high = format(min(values), spec), format(max(values), spec)
    return low if low == high else f"{low}-{high}"


def _traced_time_note(run_file: RunFile, source: str) -> list[str]:
    """For a recording with no untraced cycle to measure against: one line saying that cycle
    time is traced time, and why. Why: such a report would otherwise state no cost at all, and
    a host-bound program's traced cycles ran +45-59 % (issue 28). Traces of other tools
    (``source_format``) get :func:`other_tool_cost_note` instead."""
    params = run_file.workload.params
    source_format = params.get("source_format")
    if isinstance(source_format, str):
        return [other_tool_cost_note(source, source_format)]
    if "source_format" in params or not run_file.runs:
        return []
    cut = str(params.get("cycles_from", ""))
    if cut.startswith("detected period"):
        why = "its cycles were found after the run (the period of the launch sequence)"
    elif cut.startswith("fixed ") and cut.endswith(" windows"):
        why = f"its cycles are {cut}"
    else:
        return [f"{source}: {_why_all_traced(params.get('untraced_schedule'))}, so cycle time "
                "is traced time and includes perfdiff's cost on the host, which this run does "
                "not measure"]
    return [f"{source}: {why}, so none could be left untraced: cycle time is traced time and "
            "includes perfdiff's cost on the host; cut cycles while the program runs "
            "(--cycle-function, --cycle-range or perfdiff.cycle()) to have it measured without "
            "tracing"]


def other_tool_cost_note(source: str, tool: str) -> str:
    """For an input another tool recorded (a torch.profiler trace, an Nsight Systems export, a
    LatencyPrism folder): one line saying that its cycle time is that tool's traced time.

    Why: perfdiff's own recordings state the collector's cost (or that cycle time is traced
    time); a trace holds no untraced cycle, so the tool's cost on the host is inside every
    cycle and nothing in the file measures it (torch.profiler's traced steps of timm ViT-S
    ran +58-73 % over its bare steps, issue 28): without the line such a report would state
    no cost at all.
    """
    return (f"{source} ({tool}): cycle time was measured under that tool's tracing, whose cost "
            "on the program perfdiff cannot see; record the program with perfdiff collect to "
            "have its cycle time measured untraced")


def _why_all_traced(schedule: object) -> str:
    """Why a recording cut while it ran has no untraced cycle to measure against, from what
    the collector recorded (``untraced_schedule``); recordings before it say nothing, so
    the line names the possible reasons."""
    chosen = schedule.get("chosen_by") if isinstance(schedule, dict) else None
    if isinstance(chosen, str) and chosen.startswith("off: "):
        return f"every measured cycle was traced ({chosen[5:]})"
    measured = schedule.get("measured_cycles") if isinstance(schedule, dict) else None
    if isinstance(measured, int) and isinstance(schedule, dict):
        timed = schedule.get("timed_untraced_cycles")
        busy = schedule.get("traced_while_sampler_busy")
        if isinstance(busy, int) and busy > 0 and not timed:
            return (f"{busy} of its {busy + measured} measured cycles began while PM sampling "
                    "was decoding its samples and stayed traced (with --detach-untraced an "
                    "untraced run waits for a decode to end; a longer --sample-interval-ns, "
                    f"--no-pm or CUPTI left attached leaves room for untraced cycles), and "
                    f"{_asked(measured)}")
        if schedule.get("traced_cycles") == measured:
            return (f"all {measured} measured cycles were traced (too few for an untraced run: "
                    "the first 6 are always traced; run more steps)")
        if timed == 0:
            return (f"no untraced cycle of its {measured} measured cycles was timed (too few "
                    "for a lead-in and a timed one; run more steps)")
    return ("every measured cycle was traced (recorded with --untraced-every 0, or by "
            "perfdiff before it left cycles of this kind untraced)")


def _asked(measured: int) -> str:
    """What became of the measured cycles the schedule was asked about."""
    if measured == 0:
        return "the schedule was asked about none"
    if measured <= 6:
        which = "the one asked about was" if measured == 1 else f"the {measured} asked about were"
        return f"{which} traced too (the first 6 asked are always traced)"
    return f"the {measured} asked about gave no timed untraced cycle"


def _what_it_covers(run_file: RunFile) -> str:
    """Which of the collector's costs the figure holds: recordings since the samplers pause
    in untraced cycles name what was paused in ``untraced_pause``; older ones paused only the
    activity, so their samplers ran in both kinds of cycle."""
    paused = run_file.workload.params.get("untraced_pause")
    paused = paused if isinstance(paused, list) else []
    sampled = [s for s in run_file.collection.sources if s != "cupti_activity"]
    if not sampled:
        return "no PM or NVML sampler ran"
    label = {"pm_sampling": "PM sampling", "nvml": "NVML sampling"}
    running = [label.get(s, s) for s in sampled if s not in paused]
    if not running:
        return (f"{' and '.join(label.get(s, s) for s in sampled)} paused in the untraced "
                "cycles too: the whole collector's cost")
    return (f"{' and '.join(running)} ran in both, so "
            f"{'its' if len(running) == 1 else 'their'} cost is not in this figure")


def _between_cycles(run_file: RunFile) -> str:
    """The decoding perfdiff did between cycles (``intake_between_cycles_ms``), per cycle:
    outside every cycle, so in no cycle time and not in the figure, but the program's wall
    time holds it."""
    total = run_file.workload.params.get("intake_between_cycles_ms")
    cycles = sum(int(run.cycles.index.size) for run in run_file.runs)
    if not isinstance(total, (int, float)) or total <= 0 or cycles == 0:
        return ""
    return (f"; between cycles perfdiff also spent {total / cycles:.2f} ms per cycle decoding "
            "CUPTI's records, which no cycle time holds")


def held_cycles(cycles: CycleTable) -> np.ndarray | None:
    """Per cycle: did the collector hold the interpreter inside it for more than 1 ms?

    One rule for the report's note (``self_overhead_notes``) and the cycles figure
    (``figure_data``), so the figure marks exactly the cycles the note counts: measured ones
    only. None when the run file has no ``hold_ns`` (before schema 1.3).
    """
    if cycles.hold_ns is None:
        return None
    measured = ~np.asarray(cycles.warmup, dtype=bool)
    held: np.ndarray = (np.asarray(cycles.hold_ns) > HOLD_WARN_NS) & measured
    return held


__all__ = ["HOLD_WARN_NS", "SelfOverhead", "held_cycles", "other_tool_cost_note", "self_overhead",
           "self_overhead_notes"]
