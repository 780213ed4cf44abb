"""model_attention: the roofline of one attention call with explicit shapes (a what-if, no trace needed)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from sdpa_analyzer.perf_models.config import AttentionConfig, BwdConvention, Mask, PagedInfo, VarlenInfo
from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.scoring.fields import result_model
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import (
    BytesModelArg,
    DtypeArg,
    KvCacheDtypeArg,
    PeaksUsed,
    RequiredArch,
    peaks_of,
)

PositiveInt = Annotated[int, Field(ge=1, le=2**31)]
Window = Annotated[int, Field(ge=-1, le=2**31)]


class ModelInput(ToolInput):
    batch: Annotated[PositiveInt, Field(description="batch size B (for varlen: the number of sequences packed)")]
    heads_q: Annotated[PositiveInt, Field(description="query heads Hq")]
    seq_q: Annotated[PositiveInt, Field(description="query length Nq, tokens (1 for a decode step)")]
    head_dim: Annotated[PositiveInt, Field(description="head dim of Q and K (d_qk)")]
    heads_kv: Annotated[
        PositiveInt | None, Field(description="key/value heads Hkv (GQA/MQA: a divisor of heads_q); default heads_q")
    ] = None
    seq_kv: Annotated[
        PositiveInt | None, Field(description="key length Nkv, tokens (the context for decode); default seq_q")
    ] = None
    head_dim_v: Annotated[PositiveInt | None, Field(description="head dim of V (d_v); default head_dim")] = None
    dtype: DtypeArg = "bf16"
    kv_cache_dtype: KvCacheDtypeArg = None
    direction: Annotated[Literal["fwd", "bwd"], Field(description="fwd (forward) or bwd (backward)")] = "fwd"
    mask: Annotated[
        Literal["none", "causal", "sliding_window"],
        Field(description="none; causal (kept pairs exact, see alignment); sliding_window (see window_left/right)"),
    ] = "none"
    alignment: Annotated[
        Literal["top_left", "bottom_right"],
        Field(
            description="causal diagonal when seq_q != seq_kv: bottom_right (flash-attn, FA3, aiter, vLLM: the last "
            "query sees every key) or top_left (memory-efficient/cuDNN SDPA: query i sees keys 0..i)"
        ),
    ] = "bottom_right"
    window_left: Annotated[
        Window, Field(description="sliding window: keys visible to the left of the diagonal; -1 = unbounded")
    ] = -1
    window_right: Annotated[
        Window, Field(description="sliding window: keys visible to the right of the diagonal; -1 = unbounded")
    ] = -1
    dropout_p: Annotated[float, Field(ge=0.0, lt=1.0, description="dropout probability")] = 0.0
    arch: RequiredArch = "h100-sxm"
    measured_us: Annotated[
        float | None,
        Field(gt=0, description="measured kernel time of one call, µs; gives the achieved TFLOP/s and the efficiency"),
    ] = None
    bytes_model: BytesModelArg = "compulsory"
    bwd_convention: Annotated[
        Literal["5gemm", "recompute_fwd", "two_phase"],
        Field(
            description="backward FLOPs: 5gemm (FA2/FA3/CK: S recomputed, O not; 2.5× forward), recompute_fwd "
            "(6 GEMMs, 3.0×), two_phase (7 GEMMs, Triton-tutorial kernels, 3.5×)"
        ),
    ] = "5gemm"
    block_q: Annotated[
        PositiveInt | None,
        Field(
            description="query tile rows Br of the tiled bytes and tile counts; default by kernel family and head dim"
        ),
    ] = None
    block_kv: Annotated[
        PositiveInt | None, Field(description="key tile columns Bc; default by kernel family and head dim")
    ] = None
    skip_masked_tiles: Annotated[
        bool, Field(description="tiled bytes and executed FLOPs skip tiles the mask hides entirely (causal kernels do)")
    ] = True
    shared_kv: Annotated[
        bool,
        Field(description="MLA latent cache (DeepSeek/FlashMLA): V is the first head_dim_v columns of K's cache, so "
              "each cached token is read once"),
    ] = False
    kv_cache_token_bytes: Annotated[
        PositiveInt | None,
        Field(description="bytes of one cached token per KV head for a cache of its own layout (FlashMLA's fp8 MLA "
              "cache: 656 = 512 fp8 latent + 4 fp32 scales + 64 bf16 RoPE); default: head dims × cache dtype"),
    ] = None
    tiled_bwd_model: Annotated[
        Literal["two_pass", "single_pass"],
        Field(description="tiled backward bytes: two_pass (a dK/dV pass and a dQ pass) or single_pass (FA2/CK: "
              "an fp32 dQ accumulated atomically)"),
    ] = "two_pass"
    tile_family: Annotated[
        Literal["fa2", "fa3", "ck", "triton"] | None,
        Field(description="kernel family whose default tiles the tiled bytes use (fa2: flash-attn 2 / PyTorch flash; "
              "fa3: Hopper FA3; ck: CK/aiter; triton); default: ck on AMD, fa2 elsewhere"),
    ] = None
    varlen_num_seqs: Annotated[
        PositiveInt | None,
        Field(
            description="varlen (cu_seqlens): the number of sequences "
            "packed into batch × seq_q tokens; FLOPs become bounds"
        ),
    ] = None
    paged_context_lens: Annotated[
        list[PositiveInt] | None,
        Field(max_length=65536, description="paged decode: the context length of each request (tokens)"),
    ] = None

    @model_validator(mode="after")
    def _finite_time(self) -> ModelInput:
        if self.measured_us is not None and not math.isfinite(self.measured_us):
            raise ValueError("measured_us must be a finite time in µs")
        return self


class MaskOut(ResultModel):
    kind: str = Field(description="none | causal | sliding_window")
    alignment: str | None = Field(None, description="top_left | bottom_right (causal and windows)")
    window_left: int | None = None
    window_right: int | None = None
    label: str


class ConfigOut(ResultModel):
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    head_dim_qk: int
    head_dim_v: int
    dtype_q: str
    dtype_kv: str = Field(description="dtype of the K/V bytes read (the cache dtype when one is given)")
    direction: str
    dropout_p: float
    shared_kv: bool = False
    varlen_num_seqs: int | None = None
    paged_requests: int | None = None
    paged_context_tokens: int | None = None


class BandOut(ResultModel):
    """The expected band: its fields as the band_* fields."""

    id: str
    low_pct: float
    high_pct: float
    metric: str
    anchor: str = Field(description="the published figures the band rests on")
    source: str
    reference_kernel: str
    reference_pct: float
    borrowed_from: str | None = None
    measured_on: str = Field(description="the GPU(s) of those figures")
    basis: str = "published"
    rests_on: str = ""


class _ModelHead(ResultModel):
    """What was modeled, on which roofs (the catalogue's fields follow)."""

    config: ConfigOut
    mask: MaskOut
    peaks: PeaksUsed


ModelResult = result_model(
    "ModelResult",
    "model",
    "The roofline and verdicts of one attention call with explicit shapes.",
    required=("kind", "flops_useful", "bytes_compulsory", "bytes_tiled", "ideal_us", "bound", "regime", "band_status",
              "verdict"),
    base=_ModelHead,
    # the arguments the model ran with, as the input schema describes them
    measured_us=(float | None, Field(None, description="as given (µs)")),
    bytes_model=(str, Field(description="compulsory | tiled")),
    bwd_convention=(str, Field(description="5gemm | recompute_fwd | two_phase")),
    skip_masked_tiles=(bool, Field(description="as given")),
    tiled_bwd_model=(str, Field(description="two_pass | single_pass")),
    band=(BandOut | None, Field(None, description="the expected band (None: none); fields as band_*")),
    notes=(list[str], Field(default_factory=list)),
)


def _mask_out(mask: Mask) -> MaskOut:
    kind = mask.kind.value
    return MaskOut(
        kind=kind,
        alignment=None if kind == "none" else mask.alignment.value,
        window_left=mask.window_left if kind == "sliding_window" else None,
        window_right=mask.window_right if kind == "sliding_window" else None,
        label=mask.label,
    )


def _config(args: ModelInput) -> AttentionConfig:
    seq_kv = args.seq_kv or args.seq_q
    varlen = None
    if args.varlen_num_seqs:
        varlen = VarlenInfo(
            total_q=args.batch * args.seq_q,
            total_kv=args.batch * seq_kv,
            num_seqs=args.varlen_num_seqs,
            max_seqlen_q=args.seq_q,
            max_seqlen_kv=seq_kv,
        )
    paged = None
    if args.paged_context_lens:
        paged = PagedInfo(
            num_requests=len(args.paged_context_lens),
            sum_context_tokens=int(sum(args.paged_context_lens)),
            context_lens=tuple(args.paged_context_lens),
        )
    return AttentionConfig(
        batch=args.batch,
        heads_q=args.heads_q,
        heads_kv=args.heads_kv or args.heads_q,
        seq_q=args.seq_q,
        seq_kv=seq_kv,
        head_dim_qk=args.head_dim,
        head_dim_v=args.head_dim_v or args.head_dim,
        dtype_q=args.dtype,
        dtype_kv_cache=args.kv_cache_dtype,
        direction=args.direction,
        mask=Mask(args.mask, args.alignment, args.window_left, args.window_right),
        dropout_p=args.dropout_p,
        varlen=varlen,
        paged=paged,
        shared_kv=args.shared_kv,
        kv_cache_token_bytes=args.kv_cache_token_bytes,
    )


def model_attention(ctx: ToolContext, args: ModelInput) -> ModelResult:
    # the models (numpy) and the verdict words: imported when the tool runs, never to declare it (no pandas either)
    from sdpa_analyzer.perf_models.model_attention import model_attention as estimate_attention
    from sdpa_analyzer.server.scoring.arch import gpu_by_name_or_file
    from sdpa_analyzer.server.scoring.field_values import result_values, value
    from sdpa_analyzer.server.scoring.fields import BY_NAME
    from sdpa_analyzer.server.scoring.verdicts import verdict

    gpu, source = gpu_by_name_or_file(args.arch, ctx.roots)
    try:
        cfg = _config(args)
        est = estimate_attention(
            cfg,
            gpu,
            measured_us=args.measured_us,
            bytes_model=args.bytes_model,
            bwd_convention=BwdConvention(args.bwd_convention),
            block_q=args.block_q,
            block_kv=args.block_kv,
            skip_masked_tiles=args.skip_masked_tiles,
            tiled_bwd_model=args.tiled_bwd_model,
            family=args.tile_family,
        )
    except PerfModelError as exc:
        raise InputError(str(exc)) from None
    band = est.band

    def pct(x: float) -> float:  # a band's edge or anchor with the digits of band_low/band_high (one rounding per fact)
        return float(value(BY_NAME["band_low"], x))

    band_low, band_high, metric = (band.low_pct, band.high_pct, band.metric) if band else (None, None, None)
    words = verdict(est.regime, est.compute_pct, est.memory_pct, est.band_status, band_low, band_high, metric,
                    est.is_anomaly, est.work_bound, band_note=est.band_note,
                    band_reference_kernel=band.reference_kernel if band else None,
                    band_reference_pct=band.reference_pct if band else None,
                    band_borrowed_from=band.borrowed_from if band else None,
                    band_basis=band.basis if band else None, band_rests_on=band.rests_on if band else None,
                    binding_roof=est.binding_roof, bytes_model=est.bytes_model,
                    regime_compulsory=est.regime_compulsory, regime_tiled=est.regime_tiled)
    return ModelResult(
        config=ConfigOut(
            batch=cfg.batch,
            heads_q=cfg.heads_q,
            heads_kv=cfg.heads_kv,
            seq_q=cfg.seq_q,
            seq_kv=cfg.seq_kv,
            head_dim_qk=cfg.head_dim_qk,
            head_dim_v=cfg.head_dim_v,
            dtype_q=cfg.dtype_q,
            dtype_kv=cfg.kv_dtype,
            direction=cfg.direction.value,
            dropout_p=cfg.dropout_p,
            shared_kv=cfg.shared_kv,
            varlen_num_seqs=cfg.varlen.num_seqs if cfg.varlen else None,
            paged_requests=cfg.paged.num_requests if cfg.paged else None,
            paged_context_tokens=cfg.paged.sum_context_tokens if cfg.paged else None,
        ),
        mask=_mask_out(cfg.mask),
        peaks=peaks_of(gpu, source, est.compute_spec),
        **result_values(est.values, "model", verdict=words),
        measured_us=args.measured_us,
        bytes_model=est.bytes_model,
        bwd_convention=est.bwd_convention,
        skip_masked_tiles=est.skip_masked_tiles,
        tiled_bwd_model=est.tiled_bwd_model,
        band=BandOut(id=band.id, low_pct=pct(band.low_pct), high_pct=pct(band.high_pct), metric=band.metric,
                     anchor=band.anchor, source=band.source, reference_kernel=band.reference_kernel,
                     reference_pct=pct(band.reference_pct), borrowed_from=band.borrowed_from,
                     measured_on=band.measured_on, basis=band.basis, rests_on=band.rests_on) if band else None,
        notes=list(est.notes),
    )


TOOL = ToolSpec(
    name="model_attention",
    title="What-if roofline for explicit shapes",
    description=(
        "Roofline of one attention call from explicit shapes: kept pairs, FLOPs (useful and executed), bytes "
        "(compulsory and tiled), ideal time, bound and, when measured_us is given, achieved TFLOP/s and efficiency."
    ),
    input_model=ModelInput,
    result_model=ModelResult,
    run=model_attention,
    cli=CliSpec(
        "model",
        flags={
            "batch": ("-b",),
            "heads_q": ("--heads",),
            "seq_q": ("-n",),
            "head_dim": ("-d",),
            "dropout_p": ("--dropout",),
        },
    ),
    agent="optional what-if for an explicit shape; quote its numbers only as a what-if",
)
