"""Seeded mutations of a real recording, for the fuzz test (tests/fuzz/test_fuzz_commands.py).

Why a small real base: the fuzz test must push >= 500 files through every command in under a
minute on a 2-core machine, so the base is the first cycles of a real GPU recording
(fixtures/gpt-infer-normal.json.gz: real kernel names, timings, PM and NVML samples), not a
synthetic file. Each mutation returns the bytes to write and whether the result is physically
impossible (then no command may exit 0 on it).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.impossible import RUN_MUTATIONS, load_doc

BASE_CYCLES = 6  # 1 warm-up + 5 measured cycles of the real recording
INT64_MAX = 2**63 - 1


def small_base() -> dict[str, Any]:
    """The real recording cut to its first cycles (kernels, transfers, samples within them)."""
    doc = load_doc()
    run = doc["runs"][0]
    cycles = run["cycles"]
    first = cycles["warmup"].index(False) - 1  # keep one warm-up cycle
    keep = list(range(first, first + BASE_CYCLES))
    ids = [cycles["index"][i] for i in keep]
    span = (cycles["start_ns"][keep[0]], cycles["end_ns"][keep[-1]])
    for key, column in list(cycles.items()):
        if isinstance(column, list):
            cycles[key] = [column[i] for i in keep]
    for table in ("kernels", "memcpy", "memset"):
        rows = [i for i, c in enumerate(run[table]["cycle"]) if c in ids]
        for key, column in list(run[table].items()):
            run[table][key] = [column[i] for i in rows]
    for metric in run["metrics"]:
        rows = [i for i, t in enumerate(metric["timestamps_ns"]) if span[0] <= t <= span[1]]
        metric["timestamps_ns"] = [metric["timestamps_ns"][i] for i in rows]
        metric["values"] = [metric["values"][i] for i in rows]
    return doc


@dataclass(frozen=True)
class Case:
    """One fuzzed file: its name, bytes, and whether its data is physically impossible."""

    name: str
    data: bytes
    impossible: bool


def _encode(doc: Any, rng: random.Random) -> bytes:
    raw = json.dumps(doc, separators=(",", ":")).encode()
    return gzip.compress(raw, compresslevel=1, mtime=0) if rng.random() < 0.5 else raw


def _columns(doc: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Every (table, column) holding a list of numbers in the first run."""
    run = doc["runs"][0]
    out = []
    for table in (run["cycles"], run["kernels"], run["memcpy"], run["memset"], *run["metrics"]):
        for key, value in table.items():
            if isinstance(value, list) and value and isinstance(value[0], int | float) and \
                    not isinstance(value[0], bool):
                out.append((table, key))
    return out


def _structural(doc: dict[str, Any], rng: random.Random) -> None:
    """Damage the document's structure: a field removed, retyped, nulled or cut short."""
    run = doc["runs"][0]
    target = rng.choice([doc, doc["environment"], doc["collection"], doc["workload"], run,
                         run["cycles"], run["kernels"], run["metrics"][0]])
    key = rng.choice(sorted(target))
    action = rng.randrange(5)
    if action == 0:
        del target[key]
    elif action == 1:
        target[key] = None
    elif action == 2:
        target[key] = "x" if not isinstance(target[key], str) else 7
    elif action == 3 and isinstance(target[key], list) and target[key]:
        target[key] = target[key][: rng.randrange(len(target[key]))]
    else:
        target[key] = {"nested": [target.get(key)]}


def _numeric(doc: dict[str, Any], rng: random.Random) -> None:
    """Odd numbers in a numeric column: zero, huge, negative, NaN, a float in an int column."""
    table, key = rng.choice(_columns(doc))
    column = table[key]
    row = rng.randrange(len(column))
    column[row] = rng.choice([0, -1, 2**62, INT64_MAX, -(2**63), 1.5, float("nan"),
                              float("inf"), column[row] * 2, column[row] // 2 + 1])


def _valid_but_odd(doc: dict[str, Any], rng: random.Random, *, keep_shape: bool = False) -> None:
    """Sound data a reader must still handle: odd names, no samples, all warm-up, odd labels
    or parameters (``keep_shape``: only those that leave every table's rows in place)."""
    run = doc["runs"][0]
    choice = rng.choice([0, 3, 4] if keep_shape else [0, 1, 2, 3, 4])
    if choice == 0:
        names = doc["strings"]
        names["demangled"] = [n + rng.choice(["|`*_<", "\n", "\u2028", "\x1b[31m", ""])
                              for n in names["demangled"]]
    elif choice == 1:
        run["metrics"] = []
    elif choice == 2:
        run["cycles"]["warmup"] = [True] * len(run["cycles"]["warmup"])
    elif choice == 3:
        run["cycles"]["label"] = [rng.choice(["a", "b", "", "c|d"]) for _ in
                                  run["cycles"]["label"]]
    else:
        doc["workload"]["params"]["extra"] = rng.choice([1, "x", None, [1, 2]])


def _bytes(data: bytes, rng: random.Random) -> bytes:
    """Damage at the byte level: cut short, bits flipped, empty, or garbage."""
    action = rng.randrange(4)
    if action == 0:
        return data[: rng.randrange(max(1, len(data)))]
    if action == 1:
        out = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if action == 2:
        return b""
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))


Mutator = Callable[[dict[str, Any], random.Random], None]


def generate(base: dict[str, Any], count: int, seed: int) -> list[Case]:
    """``count`` fuzzed files from ``base``: every impossible mutation first, then random ones."""
    rng = random.Random(seed)
    text = json.dumps(base)

    def fresh() -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(text)  # faster than copy.deepcopy
        return copied

    cases = []
    for name, mutate in sorted(RUN_MUTATIONS.items()):
        doc = fresh()
        mutate(doc)
        cases.append(Case(f"impossible-{name}", _encode(doc, rng), True))
    kinds: list[tuple[str, Mutator | None, bool]] = [
        ("structural", _structural, False), ("numeric", _numeric, False),
        ("odd", _valid_but_odd, False), ("bytes", None, False),
    ]
    impossible = sorted(RUN_MUTATIONS.items())
    while len(cases) < count:
        n = len(cases)
        roll = rng.random()
        doc = fresh()
        if roll < 0.2:  # an impossible record, after other random changes
            name, mutate = rng.choice(impossible)
            if rng.random() < 0.5:
                _valid_but_odd(doc, rng, keep_shape=True)
            mutate(doc)
            cases.append(Case(f"{n:03d}-impossible-{name}", _encode(doc, rng), True))
            continue
        kind, mutator, _ = rng.choice(kinds)
        if mutator is None:
            cases.append(Case(f"{n:03d}-bytes", _bytes(_encode(doc, rng), rng), False))
            continue
        mutator(doc, rng)
        cases.append(Case(f"{n:03d}-{kind}", _encode(doc, rng), False))
    return cases
