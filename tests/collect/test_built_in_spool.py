"""Built-in workloads spool CUPTI's buffers as user programs do (issue 28 item 5).

Through the real built-in path: ``open_sources`` -> ``CuptiActivityBackend`` -> ``RawIntake``
(its ctypes callbacks called through ctypes) -> the spool -> ``run_collection``, with a
stand-in ``cupti`` module whose flush hands over the real H100 buffers of
``fixtures/cupti_buffers`` (tests/collect/cupti_tests/test_raw_buffers.py) and a stand-in
torch. Nothing
is decoded while the workload runs; at stop every record is, the same as decoding each buffer
at once, and the temporary spool folder is gone.
"""

from __future__ import annotations

import ctypes
import enum
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfdiff.collect import sources
from perfdiff.collect.cupti import raw_intake
from perfdiff.collect.cupti.decode import layout_for
from perfdiff.collect.cupti.raw_intake import RawIntake
from perfdiff.collect.cupti.spool import SPOOL_SUFFIX
from perfdiff.collect.session import run_collection
from perfdiff.collect.settings import CollectSettings
from perfdiff.collect.workloads.base import CyclePlan, Workload, WorkloadParams
from perfdiff.markers import CycleMarker
from tests.collect.cupti_tests.test_raw_buffers import saved  # noqa: F401 (fixture)

Saved = tuple[list[np.ndarray[Any, Any]], dict[str, Any]]


class _Kind(enum.IntEnum):
    CONCURRENT_KERNEL = 10
    RUNTIME = 5
    DRIVER = 6
    MEMCPY = 1
    MEMSET = 2


class _FakeLib:
    """The libcupti calls RawIntake makes: its callbacks are kept, to be called by a flush."""

    def __init__(self) -> None:
        self.callbacks: tuple[Any, Any] | None = None

    def cuptiActivityRegisterCallbacks(self, request: Any, complete: Any) -> int:
        self.callbacks = (request, complete)
        return 0


def _stand_in_cupti(lib: _FakeLib, to_hand_over: list[np.ndarray[Any, Any]]) -> Any:
    """``cupti.cupti`` as CuptiActivityBackend uses it; a flush hands over the queued buffers
    through the registered callbacks, as CUPTI's thread would."""
    clock = [10**9]

    def get_timestamp() -> int:
        clock[0] += 1000
        return clock[0]

    def flush_all(flag: int) -> None:
        assert lib.callbacks is not None
        request, complete = lib.callbacks
        while to_hand_over:
            data = to_hand_over.pop(0)
            address, size, records = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
            request(ctypes.byref(address), ctypes.byref(size), ctypes.byref(records))
            assert size.value >= data.size
            ctypes.memmove(address.value or 0, data.ctypes.data, data.size)
            complete(None, 0, address.value, size.value, data.size)

    module = types.ModuleType("cupti.cupti")
    module.get_timestamp = get_timestamp  # type: ignore[attr-defined]
    module.ActivityKind = _Kind  # type: ignore[attr-defined]
    module.cuptiError = RuntimeError  # type: ignore[attr-defined]
    module.activity_enable = lambda kind: None  # type: ignore[attr-defined]
    module.activity_disable = lambda kind: None  # type: ignore[attr-defined]
    module.activity_flush_all = flush_all  # type: ignore[attr-defined]
    module.activity_get_num_dropped_records = (  # type: ignore[attr-defined]
        lambda context, stream, address: None)
    module.activity_enable_runtime_api = lambda cbid, on: None  # type: ignore[attr-defined]
    module.activity_enable_driver_api = lambda cbid, on: None  # type: ignore[attr-defined]
    return module


def _stand_in_torch() -> Any:
    cuda = types.SimpleNamespace(device_count=lambda: 1, set_device=lambda i: None,
                                 init=lambda: None, synchronize=lambda: None,
                                 is_available=lambda: False)
    return types.SimpleNamespace(cuda=cuda, __version__="0+stand-in",
                                 version=types.SimpleNamespace(cuda=None))


class _Params(WorkloadParams):
    pass


