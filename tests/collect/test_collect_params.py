"""Workload parameters from ``-p KEY=VALUE`` text, the registry, and the markers API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import perfdiff.markers as markers
from perfdiff.collect.cycles.cycles import CycleLog
from perfdiff.collect.workloads import get_workload_class, workload_names
from perfdiff.collect.workloads.base import WorkloadParamError, WorkloadParams


@dataclass(frozen=True)
class Params(WorkloadParams):
    batch: int = 8
    lr: float = 0.1
    name: str = "x"
    fused: bool = True
    dtype: Literal["fp16", "bf16"] = "fp16"
    limit: int | None = None


@given(st.integers(-10**9, 10**9), st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_round_trip_through_text(batch: int, lr: float) -> None:
    p = Params.from_strings({"batch": str(batch), "lr": repr(lr)})
    assert p.batch == batch and p.lr == lr


def test_types_choices_booleans_and_optional() -> None:
    p = Params.from_strings({"fused": "no", "dtype": "bf16", "limit": "none", "name": "a b"})
    assert p == Params(fused=False, dtype="bf16", limit=None, name="a b")
    assert Params.from_strings({"limit": "5"}).limit == 5
    assert p.to_json()["dtype"] == "bf16"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ({"batchh": "1"}, "unknown workload parameter 'batchh'; this workload takes: batch,"),
        ({"batch": "eight"}, "parameter 'batch' expects int, got 'eight'"),
        ({"dtype": "fp64"}, "parameter 'dtype' must be one of fp16, bf16; got 'fp64'"),
        ({"fused": "maybe"}, "parameter 'fused' expects bool, got 'maybe'"),
    ],
)
def test_bad_values_are_one_clear_line(items: dict[str, str], message: str) -> None:
    with pytest.raises(WorkloadParamError) as info:
        Params.from_strings(items)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_registry_names_and_unknown_workload() -> None:
    assert {"gpt-infer", "train-step"} <= set(workload_names())
    cls = get_workload_class("gpt-infer")
    assert cls.name == "gpt-infer"
    assert cls.params_class().to_json()["dtype"] == "fp16"
    with pytest.raises(WorkloadParamError, match="unknown workload 'gpt'; built-in workloads"):
        get_workload_class("gpt")


def test_markers_do_nothing_without_a_collector_and_record_with_one() -> None:
    assert markers.set_active_recorder(None) is None
    with markers.cycle("x"):
        pass
    markers.mark_cycle()
    log = CycleLog(clock_ns=iter(range(1, 100)).__next__)
    markers.set_active_recorder(log)
    try:
        with markers.cycle("case", warmup=True):
            pass
        markers.mark_cycle("loop")
        markers.end_cycle()
        with pytest.raises(RuntimeError), markers.cycle("broken"):
            raise RuntimeError("x")
    finally:
        markers.set_active_recorder(None)
    table = log.table()
    assert table.label == ("case", "loop")
    assert table.warmup.tolist() == [True, False]
