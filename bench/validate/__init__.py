"""Validation of perfdiff's statistics: simulated ground truth, a harness, real A/A runs.

Why in ``bench/`` (developer tooling, not the product): the harness measures
``compare_tables`` exactly as ``compare`` calls it (same tables, same options), and it must run
where ``compare`` runs: no GPU, no torch.
Run it with ``python -m bench.validate`` (see ``docs/explanation/validation.md``).
"""
