"""Op rows → perf_models → one roofline record per row (a column-oriented DataFrame).

Parsing is batched (`parse_ops_table`: one plan per structural group of rows, shapes extracted with
numpy) and all the math runs vectorized over the whole table in one estimate_work + roofline call.
Descriptive columns (labels, kernel names) are built once per distinct value and mapped onto rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from perf_models.batch_parse import ParsedTable, parse_ops_table
from perf_models.config import AttentionConfig, BwdConvention
from perf_models.dtypes import SHORT_LABEL, try_normalize_dtype
from perf_models.errors import PerfModelError
from perf_models.estimate import estimate_work
from perf_models.hardware import GpuSpec
from perf_models.kernels import classify_kernels
from perf_models.registry import parse_op
from perf_models.roofline import expected_band, roofline

from .category_io import KERNEL_SUM, CategoryData

BYTES_MODELS = ("compulsory", "tiled")
TRUNC_KERNEL = 75
MODULE_PREFIX = "nn.Module: "
SPECIFIC_TYPES = ("flash", "memory_efficient", "cudnn", "math", "unfused", "paged")
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
_SPEC_BY_DTYPE = {
    "bf16": "matrix_bf16",
    "fp16": "matrix_fp16",
    "fp32": "matrix_fp32",
    "tf32": "matrix_tf32",
    "fp64": "matrix_fp64",
    "fp8_e4m3": "matrix_fp8",
    "fp8_e5m2": "matrix_fp8",
}


@dataclass
class RooflineTable:
    records: pd.DataFrame
    gpu: GpuSpec
    bytes_model: str
    parsed: ParsedTable
    peak_notes: list[str] = field(default_factory=list)

    def config(self, row: int) -> AttentionConfig | None:
        return self.parsed.config(row)


# ---------------------------------------------------------------- cell formatting (once per distinct value)
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


def kernel_name_cells(names: list[str]) -> tuple[str, str]:
    """Full and truncated kernel-name cells; several kernels as `Kernel 1: a<br>Kernel 2: b`."""
    if not names:
        return "", ""
    if len(names) == 1:
        return names[0], truncate_kernel(names[0])
    full = "<br>".join(f"Kernel {i + 1}: {n}" for i, n in enumerate(names))
    trunc = "<br>".join(f"Kernel {i + 1}: {truncate_kernel(n)}" for i, n in enumerate(names))
    return full, trunc


def chains(call_stack: Any) -> tuple[list[str], list[str]]:
    """(module_chain, call_chain) from a `call_stack_full` cell (string or list), without evaluating it.

    The cell is a list repr root→kernel whose tail holds one sub-list per kernel; quoted strings are read
    in order with a regex (never eval), keeping the common prefix and the first kernel's branch.
    """
    if call_stack is None or (isinstance(call_stack, float) and call_stack != call_stack):
        return [], []
    if isinstance(call_stack, list | tuple):
        flat = [str(x) for x in call_stack if isinstance(x, str)]
        for x in call_stack:
            if isinstance(x, list | tuple):
                flat.extend(str(y) for y in x if isinstance(y, str))
                break
    else:
        text = str(call_stack)
        cut = text.find("[", 1)
        head, tail = (text[:cut], text[cut:]) if cut > 0 else (text, "")
        first_branch = tail[: tail.find("]") + 1] if tail else ""
        flat = [a or b for a, b in _QUOTED.findall(head + first_branch)]
    modules: list[str] = []
    for f in flat:
        if f.startswith(MODULE_PREFIX):
            modules.append(f[len(MODULE_PREFIX) :])
    return modules, flat


# ---------------------------------------------------------------- parsing and classification
def _parse(data: CategoryData) -> ParsedTable:
    """Batch-parse every row; rows that failed on their own arguments are retried with perf_params.

    perf_params cells are unique per row in real CSVs, so they are only parsed for the rows that need them.
    """
    df = data.df
    assert df is not None
    names = df["name"].astype(str).tolist()
    dims, types, conc = (data.parsed[c] for c in ("Input Dims", "Input type", "Concrete Inputs"))
    pt = parse_ops_table(names, dims, types, conc, [None] * len(names))
    raw_pp = df["perf_params"].tolist() if "perf_params" in df else [None] * len(names)
    retry = [i for i in np.flatnonzero(~pt.modeled) if isinstance(raw_pp[i], str) and raw_pp[i].strip()]
    if retry:
        pt = pt.with_rows({int(i): parse_op(names[i], dims[i], types[i], conc[i], raw_pp[i]) for i in retry})
    return pt


def _classify_rows(data: CategoryData) -> list[Any]:
    """Kernel classification per row, cached by (kernel names, index of the longest kernel).

    Attention type and library depend only on the names and on which kernel dominates, so rows that
    differ only in durations share one classification.
    """
    cache: dict[tuple[Any, ...], Any] = {}
    out = []
    for kernels in data.kernels:
        names = tuple(k["name"] for k in kernels)
        durs = [float(k["total_duration_us"] or 0.0) for k in kernels]
        key = (names, int(np.argmax(durs)) if durs else -1)
        if key not in cache:
            cache[key] = classify_kernels(list(names), durs)
        out.append(cache[key])
    return out


def _final_type(op_type: str, kc: Any) -> str:
    """Op name when it is specific (e.g. `_scaled_dot_product_efficient_attention`), else the kernels' verdict."""
    kern = getattr(kc, "attention_type", None)
    if op_type in SPECIFIC_TYPES:
        return "unfused" if op_type == "math" else op_type
    if getattr(kc, "is_unfused", False):
        return "unfused"
    return kern if kern and kern != "unknown" else (op_type or "unknown")


