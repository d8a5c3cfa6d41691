"""Other tools' formats -> a validated RunFile (torch.profiler traces, LatencyPrism folders)."""
