"""Impact estimates, grouping into ranked category findings, and the `<cat>_metrics.json` document.

The impact rules are the orchestrator's contract (formats.md "Impact rules"): the same arithmetic
for every category, so findings can be ranked across categories. Scores are rounded to 2 decimals
once, at the very end, and those exact values are written and returned.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .category_io import KERNEL_MEAN, CategoryData
from .roofline_records import RooflineTable

HEURISTIC_MID, HEURISTIC_LOW, HEURISTIC_HIGH = 0.30, 0.15, 0.45
MID_FACTOR, LOW_FACTOR = 0.875, 0.75
ANOMALY_PCT = 110.0
MIN_HIGH = 0.01
MIN_GROUP_MID = 0.5
HIGH_VARIANCE_COV = 0.1


def _num(x: Any, nd: int = 2) -> float | None:
    """A JSON-safe rounded float, or None for missing values (never NaN in the output)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return round(f, nd) if math.isfinite(f) else None


def eff_bucket(eff: float) -> str:
    if eff < 30:
        return "0-30"
    if eff < 60:
        return "30-60"
    return "60-100"


def _trace2_times(data: CategoryData) -> tuple[np.ndarray, np.ndarray]:
    """Trace-2 kernel time (ms) and count per row, from the comparative columns of the CSV."""
    df = data.df
    assert df is not None
    n = len(df)
    t1 = df["Kernel Time (µs)_sum"].to_numpy(dtype=float) / 1000.0
    t2 = np.full(n, np.nan)
    if "delta_us (trace2 - trace1)" in df:
        t2 = t1 + pd.to_numeric(df["delta_us (trace2 - trace1)"], errors="coerce").to_numpy() / 1000.0
    if "speedup (trace2/trace1)" in df:
        sp = pd.to_numeric(df["speedup (trace2/trace1)"], errors="coerce").to_numpy()
        t2 = np.where(np.isfinite(t2), t2, sp * t1)
    if "lca_total_kernel_time_trace2_us" in df:
        lt2 = pd.to_numeric(df["lca_total_kernel_time_trace2_us"], errors="coerce").to_numpy() / 1000.0
        t2 = np.where(np.isfinite(t2), t2, lt2)
    c2 = (
        pd.to_numeric(df["lca_count_trace2"], errors="coerce").to_numpy()
        if "lca_count_trace2" in df
        else np.full(n, np.nan)
    )
    return t2, c2