def _compute_specs(dtypes: np.ndarray, att_types: np.ndarray, gpu: GpuSpec) -> np.ndarray:
    """The peak each modeled row is scored against. fp32 memory-efficient attention on NVIDIA runs CUTLASS
    3xTF32 on the tensor cores (not the CUDA cores), so its roof is matrix_fp32_3xtf32 when the table has it."""
    specs = np.array([_SPEC_BY_DTYPE.get(str(d), "matrix_bf16") for d in dtypes], dtype=object)
    if gpu.vendor == "nvidia" and "matrix_fp32_3xtf32" in gpu.specs():
        specs[(specs == "matrix_fp32") & (att_types == "memory_efficient")] = "matrix_fp32_3xtf32"
    return specs


def _peaks(specs: np.ndarray, gpu: GpuSpec) -> tuple[np.ndarray, np.ndarray]:
    values = np.full(len(specs), np.nan)
    kinds = np.full(len(specs), "missing", dtype=object)
    for spec in set(specs.tolist()):
        try:
            v, kind = gpu.peak_tflops(spec)
        except PerfModelError:
            continue
        sel = specs == spec
        values[sel] = v
        kinds[sel] = kind
    return values, kinds


# ---------------------------------------------------------------- the records
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
    pt = _parse(data)
    counts = df["operation_count"].to_numpy(dtype=float)
    ksum = df[KERNEL_SUM].to_numpy(dtype=float)
    mean_us = ksum / np.maximum(counts, 1)
    kclasses = _classify_rows(data)
    att_types = np.array([_final_type(t, k) for t, k in zip(pt.attention_type, kclasses, strict=True)], dtype=object)
    idx = np.flatnonzero(pt.modeled)

    rec: dict[str, Any] = {
        "row": np.arange(n),
        "name": df["name"].astype(str).to_numpy(dtype=object),
        "count": counts.astype(np.int64),
        "time_ms": ksum / 1000.0,
        "mean_us": mean_us,
        "has_model": pt.modeled.copy(),
        "direction": pt.direction,
        "attention_type": att_types,
        "op_attention_type": pt.attention_type,
        "kernel_attention_type": np.array([getattr(k, "attention_type", None) for k in kclasses], dtype=object),
        "family": pt.family,
        "layout": pt.layout,
        "config_source": pt.source,
        "mask": pt.mask_label,
        "dtype": pt.dtype_q,
    }
    float_cols = (
        "kept_pairs", "flops_useful", "flops_executed", "flops_upper", "bytes_compulsory", "bytes_tiled",
        "bytes_used", "ideal_us", "intensity", "ridge", "achieved_tflops", "achieved_tbs", "efficiency_pct",
        "peak_tflops", "peak_tbs", "band_low", "band_high", "block_q", "block_kv", "gqa_ratio",
        "batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v",
    )  # fmt: skip
    for col in float_cols:
        rec[col] = np.full(n, np.nan)
    rec["bound"] = np.full(n, None, dtype=object)
    rec["compute_spec"] = np.full(n, None, dtype=object)
    rec["peak_tflops_kind"] = np.full(n, None, dtype=object)
    rec["peak_tbs_kind"] = np.full(n, None, dtype=object)
    warnings: list[list[str]] = [list(w) for w in pt.warnings]
    for i in np.flatnonzero(~pt.modeled):
        warnings[i].insert(0, f"no perf model: {pt.reason[i]}")

    if len(idx):
        t = pt.table
        work = estimate_work(t, bwd_convention=bwd_convention, skip_masked_tiles=skip_masked_tiles)
        specs = _compute_specs(pt.dtype_q[idx], att_types[idx], gpu)
        peak_t, kinds_t = _peaks(specs, gpu)
        peak_bw, bw_kind = gpu.peak_tbs()
        bytes_used = work.bytes_tiled if bytes_model == "tiled" else work.bytes_compulsory
        rf = roofline(work.flops_useful, bytes_used, peak_t, np.full(len(idx), peak_bw), mean_us[idx])
        # band lookup length: max(Nq, Nkv); varlen: max lengths; paged: mean context (perf_models.band_seq_len)
        seq = np.maximum(t.seq_q, t.seq_kv)
        seq = np.where(t.num_seqs > 0, np.maximum(t.max_q, t.max_kv), seq)
        seq = np.where(t.sum_ctx > 0, t.sum_ctx // np.maximum(t.num_requests, 1), seq)
        lo, hi = expected_band(seq)
        cols = {
            "kept_pairs": work.kept_pairs, "flops_useful": work.flops_useful, "flops_executed": work.flops_executed,
            "flops_upper": work.flops_upper, "bytes_compulsory": work.bytes_compulsory,
            "bytes_tiled": work.bytes_tiled, "bytes_used": bytes_used, "ideal_us": rf.ideal_time_us,
            "intensity": rf.intensity, "ridge": rf.ridge, "achieved_tflops": rf.achieved_tflops,
            "achieved_tbs": rf.achieved_tbs, "efficiency_pct": rf.efficiency_pct, "peak_tflops": peak_t,
            "peak_tbs": np.full(len(idx), peak_bw), "band_low": lo, "band_high": hi, "block_q": work.block_q,
            "block_kv": work.block_kv, "gqa_ratio": t.heads_q // t.heads_kv, "batch": t.batch, "heads_q": t.heads_q,
            "heads_kv": t.heads_kv, "seq_q": t.seq_q, "seq_kv": t.seq_kv, "head_dim_qk": t.head_dim_qk,
            "head_dim_v": t.head_dim_v,
        }  # fmt: skip
        for k, v in cols.items():
            rec[k][idx] = np.asarray(v, dtype=float)
        rec["bound"][idx] = np.where(np.asarray(rf.bound) == "unknown", None, np.asarray(rf.bound, dtype=object))
        rec["compute_spec"][idx] = specs
        rec["peak_tflops_kind"][idx] = kinds_t
        rec["peak_tbs_kind"][idx] = bw_kind
        for j in np.flatnonzero(kinds_t == "missing"):
            warnings[idx[j]].append(f"{gpu.name} has no peak for {specs[j]}; efficiency not computed")
        for j in np.flatnonzero(~np.asarray(rf.has_measurement)):
            warnings[idx[j]].append("no measured kernel time; efficiency not computed")

    eff = rec["efficiency_pct"]
    finite = np.isfinite(eff)
    rec["is_anomaly"] = finite & (np.nan_to_num(eff) > 100.0)
    rec["anomaly_flag"] = finite & (np.nan_to_num(eff) > 110.0)
    rec["in_expected_band"] = (
        finite & (np.nan_to_num(eff) >= rec["band_low"]) & (np.nan_to_num(eff) <= rec["band_high"])
    )
    for i in np.flatnonzero(rec["anomaly_flag"]):
        warnings[i].append(
            f"efficiency {eff[i]:.1f}% exceeds the roofline by more than 10%: check the shapes, the peaks "
            "or whether the measured time misses kernels — an anomaly, not an excellent kernel"
        )
    rec["warnings"] = warnings
    rec["no_model_reason"] = pt.reason
    _add_descriptive_columns(rec, data, kclasses)
    records = pd.DataFrame(rec)
    notes = []
    if bytes_model == "tiled" and gpu.vendor == "nvidia":
        notes.append("tiled bytes assume tile re-reads miss the cache; on NVIDIA parts most re-reads hit L2")
    if bytes_model == "compulsory" and gpu.vendor == "amd":
        notes.append(
            "compulsory bytes assume perfect reuse; on MI300-class parts (4 MB L2 per XCD) the tiled estimate "
            "is the better guess of HBM traffic (bytes_model='tiled')"
        )
    return RooflineTable(records=records, gpu=gpu, bytes_model=bytes_model, parsed=pt, peak_notes=notes)


def _map_unique(values: list[Any], fn: Any) -> list[Any]:
    """fn over each distinct value once (cells repeat across rows), results mapped back onto the rows."""
    cache: dict[Any, Any] = {}
    out = []
    for v in values:
        key = v if isinstance(v, str | int | float | type(None)) else repr(v)
        if key not in cache:
            cache[key] = fn(v)
        out.append(cache[key])
    return out


def _add_descriptive_columns(rec: dict[str, Any], data: CategoryData, kclasses: list[Any]) -> None:
    df = data.df
    assert df is not None
    n = len(df)
    dims_raw = df["Input Dims"].tolist() if "Input Dims" in df else [None] * n
    types_raw = df["Input type"].tolist() if "Input type" in df else [None] * n
    dims, types = data.parsed["Input Dims"], data.parsed["Input type"]
    arg_cache: dict[tuple[Any, Any], str] = {}
    args = []
    for i in range(n):
        key = (dims_raw[i] if isinstance(dims_raw[i], str) else repr(dims[i]), types_raw[i])
        if key not in arg_cache:
            arg_cache[key] = short_args(dims[i], types[i])
        args.append(arg_cache[key])
    rec["args"] = args
    rec["shape_label"] = _shape_labels(rec)
    missing = [i for i, a in enumerate(args) if not a and rec["has_model"][i]]
    for i in missing:  # autograd nodes have no Input Dims: show the linked forward's shapes
        args[i] = _args_from_record(rec, i)

    names_cells = _map_unique(
        [tuple(k["name"] for k in ks) for ks in data.kernels], lambda t: kernel_name_cells(list(t))
    )
    rec["kernel_name"] = [c[0] for c in names_cells]
    rec["kernel_name_trunc"] = [c[1] for c in names_cells]
    rec["library"] = [getattr(k, "library", None) or "Unknown" for k in kclasses]
    rec["dominant_kernel"] = [getattr(k, "dominant_kernel", None) for k in kclasses]
    stacks = df["call_stack_full"].tolist() if "call_stack_full" in df else [None] * n
    ch = _map_unique(stacks, chains)
    rec["module_chain"] = [c[0] for c in ch]
    rec["call_chain"] = [c[1] for c in ch]
    entry = df["entry_point"].tolist() if "entry_point" in df else [None] * n
    rec["launcher_path"] = [e if isinstance(e, str) and e else "Not found" for e in entry]
    for col, src in (("upstream_efficiency_pct", "Pct Roofline_mean"), ("copy_overhead_us", "copy_overhead_us_sum")):
        rec[col] = pd.to_numeric(df[src], errors="coerce").to_numpy() if src in df else np.full(n, np.nan)


def _shape_labels(rec: dict[str, Any]) -> list[str]:
    out = []
    cols = [rec[c] for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")]
    for i, (has, direction, mask, family) in enumerate(
        zip(rec["has_model"], rec["direction"], rec["mask"], rec["family"], strict=True)
    ):
        if not has:
            out.append(str(family or ""))
            continue
        b, hq, hk, nq, nk, dq, dv = (int(c[i]) for c in cols)
        heads = f"H{hq}" if hq == hk else f"H{hq}/{hk}"
        seq = f"N{nq}" if nq == nk else f"N{nq}x{nk}"
        d = f"d{dq}" if dq == dv else f"d{dq}/{dv}"
        m = "" if mask in (None, "none") else (" causal" if str(mask).startswith("causal") else " window")
        out.append(f"{direction} B{b} {heads} {seq} {d}{m}")
    return out


def _args_from_record(rec: dict[str, Any], i: int) -> str:
    label = SHORT_LABEL.get(str(rec["dtype"][i]), str(rec["dtype"][i]))
    b, hq, hk, nq, nk = (int(rec[c][i]) for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv"))
    dq, dv = int(rec["head_dim_qk"][i]), int(rec["head_dim_v"][i])
    return "<br>".join(
        (f"({b},{hq},{nq},{dq}) {label}", f"({b},{hk},{nk},{dq}) {label}", f"({b},{hk},{nk},{dv}) {label}")
    )


def workload_profile(rec: pd.Series, cfg: AttentionConfig | None) -> dict[str, Any]:
    """TraceLens-style workload profile: shapes, token sums, ctx ratio, pattern (MHA/GQA/MQA)."""
    if not rec["has_model"]:
        return {
            "n_q": None, "n_kv": None, "h_q": None, "h_kv": None, "sum_ctx_tokens": None, "sum_gen_tokens": None,
            "ctx_ratio": None, "workload_type": "unknown", "attention_pattern": None, "gqa_ratio": None,
        }  # fmt: skip
    hq, hk = int(rec["heads_q"]), int(rec["heads_kv"])
    ratio = hq // hk
    pattern = "MHA" if ratio == 1 else ("MQA" if hk == 1 else "GQA")
    sum_ctx = sum_gen = 0
    ctx_ratio = None
    wtype = "prefill" if int(rec["seq_q"]) > 1 else "decode"
    paged = cfg.paged if cfg is not None else None
    if paged is not None:
        # vLLM's vocabulary: context tokens = prompt (prefill) tokens this step, generated = decode tokens
        q_tokens = paged.sum_query_tokens or paged.num_requests
        decode = paged.num_requests if q_tokens == paged.num_requests else 0
        sum_gen = decode
        sum_ctx = q_tokens - decode
        total = sum_ctx + sum_gen
        ctx_ratio = round(sum_ctx / total, 4) if total else None
        if ctx_ratio is not None:
            wtype = "prefill_heavy" if ctx_ratio > 0.8 else ("decode_heavy" if ctx_ratio < 0.2 else "mixed")
    return {
        "n_q": int(rec["seq_q"]), "n_kv": int(rec["seq_kv"]), "h_q": hq, "h_kv": hk, "sum_ctx_tokens": sum_ctx,
        "sum_gen_tokens": sum_gen, "ctx_ratio": ctx_ratio, "workload_type": wtype, "attention_pattern": pattern,
        "gqa_ratio": ratio if ratio > 1 else None,
    }  # fmt: skip


__all__ = [
    "BYTES_MODELS",
    "RooflineTable",
    "chains",
    "compute_records",
    "kernel_name_cells",
    "short_args",
    "truncate_kernel",
    "workload_profile",
]
