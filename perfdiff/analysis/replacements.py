"""Replaced kernels as rows of the cycle tables, so they are tested like any function.

Why rows: a replacement ("bf16 tensor-core GEMMs -> fp32 SIMT GEMMs") must be tested and
ranked with every other finding by its time per cycle. Adding it to both sides' cycle tables
as a pseudo-function (``func_type`` "replaced") gives it the same Welch test, bootstrap
interval, q-value and verdict as a kernel, with no second copy of the statistics. On the
normal side its time is that of the kernels that were replaced, on the abnormal side that of
their replacements.

Every measured cycle of a side is aligned against the other side's reference cycle (its
median-length measured cycle) with :func:`perfdiff.analysis.alignment.replacements`. A
replacement is kept only when it is found in at least :data:`MIN_CYCLE_SHARE` of the cycles on
*both* sides: a pairing that appears in a few cycles is noise in the launch order, not a
change of program (A/A pairs give none: tests/analysis/test_replacements.py).

Replacements of one kind are pooled into one row, named after the kernel classes on each side
(``families.classify``): ``[replaced] GEMM (bf16, tensor core) -> GEMM (fp32, SIMT)``. The
kernel names behind it are kept in :class:`perfdiff.analysis.model.Replacement`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.alignment import Replaced, replacements
from perfdiff.analysis.families import classify, family_of
from perfdiff.analysis.family_rules import COPY, ELEMENTWISE, INDEXING
from perfdiff.analysis.model import Replacement, ReplacementMember
from perfdiff.schema.model import RunFile

REPLACED_TYPE = C.REPLACED_TYPE
REPLACED_PREFIX = "[replaced] "
MIN_CYCLE_SHARE = 0.9  # "recurs in nearly every cycle"
MAX_LAUNCHES_PER_SIDE = 2_000_000  # beyond this, alignment is skipped (said in a note)
MAX_MEMBERS = 8  # kernel pairs listed per replacement (largest first)


@dataclass(frozen=True)
class _Cycle:
    """One measured cycle's kernel launches on one device, in launch order."""

    run: int
    pid: int
    device: int
    cycle: int
    names: tuple[str, ...]
    duration_ms: np.ndarray


def _cycles(run_file: RunFile, table: pd.DataFrame) -> list[_Cycle]:
    names = np.asarray([s.demangled or s.mangled for s in run_file.strings], dtype=object)
    pid_of_run = table.drop_duplicates(C.RUN).set_index(C.RUN)[C.PID].to_dict()
    out = []
    for run in run_file.runs:
        if run.index not in pid_of_run:
            continue
        cyc = run.cycles
        measured = cyc.index[~cyc.warmup]
        k = run.kernels
        keep = np.isin(k.cycle, measured)
        order = np.lexsort((k.start_ns[keep], k.correlation_id[keep], k.cycle[keep],
                            k.device[keep]))
        at = np.flatnonzero(keep)[order]
        dev, cyc_of, name_id = k.device[at], k.cycle[at], k.name_id[at]
        dur = (k.end_ns[at] - k.start_ns[at]) / 1e6
        cut = np.flatnonzero((np.diff(dev) != 0) | (np.diff(cyc_of) != 0)) + 1
        for part in np.split(np.arange(at.shape[0]), cut):
            if part.shape[0] == 0:
                continue
            first = part[0]
            out.append(_Cycle(run.index, int(pid_of_run[run.index]), int(dev[first]),
                              int(cyc_of[first]), tuple(names[name_id[part]]), dur[part]))
    return out


