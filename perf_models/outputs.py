"""The per-row outputs of the models, each declared once (their computation: perf_models.row_outputs).

An `Output` is a field a user or an LLM reads: its one name (the same in the records, the roofline CSV, the
metrics JSON's `roofline` block, the MCP results and the CLI), its kind, unit, rounding, a short label for tables
and its description. `MODEL_OUTPUTS` lists what `row_outputs` computes from a table, its work estimate and its
assessment; the server adds the fields it computes itself (op names, kernel names, call stacks, times) in
`server/scoring/fields.py`, with the same `Output`, and derives every surface from the two lists together. This
module is declarations only, without numpy: the result schemas and `--help` are built from it.

Adding an output is one `Output` line here plus its computation in `perf_models/row_outputs.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["float", "int", "text", "bool", "list"]
# Where a field appears. row: a compute_roofline row; model: the model_attention result; json: the metrics JSON's
# per-op `roofline` block; csv: <category>_roofline.csv. Records (the in-memory table) hold every field.
Surface = Literal["row", "model", "json", "csv"]
ALL_SURFACES: frozenset[Surface] = frozenset(("row", "model", "json", "csv"))


@dataclass(frozen=True)
class Output:
    """One per-row output field. `digits`: decimals kept in results and files (None: written as computed)."""

    name: str
    kind: Kind
    unit: str
    digits: int | None
    label: str  # a short column title for tables
    description: str
    surfaces: frozenset[Surface] = ALL_SURFACES

    @property
    def help(self) -> str:
        """The description with its unit, as schemas and `--help` show it."""
        return f"{self.description} ({self.unit})" if self.unit else self.description


_SURFACE_CODES: dict[str, Surface] = {"r": "row", "m": "model", "j": "json", "c": "csv"}


def declare(name: str, kind: Kind, unit: str, digits: int | None, label: str, on: str, description: str) -> Output:
    """One catalogue line; `on`: the surfaces as letters (r row, m model, j json, c csv)."""
    return Output(name, kind, unit, digits, label, description, frozenset(_SURFACE_CODES[c] for c in on))


MODEL_OUTPUTS: tuple[Output, ...] = (
    # the config as modeled
    declare("batch", "int", "", None, "B", "mc", "batch size B (varlen: sequences packed)"),
    declare("heads_q", "int", "", None, "Hq", "mc", "query heads"),
    declare("heads_kv", "int", "", None, "Hkv", "mc", "key/value heads"),
    declare("seq_q", "int", "tokens", None, "Nq", "mc", "query length"),
    declare("seq_kv", "int", "tokens", None, "Nkv", "mc", "key length (decode: the context)"),
    declare("head_dim_qk", "int", "", None, "d_qk", "mc", "head dim of Q and K"),
    declare("head_dim_v", "int", "", None, "d_v", "mc", "head dim of V"),
    declare("gqa_ratio", "int", "", None, "GQA", "rjc", "query heads per key/value head (GQA/MQA > 1)"),
    declare("kind", "text", "", None, "kind", "rmjc",
            "fwd | bwd | decode | mixed (prefill and decode in one paged call)"),
    # work
    declare("kept_pairs", "float", "pairs", 0, "pairs", "mc",
            "kept (query, key) pairs per query head, summed over the batch"),
    declare("kept_pairs_upper", "float", "pairs", 0, "pairs max", "m",
            "varlen/paged: the upper bound of the kept pairs"),
    declare("tile_visits", "int", "tiles", None, "tiles", "m", "Br×Bc tiles a kernel visits under the mask"),
    declare("flops_useful", "float", "FLOP", 0, "FLOPs", "rmjc",
            "FLOPs of one call over the kept pairs (the efficiency numerator)"),
    declare("flops_executed", "float", "FLOP", 0, "FLOPs exec", "mjc",
            "FLOPs of one call over the visited tiles (masked pairs inside them included)"),
    declare("flops_upper", "float", "FLOP", 0, "FLOPs max", "mjc", "varlen/paged: the upper bound of the useful FLOPs"),
    declare("bytes_compulsory", "float", "B", 0, "bytes", "rmjc",
            "HBM bytes of one call, each tensor once (Q, K, V, O, LSE; backward adds dO, dQ + fp32 accumulator, "
            "dK, dV, D)"),
    declare("bytes_tiled", "float", "B", 0, "bytes tiled", "rmjc",
            "HBM bytes of one call with tile re-reads that miss the cache"),
    declare("bytes_fa_convention", "float", "B", 0, "bytes FA", "mjc",
            "bytes as the FA benchmarks count them: fwd Q+K+V+O; bwd Q+K+V+dO+dQ+dK+dV"),
    declare("bytes_used", "float", "B", 0, "bytes used", "mc",
            "the bytes of the chosen bytes model (the roofline's numerator)"),
    declare("bytes_unfused", "float", "B", 0, "bytes unfused", "jc",
            "unfused rows: the bytes used plus the Nq × Nkv score matrices the chain writes and reads (its own "
            "traffic)"),
    declare("intensity", "float", "FLOP/B", 2, "FLOP/B", "rmc",
            "FLOPs per byte of the chosen bytes model (unfused rows: with their score matrices)"),
    declare("intensity_fused", "float", "FLOP/B", 2, "FLOP/B fused", "rjc",
            "unfused rows: the fused kernel's intensity, whose roofline the efficiency is scored against"),
    declare("intensity_compulsory", "float", "FLOP/B", 2, "FLOP/B comp", "jc",
            "FLOPs per compulsory byte (unfused rows: score matrices included)"),
    declare("intensity_tiled", "float", "FLOP/B", 2, "FLOP/B tiled", "jc",
            "FLOPs per tiled byte (unfused rows: score matrices included)"),
    declare("block_q", "int", "rows", None, "Br", "mc", "query tile rows of the tiled bytes and tile counts"),
    declare("block_kv", "int", "columns", None, "Bc", "mc", "key tile columns of the tiled bytes and tile counts"),
    declare("tile_family", "text", "", None, "tiles of", "mjc",
            "the kernel family whose default tiles the tiled bytes use (fa2, fa3, ck, triton)"),
    declare("work_bound", "text", "", None, "work", "rjc",
            "exact | lower | upper | unknown: what flops_useful (and so the efficiency) is"),
    declare("work_bound_reason", "text", "", None, "why a bound", "rjc", "why the work is a bound (none: exact)"),
    # roofs
    declare("compute_spec", "text", "", None, "spec", "mc",
            "the compute spec (matrix_bf16, …; two GEMM specs joined by + for quantized attention)"),
    declare("peak_tflops", "float", "TFLOP/s", 2, "roof TF", "c", "the compute roof of that spec"),
    declare("peak_tflops_kind", "text", "", None, "roof kind", "jc",
            "achievable (measured, with a method) | datasheet"),
    declare("peak_tflops_datasheet", "float", "TFLOP/s", 2, "datasheet TF", "jc",
            "the datasheet dense peak of that spec"),
    declare("peak_tbs", "float", "TB/s", 3, "roof TB/s", "c", "the HBM bandwidth roof"),
    declare("peak_tbs_kind", "text", "", None, "bw kind", "jc", "achievable (measured, with a method) | datasheet"),
    declare("peak_tbs_datasheet", "float", "TB/s", 3, "datasheet TB/s", "jc", "the datasheet HBM bandwidth"),
    # roofline
    declare("compute_time_us", "float", "µs", 3, "compute µs", "m", "FLOPs / compute roof"),
    declare("memory_time_us", "float", "µs", 3, "memory µs", "m", "bytes / bandwidth roof"),
    declare("ideal_us", "float", "µs", 3, "ideal µs", "rmjc",
            "ideal time of one call at the roofs: max(compute, memory time)"),
    declare("ridge", "float", "FLOP/B", 2, "ridge", "mjc", "compute roof / bandwidth roof"),
    declare("bound", "text", "", None, "bound", "rmc",
            "compute | memory: the roof that limits (unfused rows: from their own traffic)"),
    declare("regime_compulsory", "text", "", None, "regime comp", "mjc",
            "the regime with compulsory bytes (each tensor once)"),
    declare("regime_tiled", "text", "", None, "regime tiled", "mjc",
            "the regime with tiled bytes (re-reads missing the cache: the better estimate on MI300-class parts)"),
    declare("regime_intensity", "float", "FLOP/B", 2, "regime FLOP/B", "mjc",
            "the intensity the regime was judged from (unfused rows: with their score matrices)"),
    declare("regime_bytes", "float", "B", 0, "regime bytes", "mjc", "the bytes behind regime_intensity"),
    declare("regime", "text", "", None, "regime", "rmjc",
            "compute | memory | balanced (intensity within ±30 % of the ridge)"),
    declare("measurement_status", "text", "", None, "measured", "m",
            "measured | missing | zero: whether a kernel time was there to compare with"),
    declare("achieved_tflops", "float", "TFLOP/s", 2, "TFLOP/s", "rmc", "useful FLOPs / measured time"),
    declare("achieved_tbs", "float", "TB/s", 3, "TB/s", "rmc", "bytes used / measured time"),
    declare("efficiency_pct", "float", "%", 2, "eff %", "rmc", "% of the roofline: ideal time / measured time × 100"),
    declare("efficiency_datasheet_pct", "float", "%", 2, "eff % ds", "rmjc", "the same against the datasheet peaks"),
    declare("compute_pct", "float", "%", 2, "tensor %", "rmjc", "achieved TFLOP/s / compute roof × 100"),
    declare("memory_pct", "float", "%", 2, "HBM %", "rmjc", "achieved TB/s / bandwidth roof × 100"),
    declare("compute_datasheet_pct", "float", "%", 2, "tensor % ds", "mjc",
            "achieved TFLOP/s / datasheet compute peak × 100"),
    declare("memory_datasheet_pct", "float", "%", 2, "HBM % ds", "mjc", "achieved TB/s / datasheet bandwidth × 100"),
    declare("is_anomaly", "bool", "", None, "anomaly", "rmc",
            "efficiency above 100 % of the roofline: wrong shapes, peaks or measured time, never an excellent "
            "kernel"),
    declare("model_check", "text", "", None, "model check", "rjc",
            "'model inconsistent: <reason>' where the efficiency is above the roofline and the work is not an upper "
            "bound: no verdict, no band (none: consistent)"),
    declare("anomaly_flag", "bool", "", None, "flagged", "jc",
            "efficiency above 110 %: too far above the roofline to project a gap from (the impact estimate falls "
            "back to the heuristic)"),
    # three roofs (datasheet) and the ceiling model
    declare("exponentials", "float", "exp", 0, "exps", "mjc",
            "softmax exponentials of one call: one per kept score element (the backward recomputes P once)"),
    declare("exp_roof_texps", "float", "T exp/s", 3, "exp roof", "mjc",
            "exp-unit roof: datasheet FP32 vector peak × the architecture's exp / FP32 rate per clock"),
    declare("tensor_time_us", "float", "µs", 3, "tensor µs", "mjc", "useful FLOPs / datasheet tensor roof"),
    declare("exp_time_us", "float", "µs", 3, "exp µs", "mjc", "exponentials / exp roof"),
    declare("hbm_time_us", "float", "µs", 3, "HBM µs", "mjc",
            "bytes moved / datasheet bandwidth (unfused rows: with score matrices)"),
    declare("binding_roof", "text", "", None, "binding roof", "rmjc",
            "tensor | exp | hbm: the roof with the largest time among the three"),
    declare("wave_factor", "float", "", 3, "waves", "mjc",
            "tiles / (waves × units): the share of a full kernel's throughput this grid can reach"),
    declare("kernel_class", "text", "", None, "class", "mjc",
            "the ceiling model's kernel class of the part (fa2, fa3, fa4, amd)"),
    declare("ceiling_pct", "float", "%", 1, "ceiling %", "rmjc",
            "the ceiling model's best efficiency for this call (% of the datasheet roof of band_metric)"),
    declare("ceiling_time_us", "float", "µs", 3, "ceiling µs", "mjc",
            "the ceiling model's best time for this call"),
    # the expected band
    declare("band_id", "text", "", None, "band", "mjc", "the expected band (perf_models/data/bands.json)"),
    declare("band_metric", "text", "", None, "band metric", "rmjc",
            "compute: the band is compared with the tensor %; memory: with the HBM % (datasheet peaks)"),
    declare("band_low", "float", "%", 1, "band low", "rmjc",
            "lower edge of the expected band (% of the datasheet peak of band_metric)"),
    declare("band_high", "float", "%", 1, "band high", "rmjc",
            "upper edge of the expected band (% of the datasheet peak of band_metric)"),
    declare("band_value", "float", "%", 2, "vs band", "rmjc",
            "the utilization compared with the band (tensor % or HBM %, datasheet peaks)"),
    declare("band_reference_kernel", "text", "", None, "reference", "rmjc",
            "the best published kernel for this shape and GPU class (the band rests on it)"),
    declare("band_reference_pct", "float", "%", 1, "reference %", "rmjc",
            "its efficiency at this shape (interpolated between anchors), % of the datasheet peak of band_metric"),
    # the citation is long and the same for every row of a band: rows carry band_id, results and advice the source
    declare("band_reference_source", "text", "", None, "reference source", "m", "where that figure is published"),
    declare("band_reference_time_us", "float", "µs", 3, "at reference µs", "mjc",
            "one call's time at the reference kernel's efficiency"),
    declare("band_borrowed_from", "text", "", None, "borrowed from", "rmjc",
            "always empty (a band off its part is derived: band_basis); kept for old readers"),
    declare("band_note", "text", "", None, "no band because", "rmjc", "why there is no band (empty when there is "
            "one)"),
    declare("band_basis", "text", "", None, "band basis", "rmjc",
            "published (measured on this part) | derived (the ceiling model of the part's kernel class) | none"),
    declare("band_rests_on", "text", "", None, "band rests on", "mjc",
            "the published kernel, or the model's class, its points and the parts they were measured on"),
    declare("band_status", "text", "", None, "band status", "rmjc",
            "within | below | above | none (no reference band)"),
    declare("in_expected_band", "bool", "", None, "in band", "jc",
            "band_status is within: as good as the best published kernels for this shape"),
    # what-ifs (perf_models.advice)
    declare("fp8_time_us", "float", "µs", 3, "fp8 µs", "mjc",
            "one call's time with Q/K/V in fp8 at the same % of its roofline (compute-bound bf16/fp16, fp8 tensor "
            "cores)"),
    declare("head_dim_alt", "int", "", None, "alt d", "mjc",
            "the head dim of the head-dim what-if (128, the hidden size kept); 0: does not apply"),
    declare("head_dim_alt_time_us", "float", "µs", 3, "alt d µs", "mjc",
            "one call's time at the best published efficiency for the same hidden size at head dim head_dim_alt"),
)


__all__ = ["ALL_SURFACES", "MODEL_OUTPUTS", "Kind", "Output", "Surface", "declare"]
