"""Untraced cycles against the program's own timer, and recorded against bare processes.

Why: issue 28, item 1. A recorded process's untraced cycles must last what the program's own
timer (steptimer.py, printed as ``STEPTIMER {json}``) says the same steps lasted, within 2 %
(median): a check inside one process, free of the host's drift between processes. The
whole-run cost is the recorded processes' timer median over the bare processes'.

Which timer step a cycle is: an optimizer-step cycle starts in perfdiff's post-step hook,
which runs just before the program's own (registered earlier), and a ``--cycle-range step``
cycle is the NVTX range the program's timer closes, so cycle index i is step_ms[i]. A found
function's cycles (GPT-2 ``generate``) begin only once the function is found, some calls into
the run, and those cut before a move up are left out (found_function.py): cycle index i is
step_ms[i + k] for a k nobody wrote down. :func:`aligned_offset` finds k from the durations'
*shape*: with the right k, a cycle and its step are the same call timed twice, so their log
ratio is one constant per kind (traced, untraced) up to the boundaries' few microseconds;
with a wrong k it carries the call-to-call scatter (about +-15 % for ``generate``). The
constants are fitted per k, so the level being checked (untraced vs timer) does not choose
k. Every row reports its k: 0 for optimizer-step and NVTX cycles is a check of the method.

Usage: python bench/record_truth/untraced_check.py DIR [--json OUT]
  DIR holds NAME-rR.json.gz (recorded) with NAME-rR.json.gz.log (its output) and
  NAME-rR-bare.log (the bare process of the same round), as scripts/gpu/issue28.sh writes.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
from typing import Any

import numpy as np

from perfdiff.analysis.untraced_time import timed_untraced
from perfdiff.schema.io import load_run_file


def timer_of(log: str) -> dict[str, Any] | None:
    """The STEPTIMER summary a program printed, or None."""
    if not os.path.exists(log):
        return None
    with open(log, errors="replace") as fh:
        for line in fh:
            if line.startswith("STEPTIMER "):  # raw_decode: another rank's line may follow
                parsed: dict[str, Any] = json.JSONDecoder().raw_decode(
                    line[len("STEPTIMER "):])[0]
                return parsed
    return None


MIN_OVERLAP = 8  # cycles a shift must line up with timer steps to be considered


def aligned_offset(dur_ms: np.ndarray, traced: np.ndarray, idx: np.ndarray,
                   steps_ms: np.ndarray) -> tuple[int, float | None]:
    """The shift k lining cycle ``idx[i]`` up with timer step ``idx[i] + k`` (module
    docstring), and how clear it is: the best shift's scatter over the second best's (None
    with one candidate). Scatter: the median absolute log ratio left once each kind's
    median is taken out. 0 where no shift overlaps ``MIN_OVERLAP`` cycles."""
    usable = (dur_ms > 0) & np.isfinite(dur_ms)
    d, tr, ix = np.log(dur_ms[usable]), traced[usable], idx[usable]
    need = min(MIN_OVERLAP, d.size)
    scores: list[tuple[float, int]] = []
    if d.size == 0 or steps_ms.size == 0:
        return 0, None
    for k in range(-int(ix.max()), int(steps_ms.size - ix.min())):
        at = ix + k
        sel = (at >= 0) & (at < steps_ms.size)
        if sel.sum() < need or not (steps_ms[at[sel]] > 0).all():
            continue
        r = d[sel] - np.log(steps_ms[at[sel]])
        for kind in (True, False):
            part = tr[sel] == kind
            if part.any():
                r[part] -= np.median(r[part])
        scores.append((float(np.median(np.abs(r))), k))
    if not scores:
        return 0, None
    scores.sort()
    best, k = scores[0]
    clarity = round(best / scores[1][0], 3) if len(scores) > 1 and scores[1][0] > 0 else None
    return k, clarity


def recorded_row(path: str) -> dict[str, Any]:
    """One recorded process: its cycles set against its own timer."""
    rf = load_run_file(path)
    timer = timer_of(path + ".log") or {}
    steps = np.asarray(timer.get("step_ms", []), dtype=float)
    # rank 0's run under torchrun (its timer is the one printed as STEPTIMER), else the first
    run = next((r for r in rf.runs if r.rank == 0), rf.runs[0])
    c = run.cycles
    dur = (c.end_ns - c.start_ns) / 1e6
    traced = np.ones(c.index.size, bool) if c.traced is None else np.asarray(c.traced) == 1
    skip = 5  # the timer's own steady-state skip (steptimer.StepTimer)
    idx = np.asarray(c.index)
    steady = idx >= skip
    untraced = timed_untraced(c) & steady  # the timed ones (a lead-in before each)
    shift, clarity = aligned_offset(dur, traced, idx, steps)
    at = idx + shift
    same = untraced & (at >= 0) & (at < steps.size)
    ratio = dur[same] / steps[at[same]] - 1 if same.any() else np.asarray([])
    # a timed cycle that the next cycle follows traced: tracing goes back on at that boundary,
    # inside the program's own step for this cycle where cycles meet (optimizer steps), so
    # its timer step holds the switch-on and no cycle does. Reported apart, beside the strict
    # median over all (which the acceptance names).
    before_switch = np.r_[traced[1:], False][same]
    clean = ratio[~before_switch]
    hold = np.asarray(c.hold_ns, dtype=float) / 1e6 if c.hold_ns is not None else None
    params = rf.workload.params
    return {
        "file": os.path.basename(path),
        "cycles_from": params.get("cycles_from"),
        "cycles": int(c.index.size), "untraced": int((~traced).sum()),
        "timer_shift": shift, "timer_shift_clarity": clarity,
        "timer_median_ms": timer.get("median_step_ms"),
        "traced_median_ms": round(float(np.median(dur[traced & steady])), 4)
        if (traced & steady).any() else None,
        "untraced_median_ms": round(float(np.median(dur[untraced])), 4)
        if untraced.any() else None,
        "untraced_vs_timer_pct": [round(100 * float(r), 2) for r in ratio],
        "untraced_vs_timer_median_pct": round(100 * float(np.median(ratio)), 2)
        if ratio.size else None,
        "untraced_vs_timer_before_switch_pct": [round(100 * float(r), 2)
                                                for r in ratio[before_switch]],
        "untraced_vs_timer_clean_median_pct": round(100 * float(np.median(clean)), 2)
        if clean.size else None,
        "hold_max_ms": round(float(hold.max()), 3) if hold is not None and hold.size else None,
        "hold_cycles_over_1ms": int((hold > 1.0).sum()) if hold is not None else None,
        "warnings": [w[:160] for w in rf.collection.warnings],
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--json")
    a = p.parse_args()
    rows = []
    for f in sorted(glob.glob(os.path.join(a.dir, "*-r[0-9]*.json.gz"))):
        try:
            rows.append(recorded_row(f))
        except Exception as exc:  # one unreadable recording must not hide the others
            print(f"{f}: {type(exc).__name__}: {exc}")
    programs: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        name = re.sub(r"-r\d+\.json\.gz$", "", r["file"])
        prog = programs.setdefault(name, {"bare": [], "recorded": []})
        if r["timer_median_ms"] is not None:
            prog["recorded"].append(r["timer_median_ms"])
        print(f"{r['file']:28s} timer {r['timer_median_ms']} traced {r['traced_median_ms']} "
              f"untraced {r['untraced_median_ms']} ({r['untraced']}) untraced/timer "
              f"{r['untraced_vs_timer_median_pct']} % (shift {r['timer_shift']}; "
              f"not before a switch-on {r['untraced_vs_timer_clean_median_pct']} %) "
              f"hold max {r['hold_max_ms']} ms "
              f">1ms {r['hold_cycles_over_1ms']}")
    for log in sorted(glob.glob(os.path.join(a.dir, "*-bare.log"))):
        name = re.sub(r"-r\d+-bare\.log$", "", os.path.basename(log))
        t = timer_of(log)
        if t and t.get("median_step_ms") is not None:
            programs.setdefault(name, {"bare": [], "recorded": []})["bare"].append(
                t["median_step_ms"])
    for log in sorted(glob.glob(os.path.join(a.dir, "*-profiler.log"))):  # issue28.sh var T
        name = re.sub(r"-r\d+-profiler\.log$", "", os.path.basename(log))
        t = timer_of(log)
        if t and t.get("median_step_ms") is not None:
            programs.setdefault(name, {"bare": [], "recorded": []}).setdefault(
                "torch_profiler", []).append(t["median_step_ms"])
    summary = {}
    for name, v in sorted(programs.items()):
        b, r = v["bare"], v["recorded"]
        ratio = statistics.median(r) / statistics.median(b) if b and r else None
        summary[name] = {**v, "recorded_over_bare": None if ratio is None else round(ratio, 3)}
        prof = v.get("torch_profiler")
        if prof and b:
            summary[name]["profiler_over_bare"] = round(
                statistics.median(prof) / statistics.median(b), 3)
        print(f"{name:12s} bare {b} recorded {r} -> x{summary[name]['recorded_over_bare']}"
              + (f"; torch.profiler {prof} -> x{summary[name]['profiler_over_bare']}"
                 if prof and b else ""))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"rows": rows, "summary": summary}, fh, indent=1)


if __name__ == "__main__":
    main()
