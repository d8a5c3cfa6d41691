"""Align two cycles' launch sequences and say which kernels replaced which.

Why: the regressions met most often change *which* kernels run (a precision, an attention
backend, a library, the hardware), and a kernel that vanished next to one that appeared at the
same place in the program is one change, not two. The method (docs/explanation/families.md):

1. **Anchors.** A kernel name launched the same number of times in both cycles is a candidate
   anchor; its k-th launch on one side is paired with its k-th launch on the other. The
   longest chain of such pairs that keeps launch order on both sides (a longest increasing
   subsequence, O(n log n)) are the anchors: an exact-name common subsequence that, unlike a
   quadratic LCS, takes milliseconds on 10,000-launch cycles.
2. **Stretches.** Between consecutive anchors, what is left on each side is aligned exactly
   (an LCS on names, small); what stays unmatched on *both* sides is a stretch.
3. **Like for like.** Inside a stretch, kernels are paired only within one family (an LCS on
   families). When every kernel of the shorter side finds a partner, each partner pair is an
   "X replaced by Y" pair (leftovers are plain appearances or disappearances); otherwise the
   whole stretch is a replaced group ("cuDNN SDPA -> bmm + softmax + bmm").

A stretch with one side empty is not a replacement (it is a launch-count change, reported
elsewhere). Which pairs and groups recur in nearly every cycle is decided by the caller
(``replacements.py``), which aligns every cycle of a side against the other side's
reference cycle.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Replaced:
    """One replacement found in one aligned cycle pair.

    ``before`` / ``after`` are the kernel names on the normal / abnormal side, in launch
    order; ``before_at`` / ``after_at`` their positions in the two sequences.
    """

    before: tuple[str, ...]
    after: tuple[str, ...]
    before_at: tuple[int, ...]
    after_at: tuple[int, ...]

    @property
    def is_pair(self) -> bool:
        return len(self.before) == 1 and len(self.after) == 1


def anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Order-preserving pairs (i, j) of equal names launched equally often on both sides."""
    count_a, count_b = Counter(a), Counter(b)
    positions_b: dict[str, list[int]] = defaultdict(list)
    for j, name in enumerate(b):
        if count_a[name] == count_b[name]:
            positions_b[name].append(j)
    seen: Counter[str] = Counter()
    candidates: list[tuple[int, int]] = []
    for i, name in enumerate(a):
        if count_a[name] == count_b[name]:
            candidates.append((i, positions_b[name][seen[name]]))
            seen[name] += 1
    return _longest_increasing(candidates)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (sorted by i) whose j strictly increase."""
    tails: list[int] = []  # tails[k]: smallest j ending an increasing run of length k+1
    tail_at: list[int] = []  # index into pairs of that tail
    previous = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(index)
        else:
            tails[k] = j
            tail_at[k] = index
        previous[index] = tail_at[k - 1] if k > 0 else -1
    out: list[tuple[int, int]] = []
    at = tail_at[-1] if tail_at else -1
    while at >= 0:
        out.append(pairs[at])
        at = previous[at]
    return out[::-1]


def _lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Exact LCS of two short sequences (dynamic programming), as index pairs."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    out = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append((i, j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


# Stretches whose two sides' lengths multiply to more than this are not aligned inside (the
# exact LCS is quadratic): a program that changed shape that much is left to the inventory.
# One side may be long when the other is short (a fused optimizer kernel -> 616 unfused ones).
MAX_STRETCH_CELLS = 40_000


def replacements(
    a: Sequence[str], b: Sequence[str], family: Callable[[str], str]
) -> list[Replaced]:
    """Pairs and groups of kernels that took each other's place between ``a`` and ``b``."""
    out: list[Replaced] = []
    bounds = [(-1, -1), *anchors(a, b), (len(a), len(b))]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        gap_a, gap_b = range(i0 + 1, i1), range(j0 + 1, j1)
        if not gap_a or not gap_b:
            continue
        if len(gap_a) * len(gap_b) > MAX_STRETCH_CELLS:
            continue
        names_a, names_b = [a[i] for i in gap_a], [b[j] for j in gap_b]
        matched = _lcs_pairs(names_a, names_b)
        for sa, sb in _unmatched_stretches(matched, len(names_a), len(names_b)):
            if sa and sb:
                out.extend(_like_for_like([gap_a[i] for i in sa], [gap_b[j] for j in sb],
                                          a, b, family))
    return out


def _unmatched_stretches(
    matched: list[tuple[int, int]], n: int, m: int
) -> list[tuple[list[int], list[int]]]:
    """The runs of unmatched positions between consecutive matched pairs, on both sides."""
    out = []
    bounds = [(-1, -1), *matched, (n, m)]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        out.append((list(range(i0 + 1, i1)), list(range(j0 + 1, j1))))
    return out


def _like_for_like(
    at_a: list[int], at_b: list[int], a: Sequence[str], b: Sequence[str],
    family: Callable[[str], str],
) -> list[Replaced]:
    fam_a = [family(a[i]) for i in at_a]
    fam_b = [family(b[j]) for j in at_b]
    pairs = _lcs_pairs(fam_a, fam_b)
    if len(pairs) == min(len(at_a), len(at_b)):
        return [
            Replaced((a[at_a[i]],), (b[at_b[j]],), (at_a[i],), (at_b[j],)) for i, j in pairs
        ]
    return [
        Replaced(
            tuple(a[i] for i in at_a), tuple(b[j] for j in at_b), tuple(at_a), tuple(at_b)
        )
    ]
