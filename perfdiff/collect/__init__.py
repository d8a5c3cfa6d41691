"""Collection: CUPTI activity tracing, CUPTI PM sampling, NVML, and the built-in workloads.

This is the only package that imports torch, cupti or pynvml, always lazily (inside
functions), so that ``import perfdiff.collect`` works on a machine without them.
"""

from __future__ import annotations
