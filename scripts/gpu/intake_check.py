"""Raw CUPTI intake on a real GPU: record layout, saved buffers, record-for-record equality.

1. Layout: a short run through cupti-python's own callback (the object path) tells which
   record class it uses per kind; CUPTI's own walk (``cuptiActivityGetNextRecord``) of the
   buffers below gives each kind's record size, which must be the registered layout's.
2. Equality: a small torch workload (kernels, memcpy both ways, memset, launch API records)
   is recorded by perfdiff's backend (raw intake, small buffers, each buffer's bytes kept).
   The object path then reads the same kept buffers: CUPTI walks them, cupti-python's classes
   wrap each record and the object path's conversion (``_take_in``) runs on those objects.
   Every kernel, memcpy, memset and launch record must be equal, field for field.
3. Fixture: the first buffers (bytes + valid size), the names and the object path's records
   of those buffers are written to ``--save DIR`` for the CPU tests
   (tests/collect/cupti_tests/test_raw_buffers.py).

Usage: python scripts/gpu/intake_check.py [--save DIR] [--json OUT]
Prints one JSON line with the findings; exit 1 if anything differs.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

SMALL_BUFFER = 64 * 1024
SAVE_BUFFERS = 6


def dtype_for(cupti: Any, type_name: str) -> Any:
    stem = type_name[len("Activity"):].lower() if type_name.startswith("Activity") else ""
    return getattr(cupti, f"activity_{stem}_dtype", None)


def learn_types(torch: Any) -> dict[int, str]:
    """Which cupti-python record class the object path uses for each kind (a short run)."""
    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend

    types: dict[int, str] = {}

    class _Backend(CuptiActivityBackend):
        def _buffer_completed(self, activities: list[Any]) -> None:
            for a in activities:
                types.setdefault(int(a.kind), type(a).__name__)
            super()._buffer_completed(activities)

    backend = _Backend(raw_intake=False, trace_api=True, trace_memory=True)
    backend.start()
    workload(torch, 5)
    backend.stop()
    return types


def capturing_backend(spool: bool = True) -> Any:
    """perfdiff's backend (raw intake) with small buffers whose bytes are also kept; with
    ``spool``, as user programs record (issue 28): buffers written to a spool file at
    hand-over and decoded at stop, so the bytes kept are those read back from the file."""
    import tempfile

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cupti.raw_intake import RawIntake

    backend = CuptiActivityBackend(
        trace_api=True, trace_memory=True,
        spool_dir=tempfile.mkdtemp(prefix="perfdiff-spool-") if spool else None)
    intake = backend.intake
    assert intake is not None, backend.warnings

    class _Keeping(RawIntake):
        kept: ClassVar[list[bytes]] = []

        def take(self, array: Any, valid: int) -> int:
            self.kept.append(bytes(array[:valid]))
            return super().take(array, valid)

    backend.intake = _Keeping(intake._lib, intake.layout, backend.clock_ns,
                              buffer_bytes=SMALL_BUFFER)
    return backend


def cupti_walk(lib: Any, data: bytes) -> tuple[Any, list[int]]:
    """CUPTI's own walk of a buffer (cuptiActivityGetNextRecord): the record addresses."""
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    base = arr.ctypes.data
    record = ctypes.c_void_p(None)
    fn = lib.cuptiActivityGetNextRecord
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    out = []
    while fn(ctypes.c_void_p(base), ctypes.c_size_t(arr.size), ctypes.byref(record)) == 0:
        out.append(int(record.value or 0))
    return arr, out


def workload(torch: Any, rounds: int) -> None:
    dev = torch.device("cuda", 0)
    a = torch.randn(256, 256, device=dev)
    host = torch.randn(4096).pin_memory()
    flag = torch.zeros(64, dtype=torch.uint8, device=dev)
    side = torch.cuda.Stream()
    for i in range(rounds):
        b = a @ a
        b.add_(1.0).relu_()
        d = host.to(dev, non_blocking=True)
        d.mul_(2.0)
        _ = d.cpu()
        flag.fill_(i % 7)
        with torch.cuda.stream(side):
            c = torch.ones(128, 128, device=dev) * 3
            c.sum()
    torch.cuda.synchronize()


def records_as_tuples(kernels: Any, memcpy: Any, memset: Any, api: Any) -> dict[str, list[Any]]:
    return {
        "kernels": sorted((k.name, k.device, k.stream, k.start_ns, k.end_ns, k.correlation_id,
                           *k.grid, *k.block) for k in kernels),
        "memcpy": sorted(tuple(t) for t in memcpy),
        "memset": sorted(tuple(t) for t in memset),
        "api": sorted(tuple(t) for t in api),
    }


