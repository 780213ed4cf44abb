"""compute_roofline: every op row of a category through the perf models; totals and a page of rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from sdpa_analyzer.server.numbers import rounded
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.scoring.fields import result_model
from sdpa_analyzer.server.scoring.weighted import EfficiencyLeftOut, left_out_time, weigh_rows, weighted_efficiency
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec, capped
from sdpa_analyzer.server.tools.common import (
    ArchArg,
    BytesModelArg,
    CategoryArg,
    OutputDir,
    PeaksUsed,
    peaks_used,
    resolve_output_dir,
)

if TYPE_CHECKING:
    import pandas as pd

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


RooflineRow = result_model(
    "RooflineRow",
    "row",
    "One op row's model and verdict (the full record, every column, is in <category>_roofline.csv).",
    required=("row", "name", "attention_type", "library", "shape", "count", "time_ms", "band_status", "verdict"),
)


class RooflineResult(ResultModel):
    category: str
    status: Literal["OK", "NO_DATA"]
    bytes_model: str
    peaks: PeaksUsed | None = None
    total_rows: int = 0
    modeled_rows: int = 0
    unmodeled_rows: int = 0
    total_time_ms: float = 0.0
    weighted_efficiency_pct: float | None = Field(
        None, description="Σ ideal / Σ measured time over the rows with exact work and a consistent model")
    efficiency_left_out: list[EfficiencyLeftOut] = Field(
        default_factory=list, description="the time weighted_efficiency_pct leaves out, by why")
    anomalies: int = 0
    offset: int = 0
    limit: int = 0
    next_offset: int | None = Field(None, description="offset of the next page (None: this page ends the table)")
    rows: list[RooflineRow] = Field(default_factory=list, description="rows by time, descending, paged")
    roofline_file: str | None = Field(None, description="full per-row records (CSV) in the analysis folder")
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def _row_model(r: pd.Series, bytes_model: str) -> BaseModel:
    from sdpa_analyzer.server.scoring.field_values import result_values
    from sdpa_analyzer.server.scoring.verdicts import row_verdict

    warnings = list(r["warnings"])[:MAX_ROW_WARNINGS]
    values = result_values(r, "row", verdict=row_verdict(r, bytes_model), warnings=warnings)
    return RooflineRow(**values)


def compute_roofline(ctx: ToolContext, args: RooflineInput) -> RooflineResult:
    # the scoring (numpy, pandas): imported when the tool runs, never to declare it
    import numpy as np

    from sdpa_analyzer.server.scoring.category import score_category
    from sdpa_analyzer.server.scoring.outputs import write_roofline_table

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
    rows: list[BaseModel] = []
    used = 0
    for _, row in r.iloc[order[args.offset : args.offset + args.limit]].iterrows():
        model = _row_model(row, table.bytes_model)
        used += len(model.model_dump_json())
        if rows and used > ROWS_BUDGET_CHARS:
            break
        rows.append(model)
    end = args.offset + len(rows)
    path = write_roofline_table(data, table, scored.written).path
    modeled = r["has_model"].to_numpy()
    weighted = weigh_rows(r)
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
        total_time_ms=rounded(float(r["time_ms"].sum()), "ms") or 0.0,
        weighted_efficiency_pct=weighted_efficiency(weighted.ideal_us.sum(), weighted.measured_us.sum()),
        efficiency_left_out=left_out_time(weighted, r["time_ms"]),
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
    agent="step 2: per-op roofline records",
)
