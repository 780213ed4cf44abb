"""compute_roofline: every op row of a category through the perf models; totals and a page of rows."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from server.numbers import finite
from server.scoring.arch import ResolvedArch
from server.scoring.category import score_category
from server.scoring.outputs import write_roofline_table
from server.scoring.records import RooflineTable
from server.scoring.verdicts import verdict
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec, capped
from server.tools.common import ArchArg, BytesModelArg, CategoryArg, OutputDir, PeaksUsed, peaks_of, resolve_output_dir

MAX_LIMIT = 50
# A result must fit an LLM's context whatever the category size (Claude Code warns above 10k tokens): the rows
# of a page stop at this many characters of JSON, and the page says where the next one starts.
ROWS_BUDGET_CHARS = 11_000
MAX_UNMODELED_LISTED = 10
MAX_ROW_WARNINGS = 2
MAX_WARNINGS = 15


class RooflineInput(ToolInput):
    output_dir: OutputDir
    category: CategoryArg
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"
    limit: Annotated[
        int, Field(ge=0, le=MAX_LIMIT, description="rows to return, longest kernel time first (a page also stops "
                   "when its rows reach the result budget; next_offset says where to continue)")
    ] = 10
    offset: Annotated[int, Field(ge=0, description="rows to skip before the page (paging)")] = 0


class RooflineRow(BaseModel):
    """One op row's model and verdict (the full record, every column, is in <category>_roofline.csv)."""

    row: int = Field(description="row index in <category>_ops.csv (0-based)")
    name: str
    direction: str | None = Field(None, description="fwd | bwd")
    kind: str | None = Field(None, description="fwd | bwd | decode | mixed (prefill + decode in one paged call)")
    attention_type: str = Field(description="flash | memory_efficient | cudnn | unfused | paged | …")
    library: str
    shape: str = Field(description="B batch, H heads (q/kv), N lengths (q×kv), d head dims, mask")
    mask: str | None = Field(None, description="none | causal (top-left/bottom-right) | sliding window (left, right)")
    dtype: str | None = None
    count: int
    time_ms: float = Field(description="total kernel time of the row, ms")
    mean_us: float | None = Field(None, description="kernel time of one call, µs")
    flops_useful: float | None = Field(None, description="FLOPs of one call over the kept pairs")
    bytes_compulsory: float | None = Field(None, description="HBM bytes of one call, each tensor once")
    bytes_tiled: float | None = Field(None, description="HBM bytes of one call with tile re-reads that miss the cache")
    ideal_us: float | None = Field(None, description="ideal time of one call at the roofs, µs")
    intensity: float | None = Field(None, description="FLOPs per byte under the chosen bytes model")
    achieved_tflops: float | None = None
    achieved_tbs: float | None = None
    efficiency_pct: float | None = Field(None, description="% of the roofline (ideal time / measured time)")
    efficiency_datasheet_pct: float | None = Field(None, description="the same against the datasheet peaks")
    compute_pct: float | None = Field(None, description="achieved TFLOP/s / compute roof × 100")
    memory_pct: float | None = Field(None, description="achieved TB/s / bandwidth roof × 100")
    bound: str | None = Field(None, description="compute | memory: the roof that limits")
    regime: str | None = Field(None, description="compute | memory | balanced (intensity within ±30 % of the ridge)")
    band_pct: tuple[float, float] | None = Field(
        None, description="expected band, % of the datasheet peak of band_metric (None: no reference band)"
    )
    band_metric: str | None = Field(None, description="compute (tensor %) | memory (HBM %)")
    band_status: str = Field("none", description="within | below | above | none (no reference band)")
    verdict: str = Field(description="the verdict in words")
    work_bound: str | None = Field(
        None, description="exact | lower | upper | unknown: what flops_useful (and so the efficiency) is"
    )
    kv_cache_write_us: float | None = Field(None, description="KV-cache write time beside the row (not in time_ms), µs")
    is_anomaly: bool = False
    gqa_ratio: int | None = None
    kernel_name_trunc: str = ""
    warnings: list[str] = Field(default_factory=list)