def build_metrics(data: CategoryData, table: RooflineTable, comparison_scope: str) -> dict[str, Any]:
    """The full metrics document (TraceLens-compatible fields plus ours under `sdpa_analyzer`)."""
    df = data.df
    assert df is not None and data.e2e_ms
    r = table.records
    e2e = float(data.e2e_ms)
    comparative = comparison_scope == "comparative"
    time_ms = r["time_ms"].to_numpy(dtype=float)
    total_ms = float(time_ms.sum())
    eff = r["efficiency_pct"].to_numpy(dtype=float)
    t2, c2 = _trace2_times(data) if comparative else (np.full(len(r), np.nan), np.full(len(r), np.nan))
    if comparative:
        ratio = np.where((time_ms > 0) & np.isfinite(t2), 100.0 * t2 / np.where(time_ms > 0, time_ms, 1), np.nan)
        # "clamped below by the trace-1 roofline percentage": never claim more headroom than the roofline gives
        eff_used = np.where(np.isfinite(eff), np.fmax(ratio, eff), ratio)
    else:
        eff_used = eff
    cov = np.full(len(r), np.nan)
    if "Kernel Time (µs)_std" in df and KERNEL_MEAN in df:
        std = pd.to_numeric(df["Kernel Time (µs)_std"], errors="coerce").to_numpy()
        mean = pd.to_numeric(df[KERNEL_MEAN], errors="coerce").to_numpy()
        cov = np.where(mean > 0, std / np.where(mean > 0, mean, 1), np.nan)

    operations = []
    for i in range(len(r)):
        row = r.iloc[i]
        pct_total = 100.0 * time_ms[i] / e2e
        eff_i = eff_used[i]
        bound = row["bound"] if row["has_model"] and isinstance(row["bound"], str) else None
        spec = row["compute_spec"] if isinstance(row["compute_spec"], str) else None
        warn = "; ".join(row["warnings"]) or None
        op: dict[str, Any] = {
            "name": row["name"],
            "count": int(row["count"]),
            "time_ms": _num(time_ms[i], 3),
            "percent_of_category": _num(100.0 * time_ms[i] / total_ms if total_ms > 0 else 0.0),
            "percent_of_total": _num(pct_total),
            "efficiency": {
                "tflops_achieved": _num(row["achieved_tflops"]),
                "tb_s_achieved": _num(row["achieved_tbs"]),
                "efficiency_percent": _num(eff_i),
                "bound_type": bound,
                "flops_per_byte": _num(row["intensity"]),
                "compute_spec": spec,
                "resolved_peak_maf": _num(row["peak_tflops"]) if spec else _num(_default_peak(table)),
                "resolved_peak_hbm_bw": _num(table.gpu.peak_tbs()[0]),
                "warning": warn,
                "is_anomaly": bool(np.isfinite(eff_i) and eff_i > 100.0 and not comparative),
            },
            "Input Dims": _cell(df, "Input Dims", i),
            "Input type": _cell(df, "Input type", i),
            "has_perf_model": bool(row["has_model"]),
            "perf_params": _cell(df, "perf_params", i),
            "kernel_details_summary": _cell(df, "kernel_details_summary", i),
            "args": row["args"],
            "cov": _num(cov[i], 3),
            "high_variance": bool(
                np.isfinite(cov[i]) and cov[i] > HIGH_VARIANCE_COV and row["count"] > 10 and pct_total >= 5
            ),
            "classification": {
                "is_flash_attention": row["attention_type"] == "flash",
                "is_paged_attention": row["attention_type"] == "paged",
                "has_perf_model": bool(row["has_model"]),
                "attention_type": row["attention_type"],
                "op_attention_type": row["op_attention_type"],
                "kernel_attention_type": row["kernel_attention_type"],
                "workload_profile": row["workload"],
                "kernel_breakdown": row["kernel_breakdown"],
            },
            "library": row["library"] if row["library"] != "Unknown" else None,
            "launcher_path": row["launcher_path"],
            "kernel_name": row["kernel_name"],
            "kernel_name_trunc": row["kernel_name_trunc"],
            "module_chain": list(row["module_chain"]),
            "call_chain": list(row["call_chain"]),
            "roofline": _roofline_block(row, table),
        }
        if comparative:
            op["t2_time_ms"] = _num(t2[i], 3)
            op["count_trace2"] = int(c2[i]) if np.isfinite(c2[i]) else None
            op["difference_ms"] = _num(t2[i] - time_ms[i], 3)
        operations.append(op)

    estimates = _impact_estimates(data.category, r, eff_used, time_ms, e2e, comparative)
    findings = _group(estimates, comparative)
    types = r["attention_type"].tolist()
    counts = r["count"].to_numpy()
    specific: dict[str, Any] = {
        "flash_attention_count": types.count("flash"),
        "paged_attention_count": types.count("paged"),
        "has_perf_model_count": int(r["has_model"].sum()),
        "flash_attention_detected": "flash" in types,
        "paged_attention_detected": "paged" in types,
        "peak_maf_tflops": _num(_default_peak(table)),
        "peak_hbm_bw_tbs": _num(table.gpu.peak_tbs()[0]),
        "memory_efficient_attention_count": types.count("memory_efficient"),
        "memory_efficient_attention_detected": "memory_efficient" in types,
        "cudnn_attention_count": types.count("cudnn"),
        "cudnn_attention_detected": "cudnn" in types,
        "unfused_attention_count": types.count("unfused") + types.count("math"),
        "unfused_attention_detected": "unfused" in types or "math" in types,
        "instances_by_attention_type": {t: int(counts[[x == t for x in types]].sum()) for t in sorted(set(types))},
    }
    paged_rows = [i for i, t in enumerate(types) if t == "paged"]
    if paged_rows:
        specific["kernel_breakdown_avg"] = _avg_breakdown([r.iloc[i]["kernel_breakdown"] for i in paged_rows])
    ctx = sum(int(w.get("sum_ctx_tokens") or 0) for w in r["workload"])
    gen = sum(int(w.get("sum_gen_tokens") or 0) for w in r["workload"])
    if ctx + gen > 0:
        ratio = ctx / (ctx + gen)
        specific["workload_profile"] = {
            "total_ctx_tokens": ctx,
            "total_gen_tokens": gen,
            "ctx_ratio": round(ratio, 4),
            "profile_type": "prefill_heavy" if ratio > 0.8 else ("decode_heavy" if ratio < 0.2 else "mixed"),
        }
    return {
        "category": data.category,
        "status": "OK",
        "comparison_scope": comparison_scope,
        "total_time_ms": _num(total_ms, 3),
        "percent_of_compute": _num(100.0 * total_ms / e2e),
        "operation_count": int(counts.sum()),
        "operations": operations,
        "category_specific": specific,
        "impact_estimates": estimates,
        "category_findings": findings,
        "sdpa_analyzer": {
            "version": 1,
            "e2e_baseline_ms": _num(e2e, 4),
            "trace2_e2e_baseline_ms": _num(data.trace2_e2e_ms, 4),
            "bytes_model": table.bytes_model,
            "gpu": {"key": table.gpu.key, "name": table.gpu.name, "origin": table.gpu.origin},
            "notes": table.peak_notes,
        },
    }


