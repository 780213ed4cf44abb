"""Scored tables → the roofline chart's inputs (points and ceilings) and the report's op rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from sdpa_analyzer.server.numbers import finite
from sdpa_analyzer.server.render.chart_types import Ceilings, RooflinePoint
from sdpa_analyzer.server.render.report import OpRow, OpRows
from sdpa_analyzer.server.scoring.arch import ResolvedArch
from sdpa_analyzer.server.scoring.ranking import trace2_times
from sdpa_analyzer.server.scoring.records import RooflineTable, dominant_compute_spec
from sdpa_analyzer.server.scoring.verdicts import row_verdict
from sdpa_analyzer.server.vocab import CHART_COMPUTE_SPEC, COMPARATIVE


def chart_points(category: str, table: RooflineTable) -> list[RooflinePoint]:
    """One point per op row; rows without a model or a measurement are kept, unplotted, with the reason."""
    r = table.records
    columns = {c: r[c].tolist() for c in _POINT_COLUMNS}  # read once: a DataFrame row costs ~0.1 ms
    pts = []
    for i in range(len(r)):
        row = _RowView(columns, i)
        eff_ok = row["has_model"] and math.isfinite(row["achieved_tflops"])
        pts.append(
            RooflinePoint(
                label=str(row["shape"]),
                intensity=float(row["intensity"]) if eff_ok else None,
                achieved_tflops=float(row["achieved_tflops"]) if eff_ok else None,
                time_ms=float(row["time_ms"]),
                direction="bwd" if row["direction"] == "bwd" else "fwd",
                has_model=bool(eff_ok),
                reason=row["no_model_reason"] or (None if eff_ok else "no measured time or peak"),
                name=str(row["name"]),
                category=category,
                efficiency_pct=finite(row["efficiency_pct"]) if eff_ok else None,
                work_bound=row["work_bound"] if isinstance(row["work_bound"], str) else None,
            )
        )
    return pts


_POINT_COLUMNS = ("has_model", "achieved_tflops", "shape", "intensity", "time_ms", "direction", "no_model_reason",
                  "name", "efficiency_pct", "work_bound")  # fmt: skip


def chart_ceilings(resolved: ResolvedArch, tables: list[RooflineTable]) -> Ceilings:
    """The roofs drawn: the dominant compute spec's peak (server.scoring.records.dominant_compute_spec) and HBM."""
    spec = dominant_compute_spec(tables) or CHART_COMPUTE_SPEC
    peak, kind = resolved.gpu.peak_tflops(spec)
    bw, _ = resolved.gpu.peak_tbs()
    return Ceilings(peak_tflops=peak, peak_tbs=bw, compute_spec=spec, gpu_name=resolved.gpu.name, peak_kind=kind)


def _text(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _kernel_list(cell: object) -> list[str]:
    """`Kernel 1: a<br>Kernel 2: b` (server.scoring.records.kernel_name_cells) → [a, b]; one kernel → [it]."""
    text = _text(cell)
    if text is None:
        return []
    parts = text.split("<br>")
    if len(parts) == 1:
        return parts
    return [p.split(": ", 1)[1] if p.startswith("Kernel ") and ": " in p else p for p in parts]


class _Columns(dict[str, list[Any]]):
    """The records' columns as Python values, each read (once) when a row first asks for it: a DataFrame row lookup
    costs ~0.5 ms, and all ~100 columns of 10^5 rows as Python objects would be ~300 MB."""

    def __init__(self, records: pd.DataFrame) -> None:
        super().__init__()
        self.records = records

    def __missing__(self, column: str) -> list[Any]:
        values = self[column] = self.records[column].tolist()
        return values


class _RowView:
    """One record, read from the table's columns (as Python values) by column name."""

    __slots__ = ("_columns", "_i")

    def __init__(self, columns: dict[str, list[Any]], i: int) -> None:
        self._columns, self._i = columns, i

    def __getitem__(self, column: str) -> Any:
        return self._columns[column][self._i]


def report_op_rows(table: RooflineTable, e2e_ms: float) -> OpRows:
    """Every op row for the report, longest first, each made when the page is written; a comparative folder's rows
    carry their trace-2 times."""
    r = table.records
    data = table.source
    comparative = data is not None and data.comparison_scope == COMPARATIVE and data.df is not None
    t2, c2 = trace2_times(data) if comparative and data is not None else (None, None)
    order = np.argsort(-r["time_ms"].to_numpy(), kind="stable").tolist()
    columns = _Columns(r)

    def make(k: int) -> OpRow:
        i = order[k]
        row = _RowView(columns, i)
        band = f"{row['band_low']:g}–{row['band_high']:g} %" if math.isfinite(row["band_low"]) else None
        kernels = _kernel_list(row["kernel_name"])
        t2_ms = finite(t2[i]) if t2 is not None else None
        t2_count = c2[i] if c2 is not None and math.isfinite(c2[i]) else None
        return OpRow(
            name=str(row["name"]),
            shape=_text(row["shape"]),
            verdict=row_verdict(row),
            work_bound=_text(row["work_bound"]),
            args=str(row["args"]),
            count=int(row["count"]),
            time_ms=float(row["time_ms"]),
            percent_e2e=100.0 * float(row["time_ms"]) / e2e_ms,
            efficiency_pct=finite(row["efficiency_pct"]),
            compute_pct=finite(row["compute_pct"]),
            memory_pct=finite(row["memory_pct"]),
            regime=_text(row["regime"]),
            bound=row["bound"] if isinstance(row["bound"], str) else None,
            flops=finite(row["flops_useful"]),
            bytes=finite(row["bytes_used"]),
            intensity=finite(row["intensity"]),
            achieved_tflops=finite(row["achieved_tflops"]),
            expected_band=band,
            band_status=_text(row["band_status"]),
            kernel_name=_text(row["dominant_kernel"]) or (kernels[0] if kernels else None),
            kernel_names=kernels,
            module_chain=[str(m) for m in row["module_chain"]] if isinstance(row["module_chain"], list) else [],
            t2_time_ms=t2_ms,
            t2_count=int(t2_count) if t2_count is not None else None,
            difference_ms=t2_ms - float(row["time_ms"]) if t2_ms is not None else None,
            warnings=list(row["warnings"]),
            no_model_reason=row["no_model_reason"],
        )

    return OpRows(len(order), make)
