"""Kernel inventory changes: functions present on one side only (appeared / vanished).

Why not zero-fill them into the statistics: a kernel that exists on one side only is a change of
*what* ran (another library, another code path), not a change of how fast one thing ran; its
"z-score" against zeros would be meaningless. It is reported with its time per cycle instead.
"""

from __future__ import annotations

import math

import pandas as pd

from perfdiff.analysis.model import InventoryChange
from perfdiff.analysis.units import SideUnits, group_rows, groups_of


def present_functions(frame: pd.DataFrame) -> set[str]:
    """Functions with any non-zero time in a group's unit frame."""
    return {str(c) for c in frame.columns[(frame != 0).any(axis=0).to_numpy()]}


def inventory_changes(units: tuple[SideUnits, SideUnits]) -> list[InventoryChange]:
    """Appeared and vanished functions of every (pid, device), largest time first."""
    out: list[InventoryChange] = []
    for group in sorted(set(groups_of(units[0].time_ms)) | set(groups_of(units[1].time_ms))):
        frames = [group_rows(u.time_ms, group) for u in units]
        present = [present_functions(f) for f in frames]
        for side, change in ((1, "appeared"), (0, "vanished")):
            for name in sorted(present[side] - present[1 - side]):
                launches = units[side].launches.get((group[0], group[1], name), math.nan)
                out.append(
                    InventoryChange(
                        function=name,
                        device=group[1],
                        pid=group[0],
                        change="appeared" if change == "appeared" else "vanished",
                        time_ms_per_cycle=float(frames[side][name].mean()),
                        launches_per_cycle=float(launches),
                    )
                )
    return sorted(out, key=lambda i: (-i.time_ms_per_cycle, i.function, i.device))
