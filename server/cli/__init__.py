"""The `sdpa-analyzer` command line."""
