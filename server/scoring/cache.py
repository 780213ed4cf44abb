"""Process-level cache of scored categories: each loaded category modeled once per (GPU, model options).

Keyed by the loaded data object itself (server.folder.cache replaces it when a file changes), so a table is
never served for stale files. Cached tables are shared between callers: treat them as read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdpa_analyzer.perf_models.config import BwdConvention
from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.server.folder.cache import Lru
from sdpa_analyzer.server.folder.read import CategoryData
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.scoring.records import RooflineTable, compute_records

MAX_TABLES = 4


@dataclass
class _TableEntry:
    gpu: GpuSpec
    table: RooflineTable
    written: dict[Path, Any] = field(default_factory=dict)  # output files this table was written to (outputs.py)


_tables = Lru(MAX_TABLES, lambda e: len(e.table.records))


def cached_records(
    data: CategoryData,
    gpu: GpuSpec,
    *,
    bytes_model: str = "compulsory",
    bwd_convention: BwdConvention = BwdConvention.FIVE_GEMM,
    skip_masked_tiles: bool = True,
) -> tuple[RooflineTable, dict[Path, Any]]:
    """compute_records, reused for the same loaded data, GPU and model options.

    Also returns the entry's record of output files already written from this table (path → what was
    writing), so a caller can skip rewriting a file that is still exactly what it wrote.
    """
    key = (id(data), gpu.key, bytes_model, bwd_convention, skip_masked_tiles)
    entry = _tables.get(key)
    if entry is None or entry.gpu != gpu or entry.table.source is not data:
        entry = _TableEntry(
            gpu,
            compute_records(
                data, gpu, bytes_model=bytes_model, bwd_convention=bwd_convention, skip_masked_tiles=skip_masked_tiles
            ),
        )
        _tables.put(key, entry)
        release_free_heap()  # modeling every row freed far more than the table keeps
    return entry.table, entry.written


def clear() -> None:
    """Forget every scored table (tests; or to free memory)."""
    _tables.clear()
