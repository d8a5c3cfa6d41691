"""``--contend FRACTION``: a second process keeps the same GPU busy with matrix products.

Why a separate process and a duty cycle: that is what a noisy neighbour on a shared GPU
looks like (another job's kernels time-sliced or running concurrently with ours), and it
changes no card setting. The child runs bf16 matrix products for ``FRACTION`` of every
50 ms period and sleeps for the rest; it is started before the workload's setup, waits until
its first products ran, and is stopped (terminate, then kill) when collection ends.

Run as ``python -m perfdiff.collect.contend FRACTION DEVICE``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import TracebackType

from perfdiff.errors import CollectorUnavailableError

PERIOD_S = 0.05
MATRIX_SIZE = 4096
READY_TIMEOUT_S = 60.0


class Contender:
    """Context manager owning the contending child process (no-op when fraction is 0)."""

    def __init__(self, fraction: float, device_index: int) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"--contend must be between 0 and 1, got {fraction}")
        self.fraction = fraction
        self.device_index = device_index
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Contender:
        if self.fraction <= 0.0:
            return self
        argv = [sys.executable, "-m", "perfdiff.collect.contend", repr(self.fraction),
                str(self.device_index)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()  # "ready" after the first products ran
        if line.strip() != b"ready":
            self._stop()
            raise CollectorUnavailableError(
                f"the --contend helper process failed to start (said {line!r}); "
                "run without --contend or check that torch sees the GPU"
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _contend(fraction: float, device_index: int) -> None:  # pragma: no cover - GPU only
    import torch

    device = torch.device("cuda", device_index)
    a = torch.randn(MATRIX_SIZE, MATRIX_SIZE, device=device, dtype=torch.bfloat16)
    b = torch.randn(MATRIX_SIZE, MATRIX_SIZE, device=device, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    (a @ b).sum().item()
    print("ready", flush=True)
    busy_s = PERIOD_S * fraction
    while True:
        period_start = time.perf_counter()
        while time.perf_counter() - period_start < busy_s:
            for _ in range(4):
                a @ b
            torch.cuda.synchronize()
        rest = PERIOD_S - (time.perf_counter() - period_start)
        if rest > 0:
            time.sleep(rest)


if __name__ == "__main__":  # pragma: no cover - child process entry point
    _contend(float(sys.argv[1]), int(sys.argv[2]))
