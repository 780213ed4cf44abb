"""plot_roofline and the HTML report: roofline records → chart inputs / report context, files written atomically."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from server.errors import InputError
from server.folder.cache import cached_load, cached_records
from server.folder.read import KNOWN_CATEGORIES, check_category
from server.numbers import finite as _f
from server.render.plots import Ceilings, RooflinePoint, render_roofline_png
from server.render.report import CategorySection, FindingRow, OpRow, PeakSource, ReportContext, render_report_html
from server.roots import DataRoots
from server.scoring.arch import ResolvedArch, resolve_arch
from server.scoring.records import RooflineTable
from server.writers.atomic import write_bytes_atomic, write_text_atomic


class PlotResult(BaseModel):
    categories: list[str]
    files: list[str] = Field(description="PNG files written under <output_dir>/plots/")
    gpu: str
    peak_tflops: float
    peak_tbs: float
    compute_spec: str
    bytes_model: str
    plotted: int
    unplotted: list[str] = Field(default_factory=list, description="ops without a model: listed, not plotted")
    width_px: int
    height_px: int


def _categories(out: Path, category: str) -> list[str]:
    if category == "all":
        return [c for c in KNOWN_CATEGORIES if (out / "category_data" / f"{c}_ops.csv").exists()]
    return [check_category(category)]


def _scored_categories(
    roots: DataRoots, output_dir: str, category: str, arch: str | None, bytes_model: str
) -> tuple[Path, list[tuple[str, RooflineTable | None, Any]], ResolvedArch | None]:
    out = roots.resolve(output_dir, what="output_dir")
    if not out.is_dir():
        raise InputError(f"output_dir not found: {out}")
    scored: list[tuple[str, RooflineTable | None, Any]] = []
    resolved: ResolvedArch | None = None
    for cat in _categories(out, category):
        data = cached_load(out, cat)
        if data.status != "OK":
            scored.append((cat, None, data))
            continue
        if resolved is None:
            resolved = resolve_arch(arch, data.metadata, out, roots)
        scored.append((cat, cached_records(data, resolved.gpu, bytes_model=bytes_model)[0], data))
    return out, scored, resolved


def _points(cat: str, table: RooflineTable) -> list[RooflinePoint]:
    r = table.records
    pts = []
    for _, row in r.iterrows():
        eff_ok = row["has_model"] and math.isfinite(row["achieved_tflops"])
        pts.append(
            RooflinePoint(
                label=str(row["shape_label"]),
                intensity=float(row["intensity"]) if eff_ok else None,
                achieved_tflops=float(row["achieved_tflops"]) if eff_ok else None,
                time_ms=float(row["time_ms"]),
                direction="bwd" if row["direction"] == "bwd" else "fwd",
                has_model=bool(eff_ok),
                reason=row["no_model_reason"] or (None if eff_ok else "no measured time or peak"),
                name=str(row["name"]),
                category=cat,
            )
        )
    return pts


def _ceilings(resolved: ResolvedArch, tables: list[RooflineTable]) -> Ceilings:
    specs = [s for t in tables for s in t.records["compute_spec"] if isinstance(s, str)]
    spec = max(set(specs), key=specs.count) if specs else "matrix_bf16"
    peak, kind = resolved.gpu.peak_tflops(spec)
    bw, _ = resolved.gpu.peak_tbs()
    return Ceilings(peak_tflops=peak, peak_tbs=bw, compute_spec=spec, gpu_name=resolved.gpu.name, peak_kind=kind)


def plot_roofline(
    roots: DataRoots, output_dir: str, category: str = "all", arch: str | None = None, bytes_model: str = "compulsory"
) -> tuple[PlotResult, bytes]:
    out, scored, resolved = _scored_categories(roots, output_dir, category, arch, bytes_model)
    cats = [c for c, _, _ in scored]
    tables = [t for _, t, _ in scored if t is not None]
    if resolved is None:
        raise InputError(f"{out}: no attention ops to plot in {', '.join(cats) or 'any category'} (NO_DATA)")
    points = [p for c, t, _ in scored if t is not None for p in _points(c, t)]
    ceilings = _ceilings(resolved, tables)
    label = category if category != "all" else "+".join(c for c, t, _ in scored if t is not None)
    plot = render_roofline_png(
        points, ceilings, title=f"{label} on {resolved.gpu.name} ({bytes_model} bytes)", bytes_model=bytes_model
    )
    path = write_bytes_atomic(out / "plots" / f"roofline_{category}_{bytes_model}.png", plot.png)
    return PlotResult(
        categories=cats,
        files=[str(path)],
        gpu=resolved.gpu.name,
        peak_tflops=ceilings.peak_tflops,
        peak_tbs=ceilings.peak_tbs,
        compute_spec=ceilings.compute_spec,
        bytes_model=bytes_model,
        plotted=len(plot.points),
        unplotted=[f"{u.name} ({u.label}): {u.reason}" for u in plot.unplotted],
        width_px=plot.width_px,
        height_px=plot.height_px,
    ), plot.png


def _metrics_findings(out: Path, cat: str) -> list[FindingRow]:
    import orjson

    p = out / "category_data" / f"{cat}_metrics.json"
    if not p.is_file():
        return []
    try:
        m = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError:
        return []
    rows = []
    for f in m.get("category_findings", []) if isinstance(m, dict) else []:
        try:
            rows.append(
                FindingRow(
                    rank=int(f["rank"]),
                    bound=str(f.get("bound_type")),
                    library=str(f.get("library")),
                    eff_bucket=str(f.get("eff_bucket")),
                    estimate_method=str(f.get("estimate_method")),
                    impact_low=float(f["impact_score_low"]),
                    impact_mid=float(f["impact_score"]),
                    impact_high=float(f["impact_score_high"]),
                    members=[str(x.get("operation")) for x in f.get("members", [])],
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return rows


def write_report(
    roots: DataRoots,
    output_dir: str,
    arch: str | None = None,
    bytes_model: str = "compulsory",
    output: str | None = None,
) -> Path:
    out, scored, resolved = _scored_categories(roots, output_dir, "all", arch, bytes_model)
    sections: list[CategorySection] = []
    peaks: list[PeakSource] = []
    e2e = None
    if resolved is not None:
        ceil = _ceilings(resolved, [t for _, t, _ in scored if t is not None])
        src = {
            "trace": f"GPU in the trace (deviceProperties: {resolved.trace_gpu_name})",
            "argument": "named by the caller",
            "arch_json": "arch JSON file",
            "metadata": "analysis-folder metadata",
        }.get(resolved.source, resolved.source)
        peaks.append(
            PeakSource(
                gpu_name=resolved.gpu.name,
                compute_spec=ceil.compute_spec,
                peak_tflops=ceil.peak_tflops,
                peak_tbs=ceil.peak_tbs,
                peak_kind=ceil.peak_kind,
                source=src,
            )
        )
    for cat, table, data in scored:
        if table is None:
            sections.append(CategorySection(category=cat))
            continue
        e2e = data.e2e_ms
        plot = render_roofline_png(
            _points(cat, table),
            _ceilings(resolved, [table]),  # type: ignore[arg-type]
            title=f"{cat} on {table.gpu.name}",
            bytes_model=bytes_model,
        )
        r = table.records
        order = np.argsort(-r["time_ms"].to_numpy(), kind="stable")
        ops = []
        for i in order:
            row = r.iloc[i]
            band = f"{row['band_low']:g}–{row['band_high']:g} %" if math.isfinite(row["band_low"]) else None
            ops.append(
                OpRow(
                    name=str(row["name"]),
                    args=str(row["args"]),
                    count=int(row["count"]),
                    time_ms=float(row["time_ms"]),
                    percent_e2e=100.0 * float(row["time_ms"]) / data.e2e_ms,
                    efficiency_pct=_f(row["efficiency_pct"]),
                    bound=row["bound"] if isinstance(row["bound"], str) else None,
                    flops=_f(row["flops_useful"]),
                    bytes=_f(row["bytes_used"]),
                    intensity=_f(row["intensity"]),
                    achieved_tflops=_f(row["achieved_tflops"]),
                    expected_band=band,
                    warnings=list(row["warnings"]),
                    no_model_reason=row["no_model_reason"],
                )
            )
        sections.append(
            CategorySection(
                category=cat,
                chart_png=plot.png,
                chart_alt=f"Roofline chart of {cat}",
                total_time_ms=float(r["time_ms"].sum()),
                percent_of_e2e=100.0 * float(r["time_ms"].sum()) / data.e2e_ms,
                notes=list(table.peak_notes),
                findings=_metrics_findings(out, cat),
                ops=ops,
            )
        )
    if not sections:
        sections.append(CategorySection(category="sdpa_fwd"))
    ctx = ReportContext(
        title=f"Attention performance report — {out.name}",
        source=str(out),
        e2e_ms=e2e,
        bytes_model=bytes_model,
        peaks=peaks,
        warnings=list(resolved.warnings) if resolved else [],
        sections=sections,
    )
    target = roots.resolve(output, what="report path") if output else out / "report.html"
    write_text_atomic(target, render_report_html(ctx))
    return target
