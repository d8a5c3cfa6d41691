"""Map and reduce over ranks: each rank's table built by itself, in-process or on Dask.

Why a room of its own: past one machine (a 64-rank job at a million launches per rank is tens of
GB), no single process may hold a whole side. Each rank of a sharded run (``schema.shards``) is
read, validated and turned into its cycle table by one task (the *map*); the tables, small
beside the launches, are joined in run order and handed to the same statistics as always (the
*reduce*), so the report is the one ``compare`` gives for the same run as one file. The engine
reads files (through ``schema``) and builds tables (through ``analysis``); it never renders.
"""
