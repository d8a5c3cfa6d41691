"""The period of a launch sequence: where a program that marks nothing repeats itself.

Why here: both the collector (a user program given no marking option) and the trace readers
(a torch.profiler trace without ``ProfilerStep`` ranges) must cut cycles out of nothing but the
order of kernel launches, and both may import ``schema`` only. Pure numpy, no I/O.

How: a training step or a decode step launches the same kernels in the same order every
iteration. Take a kernel name (the *anchor*); its launches split the sequence into segments.
When the anchor is launched once per iteration, every segment is one iteration and the
segments are equal. An anchor launched once per *layer* gives equal segments too, except the
one holding the embedding, the head and the optimizer: so each anchor is scored by the share
of all launches that lie in segments equal to its most common segment, and the anchor with the
highest share wins (ties: the anchor launched after the longest host pause, the natural place
for an iteration to begin; then the lowest name id, so the answer is deterministic).

Noise: a program may launch an extra kernel now and then (a logging step's ``.item()``, a
lazily built cache). A segment still counts as equal when the common segment is a
subsequence of it, or it of the common segment, their lengths differ by at most
``max(2, period // 20)`` launches, and that variant is rare (the common segment is at least
``NOISE_RARITY`` times as frequent): a variant that comes back every iteration is structure,
such as the head's segment of a per-layer anchor, and must not count as a repetition.
Segments are compared through an order-sensitive hash computed with prefix sums (wrapping
uint64 arithmetic), so scoring every name costs O(n) in all; only segments of nearly the
right length that differ are compared launch by launch.

API: :func:`detect_period` takes the sequence of kernel-name ids in launch order (optionally
the launch times) and returns a :class:`Period`: ``found``, the period in launches, the
anchor, each cycle's first and one-past-last position, whether each cycle matches the
pattern, and a confidence (the matching share). :func:`cycle_bounds_ns` turns the cycles
into host time intervals ``[start, end)`` on the launch clock. Launches before the first
anchor launch and from the last one on belong to no cycle (a tail that stops mid-iteration
would read as a short, fast cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MIN_CYCLES = 3  # fewer matching iterations than this is not a repetition worth comparing
MIN_SHARE = 0.5  # at least half of all launches must lie in matching cycles
NOISE_RARITY = 4  # a variant segment is noise when the pattern is at least 4x as common

_BASE = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2**64
_BASE_INV = pow(_BASE, -1, 1 << 64)


@dataclass(frozen=True)
class Period:
    """What :func:`detect_period` found (or why nothing).

    ``starts[j]`` / ``ends[j]``: position in the launch sequence of cycle ``j``'s first launch
    and one past its last (``ends[j] == starts[j + 1]``: cycles are contiguous).
    ``matches[j]``: whether cycle ``j`` repeats the pattern (within the noise tolerance).
    ``confidence``: the share of *all* launches that lie in matching cycles (0..1).
    """

    found: bool
    reason: str
    period_launches: int
    anchor_id: int
    starts: IntArray
    ends: IntArray
    matches: BoolArray
    confidence: float

    @property
    def cycles(self) -> int:
        return int(self.starts.size)

    def describe(self) -> str:
        """One line for warnings and reports: ``detected period of 312 launches ...``."""
        if not self.found:
            return f"no repeating launch sequence found ({self.reason})"
        return (f"detected period of {self.period_launches} launches ({self.cycles} cycles, "
                f"{self.confidence:.0%} of launches repeat it)")


def not_found(reason: str) -> Period:
    """A :class:`Period` that says no repetition was found, and why."""
    empty = np.zeros(0, dtype=np.int64)
    return Period(found=False, reason=reason, period_launches=0, anchor_id=-1, starts=empty,
                  ends=empty.copy(), matches=np.zeros(0, dtype=np.bool_), confidence=0.0)


@dataclass(frozen=True)
class _Candidate:
    share: float
    gap_ns: float
    anchor_id: int
    period: int
    starts: IntArray
    ends: IntArray
    matches: BoolArray

    def key(self) -> tuple[float, float, int]:
        return (self.share, self.gap_ns, -self.anchor_id)


def detect_period(
    name_ids: npt.ArrayLike,
    launch_ns: npt.ArrayLike | None = None,
    *,
    min_cycles: int = MIN_CYCLES,
    min_share: float = MIN_SHARE,
) -> Period:
    """The repeating iteration of a launch sequence, or ``found=False`` with the reason.

    ``name_ids``: kernel-name id of each launch, in launch order. ``launch_ns``: launch time of
    each (same order, non-decreasing); only used to prefer, among equally good anchors, the one
    launched after the longest pause.
    """
    seq = np.asarray(name_ids, dtype=np.int64).reshape(-1)
    n = int(seq.size)
    if n < 2 * (min_cycles + 1):
        return not_found(f"only {n} launches")
    times = None if launch_ns is None else np.asarray(launch_ns, dtype=np.int64).reshape(-1)
    if times is not None and times.size != n:
        raise ValueError(f"{times.size} launch times for {n} launches")
    gaps = np.zeros(n, dtype=np.float64)
    if times is not None:
        gaps[1:] = np.diff(times)
    prefix, inverse = _prefix_hashes(seq)
    best: _Candidate | None = None
    order = np.argsort(seq, kind="stable")
    symbols, first, counts = np.unique(seq[order], return_index=True, return_counts=True)
    for symbol, begin, count in zip(symbols.tolist(), first.tolist(), counts.tolist(),
                                    strict=True):
        if count < min_cycles + 1:
            continue
        positions = order[begin:begin + count]  # stable sort: already increasing
        found = _score_anchor(seq, positions, prefix, inverse, n)
        if found is None:
            continue
        share, period, matches = found
        candidate = _Candidate(share=share, gap_ns=float(np.median(gaps[positions])),
                               anchor_id=int(symbol), period=period,
                               starts=positions[:-1].astype(np.int64),
                               ends=positions[1:].astype(np.int64), matches=matches)
        if best is None or candidate.key() > best.key():
            best = candidate
    if best is None:
        return not_found("no kernel is launched the same way in enough iterations")
    matched = int(best.matches.sum())
    if matched < min_cycles or best.share < min_share:
        return not_found(
            f"best candidate: {best.period} launches, {matched} matching cycles covering "
            f"{best.share:.0%} of launches (needs {min_cycles} and {min_share:.0%})")
    return Period(found=True, reason="", period_launches=best.period, anchor_id=best.anchor_id,
                  starts=best.starts, ends=best.ends, matches=best.matches,
                  confidence=best.share)


def cycle_bounds_ns(period: Period, launch_ns: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """Each cycle's host interval ``[start, end)``: from its first launch to the next cycle's.

    A launch at time t belongs to the cycle whose interval holds t, the rule by which kernels
    are assigned to marked cycles, so no kernel lands in a cycle it was not launched in.
    """
    times = np.asarray(launch_ns, dtype=np.int64).reshape(-1)
    if period.cycles == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    return times[period.starts].copy(), times[period.ends].copy()


def _prefix_hashes(seq: IntArray) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """``prefix[i] = sum_{j<i} r[seq[j]] * B**j`` and ``inverse[i] = B**-i`` (mod 2**64).

    The hash of ``seq[a:b]`` is ``(prefix[b] - prefix[a]) * inverse[a]``: equal segments, at
    any position, hash equal. ``r`` is a fixed pseudo-random value per name id.
    """
    n = int(seq.size)
    rng = np.random.default_rng(0x5EED)
    values = rng.integers(1, np.iinfo(np.int64).max, size=int(seq.max()) + 1 if n else 1,
                          dtype=np.int64).astype(np.uint64)
    powers = np.empty(n + 1, dtype=np.uint64)
    inverse = np.empty(n + 1, dtype=np.uint64)
    # cumprod on uint64 wraps modulo 2**64, which is the arithmetic wanted here
    powers[0] = 1
    inverse[0] = 1
    if n:
        powers[1:] = np.cumprod(np.full(n, _BASE, dtype=np.uint64))
        inverse[1:] = np.cumprod(np.full(n, _BASE_INV, dtype=np.uint64))
    prefix = np.zeros(n + 1, dtype=np.uint64)
    prefix[1:] = np.cumsum(values[seq] * powers[:n])
    return prefix, inverse


def _score_anchor(
    seq: IntArray,
    positions: IntArray,
    prefix: npt.NDArray[np.uint64],
    inverse: npt.NDArray[np.uint64],
    n: int,
) -> tuple[float, int, BoolArray] | None:
    """(share of launches in matching segments, period, per-segment match) for one anchor."""
    starts = positions[:-1]
    ends = positions[1:]
    lengths = ends - starts
    hashes = (prefix[ends] - prefix[starts]) * inverse[starts]
    keys, first, inverse_key, counts = np.unique(hashes, return_index=True, return_inverse=True,
                                                 return_counts=True)
    # the most common segment; among equally common ones the shortest (noise only adds)
    best = min(range(keys.size), key=lambda i: (-int(counts[i]), int(lengths[first[i]]),
                                                int(first[i])))
    if counts[best] < 2 and starts.size > 2:
        return None
    ref_at = int(first[best])
    period = int(lengths[ref_at])
    matches = hashes == keys[best]
    tolerance = max(2, period // 20)
    # noise is occasional: a variant as common as a quarter of the pattern is structure (the
    # segment of a per-layer anchor that holds the head), not an extra kernel now and then
    rare = counts[inverse_key.reshape(-1)] * NOISE_RARITY <= counts[best]
    near = np.flatnonzero(~matches & rare & (np.abs(lengths - period) <= tolerance))
    if near.size:
        reference = seq[starts[ref_at]:ends[ref_at]].tolist()
        for j in near.tolist():
            segment = seq[starts[j]:ends[j]].tolist()
            if _is_subsequence(reference, segment) or _is_subsequence(segment, reference):
                matches[j] = True
    share = float(lengths[matches].sum()) / n
    return share, period, matches


def _is_subsequence(short: list[int], long: list[int]) -> bool:
    """Whether ``short`` is ``long`` with some items left out (order kept)."""
    if len(short) > len(long):
        return False
    it = iter(long)
    return all(any(item == other for other in it) for item in short)


__all__ = ["MIN_CYCLES", "MIN_SHARE", "Period", "cycle_bounds_ns", "detect_period", "not_found"]
