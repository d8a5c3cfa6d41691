"""Run file -> per-cycle tables (pandas) -> statistics (scipy) -> a typed Comparison.

Never imports rich, typer, torch or cupti.
"""
