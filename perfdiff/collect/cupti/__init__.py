"""CUPTI: everything that talks to NVIDIA CUPTI and turns its records into our columns.

Activity tracing (``cupti_activity``), the raw buffer intake and its decoder, the spool that
keeps decoded shards on disk, name demangling, the GPU/CPU clock check, the per-stream
handover and overlap measures, and PM sampling live together because they share one driver
(CUPTI, imported lazily inside functions) and one data path (buffers -> columns), and change
together when CUPTI does.
"""

from __future__ import annotations
