"""Run inside HTA's own venv (``bench/ranks/hta_ranks.py`` starts it): one HTA analysis of
the Kineto folders ``bench/ranks/to_kineto.py`` wrote, its answer as one JSON line.

- ``breakdown DIR``: ``TraceAnalysis(trace_dir=DIR).get_temporal_breakdown()`` (per rank: idle,
  compute, non-compute time; HTA's closest view to "which rank is slow", which it leaves to the
  reader) and the rank with the most compute time;
- ``load DIR``: ``TraceAnalysis(trace_dir=DIR)`` alone (HTA parses every rank's trace into
  one DataFrame per rank, in a pool of processes, and holds them all in this one): the ranks
  and events it loaded and the seconds it took;
- ``diff CONTROL TEST [RANK]``: ``TraceDiff.compare_traces`` (its defaults: one rank, the first
  iteration), the five ops whose summed duration grew most.
"""

import json
import logging
import sys

logging.disable(logging.WARNING)


def main() -> None:
    mode = sys.argv[1]
    if mode == "load":
        import time

        from hta.trace_analysis import TraceAnalysis

        started = time.monotonic()
        analyzer = TraceAnalysis(trace_dir=sys.argv[2])
        traces = analyzer.t.traces
        print(json.dumps({"ranks": len(traces), "rows": sum(len(t) for t in traces.values()),
                          "load_s": round(time.monotonic() - started, 1)}))
    elif mode == "breakdown":
        from hta.trace_analysis import TraceAnalysis

        analyzer = TraceAnalysis(trace_dir=sys.argv[2])
        table = analyzer.get_temporal_breakdown(visualize=False)
        table = table.sort_values("compute_time(us)", ascending=False)
        print(json.dumps({"ranks": len(table),
                          "most_compute": table.head(3)[["rank", "compute_time(us)",
                                                          "idle_time(us)"]].to_dict("records"),
                          "median_compute_us": float(table["compute_time(us)"].median())},
                         default=float))
    else:
        from hta.trace_diff import TraceDiff

        rank = int(sys.argv[4]) if len(sys.argv) > 4 else 0
        diff = TraceDiff.compare_traces(sys.argv[2], sys.argv[3], control_rank=rank,
                                        test_rank=rank)
        top = diff.sort_values("diff_duration", ascending=False).head(5)
        names = top["name"] if "name" in top.columns else top.index
        print(json.dumps({"rows": len(diff), "rank": rank,
                          "top": [(str(n)[:70], float(d)) for n, d in
                                  zip(names, top["diff_duration"], strict=True)]}))


if __name__ == "__main__":
    main()
