"""Records CUPTI delivers without an end (still in flight at a forced flush: end 0).

Why: on the two-GPU machine every rank of a torchrun DDP job handed over memcpy records with
end 0; the child wrote them into its shard, the parent's reader refused the shard (a record
that ends before it starts) and the whole rank's kernels were lost. They are left out at the
table build, counted, and the run file says so in one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perfdiff.collect.records import (
    ApiRecord,
    KernelRecord,
    RawTrace,
    StringTable,
    TransferRecord,
    build_tables,
    unfinished_warning,
)
from perfdiff.collect.run_file_builder import Recording, build_run_file
from perfdiff.schema.io import load_run_file, save_run_file
from perfdiff.schema.model import CycleTable, Environment, Status, Workload

ENV = Environment(host="h", driver_version=None, cuda_version=None, cupti_version=None,
                  torch_version=None, python_version="3.11", devices=())


def _raw() -> RawTrace:
    raw = RawTrace()
    for i in range(4):
        raw.api.append(ApiRecord(correlation_id=10 + i, start_ns=1_000 + 100 * i))
        raw.kernels.append(KernelRecord("k", 0, 7, 2_000 + 100 * i, 2_050 + 100 * i, 10 + i,
                                        (1, 1, 1), (32, 1, 1)))
    raw.api.append(ApiRecord(correlation_id=20, start_ns=1_050))
    raw.memcpy.append(TransferRecord("DtoD", 64, 0, 7, 2_010, 2_020, 20))
    raw.api.append(ApiRecord(correlation_id=21, start_ns=1_060))
    raw.memcpy.append(TransferRecord("DtoD", 64, 0, 7, 2_030, 0, 21))  # in flight: end 0
    raw.kernels.append(KernelRecord("nccl", 0, 8, 2_400, 0, 22, (1, 1, 1), (32, 1, 1)))
    raw.api.append(ApiRecord(correlation_id=22, start_ns=1_350))
    return raw


def _cycles() -> CycleTable:
    return CycleTable(index=np.array([0, 1]), start_ns=np.array([900, 1_200]),
                      end_ns=np.array([1_200, 2_600]), label=("", ""),
                      warmup=np.zeros(2, dtype=np.bool_))


def test_records_without_an_end_are_left_out_and_counted() -> None:
    tables = build_tables(_raw(), _cycles(), StringTable())
    assert tables.unfinished == {"kernels": 1, "memcpy": 1}
    assert tables.kernels.start_ns.size == 4
    assert (tables.kernels.end_ns >= tables.kernels.start_ns).all()
    assert tables.memcpy.end_ns.tolist() == [2_020]
    line = unfinished_warning(tables.unfinished)
    assert line is not None and "1 kernels, 1 memcpy" in line


def test_complete_records_give_no_warning() -> None:
    raw = _raw()
    raw.memcpy.pop()
    raw.kernels.pop()
    tables = build_tables(raw, _cycles(), StringTable())
    assert tables.unfinished == {}
    assert unfinished_warning(tables.unfinished) is None


def test_the_run_file_keeps_the_rest_and_reads_back(tmp_path: Path) -> None:
    recording = Recording(raw=_raw(), cycles=_cycles(), metrics=(), trace_name="cupti_activity")
    run_file = build_run_file(recording, environment=ENV,
                              workload=Workload(name="p", params={}, command=("p",)),
                              status=Status("complete", None), warnings=[],
                              sample_interval_ns=0)
    path = save_run_file(run_file, tmp_path / "r.json.gz")
    back = load_run_file(path)
    assert back.runs[0].kernels.start_ns.size == 4
    assert back.runs[0].memcpy.start_ns.size == 1
    assert any("no end time" in w for w in back.collection.warnings)
