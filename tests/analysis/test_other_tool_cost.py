"""Issue 28 item 4 for inputs perfdiff did not record: a torch.profiler trace, an Nsight
Systems export, a LatencyPrism folder each get one line
saying that their cycle time is that tool's traced time, whose cost perfdiff cannot see; and
perfdiff's own recordings never get it (they state the collector's cost instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.door import load_side

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared"
LINE = "cycle time was measured under that tool's tracing"

OTHER_TOOLS = {
    "torch.profiler trace": (FIXTURES / "kineto" / "timm-vit-bf16.pt.trace.json.gz",
                             "torch.profiler"),
    "Nsight Systems export": (FIXTURES / "nsys" / "rodinia-gaussian-report2-nsys2022.4.sqlite",
                              "Nsight Systems"),
    "LatencyPrism folder": (SHARED / "latencyprism" / "sglang" / "gpu_instability"
                            / "normal_perf_data", "LatencyPrism"),
}


@pytest.mark.parametrize("name", sorted(OTHER_TOOLS))
def test_other_tools_inputs_say_their_cycle_time_is_that_tools_traced_time(name: str) -> None:
    path, tool = OTHER_TOOLS[name]
    if not path.exists():
        pytest.skip(f"{path} is not here")
    meta = load_side(path).meta
    lines = [w for w in meta.warnings if LINE in w]
    assert len(lines) == 1, meta.warnings
    assert tool in lines[0] and "perfdiff collect" in lines[0]
    assert not any("perfdiff's tracing overhead" in w for w in meta.warnings)


@pytest.mark.parametrize("name", ["gpt-infer-normal.json.gz", "trainer-gpt2.json.gz",
                                  "generate-found.json.gz",
                                  "kineto/kineto-gpt-normal-perfdiff.json.gz"])
def test_perfdiffs_own_recordings_never_get_the_other_tool_line(name: str) -> None:
    meta = load_side(FIXTURES / name).meta
    assert not any(LINE in w for w in meta.warnings)
    assert any("traced time" in w or "tracing overhead" in w for w in meta.warnings)
