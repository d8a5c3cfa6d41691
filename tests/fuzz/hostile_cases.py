"""The hostile-input cases of issue 25, generated over every command and input kind.

Why generated from real recordings: the promises (no traceback, no exit 70, one line per
error, no data loss, no verdict from impossible data) must hold on what users have, so every
input is a real file or a real file made hostile in one way: a run file (the first cycles of
a real GPU recording), a torch.profiler trace (a real Kineto trace), a LatencyPrism folder (a
real incident) and folders of rank traces. Each :class:`Case` says which exit codes are
allowed, whether exit 0 is forbidden (impossible data), and which path the command may write.
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from perfdiff.cli.option_limits import OPTION_LIMITS
from perfdiff.readers.latencyprism import PERF_FILE
from tests.fuzz.mutations import small_base
from tests.impossible import LP_MUTATIONS, RUN_MUTATIONS, write_doc
from tests.readers.test_latencyprism_sense import MUTATIONS as LP_SENSE_MUTATIONS
from tests.schema.test_sense_hostile import RUN_CASES, TRACE_CASES

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "kineto" / "kineto-gpt-normal.pt.trace.json.gz"
USAGE, BAD = frozenset({2}), frozenset({3})
ANY_ERROR = frozenset({0, 2, 3, 4})


@dataclass(frozen=True)
class Case:
    """One command line over prepared files."""

    name: str
    argv: list[str]
    codes: frozenset[int]  # the exit codes allowed
    impossible: bool = False  # exit 0 forbidden
    output: Path | None = None  # the one path the command may write (on success)
    same_as: list[str] | None = None  # argv whose JSON report this one must equal


@dataclass
class Inputs:
    """The sound inputs every case starts from (written once per test run)."""

    root: Path
    run: Path = field(init=False)
    run_b: Path = field(init=False)
    trace: Path = field(init=False)
    ranks: Path = field(init=False)
    lp: Path | None = None
    base_doc: dict[str, Any] = field(init=False)
    trace_doc: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.base_doc = small_base()
        self.run = write_doc(self.base_doc, self.root / "run.json.gz")
        self.run_b = write_doc(self.base_doc, self.root / "run-b.json")
        self.trace_doc = json.loads(gzip.decompress(TRACE.read_bytes()))
        self.trace = self.root / "trace.pt.trace.json.gz"
        self.trace.write_bytes(TRACE.read_bytes())
        self.ranks = self.root / "ranks"
        self.ranks.mkdir()
        for rank in (0, 1):
            doc = json.loads(json.dumps(self.trace_doc))
            doc["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "nccl"}
            (self.ranks / f"rank{rank}.pt.trace.json.gz").write_bytes(
                gzip.compress(json.dumps(doc).encode(), compresslevel=1))


def _doc(inputs: Inputs) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(inputs.base_doc))
    return copied


def option_cases(inputs: Inputs) -> list[Case]:
    """Every numeric option of every command with every hostile value: exit 2."""
    values = ["nan", "-nan", "inf", "-inf", "Infinity", "1e308", "1e400", "-1"]
    first = {"compare": [str(inputs.run), str(inputs.run_b)], "bench": [str(inputs.run)],
             "kernels": [str(inputs.run)], "collect": ["gpt-infer"],
             "ranks": [str(inputs.ranks)], "merge": [str(inputs.run), str(inputs.run_b)],
             "import": [str(inputs.trace)]}
    cases = []
    for command, limits in sorted(OPTION_LIMITS.items()):
        for option, limit in sorted(limits.items()):
            for value in values:
                if value == "-1" and limit.low < 0:
                    continue
                spelled = [f"{option}={value}"] if value.startswith("-") else [option, value]
                cases.append(Case(f"option {command} {option} {value}",
                                  [command, *first[command], *spelled], USAGE))
    return cases


def usage_cases(inputs: Inputs) -> list[Case]:
    """Unknown options, missing arguments, bad choices, unknown commands: exit 2."""
    run = str(inputs.run)
    lines = [
        ["compare", run, run, "--bogus"], ["compare", run], ["compare"],
        ["compare", run, run, "--format", "pdf"], ["compare", run, run, "--top", "x"],
        ["kernels", run, "--by", "nothing"], ["kernels", run, "--names", "x"],
        ["kernels"], ["kernels", run, "--bogus"], ["bench"], ["bench", run, "--measure", "x"],
        ["bench", run, run, run], ["merge", run], ["merge", run, run, "--bogus"],
        ["import", str(inputs.trace)], ["import"], ["nonsense"], ["collect", "--bogus"],
        ["compare", run, run, "--alpha", "2"], ["compare", run, run, "--threshold", "-5"],
        ["kernels", run, "--top", "0"], ["bench", run, "--baseline", "trtion"],
        ["bench", run, "--target", "nope"], ["collect", "--contend", "x"],
    ]
    return [Case(f"usage {' '.join(a)[:60]}", a, USAGE) for a in lines]


def collision_cases(inputs: Inputs) -> list[Case]:
    """Outputs on or inside an input: exit 3, every input intact."""
    run, trace, ranks = str(inputs.run), str(inputs.trace), inputs.ranks
    link_dir = inputs.root / "linked_perf_data"
    link_dir.mkdir(exist_ok=True)
    if not (link_dir / "alias.json.gz").exists():
        (link_dir / "alias.json.gz").symlink_to(inputs.run_b)
    inside = [ranks / "rank1.pt.trace.json.gz", ranks / "new.json.gz", ranks / "sub" / "x.md"]
    cases = []
    for target in inside:
        cases.append(Case(f"collision import into ranks/{target.name}",
                          ["import", str(ranks), "-o", str(target)], BAD))
        cases.append(Case(f"collision merge into ranks/{target.name}",
                          ["merge", str(ranks), "-o", str(target)], BAD))
    for command in (["kernels", run], ["bench", run], ["compare", run, str(inputs.run_b)],
                    ["merge", run, str(inputs.run_b), "--force"], ["import", trace]):
        inputs_of = [a for a in command[1:] if not a.startswith("-")]
        for target in inputs_of:
            cases.append(Case(f"collision {command[0]} over {Path(target).name}",
                              [*command, "-o", target], BAD))
    if inputs.lp is not None:
        lp = inputs.lp
        for target in (lp / PERF_FILE, lp / "new.md"):
            cases.append(Case(f"collision compare into lp/{target.name}",
                              ["compare", str(lp), str(lp), "-o", str(target)], BAD))
    cases.append(Case("collision compare over a linked input",
                      ["compare", run, str(link_dir), "-o", str(inputs.run_b)], BAD))
    return cases


def impossible_run_cases(inputs: Inputs, folder: Path) -> list[Case]:
    """Every impossible run file (issues 16 and 25) through every command that reads it."""
    mutations: dict[str, Callable[[dict[str, Any]], None]] = {**RUN_MUTATIONS, **RUN_CASES}
    cases = []
    for name, mutate in sorted(mutations.items()):
        doc = _doc(inputs)
        mutate(doc)
        path = write_doc(doc, folder / f"impossible-{name.replace(' ', '-')}.json.gz")
        out = folder / "out.json.gz"
        for argv in (["kernels", str(path), "--format", "json"],
                     ["compare", str(inputs.run), str(path), "--format", "json"],
                     ["compare", str(path), str(inputs.run), "--format", "json"],
                     ["bench", str(path), "--format", "json"],
                     ["merge", str(inputs.run), str(path), "--force", "-o", str(out)]):
            cases.append(Case(f"impossible run {name} {argv[0]}", argv, BAD, impossible=True))
    return cases


def impossible_trace_cases(inputs: Inputs, folder: Path) -> list[Case]:
    """Impossible traces and hostile documents through kernels, import and compare."""
    cases = []
    docs: dict[str, bytes] = {}
    for name, mutate in sorted(TRACE_CASES.items()):
        doc = json.loads(json.dumps(inputs.trace_doc))
        mutate(doc)
        docs[name] = gzip.compress(json.dumps(doc).encode(), compresslevel=1)
    docs["deep nesting"] = b'{"traceEvents": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    doc = json.loads(json.dumps(inputs.trace_doc))
    next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["dur"] = "HUGE"
    docs["kernel dur 1e1000000"] = json.dumps(doc).replace('"HUGE"', "1e1000000").encode()
    device = json.loads(json.dumps(inputs.trace_doc))
    next(e for e in device["traceEvents"] if e.get("cat") == "kernel")["args"]["device"] = 2**70
    docs["device 2**70"] = json.dumps(device).encode()
    based = json.loads(json.dumps(inputs.trace_doc))
    based["baseTimeNanoseconds"] = 1e30
    docs["baseTimeNanoseconds 1e30"] = json.dumps(based).encode()
    docs["bomb"] = _bomb()
    for name, data in sorted(docs.items()):
        path = folder / f"trace-{name.replace(' ', '-')}.json"
        path.write_bytes(data)
        out = folder / "out.json.gz"
        for argv in (["kernels", str(path)], ["import", str(path), "-o", str(out)],
                     ["compare", str(inputs.trace), str(path), "--format", "json"]):
            cases.append(Case(f"impossible trace {name} {argv[0]}", argv, BAD, impossible=True))
    return cases


def impossible_lp_cases(inputs: Inputs, folder: Path) -> list[Case]:
    """Impossible LatencyPrism rows (issues 16 and 25) through compare."""
    if inputs.lp is None:
        return []
    table = pd.read_csv(inputs.lp / PERF_FILE, low_memory=False)
    cases = []
    mutations: dict[str, Callable[[pd.DataFrame], Any]] = {**LP_MUTATIONS,
                                                           **LP_SENSE_MUTATIONS}
    for name, mutate in sorted(mutations.items()):
        copy = table.copy()
        mutate(copy)
        out = folder / f"lp-{name.replace(' ', '-')}" / "abnormal_perf_data"
        out.mkdir(parents=True)
        copy.to_csv(out / PERF_FILE, index=False)
        cases.append(Case(f"impossible lp {name}",
                          ["compare", str(inputs.lp), str(out), "--format", "json"], BAD,
                          impossible=True))
    return cases


def _bomb() -> bytes:
    """512 MiB of zeros as 64 MiB gzip members: refused by the ratio probe at once."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(b"\0" * (64 << 20)) + member.flush()
    return one * 8


