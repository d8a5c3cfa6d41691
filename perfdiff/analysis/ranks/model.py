"""The typed result of ``perfdiff ranks``: each rank of one job against the others.

Why a model of its own: a straggler verdict is not a two-run comparison. There is one job, its
ranks run the same steps in lock-step (every collective waits for the slowest rank), and the
question is which rank the others wait for. The report renders these objects and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from perfdiff.errors import UsageError

RankVerdict = Literal["straggler", "slower, waits too", "no straggler", "insufficient data"]


# GPU-to-GPU variation (CV, %) of the same work on healthy ranks of one job; defined once:
# ``ranks``' option takes its default from it. Not the between-process variation ``compare``
# assumes for one-run sides (``perfdiff.analysis.model.DEFAULT_RUN_CV_PCT``): ranks of one job
# share the process start, the inputs and the moment, so the two are separate settings.
DEFAULT_GPU_CV_PCT = 2.0


@dataclass(frozen=True)
class RanksOptions:
    """Knobs of the straggler search (the CLI maps its flags onto these).

    ``gpu_cv_pct``: how much the same work may differ between two healthy ranks of one job
    (different GPUs of one model, their clocks and placement), as a coefficient of variation;
    it is added to the standard error of a rank's excess so that a 0.3 % difference between two
    healthy cards is never called a straggler because 40 cycles measured it precisely.
    """

    alpha: float = 0.05  # false-discovery rate over ranks (and over a straggler's kernels)
    practical_threshold_pct: float = 1.0  # excess work must exceed this share of the cycle
    gpu_cv_pct: float = DEFAULT_GPU_CV_PCT
    n_batches: int = 10  # batch means of consecutive cycles (they are correlated)
    top: int = 10  # kernels named per straggler in the markdown report

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise UsageError(f"alpha {self.alpha}: must be between 0 and 1")
        if self.practical_threshold_pct < 0 or self.gpu_cv_pct < 0:
            raise UsageError("the threshold and the GPU-to-GPU variation must be >= 0")
        if self.n_batches < 2 or self.top < 1:
            raise UsageError("n_batches must be >= 2 and top >= 1")


@dataclass(frozen=True)
class KernelExcess:
    """One function's time per cycle on a rank, beside the median of the other ranks."""

    function: str
    collective: bool
    rank_ms: float  # mean per cycle on this rank
    others_ms: float  # mean per cycle of the per-cycle median over the other ranks
    excess_ms: float  # rank_ms - others_ms, mean of the per-cycle differences
    share_of_excess_pct: float  # of the rank's excess non-collective work
    p_value: float
    q_value: float


@dataclass(frozen=True)
class RankRow:
    """One rank: its GPU work and its collective wait per cycle, beside the other ranks'."""

    rank: str  # "rank 1" (or "pid 1234" when the input names no ranks)
    pid: int
    devices: tuple[str, ...]
    n_cycles: int  # cycles this rank shares with every other rank
    cycle_ms: float  # mean cycle time of this rank
    work_ms: float  # non-collective GPU kernel time per cycle (mean)
    wait_ms: float  # collective kernel time per cycle (mean)
    others_work_ms: float  # median over the other ranks, per cycle, then the mean
    others_wait_ms: float
    excess_work_ms: float
    excess_work_pct: float  # of this rank's mean cycle time
    p_value: float
    q_value: float
    verdict: RankVerdict
    kernels: tuple[KernelExcess, ...] = ()  # stragglers only: the kernels that make it slow
    waits: tuple[KernelExcess, ...] = ()  # stragglers only: collectives the others wait in


@dataclass(frozen=True)
class RanksReport:
    """Every rank of one job, stragglers first (largest excess work first), then by rank."""

    source: str
    workload: str
    n_ranks: int
    n_cycles: int  # cycles common to every rank
    ranks: tuple[RankRow, ...]
    options: RanksOptions
    notes: tuple[str, ...] = ()

    @property
    def stragglers(self) -> tuple[RankRow, ...]:
        """The ranks named stragglers, worst first."""
        return tuple(r for r in self.ranks if r.verdict == "straggler")


__all__ = ["KernelExcess", "RankRow", "RankVerdict", "RanksOptions", "RanksReport"]
