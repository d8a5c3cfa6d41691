"""PM sampling in a user program stops before the interpreter tears anything down.

Why these tests: on the H200 a user program recorded with PM sampling died of SIGSEGV at exit.
cupti-python frees its PM sampling object in a ``weakref.finalize``; weakref runs those from an
``atexit`` hook that torch's import registers *after* the collector's own (atexit is last-in
first-out), so the object was freed under the drain thread and then stopped and decoded.

Each test runs a real Python process to its real exit, with a stand-in ``cupti`` package that
mirrors cupti-python's teardown (a ``weakref.finalize`` that disables the object) and a stand-in
``torch`` whose import registers an ``atexit`` handler. The stand-in logs every call; a call on
a freed object or after the stand-in torch's teardown ends the process with exit code 139, as
the real crash did.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from perfdiff.schema.io import load_run_file
from tests.support.fake_cupti import fake_env

FAKE_CUPTI_INIT = ""

# cupti.cupti: the raw bindings PmSampler calls; every call on the object is checked.
FAKE_CUPTI_RAW = '''
import os, threading, types
LOG = os.environ["FAKE_CUPTI_LOG"]
STATE = {"freed": set(), "torn_down": False}

def log(event):
    with open(LOG, "a") as f:
        f.write(f"{event} thread={threading.current_thread().name}\\n")

def use(obj, what):
    if obj in STATE["freed"] or STATE["torn_down"]:
        log(f"CRASH {what} on a freed object or after teardown")
        os._exit(139)

class _Params:
    def __init__(self):
        self.ptr = self
        self.overflow = 0
        self.decode_stop_reason = 0
        self.num_completed_samples = 0

PmSamplingDecodeStopReason = types.SimpleNamespace(COUNTER_DATA_FULL=1, END_OF_RECORDS=0)
PmSamplingDecodeDataParams = _Params
PmSamplingGetCounterDataInfoParams = _Params
PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE = 1
PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE = 1

def pm_sampling_decode_data(params):
    use(params.p_pm_sampling_object, "decode")

def pm_sampling_get_counter_data_info(params):
    params.num_completed_samples = 0
'''

# cupti.pm_sampling.Collector: enable/configure/start/stop/disable as cupti-python 13.4 does,
# including the weakref.finalize that disables the object when the interpreter exits.
FAKE_PM = '''
import itertools, threading, weakref
import numpy as np
import types
from cupti import cupti as raw

TriggerMode = types.SimpleNamespace(GPU_TIME_INTERVAL=1)
_ids = itertools.count(1)

def _finalize(obj):
    raw.log(f"disable object={obj}")
    raw.use(obj, "disable")
    raw.STATE["freed"].add(obj)

class Collector:
    def __init__(self, device_index=0):
        self._pm_sampling_object = None
        self._chip_name = None
        self._finalizer = None

    def enable(self):
        self._pm_sampling_object = next(_ids)
        self._chip_name = "GH100"
        self._finalizer = weakref.finalize(self, _finalize, self._pm_sampling_object)

    def configure(self, **kwargs):
        raw.use(self._pm_sampling_object, "configure")

    def _create_counter_data_image(self, max_samples):
        return np.zeros(64, dtype=np.uint8)

    def start(self):
        raw.use(self._pm_sampling_object, "start")
        raw.log("start")

    def stop(self):
        raw.use(self._pm_sampling_object, "stop")
        drains = [t for t in threading.enumerate() if t.name == "perfdiff-pm-drain"]
        raw.log(f"stop drain_alive={any(t.is_alive() for t in drains)}")

    def disable(self):
        if self._pm_sampling_object is not None and self._finalizer is not None:
            self._finalizer()
        self._pm_sampling_object = None
        self._finalizer = None
'''

# torch: importing it registers an atexit handler (as the real one's import does), after the
# collector started; its teardown makes any later CUPTI call a crash.
FAKE_TORCH = '''
import atexit, types
from cupti import cupti as raw

def _teardown():
    raw.log("torch-atexit")
    raw.STATE["torn_down"] = True

atexit.register(_teardown)
__version__ = "0.0+fake"
version = types.SimpleNamespace(cuda=None)
cuda = types.SimpleNamespace(is_initialized=lambda: True, is_available=lambda: False,
                             current_device=lambda: 0, synchronize=lambda: None)
'''

# The program: the collector starts first (as sitecustomize does), then the program imports
# torch and runs marked cycles; PM sampling starts at the first measured cycle's mark (no
# warm-up here: the first), by the real code path.
PROGRAM = '''
import sys, threading, time
if sys.argv[2] == "no-threading-hook":  # a Python without the private hook: atexit order
    del threading._register_atexit
from perfdiff.collect.inject.child import ChildCollector
from perfdiff.collect.inject.config import CUPTI_BACKEND, InjectConfig
from tests.support.fake_cupti import FakeTrace, launch

config = InjectConfig(shard_dir=sys.argv[1], backend=CUPTI_BACKEND, metrics=("tensor", "dram"),
                      sample_interval_ns=20_000, nvml=False, warmup=0)
collector = ChildCollector(config, FakeTrace())
collector.start()

import torch
import perfdiff
for i in range(4):
    with perfdiff.cycle():
        launch("gemm", 0.1)
    time.sleep(0.03)            # let the drain thread decode a few times
assert collector.samplers, collector.warnings
if sys.argv[2] == "torn-down":  # someone else disables the object: stop must not touch it
    sampler = collector.samplers[0]
    with sampler._lock:
        sampler._collector._finalizer()
if sys.argv[2] == "exit-3":
    sys.exit(3)
'''


def _run(tmp_path: Path, variant: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    (tmp_path / "cupti").mkdir()
    (tmp_path / "cupti" / "__init__.py").write_text(FAKE_CUPTI_INIT)
    (tmp_path / "cupti" / "cupti.py").write_text(textwrap.dedent(FAKE_CUPTI_RAW))
    (tmp_path / "cupti" / "pm_sampling.py").write_text(textwrap.dedent(FAKE_PM))
    (tmp_path / "torch.py").write_text(textwrap.dedent(FAKE_TORCH))
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    shards = tmp_path / "shards"
    shards.mkdir()
    log = tmp_path / "cupti.log"
    # the program imports the fake trace from tests/: the repository root on its path
    env = fake_env({k: v for k, v in os.environ.items() if not k.startswith("PERFDIFF_")})
    env["FAKE_CUPTI_LOG"] = str(log)
    proc = subprocess.run([sys.executable, "prog.py", str(shards), variant], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    events = log.read_text().splitlines() if log.exists() else []
    return proc, events


def _index(events: list[str], prefix: str) -> int:
    hits = [i for i, e in enumerate(events) if e.startswith(prefix)]
    assert hits, f"no '{prefix}' in {events}"
    return hits[-1]


def _shard(tmp_path: Path) -> Path:
    shards = sorted((tmp_path / "shards").glob("*.json.gz"))
    assert len(shards) == 1, shards
    return shards[0]


def test_pm_sampling_stops_on_the_main_thread_before_any_atexit_teardown(
        tmp_path: Path) -> None:
    proc, events = _run(tmp_path, "normal")
    assert proc.returncode == 0, (proc.stderr, events)
    assert not [e for e in events if e.startswith("CRASH")], events
    stop, torch_exit = _index(events, "stop "), _index(events, "torch-atexit")
    live = events[_index(events, "start")].split()  # the sampling collector, not the probes
    assert live[-1] == "thread=MainThread"
    disable = _index(events, "disable ")
    # drain thread joined, then stop and disable, all before torch's atexit teardown
    assert events[stop] == "stop drain_alive=False thread=MainThread"
    assert stop < disable < torch_exit
    assert events[disable].endswith("thread=MainThread")
    run_file = load_run_file(_shard(tmp_path))
    assert run_file.collection.metrics == ("tensor", "dram")
    assert run_file.status.state == "complete"
    assert not [w for w in run_file.collection.warnings if "pm_sampling" in w]


def test_without_the_threading_hook_pm_still_stops_before_the_atexit_teardown(
        tmp_path: Path) -> None:
    proc, events = _run(tmp_path, "no-threading-hook")
    assert proc.returncode == 0, (proc.stderr, events)
    assert not [e for e in events if e.startswith("CRASH")], events
    assert _index(events, "stop ") < _index(events, "disable ") < _index(events, "torch-atexit")
    assert load_run_file(_shard(tmp_path)).collection.metrics == ("tensor", "dram")


def test_sys_exit_still_stops_pm_sampling_first(tmp_path: Path) -> None:
    proc, events = _run(tmp_path, "exit-3")
    assert proc.returncode == 3, (proc.stderr, events)
    assert not [e for e in events if e.startswith("CRASH")], events
    assert _index(events, "disable ") < _index(events, "torch-atexit")
    assert load_run_file(_shard(tmp_path)).collection.metrics == ("tensor", "dram")


def test_a_torn_down_pm_object_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    proc, events = _run(tmp_path, "torn-down")
    assert proc.returncode == 0, (proc.stderr, events)
    assert not [e for e in events if e.startswith("CRASH")], events
    assert not [e for e in events if e.startswith("stop ")], events  # never stopped a freed one
    run_file = load_run_file(_shard(tmp_path))
    assert run_file.collection.metrics == ()
    warnings = " ".join(run_file.collection.warnings)
    assert "pm_sampling failed at stop" in warnings and "torn down" in warnings