def columns_as_tuples(cols: Any) -> dict[str, list[Any]]:
    from perfdiff.collect.columns import TRANSFER_KINDS

    k = cols.kernels
    kernels = sorted(
        (cols.names[int(r["name_key"])], int(r["device"]), int(r["stream"]), int(r["start"]),
         int(r["end"]), int(r["correlation_id"]), int(r["grid_x"]), int(r["grid_y"]),
         int(r["grid_z"]), int(r["block_x"]), int(r["block_y"]), int(r["block_z"]))
        for r in k)

    def transfers(t: Any) -> list[Any]:
        return sorted((TRANSFER_KINDS[int(r["kind"])], int(r["bytes"]), int(r["device"]),
                       int(r["stream"]), int(r["start"]), int(r["end"]),
                       int(r["correlation_id"])) for r in t)

    return {"kernels": kernels, "memcpy": transfers(cols.memcpy),
            "memset": transfers(cols.memset),
            "api": sorted((int(r["correlation_id"]), int(r["start"])) for r in cols.api)}


def check(save: Path | None, spool: bool = True) -> dict[str, Any]:
    import torch

    from perfdiff.collect.cupti.cupti_activity import CuptiActivityBackend
    from perfdiff.collect.cupti.raw_intake import cupti_api_version

    torch.cuda.init()
    types = learn_types(torch)
    backend = capturing_backend(spool)
    intake = backend.intake
    version = cupti_api_version(intake._lib)
    backend.start()
    workload(torch, 120)
    raw = backend.stop()
    cols = raw.columns
    # The object path on the same records: CUPTI walks each kept buffer, cupti-python's
    # classes read each record, and the object path's own conversion (_take_in) runs on them.
    objects = CuptiActivityBackend(raw_intake=False, trace_api=True, trace_memory=True)
    cupti = objects._cupti
    sizes: dict[int, set[int]] = {}
    per_buffer = []
    for data in intake.kept:
        arr, addresses = cupti_walk(intake._lib, data)
        ends = [*addresses[1:], arr.ctypes.data + arr.size]
        records = []
        for address, end in zip(addresses, ends, strict=True):
            kind = int(np.frombuffer(ctypes.string_at(address, 4), dtype="<i4")[0])
            sizes.setdefault(kind, set()).add(end - address)
            cls = getattr(cupti, types.get(kind, ""), None)
            if cls is not None:
                records.append(cls.from_ptr(address, readonly=True, owner=arr))
        before = (len(objects._raw.kernels), len(objects._raw.memcpy), len(objects._raw.memset),
                  len(objects._raw.api))
        objects._take_in(records)
        o = objects._raw
        per_buffer.append((o.kernels[before[0]:], o.memcpy[before[1]:], o.memset[before[2]:],
                           o.api[before[3]:]))
    o = objects._raw
    old = records_as_tuples(o.kernels, o.memcpy, o.memset, o.api)
    new = columns_as_tuples(cols)
    layout = intake.layout
    found: dict[str, Any] = {
        "cupti_api_version": version, "types": {str(k): v for k, v in types.items()},
        "sizes_by_cupti_walk": {str(k): sorted(v) for k, v in sizes.items()},
        "registered_sizes": {str(k): v for k, v in layout.sizes.items()},
        "dtype_sizes": {v: int(dtype_for(cupti, v).itemsize) for v in types.values()},
        "buffers": len(intake.kept), "spooled": spool,
        "handovers_decoding": sum(1 for h in raw.handovers if h[2]),
        "registered_layout_matches": all(sorted(v) == [layout.sizes.get(k)]
                                         for k, v in sizes.items()),
        "counts": {key: [len(old[key]), len(new[key])] for key in old},
        "equal": {key: old[key] == new[key] for key in old},
        "warnings": backend.warnings,
    }
    if save is not None:
        save_fixture(save, intake.kept, per_buffer, cols, layout, found, torch)
    return found


def save_fixture(save: Path, kept: list[bytes], per_buffer: list[Any], cols: Any,
                 layout: Any, found: dict[str, Any], torch: Any) -> None:
    save.mkdir(parents=True, exist_ok=True)
    keep = kept[:SAVE_BUFFERS]
    np.savez_compressed(save / "buffers.npz",
                        **{f"buffer{i}": np.frombuffer(b, dtype=np.uint8)
                           for i, b in enumerate(keep)})
    expected = []
    for kernels, memcpy, memset, api in per_buffer[:SAVE_BUFFERS]:
        expected.append(records_as_tuples(kernels, memcpy, memset, api))
    names: dict[str, str] = {str(k): v for k, v in cols.names.items()}
    props = torch.cuda.get_device_properties(0)
    meta = {
        "what": "CUPTI activity buffers as perfdiff's raw intake received them, with the "
                "records the object path (cupti-python's classes on CUPTI's own walk, "
                "CuptiActivityBackend._take_in) gives for each buffer",
        "command": "python scripts/gpu/intake_check.py --save DIR",
        "gpu": props.name, "driver": torch.cuda.driver_version() if hasattr(
            torch.cuda, "driver_version") else None,
        "torch": torch.__version__, "python": platform.python_version(),
        "recorded_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cupti_api_version": found["cupti_api_version"], "types": found["types"],
        "layout_sizes": {str(k): v for k, v in layout.sizes.items()},
    }
    (save / "records.json").write_text(json.dumps(
        {"meta": meta, "names": names, "buffers": expected}, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    found = check(args.save)
    print(json.dumps(found))
    ok = all(found["equal"].values()) and found["registered_layout_matches"] is True
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
