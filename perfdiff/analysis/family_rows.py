"""Kernel families as rows of the cycle tables (``[GEMM]``, ``[attention]``, ...).

Why rows: "the GEMMs got 20 ms slower" is often the finding, when no single GEMM is (a
precision change swaps two dozen GEMM kernels for two dozen others, each one appearing or
vanishing). A family row sums the time of its kernels (and copies) per cycle, on each side,
and is tested and ranked like any function. A family with a single kernel name on both sides
gets no row: the kernel's own row says the same thing; nor does "other", which is not a kind
of work but the lack of a rule (its kernels are tested one by one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfdiff.analysis import columns as C
from perfdiff.analysis.families import classify
from perfdiff.analysis.family_rules import OTHER

FAMILY_TYPE = C.FAMILY_TYPE
WORK_TYPES = frozenset({*C.KERNEL_TYPES, "memcpy", "memset"})


def family_label(family: str) -> str:
    """The pseudo-function name of a family row."""
    return f"[{family}]"


def work_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, pid, device, cycle, function) of GPU work, with its family.

    Classified once per distinct (function, type) and spread by integer codes: a per-row
    lookup cost ~1 s of a 2 x 1,000,000-launch compare (bench/README.md, issue 25)."""
    work = table[table[C.FUNC_TYPE].isin(WORK_TYPES)]
    work = work.drop_duplicates([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.FUNCTION])
    fn_codes, fn_names = pd.factorize(work[C.FUNCTION])
    type_codes, type_names = pd.factorize(work[C.FUNC_TYPE])
    pair_codes, pairs = pd.factorize(fn_codes * max(len(type_names), 1) + type_codes)
    classes = [classify(str(fn_names[int(p) // len(type_names)]),
                        str(type_names[int(p) % len(type_names)])) for p in pairs]
    out = work.copy()
    out["family"] = np.asarray([c.family for c in classes], dtype=object)[pair_codes]
    out["kind_label"] = np.asarray([c.label for c in classes], dtype=object)[pair_codes]
    return out


_CYCLE_FAMILY = [C.RUN, C.PID, C.DEVICE, C.CYCLE, "family"]


def _with_metrics(rows: pd.DataFrame, table: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """One row per metric of the family's kernels: μ is their time-weighted mean (as a
    kernel's own μ is the time-weighted mean over its launches), so a family finding carries
    the metric moves that went with it; a family without metric samples keeps one "" row."""
    # a function's family is the one of its last work row (as a dict built in row order
    # would keep), looked up by index instead of a Python loop over ~10^5 Arrow strings
    last = work.drop_duplicates(C.FUNCTION, keep="last")
    family_of_fn = pd.Series(last["family"].to_numpy(), index=last[C.FUNCTION].to_numpy())
    sampled = table[table[C.FUNCTION].isin(family_of_fn.index) & (table[C.METRIC] != "")
                    & table[C.METRIC_MEAN].notna()]
    if sampled.empty:
        rows[C.METRIC] = ""
        rows[C.METRIC_MEAN] = float("nan")
        return rows
    # looked up once per distinct function and spread by codes (a per-row map cost ~0.3 s)
    fn_codes, fn_names = pd.factorize(sampled[C.FUNCTION])
    families = family_of_fn.reindex(fn_names).to_numpy(dtype=object)
    sampled = sampled.assign(
        family=families[fn_codes],
        weighted=sampled[C.METRIC_MEAN] * sampled[C.TIME_MS],
    )
    sampled = sampled[sampled["family"].notna()]
    sums = sampled.groupby([*_CYCLE_FAMILY, C.METRIC])[["weighted", C.TIME_MS]].sum()
    means = (sums["weighted"] / sums[C.TIME_MS]).rename(C.METRIC_MEAN).reset_index()
    metrics = means[["family", C.METRIC]].drop_duplicates()
    with_metric = rows.merge(metrics, on="family", how="left")
    with_metric[C.METRIC] = with_metric[C.METRIC].fillna("")
    return with_metric.merge(means, on=[*_CYCLE_FAMILY, C.METRIC], how="left")


def with_family_rows(
    tables: tuple[pd.DataFrame, pd.DataFrame],
    works: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables with a row per (run, pid, device, cycle, family) of >= 2 kernel names.

    ``works``: the tables' ``work_rows``, when the caller already built them (the headline
    does): building them costs ~0.3 s per side of a 1,000,000-launch compare."""
    if works is None:
        works = (work_rows(tables[0]), work_rows(tables[1]))
    group = [C.PID, C.DEVICE, "family"]
    both = pd.concat([w[[*group, C.FUNCTION]] for w in works])
    names = both.drop_duplicates().groupby(group).size()
    several = names[(names >= 2)
                    & (names.index.get_level_values("family") != OTHER)].index
    out = []
    for table, work in zip(tables, works, strict=True):
        # membership by index lookup, not a Python loop over the rows' Arrow strings
        work = work[pd.MultiIndex.from_frame(work[group]).isin(several)]
        if work.empty:
            out.append(table)
            continue
        has_launches = C.LAUNCHES in work.columns
        sums = {C.TIME_MS: (C.TIME_MS, "sum"), C.CYCLE_SHARE_PCT: (C.CYCLE_SHARE_PCT, "sum")}
        if has_launches:
            sums[C.LAUNCHES] = (C.LAUNCHES, "sum")
        rows = (
            work.groupby([C.RUN, C.PID, C.DEVICE, C.CYCLE, C.CYCLE_MS, C.ANCHOR, "family"],
                         sort=True)
            .agg(**sums)
            .reset_index()
        )
        rows = _with_metrics(rows, table, work)
        rows[C.FUNCTION] = rows["family"].map(family_label)
        rows[C.FUNC_TYPE] = FAMILY_TYPE
        columns = [*C.COLUMNS, *([C.LAUNCHES] if C.LAUNCHES in table.columns else [])]
        out.append(pd.concat([table, rows.reindex(columns=columns)], ignore_index=True))
    return out[0], out[1]
