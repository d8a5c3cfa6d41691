"""What one stamp costs on the GPU host: ``cupti.get_timestamp`` (the cycle stamps' clock)
against ``time.perf_counter_ns`` (the programs' timers), alone and beside a thread that wakes
every millisecond, and the two clocks' rate over 2 s. Why: perfdiff's part of the time outside
an NVTX cycle was ~0.5 us on the CPU stand-in but 2-3 us on the H100 host (floor_probe.py)."""

import threading
import time

from cupti import cupti


def per_call_ns(f, n=200_000):
    t = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t) / n


def main() -> None:
    for _ in range(2):
        print(f"alone: cupti.get_timestamp {per_call_ns(cupti.get_timestamp):.0f} ns, "
              f"perf_counter_ns {per_call_ns(time.perf_counter_ns):.0f} ns")
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(stop.is_set, True)])
    thread.start()
    print(f"beside a 1 ms sleeper: cupti.get_timestamp {per_call_ns(cupti.get_timestamp):.0f} ns, "
          f"perf_counter_ns {per_call_ns(time.perf_counter_ns):.0f} ns")
    stop.set()
    thread.join()
    a = (cupti.get_timestamp(), time.perf_counter_ns())
    time.sleep(2)
    b = (cupti.get_timestamp(), time.perf_counter_ns())
    print(f"rate cupti / perf_counter over 2 s: {(b[0] - a[0]) / (b[1] - a[1]):.6f}")
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as fh:
        print("clocksource:", fh.read().strip())


if __name__ == "__main__":
    main()
