"""One category of an analysis folder, loaded and scored: the step every scoring tool starts with.

Loading and modeling are cached (server.folder.cache, server.scoring.cache) while the category's files are
unchanged, so load → roofline → rank → plot on one folder parse and model it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.cache import cached_load
from sdpa_analyzer.server.folder.read import CategoryData
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.arch import ResolvedArch, resolve_arch
from sdpa_analyzer.server.scoring.cache import cached_records
from sdpa_analyzer.server.scoring.records import RooflineTable
from sdpa_analyzer.server.vocab import CATEGORIES


@dataclass
class ScoredCategory:
    """The loaded data and, when the category has rows (status OK), the GPU it was scored on and its records.

    `written` is the table's record of output files already written from it (path → what was written:
    server.scoring.outputs.WrittenTable)."""

    data: CategoryData
    arch: ResolvedArch | None = None
    table: RooflineTable | None = None
    written: dict[Path, Any] = field(default_factory=dict)

    @property
    def has_rows(self) -> bool:
        return self.table is not None and self.arch is not None


def score_category(
    roots: DataRoots, output_dir: Path, category: str, arch: str | None, bytes_model: str
) -> ScoredCategory:
    data = cached_load(output_dir, category, roots)
    if data.status != "OK":
        return ScoredCategory(data)
    kernel_names = [name for names in data.kernels.name_sets for name in names]
    resolved = resolve_arch(arch, data.metadata, output_dir, roots, kernel_names)
    table, written = cached_records(data, resolved.gpu, bytes_model=bytes_model)
    return ScoredCategory(data, resolved, table, written)


def scored_categories(
    roots: DataRoots, out: Path, category: str, arch: str | None, bytes_model: str
) -> list[ScoredCategory]:
    """The folder's categories (all that have an ops CSV, or the one named), each loaded and scored."""
    if not roots.is_dir(out, what="output_dir"):
        raise InputError(f"output_dir not found: {out}")
    cats = (
        [c for c in CATEGORIES if roots.exists(out / layout.ops_csv(c), what="ops CSV")]
        if category == "all"
        else [category]
    )
    return [score_category(roots, out, c, arch, bytes_model) for c in cats]
