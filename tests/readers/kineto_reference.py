"""An independent, deliberately plain reading of a Kineto trace, for checking the reader.

Standard-library json with exact decimals, one dict per event, no vectorisation: slow and
obviously right. The rule is the one HTA and perfdiff both state: a GPU kernel belongs to the
ProfilerStep#N whose [ts, ts + dur) holds its launch (the runtime/driver event of the same
correlation).
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any


def _ns(value: Any) -> int:
    return int((Decimal(str(value)) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


def reference_step_totals(path: Path) -> dict[tuple[int, str], list[int]]:
    """(step number, kernel name) -> [launches, summed duration in ns]."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = json.loads(data, parse_float=Decimal)
    base = int(trace.get("baseTimeNanoseconds", 0))
    events = trace["traceEvents"]
    steps = []
    for e in events:
        match = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if e.get("cat") == "user_annotation" and match:
            start = base + _ns(e["ts"])
            steps.append((int(match.group(1)), start, start + _ns(e["dur"])))
    launches = {e["args"]["correlation"]: base + _ns(e["ts"]) for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in
                e.get("args", {})}
    totals: dict[tuple[int, str], list[int]] = {}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        launch = launches.get(e["args"].get("correlation"))
        if launch is None:
            continue
        for number, start, end in steps:
            if start <= launch < end:
                entry = totals.setdefault((number, e["name"]), [0, 0])
                entry[0] += 1
                entry[1] += _ns(e["dur"])
    return totals
