"""Op rows -> perf_models -> roofline records; GPU resolution; impact estimates and ranking."""
