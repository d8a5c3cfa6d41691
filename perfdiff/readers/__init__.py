"""Readers of other tools' formats (LatencyPrism folders, torch.profiler traces).

Why a folder of its own: each input format has one reader that checks physical sense once, at
the edge, so nothing downstream re-checks or patches what it was given.
"""
