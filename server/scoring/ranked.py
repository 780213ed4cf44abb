"""What `rank_findings` left for a category, read back for the report and the chart: the findings, the GPU,
bytes model and roofs they were ranked with, and the trace-2 differences; whether that agrees with the roofline
being shown; and why a category has no findings.

A report or chart that shows one GPU's roofline next to findings ranked on another misleads without a word:
`consistency_warning` names both and the fix. `no_findings_reason` is the one rule for "why no findings",
shared by rank_findings' result (and the CLI) and the report.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.perf_models.assess import spec_roof
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.manifest import older_analysis, read_run_id
from sdpa_analyzer.server.folder.metrics_file import metrics_document, operation_keys
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.scoring.category import ScoredCategory
from sdpa_analyzer.server.scoring.ranking import Metrics
from sdpa_analyzer.server.vocab import COMPARATIVE, IMPACT_UNIT, MIN_GROUP_MID
from sdpa_analyzer.server.writers.json_columns import Numbers

NOT_RANKED = "rank_findings has not been run for this category: no ranked findings yet"
BELOW_THRESHOLD = (
    f"ranked: no finding above the reporting threshold (groups under {MIN_GROUP_MID:g} % of E2E are dropped)"
)
TRACE2_NOT_FASTER = (
    "ranked (comparative): trace 2 is not faster than trace 1 for any op (every difference_ms ≥ 0), so there is "
    "no time to win back by matching trace 2"
)
PEAK_RTOL = 1e-6  # roofs are written unrounded: any real difference is a different roof


def no_findings_reason(findings: int, scope: str | None, differences: Iterable[float | None]) -> str | None:
    """Why a ranked category has no findings (None when it has some).

    In comparative scope the gap is 1 − trace-2 time / trace-1 time: when no op ran faster in trace 2, no op has
    a gap, whatever the threshold. Ops without a trace-2 time fall back to their roofline gap, which can still be
    under the threshold, so they are counted apart."""
    if findings:
        return None
    if scope == COMPARATIVE:
        values = list(differences)
        known = [d for d in values if d is not None and math.isfinite(d)]
        if known and all(d >= 0 for d in known):
            missing = len(values) - len(known)
            if missing:
                return (
                    f"{TRACE2_NOT_FASTER}; the {missing} op(s) without a trace-2 time are under the reporting "
                    f"threshold ({MIN_GROUP_MID:g} % of E2E)"
                )
            return TRACE2_NOT_FASTER
    return BELOW_THRESHOLD


def metrics_no_findings_reason(metrics: Metrics) -> str | None:
    """no_findings_reason of a metrics document being written (rank_findings' result)."""
    diffs: list[float | None] = []
    for f in metrics.operations.fields:
        if f.key == "difference_ms" and isinstance(f.value, Numbers):
            diffs = [float(v) for v in f.value.values.tolist()]
    return no_findings_reason(len(metrics["category_findings"]), metrics["comparison_scope"], diffs)


@dataclass(frozen=True)
class RankedMetrics:
    """A `<cat>_metrics.json` as the report and the chart need it."""

    path: Path
    error: str | None = None  # why it could not be read (then nothing else is set)
    comparison_scope: str | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    differences: list[float | None] = field(default_factory=list)  # operations[].difference_ms
    has_block: bool = False  # it has our `sdpa_analyzer` block (GPU, bytes model, roofs)
    gpu_key: str | None = None
    gpu_name: str | None = None
    bytes_model: str | None = None
    peak_tflops: float | None = None
    peak_tbs: float | None = None
    impact_unit: str = IMPACT_UNIT
    warnings: list[str] = field(default_factory=list)  # the ones rank_findings recorded
    mtime_ns: int = 0

    @property
    def no_findings_reason(self) -> str | None:
        if self.error:
            return f"the metrics JSON could not be read ({self.error}): re-run rank_findings"
        return no_findings_reason(len(self.findings), self.comparison_scope, self.differences)

    def ranked_with(self) -> str:
        """`NVIDIA H100 SXM5 80GB (h100-sxm), compulsory bytes, standalone scope`."""
        if not self.has_block:
            return f"{self.comparison_scope or 'unknown'} scope; GPU and bytes model not recorded"
        return f"{self.gpu_name} ({self.gpu_key}), {self.bytes_model} bytes, {self.comparison_scope} scope"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def load_ranked(output_dir: Path, category: str, roots: DataRoots = UNRESTRICTED) -> RankedMetrics | None:
    """The category's metrics JSON (read through `roots`), or None when rank_findings has not written one."""
    path = output_dir / layout.metrics_json(category)
    try:
        st = roots.stat(path, what="metrics JSON")
        if st is None:
            return None
        mtime = st.st_mtime_ns
    except FileNotFoundError:
        return None
    except InputError as exc:  # a link out of the roots, a folder in its place: said, never followed
        return RankedMetrics(path, error=str(exc))
    except OSError as exc:
        return RankedMetrics(path, error=exc.strerror or type(exc).__name__)
    try:  # operations[] streamed when the file allows it: only their difference_ms is read
        with metrics_document(path, roots, "float", partial(_read_whole, path, roots), roofline_rows=False) as doc:
            keys = operation_keys(doc.get("operations") or [])
            differences = [_num(d) for d, is_object in zip(keys.differences, keys.objects, strict=True) if is_object]
            return _ranked(output_dir, roots, path, doc, differences, mtime)
    except _Unreadable as exc:
        return exc.result


class _Unreadable(Exception):
    """The whole-document read found no document: what load_ranked returns instead (None: no file)."""

    def __init__(self, result: RankedMetrics | None) -> None:
        super().__init__()
        self.result = result


def _read_whole(path: Path, roots: DataRoots) -> dict[str, Any]:
    """The metrics JSON read whole (a file the streamed read cannot vouch for); every failure an _Unreadable."""
    try:
        raw = roots.read_bytes(path, what="metrics JSON")
    except FileNotFoundError:
        raise _Unreadable(None) from None
    except InputError as exc:
        raise _Unreadable(RankedMetrics(path, error=str(exc))) from None
    except OSError as exc:
        raise _Unreadable(RankedMetrics(path, error=exc.strerror or type(exc).__name__)) from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _Unreadable(RankedMetrics(path, error=f"not valid JSON: {exc.msg}")) from None
    if not isinstance(doc, dict):
        raise _Unreadable(RankedMetrics(path, error="not a JSON object"))
    return doc


def _ranked(
    output_dir: Path, roots: DataRoots, path: Path, doc: dict[str, Any], differences: list[float | None], mtime: int
) -> RankedMetrics:
    block_run = doc.get("sdpa_analyzer", {}).get("run_id") if isinstance(doc.get("sdpa_analyzer"), dict) else None
    if older_analysis(path, block_run, read_run_id(output_dir, roots), "") is not None:
        return RankedMetrics(path, error="computed from an older analysis of this folder")
    findings = [f for f in doc.get("category_findings") or [] if isinstance(f, dict)]
    block = doc.get("sdpa_analyzer")
    block = block if isinstance(block, dict) else None
    gpu = (block or {}).get("gpu")
    gpu = gpu if isinstance(gpu, dict) else {}
    peaks = (block or {}).get("peaks")
    peaks = peaks if isinstance(peaks, dict) else {}
    warnings = (block or {}).get("warnings")
    return RankedMetrics(
        path=path,
        comparison_scope=str(doc.get("comparison_scope")) if doc.get("comparison_scope") else None,
        findings=findings,
        differences=differences,
        has_block=block is not None,
        gpu_key=str(gpu["key"]) if gpu.get("key") else None,
        gpu_name=str(gpu["name"]) if gpu.get("name") else None,
        bytes_model=str(block["bytes_model"]) if block and block.get("bytes_model") else None,
        peak_tflops=_num(peaks.get("peak_tflops")),
        peak_tbs=_num(peaks.get("peak_tbs")),
        impact_unit=str(block["impact_unit"]) if block and block.get("impact_unit") else IMPACT_UNIT,
        warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
        mtime_ns=mtime,
    )


def _differs(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and not math.isclose(a, b, rel_tol=PEAK_RTOL)


def consistency_warning(
    ranked: RankedMetrics,
    *,
    gpu_key: str,
    gpu_name: str,
    bytes_model: str,
    peak_tflops: float | None,
    peak_tbs: float | None,
    shown_in: str,
    tool: str,
    arch_hint: str | None = None,
) -> str | None:
    """One warning when the findings were ranked with another GPU, bytes model or roofs than the roofline shown
    in `shown_in` ("this report", "this chart"); it names both sides and the fix. None when they agree."""
    if ranked.error:
        return None  # the reason for "no findings" says it; there is nothing to compare
    arch = arch_hint or gpu_key
    if not ranked.has_block:
        return (
            f"the metrics JSON does not record the GPU or bytes model its findings were ranked with (no "
            f"sdpa_analyzer block: written by another tool or an older version), so they may not match {shown_in} "
            f"({gpu_name}, {bytes_model} bytes): re-run rank_findings with arch={arch} bytes_model={bytes_model}"
        )
    gpu_differs = ranked.gpu_key is not None and ranked.gpu_key != gpu_key
    bytes_differs = ranked.bytes_model is not None and ranked.bytes_model != bytes_model
    if gpu_differs or bytes_differs:
        theirs = f"{ranked.gpu_name} ({ranked.gpu_key}) with {ranked.bytes_model} bytes"
        ours = f"{gpu_name} ({gpu_key}) with {bytes_model} bytes"
        rerun = " ".join(
            p
            for p in (f"arch={arch}" if gpu_differs else "", f"bytes_model={bytes_model}" if bytes_differs else "")
            if p
        )
        same = " ".join(
            p
            for p in (
                f"arch={ranked.gpu_key}" if gpu_differs else "",
                f"bytes_model={ranked.bytes_model}" if bytes_differs else "",
            )
            if p
        )
        return (
            f"findings were ranked on {theirs}, but {shown_in} shows {ours}: re-run rank_findings with {rerun}, "
            f"or pass {same} to {tool}"
        )
    if _differs(ranked.peak_tflops, peak_tflops) or _differs(ranked.peak_tbs, peak_tbs):
        return (
            f"findings were ranked on {gpu_name} with roofs {ranked.peak_tflops:g} TFLOPS / {ranked.peak_tbs:g} TB/s, "
            f"but {shown_in} uses {peak_tflops:g} TFLOPS / {peak_tbs:g} TB/s (the GPU's figures changed since): "
            f"re-run rank_findings with arch={arch}"
        )
    return None


def ranking_mismatch(
    roots: DataRoots, out: Path, s: ScoredCategory, arch_arg: str | None, shown_in: str, tool: str
) -> tuple[RankedMetrics | None, str | None]:
    """The category's metrics JSON (None: not ranked yet) and a warning when its findings were ranked with another
    GPU, bytes model or roofs than the roofline `s` shows."""
    ranked = load_ranked(out, s.data.category, roots)
    if ranked is None or s.arch is None or s.table is None:
        return ranked, None
    spec = s.table.dominant_compute_spec()
    roof = spec_roof(s.table.gpu, spec) if spec is not None else None
    warning = consistency_warning(
        ranked,
        gpu_key=s.table.gpu.key,
        gpu_name=s.table.gpu.name,
        bytes_model=s.table.bytes_model,
        peak_tflops=roof.value if roof is not None else None,
        peak_tbs=s.table.gpu.bandwidth_roof().value,
        shown_in=shown_in,
        tool=tool,
        arch_hint=arch_arg,
    )
    return ranked, warning
