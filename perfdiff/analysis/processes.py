"""Match the processes of the two sides when their pids differ.

Why: two recordings of one service rarely keep their pids; statistics are per (pid, device), so
without matching every function would look appeared on one side and vanished on the other.
"""

from __future__ import annotations

import pandas as pd

from perfdiff.analysis import columns as C


def align_pids(normal: pd.DataFrame, abnormal: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Match the abnormal side's processes to the normal side's when their pids differ.

    Two recordings of one service rarely keep their pids; with the same number of processes on
    each side they are matched in pid order (LatencyPrism's "cross comparison" does the same),
    unless every process has devices of its own on both sides (one rank per GPU, as under
    torchrun): then the process on the same devices is the same rank, whatever its pid.
    """
    pids_n = sorted(set(normal[C.PID]))
    pids_a = sorted(set(abnormal[C.PID]))
    if pids_n == pids_a:
        return abnormal, ""
    if len(pids_n) != len(pids_a):
        return abnormal, (
            f"The sides hold different numbers of processes ({len(pids_n)} vs {len(pids_a)}): "
            "processes with a pid on one side only are not matched, so their functions are "
            "listed as appeared or vanished."
        )
    mapping = _match_by_devices(normal, abnormal)
    how = "by device"
    if mapping is None:
        mapping = dict(zip(pids_a, pids_n, strict=True))
        how = "by order"
    aligned = abnormal.copy()
    aligned[C.PID] = aligned[C.PID].map(mapping).astype("int64")
    pairs = ", ".join(f"{a} -> {n}" for a, n in mapping.items())
    return (
        aligned,
        f"Process ids differ between the sides; abnormal matched to normal {how}: {pairs}.",
    )


def _match_by_devices(normal: pd.DataFrame, abnormal: pd.DataFrame) -> dict[int, int] | None:
    """Abnormal pid -> normal pid with the same device set, if each set names one process."""

    def owners(table: pd.DataFrame) -> dict[frozenset[str], int] | None:
        sets = table.groupby(C.PID)[C.DEVICE].agg(frozenset)
        if sets.nunique() != len(sets):
            return None
        return {devices: int(str(pid)) for pid, devices in sets.items()}

    own_n, own_a = owners(normal), owners(abnormal)
    if own_n is None or own_a is None or own_n.keys() != own_a.keys():
        return None
    return {own_a[devices]: own_n[devices] for devices in sorted(own_a, key=sorted)}
