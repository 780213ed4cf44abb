"""Atomic whole-file and streamed writes; column-wise CSV/JSON writers."""
