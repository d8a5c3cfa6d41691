"""Known kernels whose names say nothing: exact names, each with the public source of its body.

Why a second table beside the name rules (``family_rules.py``): the rules read what a name
says (``gemm``, ``softmax``, ``par_ranged``), and some widely run benchmark kernels are named
for nothing they do. Rodinia's Gaussian elimination launches ``Fan1`` and ``Fan2``; no rule
could label them without guessing, and a pattern such as ``^Fan\\d`` would also catch anyone's
kernel of that name. So such kernels are listed here by their *exact* demangled name, the
parameter list included (a user's own ``Fan1`` of another signature stays "other"), and each
row cites the public source that shows the kernel's body (repository, commit, file, lines)
and says why that body belongs to its family. ``families.classify`` looks here first;
``tests/analysis/test_known_kernels.py`` checks that every row's name was seen in a real
recording (``fixtures/kernel-names``) and cites a source.

Add a row only with a recording of the name and a cited body; a suite's other kernels get no
row until then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from perfdiff.analysis.family_rules import SOLVER


@dataclass(frozen=True)
class KnownKernel:
    """One kernel of a public suite or library: its exact name, family, and the evidence."""

    name: str  # exact demangled name, as CUPTI, Nsight Systems and torch.profiler print it
    family: str
    suite: str
    source: str  # repository@commit:path:lines showing the body
    why: str


# Gaussian elimination without pivoting is an LU factorisation (LAPACK's unblocked getf2:
# scale the column, then a rank-1 update of the trailing matrix), the job the rules label
# "solver" in cuSOLVER's and MAGMA's kernels (getrf, scal_kernel, larf). Labelling Fan1
# "elementwise" and Fan2 "GEMM" would split one factorisation over two families and put a
# memory-bound rank-1 update beside tensor-core matrix products in the [GEMM] row; replacing
# this code with cuSOLVER's getrf then reads as solver -> solver, like for like.
KNOWN_KERNELS: Final[tuple[KnownKernel, ...]] = (
    KnownKernel(
        name="Fan1(float *, float *, int, int)",
        family=SOLVER,
        suite="Rodinia 3.1, gaussian (CUDA)",
        source="yuhc/gpu-rodinia@9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4:"
               "cuda/gaussian/gaussian.cu:309-316; the same body in "
               "kmcho2019/Rodinia_3.1_Gaussian@d4446f4979af12da991ec7e8304fead0c384a328:"
               "gaussian_unoptimized.cu:289-305",
        why="computes the multipliers of column t, m[i][t] = a[i][t] / a[t][t] for the rows "
            "below the pivot: the column scaling of an LU factorisation step",
    ),
    KnownKernel(
        name="Fan2(float *, float *, float *, int, int, int)",
        family=SOLVER,
        suite="Rodinia 3.1, gaussian (CUDA)",
        source="yuhc/gpu-rodinia@9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4:"
               "cuda/gaussian/gaussian.cu:323-339; the same body in "
               "kmcho2019/Rodinia_3.1_Gaussian@d4446f4979af12da991ec7e8304fead0c384a328:"
               "gaussian_unoptimized.cu:312-328",
        why="updates the rows below the pivot, a[i][j] -= m[i][t] * a[t][j], and the right-hand "
            "side, b[i] -= m[i][t] * b[t]: the rank-1 trailing update of an LU factorisation "
            "step with its forward substitution",
    ),
)

FAMILY_OF_KNOWN: Final[dict[str, str]] = {k.name: k.family for k in KNOWN_KERNELS}