def _cell(df: pd.DataFrame, col: str, i: int) -> Any:
    if col not in df:
        return None
    v = df[col].iloc[i]
    return None if (isinstance(v, float) and not math.isfinite(v)) else v


def _default_peak(table: RooflineTable) -> float:
    specs = [s for s in table.records["compute_spec"] if isinstance(s, str)]
    spec = max(set(specs), key=specs.count) if specs else "matrix_bf16"
    try:
        return table.gpu.peak_tflops(spec)[0]
    except ValueError:
        return float("nan")


def _roofline_block(row: pd.Series, table: RooflineTable) -> dict[str, Any]:
    flops = row["flops_useful"]
    return {
        "has_model": bool(row["has_model"]),
        "no_model_reason": row["no_model_reason"],
        "direction": row["direction"],
        "shape_label": row["shape_label"],
        "mask": row["mask"],
        "dtype": row["dtype"],
        "gqa_ratio": row["gqa_ratio"],
        "flops_useful": _num(flops, 0),
        "flops_executed": _num(row["flops_executed"], 0),
        "flops_upper": _num(row["flops_upper"], 0),
        "bytes_compulsory": _num(row["bytes_compulsory"], 0),
        "bytes_tiled": _num(row["bytes_tiled"], 0),
        "intensity_compulsory": _num(flops / row["bytes_compulsory"]) if row["bytes_compulsory"] else None,
        "intensity_tiled": _num(flops / row["bytes_tiled"]) if row["bytes_tiled"] else None,
        "ideal_us": _num(row["ideal_us"], 3),
        "mean_us": _num(row["mean_us"], 3),
        "ridge": _num(row["ridge"]),
        "expected_band_pct": [_num(row["band_low"], 1), _num(row["band_high"], 1)],
        "in_expected_band": bool(row["in_expected_band"]),
        "anomaly_over_110": bool(row["anomaly_flag"]),
        "peak_tflops_kind": row["peak_tflops_kind"],
        "peak_tbs_kind": row["peak_tbs_kind"],
        "upstream_efficiency_pct": _num(row["upstream_efficiency_pct"]),
        "copy_overhead_us": _num(row["copy_overhead_us"], 3),
        "bytes_model": table.bytes_model,
    }


