"""NVML: the clock, power and utilisation sampler and the process that runs it.

``sampler`` reads NVML (pynvml, imported lazily), ``nvml_poller`` is the loop that polls it,
``nvml_process`` runs that loop in its own process so that polling never steals the traced
program's GIL. They are one room because they share one driver and one sample format.
"""

from __future__ import annotations
