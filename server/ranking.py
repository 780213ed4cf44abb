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

from perf_models.kernels import KernelRole, classify_kernel

from .category_io import KERNEL_MEAN, CategoryData
from .roofline_records import RooflineTable, workload_profile

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


def _rounded(values: np.ndarray, nd: int) -> list[float | None]:
    """Round a column once (vectorized); NaN/inf become None so the JSON never holds NaN."""
    arr = np.asarray(values, dtype=float)
    out = np.round(arr, nd).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def _raw_cells(df: pd.DataFrame, col: str) -> list[Any]:
    if col not in df:
        return [None] * len(df)
    vals = df[col].astype(object)
    return vals.where(vals.notna(), None).tolist()


def build_metrics(data: CategoryData, table: RooflineTable, comparison_scope: str) -> dict[str, Any]:
    """The full metrics document (TraceLens-compatible fields plus ours under `sdpa_analyzer`)."""
    df = data.df
    assert df is not None and data.e2e_ms
    r = table.records
    n = len(r)
    e2e = float(data.e2e_ms)
    comparative = comparison_scope == "comparative"
    time_ms = r["time_ms"].to_numpy(dtype=float)
    total_ms = float(time_ms.sum())
    eff = r["efficiency_pct"].to_numpy(dtype=float)
    t2, c2 = _trace2_times(data) if comparative else (np.full(n, np.nan), np.full(n, np.nan))
    if comparative:
        ratio = np.where((time_ms > 0) & np.isfinite(t2), 100.0 * t2 / np.where(time_ms > 0, time_ms, 1), np.nan)
        # "clamped below by the trace-1 roofline percentage": never claim more headroom than the roofline gives
        eff_used = np.where(np.isfinite(eff), np.fmax(ratio, eff), ratio)
    else:
        eff_used = eff
    cov = np.full(n, np.nan)
    if "Kernel Time (µs)_std" in df and KERNEL_MEAN in df:
        std = pd.to_numeric(df["Kernel Time (µs)_std"], errors="coerce").to_numpy()
        mean = pd.to_numeric(df[KERNEL_MEAN], errors="coerce").to_numpy()
        cov = np.where(mean > 0, std / np.where(mean > 0, mean, 1), np.nan)
    pct_total = 100.0 * time_ms / e2e
    counts = r["count"].to_numpy()
    high_var = np.isfinite(cov) & (np.nan_to_num(cov) > HIGH_VARIANCE_COV) & (counts > 10) & (pct_total >= 5)
    has_model = r["has_model"].to_numpy(dtype=bool)
    bound = [b if h and isinstance(b, str) else None for b, h in zip(r["bound"], has_model, strict=True)]
    spec = r["compute_spec"].tolist()
    default_peak = _default_peak(table)
    peak_t = np.where(
        np.array([isinstance(x, str) for x in spec]), r["peak_tflops"].to_numpy(dtype=float), default_peak
    )
    peak_bw = table.gpu.peak_tbs()[0]
    warn = ["; ".join(w) or None for w in r["warnings"]]
    anomaly = (np.isfinite(eff_used) & (np.nan_to_num(eff_used) > 100.0)) & (not comparative)
    att = r["attention_type"].tolist()
    library = [x if x != "Unknown" else None for x in r["library"]]
    # only paged rows need their full config (token counts); building configs for every row would be slow
    workloads = [
        workload_profile(row, table.config(i) if row["has_model"] and row["attention_type"] == "paged" else None)
        for i, row in _lazy_rows(r, ("has_model", "heads_q", "heads_kv", "seq_q", "seq_kv", "attention_type"))
    ]
    col = {
        "time": _rounded(time_ms, 3),
        "pct_cat": _rounded(100.0 * time_ms / total_ms if total_ms > 0 else np.zeros(n), 2),
        "pct_total": _rounded(pct_total, 2),
        "tflops": _rounded(r["achieved_tflops"].to_numpy(), 2),
        "tbs": _rounded(r["achieved_tbs"].to_numpy(), 2),
        "eff": _rounded(eff_used, 2),
        "fpb": _rounded(r["intensity"].to_numpy(), 2),
        "peak": _rounded(peak_t, 2),
        "cov": _rounded(cov, 3),
    }
    dims, types, pp, kd = (
        _raw_cells(df, c) for c in ("Input Dims", "Input type", "perf_params", "kernel_details_summary")
    )
    roof_blocks = _roofline_blocks(r, table)
    L = {
        c: r[c].tolist()
        for c in (
            "name",
            "args",
            "op_attention_type",
            "kernel_attention_type",
            "launcher_path",
            "kernel_name",
            "kernel_name_trunc",
            "module_chain",
            "call_chain",
        )
    }  # plain lists: per-row pandas access is ~50x slower
    operations = []
    for i in range(n):
        op: dict[str, Any] = {
            "name": L["name"][i],
            "count": int(counts[i]),
            "time_ms": col["time"][i],
            "percent_of_category": col["pct_cat"][i],
            "percent_of_total": col["pct_total"][i],
            "efficiency": {
                "tflops_achieved": col["tflops"][i],
                "tb_s_achieved": col["tbs"][i],
                "efficiency_percent": col["eff"][i],
                "bound_type": bound[i],
                "flops_per_byte": col["fpb"][i],
                "compute_spec": spec[i],
                "resolved_peak_maf": col["peak"][i],
                "resolved_peak_hbm_bw": peak_bw,
                "warning": warn[i],
                "is_anomaly": bool(anomaly[i]),
            },
            "Input Dims": dims[i],
            "Input type": types[i],
            "has_perf_model": bool(has_model[i]),
            "perf_params": pp[i],
            "kernel_details_summary": kd[i],
            "args": L["args"][i],
            "cov": col["cov"][i],
            "high_variance": bool(high_var[i]),
            "classification": {
                "is_flash_attention": att[i] == "flash",
                "is_paged_attention": att[i] == "paged",
                "has_perf_model": bool(has_model[i]),
                "attention_type": att[i],
                "op_attention_type": L["op_attention_type"][i],
                "kernel_attention_type": L["kernel_attention_type"][i],
                "workload_profile": workloads[i],
            },
            "library": library[i],
            "launcher_path": L["launcher_path"][i],
            "kernel_name": L["kernel_name"][i],
            "kernel_name_trunc": L["kernel_name_trunc"][i],
            "module_chain": L["module_chain"][i],
            "call_chain": L["call_chain"][i],
            "roofline": roof_blocks[i],
        }
        if comparative:
            op["t2_time_ms"] = _num(t2[i], 3)
            op["count_trace2"] = int(c2[i]) if np.isfinite(c2[i]) else None
            op["difference_ms"] = _num(t2[i] - time_ms[i], 3)
        operations.append(op)

    estimates = _impact_estimates(data.category, r, eff_used, time_ms, e2e, comparative)
    findings = _group(estimates, comparative)
    specific: dict[str, Any] = {
        "flash_attention_count": att.count("flash"),
        "paged_attention_count": att.count("paged"),
        "has_perf_model_count": int(has_model.sum()),
        "flash_attention_detected": "flash" in att,
        "paged_attention_detected": "paged" in att,
        "peak_maf_tflops": _num(default_peak),
        "peak_hbm_bw_tbs": _num(peak_bw),
        "memory_efficient_attention_count": att.count("memory_efficient"),
        "memory_efficient_attention_detected": "memory_efficient" in att,
        "cudnn_attention_count": att.count("cudnn"),
        "cudnn_attention_detected": "cudnn" in att,
        "unfused_attention_count": att.count("unfused"),
        "unfused_attention_detected": "unfused" in att,
        "instances_by_attention_type": {
            t: int(counts[np.array([x == t for x in att])].sum()) for t in sorted(set(att))
        },
    }
    paged_rows = [i for i, t in enumerate(att) if t == "paged"]
    if paged_rows:
        parts = [paged_breakdown(data.kernels[i]) for i in paged_rows]
        for i, part in zip(paged_rows, parts, strict=True):
            operations[i]["classification"]["kernel_breakdown"] = part
        specific["kernel_breakdown_avg"] = {
            f"avg_{k}_percent": round(sum(p[f"{k}_percent"] for p in parts) / len(parts), 2)
            for k in ("reshape_cache", "fwd_kernel", "paged_attention")
        }
    ctx = sum(int(w.get("sum_ctx_tokens") or 0) for w in workloads)
    gen = sum(int(w.get("sum_gen_tokens") or 0) for w in workloads)
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


