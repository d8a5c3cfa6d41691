"""``perfdiff collect -- CMD``: real child Python programs under the collector (fake backend).

Each test writes a small program, runs the real ``perfdiff`` entry point in a subprocess with
CUPTI replaced by ``tests/support/fake_cupti`` (named as the children's trace backend by
``PERFDIFF_FAKE``; everything else is the production path: sitecustomize injection, child
collector, shards, merge, exit codes) and checks the run file. Programs name each kernel
after the cycle that launches it, so "kernels in the right cycles" is checked launch by
launch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfdiff.analysis.comparison import compare_tables
from perfdiff.analysis.cycle_table import cycle_table
from perfdiff.analysis.model import CompareOptions
from perfdiff.analysis.sides import side_from_run_file
from perfdiff.report.markdown import render_markdown
from perfdiff.schema.io import load_run_file
from perfdiff.schema.model import Run, RunFile
from tests.support.fake_cupti import FAKE_GPU_NAME, PERFDIFF_FAKE, fake_env

FAST = CompareOptions(bootstrap_resamples=200)
PERFDIFF = [sys.executable, "-c", "from perfdiff.cli.app import main; main()"]
HEADER = """\
import os, sys, time
import perfdiff
from tests.support.fake_cupti import launch
"""


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def _collect(
    folder: Path, *args: str, env: dict[str, str] | None = None, fake: bool = True
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``fake``: the children trace with the CPU stand-in; else with the default (CUPTI's)."""
    out = folder / "run.json.gz"
    full_env = {**os.environ, **(env or {})}
    if fake:
        full_env = fake_env(full_env)
    full_env.pop("PERFDIFF_INJECT_CONFIG", None)
    proc = subprocess.run(
        [*(PERFDIFF_FAKE if fake else PERFDIFF), "collect", "-o", str(out), *args], cwd=folder,
        env=full_env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    return proc, out


def _names(run_file: RunFile, run: Run) -> list[str]:
    return [run_file.strings[int(i)].mangled for i in run.kernels.name_id]


def _assert_named_cycles(run_file: RunFile, run: Run) -> None:
    """Every kernel ``c{i}_...`` was launched in cycle i; the others in none."""
    for name, cycle in zip(_names(run_file, run), run.kernels.cycle.tolist(), strict=True):
        expected = int(name[1:].split("_")[0]) if name.startswith("c") else -1
        assert cycle == expected, (name, cycle)


CYCLE_PROGRAM = """
n = int(sys.argv[1])
launch("setup_kernel", 0.2)
for i in range(n):
    with perfdiff.cycle():
        launch(f"c{i}_gemm", 3.0)   # longer than the host's cycle: runs into the next ones
        launch(f"c{i}_relu", 0.1)
        time.sleep(0.001)
launch("teardown_kernel", 0.2)
"""


def test_cycle_script_yields_exactly_its_cycles_with_kernels_in_them(tmp_path: Path) -> None:
    _write(tmp_path, "train.py", CYCLE_PROGRAM)
    proc, out = _collect(tmp_path, "--warmup", "2", "--untraced-every", "0", "--",
                         sys.executable, "train.py", "12")
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    assert rf.status.state == "complete"
    (run,) = rf.runs
    assert run.cycles.index.size == 12
    assert run.cycles.warmup.tolist() == [True] * 2 + [False] * 10
    assert run.exit_code == 0 and run.pid > 0 and run.rank is None
    assert run.kernels.name_id.size == 2 * 12 + 2
    # the long kernels start on the GPU after their cycle ended, yet count in their cycle
    late = run.kernels.start_ns[run.kernels.cycle >= 0] > run.cycles.end_ns[
        run.kernels.cycle[run.kernels.cycle >= 0]]
    assert late.any()
    _assert_named_cycles(rf, run)
    assert rf.workload.name == "train.py"
    assert rf.workload.command == (sys.executable, "train.py", "12")
    assert rf.environment.devices[0].name == FAKE_GPU_NAME


def test_mark_cycle_without_a_with_block(tmp_path: Path) -> None:
    _write(tmp_path, "loop.py", """
    for i in range(7):
        perfdiff.mark_cycle()
        launch(f"c{i}_step", 0.3)
    perfdiff.end_cycle()
    launch("after", 0.1)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--", sys.executable, "loop.py")
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    assert rf.runs[0].cycles.index.size == 7
    _assert_named_cycles(rf, rf.runs[0])


FAKE_NVTX = '''
"""Stand-in for the nvtx package with its real signatures; records nothing itself."""
import contextlib
def push_range(message=None, color="blue", domain=None, category=None, payload=None): pass
def pop_range(domain=None): pass
def start_range(message=None, color=None, domain=None, category=None, payload=None):
    return None
def end_range(range_id): pass
class annotate:
    def __init__(self, message=None, color=None, domain=None, category=None, payload=None):
        self.message = message
    def __enter__(self): return self
    def __exit__(self, *exc): return False
    def __call__(self, func): return func
'''

FAKE_TORCH = {
    "torch/__init__.py": "from torch import cuda\n",
    "torch/cuda/__init__.py": "from torch.cuda import nvtx\n",
    "torch/cuda/nvtx.py": (
        "from contextlib import contextmanager\n"
        "def range_push(msg): return 0\n"
        "def range_pop(): return 0\n"
        "def range_start(msg): return 7\n"
        "def range_end(range_id): pass\n"
        "@contextmanager\n"
        "def range(msg, *args, **kwargs):\n"
        "    range_push(msg.format(*args, **kwargs))\n"
        "    try:\n        yield\n    finally:\n        range_pop()\n"
    ),
}

NVTX_PROGRAM = """
import nvtx
import torch

@nvtx.annotate("step")
def decorated(i):
    launch(f"c{i}_decorated", 0.2)

launch("before", 0.1)
with nvtx.annotate("eval"):              # not a cycle
    launch("eval_kernel", 0.1)
i = 0
for _ in range(3):                        # push/pop, with nested ranges inside
    nvtx.push_range("step")
    with nvtx.annotate("forward"):
        launch(f"c{i}_fwd", 0.5)
    nvtx.push_range("backward")
    launch(f"c{i}_bwd", 0.5)
    nvtx.pop_range()
    nvtx.pop_range()
    i += 1
for _ in range(2):                        # context manager
    with nvtx.annotate(message="step", color="green"):
        launch(f"c{i}_ctx", 0.2)
    i += 1
for _ in range(2):                        # decorator
    decorated(i)
    i += 1
for _ in range(2):                        # start/end (not nested)
    rid = nvtx.start_range("step")
    launch(f"c{i}_startend", 0.2)
    nvtx.end_range(rid)
    i += 1
for _ in range(2):                        # torch.cuda.nvtx push/pop
    torch.cuda.nvtx.range_push("step")
    launch(f"c{i}_torchpush", 0.2)
    torch.cuda.nvtx.range_pop()
    i += 1
for _ in range(2):                        # torch.cuda.nvtx.range
    with torch.cuda.nvtx.range("step"):
        launch(f"c{i}_torchrange", 0.2)
    i += 1
rid = torch.cuda.nvtx.range_start("step")
launch(f"c{i}_torchstart", 0.2)
torch.cuda.nvtx.range_end(rid)
i += 1
launch("after", 0.1)
print("ran", i, "steps")
"""


def test_nvtx_step_ranges_yield_exactly_their_cycles(tmp_path: Path) -> None:
    (tmp_path / "nvtx.py").write_text(FAKE_NVTX)
    for rel, text in FAKE_TORCH.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    _write(tmp_path, "nvtx_train.py", NVTX_PROGRAM)
    proc, out = _collect(tmp_path, "--warmup", "1", "--cycle-range", "step",
                         "--untraced-every", "0", "--", sys.executable, "nvtx_train.py")
    assert proc.returncode == 0, proc.stderr
    assert "ran 14 steps" in proc.stdout
    rf = load_run_file(out)
    run = rf.runs[0]
    assert run.cycles.index.size == 14
    assert int(run.cycles.warmup.sum()) == 1
    _assert_named_cycles(rf, run)
    assert rf.workload.params["cycles_from"] == "NVTX range 'step'"


def test_nvtx_name_that_never_occurs_warns(tmp_path: Path) -> None:
    (tmp_path / "nvtx.py").write_text(FAKE_NVTX)
    _write(tmp_path, "p.py", """
    import nvtx
    with nvtx.annotate("iteration"):
        launch("k", 0.1)
    """)
    proc, out = _collect(tmp_path, "--cycle-range", "step", "--", sys.executable, "p.py")
    assert proc.returncode == 0, proc.stderr
    assert "no NVTX range named 'step'" in proc.stderr
    assert load_run_file(out).runs[0].cycles.index.size == 0


def test_fixed_windows_cut_unmarked_programs(tmp_path: Path) -> None:
    _write(tmp_path, "unmarked.py", """
    time.sleep(0.05)                      # imports and loading: before the first window
    end = time.monotonic() + 0.12
    while time.monotonic() < end:
        launch("work", 0.05)
        time.sleep(0.002)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--cycle-ms", "10", "--",
                         sys.executable, "unmarked.py")
    assert proc.returncode == 0, proc.stderr
    run = load_run_file(out).runs[0]
    n = run.cycles.index.size
    assert 9 <= n <= 12
    widths = run.cycles.end_ns - run.cycles.start_ns
    assert set(widths.tolist()) == {10_000_000}
    # the fake backend starts a short kernel 1 us after its launch
    launched = run.kernels.start_ns - 1_000
    expected = (launched - run.cycles.start_ns[0]) // 10_000_000
    expected[expected >= n] = -1
    assert run.kernels.cycle.tolist() == expected.tolist()


def test_nonzero_exit_returns_its_code_and_an_incomplete_file(tmp_path: Path) -> None:
    _write(tmp_path, "fails.py", """
    for i in range(4):
        with perfdiff.cycle():
            launch(f"c{i}_k", 0.1)
    print("exiting", flush=True)
    sys.exit(3)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--", sys.executable, "fails.py")
    assert proc.returncode == 3
    assert "exiting" in proc.stdout  # the program's output passes through
    rf = load_run_file(out)
    assert rf.status.state == "incomplete" and "exited with code 3" in (rf.status.reason or "")
    assert rf.runs[0].exit_code == 3
    assert rf.runs[0].cycles.index.size == 4  # what ran before the exit is kept


def test_uncaught_exception_keeps_completed_cycles(tmp_path: Path) -> None:
    _write(tmp_path, "crash.py", """
    for i in range(5):
        with perfdiff.cycle():
            launch(f"c{i}_k", 0.1)
            if i == 3:
                raise ValueError("bad batch")
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--", sys.executable, "crash.py")
    assert proc.returncode == 1
    assert "ValueError: bad batch" in proc.stderr  # the program's traceback, unchanged
    rf = load_run_file(out)
    assert rf.status.state == "incomplete"
    assert "program raised ValueError: bad batch" in (rf.status.reason or "")
    run = rf.runs[0]
    assert run.cycles.index.size == 3  # the cycle cut short is left out
    names = _names(rf, run)
    assert run.kernels.cycle[names.index("c3_k")] == -1


@pytest.mark.parametrize(("how", "code"), [("SIGTERM", 143), ("SIGKILL", 137)])
def test_killed_program_still_leaves_a_valid_file(tmp_path: Path, how: str, code: int) -> None:
    _write(tmp_path, "killed.py", f"""
    import signal
    for i in range(3):
        with perfdiff.cycle():
            launch(f"c{{i}}_k", 0.1)
    os.kill(os.getpid(), signal.{how})
    time.sleep(5)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--", sys.executable, "killed.py")
    assert proc.returncode == code
    rf = load_run_file(out)
    assert rf.status.state == "incomplete"
    assert rf.runs[0].exit_code == code
    if how == "SIGTERM":  # caught: the shard is written with what was gathered
        assert rf.runs[0].cycles.index.size == 3
        assert "terminated by SIGTERM" in (rf.status.reason or "")
    else:  # nothing can run in the process: an empty run says so
        assert rf.runs[0].kernels.name_id.size == 0
        assert "no trace" in (rf.status.reason or "")


def test_runs_give_replicates_and_run_level_statistics(tmp_path: Path) -> None:
    _write(tmp_path, "bench.py", """
    ms = float(sys.argv[1])
    for i in range(8):
        with perfdiff.cycle():
            launch("gemm", ms)
            launch("relu", 0.2)
            time.sleep(ms / 1000 + 0.0005)
    """)
    files = []
    for ms in ("1.0", "1.5"):
        proc, out = _collect(tmp_path, "--warmup", "1", "--runs", "5", "--",
                             sys.executable, "bench.py", ms)
        assert proc.returncode == 0, proc.stderr
        files.append(out.rename(tmp_path / f"runs-{ms}.json.gz"))
    normal, abnormal = (load_run_file(f) for f in files)
    assert [r.index for r in normal.runs] == [0, 1, 2, 3, 4]
    assert len({r.pid for r in normal.runs}) == 5  # five fresh processes
    assert normal.workload.params["runs"] == 5
    table = cycle_table(normal)
    assert sorted(set(table["run"])) == [0, 1, 2, 3, 4]
    assert table["pid"].nunique() == 1  # replicates of one process
    sides = side_from_run_file(normal, source="n"), side_from_run_file(abnormal, source="a")
    comparison = compare_tables(sides[0].table, sides[1].table, FAST,
                                normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    assert comparison.test_unit == "runs"
    gemm = next(r for r in comparison.rows if r.function == "gemm")
    assert (gemm.n_normal, gemm.n_abnormal) == (5, 5)
    assert gemm.verdict == "slower"
    assert "run-level means" in render_markdown(comparison)


def test_a_failing_run_stops_the_repetitions(tmp_path: Path) -> None:
    _write(tmp_path, "flaky.py", """
    marker = os.path.join(os.getcwd(), "count")
    count = int(open(marker).read()) if os.path.exists(marker) else 0
    open(marker, "w").write(str(count + 1))
    with perfdiff.cycle():
        launch("k", 0.1)
    sys.exit(0 if count < 2 else 5)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--runs", "5", "--",
                         sys.executable, "flaky.py")
    assert proc.returncode == 5
    rf = load_run_file(out)
    assert [r.exit_code for r in rf.runs] == [0, 0, 5]
    assert "3 of 5 runs made" in (rf.status.reason or "")


LAUNCHER = """
import os, subprocess, sys
procs = [subprocess.Popen([sys.executable, "worker.py", *sys.argv[1:]],
                          env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r),
                               "WORLD_SIZE": "2"}) for r in range(2)]
sys.exit(max(p.wait() for p in procs))
"""

WORKER = """
# Rank 1's compute is slowed by the factor in argv; as in a real all-reduce, rank 0's
# collective then waits for rank 1 and lasts longer by rank 1's delay.
factor = float(sys.argv[1])
rank = os.environ["RANK"]
compute = 1.0 * (factor if rank == "1" else 1.0)
wait = (factor - 1.0) * 1.0 if rank == "0" else 0.0
for i in range(12):
    with perfdiff.cycle():
        launch("gemm_fwd", 0.4 * compute)
        launch("gemm_bwd", 0.6 * compute)
        launch("ncclDevKernel_AllReduce_Sum_f32", 0.3 + wait)
        time.sleep(0.002 + (compute + 0.3 + wait) / 1000)  # the step waits for its GPU work
"""


def test_launcher_ranks_become_devices_and_the_slow_one_is_singled_out(tmp_path: Path) -> None:
    (tmp_path / "fake_torchrun.py").write_text(LAUNCHER)  # named like torchrun: not recorded
    _write(tmp_path, "worker.py", WORKER)
    runs = []
    for slow in ("1.0", "1.6"):
        proc, out = _collect(tmp_path, "--warmup", "1", "--", sys.executable,
                             "fake_torchrun.py", slow)
        assert proc.returncode == 0, proc.stderr
        runs.append(load_run_file(out.rename(tmp_path / f"ddp-{slow}.json.gz")))
    normal, abnormal = runs
    assert sorted(r.rank for r in normal.runs) == [0, 1]  # one shard per worker, none more
    for run in normal.runs:
        assert set(run.kernels.device.tolist()) == {run.rank}  # GPU named by rank
    assert [d.index for d in normal.environment.devices] == [0, 1]
    sides = side_from_run_file(normal, source="n"), side_from_run_file(abnormal, source="a")
    c = compare_tables(sides[0].table, sides[1].table, FAST,
                       normal_meta=sides[0].meta, abnormal_meta=sides[1].meta)
    verdicts = {d.device: d.verdict for d in c.devices}
    assert verdicts == {"GPU 0": "no change", "GPU 1": "slower"}  # compute kernels only
    kernels = [(f.device, f.function) for f in c.findings if not f.function.startswith("[")]
    assert kernels[:2] == [("GPU 1", "gemm_bwd"), ("GPU 1", "gemm_fwd")]  # not the waiting nccl
    waiting = next(r for r in c.rows if r.device == "GPU 0" and r.function.startswith("nccl"))
    assert waiting.verdict == "slower"  # still reported
    assert any("collective" in note for note in c.notes)


def test_children_of_the_program_are_not_recorded_twice(tmp_path: Path) -> None:
    _write(tmp_path, "parent.py", """
    import subprocess
    with perfdiff.cycle():
        launch("c0_parent", 0.1)
        subprocess.run([sys.executable, "-c", "import perfdiff.collect.inject.child as c; "
                        "print('child collector:', c._collector)"], check=True)
    """)
    proc, out = _collect(tmp_path, "--warmup", "0", "--", sys.executable, "parent.py")
    assert proc.returncode == 0, proc.stderr
    assert "child collector: None" in proc.stdout
    assert len(load_run_file(out).runs) == 1


def test_unmarked_program_warns_how_to_mark_cycles(tmp_path: Path) -> None:
    _write(tmp_path, "plain.py", 'launch("k", 0.1)\n')
    proc, out = _collect(tmp_path, "--", sys.executable, "plain.py")
    assert proc.returncode == 0
    assert "marked no cycles" in proc.stderr and "perfdiff.cycle()" in proc.stderr
    assert load_run_file(out).status.state == "complete"


def test_missing_program_is_one_line_usage_error(tmp_path: Path) -> None:
    proc, out = _collect(tmp_path, "--", "no-such-program-xyz", "arg")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "no-such-program-xyz" in proc.stderr and "PATH" in proc.stderr
    assert not out.exists()


def test_cycle_options_are_refused_for_builtin_workloads(tmp_path: Path) -> None:
    proc, _ = _collect(tmp_path, "gpt-infer", "--runs", "3")
    assert proc.returncode == 2
    assert "perfdiff merge" in proc.stderr


def test_program_runs_when_the_config_is_malformed(tmp_path: Path) -> None:
    env = {**os.environ, "PERFDIFF_INJECT_CONFIG": "{not json",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "perfdiff/collect/inject/boot")}
    proc = subprocess.run([sys.executable, "-c", "print('still runs')"], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0
    assert "still runs" in proc.stdout
    assert "collector not started" in proc.stderr


def test_marks_do_nothing_without_a_collector() -> None:
    import contextlib

    import perfdiff
    from perfdiff import markers

    assert markers._active is None
    marker = perfdiff.cycle(label="x", warmup=True)
    assert isinstance(marker, contextlib.nullcontext)
    with marker:
        perfdiff.mark_cycle()
        perfdiff.end_cycle()
    assert markers._active is None


FAKE_CUPTI = """
\"\"\"Stand-in for cupti-python's activity API: records what the program 'launches'.\"\"\"
import enum, itertools, time
from types import SimpleNamespace

class cuptiError(Exception):
    pass

class ActivityKind(enum.IntEnum):
    MEMCPY = 1
    MEMSET = 2
    KERNEL = 3
    DRIVER = 4
    RUNTIME = 5
    CONCURRENT_KERNEL = 10

class ActivityMemcpyKind(enum.IntEnum):
    HTOD = 1

class RuntimeApiTraceCbid(enum.IntEnum):
    INVALID = 0
    cudaLaunchKernel_v7000 = 211
    cudaGetDevice_v3020 = 17

_callbacks = None
_enabled = set()
_pending = []
_corr = itertools.count(1)

def get_timestamp():
    return time.monotonic_ns()

def activity_register_callbacks(requested, completed):
    global _callbacks
    _callbacks = (requested, completed)

def activity_enable(kind):
    _enabled.add(int(kind))

def activity_disable(kind):
    _enabled.discard(int(kind))

def activity_enable_runtime_api(cbid, on):
    pass

def activity_enable_driver_api(cbid, on):
    pass

def activity_get_num_dropped_records(context, stream, address):
    pass

def activity_flush_all(flag):
    if _callbacks is not None and _pending:
        _callbacks[1](list(_pending))
        _pending.clear()

_stream_free = 0


def launch(name, ms):
    if int(ActivityKind.CONCURRENT_KERNEL) not in _enabled:
        return
    corr = next(_corr)
    now = get_timestamp()
    _pending.append(SimpleNamespace(kind=ActivityKind.RUNTIME, correlation_id=corr, start=now))
    global _stream_free
    start = max(now + 2_000, _stream_free)  # one stream runs its kernels one after another
    _stream_free = start + int(ms * 1e6)
    _pending.append(SimpleNamespace(
        kind=ActivityKind.CONCURRENT_KERNEL, name=name, device_id=0, stream_id=7, start=start,
        end=start + int(ms * 1e6), correlation_id=corr, grid_x=1, grid_y=1, grid_z=1,
        block_x=128, block_y=1, block_z=1))
"""


def test_the_cupti_backend_starts_when_the_program_reaches_cuda(tmp_path: Path) -> None:
    """The production CUPTI backend (cupti_activity.py) over a stand-in cupti module, started
    when the program imports a CUDA library (deferred_trace.py; a stand-in ``cupy``), so the
    launch before any cycle is traced too."""
    package = tmp_path / "fakes" / "cupti"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cupti.py").write_text(FAKE_CUPTI)
    (tmp_path / "fakes" / "cupy.py").write_text("")
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import perfdiff
        import cupy  # a CUDA library: CUPTI starts here
        from cupti import cupti
        cupti.launch("before_any_cycle", 0.1)
        for i in range(5):
            with perfdiff.cycle():
                cupti.launch(f"c{i}_kernel", 2.0)
    """))
    env = {"PYTHONPATH": str(tmp_path / "fakes")}
    proc, out = _collect(tmp_path, "--warmup", "0", "--no-pm", "--no-nvml", "--",
                         sys.executable, "prog.py", env=env, fake=False)
    assert proc.returncode == 0, proc.stderr
    rf = load_run_file(out)
    run = rf.runs[0]
    assert rf.collection.sources == ("cupti_activity",)
    assert run.cycles.index.size == 5
    assert run.kernels.name_id.size == 6  # the launch before any cycle was traced too
    _assert_named_cycles(rf, run)


def test_contend_needs_a_gpu_and_says_so_in_one_line(tmp_path: Path) -> None:
    _write(tmp_path, "p.py", 'launch("k", 0.1)\n')
    proc, out = _collect(tmp_path, "--contend", "0.5", "--", sys.executable, "p.py")
    if proc.returncode == 0:
        pytest.skip("a GPU contender could start here")
    assert proc.returncode == 5  # ExitCode.COLLECTOR_UNAVAILABLE
    last = proc.stderr.strip().splitlines()[-1]  # (the helper's own traceback comes before)
    assert last.startswith("perfdiff: error:") and "--contend" in last
    assert not out.exists()
