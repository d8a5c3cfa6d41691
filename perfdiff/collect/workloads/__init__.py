"""Registry of built-in workloads: name -> "module:Class", imported on demand.

Why strings and not classes: listing the workloads (``perfdiff collect --list``) or failing
on a misspelt name must not import every workload module. Add one line per new workload.
"""

from __future__ import annotations

import importlib

from perfdiff.collect.workloads.base import Workload, WorkloadParamError

_REGISTRY: dict[str, str] = {
    "gpt-infer": "perfdiff.collect.workloads.gpt_infer:GptInfer",
    "linalg": "perfdiff.collect.workloads.linalg:Linalg",
    "rmsnorm": "perfdiff.collect.workloads.rmsnorm:RmsNorm",
    "train-step": "perfdiff.collect.workloads.train_step:TrainStep",
}


def workload_names() -> tuple[str, ...]:
    """Names of the built-in workloads whose module is importable, sorted."""
    return tuple(sorted(_REGISTRY))


def get_workload_class(name: str) -> type[Workload]:
    """The class registered under ``name``; an unknown name raises one clear line."""
    target = _REGISTRY.get(name)
    if target is None:
        known = ", ".join(workload_names())
        raise WorkloadParamError(
            f"unknown workload '{name}'; built-in workloads are: {known} "
            "(or run your own program: perfdiff collect -- python train.py)"
        )
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Workload)):
        raise TypeError(f"{target} is not a Workload subclass")
    return cls


__all__ = ["get_workload_class", "workload_names"]
