"""Many ranks of one distributed job: analyze every rank trace in parallel and compare the ranks.

`analyze_ranks` (server.ranks.run) plans the ranks (server.ranks.discover), runs one task per rank trace on a
process pool or a Dask cluster (server.ranks.engines; each task is server.ranks.task.analyze_rank: the same
ingest as `analyze`, into its own rank folder), and reduces the tasks' small results into the cross-rank
summary (server.ranks.summary) that `load_rank_summary` reads back (server.ranks.read).
"""