class RooflineResult(BaseModel):
    category: str
    status: Literal["OK", "NO_DATA"]
    bytes_model: str
    peaks: PeaksUsed | None = None
    total_rows: int = 0
    modeled_rows: int = 0
    unmodeled_rows: int = 0
    total_time_ms: float = 0.0
    weighted_efficiency_pct: float | None = Field(None, description="ideal time / measured time over modeled rows")
    anomalies: int = 0
    offset: int = 0
    limit: int = 0
    next_offset: int | None = Field(None, description="offset of the next page (None: this page ends the table)")
    rows: list[RooflineRow] = Field(default_factory=list, description="rows by time, descending, paged")
    roofline_file: str | None = Field(None, description="full per-row records (CSV) in the analysis folder")
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def peaks_used(arch: ResolvedArch, table: RooflineTable | None) -> PeaksUsed:
    """The roofs behind a table's numbers: the GPU's bandwidth and the roof of its dominant compute spec."""
    spec = table.dominant_compute_spec() if table is not None else None
    return peaks_of(arch.gpu, arch.source, spec, detail=arch.trace_note, trace_gpu_name=arch.trace_gpu_name)


def _text(x: object) -> str | None:
    """A text cell of the records, None where it is missing (pandas reads a missing text as NaN)."""
    return x if isinstance(x, str) else None


def _row_model(r: pd.Series) -> RooflineRow:
    has_band = bool(np.isfinite(r["band_low"]))
    unfused = r["attention_type"] == "unfused"
    compute, memory = finite(r["compute_pct"], 2), finite(r["memory_pct"], 2)
    return RooflineRow(
        row=int(r["row"]),
        name=str(r["name"]),
        direction=_text(r["direction"]),
        kind=_text(r["kind"]),
        attention_type=str(r["attention_type"]),
        library=str(r["library"]),
        shape=str(r["shape_label"]),
        mask=_text(r["mask"]),
        dtype=_text(r["dtype"]),
        count=int(r["count"]),
        time_ms=round(float(r["time_ms"]), 4),
        mean_us=finite(r["mean_us"], 3),
        flops_useful=finite(r["flops_useful"], 0),
        bytes_compulsory=finite(r["bytes_compulsory"], 0),
        bytes_tiled=finite(r["bytes_tiled"], 0),
        ideal_us=finite(r["ideal_us"], 3),
        intensity=finite(r["intensity"], 2),
        achieved_tflops=finite(r["achieved_tflops"], 2),
        achieved_tbs=finite(r["achieved_tbs"], 3),
        efficiency_pct=finite(r["efficiency_pct"], 2),
        efficiency_datasheet_pct=finite(r["efficiency_datasheet_pct"], 2),
        compute_pct=compute,
        memory_pct=memory,
        bound=_text(r["bound"]),
        regime=_text(r["regime"]),
        band_pct=(float(r["band_low"]), float(r["band_high"])) if has_band else None,
        band_metric=_text(r["band_metric"]),
        band_status=str(r["band_status"]),
        verdict=verdict(_text(r["regime"]), compute, memory, str(r["band_status"]),
                        finite(r["band_low"]), finite(r["band_high"]), _text(r["band_metric"]), bool(r["is_anomaly"]),
                        _text(r["work_bound"]), band_note=_text(r["band_note"]),
                        band_reference_kernel=_text(r["band_reference_kernel"]),
                        band_reference_pct=finite(r["band_reference_pct"], 1),
                        band_borrowed_from=_text(r["band_borrowed_from"]),
                        unfused_intensity=finite(r["regime_intensity"], 1) if unfused else None,
                        unfused_bytes=finite(r["regime_bytes"], 0) if unfused else None,
                        fused_intensity=finite(r["intensity"], 1) if unfused else None,
                        ridge=finite(r["ridge"], 1) if unfused else None),
        work_bound=_text(r["work_bound"]),
        kv_cache_write_us=finite(r["kv_cache_write_us"], 3) or None,
        is_anomaly=bool(r["is_anomaly"]),
        gqa_ratio=int(r["gqa_ratio"]) if r["gqa_ratio"] and r["gqa_ratio"] == r["gqa_ratio"] else None,
        kernel_name_trunc=str(r["kernel_name_trunc"]),
        warnings=list(r["warnings"])[:MAX_ROW_WARNINGS],
    )