def _lazy_rows(r: pd.DataFrame, cols: tuple[str, ...]) -> Any:
    """(index, row-like dict) pairs over a few columns, without pandas' slow per-row access."""
    lists = {c: r[c].tolist() for c in cols}
    for i in range(len(r)):
        yield i, {c: lists[c][i] for c in cols}


def _default_peak(table: RooflineTable) -> float:
    specs = [s for s in table.records["compute_spec"] if isinstance(s, str)]
    spec = max(set(specs), key=specs.count) if specs else "matrix_bf16"
    try:
        return table.gpu.peak_tflops(spec)[0]
    except ValueError:
        return float("nan")


def _roofline_blocks(r: pd.DataFrame, table: RooflineTable) -> list[dict[str, Any]]:
    """Our per-op roofline block (beside TraceLens' `efficiency`), built column-wise."""
    flops = r["flops_useful"].to_numpy(dtype=float)
    bc = r["bytes_compulsory"].to_numpy(dtype=float)
    bt = r["bytes_tiled"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ic, it = flops / bc, flops / bt
    c = {
        "flops_useful": _rounded(flops, 0), "flops_executed": _rounded(r["flops_executed"].to_numpy(), 0),
        "flops_upper": _rounded(r["flops_upper"].to_numpy(), 0), "bytes_compulsory": _rounded(bc, 0),
        "bytes_tiled": _rounded(bt, 0), "intensity_compulsory": _rounded(ic, 2), "intensity_tiled": _rounded(it, 2),
        "ideal_us": _rounded(r["ideal_us"].to_numpy(), 3), "mean_us": _rounded(r["mean_us"].to_numpy(), 3),
        "ridge": _rounded(r["ridge"].to_numpy(), 2), "band_low": _rounded(r["band_low"].to_numpy(), 1),
        "band_high": _rounded(r["band_high"].to_numpy(), 1),
        "upstream_efficiency_pct": _rounded(r["upstream_efficiency_pct"].to_numpy(), 2),
        "copy_overhead_us": _rounded(r["copy_overhead_us"].to_numpy(), 3),
        "gqa_ratio": _rounded(r["gqa_ratio"].to_numpy(), 0),
    }  # fmt: skip
    lists = {
        k: r[k].tolist()
        for k in (
            "has_model",
            "no_model_reason",
            "direction",
            "shape_label",
            "mask",
            "dtype",
            "in_expected_band",
            "anomaly_flag",
            "peak_tflops_kind",
            "peak_tbs_kind",
        )
    }
    out = []
    for i in range(len(r)):
        out.append(
            {
                "has_model": bool(lists["has_model"][i]),
                "no_model_reason": lists["no_model_reason"][i],
                "direction": lists["direction"][i],
                "shape_label": lists["shape_label"][i],
                "mask": lists["mask"][i],
                "dtype": lists["dtype"][i],
                "gqa_ratio": int(c["gqa_ratio"][i]) if c["gqa_ratio"][i] is not None else None,
                "flops_useful": c["flops_useful"][i],
                "flops_executed": c["flops_executed"][i],
                "flops_upper": c["flops_upper"][i],
                "bytes_compulsory": c["bytes_compulsory"][i],
                "bytes_tiled": c["bytes_tiled"][i],
                "intensity_compulsory": c["intensity_compulsory"][i],
                "intensity_tiled": c["intensity_tiled"][i],
                "ideal_us": c["ideal_us"][i],
                "mean_us": c["mean_us"][i],
                "ridge": c["ridge"][i],
                "expected_band_pct": [c["band_low"][i], c["band_high"][i]],
                "in_expected_band": bool(lists["in_expected_band"][i]),
                "anomaly_over_110": bool(lists["anomaly_flag"][i]),
                "peak_tflops_kind": lists["peak_tflops_kind"][i],
                "peak_tbs_kind": lists["peak_tbs_kind"][i],
                "upstream_efficiency_pct": c["upstream_efficiency_pct"][i],
                "copy_overhead_us": c["copy_overhead_us"][i],
                "bytes_model": table.bytes_model,
            }
        )
    return out


def paged_breakdown(kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of a paged op's kernel time: KV-cache write, prefill (context) kernel, decode (paged) kernel.

    TraceLens' vLLM components are `reshape_and_cache`, `_fwd_kernel` (prefill) and `kernel_paged_attention_2d`
    (decode); FlashInfer/TRT-LLM name theirs by phase (`prefill`/`context` vs `decode`/`generation`).
    """
    totals = {"reshape_cache": 0.0, "fwd_kernel": 0.0, "paged_attention": 0.0, "other": 0.0}
    for k in kernels:
        name = str(k.get("name", ""))
        us = float(k.get("total_duration_us") or 0.0)
        role = classify_kernel(name)[0]
        low = name.lower()
        if role == KernelRole.KV_CACHE_WRITE or "reshape_and_cache" in low or "cache_kernel" in low:
            totals["reshape_cache"] += us
        elif role != KernelRole.ATTENTION:
            totals["other"] += us
        elif any(t in low for t in ("_fwd_kernel", "prefill", "context", "ragged")):
            totals["fwd_kernel"] += us
        else:
            totals["paged_attention"] += us
    total = sum(totals.values())
    out: dict[str, Any] = {f"{k}_percent": round(100.0 * v / total, 2) if total else 0.0 for k, v in totals.items()}
    out["dominant_component"] = max(("reshape_cache", "fwd_kernel", "paged_attention"), key=lambda k: totals[k])
    return out


def _impact_estimates(
    category: str, r: pd.DataFrame, eff: np.ndarray, time_ms: np.ndarray, e2e: float, comparative: bool
) -> list[dict[str, Any]]:
    """One estimate per op row. Arithmetic is vectorized; dicts are built only for the rows that qualify."""
    pct_total = 100.0 * time_ms / e2e
    finite = np.isfinite(eff)
    quantified = finite & ((np.nan_to_num(eff) <= ANOMALY_PCT) | comparative) & (e2e > 0)
    high = np.maximum(0.0, 1.0 - np.nan_to_num(eff) / 100.0) * time_ms / e2e * 100.0
    names = r["name"].tolist()
    libs = [x if x != "Unknown" else None for x in r["library"]]
    bounds = [b if isinstance(b, str) else None for b in r["bound"]]
    eff_r = _rounded(eff, 2)
    t_r = _rounded(time_ms, 3)
    out: list[dict[str, Any]] = []
    for i in np.flatnonzero(quantified & (high >= MIN_HIGH)):
        out.append({
            "operation": names[i], "category": category, "type": "kernel_tuning", "estimate_method": "quantified",
            "impact_score": MID_FACTOR * high[i], "impact_score_low": LOW_FACTOR * high[i],
            "impact_score_high": high[i], "efficiency_pct": eff_r[i], "bound_type": bounds[i],
            "library": libs[i], "time_ms": t_r[i],
        })  # fmt: skip
    if not comparative:
        for i in np.flatnonzero(~quantified):
            p = pct_total[i]
            out.append({
                "operation": names[i], "category": category, "type": "unmodeled_significant",
                "estimate_method": "heuristic", "impact_score": HEURISTIC_MID * p,
                "impact_score_low": HEURISTIC_LOW * p, "impact_score_high": HEURISTIC_HIGH * p,
                "efficiency_pct": eff_r[i], "bound_type": None, "library": libs[i],
                "time_ms": t_r[i], "percent_of_total": p,
            })  # fmt: skip
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