def _reference(cycles: list[_Cycle], device: int) -> _Cycle | None:
    """The median-length measured cycle of the first run on ``device``."""
    on_device = [c for c in cycles if c.device == device]
    if not on_device:
        return None
    first_run = min(c.run for c in on_device)
    mine = sorted((c for c in on_device if c.run == first_run), key=lambda c: len(c.names))
    return mine[len(mine) // 2]


# Families that glue a group together (casts, copies, index arithmetic): they vary between
# the instances of one replacement (a contiguous() copy in some layers only), so a group is
# named after its other families when it has any.
GLUE_FAMILIES = frozenset({ELEMENTWISE, COPY, INDEXING})


def _group_label(names: tuple[str, ...]) -> str:
    """A group's side: its families in order of first appearance, glue left out if it can."""
    families = list(dict.fromkeys(family_of(n) for n in names))
    main = [f for f in families if f not in GLUE_FAMILIES]
    return " + ".join(main or families)


def kind_of(found: Replaced) -> str:
    """The pseudo-function name pooling replacements of one kind: a 1:1 pair by its kernels'
    classes (``GEMM (bf16, tensor core) → GEMM (fp32, SIMT)``, with the libraries when the
    classes are the same), a group by its families."""
    if found.is_pair:
        was, now = classify(found.before[0]), classify(found.after[0])
        before, after = was.label, now.label
        if before == after and was.library != now.library:
            # same kind of kernel from another library or vendor: say which
            before = f"{before} [{was.library or 'unknown library'}]"
            after = f"{after} [{now.library or 'unknown library'}]"
    else:
        before, after = _group_label(found.before), _group_label(found.after)
    return f"{REPLACED_PREFIX}{before} → {after}"


@dataclass
class _Tally:
    """Per kind: time and launches per cycle on one side, and the member kernel pairs."""

    time_ms: dict[tuple[int, int, int, int], float]
    launches: dict[tuple[int, int, int, int], int]
    members: dict[tuple[tuple[str, ...], tuple[str, ...]], int]


def _tally(cycles: list[_Cycle], others: list[_Cycle], *, normal_side: bool
           ) -> dict[str, _Tally]:
    """Align each cycle against the other side's reference; sum this side's part by kind."""
    out: dict[str, _Tally] = defaultdict(lambda: _Tally({}, {}, defaultdict(int)))
    refs = {d: _reference(others, d) for d in {c.device for c in cycles}}
    # Cycles of one program usually repeat the same launch sequence, and the alignment is a
    # pure function of the two sequences: align each distinct sequence once per device and
    # reuse it (same result, a fraction of the work on runs of many cycles).
    aligned: dict[tuple[int, tuple[str, ...]], list[tuple[str, Replaced]]] = {}
    for cycle in cycles:
        ref = refs[cycle.device]
        if ref is None:
            continue
        seen = aligned.get((cycle.device, cycle.names))
        if seen is None:
            found = (replacements(cycle.names, ref.names, family_of) if normal_side
                     else replacements(ref.names, cycle.names, family_of))
            seen = [(kind_of(item), item) for item in found]
            aligned[(cycle.device, cycle.names)] = seen
        key = (cycle.run, cycle.pid, cycle.device, cycle.cycle)
        for kind, item in seen:
            tally = out[kind]
            mine = item.before_at if normal_side else item.after_at
            tally.time_ms[key] = tally.time_ms.get(key, 0.0) + float(
                cycle.duration_ms[list(mine)].sum())
            tally.launches[key] = tally.launches.get(key, 0) + len(mine)
            tally.members[(item.before, item.after)] += 1
    return out


def replacement_rows(
    run_files: tuple[RunFile, RunFile], tables: tuple[pd.DataFrame, pd.DataFrame]
) -> tuple[tuple[pd.DataFrame, pd.DataFrame], tuple[Replacement, ...], str | None]:
    """Rows to append to each side's cycle table, what they hold, and a note (or None)."""
    sides = [_cycles(rf, t) for rf, t in zip(run_files, tables, strict=True)]
    if any(sum(len(c.names) for c in side) > MAX_LAUNCHES_PER_SIDE for side in sides):
        return ((_empty(), _empty()), (),
                f"Kernels that replaced others were not looked for: more than "
                f"{MAX_LAUNCHES_PER_SIDE:,} launches on a side.")
    tallies = (_tally(sides[0], sides[1], normal_side=True),
               _tally(sides[1], sides[0], normal_side=False))
    kept = sorted(
        kind for kind in set(tallies[0]) & set(tallies[1])
        if all(_found_share(tallies[i][kind], sides[i]) >= MIN_CYCLE_SHARE for i in (0, 1))
    )
    rows = tuple(
        _rows(tables[i], {k: tallies[i][k] for k in kept}) for i in (0, 1)
    )
    summaries = tuple(_summary(kind, tallies[0][kind], tallies[1][kind], sides) for kind in kept)
    return (rows[0], rows[1]), summaries, None


def _found_share(tally: _Tally, cycles: list[_Cycle]) -> float:
    keys = {(c.run, c.pid, c.device, c.cycle) for c in cycles}
    return len(set(tally.time_ms) & keys) / len(keys) if keys else 0.0


def _n_cycles(cycles: list[_Cycle]) -> int:
    return max(1, len({(c.run, c.pid, c.device, c.cycle) for c in cycles}))


def _summary(kind: str, normal: _Tally, abnormal: _Tally,
             sides: list[list[_Cycle]]) -> Replacement:
    n = (_n_cycles(sides[0]), _n_cycles(sides[1]))
    members: dict[tuple[tuple[str, ...], tuple[str, ...]], float] = defaultdict(float)
    for key, count in normal.members.items():
        members[key] += count / n[0] / 2
    for key, count in abnormal.members.items():
        members[key] += count / n[1] / 2
    ranked = sorted(members.items(), key=lambda kv: (-kv[1], kv[0]))
    return Replacement(
        function=kind,
        found_pct_normal=100.0 * _found_share(normal, sides[0]),
        found_pct_abnormal=100.0 * _found_share(abnormal, sides[1]),
        launches_normal=sum(normal.launches.values()) / n[0],
        launches_abnormal=sum(abnormal.launches.values()) / n[1],
        members=tuple(
            ReplacementMember(before=before, after=after, per_cycle=per_cycle)
            for (before, after), per_cycle in ranked[:MAX_MEMBERS]
        ),
        n_members=len(ranked),
    )


def _rows(table: pd.DataFrame, tallies: dict[str, _Tally]) -> pd.DataFrame:
    if not tallies:
        return _empty()
    cycles = table.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE])[
        [C.RUN, C.PID, C.DEVICE, C.CYCLE, C.CYCLE_MS, C.ANCHOR]
    ]
    parts = []
    for kind, tally in tallies.items():
        records = list(_records(kind, tally))
        if records:
            parts.append(pd.DataFrame.from_records(
                records, columns=[C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION, C.TIME_MS,
                                  C.LAUNCHES]))
    if not parts:
        return _empty()
    rows = pd.concat(parts, ignore_index=True).merge(
        cycles, on=[C.RUN, C.PID, C.DEVICE, C.CYCLE], how="inner")
    rows[C.FUNC_TYPE] = REPLACED_TYPE
    rows[C.METRIC] = ""
    rows[C.METRIC_MEAN] = np.nan
    rows[C.CYCLE_SHARE_PCT] = 100.0 * rows[C.TIME_MS] / rows[C.CYCLE_MS]
    return rows[[*C.COLUMNS, C.LAUNCHES]]


def _records(kind: str, tally: _Tally) -> Iterator[tuple[object, ...]]:
    for (run, pid, device, cycle), time_ms in sorted(tally.time_ms.items()):
        yield (run, pid, f"GPU {device}", cycle, kind, time_ms,
               float(tally.launches[(run, pid, device, cycle)]))


def _empty() -> pd.DataFrame:
    frame = C.empty_cycle_table()
    frame[C.LAUNCHES] = pd.Series([], dtype="float64")
    return frame
