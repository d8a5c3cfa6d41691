"""Issue 23's acceptance pairs, measured: first finding, replaced kinds, headline sum, op view.

Why a script: the acceptance items are about what `perfdiff compare` leads with on real pairs;
the tests assert them one by one, this prints them side by side for bench/README.md's dated
"Acceptance check" table, the same way each time.

Usage (repository root): python -m bench.families.acceptance [TRACELENS_DIR]
TRACELENS_DIR holds TraceLens' ``tests/traces/{h100,mi300}/*.json.gz`` (AMD-AGI/TraceLens
171dd747; ``python -m bench.families.acceptance`` alone uses the two pairs in
fixtures/kineto/tracelens). To fetch the rest: fetch github:AMD-AGI/TraceLens, then
``git --git-dir=/work/.mirror/AMD-AGI+TraceLens/repo show HEAD:tests/traces/h100/X > DIR/h100/X``
for each X (the mirror lacks its largest files; those pairs are skipped).
"""

from __future__ import annotations

import sys
from pathlib import Path

from perfdiff.analysis.model import CompareOptions, Comparison
from perfdiff.cli.compare_run import compare_paths

FIX = Path("fixtures")
PAIRS = {
    "timm ViT bf16 -> fp32 (run files)": (FIX / "timm/timm-vit-bf16.json.gz",
                                          FIX / "timm/timm-vit-fp32.json.gz"),
    "GPT-2 eager -> SDPA (run files)": (FIX / "gpt2/gpt2-generate-eager.json.gz",
                                        FIX / "gpt2/gpt2-generate-sdpa.json.gz"),
    "timm ViT bf16 -> fp32 (torch.profiler)": (FIX / "kineto/timm-vit-bf16.pt.trace.json.gz",
                                               FIX / "kineto/timm-vit-fp32.pt.trace.json.gz"),
    "GPT-2 eager -> SDPA (torch.profiler)": (FIX / "kineto/gpt2-generate-eager.pt.trace.json.gz",
                                             FIX / "kineto/gpt2-generate-sdpa.pt.trace.json.gz"),
}
OP_VIEW = ("timm ViT bf16 -> fp32 (torch.profiler)", "GPT-2 eager -> SDPA (torch.profiler)")


def _first(c: Comparison, n: int = 1) -> list[str]:
    """What the report leads with: tested findings, or the described changes of few cycles."""
    if c.findings:
        return [f"{f.function} {f.time_delta_ms:+.3f} ms ({f.verdict})" for f in c.findings[:n]]
    return [f"{d.function} {d.delta_ms:+.3f} ms ({d.change}, not tested)"
            for d in c.described[:n]]


def _headline(c: Comparison) -> str:
    h = c.headline
    if h is None:
        return "no headline"
    parts = sum(p.delta_ms for p in h.parts)
    fam = max((p for p in h.parts if p.kind == "family"), key=lambda p: abs(p.delta_ms))
    return (f"cycle {h.delta_ms:+.3f} ms = parts {parts:+.3f} ms "
            f"(cycle-time change {c.cycle_time.delta_ms:+.3f}); family moved most: "
            f"{fam.label} {fam.delta_ms:+.3f} ms; host-bound under tracing: "
            f"{h.host_bound and h.traced}")


def _replaced(c: Comparison, n: int = 3) -> list[str]:
    """The kept kinds of replacement with their change of time per cycle, largest first."""
    rows = {r.function: r.time_delta_ms for r in c.rows}
    kinds = sorted(c.replacements, key=lambda r: -abs(rows.get(r.function, 0.0)))
    return [f"{r.function} {rows.get(r.function, float('nan')):+.3f} ms" for r in kinds[:n]]


def report(label: str, normal: Path, abnormal: Path, *, force: bool = False) -> None:
    c = compare_paths(normal, abnormal, CompareOptions(force=force))[0]
    print(f"## {label}")
    print(f"- first: {_first(c, 2)}")
    print(f"- headline: {_headline(c)}")
    print(f"- replaced: {_replaced(c)}")
    if label in OP_VIEW:
        ops = compare_paths(normal, abnormal, CompareOptions(by="op"))[0]
        print(f"- --by op first: {_first(ops, 4)}")


def main(argv: list[str]) -> None:
    for label, (normal, abnormal) in PAIRS.items():
        report(label, normal, abnormal)
    tracelens = Path(argv[0]) if argv else None
    if tracelens is None:
        for model in ("bert-small", "falconsai-nsfw"):
            report(f"TraceLens {model} H100 -> MI300X", FIX / f"kineto/tracelens/h100-{model}"
                   ".json.gz", FIX / f"kineto/tracelens/mi300-{model}.json.gz", force=True)
        return
    for h100 in sorted((tracelens / "h100").glob("*.json.gz")):
        mi300 = tracelens / "mi300" / h100.name
        if mi300.exists():
            report(f"TraceLens {h100.name} H100 -> MI300X", h100, mi300, force=True)


if __name__ == "__main__":
    main(sys.argv[1:])
