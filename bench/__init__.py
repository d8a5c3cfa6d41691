"""Developer tooling for measuring perfdiff: one folder or script per study (see README.md).

Why a package: the studies share code (the validation harness, the call timers) by importing
it (``bench.validate``, ``bench.timers``), never by loading files by path. Nothing in
``perfdiff/`` imports from here.
"""
