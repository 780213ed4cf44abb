"""The analysis-folder contract: layout, reading and validating, writing, the load cache."""
