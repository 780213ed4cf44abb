"""Impact estimates, grouping into ranked category findings, and the `<cat>_metrics.json` document.

The impact rules are the orchestrator's contract (docs/formats.md "Impact rules"): the same arithmetic
for every category, so findings can be ranked across categories. Scores are rounded to 2 decimals
once, at the very end, and those exact values are written and returned.

The per-op list is described column by column (server.writers.json_columns) and rendered straight into the file:
no dict per op is ever built, and the bytes are those the dicts would have given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.kernels import KernelRole, classify_kernel
from sdpa_analyzer.perf_models.literals import parse_literal
from sdpa_analyzer.perf_models.objects import as_objects
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.folder.manifest import current_run_id
from sdpa_analyzer.server.folder.read import KERNEL_MEAN, CategoryData
from sdpa_analyzer.server.numbers import DIGITS, finite, rounded
from sdpa_analyzer.server.scoring.advice import (
    category_facts,
    finding_advice,
    finding_facts,
    in_band_list,
    in_band_rows,
)
from sdpa_analyzer.server.scoring.fields import BY_NAME
from sdpa_analyzer.server.scoring.records import RooflineTable, kernel_name_cells, step_workload, workload_profile
from sdpa_analyzer.server.vocab import (
    ANOMALY_FLAG_PCT,
    EFF_BUCKET_EDGES,
    HEURISTIC_HIGH,
    HEURISTIC_LOW,
    HEURISTIC_MID,
    HIGH_VARIANCE_COV,
    HIGH_VARIANCE_MIN_COUNT,
    HIGH_VARIANCE_MIN_E2E_PCT,
    IMPACT_UNIT,
    LOW_FACTOR,
    MID_FACTOR,
    MIN_GROUP_MID,
    MIN_HIGH,
    profile_type,
)
from sdpa_analyzer.server.writers.json_columns import (
    Bools,
    Cells,
    Const,
    Field,
    Ints,
    Numbers,
    Obj,
    Sink,
    Sparse,
    Texts,
    Values,
    write_document,
)

OURS = "sdpa_analyzer"  # the metrics document's block of our own fields: a file without it is another tool's


def eff_bucket(eff: float) -> str:
    low, high = EFF_BUCKET_EDGES
    if eff < low:
        return f"0-{low:g}"
    if eff < high:
        return f"{low:g}-{high:g}"
    return f"{high:g}-100"


def trace2_times(data: CategoryData) -> tuple[np.ndarray, np.ndarray]:
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


TRACE2_KERNELS = "trace2_kernel_names"  # the ops CSV's list of the matched trace-2 calls' kernels (ingest.compare)


def trace2_kernel_name(data: CategoryData) -> Texts:
    """Each row's matched trace-2 kernels as `kernel_name` writes trace 1's (`a`, or `Kernel 1: a<br>Kernel 2: b`);
    null where the CSV has none (an unmatched call, another tool's folder). A cell that is not a list of strings
    is one InputError naming the file, the column and the row."""
    df = data.df
    assert df is not None
    if TRACE2_KERNELS not in df:
        return Texts(np.full(len(df), -1, dtype=np.int64), [])
    codes, uniques = factorize(df[TRACE2_KERNELS].tolist())
    texts: list[str] = []
    remap = np.full(len(uniques) + 1, -1, dtype=np.int64)  # the last slot: code -1 (an empty cell) stays null
    for k, cell in enumerate(uniques):
        try:
            names = parse_literal(str(cell), TRACE2_KERNELS)
        except PerfModelError as exc:
            names, why = None, str(exc)
        else:
            why = "not a list of kernel-name strings"
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            row = int(np.flatnonzero(codes == k)[0]) + 2
            raise InputError(
                f"{data.csv_path}: column {TRACE2_KERNELS!r} row {row} cannot be read ({why}) — write "
                "a list of kernel names (`['kernel_a', 'kernel_b']`) or leave the cell empty"
            )
        if names:
            remap[k] = len(texts)
            texts.append(kernel_name_cells(list(names))[0])
    return Texts(remap[codes], texts)


def _rounded(values: np.ndarray, nd: int) -> list[float | None]:
    """Round a column once (vectorized); NaN/inf become None so the JSON never holds NaN."""
    arr = np.asarray(values, dtype=float)
    out = np.round(arr, nd).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def _raw_cells(df: pd.DataFrame, col: str) -> list[Any]:
    """A CSV column's cells as they are (missing cells, NaN, become null when encoded)."""
    return df[col].tolist() if col in df else [None] * len(df)


def _texts(values: Any) -> Texts:
    """A column of strings (None/NaN → null), each distinct value encoded once."""
    codes, uniques = factorize(values)
    return Texts(codes, uniques)


def _text_fields(table: RooflineTable, *columns: str) -> list[Field]:
    """Fields that are records text columns as they are (None/NaN → null), encoded once per distinct value."""
    return [Field(c, Texts(*table.column_codes(c))) for c in columns]


@dataclass
class Metrics:
    """The metrics document: `document` holds every field but the per-op list, which `operations` renders
    column-wise (one object per op row) when the document is written."""

    document: dict[str, Any]
    operations: Obj
    rows: int

    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    def write(self, fh: Sink) -> None:
        write_document(fh, self.document, "operations", self.operations, self.rows)



def build_metrics(
    data: CategoryData, table: RooflineTable, comparison_scope: str, forward: pd.DataFrame | None = None
) -> Metrics:
    """The full metrics document (TraceLens-compatible fields plus ours under `sdpa_analyzer`). `forward`: the
    records of the folder's forward category, for a backward category's backward-vs-forward facts."""
    df = data.df
    assert df is not None and data.e2e_ms
    r = table.records
    n = len(r)
    e2e = float(data.e2e_ms)
    comparative = comparison_scope == "comparative"
    time_ms = r["time_ms"].to_numpy(dtype=float)
    total_ms = float(time_ms.sum())
    eff = r["efficiency_pct"].to_numpy(dtype=float)
    t2, c2 = trace2_times(data) if comparative else (np.full(n, np.nan), np.full(n, np.nan))
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
    high_var = np.isfinite(cov) & (np.nan_to_num(cov) > HIGH_VARIANCE_COV) & (counts > HIGH_VARIANCE_MIN_COUNT) & (
        pct_total >= HIGH_VARIANCE_MIN_E2E_PCT
    )
    has_model = r["has_model"].to_numpy(dtype=bool)
    bound = [b if h and isinstance(b, str) else None for b, h in zip(r["bound"].tolist(), has_model, strict=True)]
    spec = r["compute_spec"].tolist()
    default_peak = _default_peak(table)
    peak_t = np.where(
        np.array([isinstance(x, str) for x in spec]), r["peak_tflops"].to_numpy(dtype=float), default_peak
    )
    peak_bw = table.gpu.peak_tbs()[0]
    warn = ["; ".join(w) or None for w in r["warnings"].tolist()]
    anomaly = (np.isfinite(eff_used) & (np.nan_to_num(eff_used) > 100.0)) & (not comparative)
    att = r["attention_type"].tolist()
    att_arr = np.fromiter(att, dtype=object, count=n)
    library = [x if x != "Unknown" else None for x in r["library"].tolist()]
    workload, ctx, gen = _workload_profiles(r, table, att_arr)

    # TraceLens' names for facts of the catalogue: each with the digits of the catalogue field it carries
    efficiency = Obj([
        Field("tflops_achieved", Numbers(r["achieved_tflops"].to_numpy(), BY_NAME["achieved_tflops"].digits)),
        Field("tb_s_achieved", Numbers(r["achieved_tbs"].to_numpy(), BY_NAME["achieved_tbs"].digits)),
        Field("efficiency_percent", Numbers(eff_used, BY_NAME["efficiency_pct"].digits)),
        Field("bound_type", _texts(bound)),
        Field("flops_per_byte", Numbers(r["intensity"].to_numpy(), BY_NAME["intensity"].digits)),
        *_text_fields(table, "compute_spec"),
        Field("resolved_peak_maf", Numbers(peak_t, BY_NAME["peak_tflops"].digits)),
        Field("resolved_peak_hbm_bw", Const(peak_bw, n)),
        Field("warning", _texts(warn)),
        Field("is_anomaly", Bools(anomaly)),
    ])  # fmt: skip
    paged_rows = np.flatnonzero(att_arr == "paged").tolist()
    parts = [paged_breakdown(kernels) for kernels in data.kernels.rows(paged_rows)]
    classification = Obj([
        Field("is_flash_attention", Bools(att_arr == "flash")),
        Field("is_paged_attention", Bools(att_arr == "paged")),
        Field("has_perf_model", Bools(has_model)),
        *_text_fields(table, "attention_type", "op_attention_type", "kernel_attention_type"),
        Field("workload_profile", workload),
        Field("kernel_breakdown", Sparse(dict(zip(paged_rows, parts, strict=True))), optional=True),
    ])  # fmt: skip
    fields = [
        *_text_fields(table, "name"),
        Field("count", Ints(counts)),
        Field("time_ms", Numbers(time_ms, DIGITS["ms"])),
        Field("percent_of_category", Numbers(100.0 * time_ms / total_ms if total_ms > 0 else np.zeros(n),
                                             DIGITS["pct"])),
        Field("percent_of_total", Numbers(pct_total, DIGITS["pct"])),
        Field("efficiency", efficiency),
        *(Field(c, _texts(_raw_cells(df, c))) for c in ("Input Dims", "Input type")),
        Field("has_perf_model", Bools(has_model)),
        Field("perf_params", _texts(_raw_cells(df, "perf_params"))),
        Field("kernel_details_summary", Cells(data.kernels.cells)),  # the CSV's cells, kept packed since the load
        *_text_fields(table, "args"),
        Field("cov", Numbers(cov, 3)),
        Field("high_variance", Bools(high_var)),
        Field("classification", classification),
        Field("library", _texts(library)),
        *_text_fields(table, "launcher_path", "kernel_name", "kernel_name_trunc"),
        *(Field(c, Values(r[c].tolist())) for c in ("module_chain", "call_chain")),
    ]
    if comparative:
        fields += [
            Field("t2_time_ms", Numbers(t2, DIGITS["ms"])),
            Field("count_trace2", Ints(c2)),
            Field("difference_ms", Numbers(t2 - time_ms, DIGITS["ms"])),
            Field("kernel_name_trace2", trace2_kernel_name(data)),
        ]

    gated = in_band_rows(r, comparative)
    # a row whose modeled work would run above a roof says nothing about its kernel (its model_check says why): it is
    # no finding, heuristic or quantified, and not in band either (its time is in compute_roofline's left-out list)
    inconsistent = np.zeros(len(r), dtype=bool) if comparative else r["model_check"].notna().to_numpy(dtype=bool)
    estimates = _impact_estimates(data.category, r, eff_used, time_ms, e2e, comparative, gated | inconsistent)
    findings = _group(estimates, comparative)
    for f in findings:
        rows = [m["row"] for m in f["members"]]
        if f["estimate_method"] == "quantified" and not comparative:
            f["advice"] = finding_advice(r, rows, e2e)
        facts = finding_facts(r, rows, e2e)
        if facts:
            f["facts"] = facts
    specific: dict[str, Any] = {
        "flash_attention_count": att.count("flash"),
        "paged_attention_count": att.count("paged"),
        "has_perf_model_count": int(has_model.sum()),
        "flash_attention_detected": "flash" in att,
        "paged_attention_detected": "paged" in att,
        "peak_maf_tflops": finite(default_peak, 2),
        "peak_hbm_bw_tbs": finite(peak_bw, 2),
        "memory_efficient_attention_count": att.count("memory_efficient"),
        "memory_efficient_attention_detected": "memory_efficient" in att,
        "cudnn_attention_count": att.count("cudnn"),
        "cudnn_attention_detected": "cudnn" in att,
        "unfused_attention_count": att.count("unfused"),
        "unfused_attention_detected": "unfused" in att,
        "instances_by_attention_type": {t: int(counts[att_arr == t].sum()) for t in sorted(set(att))},
    }
    if paged_rows:
        specific["kernel_breakdown_avg"] = {
            f"avg_{k}_percent": round(sum(p[f"{k}_percent"] for p in parts) / len(parts), 2)
            for k in ("reshape_cache", "fwd_kernel", "paged_attention")
        }
    if ctx + gen > 0:
        ratio = ctx / (ctx + gen)
        specific["workload_profile"] = {
            "total_ctx_tokens": ctx,
            "total_gen_tokens": gen,
            "ctx_ratio": rounded(ratio, "ratio"),
            "profile_type": profile_type(ratio),
        }
    document = {
        "category": data.category,
        "status": "OK",
        "comparison_scope": comparison_scope,
        "total_time_ms": rounded(total_ms, "ms"),
        "percent_of_compute": rounded(100.0 * total_ms / e2e, "pct"),
        "operation_count": int(counts.sum()),
        "operations": None,  # written from Metrics.operations
        "category_specific": specific,
        "impact_estimates": estimates,
        "category_findings": findings,
        OURS: {
            "version": 1,
            "run_id": current_run_id(data.manifest),  # the analysis these numbers come from (None: no run record)
            "e2e_baseline_ms": rounded(e2e, "window_ms"),
            "trace2_e2e_baseline_ms": rounded(data.trace2_e2e_ms, "window_ms"),
            "time_base": _time_base(data, total_ms),
            "bytes_model": table.bytes_model,
            "impact_unit": IMPACT_UNIT,
            "gpu": {"key": table.gpu.key, "name": table.gpu.name, "origin": table.gpu.origin},
            "notes": table.peak_notes,
            "in_band": in_band_list(r, np.flatnonzero(gated), e2e),
            "facts": category_facts(r, data.metadata, e2e, forward),
        },
    }
    return Metrics(document, Obj(fields), n)


def _time_base(data: CategoryData, total_ms: float) -> dict[str, Any] | None:
    """E2E beside the GPU's busy and idle time of the window, and the category's share of the busy time (a window
    that is mostly idle makes a small share of E2E out of a large share of the GPU's work)."""
    busy, idle = data.time_base()
    if busy is None:
        return None
    return {"gpu_busy_ms": rounded(busy, "window_ms"), "gpu_idle_ms": rounded(idle, "window_ms"),
            "percent_of_busy": rounded(100.0 * total_ms / busy, "pct") if busy > 0 else None}


def _workload_profiles(r: pd.DataFrame, table: RooflineTable, att: np.ndarray) -> tuple[Obj, int, int]:
    """TraceLens' per-op workload_profile as columns (see roofline_records.workload_profile), and the summed
    context / generated tokens. Paged rows need their config's token counts: those are profiled one by one."""
    n = len(r)
    has = r["has_model"].to_numpy(dtype=bool)
    ints = {
        c: np.where(has, np.nan_to_num(r[c].to_numpy(dtype=float)), 0).astype(np.int64)
        for c in ("heads_q", "heads_kv", "seq_q", "seq_kv")
    }
    hq, hk, nq = ints["heads_q"], ints["heads_kv"], ints["seq_q"]
    ratio = np.where(has, hq // np.where(hk != 0, hk, 1), 0)
    pattern = as_objects(np.where(ratio == 1, "MHA", np.where(hk == 1, "MQA", "GQA")))
    pattern[~has] = None
    wtype = as_objects(np.where(nq > 1, "prefill", "decode"))
    wtype[~has] = "unknown"
    sum_ctx = np.zeros(n, dtype=np.int64)
    sum_gen = np.zeros(n, dtype=np.int64)
    ctx_ratio = np.full(n, np.nan)
    for i in np.flatnonzero(has & (att == "paged")).tolist():
        row = {c: r[c].iat[i] for c in ("has_model", "heads_q", "heads_kv", "seq_q", "seq_kv")}
        w = workload_profile(row, table.config(i))
        sum_ctx[i], sum_gen[i], wtype[i] = w["sum_ctx_tokens"], w["sum_gen_tokens"], w["workload_type"]
        ctx_ratio[i] = np.nan if w["ctx_ratio"] is None else w["ctx_ratio"]
    df = table.source.df if table.source is not None else None
    if df is not None and "perf_params" in df:
        cells = df["perf_params"].tolist()
        for i in np.flatnonzero(~has & (att == "paged")).tolist():  # the step annotation still says what it is
            wtype[i] = step_workload(cells[i]) or "unknown"
    obj = Obj([
        Field("n_q", Ints(nq, valid=has)),
        Field("n_kv", Ints(ints["seq_kv"], valid=has)),
        Field("h_q", Ints(hq, valid=has)),
        Field("h_kv", Ints(hk, valid=has)),
        Field("sum_ctx_tokens", Ints(sum_ctx, valid=has)),
        Field("sum_gen_tokens", Ints(sum_gen, valid=has)),
        Field("ctx_ratio", Numbers(ctx_ratio)),
        Field("workload_type", _texts(wtype)),
        Field("attention_pattern", _texts(pattern)),
        Field("gqa_ratio", Ints(ratio, valid=has & (ratio > 1))),
    ])  # fmt: skip
    return obj, int(sum_ctx[has].sum()), int(sum_gen[has].sum())


def _default_peak(table: RooflineTable) -> float:
    spec = table.dominant_compute_spec() or "matrix_bf16"
    try:
        return table.gpu.peak_tflops(spec)[0]
    except ValueError:
        return float("nan")


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
    category: str, r: pd.DataFrame, eff: np.ndarray, time_ms: np.ndarray, e2e: float, comparative: bool,
    gated: np.ndarray,
) -> list[dict[str, Any]]:
    """One estimate per op row, except the `gated` ones (within or above their band, or an inconsistent model).
    Arithmetic is vectorized; dicts are built only for the rows that qualify."""
    pct_total = 100.0 * time_ms / e2e
    finite = np.isfinite(eff)
    quantified = finite & ((np.nan_to_num(eff) <= ANOMALY_FLAG_PCT) | comparative) & (e2e > 0)
    high = np.maximum(0.0, 1.0 - np.nan_to_num(eff) / 100.0) * time_ms / e2e * 100.0
    # what matching the band's reference (the best published kernel for the shape) would give back, % of E2E
    band_value, reference = r["band_value"].to_numpy(dtype=float), r["band_reference_pct"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        to_band = np.maximum(0.0, 1.0 - band_value / reference) * time_ms / e2e * 100.0
    to_band_r = _rounded(np.where(np.isfinite(to_band) & ~comparative, to_band, np.nan), 2)
    band_status = r["band_status"].tolist()
    work_bound = r["work_bound"].tolist()
    names = r["name"].tolist()
    libs = [x if x != "Unknown" else None for x in r["library"].tolist()]
    bounds = [b if isinstance(b, str) else None for b in r["bound"].tolist()]
    eff_r = _rounded(eff, DIGITS["pct"])
    t_r = _rounded(time_ms, DIGITS["ms"])
    out: list[dict[str, Any]] = []
    # scores stay numpy float64 scalars (iterating an array yields them): sums and rounding depend on it
    q = np.flatnonzero(quantified & (high >= MIN_HIGH) & ~gated)
    for i, mid, low, hi in zip(q.tolist(), MID_FACTOR * high[q], LOW_FACTOR * high[q], high[q], strict=True):
        out.append({
            "row": i, "operation": names[i], "category": category, "type": "kernel_tuning",
            "estimate_method": "quantified",
            "impact_score": mid, "impact_score_low": low, "impact_score_high": hi, "efficiency_pct": eff_r[i],
            "bound_type": bounds[i], "library": libs[i], "time_ms": t_r[i], "band_status": band_status[i],
            "impact_to_band": to_band_r[i],
        })  # fmt: skip
        if work_bound[i] not in (None, "exact"):  # the efficiency is a bound: so is the score
            out[-1]["work_bound"] = work_bound[i]
    if not comparative:
        h = np.flatnonzero(~quantified & ~gated)
        p = pct_total[h]
        scores = zip(h.tolist(), HEURISTIC_MID * p, HEURISTIC_LOW * p, HEURISTIC_HIGH * p, p, strict=True)
        for i, mid, low, hi, pct in scores:
            out.append({
                "row": i, "operation": names[i], "category": category, "type": "unmodeled_significant",
                "estimate_method": "heuristic", "impact_score": mid, "impact_score_low": low, "impact_score_high": hi,
                "efficiency_pct": eff_r[i], "bound_type": None, "library": libs[i], "time_ms": t_r[i],
                "percent_of_total": pct,
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
        if key[0] == "q" and not comparative:
            to_band = [m["impact_to_band"] for m in members if m.get("impact_to_band") is not None]
            f["impact_to_band"] = round(sum(to_band), 2) if to_band else None
            f["members_within_band"] = sum(m.get("band_status") == "within" for m in members)
            f["members_without_band"] = sum(m.get("band_status") in (None, "none") for m in members)
        if key[0] == "h":
            f["percent_of_total"] = sum(m["percent_of_total"] for m in members)
        f["member_count"] = len(members)
        f["members"] = members
        findings.append(f)
    findings.sort(key=lambda f: -f["impact_score"])
    # round once, at the end, the exact values written and validated against
    _round_scores(estimates)
    _round_scores(findings)
    for rank, f in enumerate(findings, start=1):
        f["rank"] = rank
    return findings


def _round_scores(items: list[dict[str, Any]]) -> None:
    """round(x, 2) of each score, as one np.round per key (the same values as numpy's scalar round)."""
    for k in ("impact_score", "impact_score_low", "impact_score_high", "percent_of_total"):
        holders = [d for d in items if k in d]
        if not holders:
            continue
        values = [d[k] for d in holders]
        if not all(type(v) is np.float64 for v in values):  # Python floats round their own way
            for d in holders:
                d[k] = round(d[k], 2)
            continue
        for d, v in zip(holders, np.round(np.array(values, dtype=np.float64), 2), strict=True):
            d[k] = v