def _avg_breakdown(breakdowns: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("reshape_cache", "fwd_kernel", "paged_attention")
    out = {}
    for k in keys:
        vals = [float(b.get(k, 0.0)) for b in breakdowns if isinstance(b, dict)]
        out[f"avg_{k}_percent"] = round(sum(vals) / len(vals), 2) if vals else 0.0
    return out


def _impact_estimates(
    category: str, r: pd.DataFrame, eff: np.ndarray, time_ms: np.ndarray, e2e: float, comparative: bool
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pct_total = 100.0 * time_ms / e2e
    for i in range(len(r)):
        row = r.iloc[i]
        library = row["library"] if row["library"] != "Unknown" else None
        e = eff[i]
        quantified = math.isfinite(e) and (comparative or e <= ANOMALY_PCT) and e2e > 0
        if quantified:
            gap = max(0.0, 1.0 - e / 100.0)
            high = gap * time_ms[i] / e2e * 100.0
            if high < MIN_HIGH:
                continue
            out.append(
                {
                    "operation": row["name"],
                    "category": category,
                    "type": "kernel_tuning",
                    "estimate_method": "quantified",
                    "impact_score": MID_FACTOR * high,
                    "impact_score_low": LOW_FACTOR * high,
                    "impact_score_high": high,
                    "efficiency_pct": _num(e),
                    "bound_type": row["bound"] if isinstance(row["bound"], str) else None,
                    "library": library,
                    "time_ms": _num(time_ms[i], 3),
                }
            )
        elif not comparative:
            p = pct_total[i]
            out.append(
                {
                    "operation": row["name"],
                    "category": category,
                    "type": "unmodeled_significant",
                    "estimate_method": "heuristic",
                    "impact_score": HEURISTIC_MID * p,
                    "impact_score_low": HEURISTIC_LOW * p,
                    "impact_score_high": HEURISTIC_HIGH * p,
                    "efficiency_pct": _num(e) if math.isfinite(e) else None,
                    "bound_type": None,
                    "library": library,
                    "time_ms": _num(time_ms[i], 3),
                    "percent_of_total": p,
                }
            )
    return out


def _group(estimates: list[dict[str, Any]], comparative: bool) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for est in estimates:
        if est["estimate_method"] == "quantified":
            lib = est["library"] or "Unknown"
            bucket = (
                "all"
                if comparative
                else eff_bucket(est["efficiency_pct"] if est["efficiency_pct"] is not None else 0.0)
            )
            key: tuple[Any, ...] = ("q", est["bound_type"], lib, bucket)
        else:
            key = ("h", est["operation"])
        groups.setdefault(key, []).append(est)
    findings = []
    for key, members in groups.items():
        mid = sum(m["impact_score"] for m in members)
        if mid < MIN_GROUP_MID:
            continue
        f: dict[str, Any]
        if key[0] == "q":
            f = {"bound_type": key[1], "library": key[2], "eff_bucket": key[3], "estimate_method": "quantified"}
        else:
            libs = {m["library"] for m in members if m["library"]}
            f = {
                "bound_type": "unmodeled",
                "library": libs.pop() if len(libs) == 1 else "Unknown",
                "eff_bucket": "unknown",
                "estimate_method": "heuristic",
            }
        f["impact_score"] = mid
        f["impact_score_low"] = sum(m["impact_score_low"] for m in members)
        f["impact_score_high"] = sum(m["impact_score_high"] for m in members)
        if key[0] == "h":
            f["percent_of_total"] = sum(m["percent_of_total"] for m in members)
        f["member_count"] = len(members)
        f["members"] = members
        findings.append(f)
    findings.sort(key=lambda f: -f["impact_score"])
    # round once, at the end, the exact values written and validated against
    for est in estimates:
        for k in ("impact_score", "impact_score_low", "impact_score_high", "percent_of_total"):
            if k in est:
                est[k] = round(est[k], 2)
    for rank, f in enumerate(findings, start=1):
        for k in ("impact_score", "impact_score_low", "impact_score_high", "percent_of_total"):
            if k in f:
                f[k] = round(f[k], 2)
        f["rank"] = rank
    return findings


def error_metrics(category: str, error: str, comparison_scope: str) -> dict[str, Any]:
    return {"category": category, "status": "ERROR", "error": error, "comparison_scope": comparison_scope}
