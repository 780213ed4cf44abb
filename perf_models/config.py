"""The attention configuration every model takes: shapes, dtypes, direction, mask, varlen and paged info.

A config validates itself on construction; a bad field raises ConfigError naming the field, the value
and what is allowed, so a caller can turn it into a one-line message for the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from sdpa_analyzer.perf_models.dtypes import normalize_dtype
from sdpa_analyzer.perf_models.errors import ConfigError


class Direction(StrEnum):
    FWD = "fwd"
    BWD = "bwd"


class MaskKind(StrEnum):
    NONE = "none"
    CAUSAL = "causal"
    SLIDING_WINDOW = "sliding_window"


class Alignment(StrEnum):
    """Where the causal diagonal sits when Nq != Nkv (see docs/perf-model.md §1)."""

    TOP_LEFT = "top_left"  # query i sees keys 0..i
    BOTTOM_RIGHT = "bottom_right"  # query i sees keys 0..i+(Nkv-Nq)


class BwdConvention(StrEnum):
    """How many GEMMs a backward is counted with (see flops.py for why FIVE is the default)."""

    FIVE_GEMM = "5gemm"
    RECOMPUTE_FWD = "recompute_fwd"
    TWO_PHASE = "two_phase"


@dataclass(frozen=True, slots=True)
class Mask:
    """Attention mask. Sliding windows are bottom-right aligned; -1 means unbounded on that side."""

    kind: MaskKind = MaskKind.NONE
    alignment: Alignment = Alignment.BOTTOM_RIGHT
    window_left: int = -1
    window_right: int = -1

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MaskKind(self.kind))
        object.__setattr__(self, "alignment", Alignment(self.alignment))
        for name in ("window_left", "window_right"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < -1:
                raise ConfigError(f"mask.{name}", v, "an integer >= 0, or -1 for unbounded")

    @property
    def label(self) -> str:
        if self.kind is MaskKind.NONE:
            return "none"
        if self.kind is MaskKind.CAUSAL:
            return f"causal ({self.alignment.value.replace('_', '-')})"
        return f"sliding window (left={self.window_left}, right={self.window_right})"


NO_MASK = Mask()
CAUSAL_TOP_LEFT = Mask(MaskKind.CAUSAL, Alignment.TOP_LEFT)
CAUSAL_BOTTOM_RIGHT = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)


@dataclass(frozen=True, slots=True)
class VarlenInfo:
    """What a varlen (cu_seqlens) call reveals: total tokens, sequence count, max lengths."""

    total_q: int
    total_kv: int
    num_seqs: int
    max_seqlen_q: int
    max_seqlen_kv: int

    def __post_init__(self) -> None:
        for name in ("total_q", "total_kv", "num_seqs", "max_seqlen_q", "max_seqlen_kv"):
            _positive_int(f"varlen.{name}", getattr(self, name))
        if self.max_seqlen_q > self.total_q:
            raise ConfigError("varlen.max_seqlen_q", self.max_seqlen_q, f"<= total_q ({self.total_q})")
        if self.max_seqlen_kv > self.total_kv:
            raise ConfigError("varlen.max_seqlen_kv", self.max_seqlen_kv, f"<= total_kv ({self.total_kv})")


@dataclass(frozen=True, slots=True)
class PagedInfo:
    """Paged (KV-cache) attention: per-request context lengths, or only their sum and count.

    `sum_query_sq` (Σ q²) and `sum_query_key` (Σ q·k) over the step's requests, when a step annotation gives
    them, make the pair count exact: a bottom-right causal request of q new tokens over k keys keeps
    q·k − q(q − 1)/2 pairs, so the step keeps Σ q·k − (Σ q² − Σ q)/2 (a decode request, q = 1, adds its k).
    Without them only bounds follow from the sums (perf_models.flops.paged_pairs).
    """

    num_requests: int
    sum_context_tokens: int
    context_lens: tuple[int, ...] | None = None
    sum_query_tokens: int | None = None  # new tokens this step (prefill chunks + decode tokens)
    block_size: int | None = None
    sum_query_sq: int | None = None  # Σ over requests of q² (q: the request's new tokens)
    sum_query_key: int | None = None  # Σ over requests of q·k (k: the request's keys, cached + new)

    def __post_init__(self) -> None:
        _positive_int("paged.num_requests", self.num_requests)
        _positive_int("paged.sum_context_tokens", self.sum_context_tokens)
        if (self.sum_query_sq is None) != (self.sum_query_key is None):
            raise ConfigError("paged.sum_query_sq", self.sum_query_sq, "given together with sum_query_key")
        if self.sum_query_key is not None:
            if self.sum_query_tokens is None:
                raise ConfigError("paged.sum_query_tokens", None, "given when sum_query_sq/sum_query_key are")
            _positive_int("paged.sum_query_sq", self.sum_query_sq)
            _positive_int("paged.sum_query_key", self.sum_query_key)
            q, qq, qk = self.sum_query_tokens, self.sum_query_sq, self.sum_query_key
            if qq < q:
                raise ConfigError("paged.sum_query_sq", qq, f">= sum_query_tokens ({q}): q² >= q per request")
            if qk < qq:
                raise ConfigError("paged.sum_query_key", qk, f">= sum_query_sq ({qq}): every request has k >= q")
            if qk > q * self.sum_context_tokens:
                raise ConfigError("paged.sum_query_key", qk, f"<= sum_query_tokens × sum_context_tokens ({q} × "
                                  f"{self.sum_context_tokens})")
        if self.context_lens is not None:
            lens = tuple(int(x) for x in self.context_lens)
            object.__setattr__(self, "context_lens", lens)
            if len(lens) != self.num_requests:
                raise ConfigError("paged.context_lens", len(lens), f"{self.num_requests} entries (num_requests)")
            if sum(lens) != self.sum_context_tokens:
                raise ConfigError(
                    "paged.context_lens", sum(lens), f"a sum equal to sum_context_tokens ({self.sum_context_tokens})"
                )
            if any(x <= 0 for x in lens):
                raise ConfigError("paged.context_lens", lens, "positive lengths")


@dataclass(frozen=True, slots=True)
class AttentionConfig:
    """One attention call. Shapes are logical (layout already resolved by the op registry)."""

    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    head_dim_qk: int
    head_dim_v: int
    dtype_q: str = "bf16"
    dtype_k: str | None = None  # None = same as q
    dtype_v: str | None = None
    dtype_o: str | None = None
    dtype_kv_cache: str | None = None  # paged caches (e.g. fp8); None = dtype_k
    direction: Direction = Direction.FWD
    mask: Mask = field(default_factory=Mask)
    dropout_p: float = 0.0
    varlen: VarlenInfo | None = None
    paged: PagedInfo | None = None
    # MLA-style latent cache (DeepSeek, FlashMLA): V is the first d_v columns of K's cache, so a forward reads
    # each cached token once (d_qk elements), not K (d_qk) plus V (d_v).
    shared_kv: bool = False
    # The GEMM specs when they are not the one dtype_q gives: quantized attention (SageAttention runs Q·Kᵀ on int8
    # and P·V on fp8 or fp16). `compute_spec` is the Q·Kᵀ spec, `compute_spec_pv` the P·V one (None: the same).
    compute_spec: str | None = None
    compute_spec_pv: str | None = None
    # A sliding-window layer whose window size the trace does not give (the kernel name says "sliding"): the mask
    # modeled keeps at least the pairs the kernel computes, so FLOPs and bytes are upper bounds.
    window_unknown: bool = False
    # A call whose mask flag was not found among its arguments (a release whose signature is read off the recorded
    # roles, perf_models.ops.infer): modeled without a mask, which keeps at least the pairs the kernel computes, so
    # FLOPs and bytes are upper bounds, as for window_unknown.
    mask_unknown: bool = False
    # A serving call whose query tensor holds fewer rows than its step's query tokens: the step ran in more than one
    # call per layer (micro-batches, or several replays of a graph captured at a smaller batch), and the step's token
    # sums are all the trace gives — this call did part of that work, so FLOPs and bytes are upper bounds.
    step_split: bool = False
    # A call whose sequence length is known only as a range (its launch grid's tiles × the tile its kernel name gives:
    # perf_models.ops.hinted): modeled at the range's low end, keys as many as queries, one KV head where nothing gives
    # their count, so FLOPs and bytes are lower bounds.
    seq_lower_bound: bool = False
    # Bytes one cached token occupies per KV head as stored, K and V together, when the cache layout is not plain
    # elements of dtype_kv_cache: FlashMLA's fp8 "with scale" MLA cache is 656 B (512 fp8 + 4 fp32 scales + 64 bf16
    # RoPE values; perf_models.traffic.flashmla_fp8_token_bytes). None: (d_qk [+ d_v]) × the cache dtype's size.
    kv_cache_token_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v"):
            _positive_int(name, getattr(self, name))
        if self.heads_q % self.heads_kv:
            raise ConfigError(
                "heads_kv", self.heads_kv, f"a divisor of heads_q={self.heads_q} (GQA/MQA groups query heads evenly)"
            )
        set_ = object.__setattr__
        set_(self, "dtype_q", normalize_dtype(self.dtype_q, "dtype_q"))
        for name in ("dtype_k", "dtype_v", "dtype_o"):
            v = getattr(self, name)
            set_(self, name, self.dtype_q if v is None else normalize_dtype(v, name))
        if self.dtype_kv_cache is not None:
            set_(self, "dtype_kv_cache", normalize_dtype(self.dtype_kv_cache, "dtype_kv_cache"))
        set_(
            self,
            "direction",
            Direction(self.direction) if self.direction in ("fwd", "bwd") else _bad_direction(self.direction),
        )
        if not isinstance(self.mask, Mask):
            raise ConfigError("mask", self.mask, "a Mask")
        if not (0.0 <= float(self.dropout_p) < 1.0):
            raise ConfigError("dropout_p", self.dropout_p, "a probability in [0, 1)")
        for name in ("compute_spec", "compute_spec_pv"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or not v.startswith("matrix_")):
                raise ConfigError(name, v, "None or a matrix spec (matrix_int8, matrix_fp8, matrix_bf16, ...)")
        if self.kv_cache_token_bytes is not None:
            _positive_int("kv_cache_token_bytes", self.kv_cache_token_bytes)
            if self.direction is Direction.BWD:
                raise ConfigError("kv_cache_token_bytes", self.kv_cache_token_bytes,
                                  "None on a backward (a KV-cache layout is read by forward/decode kernels only)")
        if self.shared_kv and self.head_dim_v > self.head_dim_qk:
            limit = f"<= head_dim_qk={self.head_dim_qk} when V is a slice of K (shared_kv)"
            raise ConfigError("head_dim_v", self.head_dim_v, limit)

    @property
    def gqa_ratio(self) -> int:
        return self.heads_q // self.heads_kv

    @property
    def kv_dtype(self) -> str:
        """dtype of the K/V bytes actually read (the cache dtype for paged attention)."""
        return self.dtype_kv_cache or self.dtype_k  # type: ignore[return-value]


def _bad_direction(value: object) -> Direction:
    raise ConfigError("direction", value, "'fwd' or 'bwd'")


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(name, value, "a positive integer")
