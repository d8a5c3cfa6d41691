"""NVML sampler degradation with a fake pynvml, and C++ name demangling."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from perfdiff.collect.cupti.demangle import demangle, demangler_available
from perfdiff.collect.nvml.sampler import NvmlSampler, NvmlUnavailable


class FakeNvml:
    """pynvml look-alike: power is refused by the 'driver', the rest reads fixed values."""

    NVML_CLOCK_SM = 0
    NVML_CLOCK_MEM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, refuse: tuple[str, ...] = ("power",)) -> None:
        self.refuse = refuse

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"h{index}"

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        raise RuntimeError("uuid lookup refused")

    def nvmlDeviceGetClockInfo(self, h: Any, kind: int) -> int:
        return 1980 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        return SimpleNamespace(gpu=97)

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        return SimpleNamespace(used=123)

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        if "power" in self.refuse:
            raise RuntimeError("Not Supported")
        return 350_000

    def nvmlDeviceGetTemperature(self, h: Any, kind: int) -> int:
        return 41

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return 4


def test_a_refused_quantity_is_dropped_with_a_warning_and_the_rest_sampled() -> None:
    clock = iter(range(1000, 10**9, 1000))
    sampler = NvmlSampler(0, lambda: next(clock), interval_s=0.001, nvml=FakeNvml(), uuid="GPU-x")
    assert any("nvml.power unavailable (Not Supported)" in w for w in sampler.warnings)
    sampler.start()
    series = sampler.stop()
    by_name = {s.name: s for s in series}
    assert "nvml.power" not in by_name
    assert by_name["nvml.sm_clock"].unit == "MHz"
    assert set(by_name["nvml.sm_clock"].values.tolist()) == {1980.0}
    assert set(by_name["nvml.gpu_util"].values.tolist()) == {97.0}
    assert set(by_name["nvml.throttle_reasons"].values.tolist()) == {4.0}
    ts = by_name["nvml.temperature"].timestamps_ns
    assert ts.size >= 2 and bool(np.all(np.diff(ts) > 0))


def test_nothing_readable_means_unavailable() -> None:
    class Dead(FakeNvml):
        def __getattribute__(self, name: str) -> Any:
            if name.startswith("nvmlDeviceGet") and name != "nvmlDeviceGetHandleByIndex":
                raise RuntimeError("gone")
            return super().__getattribute__(name)

    with pytest.raises(NvmlUnavailable, match="no quantity could be read"):
        NvmlSampler(0, lambda: 0, nvml=Dead())


@pytest.mark.skipif(not demangler_available(), reason="no libstdc++ demangler here")
def test_demangles_cuda_kernel_names() -> None:
    mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_"
    assert demangle(mangled).startswith("void at::native::vectorized_elementwise_kernel<4,")


def test_plain_and_broken_names_are_kept() -> None:
    assert demangle("ampere_fp16_s16816gemm_fp16_64x128_ldg8_f2f_tn") == (
        "ampere_fp16_s16816gemm_fp16_64x128_ldg8_f2f_tn"
    )
    assert demangle("_Zbroken") == "_Zbroken"
