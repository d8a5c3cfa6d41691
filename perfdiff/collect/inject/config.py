"""The parent -> child contract: one JSON environment variable, and where shards go.

Why JSON in one variable: the child parses it with ``json.loads`` (no eval, no pickle); one
variable is set and removed as a unit, and a child that finds none does nothing at all.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from perfdiff.collect.settings import DEFAULT_WARMUP, ProgramRecordSettings, check_program

CONFIG_ENV = "PERFDIFF_INJECT_CONFIG"
OWNER_ENV = "PERFDIFF_INJECT_OWNER"  # set by the process that records, so its children do not
BOOT_DIR = Path(__file__).resolve().parent / "boot"
SHARD_GLOB = "run*-rank*-pid*.json.gz"
# The child's trace backend: MODULE:FUNCTION taking the config and returning a TraceBackend.
# Why an import path and not a name from a fixed list: the parent passes it to a child process
# through the JSON variable, so only an importable name can cross; the only one perfdiff
# ships is CUPTI's. CPU tests name their own stand-in here (tests/support/fake_cupti.py).
CUPTI_BACKEND = "perfdiff.collect.inject.child:open_cupti_trace"


@dataclass(frozen=True)
class InjectConfig(ProgramRecordSettings):
    """What the child records and where it writes its shard: the shared sampler settings
    (:class:`ProgramRecordSettings`: a built-in workload's, with the program's PM interval)
    plus how a program's cycles are cut and where its shard goes."""

    shard_dir: str
    run_index: int = 0
    cycle_range: str | None = None  # NVTX range name that marks one cycle
    cycle_ms: float | None = None  # fixed windows instead of marked cycles
    cycle_function: str | None = None  # MODULE:QUALNAME whose outermost calls are cycles
    warmup: int = DEFAULT_WARMUP  # the first N cycles are flagged warm-up
    backend: str = CUPTI_BACKEND  # MODULE:FUNCTION, config -> TraceBackend
    command: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_program(warmup=self.warmup, cycle_ms=self.cycle_ms, backend=self.backend)

    @property
    def traces_cupti(self) -> bool:
        """Whether the child traces with CUPTI (the GPU is torch's; boundary marks can be
        recorded), rather than with a backend that is no GPU at all."""
        return self.backend == CUPTI_BACKEND

    def to_env(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_env(cls, text: str) -> InjectConfig:
        """Parse the variable; a malformed one raises ValueError (the child then warns)."""
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError(f"{CONFIG_ENV} is not a JSON object")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"{CONFIG_ENV} has unknown keys {unknown}")
        for key in ("metrics", "command"):
            if key in raw:
                raw[key] = tuple(str(v) for v in raw[key])
        return cls(**raw)


def shard_name(run_index: int, rank: int | None, pid: int) -> str:
    """``run0-rank1-pid1234.json.gz``; ``rankx`` when the process has no rank."""
    return f"run{run_index}-rank{'x' if rank is None else rank}-pid{pid}.json.gz"


def child_environment(base: dict[str, str], config: InjectConfig) -> dict[str, str]:
    """``base`` with the boot folder first on PYTHONPATH and the config set."""
    env = dict(base)
    env.pop(OWNER_ENV, None)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOT_DIR) + (os.pathsep + path if path else "")
    env[CONFIG_ENV] = config.to_env()
    return env


__all__ = [
    "BOOT_DIR",
    "CONFIG_ENV",
    "CUPTI_BACKEND",
    "OWNER_ENV",
    "SHARD_GLOB",
    "InjectConfig",
    "child_environment",
    "shard_name",
]
