"""GPU tests run only where an NVIDIA GPU, a CUDA build of torch and cupti-python exist."""

from __future__ import annotations

import importlib.util

import pytest


def gpu_available() -> bool:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("cupti") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU, CUDA torch and cupti-python")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