class _Handing(Workload):
    """Each cycle CUPTI completes some buffers (the flush stands for CUPTI filling them);
    after each, nothing may have been decoded yet."""

    name = "handing"
    summary = "test"
    params_class = _Params

    def __init__(self, queue: list[np.ndarray[Any, Any]], cupti: Any,
                 per_cycle: int) -> None:
        super().__init__(_Params())
        self.queue, self.cupti, self.per_cycle = queue, cupti, per_cycle
        self.decoded_during: list[int] = []
        self.spool_files: list[list[Path]] = []

    def run(self, marker: CycleMarker, plan: CyclePlan) -> None:
        for _ in range(plan.measured):
            with marker.cycle("case"):
                waiting = self.queue[self.per_cycle:]
                del self.queue[self.per_cycle:]
                self.cupti.activity_flush_all(1)
                self.queue.extend(waiting)
            intake = self.intake
            self.decoded_during.append(intake.records)
            spool = intake.spool
            self.spool_files.append([] if spool is None else [spool.path])

    intake: Any = None


def test_a_built_in_workload_spools_and_decodes_at_stop(
        saved: Saved, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    buffers, doc = saved
    lib = _FakeLib()
    queue = [b.copy() for b in buffers]
    cupti = _stand_in_cupti(lib, queue)
    package = types.ModuleType("cupti")
    package.cupti = cupti  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)
    monkeypatch.setitem(sys.modules, "cupti.cupti", cupti)
    layout = layout_for(doc["meta"]["cupti_api_version"])
    size = max(b.size for b in buffers)
    monkeypatch.setattr(RawIntake, "for_cupti", classmethod(
        lambda cls, module, clock: cls(lib, layout, clock, buffer_bytes=size)))
    names = {int(k): v for k, v in doc["names"].items()}
    monkeypatch.setattr(raw_intake, "resolve_names",
                        lambda keys, known: {**known, **names})
    monkeypatch.setattr(sources, "check_prerequisites", _stand_in_torch)

    settings = CollectSettings(pm_sampling=False, nvml=False, untraced_every=0)
    opened = sources.open_sources(settings)
    spool_dir = opened.sources.spool_dir
    assert spool_dir is not None and Path(spool_dir).is_dir()
    workload = _Handing(queue, cupti, per_cycle=2)
    workload.intake = opened.sources.trace.intake  # type: ignore[attr-defined]
    outcome = run_collection(workload, CyclePlan(measured=3, warmup=0), opened.sources,
                             opened.environment, settings)

    assert workload.decoded_during == [0, 0, 0]  # every hand-over only written
    assert all(path.parent == Path(spool_dir) and path.name.endswith(SPOOL_SUFFIX)
               for paths in workload.spool_files for path in paths)
    assert not Path(spool_dir).exists()  # decoded at stop, then the folder removed
    run_file = outcome.run_file
    assert "intake_after_run_ms" in run_file.workload.params
    run = run_file.runs[0]
    kernels = sorted([run_file.strings[int(i)].mangled, int(s), int(e)] for i, s, e in zip(
        run.kernels.name_id, run.kernels.start_ns, run.kernels.end_ns, strict=True))
    expected = sorted([k[0], k[3], k[4]] for b in doc["buffers"] for k in b["kernels"])
    assert kernels == expected and len(expected) > 100
    assert not [w for w in run_file.collection.warnings if "spool" in w]


def test_a_source_that_fails_to_open_leaves_no_spool_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary folder is made before tracing opens; if tracing cannot start (no CUPTI,
    a driver mismatch) the user gets the error and no empty ``perfdiff-spool-*`` folder."""
    monkeypatch.setattr(sources, "check_prerequisites", _stand_in_torch)
    monkeypatch.setattr(sources.tempfile, "tempdir", str(tmp_path))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("CUPTI refused")
    monkeypatch.setattr(sources, "open_trace", refuse)
    with pytest.raises(RuntimeError, match="CUPTI refused"):
        sources.open_sources(CollectSettings(pm_sampling=False, nvml=False, untraced_every=0))
    assert list(tmp_path.iterdir()) == []
