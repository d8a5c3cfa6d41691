"""The NVML polling process (``python -m perfdiff.collect.nvml.nvml_poller``): NVML read from a
process of its own, so that polling never takes the profiled program's interpreter lock.

Why a process: every NVML call from a thread of the program releases the interpreter lock and
takes it back, 7 calls per poll every 10 ms, and each take-back makes the program's thread
hand the lock over (``perfdiff/collect/nvml/nvml_process.py``). Here the polling has an
interpreter to itself.

Protocol: ``--out FILE`` gets one JSON header line (the quantities read, their units, the
warnings for those dropped), then one binary row per poll: ``<q`` (``time.perf_counter_ns``,
CLOCK_MONOTONIC, the same clock in every process of the host) and one ``<d`` per quantity
(NaN where a read failed). The poller stops on SIGTERM (the parent's stop), or when its
standard input closes or its parent changes (the parent died), after one last row. SIGTERM
rather than closing the pipe: a program that forks workers (DataLoader) hands them the
pipe's write end too, and the pipe would then never close. A byte ``p`` on standard input
pauses the polling (no reads, no rows) and ``r`` resumes it: the parent's untraced cycles
(``perfdiff/collect/cycles/overhead.py``) measure the program without any of the collector.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import struct
import sys
import time
from typing import Any

from perfdiff.collect.nvml.sampler import device_handle, load_nvml, read_row, working_quantities


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="perfdiff.collect.nvml.nvml_poller")
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--uuid", default="")
    parser.add_argument("--interval-s", type=float, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)  # before the header: the parent may stop at once
    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        nv = load_nvml()
        handle = device_handle(nv, args.index, args.uuid or None)
    except Exception as exc:  # NvmlUnavailable, or no handle for the device
        os.write(fd, (json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        return 1
    warnings: list[str] = []
    working = working_quantities(nv, handle, warnings)
    header = {"names": [q.name for q in working], "units": [q.unit for q in working],
              "warnings": warnings}
    row = struct.Struct("<q" + "d" * len(working))
    parent = os.getppid()
    paused = False
    try:
        os.write(fd, (json.dumps(header) + "\n").encode())
        while True:
            if not paused:
                os.write(fd, row.pack(time.perf_counter_ns(), *read_row(working, nv, handle)))
            ready, _, _ = select.select([sys.stdin], [], [],
                                        PAUSED_CHECK_S if paused else args.interval_s)
            if ready:
                data = os.read(sys.stdin.fileno(), 4096)
                if not data:
                    break  # stdin closed: the parent died
                paused = _paused_after(data, paused)
            if os.getppid() != parent:
                break  # the parent gone
    except _Stopped:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.write(fd, row.pack(time.perf_counter_ns(), *read_row(working, nv, handle)))
    os.close(fd)
    return 0


PAUSED_CHECK_S = 1.0  # while paused, how often to check that the parent is still there


def _paused_after(data: bytes, paused: bool) -> bool:
    """The pause state after the commands in ``data`` (the last ``p`` or ``r`` wins)."""
    for byte in reversed(data):
        if byte in b"pr":
            return byte == ord("p")
    return paused


class _Stopped(BaseException):
    """SIGTERM from the parent: write the last row and leave.

    A BaseException, like KeyboardInterrupt: the handler raises it wherever the poller is,
    most often inside an NVML read, and ``read_row`` turns every ``Exception`` of a read into
    NaN. As an Exception it was swallowed there, the poller went on polling, and the parent's
    stop waited its 10 s and killed it (seen once in a CPU test run, 2026-11-27)."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped


if __name__ == "__main__":
    sys.exit(main())
