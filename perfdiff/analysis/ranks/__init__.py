"""Ranks of one job against each other: which rank the others wait for (``perfdiff ranks``)."""
