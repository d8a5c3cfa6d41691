"""Cycle time from untraced cycles, kernels from traced ones (issue 28, item 1)."""

from __future__ import annotations

import dataclasses

import numpy as np

from perfdiff.analysis.entry import compare_loaded
from perfdiff.analysis.untraced_time import timed_untraced, untraced_time_table
from perfdiff.schema.loaded import RUN_FILE_KIND, LoadedInput
from perfdiff.schema.model import RunFile
from tests.factories import make_run_file


def with_untraced(rf: RunFile, untraced: list[int], untraced_ms: float) -> RunFile:
    """``rf`` with the cycles ``untraced`` left untraced (flagged as the collector flags them)
    and lasting ``untraced_ms``; the traced cycles keep the factory's kernels and times."""
    (run,) = rf.runs
    c = run.cycles
    traced = np.ones(c.index.size, dtype=np.int64)
    traced[untraced] = 0
    end = np.asarray(c.end_ns).copy()
    end[untraced] = np.asarray(c.start_ns)[untraced] + int(untraced_ms * 1e6)
    cycles = dataclasses.replace(c, traced=traced, end_ns=end,
                                 warmup=np.asarray(c.warmup) | (traced == 0))
    return dataclasses.replace(rf, runs=(dataclasses.replace(run, cycles=cycles),))


RUNS = [6, 7, 14, 15, 22, 23, 30, 31]  # four runs of two: a lead-in, then a timed one


def test_only_untraced_cycles_after_an_untraced_one_are_timed() -> None:
    rf = with_untraced(make_run_file(n_cycles=32, n_warmup=1), RUNS, 3.0)
    assert np.flatnonzero(timed_untraced(rf.runs[0].cycles)).tolist() == [7, 15, 23, 31]
    table = untraced_time_table(rf)
    assert table is not None and table["cycle"].tolist() == [7, 15, 23, 31]
    assert np.allclose(table["cycle_ms"], 3.0)
    single = with_untraced(make_run_file(n_cycles=32, n_warmup=1), [7, 15, 23, 31], 3.0)
    assert untraced_time_table(single) is None  # files of single untraced cycles: none timed


def load(rf: RunFile, name: str) -> LoadedInput:
    return LoadedInput(source=name, kind=RUN_FILE_KIND, run_file=rf)


def test_cycle_time_comes_from_untraced_cycles_when_both_sides_have_them() -> None:
    """Same kernels and traced cycles on both sides; the untraced cycles double. Traced time
    would say no change; the untraced cycles say +100 %, and a note says which it is."""
    normal = with_untraced(make_run_file(n_cycles=40, n_warmup=1, noise=0.01), RUNS, 3.0)
    abnormal = with_untraced(make_run_file(n_cycles=40, n_warmup=1, noise=0.01), RUNS, 6.0)
    comparison, _ = compare_loaded(load(normal, "a"), load(abnormal, "b"))
    assert comparison.cycle_time.verdict == "slower"
    assert abs(comparison.cycle_time.delta_pct - 100.0) < 1e-6
    assert any("measured on the untraced cycles (4 and 4" in n for n in comparison.notes)
    traced_only = with_untraced(make_run_file(n_cycles=40, n_warmup=1, noise=0.01), [], 6.0)
    comparison, _ = compare_loaded(load(normal, "a"), load(traced_only, "b"))
    assert abs(comparison.cycle_time.delta_pct) < 5.0  # traced time: no untraced on one side
    assert any("Cycle time is traced time" in n for n in comparison.notes)


def test_cycles_found_after_the_run_say_cycle_time_is_traced_time() -> None:
    """The recorded GPT-2 generate run whose cycles are its detected period (fixtures/README.md):
    no untraced cycle could exist, and the report says what its cycle time then is."""
    from pathlib import Path

    from perfdiff.analysis.self_overhead import self_overhead_notes
    from perfdiff.schema.io import load_run_file

    path = Path(__file__).parents[2] / "fixtures" / "generate-found.json.gz"
    rf = load_run_file(path)
    assert str(rf.workload.params["cycles_from"]).startswith("detected period")
    notes = self_overhead_notes(rf, "g")
    assert any("cycle time is traced time" in n for n in notes)
    windows = load_run_file(path.parent / "trainer-gpt2-ms200.json.gz")
    assert any("fixed 200 ms windows, so none could be left untraced" in n
               for n in self_overhead_notes(windows, "w"))
    marked = with_untraced(make_run_file(n_cycles=32, n_warmup=1), RUNS, 3.0)
    assert not any("traced time" in n for n in self_overhead_notes(marked, "m"))


def test_one_run_a_side_untraced_time_assumes_the_run_to_run_variation() -> None:
    """Two recordings of one variant, one run each: hundreds of steady untraced cycles 1.4 %
    apart (a CUDA-graph replay's detached runs, H100 2026-12-07: -1.35 % was called "faster",
    p 3e-13, under a note saying no change under 8.3 % is called). Each side is one process,
    which cannot show how processes differ: the untraced time assumes ``--run-cv-pct`` as the
    traced time does, so the pair says "no change"; a change past what is never called still
    is one."""
    lanes = [i for i in range(8, 200) if i % 10 not in (0, 1)]  # runs of eight untraced
    rng = np.random.default_rng(0)

    def side(ms: float) -> RunFile:
        rf = with_untraced(make_run_file(n_cycles=200, n_warmup=1, noise=0.01), lanes, ms)
        (run,) = rf.runs
        jitter = (rng.normal(0, 0.002 * ms, run.cycles.index.size) * 1e6).astype(np.int64)
        end = np.asarray(run.cycles.end_ns) + np.where(run.cycles.traced == 0, jitter, 0)
        cycles = dataclasses.replace(run.cycles, end_ns=end)
        return dataclasses.replace(rf, runs=(dataclasses.replace(run, cycles=cycles),))

    same, _ = compare_loaded(load(side(0.244), "a"), load(side(0.2407), "b"))
    assert abs(same.cycle_time.delta_pct + 1.35) < 0.5
    assert same.cycle_time.verdict == "no change"
    changed, _ = compare_loaded(load(side(0.244), "a"), load(side(0.30), "b"))
    assert changed.cycle_time.verdict == "slower"
