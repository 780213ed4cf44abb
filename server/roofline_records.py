"""Op rows → perf_models → one roofline record per row (a DataFrame), plus the arch that scored them.

String parsing happens once per distinct signature (rows repeat signatures); all the math runs
vectorized over the whole table in one estimate_work + roofline call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from perf_models.estimate import estimate_work
from perf_models.hardware import GpuSpec
from perf_models.kernels import classify_kernels
from perf_models.registry import ParsedOp, parse_op
from perf_models.roofline import expected_band, roofline

from perf_models.config import AttentionConfig, BwdConvention
from perf_models.dtypes import SHORT_LABEL, matrix_compute_spec, try_normalize_dtype
from perf_models.errors import PerfModelError
from perf_models.table import ConfigTable

from .category_io import KERNEL_SUM, CategoryData

BYTES_MODELS = ("compulsory", "tiled")
TRUNC_KERNEL = 75
MODULE_PREFIX = "nn.Module: "
SPECIFIC_TYPES = ("flash", "memory_efficient", "cudnn", "math", "unfused", "paged")


@dataclass
class RooflineTable:
    records: pd.DataFrame
    gpu: GpuSpec
    bytes_model: str
    peak_notes: list[str] = field(default_factory=list)


def short_args(dims: Any, types: Any) -> str:
    """`(16,16,559,64) bf16<br>...`: each tensor input; empty and Scalar slots dropped."""
    if not isinstance(dims, list | tuple):
        return ""
    types = list(types) if isinstance(types, list | tuple) else []
    parts = []
    for i, d in enumerate(dims):
        if not isinstance(d, list | tuple) or len(d) == 0:
            continue
        t = types[i] if i < len(types) else ""
        canon = try_normalize_dtype(str(t)) if t else None
        label = SHORT_LABEL.get(canon, str(t)) if canon else str(t)
        parts.append(f"({','.join(str(x) for x in d)}) {label}".rstrip())
    return "<br>".join(parts)


def truncate_kernel(name: str) -> str:
    return name if len(name) <= TRUNC_KERNEL else name[:TRUNC_KERNEL] + "..."


def kernel_name_cells(kernels: list[dict[str, Any]]) -> tuple[str, str]:
    """Full and truncated kernel-name cells; several kernels as `Kernel 1: a<br>Kernel 2: b`."""
    names = [k["name"] for k in kernels]
    if not names:
        return "", ""
    if len(names) == 1:
        return names[0], truncate_kernel(names[0])
    full = "<br>".join(f"Kernel {i + 1}: {n}" for i, n in enumerate(names))
    trunc = "<br>".join(f"Kernel {i + 1}: {truncate_kernel(n)}" for i, n in enumerate(names))
    return full, trunc


def chains(call_stack: Any) -> tuple[list[str], list[str]]:
    """(module_chain, call_chain) from a `call_stack_full` list (nested per-kernel sub-lists flattened)."""
    if not isinstance(call_stack, list | tuple):
        return [], []
    flat = [str(x) for x in call_stack if isinstance(x, str)]
    for x in call_stack:
        if isinstance(x, list | tuple):
            flat.extend(str(y) for y in x if isinstance(y, str))
            break  # the first kernel's branch is enough for a readable chain
    modules = [f[len(MODULE_PREFIX) :] for f in flat if f.startswith(MODULE_PREFIX)]
    return modules, flat


def _parse_rows(data: CategoryData) -> list[ParsedOp]:
    df = data.df
    assert df is not None
    names = df["name"].astype(str).tolist()
    dims, types, conc, pp = (data.parsed[c] for c in ("Input Dims", "Input type", "Concrete Inputs", "perf_params"))
    cache: dict[str, ParsedOp] = {}
    out: list[ParsedOp] = []
    for i, name in enumerate(names):
        key = repr((name, dims[i], types[i], conc[i], pp[i]))
        if key not in cache:
            cache[key] = parse_op(name, dims[i], types[i], conc[i], pp[i])
        out.append(cache[key])
    return out


def compute_records(
    data: CategoryData,
    gpu: GpuSpec,
    *,
    bytes_model: str = "compulsory",
    bwd_convention: BwdConvention = BwdConvention.FIVE_GEMM,
    skip_masked_tiles: bool = True,
) -> RooflineTable:
    df = data.df
    assert df is not None
    n = len(df)
    parsed = _parse_rows(data)
    counts = df["operation_count"].to_numpy(dtype=float)
    ksum = df[KERNEL_SUM].to_numpy(dtype=float)
    mean_us = np.where(counts > 0, ksum / np.maximum(counts, 1), np.nan)

    modeled = [i for i, p in enumerate(parsed) if p.config is not None]
    cfgs: list[AttentionConfig] = [parsed[i].config for i in modeled]  # type: ignore[misc]
    rec: dict[str, Any] = {
        "row": np.arange(n),
        "name": df["name"].astype(str).to_numpy(),
        "op_category": df["op category"].astype(str).to_numpy() if "op category" in df else np.full(n, ""),
        "count": counts.astype(np.int64),
        "time_ms": ksum / 1000.0,
        "mean_us": mean_us,
    }
    nan = np.full(n, np.nan)
    for col in (
        "kept_pairs",
        "flops_useful",
        "flops_executed",
        "flops_upper",
        "bytes_compulsory",
        "bytes_tiled",
        "bytes_used",
        "ideal_us",
        "intensity",
        "ridge",
        "achieved_tflops",
        "achieved_tbs",
        "efficiency_pct",
        "peak_tflops",
        "peak_tbs",
        "band_low",
        "band_high",
        "block_q",
        "block_kv",
    ):
        rec[col] = nan.copy()
    rec["bound"] = np.full(n, None, dtype=object)
    rec["compute_spec"] = np.full(n, None, dtype=object)
    rec["peak_tflops_kind"] = np.full(n, None, dtype=object)
    rec["peak_tbs_kind"] = np.full(n, None, dtype=object)
    warnings: list[list[str]] = [list(p.warnings) for p in parsed]
    for i, p in enumerate(parsed):
        if p.config is None:
            warnings[i].insert(0, f"no perf model: {p.reason}")

    if modeled:
        idx = np.asarray(modeled)
        table = ConfigTable.from_configs(cfgs)
        work = estimate_work(table, bwd_convention=bwd_convention, skip_masked_tiles=skip_masked_tiles)
        specs = [matrix_compute_spec(c.dtype_q) for c in cfgs]
        peak_t = np.empty(len(cfgs))
        kinds_t: list[str] = []
        spec_cache: dict[str, tuple[float, str]] = {}
        for j, s in enumerate(specs):
            if s not in spec_cache:
                try:
                    spec_cache[s] = gpu.peak_tflops(s)
                except PerfModelError:
                    spec_cache[s] = (float("nan"), "missing")
            peak_t[j], kind = spec_cache[s]
            kinds_t.append(kind)
        peak_bw, bw_kind = gpu.peak_tbs()
        bytes_used = work.bytes_tiled if bytes_model == "tiled" else work.bytes_compulsory
        rf = roofline(work.flops_useful, bytes_used, peak_t, np.full(len(cfgs), peak_bw), mean_us[idx])
        seq = np.array([max(c.seq_q, c.seq_kv) if c.varlen is None else c.varlen.max_seqlen_kv for c in cfgs])
        lo, hi = expected_band(seq)
        cols = {
            "kept_pairs": work.kept_pairs,
            "flops_useful": work.flops_useful,
            "flops_executed": work.flops_executed,
            "flops_upper": work.flops_upper,
            "bytes_compulsory": work.bytes_compulsory,
            "bytes_tiled": work.bytes_tiled,
            "bytes_used": bytes_used,
            "ideal_us": rf.ideal_time_us,
            "intensity": rf.intensity,
            "ridge": rf.ridge,
            "achieved_tflops": rf.achieved_tflops,
            "achieved_tbs": rf.achieved_tbs,
            "efficiency_pct": rf.efficiency_pct,
            "peak_tflops": peak_t,
            "peak_tbs": np.full(len(cfgs), peak_bw),
            "band_low": lo,
            "band_high": hi,
            "block_q": work.block_q,
            "block_kv": work.block_kv,
        }
        for k, v in cols.items():
            rec[k][idx] = np.asarray(v, dtype=float)
        rec["bound"][idx] = np.asarray(rf.bound, dtype=object)
        rec["compute_spec"][idx] = np.asarray(specs, dtype=object)
        rec["peak_tflops_kind"][idx] = np.asarray(kinds_t, dtype=object)
        rec["peak_tbs_kind"][idx] = bw_kind
        for j, i in enumerate(modeled):
            if kinds_t[j] == "missing":
                warnings[i].append(f"{gpu.name} has no peak for {specs[j]}; efficiency not computed")
            if not np.isfinite(mean_us[i]) or mean_us[i] <= 0:
                warnings[i].append("no measured kernel time; efficiency not computed")

    eff = rec["efficiency_pct"]
    rec["is_anomaly"] = np.where(np.isfinite(eff), eff > 100.0, False)
    rec["anomaly_flag"] = np.where(np.isfinite(eff), eff > 110.0, False)
    rec["in_expected_band"] = np.where(np.isfinite(eff), (eff >= rec["band_low"]) & (eff <= rec["band_high"]), False)
    for i in np.flatnonzero(rec["anomaly_flag"]):
        warnings[i].append(
            f"efficiency {eff[i]:.1f}% exceeds the roofline by more than 10%: check the shapes, the peaks "
            "or whether the measured time misses kernels — an anomaly, not an excellent kernel"
        )

    _add_descriptive_columns(rec, data, parsed, cfgs, modeled)
    rec["warnings"] = warnings
    rec["has_model"] = np.array([p.config is not None for p in parsed])
    rec["no_model_reason"] = [p.reason if p.config is None else None for p in parsed]
    records = pd.DataFrame(rec)
    notes = []
    if bytes_model == "tiled" and gpu.vendor == "nvidia":
        notes.append("tiled bytes assume tile re-reads miss the cache; on NVIDIA parts most re-reads hit L2")
    if bytes_model == "compulsory" and gpu.vendor == "amd":
        notes.append(
            "compulsory bytes assume perfect reuse; on MI300-class parts (small per-XCD L2) the tiled "
            "estimate is the better guess of HBM traffic (bytes_model='tiled')"
        )
    return RooflineTable(records=records, gpu=gpu, bytes_model=bytes_model, peak_notes=notes)


def _add_descriptive_columns(
    rec: dict[str, Any], data: CategoryData, parsed: list[ParsedOp], cfgs: list[AttentionConfig], modeled: list[int]
) -> None:
    df = data.df
    assert df is not None
    n = len(df)
    by_row: dict[int, AttentionConfig] = dict(zip(modeled, cfgs, strict=True))
    dims, types = data.parsed["Input Dims"], data.parsed["Input type"]
    stacks = data.parsed["call_stack_full"]
    entry = df["entry_point"].tolist() if "entry_point" in df else [None] * n
    upstream = (
        pd.to_numeric(df["Pct Roofline_mean"], errors="coerce").to_numpy()
        if "Pct Roofline_mean" in df
        else np.full(n, np.nan)
    )
    copy_us = (
        pd.to_numeric(df["copy_overhead_us_sum"], errors="coerce").to_numpy()
        if "copy_overhead_us_sum" in df
        else np.full(n, np.nan)
    )
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "args",
            "direction",
            "attention_type",
            "op_attention_type",
            "kernel_attention_type",
            "family",
            "layout",
            "library",
            "kernel_name",
            "kernel_name_trunc",
            "dominant_kernel",
            "kernel_breakdown",
            "launcher_path",
            "module_chain",
            "call_chain",
            "shape_label",
            "mask",
            "dtype",
            "batch",
            "heads_q",
            "heads_kv",
            "seq_q",
            "seq_kv",
            "head_dim_qk",
            "head_dim_v",
            "gqa_ratio",
            "workload",
            "is_varlen",
            "config_source",
        )
    }
    kclass_cache: dict[str, Any] = {}
    for i in range(n):
        p = parsed[i]
        cfg = by_row.get(i)
        kernels = data.kernels[i] if i < len(data.kernels) else []
        knames = [k["name"] for k in kernels]
        kdur = [float(k["total_duration_us"] or 0.0) for k in kernels]
        key = repr((knames, kdur))
        if key not in kclass_cache:
            kclass_cache[key] = classify_kernels(knames, kdur)
        kc = kclass_cache[key]
        op_type = p.attention_type
        kern_type = getattr(kc, "attention_type", None)
        final = op_type if op_type in SPECIFIC_TYPES else (kern_type or op_type or "unknown")
        full, trunc = kernel_name_cells(kernels)
        modules, call_chain = chains(stacks[i])
        e = entry[i]
        out["args"].append(short_args(dims[i], types[i]) or _args_from_config(cfg))
        out["direction"].append(str(p.direction) if p.direction else (str(cfg.direction) if cfg else None))
        out["attention_type"].append(final)
        out["op_attention_type"].append(op_type)
        out["kernel_attention_type"].append(kern_type)
        out["family"].append(p.family)
        out["layout"].append(p.layout)
        out["library"].append(getattr(kc, "library", None) or "Unknown")
        out["kernel_name"].append(full)
        out["kernel_name_trunc"].append(trunc)
        out["dominant_kernel"].append(getattr(kc, "dominant_kernel", None))
        out["kernel_breakdown"].append(getattr(kc, "breakdown", None) or {})
        out["launcher_path"].append(str(e) if isinstance(e, str) and e else "Not found")
        out["module_chain"].append(modules)
        out["call_chain"].append(call_chain)
        out["shape_label"].append(shape_label(cfg) if cfg else p.family or "")
        out["mask"].append(cfg.mask.label if cfg else None)
        out["dtype"].append(cfg.dtype_q if cfg else None)
        for attr in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v"):
            out[attr].append(getattr(cfg, attr) if cfg else None)
        out["gqa_ratio"].append(cfg.gqa_ratio if cfg else None)
        out["workload"].append(workload_profile(cfg, p))
        out["is_varlen"].append(bool(cfg and cfg.varlen is not None))
        out["config_source"].append(getattr(p, "source", None))
    rec.update(out)
    rec["upstream_efficiency_pct"] = upstream
    rec["copy_overhead_us"] = copy_us


def _args_from_config(cfg: AttentionConfig | None) -> str:
    if cfg is None:
        return ""
    q = f"({cfg.batch},{cfg.heads_q},{cfg.seq_q},{cfg.head_dim_qk}) {SHORT_LABEL.get(cfg.dtype_q, cfg.dtype_q)}"
    k = f"({cfg.batch},{cfg.heads_kv},{cfg.seq_kv},{cfg.head_dim_qk}) {SHORT_LABEL.get(cfg.kv_dtype, cfg.kv_dtype)}"
    v = f"({cfg.batch},{cfg.heads_kv},{cfg.seq_kv},{cfg.head_dim_v}) {SHORT_LABEL.get(cfg.kv_dtype, cfg.kv_dtype)}"
    return "<br>".join((q, k, v))


def shape_label(cfg: AttentionConfig) -> str:
    heads = f"H{cfg.heads_q}" if cfg.heads_q == cfg.heads_kv else f"H{cfg.heads_q}/{cfg.heads_kv}"
    seq = f"N{cfg.seq_q}" if cfg.seq_q == cfg.seq_kv else f"N{cfg.seq_q}x{cfg.seq_kv}"
    d = f"d{cfg.head_dim_qk}" if cfg.head_dim_qk == cfg.head_dim_v else f"d{cfg.head_dim_qk}/{cfg.head_dim_v}"
    mask = {"none": "", "causal": " causal"}.get(str(cfg.mask.kind), " window")
    return f"{cfg.direction} B{cfg.batch} {heads} {seq} {d}{mask}"


def workload_profile(cfg: AttentionConfig | None, parsed: ParsedOp) -> dict[str, Any]:
    """TraceLens-style workload profile: shapes, token sums, ctx ratio, pattern (MHA/GQA/MQA)."""
    if cfg is None:
        return {
            "n_q": None,
            "n_kv": None,
            "h_q": None,
            "h_kv": None,
            "sum_ctx_tokens": None,
            "sum_gen_tokens": None,
            "ctx_ratio": None,
            "workload_type": "unknown",
            "attention_pattern": None,
            "gqa_ratio": None,
        }
    ratio = cfg.gqa_ratio
    pattern = "MHA" if ratio == 1 else ("MQA" if cfg.heads_kv == 1 else "GQA")
    sum_ctx = sum_gen = 0
    ctx_ratio = None
    wtype = "prefill" if cfg.seq_q > 1 else "decode"
    if cfg.paged is not None:
        sum_ctx = cfg.paged.sum_context_tokens
        sum_gen = cfg.paged.sum_query_tokens or 0
        total = sum_ctx + sum_gen
        ctx_ratio = round(sum_ctx / total, 4) if total else None
        if ctx_ratio is not None:
            wtype = "prefill_heavy" if ctx_ratio > 0.8 else ("decode_heavy" if ctx_ratio < 0.2 else "mixed")
    return {
        "n_q": cfg.seq_q,
        "n_kv": cfg.seq_kv,
        "h_q": cfg.heads_q,
        "h_kv": cfg.heads_kv,
        "sum_ctx_tokens": sum_ctx,
        "sum_gen_tokens": sum_gen,
        "ctx_ratio": ctx_ratio,
        "workload_type": wtype,
        "attention_pattern": pattern,
        "gqa_ratio": ratio if ratio > 1 else None,
    }