def equivalent_cases(inputs: Inputs, folder: Path) -> list[Case]:
    """The same data in another wrapping (plain, several gzip members, zero padding) gives
    the clean input's verdicts, or (trailing garbage) a refusal, never another verdict."""
    raw = json.dumps(inputs.base_doc).encode()
    plain = folder / "plain.json"
    plain.write_bytes(raw)
    members = folder / "members.json.gz"
    members.write_bytes(gzip.compress(raw[: len(raw) // 3]) + gzip.compress(raw[len(raw) // 3:]))
    padded = folder / "padded.json.gz"
    padded.write_bytes(gzip.compress(raw) + b"\0" * 64)
    garbage = folder / "garbage.json.gz"
    garbage.write_bytes(gzip.compress(raw) + b"junk")
    clean = ["compare", str(inputs.run), str(inputs.run_b), "--format", "json"]
    cases = [Case(f"equivalent {p.name}", ["compare", str(inputs.run), str(p), "--format",
                                           "json"], frozenset({0}), same_as=clean)
             for p in (plain, members, padded)]
    cases.append(Case("equivalent garbage tail", ["kernels", str(garbage)], BAD))
    return cases


def damaged_cases(inputs: Inputs, folder: Path, count: int, seed: int) -> list[Case]:
    """Random byte damage of each input kind: any documented outcome, never a crash."""
    rng = random.Random(seed)
    sources = {"run": inputs.run.read_bytes(), "trace": inputs.trace.read_bytes(),
               "run-plain": json.dumps(inputs.base_doc).encode()}
    if inputs.lp is not None:
        sources["lp"] = (inputs.lp / PERF_FILE).read_bytes()
    cases = []
    for number in range(count):
        kind = rng.choice(sorted(sources))
        data = bytearray(sources[kind])
        action = rng.randrange(4)
        if action == 0:
            data = data[: rng.randrange(max(1, len(data)))]
        elif action == 1:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif action == 2:
            start = rng.randrange(len(data))
            data[start:start + rng.randrange(1, 64)] = bytes(rng.randrange(256)
                                                             for _ in range(8))
        else:
            data = data[: rng.randrange(len(data))] + bytes([0xFF, 0xFE, 0x80])
        if kind == "lp":
            lp = folder / f"damaged-{number}" / "x_perf_data"
            lp.mkdir(parents=True)
            (lp / PERF_FILE).write_bytes(bytes(data))
            argv = ["compare", str(inputs.lp), str(lp), "--format", "json"] if number % 8 == 0 \
                else ["kernels", str(lp)]
        else:
            path = folder / f"damaged-{number}-{kind}.json{'.gz' if kind != 'run-plain' else ''}"
            path.write_bytes(bytes(data))
            argv = ["kernels", str(path), "--format", "json"]
        cases.append(Case(f"damaged {kind} {number} ({action})", argv, ANY_ERROR))
    return cases


__all__ = ["Case", "Inputs", "collision_cases", "damaged_cases", "equivalent_cases",
           "impossible_lp_cases", "impossible_run_cases", "impossible_trace_cases",
           "option_cases", "usage_cases"]
