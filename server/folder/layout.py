"""Where every file of an analysis folder lives (docs/formats.md): the one place a folder path is spelled.

    <output_dir>/category_data/category_manifest.json
    <output_dir>/category_data/<cat>_ops.csv          written by analyze (or an orchestrator)
    <output_dir>/category_data/<cat>_roofline.csv     written by compute_roofline
    <output_dir>/category_data/<cat>_metrics.json     written by rank_findings
    <output_dir>/metadata/<cat>_metadata.json         written by analyze (or an orchestrator)
    <output_dir>/metadata/trace2_gpu_utilization.json comparative folders
    <output_dir>/category_findings/<cat>_findings.md  written by the LLM (never overwritten by us)
    <output_dir>/category_findings/<cat>_findings.template.md   the skeleton, when the findings file exists
    <output_dir>/plots/roofline_<cat>_<bytes model>.png
    <output_dir>/report.html
    <output_dir>/reports/<name>.html                 further reports, by the names callers give

`relative` names (`category_data/sdpa_fwd_ops.csv`, POSIX separators) are what the manifest records and the
all-or-nothing writer stages; `FolderLayout(output_dir)` gives the same files as paths under a folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CATEGORY_DATA = "category_data"
METADATA = "metadata"
FINDINGS = "category_findings"
PLOTS = "plots"
REPORTS = "reports"  # further HTML reports a caller names (render_report output=NAME.html)
MANIFEST_NAME = "category_manifest.json"
TRACE2_UTILIZATION_NAME = "trace2_gpu_utilization.json"
REPORT_NAME = "report.html"
FINDINGS_SUFFIX = "_findings.md"
RANKS_SUMMARY = "ranks_summary.json"  # analyze_ranks' output folder (server.ranks.summary writes it)


def ops_csv(cat: str) -> str:
    return f"{CATEGORY_DATA}/{cat}_ops.csv"


def roofline_csv(cat: str) -> str:
    return f"{CATEGORY_DATA}/{cat}_roofline.csv"


def metrics_json(cat: str) -> str:
    return f"{CATEGORY_DATA}/{cat}_metrics.json"


def manifest() -> str:
    return f"{CATEGORY_DATA}/{MANIFEST_NAME}"


def metadata_json(cat: str) -> str:
    return f"{METADATA}/{cat}_metadata.json"


def trace2_utilization() -> str:
    return f"{METADATA}/{TRACE2_UTILIZATION_NAME}"


def findings_md(cat: str) -> str:
    return f"{FINDINGS}/{cat}{FINDINGS_SUFFIX}"


def findings_template_md(cat: str) -> str:
    return f"{FINDINGS}/{cat}_findings.template.md"


def plot_png(cat: str, bytes_model: str) -> str:
    return f"{PLOTS}/roofline_{cat}_{bytes_model}.png"


def report_html() -> str:
    return REPORT_NAME


def named_report(name: str) -> str:
    return f"{REPORTS}/{name}"


def derived(cat: str) -> tuple[str, ...]:
    """The files the scoring tools derive from a category's ops (stale once the ops change)."""
    return metrics_json(cat), roofline_csv(cat)


def category_of_findings(path: Path) -> str | None:
    """`sdpa_fwd` for `…/category_findings/sdpa_fwd_findings.md`; None for a file of another name."""
    return path.name[: -len(FINDINGS_SUFFIX)] if path.name.endswith(FINDINGS_SUFFIX) else None


def folder_of_findings(path: Path) -> Path:
    """The analysis folder a findings file belongs to (its folder's parent)."""
    return path.parent.parent


@dataclass(frozen=True)
class FolderLayout:
    """The files of one analysis folder, as paths under it."""

    root: Path

    def ops_csv(self, cat: str) -> Path:
        return self.root / ops_csv(cat)

    def roofline_csv(self, cat: str) -> Path:
        return self.root / roofline_csv(cat)

    def metrics_json(self, cat: str) -> Path:
        return self.root / metrics_json(cat)

    def manifest(self) -> Path:
        return self.root / manifest()

    def metadata_json(self, cat: str) -> Path:
        return self.root / metadata_json(cat)

    def trace2_utilization(self) -> Path:
        return self.root / trace2_utilization()

    def findings_md(self, cat: str) -> Path:
        return self.root / findings_md(cat)

    def findings_template_md(self, cat: str) -> Path:
        return self.root / findings_template_md(cat)

    def plot_png(self, cat: str, bytes_model: str) -> Path:
        return self.root / plot_png(cat, bytes_model)

    def report_html(self) -> Path:
        return self.root / report_html()

    @property
    def category_data(self) -> Path:
        return self.root / CATEGORY_DATA

    @property
    def findings_dir(self) -> Path:
        return self.root / FINDINGS
