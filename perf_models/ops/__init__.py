"""Op-table internals behind `perf_models.registry`: signatures, row reading, perf_params fallback."""
