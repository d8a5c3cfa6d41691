"""Cycles: how a recording decides where one cycle (a training or inference step) starts and ends.

Boundary marks, NVTX ranges, a found anchor function, optimizer/profiler steps found in the
user's program, fixed time windows, program marks, the untraced-cycle schedule and the cost
it pays (``overhead``) and the import hooks that find those functions: every rule that cuts a
recording into cycles lives here, apart from the CUPTI tracing that fills the cycles.
"""

from __future__ import annotations
