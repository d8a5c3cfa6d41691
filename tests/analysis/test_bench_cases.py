"""Per-case statistics of benchmark run files (perfdiff.analysis.bench_cases), on synthetic
run files whose truth is known (tests/bench_factories.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdiff.analysis.bench_cases import (
    BenchRules,
    bench_run,
    compare_cases,
    parse_case_label,
    robust_cv_pct,
    select_measure,
    summarise,
)
from perfdiff.collect.workloads.cases import batch_text, case_label, parse_batches, shape_text
from perfdiff.errors import InputError
from tests.bench_factories import (
    BenchFileSpec,
    CaseSpec,
    linalg_cases,
    make_bench_file,
    rmsnorm_cases,
)

_key = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_value = st.text(alphabet=st.characters(blacklist_characters=" =\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
                                        "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                                        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f"
                                        "\u205f\u3000", blacklist_categories=("Cs", "Zs")),
                 min_size=0, max_size=10)


@given(st.dictionaries(_key, _value, min_size=1, max_size=5))
def test_labels_written_by_the_workloads_parse_back_to_their_fields(fields: dict[str, str]
                                                                    ) -> None:
    assert parse_case_label(case_label(fields)) == fields


@given(st.text(max_size=30))
def test_any_label_parses_without_error(label: str) -> None:
    fields = parse_case_label(label)
    assert fields  # a user's own label becomes {"case": label}
    if "case" in fields and len(fields) == 1 and "=" not in label:
        assert fields["case"] == label


def test_case_label_refuses_separators_in_values() -> None:
    with pytest.raises(ValueError, match="spaces"):
        case_label({"shape": "4 x 8"})


@given(st.lists(st.lists(st.integers(1, 64), max_size=3), min_size=1, max_size=5))
def test_batches_round_trip(batches: list[list[int]]) -> None:
    text = ",".join(batch_text(b) for b in batches)
    assert parse_batches(text) == tuple(tuple(b) for b in batches)


def test_shape_text() -> None:
    assert shape_text((4, 128, 61)) == "4x128x61" and shape_text(()) == "scalar"


def test_gpu_time_is_first_start_to_last_end_and_kernel_time_the_sum() -> None:
    spec = BenchFileSpec([CaseSpec("impl=a", (0.010, 0.020), gap_ms=0.005)], noise=0.0,
                         n_cycles=5, n_warmup=2)
    run = bench_run(make_bench_file(spec))
    case = run.cases["impl=a"]
    assert case.n == 5  # warm-up cycles dropped
    np.testing.assert_allclose(case.gpu_ms, 0.035, atol=2e-6)
    np.testing.assert_allclose(case.kernel_ms, 0.030, atol=2e-6)
    assert np.all(case.launches == 2)
    assert np.all(case.host_ms > case.gpu_ms)


def test_a_cpu_case_has_no_gpu_time_and_is_left_out_of_gpu_comparisons() -> None:
    spec = BenchFileSpec(linalg_cases(), workload="linalg")
    run = bench_run(make_bench_file(spec))
    cpu = [c for c in run.cases.values() if c.fields["device"] == "cpu"]
    assert cpu and not any(c.on_gpu for c in cpu)
    assert all(math.isnan(summarise(c).gpu_ms) for c in cpu)
    changes = compare_cases(run, run)
    assert {c.fields["device"] for c in changes} == {"cuda"}


def test_a_run_without_measured_cycles_is_one_clear_error() -> None:
    spec = BenchFileSpec([CaseSpec("impl=a")], n_cycles=0, n_warmup=2)
    with pytest.raises(InputError, match="no measured cycles"):
        bench_run(make_bench_file(spec), "x.json.gz")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_two_runs_of_the_same_build_flag_nothing(seed_a: int, seed_b: int) -> None:
    a = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=seed_a, noise=0.02)))
    b = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=seed_b, noise=0.02)))
    verdicts = {c.verdict for c in compare_cases(a, b)}
    assert verdicts == {"no change"}


PLANTED = "impl=cuda dtype=float32 direction=forward shape=4x2048x4096"


@pytest.mark.parametrize(("scale", "verdict"), [(1.25, "regressed"), (0.75, "faster"),
                                                 (1.03, "no change")])
def test_a_planted_change_is_flagged_only_above_the_noise_floor(scale: float, verdict: str
                                                                ) -> None:
    a = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.005)))
    b = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases({PLANTED: scale}), seed=2,
                                                noise=0.005)))
    changes = {c.label: c for c in compare_cases(a, b)}
    assert changes[PLANTED].verdict == verdict
    if verdict == "no change":  # 3 % is significant with this little noise, but below 5 %
        assert changes[PLANTED].q < 0.05
    others = {c.verdict for label, c in changes.items() if label != PLANTED}
    assert others == {"no change"}
    assert changes[PLANTED].ratio == pytest.approx(scale, rel=0.02)


def test_the_floor_grows_with_the_within_run_spread() -> None:
    a = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases(), seed=1, noise=0.08)))
    b = bench_run(make_bench_file(BenchFileSpec(rmsnorm_cases({PLANTED: 1.12}), seed=2,
                                                noise=0.08, n_cycles=40)))
    change = next(c for c in compare_cases(a, b) if c.label == PLANTED)
    assert change.floor_pct > 15.0  # ~3 x 8 % spread
    assert change.verdict == "no change"
    strict = compare_cases(a, b, BenchRules(spread_factor=0.0))
    assert next(c for c in strict if c.label == PLANTED).floor_pct == 5.0


def test_cases_present_on_one_side_only_are_reported_as_such() -> None:
    a = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a"), CaseSpec("impl=b")])))
    b = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=b"), CaseSpec("impl=c")])))
    verdicts = {c.label: c.verdict for c in compare_cases(a, b)}
    assert verdicts == {"impl=a": "only before", "impl=b": "no change", "impl=c": "only after"}


def test_too_few_cycles_is_insufficient_data_not_a_finding() -> None:
    a = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a")], n_cycles=1)))
    b = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a", scale=2.0)], n_cycles=1)))
    assert compare_cases(a, b)[0].verdict == "insufficient data"


@given(st.lists(st.floats(0.001, 1000.0), min_size=1, max_size=50))
def test_robust_cv_is_non_negative_and_zero_for_constant_samples(values: list[float]) -> None:
    cv = robust_cv_pct(np.asarray(values))
    assert cv >= 0.0
    assert robust_cv_pct(np.full(5, values[0])) == 0.0


@pytest.mark.parametrize("kwargs", [{"alpha": 0.0}, {"alpha": 1.5}, {"noise_floor_pct": -1.0},
                                    {"spread_factor": -2.0}])
def test_bad_rules_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(InputError):
        BenchRules(**kwargs)


def test_kernel_time_measure_ignores_gaps_that_the_span_counts() -> None:
    a = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a", (0.01, 0.01), gap_ms=0.001)],
                                                noise=0.002, seed=1)))
    b = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a", (0.01, 0.01), gap_ms=0.020)],
                                                noise=0.002, seed=2)))
    assert compare_cases(a, b)[0].verdict == "regressed"
    ka, kb = select_measure(a, "kernels"), select_measure(b, "kernels")
    assert ka.measure == "kernels" and select_measure(ka, "kernels") is ka
    assert compare_cases(ka, kb)[0].verdict == "no change"
    with pytest.raises(InputError, match="span, kernels or stream"):
        select_measure(a, "wall")  # type: ignore[arg-type]


def test_stream_time_adds_the_gap_after_the_gpu_lead() -> None:
    """stream = end of the lead's spin kernel to the last end: span + the first launch gap."""
    spec = BenchFileSpec([CaseSpec("impl=a", (0.010, 0.020), gap_ms=0.001)], noise=0.0,
                         params={"lead_us": 1000}, lead_gap_ms=0.0012)
    run = bench_run(make_bench_file(spec))
    span = run.cases["impl=a"].gpu_ms
    stream = select_measure(run, "stream")
    assert stream.measure == "stream"
    np.testing.assert_allclose(stream.cases["impl=a"].gpu_ms, span + 0.0012, atol=2e-6)
    unled = bench_run(make_bench_file(BenchFileSpec([CaseSpec("impl=a")])))
    with pytest.raises(InputError, match="without the GPU lead"):
        select_measure(unled, "stream")
