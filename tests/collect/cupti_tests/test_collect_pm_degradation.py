"""PM sampling degrades to what works, with warnings: fake cupti.pm_sampling, no GPU needed."""

from __future__ import annotations

import sys
import types
from typing import Any, ClassVar

import pytest

from perfdiff.collect.cupti.pm_sampling import PmSampler, PmSamplingUnavailable


class FakeCollector:
    """Mimics cupti.pm_sampling.Collector's enable/configure/disable decisions."""

    accepted: ClassVar[set[str]] = {"tensor", "dram"}
    together_ok: ClassVar[bool] = True
    permission: ClassVar[bool] = True
    max_buffer: ClassVar[int] = 1 << 40
    configured: ClassVar[list[tuple[str, ...]]] = []

    def __init__(self, device_index: int) -> None:
        self._pm_sampling_object = 1
        self._chip_name = "GH100"

    def _create_counter_data_image(self, max_samples: int) -> bytes:
        return b""

    def enable(self) -> None:
        if not self.permission:
            raise PermissionError("Insufficient privileges for PM sampling")

    def configure(self, *, metrics: list[str], hardware_buffer_size: int,
                  sampling_interval: int, trigger_mode: Any) -> None:
        if hardware_buffer_size > self.max_buffer:
            raise MemoryError("buffer too large")
        if any(m not in self.accepted for m in metrics):
            raise ValueError("Requested PM sampling configuration is not supported.")
        if len(metrics) > 1 and not self.together_ok:
            raise ValueError("cannot be collected in a single pass")
        FakeCollector.configured.append(tuple(metrics))

    def disable(self) -> None:
        pass


@pytest.fixture
def fake_cupti(monkeypatch: pytest.MonkeyPatch) -> type[FakeCollector]:
    package = types.ModuleType("cupti")
    pm = types.ModuleType("cupti.pm_sampling")
    pm.Collector = FakeCollector  # type: ignore[attr-defined]
    pm.TriggerMode = types.SimpleNamespace(GPU_TIME_INTERVAL=1)  # type: ignore[attr-defined]
    package.pm_sampling = pm  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)
    monkeypatch.setitem(sys.modules, "cupti.pm_sampling", pm)
    for name, value in (("accepted", {"tensor", "dram"}), ("together_ok", True),
                        ("permission", True), ("max_buffer", 1 << 40), ("configured", [])):
        monkeypatch.setattr(FakeCollector, name, value)
    return FakeCollector


def _sampler(metrics: tuple[str, ...]) -> PmSampler:
    return PmSampler(metrics, 20_000, 0, lambda: 0)


def test_all_metrics_accepted(fake_cupti: type[FakeCollector]) -> None:
    sampler = _sampler(("tensor", "dram"))
    assert sampler.metrics == ("tensor", "dram")
    assert sampler.warnings == []


def test_a_rejected_metric_is_dropped_with_a_warning(fake_cupti: type[FakeCollector]) -> None:
    sampler = _sampler(("tensor", "sm__throughput.avg.pct", "dram"))
    assert sampler.metrics == ("tensor", "dram")
    assert len(sampler.warnings) == 1
    assert "PM metric sm__throughput.avg.pct rejected" in sampler.warnings[0]
    # each name was tried on its own collector after the joint configuration failed
    assert ("tensor",) in fake_cupti.configured and ("dram",) in fake_cupti.configured


def test_metrics_that_cannot_share_a_pass_keep_the_first(
    fake_cupti: type[FakeCollector], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeCollector, "together_ok", False)
    sampler = _sampler(("tensor", "dram"))
    assert sampler.metrics == ("tensor",)
    assert any("cannot be sampled together" in w for w in sampler.warnings)


def test_no_permission_is_unavailable_with_the_fix_named(
    fake_cupti: type[FakeCollector], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeCollector, "permission", False)
    with pytest.raises(PmSamplingUnavailable, match=r"not permitted.*NVreg_RestrictProfiling"):
        _sampler(("tensor",))


def test_nothing_accepted_is_unavailable(fake_cupti: type[FakeCollector]) -> None:
    with pytest.raises(PmSamplingUnavailable, match="none of the requested metrics"):
        _sampler(("bogus1", "bogus2"))


def test_a_smaller_hardware_buffer_is_used_when_the_large_one_is_refused(
    fake_cupti: type[FakeCollector], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeCollector, "max_buffer", 512 * 1024 * 1024)
    sampler = _sampler(("tensor", "dram"))
    assert sampler.metrics == ("tensor", "dram")
    assert any("reduced to 512 MiB" in w for w in sampler.warnings)


def test_missing_cupti_python_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)
    with pytest.raises(PmSamplingUnavailable, match=r"cupti-python >= 13\.4"):
        _sampler(("tensor",))