def compute_roofline(ctx: ToolContext, args: RooflineInput) -> RooflineResult:
    out = resolve_output_dir(ctx.roots, args.output_dir)
    scored = score_category(ctx.roots, out, args.category, args.arch, args.bytes_model)
    if not scored.has_rows:
        return RooflineResult(
            category=scored.data.category,
            status="NO_DATA",
            bytes_model=args.bytes_model,
            warnings=["no attention ops of this category in the trace"],
        )
    data, table, resolved = scored.data, scored.table, scored.arch
    assert table is not None and resolved is not None
    r = table.records
    order = np.argsort(-r["time_ms"].to_numpy(), kind="stable")
    rows: list[RooflineRow] = []
    used = 0
    for _, row in r.iloc[order[args.offset : args.offset + args.limit]].iterrows():
        model = _row_model(row)
        used += len(model.model_dump_json())
        if rows and used > ROWS_BUDGET_CHARS:
            break
        rows.append(model)
    end = args.offset + len(rows)
    path = write_roofline_table(data, table, scored.written)
    modeled = r["has_model"].to_numpy()
    ideal_total = float(np.nansum((r["ideal_us"] * r["count"]).to_numpy()[modeled]))
    meas_total = float(np.nansum((r["mean_us"] * r["count"]).to_numpy()[modeled]))
    warnings = list(resolved.warnings) + list(data.warnings)
    unmodeled = r[~r["has_model"]].iloc[:MAX_UNMODELED_LISTED + 1]
    n_unmodeled = int((~r["has_model"]).sum())
    if n_unmodeled <= MAX_UNMODELED_LISTED:
        warnings += [
            f"row {int(row)} {name}: {why}"
            for row, name, why in zip(unmodeled["row"], unmodeled["name"], unmodeled["no_model_reason"], strict=True)
        ]
    else:
        warnings.append(f"{n_unmodeled} rows have no perf model; see {path.name} column no_model_reason")
    return RooflineResult(
        category=data.category,
        status="OK",
        bytes_model=args.bytes_model,
        peaks=peaks_used(resolved, table),
        total_rows=len(r),
        modeled_rows=int(modeled.sum()),
        unmodeled_rows=int((~modeled).sum()),
        total_time_ms=round(float(r["time_ms"].sum()), 4),
        weighted_efficiency_pct=finite(100.0 * ideal_total / meas_total, 2) if meas_total > 0 else None,
        anomalies=int(r["anomaly_flag"].sum()),
        offset=args.offset,
        limit=args.limit,
        next_offset=end if end < len(r) else None,
        rows=rows,
        roofline_file=str(path),
        notes=list(table.peak_notes),
        warnings=capped(warnings, MAX_WARNINGS),
    )


TOOL = ToolSpec(
    name="compute_roofline",
    title="Roofline of every attention op",
    description=(
        "Model every op row of a category: parsed shapes and mask, FLOPs, bytes (compulsory and tiled), ideal "
        "time, achieved TFLOP/s and TB/s, efficiency (% of roofline), bound, expected band and classification. "
        "Returns totals and one page of rows (longest first; limit/offset); every row is written to "
        "category_data/<category>_roofline.csv."
    ),
    input_model=RooflineInput,
    result_model=RooflineResult,
    run=compute_roofline,
    cli=CliSpec("roofline", positional=("output_dir", "category")),
    writes=True,
)
