"""Scored tables → the roofline chart's inputs (points and ceilings) and the report's op rows."""

from __future__ import annotations

import math

import numpy as np

from server.numbers import finite
from server.render.plots import Ceilings, RooflinePoint
from server.render.report import OpRow
from server.scoring.arch import ResolvedArch
from server.scoring.records import RooflineTable, dominant_compute_spec


def chart_points(category: str, table: RooflineTable) -> list[RooflinePoint]:
    """One point per op row; rows without a model or a measurement are kept, unplotted, with the reason."""
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
                category=category,
            )
        )
    return pts


def chart_ceilings(resolved: ResolvedArch, tables: list[RooflineTable]) -> Ceilings:
    """The roofs drawn: the dominant compute spec's peak (server.scoring.records.dominant_compute_spec) and HBM."""
    spec = dominant_compute_spec(tables) or "matrix_bf16"
    peak, kind = resolved.gpu.peak_tflops(spec)
    bw, _ = resolved.gpu.peak_tbs()
    return Ceilings(peak_tflops=peak, peak_tbs=bw, compute_spec=spec, gpu_name=resolved.gpu.name, peak_kind=kind)


def report_op_rows(table: RooflineTable, e2e_ms: float) -> list[OpRow]:
    """Every op row for the report, longest first."""
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
                percent_e2e=100.0 * float(row["time_ms"]) / e2e_ms,
                efficiency_pct=finite(row["efficiency_pct"]),
                bound=row["bound"] if isinstance(row["bound"], str) else None,
                flops=finite(row["flops_useful"]),
                bytes=finite(row["bytes_used"]),
                intensity=finite(row["intensity"]),
                achieved_tflops=finite(row["achieved_tflops"]),
                expected_band=band,
                warnings=list(row["warnings"]),
                no_model_reason=row["no_model_reason"],
            )
        )
    return ops
