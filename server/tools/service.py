"""What each tool does, independent of MCP: the MCP layer and the CLI both call these functions.

Every function takes resolved DataRoots and raises InputError (one line) for anything the user can fix.
Loaded and scored categories are cached while their files are unchanged (server.folder.cache), so the usual
load → roofline → rank sequence parses and models a category once; the bulk steps run with the cyclic
garbage collector paused (server.gc_pause).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perf_models.config import AttentionConfig, BwdConvention, Mask, PagedInfo, VarlenInfo
from perf_models.errors import PerfModelError
from perf_models.hardware import list_gpus
from perf_models.registry import lookup
from perf_models.roofline import model_attention as pm_model_attention
from server.errors import InputError
from server.factorize import factorize
from server.folder.cache import FileStamp, cached_load, cached_records, file_stamp
from server.folder.read import CategoryData, check_category
from server.gc_pause import gc_paused
from server.numbers import finite
from server.roots import DataRoots
from server.scoring.arch import ResolvedArch, gpu_by_name_or_file, resolve_arch
from server.scoring.ranking import build_metrics, most_common_spec
from server.scoring.records import BYTES_MODELS, RooflineTable, short_args
from server.tools.schemas import (
    ArchInfo,
    ArchList,
    FindingSummary,
    LoadResult,
    ModelResult,
    PeaksUsed,
    RankResult,
    RooflineResult,
    RooflineRow,
    TopOp,
)
from server.writers.atomic_stream import atomic_writer
from server.writers.csv_columns import frame_csv_chunks

MAX_LIMIT = 200
MAX_MEMBERS_SHOWN = 20
SCOPES = ("standalone", "comparative")


def _f(x: Any, nd: int = 4) -> float | None:
    return finite(x, nd)


def _resolve_dir(roots: DataRoots, output_dir: str) -> Path:
    return roots.resolve(output_dir, what="output_dir")


# ---------------------------------------------------------------- load_category_data
def load_category_data(roots: DataRoots, output_dir: str, category: str, top: int = 5) -> LoadResult:
    out = _resolve_dir(roots, output_dir)
    with gc_paused():
        data = cached_load(out, category)
    res = LoadResult(status=data.status, category=data.category, output_dir=str(out), warnings=list(data.warnings))
    md = data.metadata
    res.platform = md.get("platform") if md else (data.manifest or {}).get("platform")
    res.trace_path = md.get("trace_path") if md else None
    if md.get("max_achievable_tflops"):
        res.metadata_peaks = {
            "max_achievable_tflops": md.get("max_achievable_tflops"),
            "peak_hbm_bw_tbs": md.get("peak_hbm_bw_tbs"),
        }
    res.comparison_scope = data.comparison_scope
    if data.status == "NO_DATA":
        res.message = (
            f"No {data.category}_ops.csv in {out / 'category_data'}: the trace has no attention ops of this "
            "category. Write the findings file 'No SDPA operations found in trace'."
        )
        return res
    df = data.df
    assert df is not None
    ksum = df["Kernel Time (µs)_sum"].to_numpy(dtype=float) / 1000.0
    res.rows = len(df)
    res.instances = int(df["operation_count"].sum())
    res.total_kernel_time_ms = round(float(ksum.sum()), 4)
    res.e2e_baseline_ms = _f(data.e2e_ms)
    res.percent_of_e2e = _f(100.0 * ksum.sum() / data.e2e_ms) if data.e2e_ms else None

    impl: dict[str, int] = {}
    for name, cnt in zip(df["name"].astype(str), df["operation_count"].astype(int), strict=True):
        spec = lookup(name)
        kind = getattr(spec, "attention_type", None) or "unknown op"
        impl[str(kind)] = impl.get(str(kind), 0) + int(cnt)
    res.implementations = impl
    order = np.argsort(-ksum, kind="stable")[:top]

    for i in order:
        res.top_ops.append(
            TopOp(
                row=int(i),
                name=str(df["name"].iloc[i]),
                args=short_args(data.input_dims(int(i)), data.parsed["Input type"][i]),
                count=int(df["operation_count"].iloc[i]),
                time_ms=round(float(ksum[i]), 4),
                percent_of_total=_f(100.0 * ksum[i] / data.e2e_ms) if data.e2e_ms else None,
            )
        )
    return res


# ---------------------------------------------------------------- compute_roofline
def _check_bytes_model(bytes_model: str) -> str:
    if bytes_model not in BYTES_MODELS:
        raise InputError(f"bytes_model={bytes_model!r} is invalid: expected one of {', '.join(BYTES_MODELS)}")
    return bytes_model


def _peaks_used(arch: ResolvedArch, table: RooflineTable | None) -> PeaksUsed:
    bw, bw_kind = arch.gpu.peak_tbs()
    spec = None
    peak = kind = None
    if table is not None:
        spec = most_common_spec(table)
        if spec is not None:
            try:
                peak, kind = arch.gpu.peak_tflops(spec)
            except PerfModelError:
                peak = kind = None
    return PeaksUsed(
        gpu_key=arch.gpu.key,
        gpu_name=arch.gpu.name,
        source=arch.source,
        compute_spec=spec,
        peak_tflops=peak,
        peak_tflops_kind=kind,
        peak_tbs=bw,
        peak_tbs_kind=bw_kind,
        trace_gpu_name=arch.trace_gpu_name,
    )


def _scored(
    roots: DataRoots, output_dir: str, category: str, arch: str | None, bytes_model: str
) -> tuple[CategoryData, ResolvedArch | None, RooflineTable | None, dict[Path, FileStamp]]:
    """The category loaded and scored (cached while its files are unchanged), and the record of output files
    already written from this table."""
    _check_bytes_model(bytes_model)
    out = _resolve_dir(roots, output_dir)
    data = cached_load(out, category)
    if data.status != "OK":
        return data, None, None, {}
    resolved = resolve_arch(arch, data.metadata, out, roots)
    table, written = cached_records(data, resolved.gpu, bytes_model=bytes_model)
    return data, resolved, table, written


def _opt_str(x: Any) -> str | None:
    """A text cell of the records, None where it is missing (pandas reads a missing text as NaN)."""
    return x if isinstance(x, str) else None


def _row_model(r: pd.Series) -> RooflineRow:
    band = (float(r["band_low"]), float(r["band_high"])) if np.isfinite(r["band_low"]) else None
    return RooflineRow(
        row=int(r["row"]),
        name=str(r["name"]),
        direction=_opt_str(r["direction"]),
        attention_type=str(r["attention_type"]),
        library=str(r["library"]),
        shape=str(r["shape_label"]),
        mask=_opt_str(r["mask"]),
        dtype=_opt_str(r["dtype"]),
        count=int(r["count"]),
        time_ms=round(float(r["time_ms"]), 4),
        mean_us=_f(r["mean_us"], 3),
        flops_useful=_f(r["flops_useful"], 0),
        flops_executed=_f(r["flops_executed"], 0),
        bytes_compulsory=_f(r["bytes_compulsory"], 0),
        bytes_tiled=_f(r["bytes_tiled"], 0),
        ideal_us=_f(r["ideal_us"], 3),
        intensity=_f(r["intensity"], 2),
        achieved_tflops=_f(r["achieved_tflops"], 2),
        achieved_tbs=_f(r["achieved_tbs"], 3),
        efficiency_pct=_f(r["efficiency_pct"], 2),
        bound=r["bound"] if isinstance(r["bound"], str) else None,
        expected_band_pct=band,
        in_expected_band=bool(r["in_expected_band"]) if band else None,
        is_anomaly=bool(r["is_anomaly"]),
        gqa_ratio=int(r["gqa_ratio"]) if r["gqa_ratio"] and r["gqa_ratio"] == r["gqa_ratio"] else None,
        upstream_efficiency_pct=_f(r["upstream_efficiency_pct"], 2),
        kernel_name_trunc=str(r["kernel_name_trunc"]),
        module_chain=list(r["module_chain"]),
        warnings=list(r["warnings"]),
    )


def write_roofline_table(
    data: CategoryData, table: RooflineTable, written: dict[Path, FileStamp] | None = None
) -> Path:
    """`<cat>_roofline.csv`: every record, list columns as their repr. Skipped when `written` (the table's
    record of files it wrote) shows the file is still the one written from this table."""
    path = data.output_dir / "category_data" / f"{data.category}_roofline.csv"
    if written is not None and path in written and written[path] == file_stamp(path):
        return path
    with atomic_writer(path) as fh:
        for piece in frame_csv_chunks(table.records, codes=lambda col: _csv_codes(table, col)):
            fh.write(piece)
    if written is not None:
        written[path] = file_stamp(path)
    return path


_LIST_COLUMNS = ("warnings", "module_chain", "call_chain")


def _csv_codes(table: RooflineTable, column: str) -> tuple[np.ndarray, list[Any]]:
    """Distinct values of a text column for the CSV; list columns are written as their repr."""
    if column not in _LIST_COLUMNS:
        return table.column_codes(column)
    try:
        codes, uniques = table.column_codes(column)  # chains come with their codes (lists, by identity)
        return codes, [repr(u) for u in uniques]
    except TypeError:  # lists not known by code: by content
        pass
    lists = table.records[column].tolist()
    try:
        codes, uniques = factorize(list(map(tuple, lists)))
    except TypeError:  # an unhashable item: repr row by row
        codes, uniques = factorize(list(map(repr, lists)))
        return codes, uniques
    return codes, [repr(list(u)) for u in uniques]


def compute_roofline(
    roots: DataRoots,
    output_dir: str,
    category: str,
    arch: str | None = None,
    bytes_model: str = "compulsory",
    limit: int = 10,
    offset: int = 0,
) -> RooflineResult:
    limit = max(0, min(int(limit), MAX_LIMIT))
    offset = max(0, int(offset))
    with gc_paused():
        return _compute_roofline(roots, output_dir, category, arch, bytes_model, limit, offset)


def _compute_roofline(
    roots: DataRoots, output_dir: str, category: str, arch: str | None, bytes_model: str, limit: int, offset: int
) -> RooflineResult:
    data, resolved, table, written = _scored(roots, output_dir, category, arch, bytes_model)
    if table is None or resolved is None:
        return RooflineResult(
            category=data.category,
            status="NO_DATA",
            bytes_model=bytes_model,
            warnings=["no attention ops of this category in the trace"],
        )
    r = table.records
    order = np.argsort(-r["time_ms"].to_numpy(), kind="stable")
    page = r.iloc[order[offset : offset + limit]]
    path = write_roofline_table(data, table, written)
    modeled = r["has_model"].to_numpy()
    ideal_total = float(np.nansum((r["ideal_us"] * r["count"]).to_numpy()[modeled]))
    meas_total = float(np.nansum((r["mean_us"] * r["count"]).to_numpy()[modeled]))
    warnings = list(resolved.warnings) + list(data.warnings)
    for _, row in r[~r["has_model"]].iterrows() if (~r["has_model"]).sum() <= 20 else []:
        warnings.append(f"row {int(row['row'])} {row['name']}: {row['no_model_reason']}")
    if (~r["has_model"]).sum() > 20:
        warnings.append(
            f"{int((~r['has_model']).sum())} rows have no perf model; see {path.name} column no_model_reason"
        )
    return RooflineResult(
        category=data.category,
        status="OK",
        bytes_model=bytes_model,
        peaks=_peaks_used(resolved, table),
        total_rows=len(r),
        modeled_rows=int(modeled.sum()),
        unmodeled_rows=int((~modeled).sum()),
        total_time_ms=round(float(r["time_ms"].sum()), 4),
        weighted_efficiency_pct=_f(100.0 * ideal_total / meas_total, 2) if meas_total > 0 else None,
        anomalies=int(r["anomaly_flag"].sum()),
        offset=offset,
        limit=limit,
        rows=[_row_model(row) for _, row in page.iterrows()],
        roofline_file=str(path),
        notes=list(table.peak_notes),
        warnings=warnings,
    )


# ---------------------------------------------------------------- rank_findings
def rank_findings(
    roots: DataRoots,
    output_dir: str,
    category: str,
    comparison_scope: str = "standalone",
    arch: str | None = None,
    bytes_model: str = "compulsory",
) -> RankResult:
    if comparison_scope not in SCOPES:
        raise InputError(f"comparison_scope={comparison_scope!r} is invalid: expected standalone or comparative")
    cat = check_category(category)
    with gc_paused():
        return _rank_findings(roots, output_dir, cat, comparison_scope, arch, bytes_model)


def _rank_findings(
    roots: DataRoots, output_dir: str, cat: str, comparison_scope: str, arch: str | None, bytes_model: str
) -> RankResult:
    data, resolved, table, written = _scored(roots, output_dir, cat, arch, bytes_model)
    if table is None or resolved is None:
        return RankResult(
            category=cat,
            status="NO_DATA",
            comparison_scope=comparison_scope,
            warnings=["no attention ops of this category; write 'No SDPA operations found in trace'"],
        )
    metrics = build_metrics(data, table, comparison_scope)
    metrics_path = data.output_dir / "category_data" / f"{cat}_metrics.json"
    peaks = _peaks_used(resolved, table)
    metrics["sdpa_analyzer"]["peaks"] = peaks.model_dump()
    metrics["sdpa_analyzer"]["warnings"] = resolved.warnings + data.warnings
    with atomic_writer(metrics_path) as fh:
        metrics.write(fh)
    write_roofline_table(data, table, written)
    return RankResult(
        category=cat,
        status="OK",
        comparison_scope=comparison_scope,
        metrics_file=str(metrics_path),
        total_time_ms=metrics["total_time_ms"],
        percent_of_compute=metrics["percent_of_compute"],
        operation_count=metrics["operation_count"],
        impact_estimates=len(metrics["impact_estimates"]),
        findings=[
            FindingSummary(
                rank=f["rank"],
                bound_type=f["bound_type"],
                library=f["library"],
                eff_bucket=f["eff_bucket"],
                estimate_method=f["estimate_method"],
                impact_score=f["impact_score"],
                impact_score_low=f["impact_score_low"],
                impact_score_high=f["impact_score_high"],
                percent_of_total=f.get("percent_of_total"),
                member_count=f["member_count"],
                # distinct member op names, capped: a group can hold thousands of rows (all in the metrics file)
                members=list(dict.fromkeys(m["operation"] for m in f["members"]))[:MAX_MEMBERS_SHOWN],
            )
            for f in metrics["category_findings"]
        ],
        peaks=peaks,
        warnings=resolved.warnings + data.warnings,
    )


# ---------------------------------------------------------------- model_attention / list_architectures
def model_attention(
    roots: DataRoots,
    *,
    batch: int,
    heads_q: int,
    seq_q: int,
    head_dim: int,
    heads_kv: int | None = None,
    seq_kv: int | None = None,
    head_dim_v: int | None = None,
    dtype: str = "bf16",
    kv_cache_dtype: str | None = None,
    direction: str = "fwd",
    mask: str = "none",
    alignment: str = "bottom_right",
    window_left: int = -1,
    window_right: int = -1,
    dropout_p: float = 0.0,
    arch: str = "h100-sxm",
    measured_us: float | None = None,
    bytes_model: str = "compulsory",
    bwd_convention: str = "5gemm",
    varlen_num_seqs: int | None = None,
    paged_context_lens: list[int] | None = None,
) -> ModelResult:
    _check_bytes_model(bytes_model)
    gpu, source = gpu_by_name_or_file(arch, roots)
    try:
        mask_kind = {
            "none": "none",
            "causal": "causal",
            "sliding_window": "sliding_window",
            "window": "sliding_window",
        }[mask]
    except KeyError:
        raise InputError(f"mask={mask!r} is invalid: expected none, causal or sliding_window") from None
    try:
        conv = BwdConvention(bwd_convention)
    except ValueError:
        raise InputError(
            f"bwd_convention={bwd_convention!r} is invalid: expected {', '.join(c.value for c in BwdConvention)}"
        ) from None
    if measured_us is not None and not (math.isfinite(measured_us) and measured_us > 0):
        raise InputError(f"measured_us={measured_us!r} is invalid: expected a positive time in microseconds")
    try:
        m = Mask(mask_kind, alignment, window_left, window_right)
        skv = seq_kv or seq_q
        varlen = None
        if varlen_num_seqs:
            varlen = VarlenInfo(
                total_q=batch * seq_q,
                total_kv=batch * skv,
                num_seqs=varlen_num_seqs,
                max_seqlen_q=seq_q,
                max_seqlen_kv=skv,
            )
        paged = None
        if paged_context_lens:
            paged = PagedInfo(
                num_requests=len(paged_context_lens),
                sum_context_tokens=int(sum(paged_context_lens)),
                context_lens=tuple(int(x) for x in paged_context_lens),
            )
        cfg = AttentionConfig(
            batch=batch,
            heads_q=heads_q,
            heads_kv=heads_kv or heads_q,
            seq_q=seq_q,
            seq_kv=skv,
            head_dim_qk=head_dim,
            head_dim_v=head_dim_v or head_dim,
            dtype_q=dtype,
            dtype_kv_cache=kv_cache_dtype,
            direction=direction,
            mask=m,
            dropout_p=dropout_p,
            varlen=varlen,
            paged=paged,
        )
        est = pm_model_attention(cfg, gpu, measured_us=measured_us, bytes_model=bytes_model, bwd_convention=conv)
    except PerfModelError as exc:
        raise InputError(str(exc)) from None
    except ValueError as exc:
        raise InputError(f"invalid argument: {exc}") from None
    cfg_dict = {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}
    return ModelResult(
        config={k: (v if isinstance(v, int | float | str | type(None)) else str(v)) for k, v in cfg_dict.items()},
        mask=cfg.mask.label,
        peaks=PeaksUsed(
            gpu_key=gpu.key,
            gpu_name=gpu.name,
            source=source,
            compute_spec=est.compute_spec,
            peak_tflops=est.peak_tflops,
            peak_tflops_kind=est.peak_tflops_kind,
            peak_tbs=est.peak_tbs,
            peak_tbs_kind=est.peak_tbs_kind,
        ),
        kept_pairs=float(est.kept_pairs),
        flops_useful=est.flops,
        flops_executed=est.flops_executed,
        flops_upper=est.flops_upper,
        bytes_compulsory=est.bytes_compulsory,
        bytes_tiled=est.bytes_tiled,
        bytes_model=bytes_model,
        bwd_convention=est.bwd_convention,
        block_q=est.block_q,
        block_kv=est.block_kv,
        tile_visits=est.tile_visits,
        intensity=est.intensity,
        ridge=est.ridge,
        ideal_us=est.ideal_time_us,
        bound=est.bound,
        measured_us=measured_us,
        achieved_tflops=_f(est.achieved_tflops),
        achieved_tbs=_f(est.achieved_tbs),
        efficiency_pct=_f(est.efficiency_pct, 2),
        is_anomaly=est.is_anomaly,
        expected_band_pct=(est.expected_low_pct, est.expected_high_pct),
        in_expected_band=(est.expected_low_pct <= est.efficiency_pct <= est.expected_high_pct)
        if est.efficiency_pct is not None
        else None,
        notes=list(est.notes),
    )


def list_architectures() -> ArchList:
    archs = []
    for g in list_gpus():
        bw, kind = g.peak_tbs()
        tflops = {}
        for spec in sorted(set(g.tflops_datasheet) | set(g.tflops_achievable)):
            tflops[spec] = g.peak_tflops(spec)[0]
        archs.append(
            ArchInfo(
                key=g.key,
                name=g.name,
                vendor=g.vendor,
                device_names=list(g.device_names),
                sm_count=g.sm_count,
                l2_cache_mb=g.l2_cache_mb,
                memory_gb=g.memory_gb,
                hbm_tbs=bw,
                hbm_tbs_kind=kind,
                tflops=tflops,
                tflops_datasheet=dict(g.tflops_datasheet),
                sources=dict(g.sources),
            )
        )
    return ArchList(count=len(archs), architectures=archs)
